"""Judge rubrics (issue 37): exact verdicts of the parsers and rule-based fallbacks, their thresholds and reasons.

Every expected :class:`Judgement` is written out whole (score, reason, label, details): the reason is what a
samples file shows for the score. Unparseable replies raise :class:`UnparsedReply` (what the judge layer does with
them is the judge layer's business, not pinned here).
"""

from __future__ import annotations

import pytest

from lmms_spatial.metrics.rubrics import _text, get_rubric
from lmms_spatial.metrics.rubrics.base import Judgement, UnparsedReply, extract_json_object
from lmms_spatial.metrics.rubrics.mmsi_diagnosis import normalise_label
from lmms_spatial.metrics.rubrics.osr_negative import official_answer

ODI = get_rubric("odi_open")
OSR = get_rubric("osr_negative")
MCQ = get_rubric("mcq_extract")
DIAG = get_rubric("mmsi_diagnosis")


def odi_item(task, truth, response, question="Q?"):
    return {"task": task, "question": question, "answer_text": truth, "response": response}


# --- shared text rules -------------------------------------------------------------------------


def test_words_are_made_singular_by_the_suffix_rules():
    text = "benches dishes boxes glasses chairs bus axes table glass dresses"
    # -ches/-shes/-xes/-sses lose "es" past 4 letters; otherwise a final s (not ss) goes past 3 letters
    assert _text.words(text) == ["bench", "dish", "box", "glass", "chair", "bus", "axe", "table", "glass", "dress"]


def test_none_is_a_word_not_a_zero_and_number_words_become_digits():
    assert _text.words("none of the three") == ["none", "of", "the", "3"]


def test_content_words_drop_the_stopwords():
    assert _text.content_words("The red chair is in the image") == {"red", "chair"}


def test_first_yes_no_is_lower_case():
    assert _text.first_yes_no("Well, YES it is.") == "yes"


def test_a_4000_digit_count_is_read_and_a_4001_digit_one_is_not():
    assert _text.first_integer("9" * 4000) == int("9" * 4000)
    assert _text.first_integer("9" * 4001) is None


# --- lenient JSON and answer tags ---------------------------------------------------------------


def test_json_object_is_read_when_text_follows_it():
    assert extract_json_object('Verdict: {"score": 1}. Done.') == {"score": 1}


def test_json_with_a_line_comment_and_a_trailing_comma_is_read():
    assert extract_json_object('{"score": 1, # 0 or 1\n "confidence": "high",}') == {"score": 1, "confidence": "high"}


def test_an_earlier_object_is_read_when_the_last_braces_hold_no_json():
    assert extract_json_object('{"score": 0} then {not json}') == {"score": 0}


def test_no_json_object_says_so():
    with pytest.raises(UnparsedReply, match=r"^no JSON object in the reply$"):
        extract_json_object("{not json} and [1, 2]")


def test_the_osr_judge_sees_the_first_lower_case_answer_span_as_the_official_evaluator_does():
    # OSR-Bench-code llm_evaluator.py: re.search(r'<answer>(.*?)</answer>', response, re.DOTALL) -> group(1).strip()
    assert official_answer("<answer> left </answer> ... <answer>right</answer>") == "left"
    assert official_answer("<Answer> left </Answer>") == "<Answer> left </Answer>"  # case-sensitive there
    assert official_answer("<answer>\n front \n</answer>") == "front"  # DOTALL: the span crosses lines
    assert official_answer("only <answer> opened") == "only <answer> opened"
    assert official_answer("no tags here") == "no tags here"


# --- ODI open-ended: the parser ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("1.0 (the prediction names 2 chairs)", 1.0),  # the leading number, although two numbers occur
        ("I would say 0.5", 0.5),  # the only number
        ("2 chairs; correctness: 1", 1.0),  # the leading 2 is off the scale: the labelled one is read
        ("`1` (2 chairs)", 1.0),  # backticks around the leading number
    ],
)
def test_odi_parser_candidates(reply, score):
    assert ODI.parse_reply(reply, odi_item("ocr", "x", "y")) == Judgement(score, f"judge_score_{score:g}")


