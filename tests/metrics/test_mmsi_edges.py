"""MMSI-Bench edges (issue 37): which rotation is the vanilla score, category order, one- and no-question groups."""

import math

from lmms_spatial.metrics.mmsi import circular_summary, count_options, option_letters, rotate, split_options


def _records(question_id, scores, category="MSR"):
    return [{"question_id": question_id, "rotation": r, "score": s, "category": category} for r, s in enumerate(scores)]


def test_vanilla_is_the_score_of_the_original_order_rotation_0_only():
    # rotation 0 right, rotations 1-3 wrong: vanilla 1, circular 0
    summary = circular_summary(_records("q1", [1, 0, 0, 0]))
    assert (summary["vanilla"], summary["circular"]) == (1.0, 0.0)
    summary = circular_summary(_records("q1", [0, 1, 1, 1]))
    assert (summary["vanilla"], summary["circular"]) == (0.0, 0.0)


def test_rotations_are_matched_by_number_whatever_order_the_records_come_in():
    records = list(reversed(_records("q1", [1, 0, 0, 0])))
    assert circular_summary(records)["vanilla"] == 1.0


def test_categories_come_in_the_order_of_their_names():
    # question ids in the opposite order of the category names: the order follows the names
    records = _records("q1", [1, 1, 1, 1], "Motion (Obj.)") + _records("q2", [0, 0, 0, 0], "Attribute (Appr.)")
    per = circular_summary(records, by="category")["by_category"]
    assert list(per) == ["Attribute (Appr.)", "Motion (Obj.)"]


def test_a_category_of_one_question_and_unequal_categories():
    # MSR: 1 question right; Motion (Cam.): 3 questions, 1 right. Overall circular is per question: 2/4
    records = _records("a", [1, 1, 1, 1], "MSR")
    records += _records("b", [1, 1, 1, 1], "Motion (Cam.)") + _records("c", [1, 1, 0, 1], "Motion (Cam.)")
    records += _records("d", [0, 1, 1, 1], "Motion (Cam.)")
    summary = circular_summary(records, by="category")
    assert summary["circular"] == 0.5  # a, b of a, b, c, d
    assert summary["vanilla"] == 0.75  # a, b, c right in the original order
    assert summary["by_category"]["MSR"] == {"circular": 1.0, "vanilla": 1.0}
    assert summary["by_category"]["Motion (Cam.)"]["circular"] == 1 / 3


def test_no_complete_question_gives_nan_scores_and_no_category():
    summary = circular_summary(_records("q1", [1, 1, 1]), by="category")
    assert math.isnan(summary["circular"]) and math.isnan(summary["vanilla"])
    assert summary["by_category"] == {} and summary["incomplete_questions"] == 1


def test_a_question_without_readable_options_counts_four_and_cannot_be_rotated():
    assert count_options("Which is closer?") == 4
    assert rotate("Which is closer?\nOptions: A: x, B: y", "C", 1) is None  # the answer is not an option


def test_a_question_without_options_is_its_own_stem_and_has_no_letters():
    assert split_options("Which is closer? ") == ("Which is closer?", {})
    assert option_letters("Which is A: big?") == []


def test_per_group_results_come_in_the_order_of_their_keys_as_text():
    records = _records("q1", [1, 1, 1, 1]) + _records("q2", [0, 0, 0, 0])
    for r in records:
        r["n"] = 10 if r["question_id"] == "q1" else 9
    per = circular_summary(records, by="n")["by_n"]
    assert list(per) == [10, 9]  # "10" < "9" as text
