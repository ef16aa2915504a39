"""Whole runs as a user starts them: nothing set beyond the demo data's documented variables.

No judge configured, or a judge whose server is down: every task still gets results and samples, judge
metrics are NaN (never 0) with ``judge_failures`` counted, and the run says so before generation. A task
whose scoring raises costs that task its scores, not the other tasks their results; the run exits 1
naming it. A stock task that fails while lmms-eval builds it is named as that task, not ours.
"""

from __future__ import annotations

import math
import textwrap

import pytest

from lmms_spatial.paths import tasks_dir

ALL_FIVE = "mmsi,dori,mmperspective,odi_bench,osr_bench"
JUDGED = {"llm_accuracy", "judge_score"}
NOTICE = "task(s) of this run score with one"


def _judge_values(run, name: str) -> dict[str, float]:
    return {task: values[f"{name},none"] for task, values in run.results["results"].items() if f"{name},none" in values}


def _check_complete_with_nan_judge_metrics(run) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    evaluated = set(run.results["configs"])  # every leaf task of the five groups: 3 + 14 + 10 + 20 + 10
    assert {"mmsi_circular", "dori_canonical_orientation_granular", "mmperspective_robust", "odi_bench_open_ocr",
            "osr_qa_cogmap_negative_think"} <= evaluated and len(evaluated) == 57  # fmt: skip
    assert all([k for k in run.results["results"][task] if "," in k] for task in evaluated), "every task has results"
    assert evaluated <= set(run.samples), "every task has samples"
    judged = {**_judge_values(run, "llm_accuracy"), **_judge_values(run, "judge_score")}
    assert {t for t in judged if t.startswith("osr_qa_negative")} and {t for t in judged if "open" in t}
    assert all(isinstance(v, float) and math.isnan(v) for v in judged.values()), judged
    failures = _judge_values(run, "judge_failures")
    # random_choice draws no map: the with-map tasks are unscored and their judge is not asked (0 failures)
    with_map = {task for task in failures if task.startswith("osr_qa_cogmap_")}
    leaf = {task: n for task, n in failures.items() if task in run.samples and task not in with_map}
    assert leaf and all(n == len(run.samples[task]) > 0 for task, n in leaf.items()), leaf
    assert with_map and all(failures[t] == 0 and _judge_values(run, "answers_without_map")[t] == len(run.samples[t])
                            for t in with_map)  # fmt: skip
    # every leaf task's conditions are in the results: documents of the split, no judge, the map source
    conditions = run.results["lmms_spatial"]
    assert conditions["schema"] == 1 and conditions["model"]["label"] == "random_choice"
    assert set(conditions["tasks"]) == evaluated
    odi_open = conditions["tasks"]["odi_bench_open_ocr"]
    assert (odi_open["documents"], odi_open["of"], odi_open["limit"]) == (2, 2, None)  # the demo's 2 OCR questions
    assert conditions["tasks"]["mmsi_vanilla"]["judge"] is None
    assert {conditions["tasks"][t]["map_source"] for t in with_map} == {"none"}
    notice = run.stderr.index(NOTICE)
    assert notice < run.stderr.index("Model Responding (answers saved as they come)"), "said before generation"
    assert run.stderr.count(NOTICE) == 1


@pytest.mark.slow
def test_all_five_benchmarks_complete_without_a_judge_with_nan_judge_metrics(lmms_eval):
    # real=True: every benchmark's one run as a real `python -m lmms_eval` process, all five in one (every other
    # run of the suite forks from a pre-warmed process: tests/forkserver.py)
    run = lmms_eval("--model", "random_choice", "--tasks", ALL_FIVE, real=True)
    _check_complete_with_nan_judge_metrics(run)
    assert "no LLM judge is configured (LMMS_SPATIAL_JUDGE is not set)" in run.stderr
    assert "LMMS_SPATIAL_JUDGE=none" in run.stderr
    no_judge = {"kind": "none", "reason": "no judge configured (LMMS_SPATIAL_JUDGE is not set)"}
    assert run.results["lmms_spatial"]["tasks"]["odi_bench_open_ocr"]["judge"] == no_judge


