"""Which part of a judge's reply is the verdict, and what its cache key holds (issue 42). Fast: pure functions and a
judge that is never asked (no server: the key is computed from the request alone)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lmms_spatial.judge import JudgeConfig
from lmms_spatial.judge.client import Judge, MalformedResponse, reply_text, strip_reasoning
from tools.fake_judge import osr_item


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ('<think>{"score": 0}</think> {"score": 1}', '{"score": 1}'),
        ('<THINK>\n{"score": 0}\n</Think>{"score": 1}', '{"score": 1}'),
        # the opening tag was swallowed by the chat template: everything up to the last closing tag is reasoning
        ('I would say {"score": 0}</think>\n{"score": 1}', '{"score": 1}'),
        ('{"score": 0}</think> maybe </think> {"score": 1} ', '{"score": 1}'),
        ('<think>a</think>{"score":<think>b</think> 1}', '{"score": 1}'),
        ('  {"score": 1}\n', '{"score": 1}'),
    ],
)
def test_the_verdict_is_what_follows_the_reasoning(reply, verdict):
    assert strip_reasoning(reply) == verdict


def test_the_reply_text_is_the_first_choices_message_content():
    first = SimpleNamespace(message=SimpleNamespace(content='{"score": 1}'))
    second = SimpleNamespace(message=SimpleNamespace(content='{"score": 0}'))
    assert reply_text(SimpleNamespace(choices=[first, second])) == '{"score": 1}'
    assert reply_text(SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=""))])) == ""


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ("<html>502</html>", r"^no choices in the response \('<html>502</html>'\)$"),
        (SimpleNamespace(choices=[]), r"^no choices in the response \('SimpleNamespace'\)$"),
        (SimpleNamespace(choices=[SimpleNamespace(message=None)]), r"^no message content in the first choice \(None"),
    ],
)
def test_a_body_that_is_no_completion_is_malformed(response, message):
    with pytest.raises(MalformedResponse, match=message):
        reply_text(response)


def _judge(rubric: str = "osr_negative", **overrides) -> Judge:
    values = {"model": "judge-a", "base_url": "http://127.0.0.1:9/v1", "api_key": "k", "cache_dir": None}
    return Judge(rubric, JudgeConfig(**{**values, **overrides}))


def test_each_item_has_its_own_cache_key_and_the_same_item_the_same_key():
    judge = _judge()
    keys = [judge.cache_key(judge.request_for(osr_item(i))) for i in (1, 2, 1)]
    assert keys[0] == keys[2] and keys[0] != keys[1]
    assert len(keys[0]) == 64 and int(keys[0], 16) >= 0  # a sha256 hex digest


def test_the_key_changes_with_the_sampling_and_not_with_the_transport():
    item = osr_item(1)
    key = _judge().cache_key(_judge().request_for(item))
    assert _judge(max_tokens=17).cache_key(_judge(max_tokens=17).request_for(item)) != key
    assert _judge(timeout=3.0).cache_key(_judge(timeout=3.0).request_for(item)) == key


def test_two_rubrics_never_share_a_key_for_the_same_request():
    a, b = _judge("osr_negative"), _judge("odi_open")
    request = a.request_for(osr_item(1))
    assert a.cache_key(request) != b.cache_key(request)


@pytest.mark.parametrize(
    ("max_tokens", "sent"),
    [
        (None, {"max_tokens": 64}),  # not set: the rubric's own (metrics/rubrics/osr_negative.py: 64)
        (17, {"max_tokens": 17}),
        (0, {}),  # 0: not sent at all, for reasoning models that reject max_tokens (docs/judge.md)
    ],
)
def test_max_tokens_unset_is_the_rubrics_a_number_is_sent_and_0_is_left_out_of_the_request(max_tokens, sent):
    request = _judge(max_tokens=max_tokens).request_for(osr_item(1))
    assert {k: v for k, v in request.items() if k != "messages"} == {"model": "judge-a", "temperature": 0.0, **sent}
