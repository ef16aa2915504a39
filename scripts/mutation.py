"""Thin wrapper: the mutation check lives in the package (``python -m lmms_spatial.bench.mutation --help``)."""

from lmms_spatial.bench.mutation import main

if __name__ == "__main__":
    raise SystemExit(main())
