"""Every benchmark the package knows, by key: :data:`BENCHMARKS`.

Each benchmark declares itself in its own folder, ``tasks/<key>/declaration.py``:
``BENCHMARK = Benchmark("<key>", hub_id, "LMMS_SPATIAL_<KEY>_PATH", ...)`` (where the data comes
from) and ``features()`` (the ``datasets`` features of its rows: the one schema source, from which
``lmms-spatial card <key>`` writes the hub card's ``dataset_info``, and which converters and
fixtures write). Importing this package finds every such module (by file name, in every package of
``lmms_spatial.tasks``; the shipped benchmarks included), so adding a benchmark edits no shared file.
Registration needs neither the demo fixtures nor the data sources: both import this package, it
imports neither (the declarations import only the leaf :mod:`lmms_spatial.data.benchmark`, and
``datasets`` only inside ``features()``).
"""

from __future__ import annotations

import importlib
from typing import Any

from lmms_spatial.data.benchmark import Benchmark
from lmms_spatial.paths import benchmark_modules


def _declared() -> dict[str, Benchmark]:
    """``BENCHMARK`` of every ``tasks/<key>/declaration.py``, in key order.

    A folder named otherwise than its key, or a declaration without ``BENCHMARK``, is a mistake in a new
    benchmark's files: it fails here, at import, with the file and the fix.
    """
    found: dict[str, Benchmark] = {}
    for key, module in benchmark_modules("declaration").items():
        bench = getattr(importlib.import_module(module), "BENCHMARK", None)
        where = f"tasks/{key}/declaration.py"
        if not isinstance(bench, Benchmark):
            raise TypeError(f"{where} must declare BENCHMARK = Benchmark({key!r}, hub_id, env_var)")
        if bench.key != key:
            raise ValueError(f"{where} declares the key {bench.key!r}; the folder must be named after its key")
        found[bench.key] = bench
    return found


BENCHMARKS: dict[str, Benchmark] = _declared()


def features(key: str) -> Any:
    """The ``datasets.Features`` of benchmark ``key``'s rows, from its declaration's ``features()``."""
    if key not in BENCHMARKS:
        raise KeyError(f"{key!r} is not a benchmark; known: {', '.join(BENCHMARKS)}")
    declare = getattr(importlib.import_module(f"lmms_spatial.tasks.{key}.declaration"), "features", None)
    if not callable(declare):
        raise TypeError(
            f"tasks/{key}/declaration.py must define features() -> datasets.Features (the schema of its rows)"
        )
    return declare()


__all__ = ["BENCHMARKS", "Benchmark", "features"]
