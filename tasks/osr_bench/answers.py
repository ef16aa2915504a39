"""OSR-Bench's answer space (for ``random_choice`` and chance levels): its open answers by skill."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# for a task not known by its name: tried before the generic rules (a document with a skill has open answers,
# whatever its answer says)
BEFORE_GENERIC = True


def answer_space(doc: Mapping[str, Any]) -> list[str] | None:
    """The 8 directions, the question's candidates, or a count 0-9, by the document's ``skill``; ``[]`` for a
    skill with no closed set; ``None`` (the generic rules apply) for a document with no skill."""
    from lmms_spatial.metrics.osr_bench import DIRECTIONS

    skill, question = doc.get("skill"), str(doc.get("question", ""))
    if not skill:
        return None
    if skill == "relative_direction":
        return list(DIRECTIONS)
    if skill == "relative_distance" and "(" in question:
        inside = question[question.find("(") + 1 : question.find(")")]
        return [c.strip() for c in inside.split(",") if c.strip()]
    if skill == "object_counting":
        return [str(i) for i in range(10)]
    return []
