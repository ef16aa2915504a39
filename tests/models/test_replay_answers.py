"""``--model replay``, which logged answer each request gets (issue 42): its own task and document's, never an empty
one for a request nothing was logged for, and the refusals of a bad argument. Fast: one hand-written samples file."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from lmms_spatial.models.replay import MissingResponsesError, PromptMismatchError, Replay


def _request(task: str, doc_id: int, prompt: str) -> SimpleNamespace:
    return SimpleNamespace(task_name=task, doc_id=doc_id, args=(prompt, None, {}, doc_id, task, "test"))


@pytest.fixture
def samples(tmp_path):
    """Task t: doc 0 answered "A" to "Q0?", doc 2 answered "C" to "Q2?" (doc 1 was not logged); task u: doc 0 "B"."""
    rows = {"t": [(0, "A", "Q0?"), (2, "C", "Q2?")], "u": [(0, "B", "U0?")]}
    for task, logged in rows.items():
        lines = [json.dumps({"doc_id": d, "resps": [answer], "input": prompt}) for d, answer, prompt in logged]
        (tmp_path / f"20260101_000000_samples_{task}.jsonl").write_text("\n".join(lines) + "\n")
    return str(tmp_path)


def test_each_request_gets_the_answer_logged_for_its_own_task_and_document(samples):
    replay = Replay(samples=samples)
    requests = [_request("t", 2, "Q2?"), _request("u", 0, "U0?"), _request("t", 0, "Q0?")]
    assert replay.generate_until(requests) == ["C", "B", "A"]


def test_a_request_nothing_was_logged_for_fails_the_run_naming_each_task_and_document(samples):
    replay = Replay(samples=samples)
    requests = [_request("t", 0, "Q0?"), _request("t", 3, "?"), _request("t", 1, "?"), _request("v", 5, "?")]
    with pytest.raises(MissingResponsesError) as raised:
        replay.generate_until(requests)
    assert str(raised.value) == (
        "replay: no logged response for 3 requests — t: 2 docs, e.g. doc_id [1, 3]; "
        "v: 1 docs, e.g. doc_id [5] (no samples file for this task)"
    )


def test_a_missing_answer_is_refused_even_when_prompts_are_not_checked(samples):
    with pytest.raises(MissingResponsesError, match=r"no logged response for 1 requests — t: 1 docs"):
        Replay(samples=samples, prompt_check="off").generate_until([_request("t", 1, "Q1?")])


def test_prompt_check_off_replays_a_changed_prompt_without_a_word(samples):
    assert Replay(samples=samples, prompt_check="off").generate_until([_request("t", 0, "another question")]) == ["A"]


def test_only_the_changed_prompts_are_counted_in_the_refusal(samples):
    requests = [_request("t", 0, "Q0?"), _request("t", 2, "Q2 changed?")]
    with pytest.raises(PromptMismatchError, match=r"^replay: 1 of 2 prompts differ from the logged ones, e\.g\. t "):
        Replay(samples=samples).generate_until(requests)


def test_a_replay_without_samples_or_with_an_unknown_prompt_check_is_refused(samples):
    with pytest.raises(ValueError, match=r"^replay needs --model_args samples=<samples .jsonl file or folder>$"):
        Replay(samples="")
    with pytest.raises(ValueError, match=r"prompt_check must be one of \('error', 'warn', 'off'\), got 'strict'"):
        Replay(samples=samples, prompt_check="strict")


def test_prompt_check_warn_scores_a_changed_prompt_but_says_which_in_one_warning(samples):
    from loguru import logger

    warnings: list[str] = []
    sink = logger.add(lambda message: warnings.append(message.record["message"]), level="WARNING")
    try:
        answers = Replay(samples=samples, prompt_check="warn").generate_until(
            [_request("t", 0, "QX?"), _request("t", 2, "Q2?")]
        )
    finally:
        logger.remove(sink)
    assert answers == ["A", "C"]
    # "Q0?" and "QX?" first differ at character 1
    assert warnings == [
        "replay: 1 of 2 prompts differ from the logged ones, e.g. t doc_id 0 at character 1: logged 'Q0?', now "
        "'QX?'. The logged answers were given to other questions (changed data, option order or prompt). "
        "prompt_check=warn scores them anyway."
    ]
