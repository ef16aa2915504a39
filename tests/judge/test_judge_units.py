"""The judge's small rules, each pinned with hand-made inputs (issue 42: the mutation check's survivors in
``judge/client.py`` and ``judge/cache.py``): the verdict cache's stored text, first-writer-wins, corrupt-file
quarantine and close; the retry wait, Retry-After, key redaction, an outage noted before judging, the shared judges'
settings and the progress bar. Fast: no server, or none that is asked more than a few times."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lmms_spatial import run_state
from lmms_spatial.judge import UNPARSED_REASON, JudgeConfig, JudgeUnavailableError, get_judge
from lmms_spatial.judge.cache import CACHE_FILENAME, CacheEntry, VerdictCache
from lmms_spatial.judge.client import (
    Judge,
    MalformedResponse,
    Verdict,
    _is_retryable,
    _retry_after,
    forget_outage,
    note_unreachable,
    refused_keys,
    reply_text,
)
from tools.fake_judge import FakeJudgeServer, FakeReply, osr_item

NOWHERE = "http://127.0.0.1:9/v1"  # never asked: the tests below send nothing, or fail before sending


def _judge(**overrides: Any) -> Judge:
    values: dict[str, Any] = {"model": "judge-a", "base_url": NOWHERE, "api_key": "k", "cache_dir": None}
    return Judge("osr_negative", JudgeConfig(**{**values, **overrides}))


# -- the verdict cache -------------------------------------------------------------------------------------------


def _put(cache: VerdictCache, key: str, entry: CacheEntry, request: Any = None) -> bool:
    return cache.put(key, entry, judge_model="m", rubric="r", rubric_version="1", request=request or {})


def test_the_cache_stores_request_and_details_as_sorted_unescaped_json(tmp_path: Path) -> None:
    cache = VerdictCache(str(tmp_path))
    details = {"z": "ü", "a": Path("/x/y")}  # a value JSON cannot hold is stored as its text
    assert _put(cache, "k1", CacheEntry(0.5, "why", "raw", "lbl", details), request={"b": 1, "a": "é"})
    with sqlite3.connect(tmp_path / CACHE_FILENAME) as conn:
        row = conn.execute("SELECT request, details, score, reason, raw_reply, label FROM verdicts").fetchone()
    assert row == ('{"a": "é", "b": 1}', '{"a": "/x/y", "z": "ü"}', 0.5, "why", "raw", "lbl")
    assert cache.get("k1") == CacheEntry(0.5, "why", "raw", "lbl", {"a": "/x/y", "z": "ü"})
    assert cache.get("k2") is None


def test_the_first_verdict_stored_for_a_key_is_the_one_read_back(tmp_path: Path) -> None:
    cache = VerdictCache(str(tmp_path))
    assert _put(cache, "k", CacheEntry(1.0, "first", "a")) is True
    assert _put(cache, "k", CacheEntry(0.0, "second", "b")) is False
    assert _put(cache, "other", CacheEntry(0.0, "third", "c")) is True
    assert cache.get("k") == CacheEntry(1.0, "first", "a", None, {})
    assert len(cache) == 2 and cache.integrity_ok() is True


def test_close_closes_the_connections_and_a_later_read_opens_a_new_one(tmp_path: Path) -> None:
    cache = VerdictCache(str(tmp_path))
    _put(cache, "k", CacheEntry(1.0, "r", None))
    conn = cache._conn()
    cache.close()
    with pytest.raises(sqlite3.ProgrammingError):  # closed
        conn.execute("SELECT 1")
    assert cache.get("k") == CacheEntry(1.0, "r", None)


def test_a_corrupt_cache_is_moved_aside_under_a_dated_name_with_its_wal_and_shm_removed(
    tmp_path: Path, caplog_loguru
) -> None:
    import os

    cache = VerdictCache(str(tmp_path))
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / (CACHE_FILENAME + suffix)).write_bytes(b"garbage")
    cache._quarantine(sqlite3.DatabaseError("file is not a database"))
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(CACHE_FILENAME + ".corrupt-")) == []
    (aside,) = [p.name for p in tmp_path.iterdir()]
    assert re.fullmatch(re.escape(CACHE_FILENAME) + rf"\.corrupt-\d{{8}}-\d{{6}}-{os.getpid()}", aside)
    assert (tmp_path / aside).read_bytes() == b"garbage"
    assert caplog_loguru.text.rstrip().endswith(
        f"judge cache {cache.path} is not a usable SQLite database (file is not a database); moved it to "
        f"{tmp_path / aside} and started a fresh cache (cached verdicts are judged again)"
    )
    # a second corruption in the same process is raised, naming the file
    with pytest.raises(sqlite3.DatabaseError, match=r"\(again after starting a fresh one\)$"):
        cache._quarantine(sqlite3.DatabaseError("malformed"))


def test_a_corrupt_cache_another_process_already_moved_is_said_so(tmp_path: Path, caplog_loguru) -> None:
    cache = VerdictCache(str(tmp_path))
    cache._quarantine(sqlite3.DatabaseError("malformed"))  # no file there any more
    assert "moved it to (already moved by another process) and started" in caplog_loguru.text


def test_a_cache_waits_sixty_seconds_by_default_for_another_writer_and_gives_sqlite_that_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert VerdictCache(str(tmp_path)).busy_timeout == 60.0
    real, timeouts = sqlite3.connect, []

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        timeouts.append(kwargs.get("timeout"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    VerdictCache(str(tmp_path), busy_timeout=7.5).get("k")
    assert timeouts == [7.5]


def test_a_database_locked_while_another_process_creates_it_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real, calls = sqlite3.connect, []

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        calls.append(1)
        if len(calls) == 1:
            raise sqlite3.OperationalError("database is locked")
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    cache = VerdictCache(str(tmp_path))
    assert _put(cache, "k", CacheEntry(1.0, "r", None)) is True
    assert len(calls) == 2


def _connect_failing(monkeypatch: pytest.MonkeyPatch, *errors: Exception) -> list[int]:
    """``sqlite3.connect`` raising ``errors`` in turn on its first calls, then connecting; returns the call log."""
    real, calls = sqlite3.connect, []

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    return calls


@pytest.mark.parametrize(
    "error",
    [
        sqlite3.OperationalError("file is not a database"),
        sqlite3.OperationalError("database disk image is malformed"),
        sqlite3.DatabaseError("file is not a database"),
    ],
)
def test_a_cache_sqlite_cannot_read_is_started_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog_loguru, error: Exception
) -> None:
    calls = _connect_failing(monkeypatch, error)
    cache = VerdictCache(str(tmp_path))
    assert _put(cache, "k", CacheEntry(1.0, "r", None)) is True
    assert len(calls) == 2 and cache.get("k") == CacheEntry(1.0, "r", None)
    assert f"is not a usable SQLite database ({error}); moved it to (already moved" in caplog_loguru.text


@pytest.mark.parametrize("message", ["database is locked", "database is busy"])
def test_a_locked_or_busy_database_is_tried_again_after_a_short_random_pause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, message: str
) -> None:
    import random

    pauses: list[float] = []
    monkeypatch.setattr(time, "sleep", pauses.append)
    monkeypatch.setattr(random, "random", lambda: 0.5)
    calls = _connect_failing(monkeypatch, sqlite3.OperationalError(message))
    assert _put(VerdictCache(str(tmp_path)), "k", CacheEntry(1.0, "r", None)) is True
    assert len(calls) == 2 and pauses == [pytest.approx(0.01 + 0.5 * 0.05)]


def test_any_other_error_opening_the_cache_is_raised_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _connect_failing(monkeypatch, *[sqlite3.OperationalError("unable to open database file")] * 50)
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        VerdictCache(str(tmp_path), busy_timeout=0.5).get("k")
    assert len(calls) == 1


def test_a_database_locked_past_the_busy_timeout_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _connect_failing(monkeypatch, *[sqlite3.OperationalError("database is locked")] * 10_000)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        VerdictCache(str(tmp_path), busy_timeout=0.05).get("k")
    assert 2 <= len(calls) < 10_000  # tried again, then gave up


_FORK_CHECK = """
import os, sys
from lmms_spatial.judge.cache import VerdictCache
cache = VerdictCache(sys.argv[1])
parent = cache._conn()
assert cache._conn() is parent
child = os.fork()
if child == 0:
    os._exit(0 if cache._conn() is not parent else 1)
