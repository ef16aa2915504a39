"""Thin wrapper: the converter lives in the package (``lmms-spatial convert osr_bench --help``)."""

from lmms_spatial.tasks.osr_bench.convert import main

if __name__ == "__main__":
    raise SystemExit(main())
