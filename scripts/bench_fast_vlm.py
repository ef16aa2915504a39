"""Thin wrapper: the benchmark lives in the package (``python -m lmms_spatial.bench.fast_vlm --help``)."""

from lmms_spatial.bench.fast_vlm import main

if __name__ == "__main__":
    raise SystemExit(main())
