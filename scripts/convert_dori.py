"""Thin wrapper: the converter lives in the package (``lmms-spatial convert dori --help``)."""

from lmms_spatial.data.convert.dori import main

if __name__ == "__main__":
    raise SystemExit(main())
