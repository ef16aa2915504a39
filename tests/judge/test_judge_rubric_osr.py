"""OSR-Bench LLM-evaluator rubric: verbatim meta-prompts, JSON parser, the paper's rule fallback."""

from __future__ import annotations

import pytest

from lmms_spatial.metrics.rubrics import UnparsedReply, get_rubric
from lmms_spatial.metrics.rubrics.osr_negative import (
    NO_CANDIDATE_FOUND,
    ORIENTING_OR_QUERYING_NOT_FOUND,
    POSITIONING_NOT_FOUND,
    POSITIONING_NOT_UNIQUE,
    counting_score,
    official_answer,
)

OSR = get_rubric("osr_negative")


def item(skill: str, answer: str, response: str, question: str = "Q?") -> dict[str, str]:
    return {"skill": skill, "question": question, "answer": answer, "response": response}


# -- prompt ------------------------------------------------------------------------------


# META_PROMPT_OBJECT_COUNTING of UUUserna/OSR-Bench-code's evaluation/llm_evaluator.py (0be3fda), fields filled in:
# the official layout (leading newline, blank lines, indented bullets, comments in the JSON sketch),
# not the typesetting of the paper's App. C.3.
def test_counting_prompt_is_the_official_meta_prompt_with_fields_filled_in() -> None:
    messages = OSR.build_messages(item("object_counting", "2", "There are 2.", "How many chairs?"))
    assert messages == [
        {
            "role": "user",
            "content": (
                "\n"
                "You are evaluating an object counting answer. \n"
                "\n"
                "Question: How many chairs?\n"
                "Ground Truth: 2\n"
                "Model Answer: There are 2.\n"
                "\n"
                "Evaluation rules:\n"
                "- The answer must be an integer (including 0)\n"
                "- Correct if the model's integer exactly matches the ground truth\n"
                "- Also correct if the model answer contains additional text but has the correct number\n"
                "\n"
                "Please respond in JSON format:\n"
                "{\n"
                '    "score": 0 or 1,  # 0 for incorrect, 1 for correct\n'
                '    "confidence": "high" or "middle" or "low"  # Your confidence level\n'
                "}\n"
            ),
        }
    ]


# META_PROMPT_RELATIVE_DISTANCE of UUUserna/OSR-Bench-code's evaluation/llm_evaluator.py (0be3fda), fields filled in:
# the official layout (leading newline, blank lines, indented bullets, comments in the JSON sketch),
# not the typesetting of the paper's App. C.3.
def test_distance_prompt_is_the_official_meta_prompt_with_its_three_fixed_strings() -> None:
    messages = OSR.build_messages(item("relative_distance", "chair", "the chair", "Which is closest?"))
    assert messages == [
        {
            "role": "user",
            "content": (
                "\n"
                "You are evaluating a relative distance answer.\n"
                "\n"
                "Question: Which is closest?\n"
                "Ground Truth: chair\n"
                "Model Answer: the chair\n"
                "\n"
                "Evaluation rules:\n"
                "- Normal answers are object names\n"
                "- Special case answers may be one of these error messages:\n"
                '    * "The positioning object is not found in the picture."\n'
                '    * "The positioning object is not unique in the picture."\n'
                '    * "None of the candidates were found in the picture."\n'
                "- When the ground truth is one of these special error messages, the model answer must match exactly\n"
                "- When the ground truth is an object name, the model answer is correct if it contains the matching object name (case insensitive)\n"  # noqa: E501
                "\n"
                "Please respond in JSON format:\n"
                "{\n"
                '    "score": 0 or 1,  # 0 for incorrect, 1 for correct\n'
                '    "confidence": "high" or "middle" or "low"  # Your confidence level\n'
                "}\n"
            ),
        }
    ]


# META_PROMPT_RELATIVE_DIRECTION of UUUserna/OSR-Bench-code's evaluation/llm_evaluator.py (0be3fda), fields filled in:
# the official layout (leading newline, blank lines, indented bullets, comments in the JSON sketch),
# not the typesetting of the paper's App. C.3.
def test_direction_prompt_is_the_official_meta_prompt_with_its_three_fixed_strings() -> None:
    messages = OSR.build_messages(item("relative_direction", "Front", "front", "Where is the lamp?"))
    assert messages == [
        {
            "role": "user",
            "content": (
                "\n"
                "You are evaluating a relative direction answer.\n"
                "\n"
                "Question: Where is the lamp?\n"
                "Ground Truth: Front\n"
                "Model Answer: front\n"
                "\n"
                "Evaluation rules:\n"
                '- Normal answers are direction words: "Front", "Back", "Left", "Right", "Front-Left", "Front-Right", "Back-Left", "Back-Right"\n'  # noqa: E501
                '- Direction words are case insensitive, and hyphens are optional (e.g., "front left" equals "Front-Left")\n'  # noqa: E501
                "- Special case answers may be one of these error messages:\n"
                '    * "The positioning object is not found in the picture."\n'
                '    * "The positioning object is not unique in the picture."\n'
                '    * "The orienting object or querying object is not found in the picture."\n'
                "- When the ground truth is one of these special error messages, the model answer must match exactly\n"
                "\n"
                "Please respond in JSON format:\n"
                "{\n"
                '    "score": 0 or 1,  # 0 for incorrect, 1 for correct\n'
                '    "confidence": "high" or "middle" or "low"  # Your confidence level\n'
                "}\n"
            ),
        }
    ]


def test_think_mode_answer_is_reduced_to_its_answer_tag_before_judging() -> None:
    response = "<think>The sofa is left, the lamp is 3 m away.</think><answer>front left</answer>"
    text = OSR.build_messages(item("relative_direction", "Front-Left", response))[0]["content"]
    assert "Model Answer: front left\n" in text and "<think>" not in text


