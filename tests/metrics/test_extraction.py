"""Specification of the shared answer-extraction library (metrics/extraction.py).

The multiple-choice strategies are called directly, with the question's ``allowed`` letters, and
checked for their exact (value, reason): ``extract_choice`` turns any exception into
``unparsed:error:...`` and drops out-of-range letters itself, so a test through it alone would pass
for a strategy that raises on every input. The wrapper's own contract has tests of its own below.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmms_spatial.metrics import extraction
from lmms_spatial.metrics.extraction import (
    CHOICE_STRATEGIES,
    LETTERS,
    extract_choice,
    extract_choice_final,
    extract_choice_json_first,
    extract_choice_mmsi_official,
    extract_choice_robust,
    extract_direction,
    extract_integer,
    extract_yes_no,
    first_tag_content,
    normalise_direction,
    tag_contents,
)

ABCD = "ABCD"
# the four strategies, by the names the task YAMLs use
STRATEGIES = {
    "robust": extract_choice_robust,
    "mmsi_official": extract_choice_mmsi_official,
    "json_then_robust": extract_choice_json_first,
    "final": extract_choice_final,
}


def got(strategy, response, allowed=ABCD, options=None):
    """(value, reason) of one strategy, called directly: an exception fails the test."""
    result = strategy(response, allowed, options)
    return result.value, result.reason


def test_the_strategy_names_are_the_four_strategies():
    assert CHOICE_STRATEGIES == STRATEGIES


# -- robust -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("``B``", ("B", "backticks")),
        ("`C`", ("C", "backticks")),
        ("(B)", ("B", "letter_only")),
        ("B", ("B", "letter_only")),
        ("B.", ("B", "letter_only")),
        ("Answer: B", ("B", "declared")),
        ("answer: b", ("B", "declared")),  # lower case, then the end of the reply: a declared letter
        ("The answer is B because the chair is closer.", ("B", "declared")),  # the head before "because"
        ('{"answer": "D", "reasoning": "the cup faces left"}', ("D", "json_answer")),
        ("<think>A looks wrong</think><answer>C</answer>", ("C", "answer_tag")),
        ("**Answer:** (A)", ("A", "declared")),  # markdown stripped from the declaration
        ("The correct option is C.", ("C", "declared")),
        ("Final answer: \\boxed{D}", ("D", "boxed")),  # boxed is tried before "final answer"
        ("B. The sofa is left of the table.", ("B", "leading_letter")),
    ],
)
def test_robust_reads_every_declared_form(response, expected):
    assert got(extract_choice_robust, response) == expected


# the first declaration ("the answer is A only if...") reads "A" as an article; the last one decides
# (issue 37 item 1: before, C came only from the stand-alone-letter fallback, never through the rule)
def test_robust_takes_the_last_declaration_after_reasoning():
    text = "Option A seems plausible, but the answer is A only if... Re-checking: the answer is C."
    assert got(extract_choice_robust, text) == ("C", "declared")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"answer": "A"} on second thought {"answer": "C"}', ("C", "json_answer")),
        ("\\boxed{A} is wrong, so \\boxed{C}", ("C", "boxed")),
    ],
)
def test_the_last_of_several_json_or_boxed_declarations_wins(reply, expected):
    # (the rule of issue 37 item 1)
    assert got(extract_choice_robust, reply) == expected


@pytest.mark.parametrize(
    ("response", "allowed"),
    [
        ("The chair is closer to the window.", LETTERS),  # T is not an option letter, C, h, ... are in words
        ("A bike is parked next to the car.", ABCD),  # "A bike": an article
        ("The answer is a bike.", ABCD),  # a lower-case "a" before a word is not a declared letter
        ("I cannot tell from these images.", ABCD),  # "I cannot": a pronoun
    ],
)
def test_robust_never_reads_a_letter_out_of_an_ordinary_word(response, allowed):
    assert got(extract_choice_robust, response, allowed) == (None, "unparsed:no_answer")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("The answer is A or B.", "unparsed:conflict:declared:A/B"),  # one declaration naming two letters
        ("A or B", "unparsed:conflict:A/B"),  # a hedged pair anywhere in the reply
        ("Either A or B.", "unparsed:conflict:A/B"),
        ("B/C", "unparsed:conflict:B/C"),
        ("maybe A and C", "unparsed:conflict:A/C"),
    ],
)
def test_a_hedged_pair_of_letters_is_unparsed_not_the_last_letter(reply, reason):
    assert got(extract_choice_robust, reply) == (None, reason)


def test_robust_matches_the_text_of_exactly_one_option():
    options = ["front left", "left", "behind", "Cannot be determined"]
    # "left" is inside "front left": only the longer option counts
    assert got(extract_choice_robust, "It is front left of the camera", options=options) == ("A", "option_text")
    assert got(extract_choice_robust, "behind", options=options) == ("C", "option_text_exact")
    assert got(extract_choice_robust, "<answer>behind</answer>", options=options) == (
        "C",
        "answer_tag+option_text_exact",
    )
    assert got(extract_choice_robust, "behind or left", options=options) == (None, "unparsed:conflict:option_text")


@pytest.mark.parametrize(
    ("reply", "allowed", "expected"),
    [
        ("Answer: E", ABCD, (None, "unparsed:out_of_range:declared:E")),
        ("E", ABCD, (None, "unparsed:out_of_range:letter_only:E")),
        ("<answer>E</answer>", ABCD, (None, "unparsed:out_of_range:answer_tag:E")),
        ("Answer: P", LETTERS, ("P", "declared")),  # DORI: up to 16 options, A-P
        ("Answer: P", LETTERS[:15], (None, "unparsed:out_of_range:declared:P")),
    ],
)
def test_a_letter_outside_the_options_is_rejected_with_its_rule(reply, allowed, expected):
    assert got(extract_choice_robust, reply, allowed) == expected


@pytest.mark.parametrize("strategy", ["robust", "final", "json_then_robust"])
@pytest.mark.parametrize(
    ("response", "value", "rule"),
    [
        ("c", "C", "lower_case_letter_only"),
        ("(c)", "C", "lower_case_letter_only"),
        ("c.", "C", "lower_case_letter_only"),
        ("Ｃ", "C", "letter_only"),  # full-width: NFKC makes it C
        ("（Ｂ）", "B", "letter_only"),
    ],
)
def test_a_lower_case_or_full_width_letter_alone_is_read_by_the_free_form_strategies(strategy, response, value, rule):
    reason = f"last_line:{rule}" if strategy == "final" else rule  # final reads the last line first
    assert got(STRATEGIES[strategy], response) == (value, reason)


# -- the official MMSI-Bench rule -------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("``B``", ("B", "official:double_backticks")),
        ("The answer is `C`.", ("C", "official:backticks")),
        ("B", ("B", "official:letter")),
        ("A bike is on the left.", (None, "unparsed:official:no_letter")),  # \b[A-D]\b(?!\s[a-zA-Z])
        ("The answer is (B)", ("B", "official:letter")),
        ("the answer is b", (None, "unparsed:official:no_letter")),  # the official rule is case-sensitive
        ("E", (None, "unparsed:official:no_letter")),  # [A-D] only
        ("Option `A` or ``D``", ("D", "official:double_backticks")),  # double backticks are looked for first
        ("A and then B", ("B", "official:letter")),  # "A and": A followed by a word; B is the first match
    ],
)
def test_mmsi_official_strategy_matches_vlmevalkit(response, expected):
    assert got(extract_choice_mmsi_official, response) == expected


@pytest.mark.parametrize("response", ["c", "(c)", "Ｃ"])  # no upper-casing, no NFKC in the official code
def test_mmsi_official_keeps_its_case_sensitive_rule(response):
    assert got(extract_choice_mmsi_official, response) == (None, "unparsed:official:no_letter")


def test_mmsi_official_rejects_a_letter_past_the_questions_options():
    assert got(extract_choice_mmsi_official, "D", "ABC") == (None, "unparsed:out_of_range:official:D")


# -- json first, final line first ------------------------------------------------------------


def test_json_strategy_prefers_the_structured_answer_over_prose():
    text = 'The answer is A? No. {"answer": "C", "reasoning": "rotated 90 degrees"}'
    assert got(extract_choice_json_first, text) == ("C", "json_answer")
    assert got(extract_choice_json_first, "The answer is B.") == ("B", "declared")  # no JSON: the robust rules


def test_final_strategy_reads_the_last_line_before_the_whole_reply():
    assert got(extract_choice_final, "A is tempting.\nThe answer is C.") == ("C", "last_line:declared")
    # the last line names nothing: the whole reply is read ("I hope" is a pronoun, not a letter)
    assert got(extract_choice_final, "The answer is B.\n\nI hope this helps") == ("B", "declared")


# -- the wrapper ----------------------------------------------------------------------------


def test_every_extraction_carries_its_reason_through_the_wrapper():
    assert (extract_choice("``B``", n_options=4).value, extract_choice("``B``", n_options=4).reason) == (
        "B",
        "backticks",
    )
    result = extract_choice("D", n_options=4, strategy="mmsi_official")
    assert (result.value, result.reason) == ("D", "official:letter")


def test_the_wrapper_turns_an_exception_into_an_unparsed_answer(monkeypatch):
    def broken(response, allowed, options):
        raise RuntimeError("bug")

    monkeypatch.setitem(extraction.CHOICE_STRATEGIES, "robust", broken)
    result = extract_choice("B", n_options=4)
    assert (result.value, result.reason) == (None, "unparsed:error:RuntimeError")


def test_the_wrapper_drops_a_letter_outside_the_options(monkeypatch):
    monkeypatch.setitem(extraction.CHOICE_STRATEGIES, "robust", lambda r, a, o: extraction.Extraction("E", "rule"))
    result = extract_choice("E", n_options=4)
    assert (result.value, result.reason) == (None, "unparsed:out_of_range:rule:E")


def test_the_wrapper_passes_the_letters_of_the_question(monkeypatch):
    seen = []
    monkeypatch.setitem(
        extraction.CHOICE_STRATEGIES, "robust", lambda r, a, o: seen.append(a) or extract_choice_robust(r, a, o)
    )
    for kwargs in ({"n_options": 3}, {"options": ["x", "y"]}, {}, {"n_options": 20}):
        extract_choice("A", **kwargs)
    assert seen == ["ABC", "AB", "ABCD", LETTERS]  # A-D when nothing is given; at most A-P


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


# -- totality: every strategy, called directly, on any text ---------------------------------

# pieces of declarations, letters in and out of range and markup: random replies made of them reach
# every rule of the robust strategy (plain random text almost never declares anything)
PIECES = ["Answer: ", "the answer is ", "final answer: ", "<answer>", "</answer>", "``", "`", "\\boxed{", "}",
          '"answer": "', '"', " or ", " and ", "/", "(", ")", ".", "\n", " ", "I ", "A ", "option ", "Ｃ",
          *LETTERS, *LETTERS.lower(), "Q", "Z"]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    text=st.one_of(st.text(max_size=300), st.lists(st.sampled_from(PIECES), max_size=30).map("".join)),
    n=st.integers(min_value=1, max_value=16),
)
def test_every_choice_strategy_is_total_and_stays_inside_the_options(text, n):
    allowed = LETTERS[:n]
    for name, strategy in STRATEGIES.items():
        result = strategy(text, allowed, None)  # no wrapper: an exception fails here
        assert result.value is None or result.value in allowed, (name, result)
        assert isinstance(result.reason, str) and result.reason, (name, result)
        assert (result.value is None) == result.reason.startswith("unparsed:"), (name, result)


@settings(max_examples=200, deadline=None)
@given(
    reply=st.one_of(
        st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80),
        st.lists(st.sampled_from(PIECES), max_size=20).map("".join),
    ),
    options=st.lists(st.text(min_size=1, max_size=20), min_size=2, max_size=16),
)
def test_every_choice_strategy_with_option_texts_is_total(reply, options):
    allowed = LETTERS[: len(options)]
    for name, strategy in STRATEGIES.items():
        for text in (reply, f"{reply} {options[-1]}", options[0]):  # option texts inside the reply too
            result = strategy(text, allowed, options)
            assert result.value is None or result.value in allowed, (name, text, result)
            assert (result.value is None) == result.reason.startswith("unparsed:"), (name, result)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_other_extractors_never_raise(text):
    assert extract_yes_no(text).value in (None, "Yes", "No")
    value = extract_integer(text).value
    assert value is None or isinstance(value, int)
    assert extract_direction(text, ["left", "right"]).value in (None, "left", "right")


def test_tag_contents_pairs_each_opening_tag_with_the_next_closing_tag():
    text = "<answer>A</answer> x <ANSWER>b</Answer> <answer>never closed"
    assert tag_contents(text, "<answer>", "</answer>") == ["A"]
    assert tag_contents(text, "<answer>", "</answer>", ignore_case=True) == ["A", "b"]
    assert first_tag_content("no tags", "<answer>", "</answer>") is None


# Replies built to be slow or to break a parser: each gets its exact reading from every extractor.
HOSTILE_REPLIES = {
    "unclosed answer tags": "<answer>" * 100_000,
    "unclosed backtick and spaces": "` " + " " * 200_000 + "x",
    "spaces before because": "answer: " + " " * 200_000 + "x",
    "digits": "9" * 100_000,
    "braces": "{" * 200_000,
    "lone surrogate": "\ud800 B",
}
NOTHING = {
    "robust": (None, "unparsed:no_answer"),
    "final": (None, "unparsed:no_answer"),
    "json_then_robust": (None, "unparsed:no_answer"),
    "mmsi_official": (None, "unparsed:official:no_letter"),
    "yes_no": (None, "unparsed:no_answer"),
    "direction": (None, "unparsed:no_direction"),
    "integer": (None, "unparsed:no_integer"),
}
HOSTILE_READINGS = {
    # an opening tag never closed is no answer tag; "<answer>" holds no upper-case letter and no yes/no word
    "unclosed answer tags": NOTHING,
    # one backtick opens nothing; "x" is no option letter (a-p only) and no word of any vocabulary
    "unclosed backtick and spaces": NOTHING,
    # "answer:" declares "x" (after the spaces): not a letter, not yes/no
    "spaces before because": NOTHING,
    # a 100,000-digit count is reported, never converted (int() refuses past 4300 digits)
    "digits": {**NOTHING, "integer": (None, "unparsed:integer_over_4000_digits")},
    "braces": NOTHING,
    # a lone surrogate is a non-word character: the reply is the letter B alone
    "lone surrogate": {**NOTHING, "robust": ("B", "letter_only"), "final": ("B", "last_line:letter_only"),
                       "json_then_robust": ("B", "letter_only"), "mmsi_official": ("B", "official:letter")},
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(HOSTILE_REPLIES))
def test_hostile_replies_get_their_exact_reading_without_raising(name):
    reply, expected = HOSTILE_REPLIES[name], HOSTILE_READINGS[name]
    readings = {strategy: got(fn, reply) for strategy, fn in STRATEGIES.items()}
    others = {
        "yes_no": extract_yes_no(reply),
        "direction": extract_direction(reply, ["left", "front left"]),
        "integer": extract_integer(reply),
    }
    for label, result in others.items():
        readings[label] = (result.value, result.reason)
    assert readings == expected


def test_a_digit_run_past_pythons_limit_is_reported_not_converted():
    assert extract_integer("9" * 5000).reason == "unparsed:integer_over_4000_digits"
    assert extract_integer("12 then " + "9" * 5000).value == 12
