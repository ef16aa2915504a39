"""LLM answer extraction for multiple choice: which option letter a free-form response picks.

An optional second stage for responses the rule extractors (``metrics.extraction``) cannot
parse. The prompt is MMBench's choice-extraction prompt (Liu et al., 2023, App. C.1; the
same text VLMEvalKit uses), with the letter list taken from the item and "Z" meaning that
no option is chosen. The verdict's ``label`` is the letter, or ``None`` for no option;
``score`` is 1.0 when a letter was returned, 0.0 otherwise (it says "extracted", not
"correct": the task compares the letter with the ground truth).

Item fields: ``question``, ``response``; optional ``options`` (list of option texts, in letter
order; omit when the question embeds its options, as MMSI-Bench's does) and ``n_options``.

Rule-based fallback (``LMMS_SPATIAL_JUDGE=none``): the project's robust rule extractor,
``metrics.extraction.extract_choice(strategy="robust")``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .base import Judgement, Messages, Rubric, UnparsedReply, as_text

NAME = "mcq_extract"
VERSION = "1.0"

LETTERS = "ABCDEFGHIJKLMNOP"
NONE_LETTER = "Z"

TEMPLATE = (
    "You are an AI assistant who will help me to match an answer with several options of a single-choice question. "
    "You are provided with a question, several options, and an answer, and you need to find which option is most "
    "similar to the answer. If the meaning of all options are significantly different from the answer, output Z. "
    "You should only do the matching based exactly on the literal meaning of the options and answer. You should not "
    "perform any external inference based on your knowledge during the matching. Your should output a single "
    "uppercase character in {letters} (if they are valid options), and Z.\n"
    "Example 1:\n"
    "Question: What is the main object in image?\n"
    "Options: A. teddy bear B. rabbit C. cat D. dog\n"
    "Answer: a cute teddy bear\n"
    "Your output: A\n"
    "Example 2:\n"
    "Question: What is the main object in image?\n"
    "Options: A. teddy bear B. rabbit C. cat D. dog\n"
    "Answer: Spider\n"
    "Your output: Z\n"
    "Now it's your turn:\n"
    "Question: {question}\n"
    "Options: {options}\n"
    "Answer: {answer}\n"
    "Your output:"
)


def allowed_letters(item: Mapping[str, Any]) -> str:
    """A.. for the item's ``options`` (or ``n_options``; A-D when neither is given)."""
    options = item.get("options")
    if options:
        n = len(options)
    elif item.get("n_options"):
        n = int(item["n_options"])
    else:
        n = 4
    return LETTERS[: max(1, min(n, len(LETTERS)))]


def _format_options(options: Sequence[str] | None) -> str:
    if not options:
        return "(listed in the question)"
    return " ".join(f"{LETTERS[i]}. {' '.join(str(text).split())}" for i, text in enumerate(options))


def build_messages(item: Mapping[str, Any]) -> Messages:
    letters = allowed_letters(item)
    prompt = TEMPLATE.format(
        letters=", ".join(letters),
        question=as_text(item["question"]).strip(),
        options=_format_options(item.get("options")),
        answer=as_text(item["response"]).strip(),
    )
    return [{"role": "user", "content": prompt}]


_BARE = re.compile(r"^\W*([A-Z])\W*$")
_DECLARED = re.compile(r"(?:output|answer|option)\s*(?:is|:)?\s*\(?([A-Z])\)?(?![A-Za-z])", re.IGNORECASE)


def parse_reply(reply: str, item: Mapping[str, Any] | None = None) -> Judgement:
    """A single letter (``B``, ``(B)``, ``B.``, "Your output: B"), ``Z`` or ``none`` for no option."""
    letters = allowed_letters(item or {})
    text = reply.strip()
    if text.strip("`*\"'. ").lower() == "none":
        return Judgement(0.0, "judge_no_option")
    match = _BARE.match(text) or _DECLARED.search(text)
    if match is None:
        raise UnparsedReply("no single option letter in the reply")
    letter = match.group(1).upper()
    if letter == NONE_LETTER and NONE_LETTER not in letters:
        return Judgement(0.0, "judge_no_option")
    if letter not in letters:
        raise UnparsedReply(f"letter {letter} is not one of {letters}")
    return Judgement(1.0, f"judge_letter_{letter}", label=letter)


def fallback(item: Mapping[str, Any]) -> Judgement:
    """The robust rule extractor of ``metrics.extraction`` (imported here, on first use)."""
    from ..extraction import extract_choice

    options = item.get("options") or None
    n_options = len(allowed_letters(item)) if options is None else None
    found = extract_choice(item["response"], options=options, n_options=n_options, strategy="robust")
    if found.value is None:
        return Judgement(0.0, f"fallback_{found.reason}")
    return Judgement(1.0, f"fallback_{found.reason}", label=str(found.value))


RUBRIC = Rubric(
    name=NAME,
    version=VERSION,
    required_fields=("question", "response"),
    build_messages=build_messages,
    parse_reply=parse_reply,
    fallback=fallback,
    max_tokens=16,
    source="MMBench App. C.1 choice-extraction prompt (letters from the item, Z = no option)",
)
