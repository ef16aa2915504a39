"""Which live process writes into a folder of the answer store: a lock the operating system releases at death.

lmms-eval 0.7.1+ gives each run its own folder, ``<cache>/runs/<run id>/``, and merges it into the store only
when the run succeeds. Our runs read back the answers of folders never merged (:mod:`.resume`): a run that was
killed, crashed or failed. A folder whose run is *alive* (a second lmms-eval into the same ``--output_path``)
must not be read as one of those: each process of ours holds an exclusive ``flock`` on
``<run folder>/lmms_spatial.rank_<r>.lock`` while it writes there, the file naming its process id, host and
start time. The kernel drops the lock when the process ends however it ends (``kill -9``, OOM, a node lost
from an NFS server), so a stale file never blocks the run that resumes; only a held lock means a live run.

Where the file system has no ``flock`` (some network mounts), the file's process id is checked instead on the
same host; a run on another host is then taken for alive (its answers stay its own, never read as interrupted).
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # not a POSIX system: the process-id check alone
    fcntl = None

PATTERN = "lmms_spatial.rank_*.lock"


def lock_path(folder: Path, rank: int) -> Path:
    return folder / f"lmms_spatial.rank_{rank}.lock"


def _me() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}


def _read(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _pid_alive(owner: dict[str, Any]) -> bool:
    """Without ``flock``: alive unless it is a process of this host that no longer exists (or is this one)."""
    if owner.get("host") != socket.gethostname():
        return bool(owner)  # another host: cannot be checked from here
    try:
        pid = int(owner.get("pid"))
    except (TypeError, ValueError):
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    except OSError:
        return False
    return True


def describe(owner: dict[str, Any]) -> str:
    since = f", since {owner['started']}" if owner.get("started") else ""
    return f"process {owner.get('pid', '?')} on {owner.get('host', '?')}{since}"


def hold(folder: Path, rank: int) -> tuple[Any, dict[str, Any] | None]:
    """Take ``folder``'s lock for ``rank``: ``(handle, None)`` (keep the handle open while writing; ``release``
    it at the end), or ``(None, owner)`` when a live process holds it."""
    path = lock_path(folder, rank)
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8")  # not truncated before it is ours
    try:
        if fcntl is None:
            raise OSError("no flock")
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _read(path)
        handle.close()
        return None, owner or {"pid": "?", "host": "?"}
    except OSError:  # no flock on this file system: the process id written in the file
        owner = _read(path)
        if owner and _pid_alive(owner):
            handle.close()
            return None, owner
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(_me()))
    handle.flush()
    return handle, None


def release(handle: Any) -> None:
    if handle is None:
        return
    try:
        handle.close()  # closing drops the flock
    except OSError:
        pass


def live_owner(folder: Path) -> dict[str, Any] | None:
    """The live process writing into ``folder`` (any rank), or ``None`` when none is (ended, crashed, killed)."""
    for path in sorted(folder.glob(PATTERN)):
        try:
            handle = open(path, "a", encoding="utf-8")
        except OSError:
            continue
        with handle:
            try:
                if fcntl is None:
                    raise OSError("no flock")
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
                continue  # nobody holds it: that process has ended
            except BlockingIOError:
                return _read(path) or {"pid": "?", "host": "?"}
            except OSError:
                owner = _read(path)
                if owner and _pid_alive(owner):
                    return owner
    return None


# lmms-eval 0.7.1+'s merge lock: a folder ``<cache>/runs/.merge.lock`` made with ``mkdir``, its ``owner.json``
# naming the process (``pid``, ``hostname``, ``created_at``). Nothing removes it when its owner dies (a kill
# during the merge, or a full disk while ``owner.json`` is written: the folder made, the file empty, the
# error raised before the lock is held): every later run in that cache then waits lmms-eval's 60 s for it and
# never merges. A lock whose owner is gone is taken over at once.
MERGE_LOCK_OWNER = "owner.json"
UNCLAIMED_AFTER_S = 2.0  # a live owner writes owner.json right after its mkdir: a lock unclaimed longer is left


def _merge_lock_owner(lock_dir: Path) -> dict[str, Any]:
    owner = _read(lock_dir / MERGE_LOCK_OWNER)
    if "hostname" in owner and "host" not in owner:
        owner["host"] = owner["hostname"]
    return owner


def dead_merge_lock_owner(lock_dir: Path) -> dict[str, Any] | None:
    """The owner of the merge lock ``lock_dir`` when it is gone (``{}`` when it never said who it was), else
    ``None`` (no lock, a live owner, or one on another host that cannot be checked from here)."""
    try:
        made = lock_dir.stat().st_mtime
    except OSError:
        return None
    owner = _merge_lock_owner(lock_dir)
    if owner.get("pid") is not None and owner.get("host"):
        return None if _pid_alive(owner) else owner
    return {} if time.time() - made > UNCLAIMED_AFTER_S else None


def _remove_merge_lock(lock_dir: Path) -> bool:
    """The lock folder set aside under a name of this process (a rename: of two runs taking over one stale lock,
    one succeeds) and removed."""
    aside = lock_dir.with_name(f"{lock_dir.name}.stale-{os.getpid()}")
    try:
        lock_dir.rename(aside)
    except OSError:
        return False
    for entry in aside.iterdir() if aside.is_dir() else []:
        try:
            entry.unlink()
        except OSError:
            pass
    try:
        aside.rmdir()
    except OSError:
        pass
    return True


def take_over_dead_merge_lock(lock_dir: Path) -> dict[str, Any] | None:
    """Remove the merge lock ``lock_dir`` when its owner is gone; returns that owner (``{}``: it never said who it
    was), or ``None`` when the lock was left as it is."""
    owner = dead_merge_lock_owner(lock_dir)
    if owner is None or not _remove_merge_lock(lock_dir):
        return None
    return owner


def drop_half_made_merge_lock(lock_dir: Path) -> None:
    """After taking the merge lock failed with an error other than waiting (a full disk while its owner file was
    written): the lock folder this process made is removed, so no later run waits for it."""
    owner = _merge_lock_owner(lock_dir)
    if lock_dir.is_dir() and (not owner or owner.get("pid") == os.getpid()):
        _remove_merge_lock(lock_dir)
