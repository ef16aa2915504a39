"""A damaged answer store is said, and rebuilt from the audit logs beside it, instead of re-asking every answer.

lmms-eval 0.7.1+ keeps the answers of every finished run in ``<cache root>/cache.db`` (SQLite, opened read-only
by each later run) and, beside it, every answer in JSON lines: ``cache.audit.jsonl`` (the merged runs' logs) and
``runs/<id>/rank_<r>.audit.jsonl`` (each run's own, fsync'd per answer). A ``cache.db`` that is not a database
(a torn copy, zeroed header) is opened with one WARNING and every answer is asked again; one with damaged pages
answers some lookups and silently misses the others (measured: 24 of 24, and 24 of 24, asked again).

When a run of ours opens the store, :func:`check` runs SQLite's ``PRAGMA quick_check`` on ``cache.db`` (it reads
every page once, without the index cross-checks of ``integrity_check``; measured 0.03-0.07 s for 10,000 answers of
1 KB, a 15 MB file). A damaged file
is moved aside (``cache.db.damaged-<time>-<pid>``, kept for inspection), a new one is built from the audit logs
(deterministic answers with a cache key, never a failed request), the run reads from it, and one line says so.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

from lmms_spatial.plugin import failed_requests

DB_NAME = "cache.db"
MERGED_AUDIT = "cache.audit.jsonl"


def problem(db: Path) -> str | None:
    """Why ``db`` is not a sound SQLite answer store (the first line ``quick_check`` reports, or SQLite's error),
    else ``None``."""
    try:
        connection = sqlite3.connect(f"file:{urllib.parse.quote(str(db), safe='/')}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as exc:
        return str(exc)
    try:
        rows = connection.execute("PRAGMA quick_check").fetchall()
        if [tuple(r) for r in rows] != [("ok",)]:
            return str(rows[0][0]) if rows else "quick_check returned nothing"
        if not connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
            return None  # no table yet: a store being made (lmms-eval's merge creates the file, then its tables)
        connection.execute("SELECT COUNT(*) FROM responses").fetchone()
        return None
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        connection.close()


def audit_logs(root: Path, own: str | None = None) -> list[Path]:
    """Every audit log under ``root`` but those of the run folder ``own`` (the run opening the store): the merged
    runs' log, and each run's own (merged or not: a run that read an interrupted run's answers back merged them
    into ``cache.db``, but its own log holds only those it asked)."""
    logs = [root / MERGED_AUDIT] if (root / MERGED_AUDIT).is_file() else []
    mine = Path(own).resolve() if own else None
    return logs + [log for log in sorted((root / "runs").glob("*/rank_*.audit.jsonl")) if log.parent.resolve() != mine]


def rebuild(db: Path, logs: list[Path]) -> int:
    """A new answer store at ``db`` from ``logs`` (written beside it, then moved in place); returns its answers."""
    from lmms_eval.caching.response_cache import _SCHEMA_SQL

    building = db.with_name(f"{db.name}.rebuilding-{os.getpid()}")
    building.unlink(missing_ok=True)
    connection = sqlite3.connect(str(building))
    try:
        connection.executescript(_SCHEMA_SQL)
        for log in logs:
            replay_log(connection, log)
        connection.commit()
        count = int(connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    finally:
        connection.close()
    os.replace(building, db)
    return count


def check(cache: Any) -> str | None:
    """Check the store ``cache`` reads earlier runs' answers from; a damaged one is moved aside, rebuilt from the
    audit logs and reopened. Returns the line said, else ``None``."""
    root = getattr(cache, "_cache_root", None)
    if not root or not (Path(root) / DB_NAME).is_file():
        return None
    db = Path(root) / DB_NAME
    if problem(db) is None:
        return None
    from filelock import FileLock

    # several processes of one run (data parallel) open the same store at once: one rebuilds it, the others find
    # it sound once they hold the lock (never a second rebuild, nor a rebuild of a store another is writing)
    with FileLock(str(db) + ".check.lock"):
        why = problem(db)
        if why is None:
            _reopen(cache, db)
            return None
        return _rebuild(cache, db, why)


def _reopen(cache: Any, db: Path) -> None:
    """``cache`` reads ``db`` (rebuilt by another process while this one waited for the lock)."""
    shared = getattr(cache, "_shared_db", None)
    if shared is not None:
        shared.close()
    cache._shared_db = sqlite3.connect(f"file:{urllib.parse.quote(str(db), safe='/')}?mode=ro&immutable=1", uri=True,
                                       timeout=10)  # fmt: skip
    cache._shared_db_path = str(db)


def _rebuild(cache: Any, db: Path, why: str) -> str:
    root = db.parent
    shared = getattr(cache, "_shared_db", None)
    if shared is not None:
        shared.close()
    aside = db.with_name(f"{DB_NAME}.damaged-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    os.replace(db, aside)
    for suffix in ("-wal", "-shm"):
        extra = db.with_name(db.name + suffix)
        if extra.exists():
            os.replace(extra, aside.with_name(aside.name + suffix))
    logs = audit_logs(root, getattr(cache, "_run_dir", None))
    count = rebuild(db, logs)
    _reopen(cache, db)
    line = (
        f"lmms-spatial: the answer store {db} was damaged ({why}): moved aside to {aside.name} and rebuilt from "
        f"its {len(logs)} audit logs ({count} answers); the model is asked only for answers they do not hold"
    )
    print(line, file=sys.stderr, flush=True)
    return line


def replay_log(db: Any, audit: Path) -> int:
    """The answers of one audit log put into ``db`` (those it lacks); returns how many. One reading of an audit log
    for both uses: a rebuilt store (:func:`rebuild`) and an interrupted run's answers (``resume``)."""
    added = 0
    with open(audit, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                rec = json.loads(line)
                if not rec.get("deterministic", True) or not rec.get("cache_key"):
                    continue
                if failed_requests.failure_text(json.loads(rec["response"])) is not None:  # an earlier version's
                    continue
                cursor = db.execute(
                    "INSERT OR IGNORE INTO responses (cache_key, request_type, task_name, doc_id, idx, gen_kwargs, "
                    "response, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (rec["cache_key"], rec["request_type"], rec["task_name"], rec["doc_id"], rec.get("idx", 0),
                     rec.get("gen_kwargs", "{}"), rec["response"], rec.get("created_at", 0.0)),
                )  # fmt: skip
                added += cursor.rowcount
            except (ValueError, KeyError, TypeError):  # a line cut short by the kill
                continue
    return added
