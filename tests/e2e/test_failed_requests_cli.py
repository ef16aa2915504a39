"""A failed request is not an answer, through the real CLI: lmms-eval's ``openai`` model against a loopback
OpenAI-compatible server that fails some requests (HTTP 200 with a truncated JSON body), then recovers.

lmms-eval's API classes turn a request that failed after their retries into the reply
``[LMMS_EVAL_REQUEST_FAILED after N retries] <error>``. It must never be kept in the answer store nor scored as
the model's answer; the run exits 1 naming how many failed, the endpoint and the error; the same command asks
exactly those again; and a server that answers nothing stops the run after one chunk.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest

from lmms_spatial.plugin.failed_requests import STOP_AFTER
from tools.fake_judge import FakeJudgeServer, FakeReply, last_user_content

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("failed_requests_cli")]

TRUNCATED = b'{"id": "x", "choices": [{"message": {"content": "A'  # the body a dying proxy cut short
FAILING_DOCS = {1, 3}


def _questions(folder: Path) -> list[tuple[str, str]]:
    """(question, answer) of each MMSI fixture row, in document order."""
    rows = datasets.load_dataset("parquet", data_files=str(folder / "test.parquet"))["train"]
    return list(zip(rows["question"], rows["answer"], strict=True))


def _doc_of(request: dict[str, Any], questions: list[tuple[str, str]]) -> int:
    text = last_user_content(request)
    return next(i for i, (question, _) in enumerate(questions) if question in text)


def _command(base_url: str, limit: int) -> list[str]:
    return ["--model", "openai", "--model_args", f"model_version=m,base_url={base_url},max_retries=2,retry_backoff_s=0",
            "--tasks", "mmsi_vanilla", "--limit", str(limit)]  # fmt: skip


def _newest_samples(out: Path) -> dict[int, dict]:
    newest = sorted(out.rglob("*_samples_mmsi_vanilla.jsonl"))[-1]
    return {s["doc_id"]: s for s in map(json.loads, newest.read_text().splitlines())}


@pytest.fixture(scope="module")
def failing_then_recovered(offline_env, fixture_datasets, lmms_eval_with_env, tmp_path_factory):
    """The same command twice into one --output_path: first with documents 1 and 3 failing, then recovered."""
    questions = _questions(fixture_datasets["mmsi"])
    state = {"failing": set(FAILING_DOCS)}

    def handler(request: dict[str, Any]) -> FakeReply | str:
        doc = _doc_of(request, questions)
        if doc in state["failing"]:
            return FakeReply(body=TRUNCATED)
        return questions[doc][1]  # the right letter: every answered document scores 1

    env = {**offline_env, "OPENAI_API_KEY": "test"}
    out = tmp_path_factory.mktemp("failed_requests") / "out"
    with FakeJudgeServer(handler) as server:
        first = lmms_eval_with_env(env, out, *_command(server.base_url, 4))
        first_samples, first_asked = _newest_samples(out), [_doc_of(r, questions) for r in server.requests]
        state["failing"] = set()
        server.requests.clear()
        second = lmms_eval_with_env(env, out, *_command(server.base_url, 4))
        second_asked = [_doc_of(r, questions) for r in server.requests]
        base_url = server.base_url
    return {"first": first, "first_samples": first_samples, "first_asked": first_asked, "second": second,
            "second_samples": _newest_samples(out), "second_asked": second_asked, "base_url": base_url,
            "out": out}  # fmt: skip


def test_a_failed_request_is_not_scored_and_the_run_exits_1_naming_count_endpoint_and_error(failing_then_recovered):
    first = failing_then_recovered["first"]
    assert first.returncode == 1
    last = first.stderr.strip().splitlines()[-1]
    assert last.startswith("lmms-spatial: 2 requests to the model failed after its retries (mmsi_vanilla 2 of 4)")
    assert failing_then_recovered["base_url"].rstrip("/") in last
    assert "run the same command again to ask only them" in last
    # documents 0 and 2 were answered right; 1 and 3 failed: accuracy over the answered ones is 2/2, not 2/4
    assert first.metric("mmsi_vanilla", "accuracy") == 1.0
    assert first.results["lmms_spatial"]["tasks"]["mmsi_vanilla"]["requests_failed"] == 2
    samples = failing_then_recovered["first_samples"]
    for doc in FAILING_DOCS:
        error = samples[doc]["lmms_spatial_error"]
        assert error.startswith("request failed: [LMMS_EVAL_REQUEST_FAILED after 2 retries]")
        assert "accuracy" not in samples[doc]
    assert {doc: samples[doc]["accuracy"]["score"] for doc in (0, 2)} == {0: 1.0, 2: 1.0}


def test_the_failed_requests_are_never_kept_so_the_same_command_asks_exactly_them(failing_then_recovered):
    # first run: 4 documents, the two failing ones asked twice each (max_retries=2)
    assert sorted(failing_then_recovered["first_asked"]) == [0, 1, 1, 2, 3, 3]
    assert sorted(failing_then_recovered["second_asked"]) == [1, 3]
    second = failing_then_recovered["second"]
    assert second.returncode == 0
    assert second.metric("mmsi_vanilla", "accuracy") == 1.0
    assert second.results["lmms_spatial"]["tasks"]["mmsi_vanilla"]["requests_failed"] == 0
    assert all("lmms_spatial_error" not in s for s in failing_then_recovered["second_samples"].values())
    kept = [json.loads(line) for path in failing_then_recovered["out"].rglob("*.audit.jsonl")
            for line in path.read_text().splitlines()]  # fmt: skip
    failed = [r for r in kept if "LMMS_EVAL_REQUEST_FAILED" in r["response"]]
    assert failed and all(r["cache_key"] == "" for r in failed)  # logged for the eye, never read back


def test_a_server_that_answers_nothing_stops_the_run_after_one_chunk(offline_env, lmms_eval_with_env, tmp_path):
    with FakeJudgeServer(lambda request: FakeReply(body=TRUNCATED)) as server:
        env = {**offline_env, "OPENAI_API_KEY": "test", "LMMS_SPATIAL_SAVE_EVERY": str(STOP_AFTER)}
        run = lmms_eval_with_env(env, tmp_path / "out", *_command(server.base_url, 12), expect_results=False)
        asked, base_url = len(server.requests), server.base_url
    assert run.returncode == 1
    # 12 documents in chunks of 8: the first chunk (8 requests, 2 tries each) fails whole; the last 4 never go out
    assert asked == STOP_AFTER * 2
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(f"lmms-spatial: the model's server is not answering: the last {STOP_AFTER} requests failed")
    assert base_url.rstrip("/") in last and "run the same command again" in last
