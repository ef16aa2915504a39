"""Extraction edges (issue 37, cases mutation testing found unpinned): exact (value, reason) of yes/no, integers,
digit runs and direction terms, called directly (no wrapper), and the multiple-choice rules' corners."""

from __future__ import annotations

import pytest

from lmms_spatial.metrics.extraction import (
    Extraction,
    extract_choice_final,
    extract_choice_json_first,
    extract_choice_robust,
    extract_direction,
    extract_first_digits,
    extract_integer,
    extract_yes_no,
    first_tag_content,
    valid_letters,
)

VOCAB = ["front", "back", "left", "right", "front-left", "front-right", "back-left", "back-right"]


# --- yes / no ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("   ", Extraction(None, "unparsed:empty")),
        ("<answer>Yes</answer>", Extraction("Yes", "answer_tag")),
        ("<answer>yes or no</answer>", Extraction(None, "unparsed:answer_tag_without_yes_no")),
        ("The answer is **yes**.", Extraction("Yes", "declared")),
        ("Final answer: no", Extraction("No", "declared")),
        ("**No**, it is not.", Extraction("No", "leading_word")),
        ("Yes or No?", Extraction(None, "unparsed:conflict:yes_and_no")),
        ("I think so, yes.", Extraction("Yes", "only_yes_no_word")),
        ("It could be yes, it could be no.", Extraction(None, "unparsed:conflict:yes_and_no")),
        ("Maybe.", Extraction(None, "unparsed:no_answer")),
    ],
)
def test_yes_no_readings(reply, expected):
    assert extract_yes_no(reply) == expected


# --- integers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "which", "expected"),
    [
        ("There are 3 chairs.", "first", Extraction(3, "first_integer")),
        ("1 2 3", "last", Extraction(3, "last_integer")),
        (
            "<answer>2</answer> <answer>4</answer> <answer>6</answer> and 7",
            "first",
            Extraction(6, "first_integer_in_answer_tag"),
        ),
        ("1 " + "9" * 5000 + " 3", "last", Extraction(3, "last_integer")),
        ("no number", "first", Extraction(None, "unparsed:no_integer")),
        ("3 and " + "9" * 5000, "last", Extraction(None, "unparsed:integer_over_4000_digits")),
        ("3 and " + "9" * 5000, "first", Extraction(3, "first_integer")),
    ],
)
def test_integer_readings(reply, which, expected):
    assert extract_integer(reply, which=which) == expected


def test_an_integer_of_4001_digits_is_read_and_one_of_4002_is_not():
    # the run may carry a sign, so 4001 characters is the limit for a count (4000 digits and '-')
    assert extract_integer("9" * 4001).value == int("9" * 4001)
    assert extract_integer("9" * 4002) == Extraction(None, "unparsed:integer_over_4000_digits")


# --- the official first digit run ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("-2 chairs", Extraction(2, "first_digits")),  # no sign
        ("2.5", Extraction(2, "first_digits")),  # the first run only
        ("three", Extraction(None, "unparsed:no_digits")),  # no number words
        (
            "I see 5. <answer>1</answer> <answer>2</answer> <answer>3</answer>",
            Extraction(3, "first_digits_in_answer_tag"),
        ),
        ("9" * 4001, Extraction(None, "unparsed:digits_over_4000")),
        ("9" * 4000, Extraction(int("9" * 4000), "first_digits")),
    ],
)
def test_first_digits_readings(reply, expected):
    assert extract_first_digits(reply) == expected


# --- direction terms -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("front,left", Extraction("front-left", "direction_term")),  # punctuation separates words
        ("The storefront is on the left.", Extraction("left", "direction_term")),  # not inside a word
        ("A frontal view; it is on the left.", Extraction("left", "direction_term")),
        (
            "<answer>left</answer> <answer>front</answer> <answer>back right</answer>",
            Extraction("back-right", "direction_term_in_answer_tag"),
        ),
        ("up", Extraction(None, "unparsed:no_direction")),
        ("front, then left", Extraction(None, "unparsed:conflict:front/left")),
    ],
)
def test_direction_readings(reply, expected):
    assert extract_direction(reply, VOCAB) == expected


