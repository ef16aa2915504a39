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

import pytest

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
    from lmms_spatial.run_state import RunNotes

    run = types.SimpleNamespace(notes=RunNotes())
    with pytest.raises(RunRefused, match=rf"process {os.getpid()} on .* is writing answers into {folder}, the folder "
                                         r"of the same run id \(LMMS_CACHE_RUN_ID=job42\)"):  # fmt: skip
        resume.hold_run_dir(types.SimpleNamespace(_run_dir=str(folder), _global_rank=0), run)
    owners.release(handle)
    resume.hold_run_dir(types.SimpleNamespace(_run_dir=str(folder), _global_rank=0), run)  # it ended: ours now
    assert run.notes.lock is not None
    resume.release(run)
    assert run.notes.lock is None and owners.live_owner(folder) is None


# --- lmms-eval's merge lock (<cache>/runs/.merge.lock): a dead owner's lock is taken over at once ----------------


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, timeout=120).stdout)  # fmt: skip


def _merge_lock(folder, owner: dict | None):
    lock = folder / "runs" / ".merge.lock"
    lock.mkdir(parents=True)
    (lock / "owner.json").write_text("" if owner is None else json.dumps(owner))
    return lock


def test_a_merge_lock_whose_owner_died_is_taken_over_and_a_live_or_unknown_ones_is_left(tmp_path):
    here = socket.gethostname()
    dead = _merge_lock(tmp_path / "dead", {"pid": _dead_pid(), "hostname": here, "created_at": 0})
    assert owners.take_over_dead_merge_lock(dead)["pid"] > 0 and not dead.exists()
    live = _merge_lock(tmp_path / "live", {"pid": os.getppid(), "hostname": here, "created_at": 0})
    elsewhere = _merge_lock(tmp_path / "elsewhere", {"pid": _dead_pid(), "hostname": f"not-{here}", "created_at": 0})
    just_made = _merge_lock(tmp_path / "just_made", None)  # its owner is writing owner.json right now
    for lock in (live, elsewhere, just_made):
        assert owners.take_over_dead_merge_lock(lock) is None and (lock / "owner.json").exists()
    never_claimed = _merge_lock(tmp_path / "never_claimed", None)
    os.utime(never_claimed, (1.0, 1.0))  # made long ago, its owner.json never written (the disk was full)
    assert owners.take_over_dead_merge_lock(never_claimed) == {} and not never_claimed.exists()


@pytest.fixture
def merge_lock_of_a_run_of_ours(monkeypatch):
    """lmms-eval's ``_merge_lock`` as a run of ours takes it."""
    import lmms_eval.caching.response_cache as module

    from lmms_spatial import run_state

    resume.patch_response_cache(module)  # idempotent: the startup hook has normally done it already
    monkeypatch.setattr(run_state, "active", lambda: True)
    return module


needs_merge_lock = pytest.mark.skipif(
    not hasattr(__import__("lmms_eval.caching.response_cache", fromlist=["x"]), "_merge_lock"),
    reason="lmms-eval 0.7.0 merges no run folders, so it has no merge lock to take over",
)


@needs_merge_lock
def test_a_run_of_ours_merges_at_once_through_a_lock_its_dead_owner_left(tmp_path, merge_lock_of_a_run_of_ours, capsys):
    dead = _dead_pid()
    lock = _merge_lock(tmp_path, {"pid": dead, "hostname": socket.gethostname(), "created_at": 0})
    with merge_lock_of_a_run_of_ours._merge_lock(str(lock), timeout_seconds=0):  # lmms-eval's: TimeoutError at 0 s
        assert json.loads((lock / "owner.json").read_text())["pid"] == os.getpid()
    assert not lock.exists()
    said = f"was left by process {dead} on {socket.gethostname()}, which is no longer running: taken over"
    assert capsys.readouterr().err == f"lmms-spatial: the answer store's merge lock {lock} {said}\n"


@needs_merge_lock
def test_a_merge_lock_whose_owner_file_the_full_disk_refused_is_not_left_behind(
    tmp_path, merge_lock_of_a_run_of_ours, monkeypatch
):
    import errno

    module = merge_lock_of_a_run_of_ours
    lock = tmp_path / "runs" / ".merge.lock"
    real_touch = module._touch_text

    def full(path, content=""):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(module, "_touch_text", full)
    with pytest.raises(OSError, match="No space left"):
        with module._merge_lock(str(lock), timeout_seconds=0):
            pass
    assert not lock.exists()  # lmms-eval alone leaves the folder: every later run waits 60 s and never merges
    monkeypatch.setattr(module, "_touch_text", real_touch)
    with module._merge_lock(str(lock), timeout_seconds=0):
        assert lock.is_dir()
