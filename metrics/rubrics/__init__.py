"""Judge rubrics as versioned data: prompt builder, reply parser and rule-based fallback.

Each rubric module defines ``RUBRIC`` (a :class:`~.base.Rubric`); the prompt text lives in
the module as constants, so no package data is needed. Rubrics are pure (no I/O, no client);
``lmms_spatial.judge`` sends their messages, caches the replies and keeps the statistics.

========================  ======================================================================
``odi_open``              ODI-Bench open-ended answers, 0 / 0.5 / 1 per task family (App. E.3)
``osr_negative``          OSR-Bench LLM evaluator, binary score + confidence (App. C.3)
``mmsi_diagnosis``        MMSI-Bench failure-mode diagnosis and reasoning accuracy
``mcq_extract``           multiple-choice letter extraction from free-form responses
========================  ======================================================================
"""

from __future__ import annotations

from .base import REASK_MESSAGE, Judgement, Messages, Rubric, UnparsedReply, extract_json_object
from .mcq_extract import RUBRIC as MCQ_EXTRACT
from .mmsi_diagnosis import RUBRIC as MMSI_DIAGNOSIS
from .odi_open import RUBRIC as ODI_OPEN
from .osr_negative import RUBRIC as OSR_NEGATIVE

RUBRICS: dict[str, Rubric] = {r.name: r for r in (ODI_OPEN, OSR_NEGATIVE, MMSI_DIAGNOSIS, MCQ_EXTRACT)}


def get_rubric(name: str | Rubric) -> Rubric:
    """The rubric called ``name`` (a :class:`Rubric` passes through, for task-defined rubrics)."""
    if isinstance(name, Rubric):
        return name
    try:
        return RUBRICS[name]
    except KeyError:
        raise KeyError(f"unknown judge rubric {name!r}; known: {sorted(RUBRICS)}") from None


__all__ = [
    "REASK_MESSAGE",
    "RUBRICS",
    "Judgement",
    "Messages",
    "Rubric",
    "UnparsedReply",
    "extract_json_object",
    "get_rubric",
]
