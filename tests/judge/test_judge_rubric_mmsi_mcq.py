"""MMSI-Bench diagnosis and multiple-choice extraction rubrics; the rubric registry."""

from __future__ import annotations

import dataclasses

import pytest

from lmms_spatial.metrics.rubrics import RUBRICS, UnparsedReply, extract_json_object, get_rubric
from lmms_spatial.metrics.rubrics.mmsi_diagnosis import ERROR_TYPES, LABELS

MMSI = get_rubric("mmsi_diagnosis")
MCQ = get_rubric("mcq_extract")

MMSI_ITEM = {
    "question": "Where is the sofa relative to the camera in image 2?\nOptions: A: left, B: right, C: front, D: back",
    "answer": "B",
    "thought": "The sofa is left of the TV in image 1; image 2 faces the TV from the other side, so it is right.",
    "response": "The sofa is on the left in image 1, so the answer is A.",
}


def test_registry_holds_the_four_rubrics_each_versioned() -> None:
    assert sorted(RUBRICS) == ["mcq_extract", "mmsi_diagnosis", "odi_open", "osr_negative"]
    assert all(r.version and r.source for r in RUBRICS.values())
    with pytest.raises(KeyError, match="unknown judge rubric"):
        get_rubric("mm_vet")


def test_missing_item_fields_are_named() -> None:
    with pytest.raises(KeyError, match="thought"):
        MMSI.check_item({k: v for k, v in MMSI_ITEM.items() if k != "thought"})


def test_lenient_json_extraction_takes_the_last_object() -> None:
    assert extract_json_object('first {"a": 1} then {"b": [1, 2,],}') == {"b": [1, 2]}
    with pytest.raises(UnparsedReply):
        extract_json_object("no braces")


# -- mmsi_diagnosis ----------------------------------------------------------------------


def test_diagnosis_prompt_carries_question_answer_human_thought_and_response() -> None:
    system, user = MMSI.build_messages(MMSI_ITEM)
    assert system["role"] == "system" and user["role"] == "user"
    for value in MMSI_ITEM.values():
        assert value in user["content"]
    for label in LABELS:
        assert label in user["content"]


def test_diagnosis_labels_are_correct_reasoning_plus_the_papers_four_failure_modes() -> None:
    assert ERROR_TYPES == (
        "grounding",
        "overlap_matching_scene_reconstruction",
        "situation_transformation",
        "spatial_logic",
    )
    assert LABELS[0] == "correct_reasoning"


@pytest.mark.parametrize(
    ("reply", "label", "score"),
    [
        (
            '{"label": "situation_transformation", "explanation": "ignored the view change"}',
            "situation_transformation",
            0.0,
        ),
        ('{"label": "Spatial-logic errors", "explanation": "x"}', "spatial_logic", 0.0),
        ('{"label": "Overlap-matching and scene-reconstruction errors"}', "overlap_matching_scene_reconstruction", 0.0),
        (
            '```json\n{"label": "correct_reasoning", "explanation": "matches the reference"}\n```',
            "correct_reasoning",
            1.0,
        ),
        ("grounding", "grounding", 0.0),
    ],
)
def test_diagnosis_parser_maps_labels_and_scores_reasoning_accuracy(reply: str, label: str, score: float) -> None:
    verdict = MMSI.parse_reply(reply, MMSI_ITEM)
    assert (verdict.label, verdict.score) == (label, score)


@pytest.mark.parametrize("reply", ['{"label": "other"}', "The model is wrong.", ""])
def test_diagnosis_parser_rejects_unknown_labels(reply: str) -> None:
    with pytest.raises(UnparsedReply):
        MMSI.parse_reply(reply, MMSI_ITEM)


def test_diagnosis_fallback_is_undiagnosed() -> None:
    verdict = MMSI.fallback(MMSI_ITEM)
    assert (verdict.label, verdict.score) == ("undiagnosed", 0.0)


# -- mcq_extract -------------------------------------------------------------------------

MCQ_ITEM = {"question": "What is left of the bed?", "options": ["lamp", "desk", "door", "window"], "response": "x"}


def test_extraction_prompt_lists_the_items_letters_and_options() -> None:
    text = MCQ.build_messages({**MCQ_ITEM, "response": "probably the desk"})[0]["content"]
    assert "in A, B, C, D (if they are valid options), and Z." in text
    assert text.endswith(
        "Question: What is left of the bed?\nOptions: A. lamp B. desk C. door D. window\n"
        "Answer: probably the desk\nYour output:"
    )


@pytest.mark.parametrize(
    ("reply", "letter", "score"),
    [("B", "B", 1.0), ("(C).", "C", 1.0), ("Your output: A", "A", 1.0), ("Z", None, 0.0), ("none", None, 0.0)],
)
def test_extraction_parser_returns_one_letter_or_none(reply: str, letter: str | None, score: float) -> None:
    verdict = MCQ.parse_reply(reply, MCQ_ITEM)
    assert (verdict.label, verdict.score) == (letter, score)


@pytest.mark.parametrize("reply", ["E", "It is between A and B", ""])
def test_extraction_parser_rejects_letters_outside_the_options_or_no_letter(reply: str) -> None:
    with pytest.raises(UnparsedReply):
        MCQ.parse_reply(reply, MCQ_ITEM)


def test_extraction_parser_allows_as_many_letters_as_options() -> None:
    six = {**MCQ_ITEM, "options": ["a", "b", "c", "d", "e", "f"]}
    assert MCQ.parse_reply("F", six).label == "F"
    assert MCQ.parse_reply("D", {"question": "q", "response": "r", "n_options": 4}).label == "D"


def test_extraction_fallback_uses_the_robust_rule_extractor() -> None:
    assert MCQ.fallback({**MCQ_ITEM, "response": "The answer is B."}).label == "B"
    nothing = MCQ.fallback({**MCQ_ITEM, "response": "I am not sure."})
    assert (nothing.label, nothing.score) == (None, 0.0)


def test_rubrics_are_frozen_data() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        MCQ.version = "2"  # type: ignore[misc]
