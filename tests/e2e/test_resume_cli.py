"""A run never loses an answer: killed midway, the same command asks the model only for what is missing.

The model is ``slow_guess`` (``tests/e2e/plugin``): ``random_choice``'s guesses, one request at a time, each
logged before it is answered. Nothing but the demo data and the plugin is set: the answers are kept by
default (lmms-eval's response cache in ``<output_path>/cache``, saved every ``LMMS_SPATIAL_SAVE_EVERY``
requests).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import forkserver  # tests/forkserver.py: CLI runs as forks of a pre-warmed process
import pytest

PLUGIN = Path(__file__).parent / "plugin"
TASKS = "mmsi_vanilla,dori_view_parallelism_coarse,osr_qa_standard_vanilla"
ARGS = ["--model", "slow_guess", "--tasks", TASKS, "--limit", "8"]
SAVE_EVERY = 4

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("resume_cli")]  # one worker builds the shared runs


def _env(offline_env: dict[str, str], log: Path, delay: float) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(PLUGIN), offline_env.get("PYTHONPATH", "")) if p)
    return {**offline_env, "PYTHONPATH": path, "LMMS_EVAL_PLUGINS": "lmms_spatial_test_models",
            "LMMS_SPATIAL_SAVE_EVERY": str(SAVE_EVERY), "SLOW_GUESS_LOG": str(log),
            "SLOW_GUESS_DELAY": str(delay)}  # fmt: skip


def _asked(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _metrics(results: dict) -> dict:
    return {task: {k: v for k, v in values.items() if "stderr" not in k} for task, values in results["results"].items()}


@pytest.fixture(scope="module")
def runs(offline_env, lmms_eval_with_env, tmp_path_factory):
    """An uninterrupted run, and a run killed (SIGKILL) after 10 requests then started again as it was."""
    root = tmp_path_factory.mktemp("resume")
    reference = lmms_eval_with_env(_env(offline_env, root / "reference.log", 0.0), root / "reference", *ARGS)

    out = root / "interrupted"
    first_log = root / "first.log"
    # a fork of the suite's pre-warmed process where a new one would be the same run (tests/forkserver.py)
    proc = forkserver.start("lmms_eval", [*ARGS, "--output_path", str(out), "--log_samples"],
                            _env(offline_env, first_log, 0.5), cwd=root)  # fmt: skip
    deadline = time.monotonic() + 600
    while len(_asked(first_log)) < 10 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not list(out.rglob("*_results.json"))
    first = _asked(first_log)

    resumed = lmms_eval_with_env(_env(offline_env, root / "second.log", 0.0), out, *ARGS)
    return reference, first, _asked(root / "second.log"), _asked(root / "reference.log"), resumed


def test_the_resumed_run_asks_the_model_only_for_answers_not_saved_before_the_kill(runs):
    _reference, first, second, everything, _resumed = runs
    saved = set(everything) - set(second)
    assert len(everything) == len(set(everything)) == 18  # --limit 8 of mmsi and osr, dori's 2: each asked once
    assert set(second) | saved == set(everything)
    assert saved <= set(first)  # only answers the first run got were reused
    assert len(saved) >= 2 * SAVE_EVERY  # the kill came after the second chunk of 4 was saved
    assert len(set(first) - saved) <= SAVE_EVERY  # at most the chunk in progress was lost


def test_the_resumed_run_gives_the_numbers_of_a_run_never_interrupted(runs):
    reference, _first, _second, _everything, resumed = runs
    assert _metrics(resumed.results) == _metrics(reference.results)
    for task in TASKS.split(","):
        replies = [s["filtered_resps"] for s in resumed.samples[task]]
        assert replies == [s["filtered_resps"] for s in reference.samples[task]]


def test_the_run_says_where_the_answers_are_kept_and_that_earlier_ones_were_found(runs):
    _reference, _first, second, everything, resumed = runs
    cache = resumed.out / "cache"
    assert f"answers are kept in {cache}" in resumed.stderr
    found = [line for line in resumed.stderr.splitlines() if "answers of earlier interrupted runs found" in line]
    assert found and int(found[0].split("lmms-spatial: ")[1].split()[0]) == len(everything) - len(second)
    assert json.loads(next(resumed.out.rglob("*_results.json")).read_text())["config"]["use_cache"] == str(cache)
