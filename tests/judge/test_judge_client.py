"""The judge against a real loopback HTTP server: cache, resume, retries, re-asks, concurrency, errors."""

from __future__ import annotations

import dataclasses
import json
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lmms_spatial.judge import (
    FALLBACK_JUDGE,
    UNPARSED_REASON,
    Judge,
    JudgeConfig,
    JudgeNotConfiguredError,
    JudgeUnavailableError,
    get_judge,
    get_rubric,
    reset_judges,
)
from lmms_spatial.judge.cache import CACHE_FILENAME
from lmms_spatial.metrics.rubrics import REASK_MESSAGE
from tools.fake_judge import FakeJudgeServer, FakeReply, osr_item, osr_reply

MakeConfig = Callable[..., JudgeConfig]


def expected_score(i: int) -> float:
    """Under ``osr_reply``, ``osr_item(i)`` is right unless ``i % 3 == 0``."""
    return 0.0 if i % 3 == 0 else 1.0


def cache_rows(cache_dir: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(cache_dir / CACHE_FILENAME) as conn:
        return conn.execute("SELECT key, score, reason, raw_reply FROM verdicts ORDER BY key").fetchall()


def test_score_returns_the_parsed_verdict_with_its_provenance(server: FakeJudgeServer, make_config: MakeConfig) -> None:
    judge = Judge("osr_negative", make_config())
    verdict = judge.score(osr_item(1))
    assert verdict.score == 1.0
    assert verdict.reason == "judge_score_1_confidence_high"
    assert verdict.raw_reply == '{"score": 1, "confidence": "high"}'
    assert (verdict.judge, verdict.rubric, verdict.rubric_version, verdict.cached) == (
        "fake-judge",
        "osr_negative",
        "2.0",
        False,
    )
    assert verdict.details == {"confidence": "high"}
    request = server.requests[0]
    assert request["model"] == "fake-judge" and request["temperature"] == 0.0 and request["max_tokens"] == 64
    assert request["messages"] == get_rubric("osr_negative").build_messages(osr_item(1))


def test_second_run_is_served_from_cache_without_http_requests(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path
) -> None:
    items = [osr_item(i) for i in range(12)]
    first = Judge("osr_negative", make_config()).score_many(items)
    assert server.request_count == 12
    rerun = Judge("osr_negative", make_config())  # a new process would start like this
    second = rerun.score_many(items)
    assert server.request_count == 12  # zero new requests
    assert [v.score for v in second] == [v.score for v in first] == [expected_score(i) for i in range(12)]
    assert all(v.cached for v in second) and not any(v.cached for v in first)
    assert rerun.stats.as_dict() == {
        "judge_model": "fake-judge",
        "rubric": "osr_negative",
        "rubric_version": "2.0",
        "judge_calls": 0,
        "retries": 0,
        "cache_hits": 12,
        "unparsed": 0,
        "fallback": 0,
        "items": 12,
    }
    assert len(cache_rows(cache_dir)) == 12


def test_interrupted_run_resumes_asking_only_the_missing_items(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path
) -> None:
    answered = 0

    def fails_after_five(request: dict[str, Any]) -> FakeReply | str:
        nonlocal answered
        if answered >= 5:
            return FakeReply(status=500)
        answered += 1
        return osr_reply(request)

    server.handler = fails_after_five
    items = [osr_item(i) for i in range(10)]
    with pytest.raises(JudgeUnavailableError):
        Judge("osr_negative", make_config(concurrency=1, max_retries=1)).score_many(items)
    assert server.request_count == 5 + 2  # five answers, then one failing item tried twice
    assert len(cache_rows(cache_dir)) == 5

    server.handler = osr_reply
    server.reset_counts()
    reset_judges()  # the re-run is a new process: it remembers no outage
    verdicts = Judge("osr_negative", make_config(concurrency=1)).score_many(items)
    assert server.request_count == 5  # only the missing half
    assert [v.cached for v in verdicts] == [True] * 5 + [False] * 5
    assert [v.score for v in verdicts] == [expected_score(i) for i in range(10)]


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_http_errors_are_retried(server: FakeJudgeServer, make_config: MakeConfig, status: int) -> None:
    calls = 0

    def fails_once(request: dict[str, Any]) -> FakeReply | str:
        nonlocal calls
        calls += 1
        return FakeReply(status=status) if calls == 1 else osr_reply(request)

    server.handler = fails_once
    judge = Judge("osr_negative", make_config())
    assert judge.score(osr_item(2)).score == 1.0
    assert server.request_count == 2
    assert (judge.stats.retries, judge.stats.judge_calls) == (1, 1)


def _scripted(replies: list[FakeReply]) -> Callable[[dict[str, Any]], FakeReply | str]:
    """The given replies in order, then the right verdict."""
    queue = list(replies)
    return lambda request: queue.pop(0) if queue else osr_reply(request)


def test_retry_waits_double_up_to_the_cap_and_honour_retry_after(
    server: FakeJudgeServer, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_spatial.judge import client

    waits: list[float] = []
    monkeypatch.setattr(client, "_pause", waits.append)
    # base 0.01 s, cap 0.05 s, no jitter: 0.01 after the 503; 0.02 after the 429, raised to its Retry-After
    # of 0.03; 0.04 after the next 429, raised to its Retry-After of 10 s capped at 0.05
    server.handler = _scripted(
        [FakeReply(status=503), FakeReply(status=429, headers={"Retry-After": "0.03"}),
         FakeReply(status=429, headers={"Retry-After": "10"})]
    )  # fmt: skip
    judge = Judge("osr_negative", make_config(max_retries=3))
    assert judge.score(osr_item(2)).score == 1.0
    assert waits == pytest.approx([0.01, 0.03, 0.05])
    assert (server.request_count, judge.stats.retries, judge.stats.judge_calls) == (4, 3, 1)


def test_retry_jitter_is_drawn_from_the_judge_s_seed(
    server: FakeJudgeServer, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lmms_spatial.judge import client

    def waits_with(seed: int) -> list[float]:
        waits: list[float] = []
        monkeypatch.setattr(client, "_pause", waits.append)
        server.handler = _scripted([FakeReply(status=500), FakeReply(status=500)])
        Judge("osr_negative", make_config(jitter=0.5, seed=seed, cache_dir=None)).score(osr_item(1))
        return waits

    first = waits_with(7)
    assert first == waits_with(7) != waits_with(8)
    # 0.01 and 0.02 s, each stretched by 1 + 0.5 * U[0, 1)
    assert 0.01 <= first[0] < 0.015 and 0.02 <= first[1] < 0.03


def test_a_request_slower_than_the_client_timeout_is_retried(server: FakeJudgeServer, make_config: MakeConfig) -> None:
    calls = 0

    def slow_once(request: dict[str, Any]) -> FakeReply | str:
        nonlocal calls
        calls += 1
        return FakeReply(content=osr_reply(request), delay=1.5 if calls == 1 else 0.0)

    server.handler = slow_once
    judge = Judge("osr_negative", make_config(timeout=0.5))
    verdict = judge.score(osr_item(3))
    assert verdict.score == 0.0 and verdict.reason == "judge_score_0_confidence_high"  # item 3 is a wrong answer
    assert server.request_count == 2
    assert judge.stats.retries == 1


def test_unparsable_reply_is_re_asked_then_scored_judge_unparsed(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path
) -> None:
    server.handler = lambda request: "I think the model is right."
    judge = Judge("osr_negative", make_config())
    verdict = judge.score(osr_item(1))
    assert server.request_count == 3  # the question plus two re-asks (parse_retries=2)
    assert (verdict.score, verdict.reason) == (0.0, UNPARSED_REASON)
    assert verdict.raw_reply == "I think the model is right."
    assert verdict.details["attempts"] == 3
    reask = server.requests[1]["messages"]
    assert reask[-2:] == [
        {"role": "assistant", "content": "I think the model is right."},
        {"role": "user", "content": REASK_MESSAGE},
    ]
    assert (judge.stats.unparsed, judge.stats.judge_calls) == (1, 3)

    again = Judge("osr_negative", make_config()).score(osr_item(1))  # cached like any verdict
    assert server.request_count == 3 and again.cached and again.reason == UNPARSED_REASON


def test_reply_that_parses_on_re_ask_is_used(server: FakeJudgeServer, make_config: MakeConfig) -> None:
    server.handler = lambda request: osr_reply(request) if len(request["messages"]) > 1 else "Sure! The score is high."
    verdict = Judge("osr_negative", make_config()).score(osr_item(4))
    assert server.request_count == 2
    assert verdict.score == 1.0 and verdict.details["earlier_replies"] == ["Sure! The score is high."]


def test_parse_retries_bound_the_re_asks(server: FakeJudgeServer, make_config: MakeConfig) -> None:
    server.handler = lambda request: "???"
    Judge("osr_negative", make_config(parse_retries=0)).score(osr_item(1))
    assert server.request_count == 1


def test_sixteen_threads_scoring_at_once_respect_the_concurrency_cap(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path
) -> None:
    server.latency = 0.05
    judge = get_judge("osr_negative", make_config(concurrency=4))
    barrier = threading.Barrier(16)
    results: dict[int, float] = {}

    def worker(i: int) -> None:
        barrier.wait()
        results[i] = get_judge("osr_negative", make_config(concurrency=4)).score(osr_item(i)).score

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: expected_score(i) for i in range(16)}
    assert server.request_count == 16
    assert 1 <= server.max_in_flight <= 4
    rows = cache_rows(cache_dir)
    assert len(rows) == len({row[0] for row in rows}) == 16
    assert judge.stats.items == 16


def test_identical_items_scored_at_once_cost_one_request(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path
) -> None:
    server.latency = 0.1
    judge = Judge("osr_negative", make_config(concurrency=8))
    barrier = threading.Barrier(16)
    verdicts = []

    def worker() -> None:
        barrier.wait()
        verdicts.append(judge.score(osr_item(7)))

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert server.request_count == 1
    assert len(cache_rows(cache_dir)) == 1
    assert sorted(v.cached for v in verdicts) == [False] + [True] * 15
    assert {v.score for v in verdicts} == {1.0}


def test_score_many_returns_verdicts_in_input_order(server: FakeJudgeServer, make_config: MakeConfig) -> None:
    def slower_for_early_items(request: dict[str, Any]) -> FakeReply:
        number = int(request["messages"][0]["content"].split("lamp number ")[1].split("?")[0])
        return FakeReply(content=osr_reply(request), delay=0.01 * (10 - number))

    server.handler = slower_for_early_items
    verdicts = Judge("osr_negative", make_config(concurrency=8)).score_many([osr_item(i) for i in range(10)])
    assert [v.score for v in verdicts] == [expected_score(i) for i in range(10)]


def test_score_many_shows_a_bar_that_counts_every_item(
    server: FakeJudgeServer, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tqdm.auto

    bars: list[dict[str, Any]] = []

    class Recorded:
        def __init__(self, total: int, desc: str, disable: bool, unit: str) -> None:
            self.state = {"total": total, "desc": desc, "shown": not disable, "n": 0}
            bars.append(self.state)

        def update(self, n: int) -> None:
            self.state["n"] += n

        def __enter__(self) -> Recorded:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorded)
    Judge("osr_negative", make_config()).score_many([osr_item(i) for i in range(7)], progress=True)
    assert bars == [{"total": 7, "desc": "judge osr_negative (fake-judge)", "shown": True, "n": 7}]


def test_judge_none_scores_with_the_rubric_fallback_and_says_so(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path
) -> None:
    judge = get_judge("osr_negative", make_config(model="none"))
    counting = {"skill": "object_counting", "question": "How many chairs?", "answer": "4", "response": "3 chairs"}
    verdicts = judge.score_many([counting, osr_item(1), osr_item(3)])
    assert [v.score for v in verdicts] == [0.75, 1.0, 0.0]
    assert {v.judge for v in verdicts} == {FALLBACK_JUDGE} == {"none (rule-based fallback)"}
    assert all(v.raw_reply is None and not v.cached for v in verdicts)
    assert server.request_count == 0
    assert not cache_dir.exists()
    stats = judge.stats.as_dict()
    assert (stats["judge_model"], stats["fallback"], stats["judge_calls"]) == (FALLBACK_JUDGE, 3, 0)


def test_unreachable_judge_raises_an_error_naming_url_and_model(make_config: MakeConfig) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    judge = Judge("osr_negative", make_config(base_url=base_url, model="my-judge-model", max_retries=2, concurrency=1))
    with pytest.raises(JudgeUnavailableError) as caught:
        judge.score_many([osr_item(1), osr_item(2)])
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and "'my-judge-model'" in message and "3 attempt(s)" in message
    assert caught.value.model == "my-judge-model"
    assert "LMMS_SPATIAL_JUDGE=none" in message
    assert judge.stats.retries == 2

    with pytest.raises(JudgeUnavailableError, match="marked unavailable"):  # fails fast, no new retries
        judge.score(osr_item(3))
    assert judge.stats.retries == 2


def test_judge_that_comes_back_after_the_cooldown_is_used_again(
    server: FakeJudgeServer, make_config: MakeConfig
) -> None:
    server.handler = lambda request: FakeReply(status=503)
    judge = Judge("osr_negative", make_config(max_retries=0, unavailable_cooldown=0.2))
    with pytest.raises(JudgeUnavailableError):
        judge.score(osr_item(1))
    server.handler = osr_reply
    with pytest.raises(JudgeUnavailableError, match="marked unavailable"):
        judge.score(osr_item(1))
    assert server.request_count == 1
    time.sleep(0.25)
    assert judge.score(osr_item(1)).score == 1.0
    assert server.request_count == 2


def test_an_outage_is_the_endpoints_so_a_judge_of_another_rubric_does_not_wait_through_it_again(
    server: FakeJudgeServer, make_config: MakeConfig
) -> None:
    server.handler = lambda request: FakeReply(status=503)
    with pytest.raises(JudgeUnavailableError):
        Judge("osr_negative", make_config(max_retries=1)).score(osr_item(1))
    assert server.request_count == 2
    odi = Judge("odi_open", make_config(max_retries=1))
    with pytest.raises(JudgeUnavailableError, match="marked unavailable"):
        odi.score({"task": "counting", "question": "q", "answer_text": "1", "response": "1"})
    assert server.request_count == 2 and odi.stats.retries == 0


def test_endpoint_refusing_the_request_fails_without_retrying(server: FakeJudgeServer, make_config: MakeConfig) -> None:
    server.handler = lambda request: FakeReply(status=401, content="invalid api key")
    with pytest.raises(JudgeUnavailableError, match="HTTP 401") as caught:
        Judge("osr_negative", make_config()).score(osr_item(1))
    assert server.request_count == 1
    assert server.base_url in str(caught.value) or "127.0.0.1" in str(caught.value)


def test_no_judge_configured_raises_on_first_item_not_at_construction(make_config: MakeConfig) -> None:
    judge = get_judge("odi_open")  # environment is empty (see conftest)
    assert judge.config.model is None and judge._client is None
    with pytest.raises(JudgeNotConfiguredError, match="LMMS_SPATIAL_JUDGE"):
        judge.score({"task": "counting", "question": "q", "answer_text": "1", "response": "1"})


def test_cache_key_changes_with_judge_model_and_rubric_version(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path
) -> None:
    item = osr_item(5)
    Judge("osr_negative", make_config(model="judge-a")).score(item)
    Judge("osr_negative", make_config(model="judge-a")).score(item)
    assert server.request_count == 1
    Judge("osr_negative", make_config(model="judge-b")).score(item)
    assert server.request_count == 2
    bumped = dataclasses.replace(get_rubric("osr_negative"), version="1.1")
    Judge(bumped, make_config(model="judge-a")).score(item)
    assert server.request_count == 3
    Judge("osr_negative", make_config(model="judge-a", temperature=0.7)).score(item)
    assert server.request_count == 4
    Judge("osr_negative", make_config(model="judge-a", timeout=9.0, concurrency=2)).score(item)  # transport only
    assert server.request_count == 4
    assert len(cache_rows(cache_dir)) == 4


def test_cache_stores_raw_reply_and_parsed_verdict(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path
) -> None:
    judge = Judge("osr_negative", make_config())
    judge.score(osr_item(3))
    with sqlite3.connect(cache_dir / CACHE_FILENAME) as conn:
        row = conn.execute(
            "SELECT judge_model, rubric, rubric_version, request, raw_reply, score, reason, details FROM verdicts"
        ).fetchone()
    model, rubric, version, request, raw, score, reason, details = row
    assert (model, rubric, version, score, reason) == (
        "fake-judge",
        "osr_negative",
        "2.0",
        0.0,
        "judge_score_0_confidence_high",
    )
    assert raw == '{"score": 0, "confidence": "high"}'
    assert json.loads(request)["messages"] == get_rubric("osr_negative").build_messages(osr_item(3))
    assert json.loads(details) == {"confidence": "high"}


def test_cache_can_be_switched_off(server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path) -> None:
    judge = Judge("osr_negative", make_config(cache_dir=None))
    judge.score(osr_item(1))
    judge.score(osr_item(1))
    assert server.request_count == 2 and not cache_dir.exists()


def test_get_judge_shares_one_judge_per_rubric_and_config(make_config: MakeConfig) -> None:
    a = get_judge("osr_negative", make_config())
    assert get_judge("osr_negative", make_config()) is a
    assert get_judge("odi_open", make_config()) is not a
    assert get_judge("osr_negative", make_config(concurrency=2)) is not a


def test_reasoning_blocks_are_ignored_when_parsing(server: FakeJudgeServer, make_config: MakeConfig) -> None:
    server.handler = lambda request: '<think>{"score": 0} would be wrong</think>\n{"score": 1, "confidence": "low"}'
    verdict = Judge("osr_negative", make_config()).score(osr_item(1))
    assert (verdict.score, verdict.details["confidence"]) == (1.0, "low")
    assert verdict.raw_reply.startswith("<think>")
