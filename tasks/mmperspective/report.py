"""MMPerspective in ``lmms-spatial report``: Table 1 (accuracy and robustness), its CoT layout, and the
accuracy-vs-robustness plot.

Found by :mod:`lmms_spatial.reports.layouts` by its file name (the benchmark key); published rows
in ``tasks/mmperspective/published.json``.
"""

from __future__ import annotations

from lmms_spatial.metrics import mmperspective as mmp
from lmms_spatial.reports.citations import Citation, read_bibtex
from lmms_spatial.reports.plots import Scatter
from lmms_spatial.reports.tables import Column, Layout, Leaf, Mean

CITATION = Citation(
    "Tang et al., 2025",
    "MMPerspective: Do MLLMs Understand Perspective? A Comprehensive Benchmark for Perspective Perception, "
    "Reasoning, and Robustness",
    "2505.20426",
    read_bibtex(__file__),  # CITATION.bib beside this file: the one copy (tests/reports/test_citations_once.py)
)

SCATTERS = (
    Scatter("mmperspective_accuracy_vs_robustness", ("mmperspective", "Overall"), ("mmperspective", "Graded"),
            "MMPerspective: accuracy vs robustness", "Overall accuracy (%)", "Graded robustness (%)", diagonal=False),
)  # fmt: skip


_NO_CHANCE = "robustness: consistency of answers across perturbations, no chance level"


def _layout(prefix: str) -> Layout:
    leaves = {t: Leaf(f"{prefix}_{t.lower()}", "accuracy") for t in mmp.TASKS}
    robust = f"{prefix}_robust"
    columns = [Column(t, t, leaves[t]) for t in mmp.TASKS] + [
        Column("PAcc", "PAcc", Mean(tuple(leaves[t] for t in mmp.PERCEPTION_TASKS))),
        Column("RAcc", "RAcc", Mean(tuple(leaves[t] for t in mmp.REASONING_TASKS))),
        Column("Overall", "Overall", Mean(tuple(leaves.values()))),
        Column("Graded", "Graded", Leaf(robust, "graded_robustness", chance=None, no_chance=_NO_CHANCE)),
        Column("Binary", "Binary", Leaf(robust, "binary_robustness", chance=None, no_chance=_NO_CHANCE)),
    ]
    cot = prefix.endswith("_cot")
    title = "MMPerspective Table 2 layout (CoT prompt)" if cot else "MMPerspective Table 1: accuracy and robustness"
    return Layout(prefix, "mmperspective", title, tuple(columns), None if cot else "table1",
                  notes=("PAcc / RAcc / Overall: unweighted means of the 4 / 5 / 9 task accuracies",))  # fmt: skip


def layouts() -> list[Layout]:
    return [_layout("mmperspective"), _layout("mmperspective_cot")]