def test_odi_parser_refuses_half_credit_for_a_strict_task_with_a_reason():
    with pytest.raises(UnparsedReply, match=r"^0\.5 is not allowed for counting / existence$"):
        ODI.parse_reply("0.5", odi_item("existence", "Yes", "yes"))


def test_odi_parser_quotes_at_most_80_characters_of_a_reply_it_cannot_read():
    reply = "The prediction is mostly right " * 5
    message = f"no correctness score in {{0, 0.5, 1}} in reply {' '.join(reply.split())[:80]!r}"
    with pytest.raises(UnparsedReply) as raised:
        ODI.parse_reply(reply, odi_item("ocr", "x", "y"))
    assert str(raised.value) == message


# --- ODI open-ended: the fallback --------------------------------------------------------------


def test_attribute_recall_of_exactly_0_8_is_full_credit():
    # ground truth content words {red, wooden, chair, leg, cushion}; the response has 4 of 5: recall 0.8
    verdict = ODI.fallback(odi_item("object_attribute", "red wooden chair legs cushion", "a red wooden chair leg"))
    assert verdict == Judgement(1.0, "fallback_overlap_full", details={"content_recall": 0.8})


def test_attribute_recall_of_exactly_0_5_is_half_credit():
    verdict = ODI.fallback(odi_item("object_attribute", "red chair", "it is red"))  # 1 of {red, chair}
    assert verdict == Judgement(0.5, "fallback_overlap_partial", details={"content_recall": 0.5})


def test_attribute_recall_below_half_is_no_credit_rounded_to_4_places():
    # 1 of {red, wooden, chair}: 0.33333 -> 0.3333
    verdict = ODI.fallback(odi_item("object_attribute", "red wooden chair", "something red"))
    assert verdict == Judgement(0.0, "fallback_overlap_low", details={"content_recall": 0.3333})


def test_attribute_ground_truth_of_stopwords_only_compares_those_words():
    # "in the picture": every word a stopword, so recall is over {in, the, picture}: 3 of 3
    verdict = ODI.fallback(odi_item("object_attribute", "in the picture", "it is in the picture"))
    assert verdict == Judgement(1.0, "fallback_overlap_full", details={"content_recall": 1.0})


@pytest.mark.parametrize("task", ["object_attribute", "ocr", "counting", "existence"])
def test_a_ground_truth_without_words_is_unparsed(task):
    assert ODI.fallback(odi_item(task, "?!", "yes 3 red")) == Judgement(0.0, "fallback_unparsed_ground_truth")


def test_existence_fallback_verdicts():
    assert ODI.fallback(odi_item("existence", "Yes", "Yes, there is.")) == Judgement(1.0, "fallback_yes_no_match")
    assert ODI.fallback(odi_item("existence", "Yes", "No.")) == Judgement(0.0, "fallback_yes_no_mismatch")
    assert ODI.fallback(odi_item("existence", "Yes", "Hard to say.")) == Judgement(
        0.0, "fallback_no_yes_no_in_response"
    )


def test_counting_fallback_verdicts_carry_the_count_read():
    assert ODI.fallback(odi_item("counting", "4", "four")) == Judgement(
        1.0, "fallback_count_match", details={"pred": 4}
    )
    assert ODI.fallback(odi_item("counting", "4", "5")) == Judgement(
        0.0, "fallback_count_mismatch", details={"pred": 5}
    )
    assert ODI.fallback(odi_item("counting", "4", "many")) == Judgement(0.0, "fallback_no_integer_in_response")


def test_ocr_fallback_edges():
    # two words, neither present: no credit (not "the right words in the wrong order")
    assert ODI.fallback(odi_item("ocr", "COFFEE SHOP", "TEA HOUSE")).score == 0.0
    # the characters of two words scrambled into one response word: half credit
    assert ODI.fallback(odi_item("ocr", "AB CD", "it says dcba")) == Judgement(
        0.5, "fallback_ocr_characters_wrong_order"
    )
    # a two-character ground truth in the wrong order: half credit
    assert ODI.fallback(odi_item("ocr", "NO", "on")) == Judgement(0.5, "fallback_ocr_characters_wrong_order")


