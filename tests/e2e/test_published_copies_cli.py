"""Every benchmark exported, "uploaded" into a copied Hugging Face cache, and read back through
``LMMS_SPATIAL_<NAME>_REPO`` by ``lmms-eval`` offline: the same metrics as the local copy it came from."""

from __future__ import annotations

from pathlib import Path

import pytest
from published_copies import publish  # noqa: E402

from lmms_spatial.data.registry import BENCHMARKS

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("published_cli")]  # one worker builds the shared runs

# every benchmark, both OSR-Bench configs, single- and two-image tasks, a judged task (rule-based fallback)
TASKS = [
    "mmsi_vanilla", "mmsi_circular",
    "dori_view_parallelism_coarse", "dori_compound_rotation_granular",
    "odi_bench_close_existence", "odi_bench_close_relative_direction", "odi_bench_open_counting",
    "osr_qa_standard_vanilla", "osr_qa_negative_vanilla", "osr_cogmap_standard",
    "mmperspective_vpp", "mmperspective_pts", "mmperspective_robust",
]  # fmt: skip


@pytest.fixture(scope="module")
def runs(offline_env, lmms_eval_with_env, tmp_path_factory):
    """One lmms-eval run on the local copies, one on their published copies (nothing local): {name: Run}."""
    work = tmp_path_factory.mktemp("published")
    local_env = {**offline_env, "LMMS_SPATIAL_JUDGE": "none"}
    published_env = {k: v for k, v in local_env.items() if k not in {b.env_var for b in BENCHMARKS.values()}}
    published_env["HF_HOME"] = str(work / "hf")
    for key, bench in BENCHMARKS.items():
        publish(key, Path(offline_env[bench.env_var]), work, work / "hf" / "hub", f"lmms-spatial-ci/{key}")
        published_env[bench.repo_var] = f"lmms-spatial-ci/{key}"
    args = ["--model", "random_choice", "--model_args", "seed=3", "--tasks", ",".join(TASKS)]
    return {
        "local": lmms_eval_with_env(local_env, work / "local", *args),
        "published": lmms_eval_with_env(published_env, work / "published", *args),
        "hf_home": work / "hf",
    }


def test_every_benchmark_read_through_its_repo_variable_gives_the_local_copys_metrics(runs):
    local, published = runs["local"].results, runs["published"].results
    assert sorted(published["results"]) == sorted(local["results"]) and set(TASKS) <= set(published["results"])
    for task in TASKS:
        assert published["results"][task] == local["results"][task], task
        n = published["n-samples"][task]["effective"]
        assert n == local["n-samples"][task]["effective"] > 0, task


def test_the_published_copies_were_read_as_published_never_converted(runs):
    assert not (runs["hf_home"] / "lmms_spatial").exists()
    answers = {t: [s["filtered_resps"] for s in runs["published"].samples[t]] for t in TASKS}
    assert answers == {t: [s["filtered_resps"] for s in runs["local"].samples[t]] for t in TASKS}
