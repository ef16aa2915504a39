"""Self-corrections: when a reply declares an answer more than once, the last declaration wins.

Reasoning and chain-of-thought replies often change their mind ("The answer is A. Actually no, the answer
is C."). Every entry below is a realistic reply with several declarations, labelled by hand with the answer a
careful reader takes as the model's final one, and the rule that must find it. The rules are tiered (see
``lmms_spatial.metrics.extraction``): ``<answer>`` tags, then the explicit final forms (JSON ``"answer"``,
``\\boxed{}``, "final answer:") by position, then plain declarations ("the answer is", "Answer:", "I choose"),
then backticks; inside the strongest tier present the last declaration decides. So a hypothetical stated after
an explicit final answer ("Final answer: B. The answer would be A if ...") does not override it.

The official extractors (MMSI-Bench's ``mmsi_official``, OSR-Bench's ``evaluation_re``) are not concerned:
they stay as their official code reads replies (first match).
"""

from __future__ import annotations

import pytest

from lmms_spatial.metrics.extraction import (
    LETTERS,
    extract_choice,
    extract_choice_final,
    extract_choice_json_first,
    extract_choice_robust,
    extract_yes_no,
)

# (reply, expected letter or None, rule that must decide) for the robust strategy, four options A-D
ROBUST = [
    # the two replies
    ("The answer is A. Actually no, the answer is C.", "C", "declared"),
    ("Final answer: A ... Final answer: C", "C", "final_answer"),
    # corrections across sentences and lines
    (
        "Let me look at the image. The chair is on the left, so the answer is B.\n"
        "Wait, I mixed up left and right: the chair is on the right of the table. The answer is D.",
        "D",
        "declared",
    ),
    ("Answer: B\n\nHmm, re-checking the arrow direction... Answer: A", "A", "declared"),
    ("Answer: A. Wait — answer: D.", "D", "declared"),
    ("The correct option is A. Hmm, no. The correct option is B.", "B", "declared"),
    ("I would pick B. Hmm, but the ceiling lines converge to the left... I would pick A.", "A", "declared"),
    ("I choose A. Actually, I'll go with C.", "C", "declared"),
    (
        "The best answer is B.\n\nHowever, considering the vanishing point, the best answer is actually D.",
        "D",
        "declared",
    ),
    ("The final answer is A.\nWait, let me reconsider the viewpoint. The final answer is C.", "C", "final_answer"),
    ("the answer is b. hmm, actually the answer is d.", "D", "declared"),
    ("**Answer:** B\n\n**Correction:** after looking again at the reflection, **Answer:** C", "C", "declared"),
    ("The answer is A or B... looking closer at the shadow, the answer is B.", "B", "declared"),
    ("The answer is (A) or maybe (B)... The answer is B.", "B", "declared"),
    ("The answer is A. A closer look shows a lamp behind the sofa, so the answer is C.", "C", "declared"),
    ("The answer is not A. Looking closer, the answer is D.", "D", "declared"),
    # a correction to a letter the question does not offer is the model's answer: unparsed, not the earlier one
    ("The answer is B. Hmm, the answer is E.", None, "unparsed:out_of_range:declared:E"),
    # tags: the last tag naming a letter decides, whatever the text around them declares
    ("<answer>A</answer>\nOn second thought:\n<answer>C</answer>", "C", "answer_tag"),
    ("<think>The answer might be B.</think><answer>D</answer>", "D", "answer_tag"),
    ("I think the answer is A... no.\n<answer>B</answer>", "B", "answer_tag"),
    # the explicit final forms are one tier, read by position
    ("\\boxed{B}\n\nWait, the shadow falls to the left, so it must be \\boxed{C}.", "C", "boxed"),
    ("\\boxed{A}\nWait, that's wrong.\nFinal answer: C", "C", "final_answer"),
    (
        "Final answer: (B)\nLet me double-check... the cup is behind the laptop: option D.\nFinal answer: (D)",
        "D",
        "final_answer",
    ),
    (
        '{"answer": "A", "reasoning": "first guess"}\n{"answer": "B", "reasoning": "the camera moved right"}',
        "B",
        "json_answer",
    ),
    # an explicit final answer is not overridden by a hypothetical or an explanation after it
    ("Final answer: B. Note that the answer would be A if the image were mirrored.", "B", "final_answer"),
    (
        "Step 1: the first image shows the kitchen from the north. Step 2: in the second the fridge is on the "
        "left, so the camera turned right. The answer is B.\nFinal answer: B",
        "B",
        "final_answer",
    ),
    # restated questions, quoted options and letters inside the reasoning
    (
        "The question asks which object is closest to the camera. Options: A. sofa B. lamp C. table D. rug. "
        "Looking at the depth cues, the answer is C.",
        "C",
        "declared",
    ),
    ("Question: Is the door left of the window? Options: (A) yes (B) no. The answer is (B).", "B", "declared"),
    ("The answer is B because option A describes a 90° rotation, while the object turned 180°.", "B", "declared"),
    (
        "Option A says the car faces left. Option C says it faces the camera. The headlights are visible, "
        "so the correct answer is C.",
        "C",
        "declared",
    ),
    ("A is wrong since the arrow points up. B is wrong too. The answer is D.", "D", "declared"),
    ("Answer: C\nExplanation: C is correct because the person faces away; A would need the face.", "C", "declared"),
    (
        'The answer is "A. The mug is left of the laptop". Wait, no: the mug is right of the laptop, so the '
        'answer is "B. The mug is right of the laptop".',
        "B",
        "declared",
    ),
    ("`B`\nHmm, correcting myself: `D`", "D", "backticks"),
    # a negation declares nothing, and its letter is not read back by the fallbacks
    ("The answer is not A.", None, "unparsed:no_answer"),
]


