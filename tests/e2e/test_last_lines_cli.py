"""The last line names what the user can act on, through the real CLI, under injected faults.

- Ctrl-C (SIGINT) mid-generation: one line (how many answers are kept, where, the same command resumes), exit 130,
  no traceback; the same command asks only the missing answers;
- a store that fills up (``database or disk is full``): the line names the store's folder; the same command asks
  only what the store and its audit log do not hold;
- a samples file with a truncated line given to ``--model replay``: the line names ``file.jsonl:8``;
- a damaged ``cache.db`` (zeroed header, random bytes inside): said, rebuilt from the audit logs beside it, and no
  answer asked again;
- a judge that stops answering midway: a closing line naming it, the items it left unjudged and the way on.

The model is ``slow_guess`` (``tests/e2e/plugin``): ``random_choice``'s guesses, one at a time, each logged.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import threading
import time
from pathlib import Path

import forkserver  # tests/forkserver.py: CLI runs as forks of a pre-warmed process
import pytest

from tools.fake_judge import FakeJudgeServer, FakeReply, osr_reply

PLUGIN = Path(__file__).parent / "plugin"
ARGS = ["--model", "slow_guess", "--tasks", "mmsi_vanilla", "--limit", "4"]

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("last_lines_cli")]


def _env(offline_env: dict[str, str], log: Path, **extra: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(PLUGIN), offline_env.get("PYTHONPATH", "")) if p)
    return {**offline_env, "PYTHONPATH": path, "LMMS_EVAL_PLUGINS": "lmms_spatial_test_models",
            "LMMS_SPATIAL_SAVE_EVERY": "2", "SLOW_GUESS_LOG": str(log), **extra}  # fmt: skip


def _asked(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _last(run) -> str:
    return run.stderr.strip().splitlines()[-1]


def _audit_lines(out: Path) -> int:
    """Answers logged whole (a line being written has no newline yet)."""
    return sum(p.read_text().count("\n") for p in (out / "cache" / "runs").glob("*/rank_0.audit.jsonl"))


@pytest.fixture(scope="module")
def interrupted(offline_env, lmms_eval_with_env, tmp_path_factory):
    """A run stopped with SIGINT (Ctrl-C) once 2 of its 4 answers are saved, then the same command."""
    root = tmp_path_factory.mktemp("interrupted")
    out = root / "out"
    # a fork of the suite's pre-warmed process where a new one would be the same run (tests/forkserver.py), SIGINT
    # at its default as a shell starts it
    proc = forkserver.start("lmms_eval", [*ARGS, "--output_path", str(out), "--log_samples"],
                            _env(offline_env, root / "first.log", SLOW_GUESS_HANG_AFTER="2"), cwd=root)  # fmt: skip
    deadline = time.monotonic() + 600
    while _audit_lines(out) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # the first chunk (2 answers) is on disk, and the model hangs on the next
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    resumed = lmms_eval_with_env(_env(offline_env, root / "second.log"), out, *ARGS)
    return proc.returncode, stderr, out, resumed, _asked(root / "second.log")


def test_ctrl_c_ends_in_one_line_saying_what_is_kept_and_the_same_command_resumes(interrupted):
    returncode, stderr, out, resumed, asked_again = interrupted
    assert returncode == 130
    assert stderr.strip().splitlines()[-1] == (
        f"lmms-spatial: interrupted (Ctrl-C): 2 answers are kept in {out / 'cache'}; the same command resumes, "
        "asking the model only for the missing ones"
    )
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert resumed.returncode == 0 and asked_again == ["mmsi_vanilla 2", "mmsi_vanilla 3"]
    assert len(resumed.samples["mmsi_vanilla"]) == 4


def test_a_store_that_fills_up_is_named_and_the_same_command_asks_only_what_it_lacks(
    offline_env, lmms_eval_with_env, tmp_path
):
    out = tmp_path / "out"
    # the store's SQLite file may hold 6 pages, what lmms-eval's empty tables take: answers fit until the first
    # page fills, then SQLite raises "database or disk is full" as on a full disk (tests/e2e/plugin/.../slow_guess.py)
    args = ["--model", "slow_guess", "--tasks", "mmsi_vanilla,mmsi_circular"]
    full = lmms_eval_with_env(_env(offline_env, tmp_path / "first.log", SLOW_GUESS_STORE_PAGES="6"), out, *args,
                              expect_results=False)  # fmt: skip
    assert full.returncode == 1
    assert _last(full) == (
        f"lmms-spatial: the answer store {out / 'cache'} cannot be written (OperationalError: database or disk is "
        "full): the answers saved before are kept there; free space there (or give --use_cache another folder) and "
        "run the same command again: it asks the model only for the missing ones"
    )
    logged = _audit_lines(out)  # each answer is logged (fsync'd) before SQLite is asked to keep it
    assert 0 < logged == len(_asked(tmp_path / "first.log"))
    again = lmms_eval_with_env(_env(offline_env, tmp_path / "second.log"), out, *args)
    # 12 questions, asked once by mmsi_vanilla and once per rotation of their 4 options by mmsi_circular: 60
    assert again.returncode == 0 and len(_asked(tmp_path / "second.log")) == 60 - logged


def test_a_truncated_samples_line_is_named_by_file_and_line(interrupted, offline_env, lmms_eval_with_env, tmp_path):
    samples = sorted(interrupted[2].rglob("*_samples_mmsi_vanilla.jsonl"))[-1]
    lines = samples.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][:300] + "\n"  # line 3 cut short, as a writer killed mid-line leaves it
    broken = tmp_path / samples.name
    broken.write_text("".join(lines), encoding="utf-8")
    run = lmms_eval_with_env(offline_env, tmp_path / "out", "--model", "replay", "--model_args", f"samples={broken}",
                             "--tasks", "mmsi_vanilla", "--limit", "4", expect_results=False)  # fmt: skip
    assert run.returncode == 1
    assert _last(run).startswith(f"lmms-spatial: replay: {broken}:3: not an lmms-eval sample (")
    assert "Traceback" not in run.stderr  # the line is the whole story: lmms-eval's traceback is not shown


@pytest.mark.parametrize("damage", ["zeroed header", "random bytes inside"])
def test_a_damaged_store_is_said_and_rebuilt_from_its_audit_logs_so_nothing_is_asked_again(
    damage, interrupted, offline_env, lmms_eval_with_env, tmp_path
):
    out = tmp_path / "out"
    shutil.copytree(interrupted[2], out)  # the resumed run finished: its answers are merged into cache/cache.db
    db = out / "cache" / "cache.db"
    size = db.stat().st_size
    with open(db, "r+b") as handle:
        if damage == "zeroed header":
            handle.write(b"\0" * 100)
        else:
            handle.seek(size // 2)
            handle.write(random.Random(0).randbytes(size - size // 2))
    run = lmms_eval_with_env(_env(offline_env, tmp_path / "asked.log"), out, *ARGS)
    assert run.returncode == 0 and _asked(tmp_path / "asked.log") == []  # every answer came from the rebuilt store
    said = [line for line in run.stderr.splitlines() if "was damaged" in line]
    assert len(said) == 1 and said[0].startswith(f"lmms-spatial: the answer store {db} was damaged (")
    # the logs: cache.audit.jsonl (merged), the interrupted run's (2 answers) and the resumed run's (the other 2)
    assert said[0].endswith("rebuilt from its 3 audit logs (4 answers); the model is asked only for answers they "
                            "do not hold")  # fmt: skip
    aside = [p for p in (out / "cache").glob("cache.db.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(aside) == 1 and aside[0].stat().st_size == size  # kept aside for inspection
    assert run.metric("mmsi_vanilla", "accuracy") == interrupted[3].metric("mmsi_vanilla", "accuracy")


def test_a_judge_that_stops_answering_midway_gets_a_closing_line(offline_env, lmms_eval_with_env, tmp_path):
    answered, lock = [0], threading.Lock()

    def handler(request):
        with lock:
            answered[0] += 1
            return osr_reply(request) if answered[0] <= 3 else FakeReply(status=503)  # dies after 3 verdicts

    with FakeJudgeServer(handler) as server:
        env = {**offline_env, "LMMS_SPATIAL_JUDGE": "fake-judge", "LMMS_SPATIAL_JUDGE_BASE_URL": server.base_url,
               "LMMS_SPATIAL_JUDGE_API_KEY": "k", "LMMS_SPATIAL_JUDGE_MAX_RETRIES": "0",
               "LMMS_SPATIAL_JUDGE_CACHE": str(tmp_path / "verdicts")}  # fmt: skip
        run = lmms_eval_with_env(env, tmp_path / "out", "--model", "random_choice", "--model_args", "seed=0",
                                 "--tasks", "osr_qa_negative_vanilla")  # fmt: skip
        url = server.base_url
    judge = run.results["lmms_spatial"]["tasks"]["osr_qa_negative_vanilla"]["judge"]
    unjudged, items = judge["failures"], judge["failures"] + judge["scored"] + judge["unparsed"]
    assert judge["scored"] == 3 and unjudged == items - 3 > 0
    assert run.returncode == 0  # the numbers that were written stand; what they lack is said
    assert _last(run) == (
        f"lmms-spatial: the LLM judge fake-judge at {url} did not answer for {unjudged} of {items} judged items "
        f"(osr_qa_negative_vanilla {unjudged} of {items}): they are left out of the judge metrics (counted in "
        "judge_failures), the model's answers are kept; once the judge answers, run the same command again: the "
        "answers come from the store and only the unjudged items go to the judge"
    )
    assert json.loads(json.dumps(judge))["kind"] == "llm"
