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
