"""The benchmark harness (same as ``lmms-spatial bench``); see ``python scripts/bench/run_suite.py --help``.

    python scripts/bench/run_suite.py --json bench_cpu.json                  # CPU figures, fixture data
    python scripts/bench/run_suite.py --tiny --json /tmp/tiny.json           # CI smoke mode (not timed)
    python scripts/bench/run_suite.py --only tasks,e2e --model qwen2_5_vl \\
        --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct --use-env-data --limit 200 --json bench_h100.json
    python scripts/bench/run_suite.py --compare old.json new.json
"""

from __future__ import annotations

import sys

from lmms_spatial.bench import main

if __name__ == "__main__":
    sys.exit(main())
