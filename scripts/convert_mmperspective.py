"""Thin wrapper: the converter lives in the package (``lmms-spatial convert mmperspective --help``)."""

from lmms_spatial.tasks.mmperspective.convert import main

if __name__ == "__main__":
    raise SystemExit(main())
