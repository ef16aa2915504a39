"""ODI-Bench open-ended rubric: prompt per task family, reply parser, rule-based fallback."""

from __future__ import annotations

import pytest

from lmms_spatial.metrics.rubrics import UnparsedReply, get_rubric
from lmms_spatial.metrics.rubrics.odi_open import task_family

ODI = get_rubric("odi_open")


def item(task: str, answer_text: str, response: str, question: str = "Q?") -> dict[str, str]:
    return {"task": task, "question": question, "answer_text": answer_text, "response": response}


# -- prompt ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "family"),
    [
        ("counting", "strict"),
        ("existence", "strict"),
        ("ocr", "ocr"),
        ("egocentric_view_orientation", "direction"),
        ("allocentric_view_orientation", "direction"),
        ("relative_direction", "direction"),
        ("object_attribute", "attribute"),
        ("human_attribute", "attribute"),
        ("scene_simulation", "attribute"),
        ("odi_reasoning", "attribute"),
    ],
)
def test_each_odi_task_maps_to_the_family_whose_rule_the_paper_states(task: str, family: str) -> None:
    assert task_family(task) == family


def test_prompt_states_the_family_rule_and_leaves_the_items_correctness_cell_open() -> None:
    messages = ODI.build_messages(item("relative_direction", "front-left", "It is\nin front.", "Where is the door?"))
    assert len(messages) == 1 and messages[0]["role"] == "user"
    text = messages[0]["content"]
    assert "deviates from the ground-truth orientation by 45 degrees" in text
    assert "Question | Ground truth | Prediction | Correctness" in text
    assert text.endswith("Where is the door? | front-left | It is in front. | ")


def test_ocr_prompt_gives_half_credit_for_right_characters_in_wrong_order() -> None:
    text = ODI.build_messages(item("ocr", "EXIT", "EXIT"))[0]["content"]
    assert "correct characters but in an incorrect order, it is partially correct (0.5)" in text
    assert "Never give 0.5" not in text


def test_strict_prompt_forbids_half_credit() -> None:
    assert "Never give 0.5 for this question." in ODI.build_messages(item("counting", "3", "3"))[0]["content"]


# -- parser ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score"),
    [("1.0", 1.0), ("0.5", 0.5), ("0", 0.0), ("0.0 (totally wrong)", 0.0), ("Correctness: 0.5", 0.5), ("`1`", 1.0)],
)
def test_odi_parser_reads_the_correctness_score(reply: str, score: float) -> None:
    assert ODI.parse_reply(reply, item("object_attribute", "red", "red")).score == score


@pytest.mark.parametrize("reply", ["0.7", "The prediction is totally right.", "", "2"])
def test_odi_parser_rejects_scores_off_the_0_half_1_scale(reply: str) -> None:
    with pytest.raises(UnparsedReply):
        ODI.parse_reply(reply, item("object_attribute", "red", "red"))


def test_odi_parser_rejects_half_credit_for_counting() -> None:
    with pytest.raises(UnparsedReply):
        ODI.parse_reply("0.5", item("counting", "3", "4"))


# -- fallback ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("truth", "response", "score"),
    [
        ("front-left", "The window is at your front-left.", 1.0),
        ("front-left", "The window is in front of you.", 0.5),  # 315 vs 0 degrees: 45 off
        ("front-left", "It is to your left.", 0.5),  # 315 vs 270
        ("front-left", "It is on your right.", 0.0),  # 315 vs 90: 135 off
        ("back", "Behind you, slightly to the right: back right.", 1.0),  # first direction named wins
        ("back", "back-right", 0.5),
        ("front", "right", 0.0),
        ("front", "At 12 o'clock.", 1.0),
        ("front", "At 1:30 o'clock.", 0.5),  # 45 degrees
        ("right", "3 o'clock", 1.0),
        ("left front", "front-left", 1.0),
        ("front", "I cannot tell.", 0.0),
    ],
)
def test_direction_fallback_gives_half_credit_only_within_45_degrees(truth: str, response: str, score: float) -> None:
    assert ODI.fallback(item("egocentric_view_orientation", truth, response)).score == score


def test_direction_fallback_reports_the_angle_it_measured() -> None:
    verdict = ODI.fallback(item("relative_direction", "front-left", "The door is in front of you."))
    assert verdict.reason == "fallback_direction_within_45"
    assert verdict.details["degrees_off"] == 45.0


@pytest.mark.parametrize(
    ("task", "truth", "response", "score"),
    [
        ("counting", "4", "There are four chairs.", 1.0),
        ("counting", "4", "There are 5 chairs.", 0.0),  # strict: no partial credit
        ("counting", "There are 2 people.", "2", 1.0),
        ("existence", "Yes", "Yes, there is a car.", 1.0),
        ("existence", "Yes", "No, there is none.", 0.0),
        ("existence", "No", "I do not know.", 0.0),
    ],
)
def test_counting_and_existence_fallbacks_are_strict(task: str, truth: str, response: str, score: float) -> None:
    assert ODI.fallback(item(task, truth, response)).score == score


@pytest.mark.parametrize(
    ("truth", "response", "score", "reason"),
    [
        ("COFFEE SHOP", "The sign reads 'Coffee Shop'.", 1.0, "fallback_ocr_exact"),
        ("COFFEE SHOP", "The sign reads 'SHOP COFFEE'.", 0.5, "fallback_ocr_words_wrong_order"),
        ("OPEN", "It says NEPO.", 0.5, "fallback_ocr_characters_wrong_order"),
        ("OPEN", "It says CLOSED.", 0.0, "fallback_ocr_mismatch"),
        ("EXIT 3", "exit3", 1.0, "fallback_ocr_exact"),
    ],
)
def test_ocr_fallback_gives_half_credit_for_right_characters_in_wrong_order(
    truth: str, response: str, score: float, reason: str
) -> None:
    verdict = ODI.fallback(item("ocr", truth, response))
    assert (verdict.score, verdict.reason) == (score, reason)


@pytest.mark.parametrize(
    ("truth", "response", "score"),
    [
        ("red wooden chair", "A red wooden chair.", 1.0),  # recall 3/3
        ("red wooden chair", "The chair is red.", 0.5),  # recall 2/3 = 0.67
        ("red wooden chair", "It is a blue sofa.", 0.0),  # recall 0/3
        ("two bags", "He carries 2 bag.", 1.0),  # number words and plurals normalised
    ],
)
def test_attribute_fallback_scores_content_word_recall(truth: str, response: str, score: float) -> None:
    assert ODI.fallback(item("human_attribute", truth, response)).score == score


def test_fallback_scores_an_empty_response_zero() -> None:
    assert ODI.fallback(item("object_attribute", "red", "  ")).reason == "fallback_empty_response"
