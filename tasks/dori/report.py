"""DORI in ``lmms-spatial report``: Table 2 (and the Table 7 prompt ablation) with soft accuracy, error
patterns and the compound-rotation decomposition, coarse-vs-granular plot.

Found by :mod:`lmms_spatial.reports.layouts` by its file name (the benchmark key); published rows
in ``tasks/dori/published.json``.
"""

from __future__ import annotations

from lmms_spatial.metrics.dori import GRANULARITIES, TASKS
from lmms_spatial.reports.citations import Citation, read_bibtex
from lmms_spatial.reports.plots import Scatter
from lmms_spatial.reports.runs import Run
from lmms_spatial.reports.tables import Column, Layout, Leaf, Mean, Spec

# Checked against the arXiv listing. The entry was later retitled ("Seeing Isn't
# Orienting: ..."); the tasks follow the version below.
CITATION = Citation(
    "Tasnim et al., 2025",
    "Right Side Up? Disentangling Orientation Understanding in MLLMs with Fine-grained Multi-axis Perception Tasks",
    "2505.21649",
    read_bibtex(__file__),  # CITATION.bib beside this file: the one copy (tests/reports/test_citations_once.py)
)

SCATTERS = (
    Scatter("dori_coarse_vs_granular", ("dori_structured", "avg_coarse"), ("dori_structured", "avg_granular"),
            "DORI: coarse vs granular (Avg.)", "coarse Avg. (%)", "granular Avg. (%)", diagonal=True),
)  # fmt: skip

_SHORT = {
    "view_parallelism": "ViewPar",
    "directional_facing": "DirFace",
    "single_axis_rotation": "1-axis",
    "compound_rotation": "Compound",
    "inter_object_direction": "InterObj",
    "viewer_scene_direction": "ViewerScn",
    "canonical_orientation": "Canon",
}


def _layout(prompt: str) -> Layout:
    prefix = "dori_" if prompt == "structured" else "dori_unstructured_"
    leaves = {(t, g): Leaf(f"{prefix}{t}_{g}", "accuracy") for t in TASKS for g in GRANULARITIES}
    columns = [Column(f"{t}_{g}", f"{_SHORT[t]} {g[0].upper()}", leaves[t, g]) for t in TASKS for g in GRANULARITIES]
    columns += [
        Column(f"avg_{g}", f"Avg. {g[0].upper()}", Mean(tuple(leaves[t, g] for t in TASKS))) for g in GRANULARITIES
    ]

    def soft(column: Column) -> Spec | None:
        spec = column.spec
        if isinstance(spec, Leaf) and spec.task.endswith("_granular"):
            return Leaf(spec.task, "soft_accuracy", score_field="soft_score")
        if isinstance(spec, Mean) and column.key == "avg_granular":
            return Mean(tuple(Leaf(p.task, "soft_accuracy", score_field="soft_score") for p in spec.parts))
        return None

    number = "Table 2" if prompt == "structured" else "Table 7 layout (unstructured prompt)"
    return Layout(
        f"dori_{prompt}", "dori", f"DORI {number}: accuracy per question type (C coarse, G granular)", tuple(columns),
        "table2" if prompt == "structured" else None, extra_rows=(("soft acc.", soft),),
        notes=("soft acc.: App. L partial credit, granular question types only",),
    )  # fmt: skip


def layouts() -> list[Layout]:
    return [_layout("structured"), _layout("unstructured")]


def analysis(run: Run, judge: bool = False) -> str | None:
    """Error patterns (App. L, Table 10) and the compound-rotation decomposition (Table 11) per prompt."""
    from lmms_spatial.tasks.dori.patterns import render_patterns, report_from_records

    records = [
        line["accuracy"]
        for task, lines in sorted(run.lines.items())
        if task.startswith("dori_")
        for line in lines
        if isinstance(line.get("accuracy"), dict) and "task" in line["accuracy"]
    ]
    if not records:
        return None
    report = report_from_records([run.results_file], [records])
    parts = []
    for prompt, entry in report.items():
        c = entry["compound"]
        patterns = render_patterns(entry["patterns"])
        parts.append(f"DORI error patterns, {prompt} prompt (App. L, Table 10):\n\n```\n{patterns}\n```")
        parts.append(
            f"Compound rotation decomposition (Table 11, n={c['n']}): order swap {c['order_swap']:.1f}%, "
            f"horizontal acc. {c['horizontal_accuracy']:.1f}%, vertical acc. {c['vertical_accuracy']:.1f}%, "
            f"both wrong {c['both_wrong']:.1f}%"
        )
    return "\n\n".join(parts)
