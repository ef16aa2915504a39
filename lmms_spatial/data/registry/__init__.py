"""Every benchmark the package knows, by key: :data:`BENCHMARKS`.

The five shipped benchmarks are listed here. A new one (``lmms-spatial new-task``) declares
itself in its own module, ``lmms_spatial/data/registry/<key>.py``, holding
``BENCHMARK = Benchmark("<key>", hub_id, "LMMS_SPATIAL_<KEY>_PATH")``; importing this package
finds it. Adding a benchmark therefore edits no shared file, and registration needs neither the
demo fixtures nor the data sources: both import this package, it imports neither (the
declarations import only the leaf :mod:`lmms_spatial.data.benchmark`).
"""

from __future__ import annotations

import importlib
import pkgutil

from lmms_spatial.data.benchmark import Benchmark

# RunsenXu/MMSI-Bench's commit holding MMSI_Bench.parquet (1,000 rows), as pinned by several third-party
# evaluation code bases (one checked it against the Hub API, one checks the file's SHA-256; see
# hub_cards/mmsi/README.md). DORI, ODI-Bench, OSR-Bench: no commit could be checked, so "main".
MMSI_REVISION = "ec7c92bfaf7728fcca1d61e3e224e190af309436"

BENCHMARKS: dict[str, Benchmark] = {
    b.key: b
    for b in (
        Benchmark("mmsi", "RunsenXu/MMSI-Bench", "LMMS_SPATIAL_MMSI_PATH", revision=MMSI_REVISION),
        Benchmark("dori", "appledora/DORI-Benchmark", "LMMS_SPATIAL_DORI_PATH", False, "dori"),
        # no public data yet: local copy only
        Benchmark("mmperspective", "", "LMMS_SPATIAL_MMPERSPECTIVE_PATH", converter="mmperspective"),
        Benchmark("odi_bench", "LiuYang66/ODI-Bench", "LMMS_SPATIAL_ODI_PATH", False, "odi_bench"),
        Benchmark(
            "osr_bench",
            "UUUserna/OSR-Bench",
            "LMMS_SPATIAL_OSR_PATH",
            False,
            "osr_bench",
            # the two QA tables and one panorama per scene; not the per-scene JSON, depth or layouts
            allow_patterns=("qa.csv", "qa_with_negative.csv", "data/*/rgb.png", "README.md"),
        ),
    )
}


def _declared() -> dict[str, Benchmark]:
    """``BENCHMARK`` of every module in this package, in module-name order.

    A module named otherwise than its key, without ``BENCHMARK``, or reusing a shipped key is a
    mistake in a new benchmark's files: it fails here, at import, with the file and the fix.
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
        if bench.key in BENCHMARKS:
            raise ValueError(f"{where}: {bench.key!r} is a shipped benchmark already listed in {__name__}")
        found[bench.key] = bench
    return found


BENCHMARKS.update(_declared())

__all__ = ["BENCHMARKS", "MMSI_REVISION", "Benchmark"]