@pytest.mark.slow
def test_all_five_benchmarks_complete_with_a_judge_whose_server_is_down(lmms_eval):
    down = {"LMMS_SPATIAL_JUDGE": "gpt-4o", "LMMS_SPATIAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}  # refused
    run = lmms_eval("--model", "random_choice", "--tasks", ALL_FIVE, env=down)
    _check_complete_with_nan_judge_metrics(run)
    assert "the LLM judge gpt-4o cannot be reached: http://127.0.0.1:9/v1/models does not answer" in run.stderr


@pytest.mark.slow
def test_a_predict_only_run_needs_no_judge_and_says_nothing_of_one(lmms_eval):
    run = lmms_eval("--model", "random_choice", "--tasks", "odi_bench_open_counting", "--predict_only")
    assert run.returncode == 0 and run.samples["odi_bench_open_counting"]
    assert NOTICE not in run.stderr


@pytest.mark.slow
def test_a_task_whose_scoring_raises_costs_only_its_own_scores(lmms_eval, tmp_path):
    own = tmp_path / "own_tasks"
    own.mkdir()
    (own / "utils.py").write_text("def explode(doc, results):\n    raise TypeError('scorer bug')\n")
    (own / "mmsi_broken.yaml").write_text(textwrap.dedent(f"""\
        include: {tasks_dir()}/mmsi/mmsi_vanilla.yaml
        task: mmsi_broken
        tag: []
        process_results: !function utils.explode
        """))  # fmt: skip
    run = lmms_eval("--model", "random_choice", "--tasks", "mmsi_vanilla,mmsi_broken", "--include_path", str(own))
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("lmms-spatial: mmsi_broken failed while scoring: TypeError: scorer bug")
    results = run.results["results"]
    assert results["mmsi_vanilla"]["accuracy,none"] == pytest.approx(1 / 12)  # the seeded guesses of the demo
    assert not [k for k in results["mmsi_broken"] if "," in k], "no partial score for the failed task"
    assert run.results["lmms_spatial"]["failed_tasks"] == {"mmsi_broken": "scoring: TypeError: scorer bug"}
    broken = run.samples["mmsi_broken"]
    assert len(broken) == 12 and all(s["filtered_resps"] and "lmms_spatial_error" in s for s in broken), "answers kept"


@pytest.mark.slow
def test_a_stock_task_that_cannot_load_is_named_not_ours(lmms_eval):
    run = lmms_eval("--model", "random_choice", "--tasks", "mme,mmsi_vanilla", expect_results=False)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("lmms-spatial: the run stopped while building task mme (an lmms-eval task, not one of ours")
    assert "mmsi_vanilla not evaluated" in last and "mmsi_vanilla failed" not in run.stderr


@pytest.mark.slow
def test_a_yaml_of_the_users_that_includes_ours_reads_exactly_its_own_data(offline_env, fixture_datasets,
                                                                           lmms_eval_with_env, tmp_path):  # fmt: skip
    """The lmms-eval way to evaluate your own copy, offline, with no variable of ours and nothing of ours cached."""
    import datasets

    mine = tmp_path / "my_mmsi.parquet"
    datasets.load_dataset(str(fixture_datasets["mmsi"]), split="test").select(range(6)).to_parquet(str(mine))
    own = tmp_path / "own_tasks"
    own.mkdir()
    (own / "my_mmsi.yaml").write_text(textwrap.dedent(f"""\
        include: {tasks_dir()}/mmsi/mmsi_vanilla.yaml
        task: my_mmsi
        tag: []
        dataset_path: parquet
        dataset_kwargs: {{data_files: {{test: {mine}}}}}
        """))  # fmt: skip
    env = {k: v for k, v in offline_env.items() if not k.startswith("LMMS_SPATIAL_")}
    env["HF_HOME"] = str(tmp_path / "empty_hf_home")
    run = lmms_eval_with_env(env, tmp_path / "out", "--model", "random_choice", "--tasks", "my_mmsi",
                             "--include_path", str(own))  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(run.samples["my_mmsi"]) == 6
    assert not (tmp_path / "empty_hf_home" / "lmms_spatial").exists()  # nothing of ours prepared
