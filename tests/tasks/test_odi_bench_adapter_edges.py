"""ODI-Bench adapter, scoring glue (issue 37): whole close-ended records, CoT yes/no, Omni-CoT steps, open-ended
records and the aggregations, hand-worked."""

from __future__ import annotations

import math
import os

import datasets
import pytest

from lmms_spatial import run_state
from lmms_spatial.models import stages
from lmms_spatial.tasks.odi_bench import adapter

MCQ = {
    "id": "q1",
    "task": "Relative Direction",
    "question": "Where is the red chair relative to me?",
    "options": ["Front-left", "Back-right", "Front-right", "Back-left"],
    "answer": " c ",
    "answer_text": " front-right ",
}
YES_NO = {
    "id": 7,
    "task": "existence",
    "question": "Is there a dog?",
    "options": [],
    "answer": "yes",
    "answer_text": "Yes",
}


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("LMMS_SPATIAL_", "OPENAI_")):
            monkeypatch.delenv(name)
    stages.clear()
    yield
    stages.clear()


@pytest.fixture
def infos(logged):
    return logged("INFO")


def test_a_close_ended_record_holds_exactly_these_fields():
    metrics = adapter.process_results(MCQ, ["The answer is C."])
    record = {"id": "q1", "task": "relative_direction", "answer": "C", "parsed": "C", "reason": "declared"}
    record.update(score=1.0, n_options=4, run_options={})
    assert metrics == {"accuracy": record, "unparsed_rate": 0.0, "chance_level": 0.25}


def test_a_yes_no_record_capitalises_the_answer_and_has_two_options():
    metrics = adapter.process_results(YES_NO, ["No, there is none."])
    record = {"id": "7", "task": "existence", "answer": "Yes", "parsed": "No", "reason": "leading_word"}
    record.update(score=0.0, n_options=2, run_options={})
    assert metrics == {"accuracy": record, "unparsed_rate": 0.0, "chance_level": 0.5}


def test_cot_yes_no_reads_the_last_line_first():
    record = adapter.process_results_cot(YES_NO, ["Let me look.\nI first thought no.\nYes"])["accuracy"]
    assert (record["parsed"], record["reason"], record["score"]) == (
        "Yes",
        "last_line:leading_word",
        1.0,
    )  # the last line is the word itself


def test_cot_yes_no_falls_back_to_the_whole_reply_when_the_last_line_has_none():
    record = adapter.process_results_cot(YES_NO, ["Yes, there is a dog.\nIt sits by the door."])["accuracy"]
    assert (record["parsed"], record["reason"]) == ("Yes", "leading_word")


def test_cot_multiple_choice_reads_the_last_line_where_the_direct_reading_takes_the_declaration():
    reply = "The answer is A.\nC"
    assert adapter.process_results_cot(MCQ, [reply])["accuracy"]["parsed"] == "C"  # last line first
    assert adapter.process_results(MCQ, [reply])["accuracy"]["parsed"] == "A"  # the declared answer


def test_omni_cot_steps_recorded_for_a_setting_reach_that_settings_record_only():
    stages.record_artifact("omni_cot", "cot:q1", {"final_answer": "C"})
    cot = adapter.process_results_cot(MCQ, ["C"])["accuracy"]
    assert cot["omni_cot"] == {"final_answer": "C", "key": "cot:q1"}
    assert "omni_cot" not in adapter.process_results(MCQ, ["C"])["accuracy"]  # the close setting has none
    stages.record_artifact("omni_cot", "open:q1", {"final_answer": "front"})
    open_record = adapter.score_open(MCQ, "front", judge=_Judge())
    assert "omni_cot" not in open_record  # score_open alone adds nothing; process_results_open does
    assert adapter._recorded(open_record, MCQ, "open")["omni_cot"] == {"final_answer": "front", "key": "open:q1"}


def test_nested_and_missing_results_are_read_as_text():
    assert adapter._first_text([["C"]]) == "C"
    assert adapter._first_text([[]]) == ""
    assert adapter._first_text([None]) == ""
    assert adapter._first_text(None) == ""
    assert adapter._first_text([3]) == "3"


