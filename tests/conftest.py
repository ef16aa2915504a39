"""Shared fixtures: offline environment, fixture datasets, and a checked lmms-eval runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lmms_spatial.data.demo import DEMO_BENCHMARKS, build_demo_data

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def offline_env(tmp_path_factory) -> dict[str, str]:
    """Environment for subprocesses: no Hub, a private HF cache, our fixture datasets."""
    root = tmp_path_factory.mktemp("lmms_env")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMMS_SPATIAL_")}
    env.update(
        HF_HOME=str(root / "hf_home"),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        LMMS_SPATIAL_JUDGE="none",  # rule-based fallbacks; judge tests point it at a loopback server
    )
    env.update(build_demo_data(root / "data"))
    return env


@pytest.fixture(scope="session")
def fixture_datasets(offline_env) -> dict[str, Path]:
    """{benchmark key: folder holding its fixture parquet}."""
    from lmms_spatial.data.sources import BENCHMARKS

    return {key: Path(offline_env[BENCHMARKS[key].env_var]) for key in DEMO_BENCHMARKS}


@dataclass
class Run:
    results: dict
    samples: dict[str, list[dict]]
    stdout: str
    stderr: str
    out: Path
    returncode: int = 0

    def metric(self, task: str, name: str):
        return self.results["results"][task][f"{name},none"]


def run_lmms_eval(args: list[str], env: dict[str, str], out: Path, expect_results: bool = True) -> Run:
    """Run ``python -m lmms_eval``; success is judged by the files it wrote, not its exit code.

    lmms-eval 0.7.3 exits 0 even when a task is missing or evaluation raises.
    """
    cmd = [sys.executable, "-m", "lmms_eval", *args, "--output_path", str(out), "--log_samples"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=out.parent)
    results_files = sorted(out.rglob("*_results.json"))
    if not expect_results:
        assert not results_files, f"expected no results, got {results_files}"
        return Run({}, {}, proc.stdout, proc.stderr, out, proc.returncode)
    assert results_files, f"lmms-eval wrote no results (rc={proc.returncode}):\n{proc.stderr[-6000:]}"
    results = json.loads(results_files[-1].read_text())
    samples = {}
    for f in out.rglob("*_samples_*.jsonl"):
        task = f.name.split("_samples_", 1)[1][: -len(".jsonl")]
        samples[task] = sorted((json.loads(line) for line in f.read_text().splitlines()), key=lambda s: s["doc_id"])
    return Run(results, samples, proc.stdout, proc.stderr, out, proc.returncode)


@pytest.fixture
def lmms_eval(offline_env, tmp_path):
    counter = iter(range(1000))

    def _run(*args: str, env: dict[str, str] | None = None, expect_results: bool = True) -> Run:
        out = tmp_path / f"run{next(counter)}"
        return run_lmms_eval(list(args), {**offline_env, **(env or {})}, out, expect_results)

    return _run


@dataclass
class RecordedBar:
    """What a :func:`lmms_spatial.progress.progress` bar was asked to show: total, label, count reached."""

    iterable: object = None
    total: int | None = None
    desc: str = ""
    unit: str = ""
    n: int = 0

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.n += 1

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@pytest.fixture
def progress_bars(monkeypatch) -> list[RecordedBar]:
    """Every progress bar made during the test (in order), recorded instead of drawn."""
    import lmms_spatial.progress

    bars: list[RecordedBar] = []

    def record(iterable=None, total=None, desc="", unit="", **_options) -> RecordedBar:
        bars.append(RecordedBar(iterable, total, desc, unit))
        return bars[-1]

    monkeypatch.setattr(lmms_spatial.progress, "tqdm", record)
    return bars
