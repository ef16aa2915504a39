"""Thin wrapper: the converter lives in the package (``lmms-spatial convert dori --help``)."""

from lmms_spatial.tasks.dori.convert import main

if __name__ == "__main__":
    raise SystemExit(main())
