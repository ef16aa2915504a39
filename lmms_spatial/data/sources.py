"""Where each benchmark's data comes from: the Hub, or a local copy named by an env var.

Task YAMLs read ``dataset_path``/``dataset_kwargs`` through ``!function utils.DATASET_PATH``
(lmms-eval's YAML constructor returns any attribute of ``utils.py``, not only functions),
so the environment is read every time the YAML is loaded and users can run offline::

    export LMMS_SPATIAL_MMSI_PATH=/data/MMSI-Bench        # a folder of parquet files
    export LMMS_SPATIAL_MMSI_PATH=/data/mmsi/test.parquet # or a single file

A folder is handed to ``datasets.load_dataset`` as is (a Hub snapshot, or our normalised
layout with ``test*.parquet`` / ``data/test-*.parquet``); a single file is loaded as the
``test`` split with the builder its suffix names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Benchmark:
    key: str
    hub_id: str
    env_var: str


BENCHMARKS: dict[str, Benchmark] = {
    b.key: b
    for b in (
        Benchmark("mmsi", "RunsenXu/MMSI-Bench", "LMMS_SPATIAL_MMSI_PATH"),
        Benchmark("dori", "appledora/DORI-Benchmark", "LMMS_SPATIAL_DORI_PATH"),
        Benchmark("mmperspective", "", "LMMS_SPATIAL_MMPERSPECTIVE_PATH"),  # no public data yet: local copy only
        Benchmark("odi_bench", "LiuYang66/ODI-Bench", "LMMS_SPATIAL_ODI_PATH"),
        Benchmark("osr_bench", "UUUserna/OSR-Bench", "LMMS_SPATIAL_OSR_PATH"),
    )
}

_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv", ".arrow": "arrow"}


@dataclass(frozen=True)
class DatasetSource:
    path: str
    kwargs: dict = field(default_factory=dict)
    local: bool = False


def dataset_source(key: str) -> DatasetSource:
    """Resolve a benchmark's data location now (Hub id unless its env var is set)."""
    if key not in BENCHMARKS:  # declared by its demo module (lmms-spatial new-task): registered on import
        import lmms_spatial.data.demo  # noqa: F401
    bench = BENCHMARKS[key]
    local = os.environ.get(bench.env_var, "").strip()
    if not local:
        return DatasetSource(bench.hub_id)
    path = Path(local).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{bench.env_var}={local!r}: no such file or directory")
    if path.is_dir():
        return DatasetSource(str(path.resolve()), {}, local=True)
    builder = _BUILDERS.get(path.suffix.lower())
    if builder is None:
        raise ValueError(f"{bench.env_var}={local!r}: expected a folder or one of {sorted(_BUILDERS)}")
    return DatasetSource(builder, {"data_files": {"test": str(path.resolve())}}, local=True)