_, status = os.waitpid(child, 0)
sys.exit(10 + os.waitstatus_to_exitcode(status))
"""


def test_a_thread_keeps_its_connection_and_a_forked_child_opens_its_own(tmp_path: Path) -> None:
    # forked from a fresh one-thread interpreter: a fork of this pytest worker could copy SQLite's allocator mutex
    # while another thread of the suite holds it, and the child would wait on it for ever (seen: a 6-minute hang)
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FORK_CHECK, str(tmp_path)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 10, done.stderr  # 10 + the child's status 0: the child opened its own connection


def test_a_finished_thread_s_connection_is_closed_and_a_running_one_s_is_kept_until_close(tmp_path: Path) -> None:
    cache = VerdictCache(str(tmp_path))
    opened: dict[str, sqlite3.Connection] = {}
    release = threading.Event()

    def finished() -> None:
        opened["finished"] = cache._conn()

    def running() -> None:
        opened["running"] = cache._conn()
        release.wait(10)

    first = threading.Thread(target=finished)
    first.start()
    first.join()
    second = threading.Thread(target=running)
    second.start()
    while "running" not in opened:
        time.sleep(0.01)
    with pytest.raises(sqlite3.ProgrammingError):  # closed when the running thread connected
        opened["finished"].execute("SELECT 1")
    cache._conn().execute("SELECT 1")  # the main thread's
    opened["running"].execute("SELECT 1")  # still open
    cache.close()
    with pytest.raises(sqlite3.ProgrammingError):
        opened["running"].execute("SELECT 1")
    release.set()
    second.join()


# -- the client's rules --------------------------------------------------------------------------------------------


def test_a_verdict_as_a_dict_holds_every_field_with_plain_details() -> None:
    details = {"confidence": "high"}
    verdict = Verdict(1.0, "ok", "raw", "judge-a", "osr_negative", "2.0", True, "yes", details)
    assert verdict.as_dict() == {
        "score": 1.0,
        "reason": "ok",
        "raw_reply": "raw",
        "judge": "judge-a",
        "rubric": "osr_negative",
        "rubric_version": "2.0",
        "cached": True,
        "label": "yes",
        "details": {"confidence": "high"},
    }
    assert type(verdict.as_dict()["details"]) is dict


def test_an_error_that_is_no_transport_fault_is_not_retried() -> None:
    assert _is_retryable(ValueError("a bug of ours")) is False
    assert _is_retryable(KeyError("choices")) is False


@pytest.mark.parametrize(
    ("response", "seconds"),
    [
        (SimpleNamespace(headers={"retry-after": "2.5"}), 2.5),
        (SimpleNamespace(headers={"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}), None),  # a date: not used
        (SimpleNamespace(headers={}), None),
        (SimpleNamespace(), None),  # a response without headers
        (None, None),
    ],
)
def test_retry_after_is_the_header_s_seconds_when_it_holds_a_number(response: Any, seconds: float | None) -> None:
    assert _retry_after(SimpleNamespace(response=response)) == seconds


def _state(attempt: int, exc: BaseException | None = None) -> Any:
    return SimpleNamespace(attempt_number=attempt, outcome=SimpleNamespace(exception=lambda: exc))


def test_the_wait_doubles_from_the_base_up_to_the_cap_and_a_retry_after_raises_it_up_to_the_cap() -> None:
    judge = _judge(backoff_base=1.0, backoff_max=4.0, jitter=0.0)
    # 1 * 2 ** (attempt - 1): 1, 2, 4, then 8 and 16 capped at 4
    assert [judge._wait(_state(n)) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 4.0, 4.0]
    hinted = SimpleNamespace(response=SimpleNamespace(headers={"retry-after": "3"}))
    assert judge._wait(_state(1, hinted)) == 3.0  # max(1, 3)
    huge = SimpleNamespace(response=SimpleNamespace(headers={"retry-after": "100"}))
    assert judge._wait(_state(1, huge)) == 4.0  # max(1, min(100, 4))


@pytest.mark.parametrize(
    ("key", "text", "shown"),
    [
        ("abcd", "sent abcd to abcd.example", "sent [redacted] to [redacted].example"),
        ("abc", "sent abc", "sent abc"),  # shorter than 4: would blank out common words
        (None, "no key set", "no key set"),
        ("", "no key set", "no key set"),
    ],
)
def test_the_api_key_is_redacted_when_it_is_four_characters_or_more(key: str | None, text: str, shown: str) -> None:
    assert _judge(api_key=key)._redact(text) == shown


def test_an_endpoint_noted_unreachable_at_start_fails_the_first_item_at_once_naming_what_happened(monkeypatch) -> None:
    # a clock of the test's own (the age in the message was wall time: "1 s ago" on a loaded machine failed it)
    now = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    config = JudgeConfig(model="judge-a", base_url=NOWHERE, api_key="k", cache_dir=None, max_retries=0)
    note_unreachable(config, "the probe got no answer")
    now[0] = 102.4  # 2.4 s later: shown as 2 s, within the 60 s cooldown
    with pytest.raises(JudgeUnavailableError) as caught:
        Judge("osr_negative", config).score(osr_item(1))
    assert str(caught.value).startswith(
        "judge unavailable: the probe got no answer when the run started. Check that the server is up and "
    )
    assert "[judge marked unavailable 2 s ago; not retrying for 60 s]" in str(caught.value)
    assert (caught.value.base_url, caught.value.model) == (NOWHERE, "judge-a")


def test_get_judge_builds_the_config_from_the_environment_with_the_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "env-model")
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE_BASE_URL", NOWHERE)
    judge = get_judge("osr_negative", concurrency=3)
    assert (judge.config.model, judge.config.base_url, judge.config.concurrency) == ("env-model", NOWHERE, 3)
    given = JudgeConfig(model="given", base_url=NOWHERE, concurrency=2)
    other = get_judge("osr_negative", given, model="override")
    assert (other.config.model, other.config.base_url, other.config.concurrency) == ("override", NOWHERE, 2)
    assert get_judge("osr_negative", given).config is given


def test_close_waits_for_work_in_flight_and_releases_pool_client_and_cache(tmp_path: Path) -> None:
    judge = _judge(cache_dir=str(tmp_path))
    finished: list[bool] = []
    running = judge._get_executor().submit(lambda: (time.sleep(0.3), finished.append(True)))
    client, cache = judge._get_client(), judge._get_cache()
    connection = cache._conn()
    judge.close()
    assert running.done() and finished == [True]  # shutdown(wait=True)
    assert client._client.is_closed
    with pytest.raises(sqlite3.ProgrammingError):
        connection.execute("SELECT 1")
    assert (judge._executor, judge._client, judge._cache) == (None, None, None)


def test_the_bar_follows_the_config_when_no_progress_is_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    import tqdm.auto

    bars: list[dict[str, Any]] = []

    class Recorded:
        def __init__(self, **kwargs: Any) -> None:
            bars.append(kwargs)

        def update(self, n: int) -> None:
            pass

        def __enter__(self) -> Recorded:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorded)
    threads: set[str] = set()

    def score(self: Judge, item: dict[str, int]) -> int:
        threads.add(threading.current_thread().name.rsplit("_", 1)[0])
        return item["i"]

    monkeypatch.setattr(Judge, "score", score)
    for progress in (True, False):
        assert _judge(progress=progress).score_many([{"i": 1}, {"i": 2}]) == [1, 2]
    assert threads == {"lmms-spatial-judge"}  # the pool's threads are named for a stack dump
    assert bars == [
        {"total": 2, "desc": "judge osr_negative (judge-a)", "disable": False, "unit": "item"},
        {"total": 2, "desc": "judge osr_negative (judge-a)", "disable": True, "unit": "item"},
    ]


@pytest.mark.parametrize(
    ("status", "hint", "recorded"),
    [
        (401, " (set LMMS_SPATIAL_JUDGE_API_KEY to a key it accepts)", True),
        (403, " (set LMMS_SPATIAL_JUDGE_API_KEY to a key it accepts)", True),
        (404, "", False),  # a wrong model name or path: not the key
    ],
)
def test_an_endpoint_that_refuses_the_request_is_named_and_a_refused_key_recorded(
    status: int, hint: str, recorded: bool
) -> None:
    with FakeJudgeServer() as server:
        server.handler = lambda request: FakeReply(status=status, content="no")
        config = JudgeConfig(model="judge-a", base_url=server.base_url, api_key="k", cache_dir=None, progress=False)
        with pytest.raises(JudgeUnavailableError) as caught:
            Judge("osr_negative", config).score(osr_item(1))
        url = f"{server.base_url}/"
    assert str(caught.value) == (
        f"judge endpoint {url} refused the request for model 'judge-a' with HTTP {status}: Error code: {status} - no"
        + hint
    )
    assert (caught.value.base_url, caught.value.model) == (url, "judge-a")
    assert refused_keys() == ({url: status} if recorded else {})


def test_a_judge_that_fails_every_attempt_says_how_often_where_and_the_last_error() -> None:
    with FakeJudgeServer() as server:
        server.handler = lambda request: FakeReply(status=503, content="down")
        config = JudgeConfig(
            model="judge-a", base_url=server.base_url, api_key="k", cache_dir=None, progress=False, max_retries=0
        )
        with pytest.raises(JudgeUnavailableError) as caught:
            Judge("osr_negative", config).score(osr_item(1))
        url = f"{server.base_url}/"
    assert str(caught.value) == (
        f"judge unavailable: 1 attempt(s) to reach {url} with model 'judge-a' failed (last error: "
        "InternalServerError: Error code: 503 - down). Check that the server is up and LMMS_SPATIAL_JUDGE_BASE_URL / "
        "LMMS_SPATIAL_JUDGE_API_KEY, or set LMMS_SPATIAL_JUDGE=none to score with the rule-based fallback."
    )
    assert (caught.value.base_url, caught.value.model) == (url, "judge-a")


def test_a_body_with_a_choice_but_no_message_or_no_text_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match=r"^no message content in the first choice \(NoneType\)$"):
        reply_text(SimpleNamespace(choices=[SimpleNamespace()]))
    content = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=5))])
    with pytest.raises(MalformedResponse, match=r"^no message content in the first choice \(int\)$"):
        reply_text(content)
    long_page = "<html>" + "x" * 200
    with pytest.raises(MalformedResponse) as caught:
        reply_text(long_page)
    assert str(caught.value) == f"no choices in the response ({long_page[:120]!r})"


def test_a_cached_verdict_is_read_back_whole_and_an_unparsed_one_is_counted(tmp_path: Path) -> None:
    judge = _judge(cache_dir=str(tmp_path))
    items = [osr_item(1), osr_item(2)]
    keys = [judge.cache_key(judge.request_for(item)) for item in items]
    cache = VerdictCache(str(tmp_path))
    _put(cache, keys[0], CacheEntry(1.0, "judge_score_1", '{"score": 1}', "yes", {"confidence": "high"}))
    _put(cache, keys[1], CacheEntry(0.0, UNPARSED_REASON, "no idea", None, {"attempts": 3}))
    first, second = judge.score(items[0]), judge.score(items[1])  # no server: both come from the cache
    assert first == Verdict(
        1.0, "judge_score_1", '{"score": 1}', "judge-a", "osr_negative", "2.0", True, "yes", {"confidence": "high"}
    )
    assert (second.reason, second.raw_reply, second.details) == (UNPARSED_REASON, "no idea", {"attempts": 3})
    assert (judge.stats.items, judge.stats.cache_hits, judge.stats.unparsed) == (2, 2, 1)
    assert judge.stats.example_unparsed == "no idea"


SIX_OPTIONS = {"question": "Which is left?", "options": ["a", "b", "c", "d", "e", "f"], "response": "e"}


def _replies(server: FakeJudgeServer, replies: list[str]) -> None:
    queue = list(replies)
    server.handler = lambda request: queue.pop(0)


def _mcq_judge(server: FakeJudgeServer) -> Judge:
    config = JudgeConfig(model="judge-a", base_url=server.base_url, api_key="k", cache_dir=None, progress=False)
    return Judge("mcq_extract", config)


def test_a_reply_read_against_its_item_on_the_third_try_keeps_its_label_and_the_two_earlier_replies() -> None:
    with FakeJudgeServer() as server:
        _replies(server, ["G", "no letter", "E"])  # E is an option of a six-option item (A-F), G is not
        verdict = _mcq_judge(server).score(SIX_OPTIONS)
    assert (verdict.score, verdict.reason, verdict.label, verdict.raw_reply) == (1.0, "judge_letter_E", "E", "E")
    assert verdict.details == {"earlier_replies": ["G", "no letter"]}


def test_a_reply_never_read_keeps_the_last_parse_error_the_attempts_and_the_earlier_replies() -> None:
    with FakeJudgeServer() as server:
        _replies(server, ["no letter", "H", "G"])
        verdict = _mcq_judge(server).score(SIX_OPTIONS)
    assert (verdict.score, verdict.reason, verdict.raw_reply) == (0.0, UNPARSED_REASON, "G")
    assert verdict.details == {
        "parse_error": "letter G is not one of ABCDEF",
        "attempts": 3,
        "earlier_replies": ["no letter", "H"],
    }


def test_without_an_api_key_the_client_sends_the_placeholder_key() -> None:
    assert _judge(api_key=None)._get_client().api_key == "EMPTY"
    assert _judge(api_key="sk-1")._get_client().api_key == "sk-1"


def test_a_verdict_another_thread_stored_while_this_one_registered_is_read_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = _judge(cache_dir=str(tmp_path), max_retries=0)  # NOWHERE: asking would fail
    item = osr_item(1)
    key = judge.cache_key(judge.request_for(item))
    _put(VerdictCache(str(tmp_path)), key, CacheEntry(1.0, "stored", "raw"))
    real, seen = VerdictCache.get, []

    def first_misses(self: VerdictCache, wanted: str) -> CacheEntry | None:
        seen.append(wanted)
        return None if len(seen) == 1 else real(self, wanted)

    monkeypatch.setattr(VerdictCache, "get", first_misses)
    verdict = judge.score(item)
    assert (verdict.score, verdict.reason, verdict.cached) == (1.0, "stored", True)
    assert seen == [key, key]


def test_when_another_process_stored_the_key_first_its_verdict_is_the_one_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = VerdictCache.put

    def other_process_first(self: VerdictCache, key: str, entry: CacheEntry, **meta: Any) -> bool:
        real(self, key, CacheEntry(0.0, "theirs", "their reply"), **meta)
        return real(self, key, entry, **meta)

    monkeypatch.setattr(VerdictCache, "put", other_process_first)
    with FakeJudgeServer() as server:
        server.handler = lambda request: '{"score": 1, "confidence": "high"}'
        config = JudgeConfig(
            model="judge-a", base_url=server.base_url, api_key="k", cache_dir=str(tmp_path), progress=False
        )
        verdict = Judge("osr_negative", config).score(osr_item(1))
    assert (verdict.score, verdict.reason, verdict.raw_reply, verdict.cached) == (0.0, "theirs", "their reply", True)


def test_forgetting_an_outage_forgets_only_that_endpoint_s() -> None:
    other = "http://127.0.0.1:10/v1"
    for base_url in (NOWHERE, other):
        note_unreachable(JudgeConfig(model="judge-a", base_url=base_url, cache_dir=None), "no answer")
    forget_outage(NOWHERE)
    assert sorted(run_state.STATE.judges.outages) == [other]


def test_an_answer_from_the_endpoint_ends_its_outage_for_every_judge_sending_there() -> None:
    with FakeJudgeServer() as server:
        server.handler = lambda request: '{"score": 1, "confidence": "high"}'

        def config(cooldown: float) -> JudgeConfig:
            return JudgeConfig(
                model="judge-a",
                base_url=server.base_url,
                api_key="k",
                cache_dir=None,
                progress=False,
                unavailable_cooldown=cooldown,
            )

        note_unreachable(config(60.0), "no answer")
        waiting = Judge("osr_negative", config(60.0))
        with pytest.raises(JudgeUnavailableError, match="marked unavailable"):
            waiting.score(osr_item(1))
        assert Judge("osr_negative", config(0.0)).score(osr_item(1)).score == 1.0  # no cooldown: asks, and it answers
        assert waiting.score(osr_item(2)).score == 1.0  # the outage is over for this judge too


def test_the_rule_based_fallback_s_judgement_is_the_verdict_whole() -> None:
    none = JudgeConfig(model="none", cache_dir=None)
    counting = {"skill": "object_counting", "question": "How many chairs?", "answer": "4", "response": "3 chairs"}
    # 3 for 4: 1 - |3 - 4| / 4 = 0.75
    assert Judge("osr_negative", none).score(counting) == Verdict(
        0.75, "fallback_first_digits", None, "none (rule-based fallback)", "osr_negative", "2.0", False, None,
        {"parsed": 3},
    )  # fmt: skip
    mcq = {"question": "Which is left?", "options": ["a", "b", "c", "d", "e", "f"], "response": "The answer is E"}
    assert Judge("mcq_extract", none).score(mcq) == Verdict(
        1.0, "fallback_declared", None, "none (rule-based fallback)", "mcq_extract", "1.0", False, "E", {}
    )


def test_no_judge_model_names_the_endpoint_it_would_have_asked() -> None:
    with pytest.raises(JudgeUnavailableError) as caught:
        Judge("osr_negative", JudgeConfig(cache_dir=None)).score(osr_item(1))
    assert (caught.value.base_url, caught.value.model) == ("https://api.openai.com/v1 (openai default)", None)


def test_a_lone_surrogate_in_a_reply_is_sent_as_the_replacement_character() -> None:
    judge = _judge()
    item = {**osr_item(1), "response": "left \ud800 of it"}
    sent = json.dumps(judge.request_for(item)["messages"], ensure_ascii=False)
    assert "left \ufffd of it" in sent and "\ud800" not in sent
    assert judge.request_for(osr_item(1)) == judge.request_for(dict(osr_item(1)))  # texts without one: unchanged


def test_the_cache_key_is_the_sha256_of_the_documented_payload() -> None:
    import hashlib

    judge = _judge(max_tokens=7)
    request = {"model": "judge-a", "messages": [{"role": "user", "content": "é"}], "temperature": 0.0, "max_tokens": 7}
    payload = (
        '{"judge_model":"judge-a","messages":[{"content":"é","role":"user"}],"rubric":"osr_negative",'
        '"rubric_version":"2.0","sampling":{"max_tokens":7,"temperature":0.0}}'
    )
    assert judge.cache_key(request) == hashlib.sha256(payload.encode("utf-8")).hexdigest()


# -- who a judge is, and a request shared with one in flight ----------------------------------------------------


def test_a_judge_given_no_config_reads_it_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from lmms_spatial.conditions import FALLBACK_JUDGE

    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")
    judge = Judge("osr_negative")
    assert judge.config.is_none and judge.judge_name == FALLBACK_JUDGE


def test_a_judge_with_an_endpoint_but_no_model_is_named_not_configured() -> None:
    assert _judge(model=None).judge_name == "<not configured>"
    assert _judge().judge_name == "judge-a"


def test_a_request_shared_with_one_in_flight_fails_with_its_error_not_a_missing_verdict() -> None:
    """Two identical items judged at once: the second waits for the first's request; when that request fails,
    both fail with the judge's own error (a waiter handed no verdict would fail with a TypeError instead)."""
    judge = _judge()
    started, release = threading.Event(), threading.Event()

    def failing(request, item, key, cache):
        started.set()
        release.wait(10)
        raise JudgeUnavailableError("endpoint down", base_url=NOWHERE, model="judge-a")

    judge._score_uncached = failing  # type: ignore[method-assign]
    errors: list[BaseException] = []

    def score() -> None:
        try:
            judge.score(osr_item(1))
        except BaseException as exc:  # noqa: BLE001 - what each caller sees is the assertion
            errors.append(exc)

    first = threading.Thread(target=score)
    first.start()
    assert started.wait(10)  # the first item's request is in flight
    ((key, in_flight),) = judge._inflight.items()
    waiting = threading.Event()

    class Watched(Future):
        def result(self, timeout=None):
            waiting.set()  # the second caller is waiting for the first's request
            return super().result(timeout)

    in_flight.__class__ = Watched
    second = threading.Thread(target=score)
    second.start()
    assert waiting.wait(10)
    release.set()
    first.join(10)
    second.join(10)
    assert [type(e).__name__ for e in errors] == ["JudgeUnavailableError", "JudgeUnavailableError"]
    assert judge._inflight == {}
