"""What the Hugging Face caches hold, read from disk (no network), and the one error of data resolution.

A leaf module: :mod:`lmms_spatial.data.sources` (which release to read) and
:mod:`lmms_spatial.data.prepare` (converting a raw release) both import it, and neither imports the
other's internals back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


class DataUnavailable(RuntimeError):
    """A benchmark's data cannot be read as configured; the message is one line naming the fix.

    ``transient``: whether the same attempt could succeed a moment later (a download that failed on the
    network). lmms-eval retries loading a task's data 5 times, 2 s apart, whatever the error; only a
    transient one gets those retries (:func:`lmms_spatial.plugin.tasks.patch_data_retries`).
    """

    transient = False


OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")
_TRUE = {"1", "ON", "YES", "TRUE"}  # what huggingface_hub and datasets read as set (ENV_VARS_TRUE_VALUES)


def offline_because(environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables that keep the data off the network, by the libraries' own rules ([] when it is online;
    ``environ``: default ``os.environ``, read now, where the libraries read theirs once, at import).

    huggingface_hub (which downloads a release): ``HF_HUB_OFFLINE``, or ``TRANSFORMERS_OFFLINE`` where that is
    unset or empty (``constants.HF_HUB_OFFLINE``). datasets (which reads it): ``HF_DATASETS_OFFLINE`` where set,
    else huggingface_hub's (``datasets.config.HF_HUB_OFFLINE``). Either one offline keeps the release off the
    network: datasets downloads through huggingface_hub."""
    env = os.environ if environ is None else environ
    hub = "HF_HUB_OFFLINE" if env.get("HF_HUB_OFFLINE") else "TRANSFORMERS_OFFLINE"
    because = [hub] if env.get(hub, "").upper() in _TRUE else []
    if env.get("HF_DATASETS_OFFLINE", "").upper() in _TRUE:
        because.append("HF_DATASETS_OFFLINE")
    return because


def offline(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the data is read without the network (:func:`offline_because`)."""
    return bool(offline_because(environ))


def hf_home() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "huggingface"
    return Path(os.environ.get("HF_HOME") or default).expanduser()


def hub_cache() -> Path:
    """Read now, not at import (as ``huggingface_hub.constants`` is): launchers and tests set it late."""
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    return Path(explicit).expanduser() if explicit else hf_home() / "hub"


def cached_commits(repo_id: str) -> list[str]:
    """The commits of dataset ``repo_id`` whose snapshots are in the Hub cache, sorted (no network)."""
    folder = hub_cache() / f"datasets--{repo_id.replace('/', '--')}" / "snapshots"
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def in_datasets_cache(repo_id: str) -> bool:
    """Whether ``datasets`` prepared ``repo_id`` itself (it then reads it offline at any revision)."""
    datasets_cache = Path(os.environ.get("HF_DATASETS_CACHE") or hf_home() / "datasets")
    return (datasets_cache / repo_id.replace("/", "___").lower()).is_dir()


def in_hub_cache(repo_id: str) -> bool:
    """Whether a snapshot of the dataset ``repo_id`` is in the Hugging Face cache (no network)."""
    return bool(cached_commits(repo_id)) or in_datasets_cache(repo_id)
