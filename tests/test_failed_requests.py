"""A model class's failure marker is not an answer (``lmms_spatial/plugin/failed_requests.py``, the answer store's
wrappers in ``resume.py``): never kept, asked again, counted, and a dead server stops a chunked run.

The CLI behaviour (exit status, last line, scores) is pinned in ``tests/e2e/test_failed_requests_cli.py``.
"""

from __future__ import annotations

import json
import types

import pytest

from lmms_spatial.plugin import failed_requests, failures, resume
from lmms_spatial.plugin.isolation import ERROR_KEY

# the replies lmms-eval 0.7.3's model classes give for a request that failed (models/chat/openai.py,
# models/simple/gemini.py, models/chat/async_openai.py, models/simple/generation_api.py, diffusers_wm_base.py)
MARKERS = [
    "[LMMS_EVAL_REQUEST_FAILED after 5 retries] Connection error.",
    "[LMMS_EVAL_BUDGET_EXCEEDED]",
    "[GENERATION_FAILED] CUDA out of memory",
    "[ERROR] Empty prompt",
]


@pytest.mark.parametrize("reply", MARKERS)
def test_every_failure_marker_of_lmms_evals_model_classes_is_recognised(reply):
    assert failed_requests.failure_text(reply) == reply
    assert failed_requests.failure_text([reply]) == reply  # as filtered_resps may hold it
    assert failed_requests.failure_text(types.SimpleNamespace(text=reply)) == reply  # a GenerationResult


@pytest.mark.parametrize("reply", ["A", "[A]", "The answer is B. [ERROR] none", "", "ERROR", None, ["B"]])
def test_a_real_reply_is_not_a_failure(reply):
    assert failed_requests.failure_text(reply) is None


def test_the_error_a_marker_carries_is_what_the_last_line_names():
    assert failed_requests.error_of(MARKERS[0]) == "Connection error."
    assert failed_requests.error_of("[LMMS_EVAL_BUDGET_EXCEEDED]") == "[LMMS_EVAL_BUDGET_EXCEEDED]"


def test_failed_documents_are_counted_from_the_gathered_records_of_one_filter():
    failed = failed_requests.record(MARKERS[0])
    assert failed == {ERROR_KEY: "request failed: " + MARKERS[0]}
    sample_metrics = {
        ("accuracy", "none"): [{"score": 1.0}],
        (ERROR_KEY, "none"): [failed[ERROR_KEY], "scoring failed: ValueError: x", failed[ERROR_KEY]],
    }
    assert failed_requests.counted(sample_metrics) == (2, MARKERS[0])
    assert failed_requests.counted({("accuracy", "none"): [{"score": 0.0}]}) == (0, None)


def test_the_closing_line_names_how_many_the_endpoint_and_the_error():
    failed_requests.reset()
    failed_requests.note_task("mmsi_vanilla", {(ERROR_KEY, "none"): ["request failed: " + MARKERS[0]] * 3})
    failed_requests.note_task("dori_x", {})
    lm = types.SimpleNamespace(client=types.SimpleNamespace(base_url="http://10.0.0.5:8000/v1/"))
    line = failed_requests.closing_line(lm, {"mmsi_vanilla": 40, "dori_x": 8})
    failed_requests.reset()
    assert line == (
        "lmms-spatial: 3 requests to the model failed after its retries (mmsi_vanilla 3 of 40) at "
        "http://10.0.0.5:8000/v1: Connection error.; they were neither kept nor scored (the numbers above leave "
        "them out): run the same command again to ask only them"
    )
    assert failed_requests.closing_line(lm, {}) is None  # nothing failed: nothing said


def _request(doc_id: int):
    from lmms_eval.api.instance import Instance

    return Instance("generate_until", (f"question {doc_id}", {"max_new_tokens": 8, "temperature": 0}), 0,
                    {"task": "t", "doc_id": doc_id, "repeats": 1})  # fmt: skip


class _Model:
    """Answers ``A<doc>``, except for the documents in ``failing``: lmms-eval's failure marker."""

    batch_size = 1

    def __init__(self, failing: set[int]):
        self.failing, self.asked = failing, []

    def generate_until(self, requests):
        self.asked += [r.doc_id for r in requests]
        return [MARKERS[0] if r.doc_id in self.failing else f"A{r.doc_id}" for r in requests]


def _cache(root):
    """The answer store of a run (lmms-eval 0.7.1+ opens it with ``create``; 0.7.0 holds one database per model)."""
    from lmms_eval.caching.response_cache import ResponseCache

    if hasattr(ResponseCache, "create"):
        return ResponseCache.create(str(root), model="m", model_args="x=1", task_dict={})
    root.mkdir(parents=True, exist_ok=True)
    return ResponseCache(str(root / "cache.db"), str(root / "cache.audit.jsonl"), model_fingerprint="m|x=1")


def test_a_failed_request_is_not_kept_and_the_next_run_asks_exactly_it(tmp_path, run_of_ours):
    first = _cache(tmp_path)
    answers = first.execute(_Model({1}), "generate_until", [_request(i) for i in range(3)])
    assert answers == ["A0", MARKERS[0], "A2"]  # the reply still reaches the scorer (which sets it aside)
    assert sorted(r[0] for r in first.db.execute("SELECT response FROM responses")) == ['"A0"', '"A2"']
    first.close()  # killed, or ended with exit 1: never merged, read back by the next run from its audit log
    resume.release(run_of_ours)
    logged = [json.loads(line) for line in open(first.audit_path, encoding="utf-8")]
    assert [(r["doc_id"], bool(r["cache_key"])) for r in logged] == [(0, True), (1, False), (2, True)]
    second, model = _cache(tmp_path), _Model(set())
    assert second.execute(model, "generate_until", [_request(i) for i in range(3)]) == ["A0", "A1", "A2"]
    assert model.asked == [1]
    second.close()


def test_a_failure_marker_an_earlier_version_stored_is_not_served(tmp_path, run_of_ours):
    cache = _cache(tmp_path)
    cache.execute(_Model(set()), "generate_until", [_request(0)])
    cache.db.execute("UPDATE responses SET response = ?", (json.dumps(MARKERS[0]),))  # as before this fix
    model = _Model(set())
    assert cache.execute(model, "generate_until", [_request(0)]) == ["A0"] and model.asked == [0]
    cache.close()


def test_a_dead_server_stops_a_chunked_run_after_the_chunk_that_failed_whole(tmp_path, run_of_ours, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, str(failed_requests.STOP_AFTER))
    cache, model = _cache(tmp_path), _Model(set(range(100)))
    with pytest.raises(failures.RunRefused, match="the model's server is not answering: the last 8 requests failed"):
        cache.execute(model, "generate_until", [_request(i) for i in range(20)])
    assert model.asked == list(range(8))  # one chunk of 8; the other 12 never sent
    cache.close()


def test_a_few_failures_between_answers_do_not_stop_the_run(tmp_path, run_of_ours, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "4")
    cache, model = _cache(tmp_path), _Model({0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14})  # 7 in a row at most
    answers = cache.execute(model, "generate_until", [_request(i) for i in range(16)])
    assert model.asked == list(range(16)) and answers[7] == "A7" and answers[15] == "A15"
    cache.close()
