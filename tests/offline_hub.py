"""A private, offline Hugging Face home with no benchmark variable set, for the data tests' ``hf_home`` fixtures;
and the way back online.

Not a ``conftest.py`` below ``tests/``: a second module named ``conftest`` would shadow
``tests/conftest.py`` for the modules that import helpers from it.
"""

from __future__ import annotations

from pathlib import Path

from lmms_spatial.data.hub_cache import OFFLINE_VARS
from lmms_spatial.data.registry import BENCHMARKS


def offline_hf_home(tmp_path: Path, monkeypatch) -> Path:
    """``HF_HOME`` in the test's folder, offline; no LMMS_SPATIAL_<NAME>_{PATH,REVISION,REPO,MAP} set."""
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # alone: the messages name it (the others the caller may export)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    for bench in BENCHMARKS.values():
        for var in (bench.env_var, bench.revision_var, bench.repo_var, bench.map_var):
            monkeypatch.delenv(var, raising=False)
    return home


def online(monkeypatch) -> None:
    """No offline variable set, whatever the caller exported (HF_DATASETS_OFFLINE=1 on air-gapped clusters)."""
    for name in OFFLINE_VARS:
        monkeypatch.delenv(name, raising=False)