def test_a_pipe_in_the_items_fields_does_not_break_the_prompt_table():
    content = ODI.build_messages(odi_item("ocr", "A|B", "it | says", "What | is written?"))[0]["content"]
    table = content.split("\n\n", 1)[1].splitlines()
    assert table == [
        "Question | Ground truth | Prediction | Correctness",
        "--- | --- | --- | ---",
        'What is written on the sign above the door? | EXIT ONLY | The sign says "EXIT ONLY". | 1.0',
        'What is written on the sign above the door? | EXIT ONLY | It reads "ONLY EXIT". | 0.5',
        'What is written on the sign above the door? | EXIT ONLY | The sign says "ENTRANCE". | 0.0',
        "What / is written? | A/B | it / says | ",
    ]


# --- OSR negative sampling ---------------------------------------------------------------------

NOT_FOUND = "The positioning object is not found in the picture."
NOT_UNIQUE = "The positioning object is not unique in the picture."


def osr_item(skill, truth, response):
    return {"skill": skill, "question": "Q?", "answer": truth, "response": response}


def test_a_special_answer_restated_without_its_full_stop_and_in_capitals_is_exact():
    verdict = OSR.fallback(
        osr_item("relative_distance", NOT_FOUND, "THE POSITIONING OBJECT IS NOT FOUND IN THE PICTURE")
    )
    assert verdict == Judgement(1.0, "fallback_special_exact")


def test_special_answer_verdicts_name_what_the_response_stated():
    assert OSR.fallback(osr_item("relative_distance", NOT_UNIQUE, "There are several.")) == Judgement(
        1.0, "fallback_states_not_unique"
    )
    assert OSR.fallback(osr_item("relative_distance", NOT_UNIQUE, "The chair.")) == Judgement(
        0.0, "fallback_missed_not_unique"
    )
    assert OSR.fallback(osr_item("relative_distance", NOT_FOUND, "I cannot find it.")) == Judgement(
        1.0, "fallback_states_not_found"
    )
    assert OSR.fallback(osr_item("relative_distance", NOT_FOUND, "The chair.")) == Judgement(
        0.0, "fallback_missed_not_found"
    )


def test_an_ordinary_answer_is_scored_by_the_official_rules_and_says_which():
    verdict = OSR.fallback(osr_item("relative_direction", "Front Left", "<answer>front left</answer>"))
    assert verdict == Judgement(1.0, "fallback_exact_match", details={"parsed": "front-left"})
    counting = OSR.fallback(osr_item("object_counting", "4", "2 chairs"))
    assert counting == Judgement(0.5, "fallback_first_digits", details={"parsed": 2})


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        (
            '{"score": 1, "confidence": "high"}',
            Judgement(1.0, "judge_score_1_confidence_high", details={"confidence": "high"}),
        ),
        ('{"score": 0}', Judgement(0.0, "judge_score_0", details={"confidence": None})),
        ("score: 0", Judgement(0.0, "judge_score_0", details={"confidence": None})),
        (
            "score: 1, confidence: medium",
            Judgement(1.0, "judge_score_1_confidence_middle", details={"confidence": "middle"}),
        ),
    ],
)
def test_osr_parser_verdicts_and_reasons(reply, verdict):
    assert OSR.parse_reply(reply) == verdict


@pytest.mark.parametrize(("reply", "message"), [('{"score": "yes"}', "score 'yes' is not 0 or 1"),
                                                ('{"score": 0.5}', "score 0.5 is not 0 or 1")])  # fmt: skip
def test_osr_parser_names_a_score_off_the_scale(reply, message):
    with pytest.raises(UnparsedReply, match=f"^{message}$"):
        OSR.parse_reply(reply)


# --- MMSI diagnosis ----------------------------------------------------------------------------


def test_diagnosis_labels_are_normalised_through_markup_and_plurals():
    assert normalise_label("**Grounding**") == "grounding"
    assert normalise_label("  Spatial-logic errors. ") == "spatial_logic"