class _Verdict:
    score, reason, judge, rubric, rubric_version, cached, raw_reply = (
        0.5,
        "judge_score_0.5",
        "m",
        "odi_open",
        "1.0",
        1,
        "0.5",
    )


class _Judge:
    def __init__(self):
        self.items = []

    def score(self, item):
        self.items.append(item)
        return _Verdict()


def test_an_open_ended_record_holds_exactly_these_fields():
    judge = _Judge()
    record = adapter.score_open(MCQ, "In front of me.", judge=judge)
    assert judge.items == [
        {
            "task": "relative_direction",
            "question": MCQ["question"],
            "answer_text": "front-right",
            "response": "In front of me.",
        }
    ]
    assert record == {
        "id": "q1",
        "task": "relative_direction",
        "answer_text": "front-right",
        "failed": False,
        "score": 0.5,
        "reason": "judge_score_0.5",
        "judge": "m",
        "rubric": "odi_open",
        "rubric_version": "1.0",
        "cached": True,
        "judge_reply": "0.5",
        "fallback": False,
    }


def test_process_results_open_gives_the_record_to_every_open_metric(monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")
    metrics = adapter.process_results_open(MCQ, [["front-right"]])
    record = metrics["judge_score"]
    assert record["score"] == 1.0 and record["fallback"] is True and record["run_options"] == {}
    assert all(metrics[name] is record for name in ("judge_failures", "judge_unparsed", "judge_cache_hits"))
    assert metrics["judge_fallback_share"] is record


def test_a_judge_failure_message_is_cut_at_500_characters():
    class Broken:
        def score(self, item):
            raise RuntimeError("y" * 600)

    record = adapter.score_open(MCQ, "front", judge=Broken())
    assert record == {
        "id": "q1",
        "task": "relative_direction",
        "answer_text": "front-right",
        "failed": True,
        "reason": ("judge_failed:RuntimeError: " + "y" * 600)[:500],
        "judge": None,
        "cached": False,
    }


def _open(score=None, failed=False, **extra):
    record = {"task": "ocr", "failed": failed, **extra}
    if score is not None:
        record["score"] = score
    return record


def test_the_judged_score_is_the_mean_over_scored_records_and_the_log_says_who_judged(infos):
    records = [
        _open(1.0, judge="gpt", rubric="odi_open", rubric_version="1.0"),
        _open(0.0, judge="gpt", rubric="odi_open", rubric_version="1.0"),
        _open(0.5, judge="none (rule-based fallback)", rubric="odi_open", rubric_version="1.0"),
        _open(judge="gpt", rubric="odi_open", rubric_version="1.0", reason="judge_unparsed"),  # no verdict read
        _open(failed=True),
    ]
    assert adapter.aggregate_judge_score(records) == 0.5  # (1 + 0 + 0.5) / 3; the two without a verdict left out
    assert infos == [
        "ODI-Bench open-ended (ocr): judged by gpt (odi_open@1.0), none (rule-based fallback) (odi_open@1.0); "
        "3 scored, 1 judge failures, 1 verdicts unreadable"
    ]
    assert adapter.aggregate_unparsed(records) == 1 and adapter.aggregate_failures(records) == 1


def test_a_task_with_only_failures_says_nobody_judged(infos):
    assert math.isnan(adapter.aggregate_judge_score([_open(failed=True), _open(failed=True)]))
    assert infos == ["ODI-Bench open-ended (ocr): judged by nobody; 0 scored, 2 judge failures, 0 verdicts unreadable"]
    infos.clear()
    assert math.isnan(adapter.aggregate_judge_score([])) and infos == []


def test_an_unreadable_verdict_of_a_failed_call_is_not_counted_twice():
    # a judge failure is counted as a failure even if its reason were the unparsed one
    assert adapter.aggregate_unparsed([_open(failed=True, reason="judge_unparsed")]) == 0


def test_the_fallback_share_is_over_scored_records():
    records = [_open(1.0, fallback=True), _open(0.0, fallback=False), _open(failed=True, fallback=True)]
    assert adapter.aggregate_fallback_share(records) == 0.5  # 1 of the 2 scored
    assert adapter.aggregate_cache_hits([_open(1.0, cached=True), _open(failed=True, cached=True)]) == 1


def test_close_aggregations():
    records = [{"score": 1.0}, {"score": 0.0}, {"failed": True}]
    assert adapter.aggregate_accuracy(records) == 0.5
    assert adapter.aggregate_mean([1.0, 1.0, 0.0, 0.0]) == 0.5


def test_group_sum_ignores_sizes_and_anything_that_is_not_a_number():
    assert adapter.group_sum([2, 3.5, None, "x"], [100, 1, 1, 1]) == 5.5
    assert adapter.group_sum([2, 3], [1, 1], True) == 5.0  # counts are summed, never weighted


def test_targets_are_the_letter_and_the_open_text():
    assert adapter.doc_to_target(MCQ) == " c " and adapter.doc_to_target({}) == ""
    assert adapter.doc_to_target_open(MCQ) == " front-right " and adapter.doc_to_target_open({}) == ""


def _dataset(rows):
    base = {"image": None, "question": "q?", "options": ["a", "b"], "answer": "A", "answer_text": "a"}
    full = [{**base, **row} for row in rows]
    return datasets.Dataset.from_dict({k: [r[k] for r in full] for k in full[0]})


def test_a_tasks_document_filter_reads_every_spelling_of_its_name_and_is_named_for_it():
    rows = [{"id": "1", "task": "OCR"}, {"id": "2", "task": "counting"}, {"id": "3", "task": "ocr"}]
    process = adapter.process_docs_for("ocr")
    assert process(_dataset(rows))["id"] == ["1", "3"]
    assert process.__name__ == "process_docs_ocr"
    assert adapter.process_docs_for("Count.")(_dataset(rows))["id"] == ["2"]


def test_score_close_reads_with_the_robust_rules_unless_told():
    assert adapter.score_close(MCQ, "The answer is C.")["reason"] == "declared"


def test_omni_cot_steps_of_the_close_and_open_settings_reach_those_records(monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")
    stages.record_artifact("omni_cot", "close:q1", {"final_answer": "C"})
    stages.record_artifact("omni_cot", "open:q1", {"final_answer": "front-right"})
    assert adapter.process_results(MCQ, ["C"])["accuracy"]["omni_cot"] == {"final_answer": "C", "key": "close:q1"}
    record = adapter.process_results_open(MCQ, ["front-right"])["judge_score"]
    assert record["omni_cot"] == {"final_answer": "front-right", "key": "open:q1"}


def test_a_failing_judge_is_said_once_per_kind_of_failure(monkeypatch, logged):
    warnings = logged("WARNING")
    monkeypatch.setattr(run_state.STATE, "warned", set())  # a process that has warned of nothing yet

    class Failing:
        def __init__(self, error):
            self.error = error

        def score(self, item):
            raise self.error

    for error in (RuntimeError("a"), RuntimeError("b"), TimeoutError("c")):
        adapter.score_open(MCQ, "front", judge=Failing(error))
    assert [w.split(" (")[1].split(")")[0] for w in warnings] == ["RuntimeError: a", "TimeoutError: c"]


def test_the_judged_score_log_names_the_first_records_task(infos):
    adapter.aggregate_judge_score([_open(1.0, judge="j"), {**_open(0.0, judge="j"), "task": "counting"}])
    assert infos[0].startswith("ODI-Bench open-ended (ocr): ")


def test_the_placeholder_dataset_loads_odi_benchs_own_data(monkeypatch):
    from lmms_spatial.data import loading

    asked = []
    real = _dataset([{"id": "1", "task": "ocr"}])
    monkeypatch.setattr(loading, "_load", lambda key, config: asked.append((key, config)) or real)
    placeholder = datasets.Dataset.from_dict({loading.PLACEHOLDER_COLUMN: ["x"]})
    assert adapter.process_docs_for("ocr")(placeholder)["id"] == ["1"] and asked == [("odi_bench", None)]
