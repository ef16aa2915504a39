"""Specification of the shared answer-extraction library (metrics/extraction.py)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmms_spatial.metrics.extraction import (
    LETTERS,
    extract_choice,
    extract_direction,
    extract_integer,
    extract_yes_no,
    first_tag_content,
    normalise_direction,
    tag_contents,
)


@pytest.mark.parametrize(
    "response, expected",
    [
        ("``B``", "B"),
        ("`C`", "C"),
        ("(B)", "B"),
        ("B", "B"),
        ("B.", "B"),
        ("Answer: B", "B"),
        ("answer: b", "B"),
        ("The answer is B because the chair is closer.", "B"),
        ('{"answer": "D", "reasoning": "the cup faces left"}', "D"),
        ("<think>A looks wrong</think><answer>C</answer>", "C"),
        ("**Answer:** (A)", "A"),
        ("The correct option is C.", "C"),
        ("Final answer: \\boxed{D}", "D"),
        ("B. The sofa is left of the table.", "B"),
    ],
)
def test_robust_reads_every_declared_form(response, expected):
    got = extract_choice(response, n_options=4)
    assert got.value == expected, got


def test_robust_takes_the_last_declaration_after_reasoning():
    text = "Option A seems plausible, but the answer is A only if... Re-checking: the answer is C."
    assert extract_choice(text, n_options=4).value == "C"


def test_robust_never_reads_a_letter_out_of_an_ordinary_word():
    assert extract_choice("The chair is closer to the window.", n_options=16).value is None
    assert extract_choice("A bike is parked next to the car.", n_options=4).value is None
    assert extract_choice("The answer is a bike.", n_options=4).value is None


def test_robust_returns_none_when_two_answers_are_declared():
    got = extract_choice("The answer is A or B.", n_options=4)
    assert got.value is None
    assert got.reason.startswith("unparsed:conflict")


def test_robust_returns_none_when_nothing_is_declared():
    got = extract_choice("I cannot tell from these images.", n_options=4)
    assert got.value is None and got.reason == "unparsed:no_answer"


def test_robust_matches_the_text_of_exactly_one_option():
    options = ["front left", "left", "behind", "Cannot be determined"]
    assert extract_choice("It is front left of the camera", options=options).value == "A"
    assert extract_choice("behind", options=options).value == "C"


def test_letter_outside_the_options_is_rejected_with_a_reason():
    got = extract_choice("Answer: E", n_options=4)
    assert got.value is None and "out_of_range" in got.reason


def test_letters_up_to_p_are_accepted_for_sixteen_options():
    assert extract_choice("Answer: P", n_options=16).value == "P"
    assert extract_choice("Answer: P", n_options=15).value is None


def test_every_extraction_carries_its_reason():
    assert extract_choice("``B``", n_options=4).reason == "backticks"
    assert extract_choice("B", n_options=4).reason == "letter_only"


@pytest.mark.parametrize(
    "response, expected",
    [
        ("``B``", "B"),
        ("The answer is `C`.", "C"),
        ("B", "B"),
        ("A bike is on the left.", None),
        ("The answer is (B)", "B"),
        ("the answer is b", None),  # official rule is case-sensitive
        ("E", None),
    ],
)
def test_mmsi_official_strategy_matches_vlmevalkit(response, expected):
    assert extract_choice(response, n_options=4, strategy="mmsi_official").value == expected


def test_json_strategy_prefers_the_structured_answer_over_prose():
    text = 'The answer is A? No. {"answer": "C", "reasoning": "rotated 90 degrees"}'
    got = extract_choice(text, n_options=4, strategy="json_then_robust")
    assert (got.value, got.reason) == ("C", "json_answer")


def test_unknown_strategy_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown choice strategy"):
        extract_choice("A", strategy="nope")


@pytest.mark.parametrize(
    "response, expected",
    [("Yes", "Yes"), ("no.", "No"), ("Answer: No", "No"), ("<answer>yes</answer>", "Yes"),
     ("Yes and no", None), ("I don't know", None), ("Nobody is there", None)],
)  # fmt: skip
def test_yes_no(response, expected):
    assert extract_yes_no(response).value == expected


def test_integer_takes_the_first_integer_or_number_word():
    assert extract_integer("There are 3 chairs and 2 tables").value == 3
    assert extract_integer("three chairs").value == 3
    assert extract_integer("There are 3 chairs and 2 tables", which="last").value == 2
    assert extract_integer("none visible").value is None


def test_direction_normalises_hyphens_and_spaces():
    assert normalise_direction("Front Left") == "front-left"
    vocab = ["front", "back", "left", "right", "front-left", "front-right", "back-left", "back-right"]
    assert extract_direction("It is at the front left.", vocab).value == "front-left"
    assert extract_direction("front_right", vocab).value == "front-right"
    assert extract_direction("left or right", vocab).value is None


@settings(max_examples=400, deadline=None)
@given(text=st.text(max_size=300), n=st.integers(min_value=1, max_value=16))
def test_choice_extractors_never_raise_and_stay_inside_the_options(text, n):
    for strategy in ("robust", "mmsi_official", "json_then_robust"):
        got = extract_choice(text, n_options=n, strategy=strategy)
        assert got.value is None or got.value in LETTERS[:n]
        assert isinstance(got.reason, str) and got.reason


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80),
    options=st.lists(st.text(min_size=1, max_size=20), min_size=2, max_size=6),
)
def test_choice_with_option_texts_never_raises(prefix, options):
    got = extract_choice(prefix, options=options)
    assert got.value is None or got.value in LETTERS[: len(options)]


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_other_extractors_never_raise(text):
    assert extract_yes_no(text).value in (None, "Yes", "No")
    value = extract_integer(text).value
    assert value is None or isinstance(value, int)
    assert extract_direction(text, ["left", "right"]).value in (None, "left", "right")


@pytest.mark.parametrize("reply", ["A or B", "Either A or B.", "B/C", "maybe A and C"])
def test_a_hedged_pair_of_letters_is_unparsed_not_the_last_letter(reply):
    result = extract_choice(reply, n_options=4)
    assert result.value is None and result.reason.startswith("unparsed:conflict:")


@pytest.mark.parametrize("strategy", ["robust", "final", "json_then_robust"])
@pytest.mark.parametrize(
    ("response", "expected"), [("c", "C"), ("(c)", "C"), ("c.", "C"), ("Ｃ", "C"), ("（Ｂ）", "B")]
)
def test_a_lower_case_or_full_width_letter_alone_is_read_by_the_free_form_strategies(strategy, response, expected):
    result = extract_choice(response, n_options=4, strategy=strategy)
    assert result.value == expected


def test_mmsi_official_keeps_its_case_sensitive_rule():
    assert extract_choice("c", n_options=4, strategy="mmsi_official").value is None
    assert extract_choice("Ｃ", n_options=4, strategy="mmsi_official").value is None


def test_tag_contents_pairs_each_opening_tag_with_the_next_closing_tag():
    text = "<answer>A</answer> x <ANSWER>b</Answer> <answer>never closed"
    assert tag_contents(text, "<answer>", "</answer>") == ["A"]
    assert tag_contents(text, "<answer>", "</answer>", ignore_case=True) == ["A", "b"]
    assert first_tag_content("no tags", "<answer>", "</answer>") is None


HOSTILE_REPLIES = {
    "unclosed answer tags": "<answer>" * 100_000,
    "unclosed backtick and spaces": "` " + " " * 200_000 + "x",
    "spaces before because": "answer: " + " " * 200_000 + "x",
    "digits": "9" * 100_000,
    "braces": "{" * 200_000,
    "lone surrogate": "\ud800 B",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_REPLIES))
def test_hostile_replies_are_parsed_without_raising(name):
    reply = HOSTILE_REPLIES[name]
    for strategy in ("robust", "final", "json_then_robust", "mmsi_official"):
        assert extract_choice(reply, n_options=4, strategy=strategy).reason
    assert extract_yes_no(reply).reason and extract_direction(reply, ["left", "front left"]).reason
    assert extract_integer(reply).reason


def test_a_digit_run_past_pythons_limit_is_reported_not_converted():
    assert extract_integer("9" * 5000).reason == "unparsed:integer_over_4000_digits"
    assert extract_integer("12 then " + "9" * 5000).value == 12