def test_diagnosis_verdict_carries_the_explanation_and_a_missing_one_is_empty():
    reply = '{"label": "grounding", "explanation": " misread the sign "}'
    assert DIAG.parse_reply(reply) == Judgement(0.0, "judge_grounding", label="grounding",
                                                details={"explanation": "misread the sign"})  # fmt: skip
    assert DIAG.parse_reply('{"label": "correct"}') == Judgement(
        1.0, "judge_correct_reasoning", label="correct_reasoning", details={"explanation": ""}
    )
    assert DIAG.parse_reply("`spatial_logic`.") == Judgement(
        0.0, "judge_spatial_logic", label="spatial_logic", details={"explanation": ""}
    )


def test_diagnosis_json_without_a_label_is_unparsed_with_the_labels_named():
    with pytest.raises(UnparsedReply, match=r"^no label among \('correct_reasoning', 'grounding'"):
        DIAG.parse_reply('{"explanation": "none given"}')


def test_diagnosis_fallback_is_undiagnosed_with_its_reason():
    item = {"question": "q", "answer": "A", "thought": "t", "response": "r"}
    assert DIAG.fallback(item) == Judgement(0.0, "fallback_undiagnosed", label="undiagnosed")


def test_diagnosis_messages_are_a_system_role_then_the_user_fields():
    item = {"question": " Which? ", "answer": " B ", "thought": " because ", "response": " A "}
    system, user = DIAG.build_messages(item)
    assert system["role"] == "system" and system["content"].startswith("You are an expert in 3D vision")
    assert user["role"] == "user"
    assert (
        "Question:\nWhich?\n\nCorrect answer: B\n\nHuman reference reasoning:\nbecause\n\nModel response:\nA\n"
        in (user["content"])
    )


# --- MCQ extraction ----------------------------------------------------------------------------


def test_mcq_letters_follow_the_options_then_n_options_then_four_and_never_fewer_than_one():
    from lmms_spatial.metrics.rubrics.mcq_extract import allowed_letters

    assert allowed_letters({"options": ["a", "b"], "n_options": 5}) == "AB"
    assert allowed_letters({"n_options": 3}) == "ABC"
    assert allowed_letters({}) == "ABCD"
    assert allowed_letters({"n_options": 1}) == "A"


def test_mcq_prompt_says_where_the_options_are_and_joins_option_whitespace():
    listed = MCQ.build_messages({"question": "Q?", "response": "r"})
    assert listed[0]["role"] == "user" and "Options: (listed in the question)\n" in listed[0]["content"]
    spaced = MCQ.build_messages({"question": "Q?", "response": "r", "options": ["teddy   bear", "cat"]})
    assert "Options: A. teddy bear B. cat\n" in spaced[0]["content"]


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("`None`.", Judgement(0.0, "judge_no_option")),
        ("Z", Judgement(0.0, "judge_no_option")),
        ("B", Judgement(1.0, "judge_letter_B", label="B")),
    ],
)
def test_mcq_parser_verdicts(reply, verdict):
    assert MCQ.parse_reply(reply, {"options": ["a", "b", "c"]}) == verdict


def test_mcq_parser_says_why_it_refuses():
    with pytest.raises(UnparsedReply, match=r"^no single option letter in the reply$"):
        MCQ.parse_reply("maybe the first", {"options": ["a", "b"]})
    with pytest.raises(UnparsedReply, match=r"^letter C is not one of AB$"):
        MCQ.parse_reply("C", {"options": ["a", "b"]})


def test_mcq_fallback_reads_option_text_and_bounds_letters_by_n_options():
    by_text = MCQ.fallback({"question": "q", "response": "It is the desk.", "options": ["lamp", "desk"]})
    assert by_text == Judgement(1.0, "fallback_option_text", label="B")
    bounded = MCQ.fallback({"question": "q", "response": "The answer is C.", "n_options": 2})
    assert bounded == Judgement(0.0, "fallback_unparsed:out_of_range:declared:C")
    nothing = MCQ.fallback({"question": "q", "response": "no idea", "options": ["lamp", "desk"]})
    assert nothing == Judgement(0.0, "fallback_unparsed:no_answer")