def test_conflicting_directions_of_equal_length_are_named_in_alphabetical_order():
    # the vocabulary is a set: its order changes with PYTHONHASHSEED, the reason must not
    assert extract_direction("right, or front?", VOCAB) == Extraction(None, "unparsed:conflict:front/right")
    assert extract_direction("back or left", VOCAB) == Extraction(None, "unparsed:conflict:back/left")


# --- what every extractor reads ----------------------------------------------------------------


class _Unprintable:
    def __str__(self):
        raise RuntimeError("no text")


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (None, Extraction(None, "unparsed:empty")),
        ([], Extraction(None, "unparsed:empty")),
        (["Yes", "No"], Extraction("Yes", "leading_word")),  # lmms-eval's one-element list: the first
        (_Unprintable(), Extraction(None, "unparsed:empty")),
    ],
)
def test_model_output_that_is_not_a_string(response, expected):
    assert extract_yes_no(response) == expected


def test_an_extraction_as_a_record_is_its_value_and_reason():
    assert Extraction("B", "declared").as_dict() == {"parsed": "B", "reason": "declared"}


def test_no_options_allow_no_letter():
    assert valid_letters(0) == "" and valid_letters(-3) == "" and valid_letters(20) == "ABCDEFGHIJKLMNOP"


def test_first_tag_content_can_ignore_case_and_starts_after_its_opening_tag():
    assert first_tag_content("<ANSWER> B </Answer>", "<answer>", "</answer>", ignore_case=True) == " B "
    assert first_tag_content("<ANSWER> B </Answer>", "<answer>", "</answer>") is None
    assert first_tag_content("</b> <b>x</b>", "<b>", "</b>") == "x"


# --- multiple choice, robust rules ---------------------------------------------------------------

ABCD = "ABCD"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<ANSWER>B</ANSWER>", Extraction("B", "answer_tag")),  # tags in any case
        ("<answer>maybe</answer>", Extraction(None, "unparsed:answer_tag_without_letter")),
        ("The answer is **B**.", Extraction("B", "declared")),  # markup around the letter
        ("**B**", Extraction("B", "letter_only")),
        ("It is B.", Extraction("B", "standalone_letter")),
        ("The answer is I think B.", Extraction("B", "declared")),  # "I think": a pronoun, not option I
        ("The answer is A bike.", Extraction(None, "unparsed:no_answer")),  # "A bike": an article
        # the head of a declaration ends before "because": what follows is reasoning, read only as a standalone letter
        ("The answer is I think so because I guess B", Extraction("B", "standalone_letter")),
        # a declaration is read up to 40 characters after its head: a letter further on is a standalone letter
        ("The answer is" + " -" * 25 + " B", Extraction("B", "standalone_letter")),
        # a declaration ends where the next one begins ("I'd pick" is a head, its negated letter rules C out)
        ("The answer is B or I'd pick not C.", Extraction("B", "declared")),
        # three declarations: the last naming a letter wins, each read up to the next
        ("The answer is A. No, the answer is B. The answer is", Extraction("B", "declared")),
        # a declaration is one line
        ("The answer is A\nor B\nok", Extraction("A", "declared")),
    ],
)
def test_robust_corners(reply, expected):
    assert extract_choice_robust(reply, ABCD) == expected


def test_an_answer_tag_whose_text_names_two_options_is_a_conflict_of_option_text():
    assert extract_choice_robust("<answer>left or right</answer>", "AB", ["left", "right"]) == Extraction(
        None, "unparsed:conflict:option_text"
    )


def test_option_text_is_compared_without_punctuation_or_case():
    assert extract_choice_robust("front left", "AB", ["Front-left", "Back-right"]) == Extraction(
        "A", "option_text_exact"
    )


def test_the_json_and_final_strategies_pass_the_option_texts_on():
    options = ["lamp", "desk"]
    assert extract_choice_json_first("It is the desk.", "AB", options) == Extraction("B", "option_text")
    assert extract_choice_final("Thinking...\nthe desk", "AB", options) == Extraction("B", "last_line:option_text")
    assert extract_choice_final("the desk, I think\n...", "AB", options) == Extraction("B", "option_text")
