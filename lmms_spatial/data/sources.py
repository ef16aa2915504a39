"""Where each benchmark's data comes from: the Hub, or a local copy named by an env var.

Task YAMLs read ``dataset_path``/``dataset_kwargs`` through ``!function utils.DATASET_PATH``
(lmms-eval's YAML constructor returns any attribute of ``utils.py``, not only functions),
so the environment is read every time the YAML is loaded and users can run offline::

    export LMMS_SPATIAL_MMSI_PATH=/data/MMSI-Bench        # a folder of parquet files
    export LMMS_SPATIAL_MMSI_PATH=/data/mmsi/test.parquet # or a single file

A folder is handed to ``datasets.load_dataset`` as is (a Hub snapshot, or our normalised
layout with ``test*.parquet`` / ``data/test-*.parquet``); a single file is loaded as the
``test`` split with the builder its suffix names.

Which benchmarks exist is :mod:`lmms_spatial.data.registry`'s business (``BENCHMARKS`` is
read from there); this module only resolves where a registered benchmark's data is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from lmms_spatial.data.benchmark import Benchmark
from lmms_spatial.data.registry import BENCHMARKS, MMSI_REVISION  # noqa: F401  (MMSI_REVISION: re-exported)


class DataUnavailable(RuntimeError):
    """A benchmark's data cannot be read as configured; the message is one line naming the fix."""


_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv", ".arrow": "arrow"}


@dataclass(frozen=True)
class DatasetSource:
    path: str
    kwargs: dict = field(default_factory=dict)
    local: bool = False


def _offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"} for v in _OFFLINE_VARS)


_OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


def hf_home() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "huggingface"
    return Path(os.environ.get("HF_HOME") or default).expanduser()


def hub_cache() -> Path:
    """Read now, not at import (as ``huggingface_hub.constants`` is): launchers and tests set it late."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    return Path(explicit).expanduser() if explicit else hf_home() / "hub"


def _in_hub_cache(repo_id: str) -> bool:
    """Whether a snapshot of the dataset ``repo_id`` is in the Hugging Face cache (no network)."""
    return bool(cached_commits(repo_id)) or _in_datasets_cache(repo_id)


def cached_commits(repo_id: str) -> list[str]:
    """The commits of dataset ``repo_id`` whose snapshots are in the Hub cache, sorted (no network)."""
    folder = hub_cache() / f"datasets--{repo_id.replace('/', '--')}" / "snapshots"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def _in_datasets_cache(repo_id: str) -> bool:
    """Whether ``datasets`` prepared ``repo_id`` itself (it then reads it offline at any revision)."""
    datasets_cache = Path(os.environ.get("HF_DATASETS_CACHE") or hf_home() / "datasets")
    return (datasets_cache / repo_id.replace("/", "___").lower()).is_dir()


def hub_source(bench: Benchmark) -> DatasetSource:
    """The Hub release, read as published or through a prepared copy; otherwise :class:`DataUnavailable`.

    Checked before lmms-eval starts its download (and its retries): a release that cannot be had
    offline, or is not public, fails in one line naming the fix.
    """
    if not bench.hub_id:
        raise DataUnavailable(
            f"{bench.key}: no public release on the Hugging Face Hub; convert a local copy with "
            f"`lmms-spatial convert {bench.converter} ...` and set {bench.env_var} to the output"
        )
    if not bench.hub_is_normalised:
        from lmms_spatial.data.prepare import prepare

        return DatasetSource(str(prepare(bench)), {}, local=True)
    from lmms_spatial.data.prepare import cached_snapshot, revision_of

    revision = revision_of(bench)
    if _offline():
        # air-gapped: a snapshot copied into HF_HUB_CACHE is read as a local folder (datasets itself
        # only finds releases it prepared before); else what datasets cached; else one line
        snapshot = cached_snapshot(bench, revision)
        if snapshot is not None:
            return DatasetSource(str(snapshot), {}, local=True)
        others = cached_commits(bench.hub_id)
        if others and not _in_datasets_cache(bench.hub_id):  # e.g. a copied cache of another commit
            raise DataUnavailable(
                f"{bench.key}: offline ({'/'.join(_OFFLINE_VARS)}) and {bench.hub_id}@{revision} is not in the "
                f"Hugging Face cache, which holds commit(s) {', '.join(others)}; set {bench.revision_var} to one "
                f"of them, download {revision} once with network access, or set {bench.env_var} to a local copy"
            )
        if not _in_hub_cache(bench.hub_id):
            raise DataUnavailable(
                f"{bench.key}: offline ({'/'.join(_OFFLINE_VARS)}) and {bench.hub_id} is not in the Hugging Face "
                f"cache; download it once with network access, or set {bench.env_var} to a local copy"
            )
    return DatasetSource(bench.hub_id, {"revision": revision} if revision != "main" else {})


def dataset_source(key: str) -> DatasetSource:
    """Resolve a benchmark's data location now (its env var, else a published copy, else the Hub release)."""
    bench = BENCHMARKS[key]
    local = os.environ.get(bench.env_var, "").strip()
    if not local:
        from lmms_spatial.data.published import published_source  # LMMS_SPATIAL_<NAME>_REPO: a published copy

        return published_source(bench) or hub_source(bench)
    path = Path(local).expanduser()
    if not path.exists():
        raise DataUnavailable(f"{bench.env_var}={local!r}: no such file or directory")
    if path.is_dir():
        if not any(f.suffix.lower() in _BUILDERS for f in path.rglob("*") if f.is_file()):
            raise DataUnavailable(
                f"{bench.env_var}={local!r}: the folder holds no data files ({', '.join(sorted(_BUILDERS))})"
            )
        _check_test_split(path, bench.env_var, local)
        return DatasetSource(str(path.resolve()), {}, local=True)
    builder = _BUILDERS.get(path.suffix.lower())
    if builder is None:
        raise DataUnavailable(f"{bench.env_var}={local!r}: expected a folder or one of {sorted(_BUILDERS)}")
    return DatasetSource(builder, {"data_files": {"test": str(path.resolve())}}, local=True)


def _check_test_split(folder: Path, env_var: str, shown: str) -> None:
    """The tasks read split ``test``; datasets names splits after file names (``foo.parquet`` is ``train``).

    A card's ``configs`` (README.md front matter) may name the splits itself: then datasets decides.
    """
    readme = folder / "README.md"
    if readme.is_file() and "configs:" in readme.read_text(encoding="utf-8", errors="replace"):
        return
    try:
        from datasets.data_files import get_data_patterns

        splits = sorted(str(s) for s in get_data_patterns(str(folder)))
    except Exception:  # datasets will say what it makes of the folder
        return
    if "test" not in splits:
        raise DataUnavailable(
            f"{env_var}={shown!r}: datasets reads this folder as split(s) {splits}, the tasks read 'test'; name the "
            "files test*.parquet (or data/test-*.parquet), or set the variable to one parquet file"
        )