@pytest.mark.parametrize(("reply", "expected", "rule"), ROBUST, ids=[f"robust{i}" for i in range(len(ROBUST))])
def test_the_last_declaration_of_the_strongest_form_wins(reply, expected, rule):
    got = extract_choice_robust(reply, LETTERS[:4])
    assert (got.value, got.reason) == (expected, rule)
    # the public entry point agrees (it only adds the unknown-strategy check and the exception guard)
    assert extract_choice(reply, n_options=4).value == expected


# chain of thought (``final``: the last line first, then the whole reply), as MMSI-Bench's and
# MMPerspective's CoT tasks read replies
FINAL = [
    (
        "Let's think step by step. The first image shows the door on the left, so the answer is probably A.\n"
        "But the second image shows the door on the right, so it is B.\nB",
        "B",
        "last_line:letter_only",
    ),
    ("Reasoning: the lamp is behind the bed, so the answer is A.\nOn reflection, the answer is C.", "C",
     "last_line:declared"),
    ("Final answer: A ... Final answer: C", "C", "last_line:final_answer"),
    ("The answer is B. Hmm, actually the answer is D.\n\n", "D", "last_line:declared"),
]  # fmt: skip


@pytest.mark.parametrize(("reply", "expected", "rule"), FINAL, ids=[f"final{i}" for i in range(len(FINAL))])
def test_chain_of_thought_replies_take_their_last_correction(reply, expected, rule):
    got = extract_choice_final(reply, LETTERS[:4])
    assert (got.value, got.reason) == (expected, rule)


# DORI's structured format: the JSON answer first, the robust rules after
JSON_FIRST = [
    (
        '```json\n{"answer": "A", "reasoning": "The car faces left."}\n```\nWait, the headlights face the camera.\n'
        '```json\n{"answer": "C", "reasoning": "It faces the camera."}\n```',
        "C",
        "json_answer",
    ),
    (
        '{"answer": "D", "reasoning": "The answer would be A if the object were upright, but it is rotated."}',
        "D",
        "json_answer",
    ),
]


@pytest.mark.parametrize(("reply", "expected", "rule"), JSON_FIRST, ids=["json_corrected", "json_hypothetical"])
def test_structured_replies_take_their_last_json_answer(reply, expected, rule):
    got = extract_choice_json_first(reply, LETTERS[:4])
    assert (got.value, got.reason) == (expected, rule)


# yes/no questions (ODI-Bench existence)
YES_NO = [
    ("The answer is yes. Wait, actually the answer is no.", "No"),
    ("Answer: No\nLooking at the right side of the panorama again, there is a bicycle. Answer: Yes", "Yes"),
    ("Final answer: No. (The answer is yes only if we count the reflection.)", "No"),
    ("<answer>Yes</answer> Hmm, the sign is a poster. <answer>No</answer>", "No"),
]


@pytest.mark.parametrize(("reply", "expected"), YES_NO, ids=[f"yes_no{i}" for i in range(len(YES_NO))])
def test_yes_no_replies_take_their_last_correction(reply, expected):
    assert extract_yes_no(reply).value == expected


def test_the_corpus_holds_at_least_thirty_replies_with_several_declarations():
    assert len(ROBUST) + len(FINAL) + len(JSON_FIRST) + len(YES_NO) >= 30


def test_an_empty_double_backtick_pair_does_not_hide_a_later_declaration():
    # "````" matches the double-backtick pattern with an empty inside: group 1 is "" and group 2 None; reading it
    # raised AttributeError, which the extract_choice wrapper turned into unparsed:error, losing the "B"
    reply = "````python\nx\n````\nThe answer is B."
    assert extract_choice_robust(reply, LETTERS[:4]) == extract_choice_robust("The answer is B.", LETTERS[:4])
    assert extract_choice_robust(reply, LETTERS[:4]).value == "B"


def test_an_option_past_the_sixteenth_letter_is_never_matched_and_never_raises():
    # 17 options: letters stop at P, so the 17th ("Q") cannot be named; before, matching its text raised IndexError
    options = [f"shelf {i}" for i in range(17)]
    assert extract_choice_robust("shelf 16", LETTERS, options).reason == "unparsed:no_answer"
    assert extract_choice_robust("shelf 3", LETTERS, options).value == "D"  # 0->A, 1->B, 2->C, 3->D
