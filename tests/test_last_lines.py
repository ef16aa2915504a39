"""What the run's last line names, and the damaged-store check, unit by unit (``lmms_spatial/plugin/failures.py``
``root_cause``, ``lmms_spatial/plugin/store_check.py``). Through the CLI: ``tests/e2e/test_last_lines_cli.py``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from lmms_spatial.plugin import failures, store_check


def test_our_file_and_line_message_wins_over_the_json_error_it_was_raised_from(tmp_path):
    from lmms_spatial.models.replay import load_samples

    samples = tmp_path / "a.jsonl"
    samples.write_text('{"doc_id": 0, "resps": [["A"]]}\n{"doc_id": 1, "resps": [["cut\n', encoding="utf-8")
    try:
        load_samples({"t": samples})
    except ValueError as exc:
        caught = exc
    assert failures.describe(caught).startswith(f"SamplesError: replay: {samples}:2: not an lmms-eval sample (")
    try:  # wrapped again by a library (lmms-eval's RuntimeError): still ours
        raise RuntimeError("evaluation failed") from caught
    except RuntimeError as outer:
        assert failures.root_cause(outer) is caught


def test_a_library_error_with_no_message_of_ours_is_still_the_innermost():
    try:
        try:
            json.loads("{")
        except ValueError as inner:
            raise RuntimeError("wrapped by someone else") from inner
    except RuntimeError as outer:
        assert type(failures.root_cause(outer)).__name__ == "JSONDecodeError"


def _audit(path: Path, rows: list[tuple[str, str]]) -> None:
    lines = [json.dumps({"cache_key": key, "request_type": "generate_until", "task_name": "t", "doc_id": i,
                         "idx": 0, "gen_kwargs": "{}", "response": json.dumps(reply), "deterministic": True})
             for i, (key, reply) in enumerate(rows)]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + '{"cache_key": "cut sh', encoding="utf-8")


def test_a_sound_store_passes_and_a_damaged_one_is_named(tmp_path):
    db = tmp_path / "cache.db"
    _audit(tmp_path / "cache.audit.jsonl", [("k0", "A")])
    assert store_check.rebuild(db, [tmp_path / "cache.audit.jsonl"]) == 1
    assert store_check.problem(db) is None
    db.write_bytes(b"\0" * 100 + db.read_bytes()[100:])
    assert store_check.problem(db) == "file is not a database"


def test_the_rebuilt_store_holds_every_logged_answer_once_and_no_failed_request(tmp_path):
    merged, run = tmp_path / "cache.audit.jsonl", tmp_path / "runs" / "r1" / "rank_0.audit.jsonl"
    _audit(merged, [("k0", "A"), ("k1", "[LMMS_EVAL_REQUEST_FAILED after 5 retries] Connection error.")])
    _audit(run, [("k0", "A"), ("k2", "C")])
    _audit(tmp_path / "runs" / "mine" / "rank_0.audit.jsonl", [("k9", "D")])  # the run opening the store
    logs = store_check.audit_logs(tmp_path, own=str(tmp_path / "runs" / "mine"))
    assert logs == [merged, run]
    db = tmp_path / "cache.db"
    assert store_check.rebuild(db, logs) == 2
    rows = sqlite3.connect(db).execute("SELECT cache_key, response FROM responses ORDER BY cache_key").fetchall()
    assert rows == [("k0", '"A"'), ("k2", '"C"')]
