"""Thin wrapper: the converter lives in the package (``lmms-spatial convert mmperspective --help``)."""

from lmms_spatial.data.convert.mmperspective import main

if __name__ == "__main__":
    raise SystemExit(main())
