"""The answers a question allows, read from a normalised document (no model needed).

Used by the ``random_choice`` model and for chance levels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lmms_spatial.metrics.extraction import LETTERS
from lmms_spatial.metrics.mmsi import count_options


def answer_space(doc: Mapping[str, Any]) -> list[str]:
    """Option letters (``options`` list, or options embedded in an MMSI question), else Yes/No."""
    options = doc.get("options")
    if isinstance(options, (list, tuple)) and len(options) > 0:
        return list(LETTERS[: len(options)])
    if str(doc.get("answer", "")).strip().lower() in {"yes", "no"}:
        return ["Yes", "No"]
    if "question" in doc and "Options:" in str(doc["question"]):
        return list(LETTERS[: count_options(doc["question"])])
    return []
