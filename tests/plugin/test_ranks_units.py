"""Data parallel's pieces that need no process group (lmms_spatial.plugin.ranks, store_check)."""

from __future__ import annotations

import sqlite3

from lmms_spatial.plugin import ranks, store_check


def _summary(answers, asked, tasks, sources):
    return {"root": "/c", "weights": "local:ab", "answers": answers, "asked": asked, "tasks": tasks,
            "from": [{"run": run, "answers": n} for run, n in sources]}  # fmt: skip


def test_every_ranks_count_is_summed_and_an_unknown_one_leaves_the_whole_count_unknown(monkeypatch):
    zero = _summary(1, 3, {"a": 1, "b": 0}, [("run X", 1)])
    one = _summary(3, 3, {"a": 2, "b": 1}, [("run X", 2), ("run Y", 1)])
    monkeypatch.setattr(ranks, "all_gather", lambda value: [zero, one])
    assert ranks.gather_summaries(zero) == {
        "root": "/c", "weights": "local:ab", "answers": 4, "asked": 6, "tasks": {"a": 3, "b": 1},
        "from": [{"run": "run X", "answers": 3}, {"run": "run Y", "answers": 1}],  # most answers first
    }  # fmt: skip
    monkeypatch.setattr(ranks, "all_gather", lambda value: [zero, None])  # one rank could not count
    assert ranks.gather_summaries(zero) is None
    monkeypatch.setattr(ranks, "all_gather", lambda value: [value])  # one process: its own
    assert ranks.gather_summaries(zero) is zero


def test_a_store_with_no_table_yet_is_not_damaged(tmp_path):
    empty = tmp_path / "cache.db"
    empty.touch()  # lmms-eval's merge creates the file, then its tables: another process may look in between
    assert store_check.problem(empty) is None
    sqlite3.connect(tmp_path / "new.db").execute("PRAGMA user_version = 1").connection.close()
    assert store_check.problem(tmp_path / "new.db") is None
    without = tmp_path / "other.db"
    with sqlite3.connect(without) as db:
        db.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    assert store_check.problem(without) == "no such table: responses"  # a store of something else: damaged
