"""ODI-Bench in ``lmms-spatial report``: Tables 2/3 per setting, option anchoring, close-vs-open plot.

Found by :mod:`lmms_spatial.reports.layouts` by its file name (the benchmark key); published rows
in ``tasks/odi_bench/published.json``.
"""

from __future__ import annotations

from lmms_spatial.metrics import odi_bench as odi
from lmms_spatial.reports.citations import Citation, read_bibtex
from lmms_spatial.reports.plots import Scatter
from lmms_spatial.reports.runs import Run
from lmms_spatial.reports.tables import JUDGE_UNUSABLE, Column, Layout, Leaf, Pooled

CITATION = Citation(
    "Yang et al., ICLR 2026",
    "ODI-Bench: Can MLLMs Understand Immersive Omnidirectional Environments?",
    "2510.11549",
    read_bibtex(__file__),  # CITATION.bib beside this file: the one copy (tests/reports/test_citations_once.py)
)

SCATTERS = (
    Scatter("odi_bench_close_vs_open", ("odi_bench_close", "Overall"), ("odi_bench_open", "Overall"),
            "ODI-Bench: close vs open-ended (Overall)", "close-ended Overall (%)", "open-ended Overall (%)",
            diagonal=True),
)  # fmt: skip


def _layout(setting: str) -> Layout:
    metric = "judge_score" if setting == "open" else "accuracy"
    extra = {"chance": None, "no_chance": "open-ended answers: no chance level", "unparsed": JUDGE_UNUSABLE}
    extra = extra if setting == "open" else {}
    leaves = {t: Leaf(f"odi_bench_{setting}_{t}", metric, **extra) for t in odi.TASKS}
    columns = [
        Column("Overall", "Overall", Pooled(tuple(leaves.values()))),
        Column("General", "General", Pooled(tuple(leaves[t] for t in odi.GENERAL_TASKS))),
        Column("Spatial", "Spatial", Pooled(tuple(leaves[t] for t in odi.SPATIAL_TASKS))),
        *(Column(odi.ABBREVIATIONS[t], odi.ABBREVIATIONS[t], leaves[t]) for t in odi.TASKS),
    ]
    ref = {"close": "table2_close", "open": "table3_open"}.get(setting)
    number = {"close": "Table 2", "open": "Table 3"}.get(setting, "Table 2 layout")
    notes = ["Overall, General, Spatial: means over questions, as the paper's (Table 2 prints no General / Spatial)"]
    if setting == "open":
        notes.append("open-ended: judge score (0 / 0.5 / 1); judge failures are left out of every mean")
        notes.append("unparsed (open-ended): share of answers with no usable verdict (judge failures and unparsed "
                     "verdicts)")  # fmt: skip
    return Layout(f"odi_bench_{setting}", "odi_bench", f"ODI-Bench {number}: {setting} setting", tuple(columns), ref,
                  notes=tuple(notes), digits=2)  # fmt: skip


def layouts() -> list[Layout]:
    return [_layout("close"), _layout("open"), _layout("cot")]


def analysis(run: Run, judge: bool = False) -> str | None:
    """Option anchoring (App. D.1.3) when the run has close- and open-ended samples."""
    close, opened = [], []
    for task in sorted(run.results):
        lines = run.samples(task) if task.startswith("odi_bench_") else None
        if not lines:
            continue
        if task.startswith("odi_bench_close_"):
            close += [s["accuracy"] for s in lines if isinstance(s.get("accuracy"), dict)]
        elif task.startswith("odi_bench_open_"):
            opened += [s["judge_score"] for s in lines if isinstance(s.get("judge_score"), dict)]
    if not close or not opened:
        return None
    result = odi.option_anchoring(close, opened)
    return f"ODI-Bench option anchoring (App. D.1.3):\n\n```\n{odi.format_anchoring(result)}\n```"
