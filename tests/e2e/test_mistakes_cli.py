"""The mistakes users make get one line naming the fix, exit status 1, nothing left behind and nothing lost
(lmms_spatial.plugin.run, .names, .owners; lmms_spatial.data.sources; lmms_spatial.judge.preflight)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import forkserver  # tests/forkserver.py: CLI runs as forks of a pre-warmed process
import pytest

from lmms_spatial.paths import tasks_dir

pytestmark = pytest.mark.slow

PLUGIN = Path(__file__).parent / "plugin"


def last_line(run) -> str:
    return run.stderr.strip().splitlines()[-1]


# --- task names ------------------------------------------------------------------------------------------------


def test_a_misspelt_name_of_ours_ends_the_run_with_our_nearest_names(lmms_eval):
    run = lmms_eval("--model", "random_choice", "--tasks", "mmsi_vanilla,dorri", expect_results=False)
    assert run.returncode == 1
    assert last_line(run) == "lmms-spatial: no task named dorri: did you mean dori?"
    assert not run.out.exists()  # stopped before anything was written


def test_a_name_nowhere_near_ours_keeps_lmms_evals_own_answer(lmms_eval):
    run = lmms_eval("--model", "random_choice", "--tasks", "totally_unknown_xyz", expect_results=False)
    assert run.returncode == 0  # lmms-eval 0.7.x's own behaviour, untouched
    assert "Tasks not found: totally_unknown_xyz" in run.stderr + run.stdout
    assert "lmms-spatial" not in run.stderr


# --- --limit ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tagged(tmp_path_factory) -> Path:
    """A folder of the user's tagging one of our tasks: ``--tasks my_tag`` names nothing of ours."""
    own = tmp_path_factory.mktemp("tagged")
    (own / "my_mmsi.yaml").write_text(f"include: {tasks_dir()}/mmsi/mmsi_vanilla.yaml\ntask: my_mmsi\ntag: my_tag\n")
    return own


@pytest.mark.parametrize(
    ("tasks", "limit", "problem"),
    [("mmsi_vanilla", "0", "leaves no document to evaluate"),
     ("mmsi_vanilla", "-2", "is no number of documents (-1 means all of them)"),
     ("my_tag", "0", "leaves no document to evaluate")],  # recognised only once lmms-eval resolved the tag
)  # fmt: skip
def test_a_limit_that_evaluates_nothing_ends_the_run_naming_limit_and_leaves_no_cache_folder(
    tasks, limit, problem, tagged, lmms_eval
):
    run = lmms_eval("--model", "random_choice", "--tasks", tasks, "--include_path", str(tagged), "--limit", limit,
                    expect_results=False)  # fmt: skip
    assert run.returncode == 1
    assert last_line(run) == (
        f"lmms-spatial: --limit {limit} {problem}: give a number of documents per task (--limit 8), a fraction of "
        "each task (--limit 0.1), or no --limit for all of them"
    )
    assert "Traceback" not in run.stderr and "Error during evaluation" not in run.stderr  # the line alone
    assert not (run.out / "cache").exists()


# --- model arguments a model of ours cannot use ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "model_args", "line"),
    [("replay", "samples=nowhere", "replay: samples path 'nowhere' does not exist"),
     ("replay", "samples=nowhere,prompt_check=maybe",
      "replay: prompt_check must be one of ('error', 'warn', 'off'), got 'maybe'"),
     ("staged", "base=random_choice",
      "staged: base model 'random_choice' is a simple (non-chat) model; stages need chat messages")],
)  # fmt: skip
def test_model_arguments_a_model_of_ours_cannot_use_end_the_run_in_one_line(model, model_args, line, lmms_eval):
    run = lmms_eval("--model", model, "--model_args", model_args, "--tasks", "mmsi_vanilla", expect_results=False)
    assert run.returncode == 1
    assert last_line(run) == f"lmms-spatial: {line}"
    assert "Traceback" not in run.stderr and "Error during evaluation" not in run.stderr  # the line alone


# --- data of another benchmark -----------------------------------------------------------------------------------


def test_a_data_variable_pointing_at_another_benchmark_names_the_variable_the_benchmark_found_and_expected(
    fixture_datasets, lmms_eval
):
    dori = fixture_datasets["dori"]
    run = lmms_eval("--model", "random_choice", "--tasks", "mmsi_vanilla",
                    env={"LMMS_SPATIAL_MMSI_PATH": str(dori)}, expect_results=False)  # fmt: skip
    assert run.returncode == 1
    assert last_line(run) == (
        f"lmms-spatial: mmsi_vanilla failed: DataUnavailable: LMMS_SPATIAL_MMSI_PATH={str(dori)!r} holds dori data "
        "(the layout of hub_cards/dori/README.md), not mmsi: point LMMS_SPATIAL_MMSI_PATH at a mmsi copy (dori is "
        "read from LMMS_SPATIAL_DORI_PATH)"
    )


# --- a second run into the same output path while the first is alive -----------------------------------------

ARGS = ["--model", "slow_guess", "--tasks", "mmsi_vanilla", "--limit", "4"]


