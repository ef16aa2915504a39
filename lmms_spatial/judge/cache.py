"""On-disk verdict cache: one SQLite database in WAL mode.

Why SQLite rather than one file per key with ``os.replace``: a benchmark run writes tens of
thousands of verdicts (OSR-Bench has 79K negative-sampling questions per setting); one file
per verdict means as many inodes and a directory that is slow to list, copy or delete, while
SQLite keeps them in one file that can be inspected with any SQLite client and queried by
rubric or judge. SQLite gives the concurrency guarantees the layer needs without a lock
server: each write is one atomic transaction, WAL mode lets readers proceed while a writer
commits, and the busy timeout makes writers from other threads and other processes
(accelerate ranks, two runs sharing a cache) wait for the lock instead of failing. Each
thread gets its own connection (a sqlite3 connection must not be used by two threads at
once) and a forked child opens a fresh one. Caveat: WAL needs shared memory, so the cache directory
must be on a local file system, not NFS — point ``LMMS_SPATIAL_JUDGE_CACHE`` elsewhere there.

Rows are inserted with ``INSERT OR IGNORE``: the first verdict stored for a key is the one
every later run reads, so two runs with the same judge report the same numbers even if the
judge itself is not deterministic. Each row keeps the request, the raw judge reply and the
parsed verdict.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

CACHE_FILENAME = "judge_cache.sqlite3"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    judge_model TEXT NOT NULL,
    rubric TEXT NOT NULL,
    rubric_version TEXT NOT NULL,
    request TEXT NOT NULL,
    raw_reply TEXT,
    score REAL NOT NULL,
    reason TEXT NOT NULL,
    label TEXT,
    details TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


@dataclass(frozen=True)
class CacheEntry:
    """A stored verdict: the parsed result and the exchange it came from."""

    score: float
    reason: str
    raw_reply: str | None
    label: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


class VerdictCache:
    """Thread- and process-safe key -> :class:`CacheEntry` store under ``directory``."""

    def __init__(self, directory: str, *, busy_timeout: float = 60.0) -> None:
        self.directory = os.path.abspath(os.path.expanduser(directory))
        self.path = os.path.join(self.directory, CACHE_FILENAME)
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._all: list[tuple[int, threading.Thread, sqlite3.Connection]] = []
        self._all_lock = threading.Lock()
        self._quarantined = False

    # -- connections -------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        os.makedirs(self.directory, exist_ok=True)
        deadline = time.monotonic() + self.busy_timeout
        while True:
            conn = None
            try:
                conn = sqlite3.connect(
                    self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                return conn
            except sqlite3.OperationalError as exc:
                if conn is not None:
                    conn.close()
                if "not a database" in str(exc) or "malformed" in str(exc):
                    self._quarantine(exc)
                    continue
                # Switching a fresh file to WAL can report "locked" without waiting on the busy
                # handler when several processes create the database at the same moment.
                transient = "locked" in str(exc) or "busy" in str(exc)
                if not transient or time.monotonic() > deadline:
                    raise
                time.sleep(0.01 + random.random() * 0.05)
            except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
                if conn is not None:
                    conn.close()
                self._quarantine(exc)

    def _quarantine(self, exc: Exception) -> None:
        """Move a corrupt cache file aside (named in one warning) so a fresh cache can start.

        Verdicts are only a cache: losing them costs judge calls, never correctness. A second
        corruption in the same process is raised, naming the file.
        """
        with self._all_lock:
            if self._quarantined:
                raise sqlite3.DatabaseError(
                    f"judge cache {self.path}: {exc} (again after starting a fresh one)"
                ) from exc
            self._quarantined = True
            aside = f"{self.path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
            try:
                os.replace(self.path, aside)
            except FileNotFoundError:  # another process moved it first
                aside = "(already moved by another process)"
            for suffix in ("-wal", "-shm"):
                try:
                    os.remove(self.path + suffix)
                except FileNotFoundError:
                    pass
        logger.warning(
            f"judge cache {self.path} is not a usable SQLite database ({exc}); moved it to {aside} and started a "
            "fresh cache (cached verdicts are judged again)"
        )

    def _conn(self) -> sqlite3.Connection:
        pid = os.getpid()
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != pid:
            conn = self._connect()
            self._local.conn, self._local.pid = conn, pid
            with self._all_lock:
                # Connections of finished threads are closed here, so short-lived worker threads
                # leave no open handles behind. A forked child never touches its parent's
                # connections (closing them could checkpoint the parent's WAL): it forgets them.
                keep = [(p, t, c) for p, t, c in self._all if p == pid and t.is_alive()]
                dead = [c for p, t, c in self._all if p == pid and not t.is_alive()]
                self._all = keep + [(pid, threading.current_thread(), conn)]
            for old in dead:
                old.close()
        return conn

    def close(self) -> None:
        """Close every connection this object opened (in any thread)."""
        pid = os.getpid()
        with self._all_lock:
            conns, self._all = self._all, []
        for owner_pid, _thread, conn in conns:
            if owner_pid == pid:
                conn.close()
        self._local = threading.local()

    # -- access ------------------------------------------------------------------------

    def get(self, key: str) -> CacheEntry | None:
        row = (
            self._conn()
            .execute("SELECT score, reason, raw_reply, label, details FROM verdicts WHERE key = ?", (key,))
            .fetchone()
        )
        if row is None:
            return None
        score, reason, raw_reply, label, details = row
        return CacheEntry(float(score), reason, raw_reply, label, json.loads(details))

    def put(
        self,
        key: str,
        entry: CacheEntry,
        *,
        judge_model: str,
        rubric: str,
        rubric_version: str,
        request: Any,
    ) -> bool:
        """Store ``entry`` unless ``key`` is already there (first writer wins). True if inserted."""
        cur = self._conn().execute(
            "INSERT OR IGNORE INTO verdicts (key, judge_model, rubric, rubric_version, request, raw_reply, score,"
            " reason, label, details, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                judge_model,
                rubric,
                rubric_version,
                json.dumps(request, ensure_ascii=False, sort_keys=True),
                entry.raw_reply,
                float(entry.score),
                entry.reason,
                entry.label,
                json.dumps(dict(entry.details), ensure_ascii=False, sort_keys=True, default=str),
                time.time(),
            ),
        )
        return cur.rowcount == 1

    def __len__(self) -> int:
        return int(self._conn().execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` says "ok"."""
        return self._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
