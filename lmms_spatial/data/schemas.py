"""Old names of the normalised schemas, kept so existing imports keep working.

The one schema source is each benchmark's registry module (``tasks/<key>/declaration.py``,
``features()``; read through :func:`lmms_spatial.data.registry.features`). New code reads it there;
these names are computed from it on first use, never written twice.
"""

from __future__ import annotations

from typing import Any

_KEYS = {"MMSI_FEATURES": "mmsi", "DORI_FEATURES": "dori", "OSR_FEATURES": "osr_bench", "ODI_FEATURES": "odi_bench"}


def __getattr__(name: str) -> Any:
    if name not in _KEYS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from lmms_spatial.data.registry import features

    return features(_KEYS[name])
