"""What a judge rubric is: versioned prompt text plus three pure functions.

A rubric is data, not a client: ``build_messages(item)`` turns the item's fields into the
chat messages sent to the judge, ``parse_reply(reply, item)`` turns the judge's reply text
into a :class:`Judgement` (or raises :class:`UnparsedReply`), and ``fallback(item)`` scores
the item by rules when no judge is used (``LMMS_SPATIAL_JUDGE=none``). None of them does
I/O, so they are unit-testable and the judge layer (``lmms_spatial.judge``) can cache on
their exact output.

``version`` is part of the judge cache key: bump it whenever the prompt text, the parser or
the fallback changes the numbers a run produces, so stale cached verdicts are never reused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Messages = list[dict[str, str]]

REASK_MESSAGE = (
    "Your previous reply could not be parsed. Reply again with only the requested output, "
    "following the required format exactly."
)


class UnparsedReply(ValueError):
    """The judge's reply does not follow the rubric's output format (the judge re-asks)."""


@dataclass(frozen=True)
class Judgement:
    """A parsed judge reply or a rule-based score.

    ``label`` carries a categorical outcome where the rubric has one (an option letter for
    ``mcq_extract``, a failure mode for ``mmsi_diagnosis``); ``details`` anything else worth
    keeping (the OSR judge's confidence, the fallback's matched terms).
    """

    score: float
    reason: str
    label: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Rubric:
    """One judge rubric: name, version, and the pure functions described in the module docstring."""

    name: str
    version: str
    required_fields: tuple[str, ...]
    build_messages: Callable[[Mapping[str, Any]], Messages]
    parse_reply: Callable[[str, Mapping[str, Any]], Judgement]
    fallback: Callable[[Mapping[str, Any]], Judgement]
    max_tokens: int = 256
    source: str = ""
    reask_message: str = REASK_MESSAGE
    # what the official code does with a verdict it cannot read, when it scores it (None: it is left out of the
    # score); said in the run's last lines
    unparsed_rule: str | None = None

    def check_item(self, item: Mapping[str, Any]) -> None:
        """Raise ``KeyError`` naming the fields a task forgot to pass (a programming error)."""
        missing = [name for name in self.required_fields if name not in item]
        if missing:
            raise KeyError(f"rubric {self.name!r} needs item fields {missing}; got {sorted(item)}")


# ---------------------------------------------------------------------------------------
# helpers shared by the rubrics (pure)
# ---------------------------------------------------------------------------------------

_CURLY = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"})
_LINE_COMMENT = re.compile(r"#[^\n\"]*(?=\n|$)")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def as_text(value: Any) -> str:
    """Model output as a string (lmms-eval sometimes hands over a one-element list)."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return str(value)


def one_line(text: str) -> str:
    """Collapse whitespace so a value fits in one table cell / prompt line."""
    return " ".join(str(text).split())


def extract_json_object(reply: str) -> dict[str, Any]:
    """The last balanced ``{...}`` in a reply, parsed leniently.

    Judges wrap JSON in code fences, copy the prompt's curly quotes and ``# comments`` (OSR's
    template has them), or leave trailing commas; all are tolerated. Raises
    :class:`UnparsedReply` when no object parses.
    """
    text = reply.translate(_CURLY)
    end = text.rfind("}")
    while end != -1:
        depth = 0
        for start in range(end, -1, -1):
            if text[start] == "}":
                depth += 1
            elif text[start] == "{":
                depth -= 1
                if depth == 0:
                    candidate = text[start : end + 1]
                    for attempt in (candidate, _TRAILING_COMMA.sub(r"\1", _LINE_COMMENT.sub("", candidate))):
                        try:
                            value = json.loads(attempt)
                        except json.JSONDecodeError:
                            continue
                        if isinstance(value, dict):
                            return value
                    break
        end = text.rfind("}", 0, end)
    raise UnparsedReply("no JSON object in the reply")