# --- directions on the compass and the clock ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("1:30 o'clock", (45.0, "1:30 o'clock")),  # 1 h = 30 degrees, 30 min = 15 degrees
        ("at 10:30 o'clock", (315.0, "10:30 o'clock")),
        ("3 o'clock", (90.0, "3 o'clock")),
        ("at 3 o\u2019clock", (90.0, "3 o'clock")),  # a typographic apostrophe
        ("left, no: 3 o'clock", (270.0, "left")),  # the first direction named wins
        ("Front; left", (315.0, "front-left")),  # punctuation between the words
    ],
)
def test_direction_degrees(text, found):
    assert _text.direction_degrees(text) == found


@pytest.mark.parametrize(
    ("response", "verdict"),
    [
        ("At 1:32 o'clock.", Judgement(0.0, "fallback_direction_wrong",
                                        details={"ground_truth_term": "front", "response_term": "1:32 o'clock",
                                                 "degrees_off": 46.0})),  # 46 degrees: beyond 45
        ("At 12:02 o'clock.", Judgement(0.5, "fallback_direction_within_45",
                                         details={"ground_truth_term": "front", "response_term": "12:02 o'clock",
                                                  "degrees_off": 1.0})),  # 1 degree off is not exact
        ("Straight ahead.", Judgement(1.0, "fallback_direction_exact",
                                      details={"ground_truth_term": "front", "response_term": "front",
                                               "degrees_off": 0.0})),
        ("Nowhere.", Judgement(0.0, "fallback_no_direction_in_response")),
    ],
)  # fmt: skip
def test_direction_fallback_verdicts(response, verdict):
    assert ODI.fallback(odi_item("egocentric_view_orientation", "front", response)) == verdict


def test_a_direction_ground_truth_without_a_direction_is_unparsed():
    verdict = ODI.fallback(odi_item("relative_direction", "somewhere", "left"))
    assert verdict == Judgement(0.0, "fallback_unparsed_ground_truth")


def test_an_empty_response_is_the_fallbacks_zero_with_its_reason():
    assert ODI.fallback(odi_item("ocr", "EXIT", " \n")) == Judgement(0.0, "fallback_empty_response")


@pytest.mark.parametrize(
    ("task", "family"),
    [("Egocentric View Orientation", "direction"), ("relative-direction", "direction"), (" Counting ", "strict")],
)
def test_task_families_read_any_spelling(task, family):
    from lmms_spatial.metrics.rubrics.odi_open import task_family

    assert task_family(task) == family


def test_model_output_is_text_whatever_lmms_eval_hands_over():
    from lmms_spatial.metrics.rubrics.base import as_text

    assert as_text(None) == "" and as_text([]) == "" and as_text(["a", "b"]) == "a"
    assert as_text(("x",)) == "x" and as_text(3) == "3"


def test_attribute_recall_is_over_content_words_when_the_truth_has_any():
    # content {red, chair}: both in the response (recall 1); over every word {the, red, chair} it would be 2/3
    verdict = ODI.fallback(odi_item("object_attribute", "the red chair", "a red chair"))
    assert verdict == Judgement(1.0, "fallback_overlap_full", details={"content_recall": 1.0})


def test_odi_parser_does_not_read_a_number_glued_to_letters():
    with pytest.raises(UnparsedReply):
        ODI.parse_reply("X0.5X", odi_item("ocr", "x", "y"))


def test_nested_json_is_read_whole_and_the_last_parseable_object_wins():
    assert extract_json_object('{"label": "x", "details": {"a": 1}}') == {"label": "x", "details": {"a": 1}}
    assert extract_json_object('{"a": 1} then {"b": 2} then {broken}') == {"b": 2}


def test_mcq_none_with_more_text_is_not_none():
    with pytest.raises(UnparsedReply):
        MCQ.parse_reply("None X", {"options": ["a", "b"]})
