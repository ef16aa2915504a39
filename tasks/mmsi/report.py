"""MMSI-Bench in ``lmms-spatial report``: overall, per category and circular accuracy, and (with the
judge) the error diagnosis by failure mode.

Found by :mod:`lmms_spatial.reports.layouts` by its file name (the benchmark key); published rows
in ``tasks/mmsi/published.json``.
"""

from __future__ import annotations

from collections.abc import Sequence

from lmms_spatial.metrics.mmsi import CATEGORIES
from lmms_spatial.reports.citations import Citation, read_bibtex
from lmms_spatial.reports.runs import Run
from lmms_spatial.reports.tables import Column, Layout, Leaf

CITATION = Citation(
    "Yang et al., ICLR 2026",
    "MMSI-Bench: A Benchmark for Multi-Image Spatial Intelligence",
    "2505.23764",
    read_bibtex(__file__),  # CITATION.bib beside this file: the one copy (tests/reports/test_citations_once.py)
)

_SHORT = {
    "Positional Relationship (Cam.–Cam.)": "Cam–Cam",
    "Positional Relationship (Cam.–Obj.)": "Cam–Obj",
    "Positional Relationship (Cam.–Reg.)": "Cam–Reg",
    "Positional Relationship (Obj.–Obj.)": "Obj–Obj",
    "Positional Relationship (Obj.–Reg.)": "Obj–Reg",
    "Positional Relationship (Reg.–Reg.)": "Reg–Reg",
    "Attribute (Meas.)": "Meas.",
    "Attribute (Appr.)": "Appr.",
    "Motion (Cam.)": "Mot. Cam",
    "Motion (Obj.)": "Mot. Obj",
    "MSR": "MSR",
}


_NO_CHANCE = (
    "circular: no chance level recorded (a uniform guess passes all four orders with (1/n)^4, 0.4% with 4 options)"
)


def layouts() -> list[Layout]:
    def cat(c: str) -> Leaf:
        return Leaf("mmsi_vanilla", c, sample_metric="accuracy", where=("category", c))

    columns = (
        Column("accuracy", "Avg.", Leaf("mmsi_vanilla", "accuracy")),
        *(Column(c, _SHORT[c], cat(c)) for c in CATEGORIES),
        Column("circular", "Circular", Leaf("mmsi_circular", "circular_accuracy", chance=None, no_chance=_NO_CHANCE)),
    )
    notes = (
        "categories and Avg. from mmsi_vanilla; Circular: all four option orders right",
        "unparsed (Circular): share of the replies to the four option orders from which no letter was read",
    )
    return [Layout("mmsi", "mmsi", "MMSI-Bench: overall, per category, circular", columns, "main", notes=notes)]


def analysis(run: Run, judge: bool = False) -> str | None:
    """The error diagnosis by failure mode and reasoning accuracy; it asks the LLM judge, so only when asked."""
    if not judge:
        return None
    from lmms_spatial.tasks.mmsi.diagnosis import DIAGNOSED_TASKS, diagnose, format_diagnosis, load_mmsi_docs

    parts, docs = [], None
    for task in DIAGNOSED_TASKS:
        samples = run.samples(task) if run.has(task) else None
        if not samples:
            continue
        docs = docs if docs is not None else load_mmsi_docs()
        parts.append(f"```\n{format_diagnosis(task, diagnose(samples, docs))}\n```")
    return "\n\n".join(parts) or None


def hint(runs: Sequence[Run], judged: bool) -> str | None:
    """Under the tables: how to get the diagnosis, when it was not asked for and could be."""
    if judged or not any(r.has(t) for r in runs for t in ("mmsi_vanilla", "mmsi_cot")):
        return None
    return (
        "MMSI-Bench error diagnosis by failure mode and reasoning accuracy: add `--diagnose-mmsi` "
        "(asks the configured LLM judge about every reply; verdicts are cached)."
    )
