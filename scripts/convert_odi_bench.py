"""Thin wrapper: the converter lives in the package (``lmms-spatial convert odi_bench --help``)."""

from lmms_spatial.data.convert.odi_bench import main

if __name__ == "__main__":
    raise SystemExit(main())
