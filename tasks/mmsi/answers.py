"""MMSI-Bench's answer space (for ``random_choice`` and chance levels): the options embedded in its question."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# for a task not known by its name: tried before the generic rules (an options list or a yes/no answer is read first)
BEFORE_GENERIC = False


def answer_space(doc: Mapping[str, Any]) -> list[str] | None:
    """The letters of the options written into the question (``Options: A: ..., B: ...``); ``None`` (the generic
    rules apply) for a question without them."""
    from lmms_spatial.metrics.extraction import LETTERS
    from lmms_spatial.metrics.mmsi import count_options

    question = doc.get("question")
    if question is None or "Options:" not in str(question):
        return None
    return list(LETTERS[: count_options(question)])
