import sys

from lmms_spatial.bench import main

sys.exit(main())
