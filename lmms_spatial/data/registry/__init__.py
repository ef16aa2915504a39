"""Every benchmark the package knows, by key: :data:`BENCHMARKS`.

Each benchmark declares itself in its own module, ``lmms_spatial/data/registry/<key>.py``:
``BENCHMARK = Benchmark("<key>", hub_id, "LMMS_SPATIAL_<KEY>_PATH", ...)`` (where the data comes
from) and ``features()`` (the ``datasets`` features of its rows: the one schema source, from which
``lmms-spatial card <key>`` writes the hub card's ``dataset_info``, and which converters and
fixtures write). Importing this package finds every such module, the five shipped benchmarks
included, so adding a benchmark edits no shared file. Registration needs neither the demo fixtures
nor the data sources: both import this package, it imports neither (the declarations import only
the leaf :mod:`lmms_spatial.data.benchmark`, and ``datasets`` only inside ``features()``).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from lmms_spatial.data.benchmark import Benchmark


def _declared() -> dict[str, Benchmark]:
    """``BENCHMARK`` of every module in this package, in module-name order.

    A module named otherwise than its key, or without ``BENCHMARK``, is a mistake in a new
    benchmark's files: it fails here, at import, with the file and the fix.
    """
    found: dict[str, Benchmark] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        bench = getattr(importlib.import_module(f"{__name__}.{info.name}"), "BENCHMARK", None)
        where = f"lmms_spatial/data/registry/{info.name}.py"
        if not isinstance(bench, Benchmark):
            raise TypeError(f"{where} must declare BENCHMARK = Benchmark({info.name!r}, hub_id, env_var)")
        if bench.key != info.name:
            raise ValueError(f"{where} declares the key {bench.key!r}; the module must be named after its key")
        found[bench.key] = bench
    return found


BENCHMARKS: dict[str, Benchmark] = _declared()

# kept importable from here (the tasks' and cards' references to the pinned commit)
from lmms_spatial.data.registry.mmsi import MMSI_REVISION  # noqa: E402


def features(key: str) -> Any:
    """The ``datasets.Features`` of benchmark ``key``'s rows, from its registry module's ``features()``."""
    if key not in BENCHMARKS:
        raise KeyError(f"{key!r} is not a benchmark; known: {', '.join(BENCHMARKS)}")
    declare = getattr(importlib.import_module(f"{__name__}.{key}"), "features", None)
    if not callable(declare):
        raise TypeError(
            f"lmms_spatial/data/registry/{key}.py must define features() -> datasets.Features (the schema of its rows)"
        )
    return declare()


__all__ = ["BENCHMARKS", "MMSI_REVISION", "Benchmark", "features"]
