"""``lmms-eval --tasks <ours>`` on the Hub releases as published, offline, with no LMMS_SPATIAL_*_PATH."""

from __future__ import annotations

from pathlib import Path

import forkserver  # tests/forkserver.py: CLI runs as forks of a pre-warmed process
import pytest
from hub_releases import dori_release, mmsi_release, odi_release, osr_release, place_in_hub_cache  # noqa: E402

from lmms_spatial.data.sources import BENCHMARKS, OFFLINE_VARS
from lmms_spatial.tasks.mmsi import MMSI_REVISION

pytestmark = pytest.mark.slow


@pytest.fixture
def bare_env(offline_env, tmp_path) -> dict[str, str]:
    """The offline environment without any local copy: only what is in its own Hugging Face cache."""
    env = {k: v for k, v in offline_env.items() if not k.startswith("LMMS_SPATIAL_") or k == "LMMS_SPATIAL_JUDGE"}
    env["HF_HOME"] = str(tmp_path / "hf")
    return env


def test_every_benchmark_runs_on_its_raw_release_in_the_cache(bare_env, fixture_datasets, lmms_eval_with_env, tmp_path):
    hub = Path(bare_env["HF_HOME"]) / "hub"
    place_in_hub_cache(hub, "UUUserna/OSR-Bench", osr_release())
    place_in_hub_cache(hub, "LiuYang66/ODI-Bench", odi_release())
    place_in_hub_cache(hub, "appledora/DORI-Benchmark", dori_release())
    mmsi = (fixture_datasets["mmsi"] / "test.parquet").read_bytes()  # MMSI-Bench is published normalised
    place_in_hub_cache(hub, "RunsenXu/MMSI-Bench", mmsi_release(mmsi), commit=MMSI_REVISION)  # the pinned commit
    tasks = "osr_qa_standard_vanilla,osr_qa_negative_vanilla,odi_bench_close_existence,dori_view_parallelism_coarse"
    run = lmms_eval_with_env(bare_env, tmp_path / "run", "--model", "random_choice", "--tasks", f"{tasks},mmsi_vanilla")
    n = {task: counts["effective"] for task, counts in run.results["n-samples"].items()}
    assert (n["osr_qa_standard_vanilla"], n["osr_qa_negative_vanilla"]) == (6, 8)  # each config from its own file
    assert (n["odi_bench_close_existence"], n["dori_view_parallelism_coarse"]) == (2, 2)
    assert n["mmsi_vanilla"] == len(run.samples["mmsi_vanilla"]) > 0
    prepared = sorted(p.relative_to(hub.parent).parts[:2] for p in (hub.parent / "lmms_spatial").glob("*/*/data"))
    assert prepared == [("lmms_spatial", "dori"), ("lmms_spatial", "odi_bench"), ("lmms_spatial", "osr_bench")]


@pytest.mark.parametrize(
    ("task", "key", "verbosity", "offline"),
    [
        ("osr_qa_standard_vanilla", "osr_bench", "INFO", ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")),
        # huggingface_hub and datasets are offline under TRANSFORMERS_OFFLINE alone: so is the run's data
        ("odi_bench_close_ocr", "odi_bench", "INFO", ("TRANSFORMERS_OFFLINE",)),
        ("dori_canonical_orientation_coarse", "dori", "DEBUG", ("HF_HUB_OFFLINE",)),
    ],
)
def test_offline_with_no_data_fails_at_once_non_zero_with_one_line(bare_env, tmp_path, task, key, verbosity,
                                                                   offline):  # fmt: skip
    # the Hub at a port nothing listens on: a download tried (and retried) would name it in its error. A fork of
    # the suite's pre-warmed process (tests/forkserver.py); the `lmms-eval` script's own start is the start-up
    # hook tests' (tests/test_startup_hook.py)
    env = {k: v for k, v in bare_env.items() if k not in OFFLINE_VARS} | dict.fromkeys(offline, "1")
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    args = ["--model", "random_choice", "--tasks", task, "--limit", "1", "--output_path", str(tmp_path / "o"),
            "--verbosity", verbosity]  # fmt: skip
    proc = forkserver.run_module("lmms_eval", args, env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1
    # the line says it all: no traceback of lmms-eval's task loading above it, but where the user asks for one
    assert ("Traceback" in proc.stderr) == (verbosity == "DEBUG"), proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    because = "/".join(offline)  # the variables that keep it offline, as the line names them
    assert last.startswith(f"lmms-spatial: {task} failed: DataUnavailable: {key}: offline ({because}) and "), last
    assert BENCHMARKS[key].env_var in last and f"lmms-spatial convert {key}" in last
    # no download was tried, so none was retried (what made this slow before; no timed assertion: a loaded
    # machine must not fail it)
    assert "127.0.0.1:9" not in proc.stderr + proc.stdout
