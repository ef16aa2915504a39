"""Which live process writes into a folder of the answer store (lmms_spatial/plugin/owners.py), in one process
(issue 42: tests/test_owners.py starts child processes, too slow to run per mutant). ``flock`` locks belong to an
open file, so a second ``open`` in this process is refused as another process would be; the file systems without
``flock`` are a module without ``fcntl``; other hosts and other users' processes are hand-written owner files."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import types

import pytest

from lmms_spatial.plugin import owners

HOST = socket.gethostname()


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """A process id no process of this host has: the kernel's pid_max (ids are below it)."""
    try:
        return int(open("/proc/sys/kernel/pid_max").read())
    except OSError:  # no /proc: a process that has ended
        return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                                  text=True, check=True).stdout)  # fmt: skip


def _owner_file(folder, owner, rank: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    owners.lock_path(folder, rank).write_text(json.dumps(owner), encoding="utf-8")


def test_the_lock_file_of_a_rank_is_named_for_it(tmp_path):
    assert owners.lock_path(tmp_path, 3) == tmp_path / "lmms_spatial.rank_3.lock"


def test_a_held_folder_is_refused_naming_the_holder_until_released(tmp_path, monkeypatch):
    monkeypatch.setattr(time, "strftime", lambda fmt: "2026-11-26 08:00:00" if fmt == "%Y-%m-%d %H:%M:%S" else "?")
    folder = tmp_path / "runs" / "a"  # made by hold
    handle, owner = owners.hold(folder, 0)
    me = {"pid": os.getpid(), "host": HOST, "started": "2026-11-26 08:00:00"}
    assert owner is None and json.loads(owners.lock_path(folder, 0).read_text()) == me
    assert owners.hold(folder, 0) == (None, me)
    assert owners.live_owner(folder) == me
    other_rank, owner = owners.hold(folder, 1)
    assert owner is None  # another rank has its own lock
    owners.release(handle)
    assert owners.live_owner(folder)["pid"] == os.getpid()  # rank 1 still held
    again, owner = owners.hold(folder, 0)
    assert owner is None and again is not None
    owners.release(again)
    owners.release(other_rank)
    assert owners.live_owner(folder) is None
    owners.release(None)  # nothing held: nothing to do


def test_a_lock_file_longer_than_the_new_owner_is_rewritten_whole(tmp_path):
    _owner_file(tmp_path, {"pid": 1, "host": "x" * 200, "started": "long ago"})
    handle, owner = owners.hold(tmp_path, 0)
    assert owner is None
    assert json.loads(owners.lock_path(tmp_path, 0).read_text())["host"] == HOST
    owners.release(handle)


def test_a_held_lock_whose_file_names_nobody_is_refused_as_an_unknown_process(tmp_path):
    handle, _ = owners.hold(tmp_path, 0)
    owners.lock_path(tmp_path, 0).write_text("")
    assert owners.hold(tmp_path, 0) == (None, {"pid": "?", "host": "?"})
    assert owners.live_owner(tmp_path) == {"pid": "?", "host": "?"}
    owners.release(handle)


def test_without_flock_a_dead_process_s_folder_is_taken_and_a_live_one_s_refused(tmp_path, monkeypatch, dead_pid):
    monkeypatch.setattr(owners, "fcntl", None)
    _owner_file(tmp_path / "dead", {"pid": dead_pid, "host": HOST})
    assert owners.live_owner(tmp_path / "dead") is None
    handle, owner = owners.hold(tmp_path / "dead", 0)
    assert owner is None and json.loads(owners.lock_path(tmp_path / "dead", 0).read_text())["pid"] == os.getpid()
    owners.release(handle)
    parent = {"pid": os.getppid(), "host": HOST}  # alive: the process that started this one
    _owner_file(tmp_path / "live", parent)
    assert owners.live_owner(tmp_path / "live") == parent
    assert owners.hold(tmp_path / "live", 0) == (None, parent)
    assert owners.lock_path(tmp_path / "live", 0).read_text() == json.dumps(parent)  # left as it was


def test_without_flock_an_empty_lock_file_is_nobody_s(tmp_path, monkeypatch):
    monkeypatch.setattr(owners, "fcntl", None)
    tmp_path.joinpath("lmms_spatial.rank_0.lock").write_text("")
    assert owners.live_owner(tmp_path) is None
    handle, owner = owners.hold(tmp_path, 0)
    assert owner is None
    owners.release(handle)


def test_the_first_live_rank_is_named_and_unreadable_lock_files_are_passed_over(tmp_path, monkeypatch, dead_pid):
    monkeypatch.setattr(owners, "fcntl", None)
    _owner_file(tmp_path, {"pid": dead_pid, "host": HOST}, rank=0)
    _owner_file(tmp_path, {"pid": os.getppid(), "host": HOST, "n": 1}, rank=1)
    _owner_file(tmp_path, {"pid": os.getppid(), "host": HOST, "n": 2}, rank=2)
    os.mkdir(tmp_path / "lmms_spatial.rank_00.lock")  # a folder by that pattern: cannot be opened, passed over
    assert owners.live_owner(tmp_path) == {"pid": os.getppid(), "host": HOST, "n": 1}


def test_a_process_is_alive_unless_it_is_gone_from_this_host_or_is_this_one(dead_pid, monkeypatch):
    assert owners._pid_alive({"pid": os.getppid(), "host": HOST}) is True
    assert owners._pid_alive({"pid": str(os.getppid()), "host": HOST}) is True  # as JSON may hold it
    assert owners._pid_alive({"pid": dead_pid, "host": HOST}) is False
    assert owners._pid_alive({"pid": os.getpid(), "host": HOST}) is False  # this very process: not another run
    assert owners._pid_alive({"pid": "?", "host": HOST}) is False
    assert owners._pid_alive({"host": HOST}) is False
    assert owners._pid_alive({"pid": 1, "host": "elsewhere"}) is True  # cannot be checked from here
    assert owners._pid_alive({}) is False


@pytest.mark.parametrize(("error", "alive"), [(PermissionError, True), (OSError, False), (ProcessLookupError, False)])
def test_a_process_of_another_user_is_alive_and_an_unanswerable_one_is_not(monkeypatch, error, alive):
    def kill(pid, signal):
        assert (pid, signal) == (4242, 0)
        raise error

    monkeypatch.setattr(os, "kill", kill)
    assert owners._pid_alive({"pid": 4242, "host": HOST}) is alive


def test_an_owner_is_described_by_process_host_and_start():
    assert owners.describe({"pid": 12, "host": "node3", "started": "2026-11-26 08:00:00"}) == (
        "process 12 on node3, since 2026-11-26 08:00:00"
    )
    assert owners.describe({}) == "process ? on ?"


def test_an_owner_file_that_is_not_an_object_or_not_json_names_nobody(tmp_path):
    path = tmp_path / "owner.json"
    path.write_text("[1, 2]")
    assert owners._read(path) == {}
    path.write_text("{not json")
    assert owners._read(path) == {}
    assert owners._read(tmp_path / "missing.json") == {}
    path.write_text('{"pid": 5}')
    assert owners._read(path) == {"pid": 5}


# --- lmms-eval's merge lock -------------------------------------------------------------------------------------------


NOW = 1_800_000_000.0  # the clock the merge-lock tests read: a lock's age is set, never measured


@pytest.fixture
def clock(monkeypatch):
    """``owners`` reads the time from here (a loaded machine stalling between two lines changes no age)."""
    monkeypatch.setattr(owners, "time", types.SimpleNamespace(time=lambda: NOW, strftime=time.strftime))


def _merge_lock(tmp_path, owner: dict | None, age_s: float = 0.0):
    lock = tmp_path / ".merge.lock"
    lock.mkdir(parents=True)
    if owner is not None:
        (lock / "owner.json").write_text(json.dumps(owner))
    os.utime(lock, (NOW - age_s, NOW - age_s))
    return lock


def test_a_merge_lock_of_a_dead_owner_is_taken_over_and_its_owner_named(tmp_path, dead_pid):
    owner = {"pid": dead_pid, "hostname": HOST, "created_at": 1.0}
    lock = _merge_lock(tmp_path, owner)
    assert owners.dead_merge_lock_owner(lock) == {**owner, "host": HOST}
    assert owners.take_over_dead_merge_lock(lock) == {**owner, "host": HOST}
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the lock and its owner file are gone


def test_a_merge_lock_of_a_live_owner_or_one_just_made_is_left(tmp_path, clock):
    live = _merge_lock(tmp_path / "a", {"pid": os.getppid(), "hostname": HOST})
    assert owners.dead_merge_lock_owner(live) is None
    assert owners.take_over_dead_merge_lock(live) is None and live.is_dir()
    fresh = _merge_lock(tmp_path / "b", None)  # its owner is writing owner.json right now
    assert owners.dead_merge_lock_owner(fresh) is None
    assert owners.dead_merge_lock_owner(tmp_path / "none") is None  # no lock at all


def test_a_merge_lock_unclaimed_for_more_than_two_seconds_is_nobody_s_and_taken_over(tmp_path, clock):
    lock = _merge_lock(tmp_path / "a", None, age_s=2.5)
    assert owners.dead_merge_lock_owner(lock) == {}
    assert owners.take_over_dead_merge_lock(lock) == {} and not lock.exists()
    young = _merge_lock(tmp_path / "b", {"pid": 5}, age_s=1.5)  # a pid without a host: not an owner to check
    assert owners.dead_merge_lock_owner(young) is None
    hostonly = _merge_lock(tmp_path / "c", {"hostname": HOST}, age_s=1.5)  # a host without a pid: neither
    assert owners.dead_merge_lock_owner(hostonly) is None


def test_a_merge_lock_owner_written_with_host_keeps_it(tmp_path, dead_pid):
    lock = _merge_lock(tmp_path, {"pid": dead_pid, "host": HOST, "hostname": "other"})
    assert owners.dead_merge_lock_owner(lock) == {"pid": dead_pid, "host": HOST, "hostname": "other"}


def test_a_merge_lock_another_run_took_over_first_is_left_to_it(tmp_path, dead_pid, monkeypatch):
    lock = _merge_lock(tmp_path, {"pid": dead_pid, "hostname": HOST})
    monkeypatch.setattr(type(lock), "rename", lambda self, target: (_ for _ in ()).throw(FileNotFoundError(target)))
    assert owners.take_over_dead_merge_lock(lock) is None


def test_a_lock_set_aside_is_renamed_for_this_process_then_removed(tmp_path, monkeypatch):
    lock = _merge_lock(tmp_path, {"pid": 1})
    renamed = []
    real = type(lock).rename
    monkeypatch.setattr(type(lock), "rename", lambda self, target: renamed.append(target.name) or real(self, target))
    assert owners._remove_merge_lock(lock) is True
    assert renamed == [f".merge.lock.stale-{os.getpid()}"] and list(tmp_path.iterdir()) == []


def test_a_half_made_merge_lock_of_this_process_or_of_nobody_is_dropped_another_s_is_kept(tmp_path):
    mine = _merge_lock(tmp_path / "a", {"pid": os.getpid(), "hostname": HOST})
    owners.drop_half_made_merge_lock(mine)
    assert not mine.exists()
    empty = _merge_lock(tmp_path / "b", None)  # the full disk refused owner.json
    owners.drop_half_made_merge_lock(empty)
    assert not empty.exists()
    other = _merge_lock(tmp_path / "c", {"pid": os.getppid(), "hostname": HOST})
    owners.drop_half_made_merge_lock(other)
    assert other.is_dir()
    owners.drop_half_made_merge_lock(tmp_path / "d")  # none made: nothing to do
    assert not (tmp_path / "d").exists()


def test_a_merge_lock_that_is_a_file_is_set_aside_too(tmp_path):
    lock = tmp_path / ".merge.lock"
    lock.write_text("")
    assert owners._remove_merge_lock(lock) is True
    assert not lock.exists()
