"""Thin wrapper: the converter lives in the package (``lmms-spatial convert osr_bench --help``)."""

from lmms_spatial.data.convert.osr_bench import main

if __name__ == "__main__":
    raise SystemExit(main())
