"""Thin wrapper: the benchmark lives in the package (``python -m lmms_spatial.bench.odi_image_memory --help``)."""

from lmms_spatial.bench.odi_image_memory import main

if __name__ == "__main__":
    raise SystemExit(main())
