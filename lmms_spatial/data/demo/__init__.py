"""Small synthetic datasets in the normalised schemas, drawn by code.

The same builders make the demo data (``lmms-spatial demo``) and the test fixtures, so
both exercise the exact loading path of the real data: parquet files with ``datasets``
features (images as ``Image()``) read by ``datasets.load_dataset`` from a local folder
named by the benchmark's environment variable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lmms_spatial.data.demo.mmsi import build_mmsi
from lmms_spatial.data.sources import BENCHMARKS

# benchmark key -> (builder(out_dir, n) -> parquet path, tasks the demo runs)
DEMO_BENCHMARKS: dict[str, tuple[Callable[[Path, int], Path], list[str]]] = {
    "mmsi": (build_mmsi, ["mmsi_vanilla", "mmsi_circular", "mmsi_cot"]),
}


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
