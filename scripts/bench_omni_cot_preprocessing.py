"""Thin wrapper: the benchmark lives in the package (``python -m lmms_spatial.bench.omni_cot_preprocessing --help``)."""

from lmms_spatial.bench.omni_cot_preprocessing import main

if __name__ == "__main__":
    raise SystemExit(main())
