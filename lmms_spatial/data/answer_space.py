"""The answers a question allows, read from a normalised document (no model needed).

Used by the ``random_choice`` model and for chance levels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_spatial.metrics.extraction import LETTERS
from lmms_spatial.metrics.mmsi import count_options


def _osr_space(doc: Mapping[str, Any]) -> list[str]:
    """OSR-Bench open answers: the 8 directions, the question's candidates, or a count 0-9."""
    from lmms_spatial.metrics.osr_bench import DIRECTIONS

    skill, question = doc.get("skill"), str(doc.get("question", ""))
    if skill == "relative_direction":
        return list(DIRECTIONS)
    if skill == "relative_distance" and "(" in question:
        inside = question[question.find("(") + 1 : question.find(")")]
        return [c.strip() for c in inside.split(",") if c.strip()]
    if skill == "object_counting":
        return [str(i) for i in range(10)]
    return []


def answer_space(doc: Mapping[str, Any]) -> list[str]:
    """Option letters (``options`` list, or options embedded in an MMSI question), else Yes/No,
    else the open answers of an OSR-Bench skill."""
    if doc.get("skill"):
        return _osr_space(doc)
    options = doc.get("options")
    if isinstance(options, (list, tuple)) and len(options) > 0:
        return list(LETTERS[: len(options)])
    if str(doc.get("answer", "")).strip().lower() in {"yes", "no"}:
        return ["Yes", "No"]
    if "question" in doc and "Options:" in str(doc["question"]):
        return list(LETTERS[: count_options(doc["question"])])
    return []
