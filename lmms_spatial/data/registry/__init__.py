"""Every benchmark the package knows, by key: :data:`BENCHMARKS`.

A benchmark is its folder, ``tasks/<key>/``, whose ``__init__.py`` holds ``BENCHMARK``, one
:class:`lmms_spatial.benchmark.Benchmark` naming everything it is. This imports each such package (a
dataclass each: no data, no ``datasets``) and reads that object; adding a benchmark edits no shared file.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from lmms_spatial.benchmark import Benchmark


def _declared() -> dict[str, Benchmark]:
    """``BENCHMARK`` of every package under ``lmms_spatial.tasks``, in key order.

    A folder named otherwise than its key, or a package without ``BENCHMARK``, is a mistake in a new
    benchmark's files: it fails here, at import, with the file and the fix.
    """
    import lmms_spatial.tasks as tasks_pkg

    found: dict[str, Benchmark] = {}
    for info in sorted(pkgutil.iter_modules(tasks_pkg.__path__), key=lambda i: i.name):
        if not info.ispkg or info.name.startswith(("_", ".")) or info.name in found:
            continue
        bench = getattr(importlib.import_module(f"{tasks_pkg.__name__}.{info.name}"), "BENCHMARK", None)
        where = f"tasks/{info.name}/__init__.py"
        if not isinstance(bench, Benchmark):
            raise TypeError(f"{where} must declare BENCHMARK = Benchmark(key={info.name!r}, hub_id=..., env_var=...)")
        if bench.key != info.name:
            raise ValueError(f"{where} declares the key {bench.key!r}; the folder must be named after its key")
        found[bench.key] = bench
    return found


BENCHMARKS: dict[str, Benchmark] = _declared()


def with_part(part: str) -> dict[str, Benchmark]:
    """The benchmarks that name ``part`` (``"report"``, ``"convert"``, ...: :data:`lmms_spatial.benchmark.PARTS`)."""
    return {key: bench for key, bench in BENCHMARKS.items() if getattr(bench, part)}


def features(key: str) -> Any:
    """The ``datasets.Features`` of benchmark ``key``'s rows (its ``BENCHMARK.features()``)."""
    if key not in BENCHMARKS:
        raise KeyError(f"{key!r} is not a benchmark; known: {', '.join(BENCHMARKS)}")
    declare = BENCHMARKS[key].features
    if not callable(declare):
        raise TypeError(f"tasks/{key}/__init__.py must name features= (() -> datasets.Features: its rows' schema)")
    return declare()


__all__ = ["BENCHMARKS", "Benchmark", "features", "with_part"]
