"""MMSI-Bench error diagnosis from samples files: reasoning accuracy and failure-mode shares."""

from __future__ import annotations

import json
import math

import pytest

from lmms_spatial.judge import JudgeConfig, get_judge
from lmms_spatial.tasks.mmsi.diagnosis import diagnose, diagnosis_items, format_diagnosis, summarise
from tools.fake_judge import FakeJudgeServer, last_user_content

DOCS = [
    {"question": f"Q{i}? Options: A: a, B: b, C: c, D: d", "answer": "A", "thought": f"because {i}"} for i in range(5)
]


def _sample(doc_id: int, reply: str, score: float) -> dict:
    return {"doc_id": doc_id, "resps": [[reply]], "accuracy": {"score": score}}


SAMPLES = [
    _sample(0, "A, since the chair is left: correct", 1.0),
    _sample(1, "A, but I misread the sign: grounding", 1.0),
    _sample(2, "C, the two views do not overlap: overlap", 0.0),
    _sample(3, "B, mixed up my left with the camera's: situation", 0.0),
    _sample(4, "A, by the chair again: correct", 1.0),
]


def test_items_pair_each_reply_with_its_question_answer_and_reference_reasoning():
    items = diagnosis_items([SAMPLES[2]], DOCS)
    assert items == [
        {
            "question": DOCS[2]["question"],
            "answer": "A",
            "thought": "because 2",
            "response": "C, the two views do not overlap: overlap",
        }
    ]


def test_reasoning_accuracy_counts_only_diagnosed_replies_and_modes_are_shares_of_errors():
    labels = ["correct_reasoning", "grounding", "spatial_logic", "grounding", "undiagnosed"]
    summary = summarise(SAMPLES, labels)
    assert summary["option_accuracy"] == pytest.approx(3 / 5)
    assert (summary["diagnosed"], summary["undiagnosed"], summary["errors"]) == (4, 1, 3)
    assert summary["reasoning_accuracy"] == pytest.approx(1 / 4)  # right letters, wrong reasoning count as wrong
    assert summary["failure_modes"]["grounding"] == pytest.approx(2 / 3)
    assert summary["failure_modes"]["spatial_logic"] == pytest.approx(1 / 3)
    assert summary["failure_modes"]["situation_transformation"] == 0.0


def _label_from_reply(request) -> str:
    reply = last_user_content(request).split("Model response:")[1]
    for word, label in (
        ("correct", "correct_reasoning"),
        ("grounding", "grounding"),
        ("overlap", "overlap_matching_scene_reconstruction"),
        ("situation", "situation_transformation"),
    ):
        if word in reply.split("Decide whether")[0]:
            return json.dumps({"label": label, "explanation": "scripted"})
    return "no idea"


def test_diagnosis_through_the_judge_layer(tmp_path):
    with FakeJudgeServer(_label_from_reply) as server:
        config = JudgeConfig(
            model="fake-judge", base_url=server.base_url, api_key="t", cache_dir=str(tmp_path / "cache")
        )
        summary = diagnose(SAMPLES, DOCS, judge=get_judge("mmsi_diagnosis", config))
        assert server.request_count == 5
    assert summary["judge"] == ["fake-judge"]
    assert summary["option_accuracy"] == pytest.approx(3 / 5)
    assert summary["reasoning_accuracy"] == pytest.approx(2 / 5)  # doc 1 has the right letter, wrong reasoning
    assert summary["failure_modes"] == pytest.approx(
        {
            "grounding": 1 / 3,
            "overlap_matching_scene_reconstruction": 1 / 3,
            "situation_transformation": 1 / 3,
            "spatial_logic": 0.0,
        }  # fmt: skip
    )
    assert "reasoning accuracy  40.0%" in format_diagnosis("mmsi_vanilla", summary)


def test_without_a_judge_nothing_is_diagnosed_and_no_reasoning_accuracy_is_invented():
    summary = diagnose(SAMPLES, DOCS, judge=get_judge("mmsi_diagnosis", JudgeConfig(model="none")))
    assert summary["diagnosed"] == 0 and summary["undiagnosed"] == 5
    assert math.isnan(summary["reasoning_accuracy"])
    assert summary["judge"] == ["none (rule-based fallback)"]


def test_with_no_judge_configured_every_reply_is_a_judge_failure_and_reasoning_accuracy_is_nan():
    summary = diagnose(SAMPLES, DOCS, judge=get_judge("mmsi_diagnosis", JudgeConfig(model=None)))
    assert summary["judge_failures"] == 5 and summary["diagnosed"] == 0 and summary["judge"] == []
    assert math.isnan(summary["reasoning_accuracy"]) and summary["option_accuracy"] == pytest.approx(3 / 5)
    assert "0 of 5 replies diagnosed, 5 judge failures" in format_diagnosis("mmsi_vanilla", summary)


def test_a_judge_server_that_dies_midway_keeps_the_verdicts_it_gave(tmp_path):
    answered = []

    def once_then_down(request):
        if answered:
            from tools.fake_judge import FakeReply

            return FakeReply(status=503)
        answered.append(1)
        return _label_from_reply(request)

    with FakeJudgeServer(once_then_down) as server:
        config = JudgeConfig(model="fake-judge", base_url=server.base_url, api_key="t", cache_dir=str(tmp_path / "c"),
                             concurrency=1, max_retries=0)  # fmt: skip
        summary = diagnose(SAMPLES, DOCS, judge=get_judge("mmsi_diagnosis", config))
    assert summary["diagnosed"] == 1 and summary["judge_failures"] == 4
    assert summary["reasoning_accuracy"] == 1.0  # the one verdict: doc 0's reasoning is correct


@pytest.mark.slow
def test_report_diagnoses_a_finished_mmsi_run(lmms_eval, offline_env, tmp_path, monkeypatch, capsys):
    from lmms_spatial.cli import main as lmms_spatial
    from lmms_spatial.judge import reset_judges

    run = lmms_eval("--model", "random_choice", "--model_args", "seed=0", "--tasks", "mmsi_vanilla")
    n = len(run.samples["mmsi_vanilla"])
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", offline_env["LMMS_SPATIAL_MMSI_PATH"])
    with FakeJudgeServer(lambda request: json.dumps({"label": "spatial_logic", "explanation": "x"})) as server:
        for key, value in {
            "LMMS_SPATIAL_JUDGE": "fake-judge",
            "LMMS_SPATIAL_JUDGE_BASE_URL": server.base_url,
            "LMMS_SPATIAL_JUDGE_API_KEY": "t",
            "LMMS_SPATIAL_JUDGE_CACHE": str(tmp_path / "cache"),
        }.items():
            monkeypatch.setenv(key, value)
        reset_judges()
        assert lmms_spatial(["report", str(run.out), "--diagnose-mmsi", "--no-plots"]) == 0
        assert server.request_count == n  # one verdict per reply, no model re-run
    reset_judges()
    printed = capsys.readouterr().out
    assert f"MMSI-Bench error diagnosis, mmsi_vanilla (judge: fake-judge): {n} of {n} replies diagnosed" in printed
    assert "reasoning accuracy   0.0%" in printed
