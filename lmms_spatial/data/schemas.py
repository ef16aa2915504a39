"""Old names of the normalised schemas (``<NAME>_FEATURES``), kept so existing imports keep working.

The one schema source is each benchmark's ``BENCHMARK.features`` (``tasks/<key>/__init__.py``,
``features()``; read through :func:`lmms_spatial.data.registry.features`). New code reads it there;
these names are computed from it on first use, never written twice: ``<NAME>`` is the middle of the
benchmark's environment variable (``LMMS_SPATIAL_<NAME>_PATH``).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    from lmms_spatial.data.registry import BENCHMARKS, features

    for key, bench in BENCHMARKS.items():
        if name == bench.env_var.removeprefix("LMMS_SPATIAL_").removesuffix("_PATH") + "_FEATURES":
            return features(key)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