def _plugin_env(offline_env: dict[str, str], log: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(PLUGIN), offline_env.get("PYTHONPATH", "")) if p)
    return {**offline_env, "PYTHONPATH": path, "LMMS_EVAL_PLUGINS": "lmms_spatial_test_models",
            "LMMS_SPATIAL_SAVE_EVERY": "2", "SLOW_GUESS_LOG": str(log), **extra}  # fmt: skip


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(scope="module")
def second_runs(offline_env, lmms_eval_with_env, tmp_path_factory):
    """A first run (run id job42) that saved 2 answers and stays alive; meanwhile a second run with its own run
    id and a third with the first one's, all into the same --output_path. The first is killed after."""
    root = tmp_path_factory.mktemp("live")
    out = root / "out"
    first_env = _plugin_env(offline_env, root / "first.log", LMMS_CACHE_RUN_ID="job42", SLOW_GUESS_HANG_AFTER="2")
    # each a fork of the suite's pre-warmed process where a new one would be the same run (tests/forkserver.py)
    first = forkserver.start("lmms_eval", [*ARGS, "--output_path", str(out), "--log_samples"], first_env, cwd=root)
    audit = out / "cache" / "runs" / "job42" / "rank_0.audit.jsonl"
    deadline = time.monotonic() + 600
    while len(_lines(audit)) < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # the first chunk (2 answers) is on disk, and the model hangs on the next
    try:
        assert first.poll() is None, "the first run ended before the others started"
        own = lmms_eval_with_env(_plugin_env(offline_env, root / "own.log"), out, *ARGS)
        same = forkserver.run_module("lmms_eval", [*ARGS, "--output_path", str(out), "--log_samples"],
                                     _plugin_env(offline_env, root / "same.log", LMMS_CACHE_RUN_ID="job42"), cwd=root,
                                     timeout=900)  # fmt: skip
        alive = first.poll() is None
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=60)
    return first.pid, alive, own, _lines(root / "own.log"), same, _lines(root / "same.log"), out


@pytest.mark.xdist_group("live_runs")  # one worker starts the three runs both tests read
def test_a_second_run_into_a_live_runs_output_path_keeps_its_own_answers_and_names_the_first(second_runs):
    pid, alive, own, asked, _same, _, _out = second_runs
    assert alive and own.returncode == 0, own.stderr[-3000:]
    notice = [line for line in own.stderr.splitlines() if f"process {pid} on " in line]
    assert len(notice) == 1 and notice[0].endswith(
        f"is writing answers into {own.out / 'cache'} now: this run keeps its own apart and does not read that "
        "run's (if both evaluate the same, stop one)"
    )
    assert "interrupted" not in own.stderr  # the first run's 2 saved answers are not taken for a dead run's
    assert len(asked) == 4 and len(own.samples["mmsi_vanilla"]) == 4  # every answer its own


@pytest.mark.xdist_group("live_runs")  # one worker starts the three runs both tests read
def test_a_second_live_run_under_the_same_run_id_is_refused_naming_the_first(second_runs):
    pid, alive, _own, _asked, same, asked, out = second_runs
    assert alive and same.returncode == 1 and asked == []
    assert last_line(same).startswith(f"lmms-spatial: process {pid} on ")
    assert last_line(same).endswith(
        f"is writing answers into {out / 'cache' / 'runs' / 'job42'}, the folder of the same run id "
        "(LMMS_CACHE_RUN_ID=job42): two live runs cannot share one; wait for it to end, or give this run its own "
        "(LMMS_CACHE_RUN_ID=<id>)"
    )


# --- a judge key that is refused ---------------------------------------------------------------------------------


def test_a_judge_key_the_server_refuses_ends_the_run_naming_the_key_variable(lmms_eval):
    from tools.fake_judge import FakeJudgeServer

    with FakeJudgeServer(api_key="sk-right") as server:  # refuses every other key with HTTP 401, as vLLM does
        url = server.base_url
        judge = {"LMMS_SPATIAL_JUDGE": "gpt-4o", "LMMS_SPATIAL_JUDGE_BASE_URL": url,
                 "LMMS_SPATIAL_JUDGE_API_KEY": "sk-wrong", "LMMS_SPATIAL_JUDGE_CACHE": "off"}  # fmt: skip
        run = lmms_eval("--model", "random_choice", "--tasks", "osr_qa_negative_vanilla", "--limit", "2", env=judge)
    assert run.returncode == 1
    assert "set LMMS_SPATIAL_JUDGE_API_KEY (or OPENAI_API_KEY) to a key that server accepts" in run.stderr  # before
    assert last_line(run) == (
        f"lmms-spatial: the LLM judge at {url}/ refused the API key (HTTP 401), so the judged items of "
        "osr_qa_negative_vanilla were not judged (NaN, counted in judge_failures): set LMMS_SPATIAL_JUDGE_API_KEY "
        "(or OPENAI_API_KEY) to a key it accepts, then score the kept answers again with --model replay"
    )
    assert run.results["results"]["osr_qa_negative_vanilla"]["judge_failures,none"] > 0
    assert len(run.samples["osr_qa_negative_vanilla"]) == 2  # answers written, and kept in the cache
