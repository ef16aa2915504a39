"""Small synthetic datasets in the normalised schemas, drawn by code.

The same builders make the demo data (``lmms-spatial demo``) and the test fixtures, so
both exercise the exact loading path of the real data: parquet files with ``datasets``
features (images as ``Image()``) read by ``datasets.load_dataset`` from a local folder
named by the benchmark's environment variable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lmms_spatial.data.demo.dori import build_dori
from lmms_spatial.data.demo.mmperspective import DEMO_TASKS as _MMPERSPECTIVE_TASKS
from lmms_spatial.data.demo.mmperspective import build_mmperspective
from lmms_spatial.data.demo.mmsi import build_mmsi
from lmms_spatial.data.demo.odi_bench import DEMO_TASKS as _ODI_BENCH_TASKS
from lmms_spatial.data.demo.odi_bench import build_odi_bench
from lmms_spatial.data.demo.osr_bench import DEMO_TASKS as _OSR_BENCH_TASKS
from lmms_spatial.data.demo.osr_bench import build_osr_bench
from lmms_spatial.data.registry import BENCHMARKS
from lmms_spatial.metrics.dori import GRANULARITIES as _DORI_GRANULARITIES
from lmms_spatial.metrics.dori import TASKS as _DORI_TASKS

# benchmark key -> (builder(out_dir, n) -> parquet path, tasks the demo runs)
DEMO_BENCHMARKS: dict[str, tuple[Callable[[Path, int], Path], list[str]]] = {
    "mmsi": (build_mmsi, ["mmsi_vanilla", "mmsi_circular", "mmsi_cot"]),
    "odi_bench": (build_odi_bench, _ODI_BENCH_TASKS),
    "mmperspective": (build_mmperspective, _MMPERSPECTIVE_TASKS),
    "osr_bench": (build_osr_bench, _OSR_BENCH_TASKS),
    "dori": (
        build_dori,
        [f"{p}_{t}_{g}" for p in ("dori", "dori_unstructured") for g in _DORI_GRANULARITIES for t in _DORI_TASKS],
    ),
}


def _discover_demo_modules() -> None:
    """Add every demo module ``<key>.py`` that holds ``build`` and ``DEMO_TASKS``.

    New benchmarks (``lmms-spatial new-task``) get their demo data this way: the module
    ``lmms_spatial/data/demo/<key>.py`` holds the fixture builder ``build(out_dir, n)`` and the
    tasks the demo runs; the benchmark itself (key, Hub id, environment variable) is declared
    in ``lmms_spatial/data/registry/<key>.py``, which this needs and never the other way round.
    Entries above win; discovered ones follow in module-name order. Helper modules (drawing,
    projections) hold neither name and are skipped.
    """
    import importlib
    import pkgutil

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name in DEMO_BENCHMARKS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if not (hasattr(module, "build") and hasattr(module, "DEMO_TASKS")):
            continue
        if info.name not in BENCHMARKS:
            raise ValueError(
                f"lmms_spatial/data/demo/{info.name}.py builds demo data for {info.name!r}, which is not a registered "
                f"benchmark: declare it in lmms_spatial/data/registry/{info.name}.py "
                f"(BENCHMARK = Benchmark({info.name!r}, hub_id, env_var))"
            )
        DEMO_BENCHMARKS[info.name] = (module.build, list(module.DEMO_TASKS))


_discover_demo_modules()


def build_demo_data(root: Path, n: int | None = None) -> dict[str, str]:
    """Build every demo dataset under ``root``; returns {env var: folder} to export."""
    import datasets

    datasets.disable_progress_bars()
    env = {}
    for key, (builder, _tasks) in DEMO_BENCHMARKS.items():
        folder = Path(root) / key
        builder(folder, n) if n is not None else builder(folder)
        env[BENCHMARKS[key].env_var] = str(folder)
    return env


def demo_tasks() -> list[str]:
    return [task for _builder, tasks in DEMO_BENCHMARKS.values() for task in tasks]
