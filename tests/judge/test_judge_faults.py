"""Judge faults never become scores: malformed 200s, truncated bodies, a corrupt cache, echoed keys."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lmms_spatial.judge import Judge, JudgeConfig, JudgeUnavailableError
from lmms_spatial.judge.cache import CACHE_FILENAME
from tools.fake_judge import FakeJudgeServer, FakeReply, osr_item, osr_reply

MakeConfig = Callable[..., JudgeConfig]
HTML = FakeReply(body=b"<html><body>502 Bad Gateway</body></html>", headers={"Content-Type": "text/html"})
EMPTY_CHOICES = FakeReply(body=b'{"id": "x", "object": "chat.completion", "choices": []}')
TRUNCATED = FakeReply(body=b'{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "mess')


@pytest.mark.parametrize("fault", [HTML, EMPTY_CHOICES, TRUNCATED], ids=["html", "empty_choices", "truncated_json"])
def test_a_malformed_200_is_retried_and_fails_naming_the_url_and_is_not_cached(
    server: FakeJudgeServer, make_config: MakeConfig, fault: FakeReply
) -> None:
    server.handler = lambda request: fault
    judge = Judge("osr_negative", make_config(max_retries=2, unavailable_cooldown=0.0))
    with pytest.raises(JudgeUnavailableError, match=f"3 attempt\\(s\\) to reach {server.base_url}"):
        judge.score(osr_item(1))
    assert server.request_count == 3 and judge.stats.retries == 2
    server.handler = osr_reply  # the proxy recovers: the item is judged, not a cached zero
    verdict = judge.score(osr_item(1))
    assert (verdict.score, verdict.cached) == (1.0, False)


def test_one_malformed_reply_then_a_good_one_gives_the_good_verdict(
    server: FakeJudgeServer, make_config: MakeConfig
) -> None:
    replies = iter([HTML])
    server.handler = lambda request: next(replies, None) or osr_reply(request)
    judge = Judge("osr_negative", make_config(max_retries=2))
    assert judge.score(osr_item(1)).score == 1.0 and judge.stats.retries == 1


def test_a_corrupt_cache_file_is_moved_aside_named_and_replaced(
    server: FakeJudgeServer, make_config: MakeConfig, cache_dir: Path, caplog_loguru
) -> None:
    cache_dir.mkdir(parents=True)
    (cache_dir / CACHE_FILENAME).write_bytes(b"this is not an SQLite file" * 100)
    server.handler = osr_reply
    judge = Judge("osr_negative", make_config())
    assert judge.score(osr_item(1)).score == 1.0
    aside = [p.name for p in cache_dir.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and (cache_dir / aside[0]).read_bytes().startswith(b"this is not an SQLite")
    assert str(cache_dir / CACHE_FILENAME) in caplog_loguru.text and "moved it to" in caplog_loguru.text
    assert Judge("osr_negative", make_config()).score(osr_item(1)).cached  # the fresh cache works


def test_an_api_key_echoed_by_the_server_is_redacted_from_the_error(
    server: FakeJudgeServer, make_config: MakeConfig
) -> None:
    secret = "sk-live-0123456789abcdef"
    server.handler = lambda request: FakeReply(content=f"invalid api key {secret}", status=401)
    judge = Judge("osr_negative", make_config(api_key=secret))
    with pytest.raises(JudgeUnavailableError) as caught:
        judge.score(osr_item(1))
    assert secret not in str(caught.value) and "[redacted]" in str(caught.value)
    assert caught.value.__cause__ is None  # the raw cause (holding the key) is not chained


def test_a_key_echoed_in_a_retried_error_is_redacted_too(server: FakeJudgeServer, make_config: MakeConfig) -> None:
    secret = "sk-live-0123456789abcdef"
    server.handler = lambda request: FakeReply(content=f"upstream said: bad key {secret}", status=503)
    judge = Judge("osr_negative", make_config(api_key=secret, max_retries=1))
    with pytest.raises(JudgeUnavailableError) as caught:
        judge.score(osr_item(2))
    assert secret not in str(caught.value)
