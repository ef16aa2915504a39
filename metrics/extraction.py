"""One answer-extraction library for every benchmark.

Every extractor returns an :class:`Extraction`: the parsed value (or ``None``) and the
reason it was chosen (which rule matched, or why nothing was accepted). Extractors never
raise on model output and never return a letter outside the question's options.

Multiple choice has named strategies (:data:`CHOICE_STRATEGIES`):

Every extractor is total (it never raises on model output) and linear in the length of the
reply: tags are paired with plain string searches (a regex such as ``<answer>(.*?)</answer>``
rescans the rest of the reply from every unclosed opening tag: quadratic), declarations are
read from bounded windows, and digit runs are never converted past :data:`MAX_DIGITS`.

``robust``
    For free-form answers (DORI, MMPerspective, ODI-Bench). The reply is NFKC-normalised first,
    so a full-width ``Ｃ`` is ``C``; a reply that is only a lower-case letter (``c``) counts.
    Looks for *declarations*, in tiers from the strongest form to the weakest:
    ``<answer>X</answer>``; the explicit final forms JSON ``"answer": "X"``, ``\\boxed{X}`` and
    "final answer: X" (one tier, by position); plain declarations "Answer: X", "the answer is X",
    "the correct option is X", "I choose / I'll go with X"; backticks ```X```. Inside the strongest
    tier present the *last* declaration wins, across sentences and lines, so a self-correction
    ("The answer is A. Actually no, the answer is C.") is read as C; each declaration is read from
    the text after its head up to the next head, never past it. A declaration naming two different
    letters ("A or B") is unparsed; a negated one ("the answer is not A") declares nothing, and its
    letter is never read back by the fallbacks. Without any declaration: a reply that is only a
    letter ("B", "(B)", "B."); a reply that starts with one ("B. chair"); the text of exactly one
    option; a single standalone capital letter. It never reads a letter out of an ordinary word
    ("The" is not T, "A bike" is not A).
``mmsi_official``
    MMSI-Bench's VLMEvalKit rule, verbatim: first ```X```, then ```X```, then the
    regex ``\\b[A-D]\\b(?!\\s[a-zA-Z])``; no match means wrong.
``final``
    Chain-of-thought replies: the robust rules on the last line, then on the whole reply.
``json_then_robust``
    DORI's structured format ``"answer": "<letter>"`` first, the robust strategy as
    fallback.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

LETTERS = "ABCDEFGHIJKLMNOP"  # DORI has up to 16 options

UNPARSED = "unparsed"

# Python refuses to convert digit strings past 4300 characters (ValueError); no count or
# option number in a reply is that long, so longer runs are reported, never converted.
MAX_DIGITS = 4000
# a declaration's head is read from this many characters at most (linear on any reply)
_DECLARATION_WINDOW = 200
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Extraction:
    """A parsed answer and why: ``reason`` names the rule that matched, or why none did."""

    value: Any
    reason: str

    @property
    def parsed(self) -> bool:
        return self.value is not None

    def as_dict(self) -> dict[str, Any]:
        return {"parsed": self.value, "reason": self.reason}


def _unparsed(why: str) -> Extraction:
    return Extraction(None, f"{UNPARSED}:{why}")


def valid_letters(n_options: int | None = None, options: Sequence[str] | None = None) -> str:
    """Letters a question allows: A.. for ``len(options)`` or ``n_options`` (A-D if neither)."""
    n = len(options) if options is not None else (n_options if n_options is not None else 4)
    n = max(0, min(int(n), len(LETTERS)))
    return LETTERS[:n]


def _as_text(response: Any) -> str:
    if response is None:
        return ""
    if isinstance(response, (list, tuple)):
        response = response[0] if response else ""
    try:
        return str(response)
    except Exception:
        return ""


def tag_contents(text: str, open_tag: str, close_tag: str, *, ignore_case: bool = False) -> list[str]:
    """Every ``open_tag ... close_tag`` span of ``text``, left to right, in linear time.

    The same spans as ``re.findall(open + "(.*?)" + close, text, re.DOTALL)``: each opening
    tag is closed by the first closing tag after it; an opening tag never closed ends the search
    (no later one can be closed either). ``ignore_case`` matches the tags in any case.
    """
    flags = re.IGNORECASE if ignore_case else 0
    opens = re.compile(re.escape(open_tag), flags)
    closes = re.compile(re.escape(close_tag), flags)
    found: list[str] = []
    pos = 0
    while True:
        start = opens.search(text, pos)
        if start is None:
            return found
        end = closes.search(text, start.end())
        if end is None:
            return found
        found.append(text[start.end() : end.start()])
        pos = end.end()


def first_tag_content(text: str, open_tag: str, close_tag: str, *, ignore_case: bool = False) -> str | None:
    """The first span of :func:`tag_contents` (``re.search(...).group(1)``), or None."""
    flags = re.IGNORECASE if ignore_case else 0
    start = re.compile(re.escape(open_tag), flags).search(text)
    if start is None:
        return None
    end = re.compile(re.escape(close_tag), flags).search(text, start.end())
    return None if end is None else text[start.end() : end.start()]


def _answer_tags(text: str) -> list[str]:
    """``<answer>...</answer>`` spans in any case (the robust rules' strongest declaration)."""
    return tag_contents(text, "<answer>", "</answer>", ignore_case=True)


def first_digit_run(text: str) -> tuple[int | None, str | None]:
    """The first run of digits as (value, digits); value None when longer than :data:`MAX_DIGITS`."""
    match = _DIGITS.search(text)
    if match is None:
        return None, None
    digits = match.group()
    return (int(digits) if len(digits) <= MAX_DIGITS else None), digits


# ---------------------------------------------------------------------------------------
# multiple choice: the robust strategy
# ---------------------------------------------------------------------------------------
_JSON_ANSWER = re.compile(r"""["']answer["']\s*:\s*["']([^"'\n]*)["']""", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
# Declaration *heads*: the words that announce an answer. What a head declares is read from the text after it,
# up to _FRAGMENT characters on its line and never past the next head of its form (see _fragments): a capture
# such as "answer is (.{1,40})" would swallow a correction that follows within 40 characters
# ("The answer is A. Actually no, the answer is C." has one such match, so its last declaration was A).
_FINAL = re.compile(
    r"final\s+(?:answer|choice|option)\s*(?:is|:|：|=)?\s*(?:option\s+|choice\s+)?",
    re.IGNORECASE,
)
_DECLARED = re.compile(
    r"(?:\banswer\s*(?:is\s*)?(?::|：|=|\bis\b)"
    r"|\b(?:correct|right|best)\s+(?:answer|option|choice)\s+(?:is|would\s+be|:)"
    r"|\bI(?:\s+(?:would|will)|['’](?:ll|d))?\s+(?:choose|pick|select|go\s+with)"
    r"|\b(?:answer|option|choice)\s+(?:is|would\s+be)"
    r")\s*(?:option\s+|choice\s+)?",
    re.IGNORECASE,
)
_FRAGMENT = 40  # characters of a declaration read after its head (on its own line)
_NEGATED = re.compile(r"(?:not|never)\b", re.IGNORECASE)  # "the answer is not A" declares nothing
_BACKTICKS = re.compile(r"``([^`]*)``|`([^`]*)`")  # contents stripped in Python: no backtracking
_ONLY_LETTER = re.compile(r"^\W*([A-P])\W*$")
_ONLY_LOWER_LETTER = re.compile(r"^\W*([a-p])\W*$")
_LEADING_LETTER = re.compile(r"^\s*[(\[]?([A-P])(?:[).:\]]|\s*$)")
_STANDALONE = re.compile(r"(?<![A-Za-z'])([A-P])(?![A-Za-z'])(?!\s[a-zA-Z])")
# A letter that is a token of its own inside a short declared answer: "B", "(B)", "B.",
# "option B", "b)". Lower case only when punctuation or the end follows ("answer: b").
_DECL_LETTER = re.compile(r"(?<![A-Za-z'])(?:([A-P])(?![A-Za-z'])|([a-p])(?=\s*(?:[).:,;\]!]|$)))")
_STRIP_MARKUP = re.compile(r"[*_]{1,3}")
_ALTERNATIVES = re.compile(r"(?<![A-Za-z'])([A-P])\s*(?:,|/|\bor\b|\band\b)\s*([A-P])(?![A-Za-z'])")


_EXPLAINING_WORDS = {"is", "or", "and", "because", "since", "as", "which", "so", "would", "seems", "appears"}


def _is_article(upper: str | None, rest: str) -> bool:
    """ "A bike" / "I think": a capital A or I followed by an ordinary lower-case word."""
    if upper not in ("A", "I"):
        return False
    word = re.match(r"\s+([a-z]+)", rest)
    return bool(word) and word.group(1) not in _EXPLAINING_WORDS


def _letters_in_declaration(fragment: str, allowed: str) -> list[str]:
    """Letters named by a short declared answer such as "B", "(B) chair" or "A or B"."""
    fragment = _STRIP_MARKUP.sub("", fragment[:_DECLARATION_WINDOW]).strip()
    # Only the head of the declaration counts: "B. The chair is left of A" declares B.
    head = re.split(r"[.\n](?:\s|$)|\s+(?:because|since|as|which|so)\b", fragment, maxsplit=1)[0]
    found: list[str] = []
    for match in _DECL_LETTER.finditer(head):
        letter = (match.group(1) or match.group(2)).upper()
        if _is_article(match.group(1), head[match.end() :]):
            continue
        if letter not in found:
            found.append(letter)
        # Stop at the first letter unless a conjunction announces another one.
        rest = head[match.end() :]
        if not re.match(r"\s*(?:or|and|/|,|&)\s*\(?[A-Pa-p]\b", rest):
            break
    return [letter for letter in found if letter in LETTERS] if found else []


def _decide(found: list[str], allowed: str, rule: str) -> Extraction | None:
    if not found:
        return None
    distinct = list(dict.fromkeys(found))
    if len(distinct) > 1:
        return _unparsed(f"conflict:{rule}:{'/'.join(distinct)}")
    letter = distinct[0]
    if letter not in allowed:
        return _unparsed(f"out_of_range:{rule}:{letter}")
    return Extraction(letter, rule)


Declaration = tuple[int, str, str]  # (position in the reply, declared text, rule that found it)


def _fragments(head: re.Pattern[str], text: str, rule: str, *, negated: bool = False) -> list[Declaration]:
    """Every declaration announced by ``head``, left to right: what follows each head on its line, at most
    :data:`_FRAGMENT` characters and never past the next head, so a correction is a declaration of its own.
    A negated one ("the answer is not A") declares nothing; ``negated=True`` returns those instead (their text
    after the negation), so the letters they rule out are never read back as an answer."""
    heads = list(head.finditer(text))
    found: list[Declaration] = []
    for i, match in enumerate(heads):
        stop = min(heads[i + 1].start() if i + 1 < len(heads) else len(text), match.end() + _FRAGMENT)
        fragment = text[match.end() : stop].split("\n", 1)[0]
        negation = _NEGATED.match(fragment)
        if negated and negation:
            found.append((match.start(), fragment[negation.end() :], rule))
        elif not negated and not negation and fragment.strip():
            found.append((match.start(), fragment, rule))
    return found


def _captured(pattern: re.Pattern[str], text: str, rule: str) -> list[Declaration]:
    """Declarations whose text is closed by the pattern itself (JSON quotes, ``\\boxed{}`` braces)."""
    return [(m.start(), m.group(1), rule) for m in pattern.finditer(text)]


def _final_declarations(text: str) -> list[Declaration]:
    """The explicit final forms, by position: JSON ``"answer": "X"``, ``\\boxed{X}``, "final answer: X".
    One tier: ``\\boxed{A}`` ... "Final answer: C" is a correction to C."""
    found = _captured(_JSON_ANSWER, text, "json_answer") + _captured(_BOXED, text, "boxed")
    return sorted(found + _fragments(_FINAL, text, "final_answer"), key=lambda d: d[0])


def _last_declaration(declarations: Sequence[Declaration], allowed: str) -> Extraction | None:
    """The last declaration that names any letter decides; one naming two letters ("A or B") is a conflict."""
    for _, fragment, rule in reversed(declarations):
        letters = _letters_in_declaration(fragment, allowed)
        if letters:
            return _decide(letters, allowed, rule)
    return None


def _normalise_option_text(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _match_option_text(text: str, options: Sequence[str], allowed: str) -> Extraction | None:
    reply = _normalise_option_text(text)
    if not reply:
        return None
    # options past the last letter (a 17th) have no letter to be named by: never matched
    normalised = [_normalise_option_text(str(o)) for o in options[: len(allowed)]]
    for idx, opt in enumerate(normalised):
        if opt and reply == opt:
            return Extraction(allowed[idx], "option_text_exact")
    # the substring test first: a long reply that names no option is not scanned once per option
    hits = [
        idx
        for idx, opt in enumerate(normalised)
        if opt and opt in reply and re.search(rf"(?<![a-z0-9]){re.escape(opt)}(?![a-z0-9])", reply)
    ]
    # Drop options that are only contained in a longer matching option ("left" in "front left").
    hits = [i for i in hits if not any(j != i and normalised[i] in normalised[j] for j in hits)]
    if len(hits) == 1:
        return Extraction(allowed[hits[0]], "option_text")
    if len(hits) > 1:
        return _unparsed("conflict:option_text")
    return None


def extract_choice_robust(response: Any, allowed: str, options: Sequence[str] | None = None) -> Extraction:
    text = unicodedata.normalize("NFKC", _as_text(response))
    if not text.strip():
        return _unparsed("empty")

    tags = _answer_tags(text)
    if tags:
        decided = _last_declaration([(0, tag, "answer_tag") for tag in tags], allowed)
        if decided is not None:
            return decided
        if options is not None:
            by_text = _match_option_text(tags[-1], options, allowed)
            if by_text is not None:
                return Extraction(by_text.value, f"answer_tag+{by_text.reason}") if by_text.parsed else by_text
        return _unparsed("answer_tag_without_letter")

    ticks = [(m.start(), (m.group(1) or m.group(2) or "").strip(), "backticks") for m in _BACKTICKS.finditer(text)]
    for tier in (_final_declarations(text), _fragments(_DECLARED, text, "declared"), [t for t in ticks if t[1]]):
        decided = _last_declaration(tier, allowed)
        if decided is not None:
            return decided

    stripped = _STRIP_MARKUP.sub("", text).strip()
    only = _ONLY_LETTER.match(stripped)
    if only:
        return _decide([only.group(1)], allowed, "letter_only")
    only_lower = _ONLY_LOWER_LETTER.match(stripped)
    if only_lower:  # "c", "(c)", "c.": a reply that is nothing but one letter
        return _decide([only_lower.group(1).upper()], allowed, "lower_case_letter_only")
    leading = _LEADING_LETTER.match(stripped)
    if leading:
        return _decide([leading.group(1)], allowed, "leading_letter")

    if options is not None:
        by_text = _match_option_text(stripped, options, allowed)
        if by_text is not None:
            return by_text

    alternatives = _ALTERNATIVES.search(stripped)  # "A or B": the model hedged; no letter wins
    if alternatives and alternatives.group(1) != alternatives.group(2):
        return _unparsed(f"conflict:{alternatives.group(1)}/{alternatives.group(2)}")
    standalone = [m.group(1) for m in _STANDALONE.finditer(stripped)]
    standalone = [s for s in standalone if s in allowed]
    if standalone:  # the negated declarations are looked for only when there is a letter they could rule out
        ruled_out = {
            letter for _, fragment, _ in _fragments(_DECLARED, text, "", negated=True)
            for letter in _letters_in_declaration(fragment, allowed)
        }  # fmt: skip
        standalone = [s for s in standalone if s not in ruled_out]
    decided = _decide(standalone, allowed, "standalone_letter")
    if decided is not None:
        return decided
    return _unparsed("no_answer")


# ---------------------------------------------------------------------------------------
# multiple choice: official strategies
# ---------------------------------------------------------------------------------------

_MMSI_DOUBLE = re.compile(r"``([^`]*)``")
_MMSI_SINGLE = re.compile(r"`([^`]*)`")
_MMSI_LETTER = re.compile(r"\b[A-D]\b(?!\s[a-zA-Z])")


def extract_choice_mmsi_official(response: Any, allowed: str, options: Sequence[str] | None = None) -> Extraction:
    """VLMEvalKit ``MMSIBenchDataset.extract_single_choice_with_word_boundary``, verbatim."""
    pred = _as_text(response)
    rule = "official:letter"
    match = _MMSI_DOUBLE.search(pred)
    if match:
        pred, rule = match.group(1), "official:double_backticks"
    match = _MMSI_SINGLE.search(pred)
    if match:
        pred, rule = match.group(1), "official:backticks"
    match = _MMSI_LETTER.search(pred)
    if not match:
        return _unparsed("official:no_letter")
    letter = match.group()
    if letter not in allowed:
        return _unparsed(f"out_of_range:official:{letter}")
    return Extraction(letter, rule)


def extract_choice_json_first(response: Any, allowed: str, options: Sequence[str] | None = None) -> Extraction:
    text = _as_text(response)
    decided = _last_declaration(_captured(_JSON_ANSWER, text, "json_answer"), allowed)
    if decided is not None:
        return decided
    return extract_choice_robust(text, allowed, options)


def extract_choice_final(response: Any, allowed: str, options: Sequence[str] | None = None) -> Extraction:
    """Chain-of-thought replies: the answer declared at the end wins over letters in the reasoning.

    The robust rules are applied to the last non-empty line first, then to the whole reply.
    """
    text = _as_text(response)
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if lines:
        last = extract_choice_robust(lines[-1], allowed, options)
        if last.parsed:
            return Extraction(last.value, f"last_line:{last.reason}")
        if lines[-1] == text:  # the reply is that one line: the whole reply would give the same
            return last
    return extract_choice_robust(text, allowed, options)


ChoiceStrategy = Callable[[Any, str, "Sequence[str] | None"], Extraction]

CHOICE_STRATEGIES: dict[str, ChoiceStrategy] = {
    "robust": extract_choice_robust,
    "mmsi_official": extract_choice_mmsi_official,
    "json_then_robust": extract_choice_json_first,
    "final": extract_choice_final,
}


def extract_choice(
    response: Any,
    *,
    options: Sequence[str] | None = None,
    n_options: int | None = None,
    strategy: str = "robust",
) -> Extraction:
    """Parse an option letter from a model response.

    ``options`` (the option texts, in letter order) enables matching by option text;
    otherwise ``n_options`` bounds the letters (A-D when neither is given).
    """
    allowed = valid_letters(n_options, options)
    try:
        fn = CHOICE_STRATEGIES[strategy]
    except KeyError:
        raise ValueError(f"unknown choice strategy {strategy!r}; known: {sorted(CHOICE_STRATEGIES)}") from None
    try:
        result = fn(response, allowed, options)
    except Exception as exc:  # extraction must never take a run down
        return _unparsed(f"error:{type(exc).__name__}")
    if result.value is not None and result.value not in allowed:  # defence in depth
        return _unparsed(f"out_of_range:{result.reason}:{result.value}")
    return result


# ---------------------------------------------------------------------------------------
# yes / no
# ---------------------------------------------------------------------------------------

_YES_NO = re.compile(r"(?<![A-Za-z])(yes|no)(?![A-Za-z])", re.IGNORECASE)


def extract_yes_no(response: Any) -> Extraction:
    """ "Yes"/"No" from a declaration, the first word, or the only yes/no word in the reply."""
    text = _as_text(response)
    if not text.strip():
        return _unparsed("empty")
    tags = _answer_tags(text)
    for fragment, rule in ((tags[-1] if tags else None, "answer_tag"),):
        if fragment is not None:
            words = {w.lower() for w in _YES_NO.findall(fragment)}
            if len(words) == 1:
                return Extraction(words.pop().capitalize(), rule)
            return _unparsed(f"{rule}_without_yes_no")
    for tier in (_final_declarations(text), _fragments(_DECLARED, text, "declared")):
        for _, fragment, _rule in reversed(tier):  # the last declaration of the strongest form present
            first = _YES_NO.match(_STRIP_MARKUP.sub("", fragment).strip())
            if first:
                return Extraction(first.group(1).capitalize(), "declared")
    stripped = _STRIP_MARKUP.sub("", text).strip()
    first = _YES_NO.match(stripped)
    if first:
        if re.match(r"\s*(?:or|and|/)\s*(?:yes|no)\b", stripped[first.end() :], re.IGNORECASE):
            return _unparsed("conflict:yes_and_no")
        return Extraction(first.group(1).capitalize(), "leading_word")
    words = {w.lower() for w in _YES_NO.findall(stripped)}
    if len(words) == 1:
        return Extraction(words.pop().capitalize(), "only_yes_no_word")
    if len(words) > 1:
        return _unparsed("conflict:yes_and_no")
    return _unparsed("no_answer")


# ---------------------------------------------------------------------------------------
# integers
# ---------------------------------------------------------------------------------------

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20,
}  # fmt: skip
_INTEGER = re.compile(
    r"(?<![\w.])(-?\d+)(?![\d.]\d)|\b(" + "|".join(_NUMBER_WORDS) + r")\b",
    re.IGNORECASE,
)


def extract_integer(response: Any, *, which: str = "first") -> Extraction:
    """An integer (digits or a number word up to twenty); ``which`` is "first" or "last".

    OSR-Bench's official counting scorer takes the first integer in the reply.
    """
    text = _as_text(response)
    tags = _answer_tags(text)
    if tags:
        text = tags[-1]
    found = []
    for digits, word in _INTEGER.findall(text):
        if len(digits) > MAX_DIGITS + 1:
            found.append(None)
        else:
            found.append(int(digits) if digits else _NUMBER_WORDS[word.lower()])
    if not found:
        return _unparsed("no_integer")
    if (found[0] if which == "first" else found[-1]) is None:
        return _unparsed(f"integer_over_{MAX_DIGITS}_digits")
    value = found[0] if which == "first" else found[-1]
    return Extraction(value, f"{which}_integer" + ("_in_answer_tag" if tags else ""))


def extract_first_digits(response: Any) -> Extraction:
    """OSR-Bench's official counting rule, verbatim: the first run of digits anywhere in the reply.

    No number words and no sign ("three" is unparsed, "-2" is 2, "2.5" is 2), so scores match
    the paper's scorer digit for digit; an ``<answer>`` tag, when present, is read instead.
    """
    text = _as_text(response)
    tags = _answer_tags(text)
    if tags:
        text = tags[-1]
    value, digits = first_digit_run(text)
    if digits is None:
        return _unparsed("no_digits")
    if value is None:
        return _unparsed(f"digits_over_{MAX_DIGITS}")
    return Extraction(value, "first_digits" + ("_in_answer_tag" if tags else ""))


# ---------------------------------------------------------------------------------------
# direction words
# ---------------------------------------------------------------------------------------


def normalise_direction(text: str) -> str:
    """ "Front Left", "front-left", "front_left" -> "front-left"."""
    words = re.split(r"[\s_\-]+", str(text).strip().lower())
    return "-".join(w for w in words if w)


def extract_direction(response: Any, vocabulary: Sequence[str]) -> Extraction:
    """The one direction term of ``vocabulary`` the reply names (longest terms first)."""
    text = _as_text(response)
    tags = _answer_tags(text)
    if tags:
        text = tags[-1]
    # longest terms first, ties in alphabetical order: a set's order changes with PYTHONHASHSEED
    canon = sorted({normalise_direction(v) for v in vocabulary}, key=lambda term: (-len(term), term))
    haystack = " " + normalise_direction(text).replace("-", " ") + " "
    haystack = re.sub(r"[^a-z0-9 ]+", " ", haystack)
    found = []
    for term in canon:
        pattern = r"(?<![a-z])" + re.escape(term.replace("-", " ")) + r"(?![a-z])"
        if re.search(pattern, haystack):
            found.append(term)
            haystack = re.sub(pattern, " ", haystack)
    if not found:
        return _unparsed("no_direction")
    if len(found) > 1:
        return _unparsed(f"conflict:{'/'.join(found)}")
    return Extraction(found[0], "direction_term" + ("_in_answer_tag" if tags else ""))
