"""The answer store keeps each chunk of LMMS_SPATIAL_SAVE_EVERY answers as it is answered (issue 42): a run killed in
its third chunk keeps the first two, and the same command asks only what was not kept.

Fast: lmms-eval's own ResponseCache wrapped by ours, a fake model answering ``A<doc>``, eight requests."""

from __future__ import annotations

import json

import pytest

from lmms_spatial.plugin import resume


def _store(root):
    from lmms_eval.caching.response_cache import ResponseCache

    if hasattr(ResponseCache, "create"):
        return ResponseCache.create(str(root), model="m", model_args="x=1", task_dict={})
    root.mkdir(parents=True, exist_ok=True)
    return ResponseCache(str(root / "cache.db"), str(root / "cache.audit.jsonl"), model_fingerprint="m|x=1")


def _request(doc_id: int):
    from lmms_eval.api.instance import Instance

    return Instance("generate_until", (f"question {doc_id}", {"max_new_tokens": 8, "temperature": 0}), 0,
                    {"task": "t", "doc_id": doc_id, "repeats": 1})  # fmt: skip


class Killed(Exception):
    """Stands for the kill (SIGTERM, out of memory) that ends a run in the middle of a chunk."""


class _Model:
    """Answers ``A<doc>`` for document ``doc``; is killed when it is asked document ``killed_at``."""

    batch_size = 1

    def __init__(self, killed_at: int | None = None):
        self.killed_at, self.asked, self.calls = killed_at, [], []

    def generate_until(self, requests):
        self.calls.append([r.doc_id for r in requests])
        if self.killed_at in self.calls[-1]:
            raise Killed
        self.asked += self.calls[-1]
        return [f"A{r.doc_id}" for r in requests]


def _kept(store) -> list[str]:
    return sorted(json.loads(r[0]) for r in store.db.execute("SELECT response FROM responses"))


def test_each_chunk_is_kept_when_it_is_answered_so_a_kill_loses_only_its_own_chunk(tmp_path, run_of_ours, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "2")
    first, model = _store(tmp_path), _Model(killed_at=5)
    with pytest.raises(Killed):
        first.execute(model, "generate_until", [_request(i) for i in range(8)])
    # chunks [0 1] [2 3] answered and kept; killed in [4 5]
    assert model.calls == [[0, 1], [2, 3], [4, 5]]
    assert _kept(first) == ["A0", "A1", "A2", "A3"]
    first.close()
    resume.release(run_of_ours)
    second, again = _store(tmp_path), _Model()
    assert second.execute(again, "generate_until", [_request(i) for i in range(8)]) == [f"A{i}" for i in range(8)]
    assert again.asked == [4, 5, 6, 7]  # only what the killed run had not kept
    second.close()


def test_a_run_no_longer_than_one_chunk_is_one_call(tmp_path, run_of_ours, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "3")
    store, model = _store(tmp_path), _Model()
    assert store.execute(model, "generate_until", [_request(i) for i in range(3)]) == ["A0", "A1", "A2"]
    assert model.calls == [[0, 1, 2]]
    store.close()


def test_answers_of_chunks_come_back_in_request_order(tmp_path, run_of_ours, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "2")
    store, model = _store(tmp_path), _Model()
    requests = [_request(i) for i in (4, 0, 3, 1, 2)]
    assert store.execute(model, "generate_until", requests) == ["A4", "A0", "A3", "A1", "A2"]
    assert sorted(d for call in model.calls for d in call) == [0, 1, 2, 3, 4]
    assert [len(call) for call in model.calls] == [2, 2, 1]
    store.close()
