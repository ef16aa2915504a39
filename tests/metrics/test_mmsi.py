"""MMSI-Bench rules: category spelling, option parsing, rotations, circular scoring."""

import pytest

from lmms_spatial.metrics.mmsi import (
    CATEGORIES,
    circular_summary,
    count_options,
    normalise_category,
    option_parse_shortfall,
    rotate,
    split_options,
)

QUESTION = "Where is the chair relative to the bed?\nOptions: A: left, B: right, C: behind, D: in front"


def test_hyphen_and_en_dash_spellings_are_the_same_category():
    assert normalise_category("Positional Relationship (Cam.-Obj.)") == "Positional Relationship (Cam.–Obj.)"
    assert normalise_category("Positional Relationship (Cam.–Obj.)") == "Positional Relationship (Cam.–Obj.)"
    assert normalise_category("Positional Relationship (Cam. - Obj.)") == "Positional Relationship (Cam.–Obj.)"
    assert len(set(CATEGORIES)) == 11


def test_options_are_split_out_of_the_question_text():
    stem, options = split_options(QUESTION)
    assert stem == "Where is the chair relative to the bed?"
    assert options == {"A": "left", "B": "right", "C": "behind", "D": "in front"}
    assert count_options(QUESTION) == 4


def test_rotation_one_relabels_options_in_bcda_order():
    question, answer = rotate(QUESTION, "B", 1)
    assert question.endswith("Options: A: right, B: behind, C: in front, D: left")
    assert answer == "A"  # "right" moved from B to A


def test_rotation_three_moves_answer_d_to_a():
    question, answer = rotate(QUESTION, "D", 3)  # order DABC
    assert question.endswith("Options: A: in front, B: left, C: right, D: behind")
    assert answer == "A"


def test_unparseable_options_cannot_be_rotated():
    assert rotate("Which is closer? (no options given)", "A", 1) is None


def _records(question_id, scores, category="MSR"):
    return [{"question_id": question_id, "rotation": r, "score": s, "category": category} for r, s in enumerate(scores)]


def test_circular_counts_a_question_only_if_all_four_rotations_are_right():
    records = _records("q1", [1, 1, 1, 1]) + _records("q2", [1, 0, 1, 1]) + _records("q3", [0, 1, 1, 1])
    summary = circular_summary(records)
    assert summary["circular"] == 1 / 3
    assert summary["vanilla"] == 2 / 3  # rotation 0 (the original order) right for q1 and q2
    assert summary["complete_questions"] == 3 and summary["incomplete_questions"] == 0


def test_incomplete_questions_are_reported_not_scored():
    records = _records("q1", [1, 1, 1, 1]) + _records("q2", [1, 1])  # q2 cut by --limit
    summary = circular_summary(records)
    assert summary["circular"] == 1.0
    assert summary["incomplete_questions"] == 1


def test_circular_per_category():
    records = _records("q1", [1, 1, 1, 1], "MSR") + _records("q2", [1, 0, 1, 1], "Motion (Cam.)")
    per = circular_summary(records, by="category")["by_category"]
    assert per == {"MSR": {"circular": 1.0, "vanilla": 1.0}, "Motion (Cam.)": {"circular": 0.0, "vanilla": 1.0}}


@pytest.mark.parametrize(
    "options",
    [
        "A: left, B: right, C: front, D: back",
        "A) left, B) right, C) front, D) back",
        "(A) left (B) right (C) front (D) back",
        "A. left\nB. right\nC. front\nD. back",
    ],
)
def test_options_are_counted_in_every_style_the_releases_use(options):
    assert count_options(f"Where is the lamp?\nOptions: {options}") == 4


def test_the_official_parser_reads_only_the_colon_style_and_the_shortfall_is_reported():
    question = "Where is the lamp?\nOptions: A: left, B: right, C: front, D) back"
    assert len(split_options(question)[1]) == 3  # the official pattern stops at "D) back"
    assert option_parse_shortfall(question) == (3, 4)
    assert option_parse_shortfall("Q?\nOptions: A: x, B: y, C: z, D: w") is None
