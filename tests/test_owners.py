"""Which live process writes into a folder of the answer store (lmms_spatial.plugin.owners), and what a run
of ours makes of it: a live run's answers are its own, a dead run's are read back, whatever it left behind."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import types

from lmms_spatial.plugin import owners, resume

HOLD_IN_A_CHILD = (
    "import sys; from pathlib import Path; from lmms_spatial.plugin import owners; "
    "handle, owner = owners.hold(Path(sys.argv[1]), 0); print('held' if handle else f\"refused {owner['pid']}\")"
)


def _child_holds(folder) -> str:
    proc = subprocess.run([sys.executable, "-c", HOLD_IN_A_CHILD, str(folder)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_held_folder_is_refused_to_another_process_naming_the_holder_and_free_once_released(tmp_path):
    handle, owner = owners.hold(tmp_path, 0)
    assert owner is None
    written = json.loads(owners.lock_path(tmp_path, 0).read_text())
    assert (written["pid"], written["host"]) == (os.getpid(), socket.gethostname())
    assert _child_holds(tmp_path) == f"refused {os.getpid()}"
    assert owners.live_owner(tmp_path)["pid"] == os.getpid()
    owners.release(handle)
    assert owners.live_owner(tmp_path) is None
    assert _child_holds(tmp_path) == "held"  # the child ended: its lock went with it


def test_the_lock_file_of_a_process_that_died_does_not_block_the_next_run(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owners.lock_path(tmp_path, 0).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname()}))
    assert owners.live_owner(tmp_path) is None  # the file is there, nobody holds its lock
    handle, owner = owners.hold(tmp_path, 0)
    assert owner is None
    owners.release(handle)


def _audit(key: str) -> str:
    return json.dumps({"cache_key": key, "request_type": "generate_until", "task_name": "t", "doc_id": 0, "idx": 0,
                       "gen_kwargs": "{}", "response": '"A"', "created_at": 1.0, "deterministic": True})  # fmt: skip


def test_a_live_runs_answers_are_left_to_it_and_read_once_it_has_died(tmp_path, capsys):
    root = tmp_path / "cache"
    live, own = root / "runs" / "live", root / "runs" / "own"
    own.mkdir(parents=True)
    live.mkdir(parents=True)
    (live / "rank_0.audit.jsonl").write_text(_audit("k1") + "\n")
    handle, _ = owners.hold(live, 0)  # a second lmms-eval into the same output path, still running
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE responses (cache_key TEXT PRIMARY KEY, request_type TEXT, task_name TEXT, doc_id "
               "INTEGER, idx INTEGER, gen_kwargs TEXT, response TEXT, created_at REAL)")  # fmt: skip
    cache = types.SimpleNamespace(_cache_root=str(root), _run_dir=str(own), db=db)
    assert resume.replay_unmerged_runs(cache) == 0
    err = capsys.readouterr().err
    assert f"process {os.getpid()} on {socket.gethostname()}" in err and f"is writing answers into {root} now" in err
    assert "interrupted" not in err
    owners.release(handle)  # it ends without merging (killed): its answers are those of an interrupted run now
    assert resume.replay_unmerged_runs(cache) == 1
    assert "1 answers of earlier interrupted runs found" in capsys.readouterr().err


def test_a_second_live_run_into_the_very_same_run_folder_is_refused_naming_the_first(tmp_path, monkeypatch):
    import pytest

    from lmms_spatial.plugin.failures import RunRefused

    folder = tmp_path / "runs" / "job42"
    handle, _ = owners.hold(folder, 0)  # the first run, same run id (e.g. the same SLURM_JOB_ID)
    monkeypatch.setenv("LMMS_CACHE_RUN_ID", "job42")
    run = types.SimpleNamespace(notes={})
    with pytest.raises(RunRefused, match=rf"process {os.getpid()} on .* is writing answers into {folder}, the folder "
                                         r"of the same run id \(LMMS_CACHE_RUN_ID=job42\)"):  # fmt: skip
        resume.hold_run_dir(types.SimpleNamespace(_run_dir=str(folder), _global_rank=0), run)
    owners.release(handle)
    resume.hold_run_dir(types.SimpleNamespace(_run_dir=str(folder), _global_rank=0), run)  # it ended: ours now
    assert run.notes["lock"] is not None
    resume.release(run)
    assert "lock" not in run.notes and owners.live_owner(folder) is None