def test_unknown_skill_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown skill"):
        OSR.build_messages(item("cognitive_map", "{}", "{}"))


# -- parser ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score", "confidence"),
    [
        ('{"score": 1, "confidence": "high"}', 1.0, "high"),
        ("```json\n{\u201cscore\u201d: 0, \u201cconfidence\u201d: \u201cmiddle\u201d}\n```", 0.0, "middle"),
        ('{\n "score": 1,  # 0 for incorrect, 1 for correct\n "confidence": "low"\n}', 1.0, "low"),
        ('{"score": "0", "confidence": "medium"}', 0.0, "middle"),
        ('{"score": 1}', 1.0, None),
        ("score: 1, confidence: high", 1.0, "high"),
    ],
)
def test_osr_parser_reads_binary_score_and_confidence(reply: str, score: float, confidence: str | None) -> None:
    verdict = OSR.parse_reply(reply, None)
    assert (verdict.score, verdict.details["confidence"]) == (score, confidence)


@pytest.mark.parametrize("reply", ['{"score": 2, "confidence": "high"}', "Correct!", '{"confidence": "high"}', ""])
def test_osr_parser_rejects_replies_without_a_binary_score(reply: str) -> None:
    with pytest.raises(UnparsedReply):
        OSR.parse_reply(reply, None)


# -- fallback ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pred", "truth", "expected"),
    [(3, 4, 0.75), (4, 4, 1.0), (6, 4, 1 - 2 / 6), (0, 2, 0.0), (2, 0, 0.0), (0, 0, 1.0)],
)
def test_counting_partial_credit_is_one_minus_relative_difference(pred: int, truth: int, expected: float) -> None:
    assert counting_score(pred, truth) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("response", "score"),
    [
        ("There are 3 chairs.", 0.75),
        ("3 or 4 chairs", 0.75),  # the first integer counts
        ("<think>I see 2 at first, then more.</think><answer>4</answer>", 1.0),
        ("three chairs", 0.0),  # the official rule reads digits only
    ],
)
def test_counting_fallback_uses_the_first_integer(response: str, score: float) -> None:
    assert OSR.fallback(item("object_counting", "4", response)).score == pytest.approx(score)


@pytest.mark.parametrize(
    ("skill", "truth", "response", "score"),
    [
        ("relative_distance", "chair", " Chair ", 1.0),
        ("relative_distance", "chair", "the chair", 0.0),  # exact name match only
        ("relative_direction", "Front-Left", "front left", 1.0),
        ("relative_direction", "back right", "Back-Right", 1.0),
        ("relative_direction", "Front-Left", "front-right", 0.0),
    ],
)
def test_distance_and_direction_fallbacks_match_exactly_after_normalising(
    skill: str, truth: str, response: str, score: float
) -> None:
    assert OSR.fallback(item(skill, truth, response)).score == score


@pytest.mark.parametrize(
    ("truth", "response", "score"),
    [
        (POSITIONING_NOT_FOUND, "The positioning object is not found in the picture.", 1.0),
        (POSITIONING_NOT_FOUND, "the positioning object is not found in the picture", 1.0),
        (POSITIONING_NOT_FOUND, "I cannot find a stool in this panorama.", 1.0),
        (POSITIONING_NOT_FOUND, "There is no piano here.", 1.0),
        (POSITIONING_NOT_FOUND, "chair", 0.0),
        (POSITIONING_NOT_FOUND, "There are multiple stools.", 0.0),
        (POSITIONING_NOT_UNIQUE, "There are multiple stools, so I can't say.", 1.0),
        (POSITIONING_NOT_UNIQUE, "The stool is not found.", 0.0),
        (NO_CANDIDATE_FOUND, "None of the candidates were found in the picture.", 1.0),
        (ORIENTING_OR_QUERYING_NOT_FOUND, "The door is not visible in the image.", 1.0),
        (ORIENTING_OR_QUERYING_NOT_FOUND, "front-left", 0.0),
    ],
)
def test_fixed_not_found_ground_truth_matches_a_response_stating_the_same(
    truth: str, response: str, score: float
) -> None:
    assert OSR.fallback(item("relative_direction", truth, response)).score == score


def test_counting_item_with_not_found_ground_truth_uses_the_statement_rule() -> None:
    verdict = OSR.fallback(item("object_counting", POSITIONING_NOT_FOUND, "There is no such object."))
    assert (verdict.score, verdict.reason) == (1.0, "fallback_states_not_found")


def test_the_answer_put_into_the_prompt_is_the_first_lower_case_answer_tag_as_the_official_evaluator_reads_it():
    # llm_evaluator.evaluate_with_openai: if "<answer>" and "</answer>" are both in the reply, the first
    # re.search(r'<answer>(.*?)</answer>', ..., re.DOTALL) span, stripped; otherwise the reply as it is
    assert official_answer("<think>two?</think><answer> 3 </answer> then <answer>4</answer>") == "3"
    assert official_answer("<ANSWER>3</ANSWER>") == "<ANSWER>3</ANSWER>"  # upper-case tags are not read
    assert official_answer("<answer>3") == "<answer>3"  # an unclosed tag: the reply unchanged
    assert official_answer("There are\n3 chairs") == "There are\n3 chairs"  # no tags: not even stripped
    prompt = OSR.build_messages(item("object_counting", "3", "<answer>3</answer><answer>5</answer>", "How many?"))
    assert "Model Answer: 3\n" in prompt[0]["content"]
