"""MMSI-Bench adapter, scoring glue (issue 37): whole records, the official letter range, circular records and
aggregations, hand-worked."""

from __future__ import annotations

import math

from lmms_spatial.tasks.mmsi import adapter

QUESTION = "Which object is closer to the camera?\nOptions: A: chair, B: table, C: lamp, D: sofa"
THREE = "Which object is closer to the camera?\nOptions: A: chair, B: table, C: lamp"
DOC = {"id": 5, "question": QUESTION, "answer": " b ", "question_type": "Positional Relationship (Cam.-Obj.)"}
CATEGORY = "Positional Relationship (Cam.–Obj.)"  # the hyphen read as the en dash of the official names


def test_a_vanilla_record_holds_exactly_these_fields():
    metrics = adapter.process_results(DOC, ["`B`"])
    record = {"id": 5, "category": CATEGORY, "answer": "B", "parsed": "B", "reason": "official:backticks"}
    record.update(score=1.0, n_options=4)
    assert metrics == {"accuracy": record, CATEGORY: 1.0, "unparsed_rate": 0.0, "chance_level": 0.25}


def test_the_official_extraction_reads_d_on_a_three_option_question_and_cot_refuses_it():
    doc = {**DOC, "question": THREE}
    vanilla = adapter.process_results(doc, ["D"])
    assert (vanilla["accuracy"]["parsed"], vanilla["accuracy"]["score"]) == ("D", 0.0)  # A-D whatever the options
    assert vanilla["chance_level"] == 1 / 3 and vanilla["unparsed_rate"] == 0.0
    cot = adapter.process_results_cot(doc, ["D"])
    assert (cot["accuracy"]["parsed"], cot["accuracy"]["reason"]) == (None, "unparsed:out_of_range:letter_only:D")
    assert cot["unparsed_rate"] == 1.0


def test_cot_reads_the_last_line_and_an_empty_reply_is_unparsed():
    record = adapter.process_results_cot(DOC, ["A looks close.\n`C`"])["accuracy"]
    assert (record["parsed"], record["reason"]) == ("C", "last_line:backticks")
    assert adapter.process_results_cot(DOC, [])["accuracy"]["reason"] == "unparsed:empty"
    assert adapter.process_results(DOC, [])["accuracy"]["reason"] == "unparsed:official:no_letter"


def test_a_record_without_a_category_or_id_has_an_empty_category_and_no_id():
    record = adapter.score_record({"question": QUESTION, "answer": "A"}, "A", "mmsi_official")
    assert record["category"] == "" and record["id"] is None


def test_gold_letters_are_read_case_blind_only_when_they_are_one_ascii_letter():
    assert adapter.gold_letter(" c ") == "C"
    assert adapter.gold_letter("ab") == "ab"
    assert adapter.gold_letter("é") == "é"  # not ASCII: left as it is (validation refuses it)
    assert adapter.gold_letter(3) == "3"


def _circular_doc(rotation, question_id="5"):
    return {**DOC, "circular_rotation": rotation, "circular_question_id": question_id}


def test_a_circular_record_reports_every_circular_metric_with_its_rotation():
    metrics = adapter.process_results_circular(_circular_doc(2), ["B"])
    record = metrics["circular_accuracy"]
    assert (record["question_id"], record["rotation"], record["score"]) == ("5", 2, 1.0)
    assert metrics == {
        "circular_accuracy": record,
        "vanilla_accuracy": record,
        f"{CATEGORY} (circular)": record,
        f"{CATEGORY} (vanilla)": record,
        "incomplete_questions": record,
        "unparsed_rate": 0.0,
        "chance_level": 0.25,
    }


def test_an_unrotatable_question_only_counts_as_such():
    for rotation in (-1, -2):
        assert set(adapter.process_results_circular(_circular_doc(rotation), ["B"])) == {"unrotatable_questions"}
    assert adapter.process_results_circular(_circular_doc(0), [""])["unparsed_rate"] == 1.0


def _records(question_id, scores):
    return [{"question_id": question_id, "rotation": r, "score": s} for r, s in enumerate(scores)]


def test_circular_aggregations():
    records = _records("a", [1, 1, 1, 1]) + _records("b", [1, 0, 1, 1]) + _records("c", [1, 1])
    assert adapter.aggregate_circular(records) == 0.5  # a of a, b (c incomplete)
    assert adapter.aggregate_vanilla(records) == 1.0  # rotation 0 right for a and b
    assert adapter.aggregate_incomplete(records) == 1
    assert adapter.aggregate_count(records) == 10
    assert math.isnan(adapter.aggregate_circular(_records("c", [1])))


def test_accuracy_and_mean_aggregations():
    assert adapter.aggregate_accuracy([{"score": 1.0}, {"score": 0.0}]) == 0.5
    assert adapter.aggregate_mean([0.0, 0.0, 1.0, 1.0]) == 0.5


def test_rotation_rows_follow_the_row_index_and_unrotatable_copies_are_marked():
    batch = adapter._rotate_batch(
        [QUESTION] * 4 + ["no options"] * 2, ["B"] * 4 + ["A"] * 2, [5] * 4 + [6] * 2, range(6)
    )
    assert batch["circular_rotation"] == [0, 1, 2, 3, -1, -2]
    assert batch["answer"] == ["B", "A", "D", "C", "A", "A"]
    assert batch["circular_question_id"] == ["5", "5", "5", "5", "6", "6"]
    assert (
        batch["question"][2] == "Which object is closer to the camera?\nOptions: A: lamp, B: sofa, C: chair, D: table"
    )
    assert batch["question"][4] == "no options"


def test_the_target_is_the_answer_as_written():
    assert adapter.doc_to_target(DOC) == " b " and adapter.doc_to_target({}) == ""


def test_a_circular_document_without_a_result_is_an_empty_reply():
    record = adapter.process_results_circular(_circular_doc(1), [])["circular_accuracy"]
    assert (record["parsed"], record["reason"], record["rotation"]) == (None, "unparsed:official:no_letter", 1)
