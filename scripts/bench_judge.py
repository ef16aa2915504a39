"""Thin wrapper: the benchmark lives in the package (``python -m lmms_spatial.bench.judge --help``)."""

from lmms_spatial.bench.judge import main

if __name__ == "__main__":
    raise SystemExit(main())
