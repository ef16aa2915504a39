"""Fixtures of the data tests: a private, offline Hugging Face home with no benchmark variable set."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_spatial.data.registry import BENCHMARKS


@pytest.fixture
def hf_home(tmp_path, monkeypatch) -> Path:
    """``HF_HOME`` in the test's folder, offline; no LMMS_SPATIAL_<NAME>_{PATH,REVISION,REPO,MAP} set."""
    home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for bench in BENCHMARKS.values():
        for var in (bench.env_var, bench.revision_var, bench.repo_var, bench.map_var):
            monkeypatch.delenv(var, raising=False)
    return home
