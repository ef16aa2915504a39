"""The papers' table layouts filled from runs, next to the published rows.

A column is a :class:`Spec`: a :class:`Leaf` (one metric of one task, read from the results
file) or an aggregate of leaves (:class:`Mean`: unweighted mean of the leaves, e.g. PAcc or
DORI's Avg.; :class:`Pooled`: mean over questions, ODI-Bench's Overall). Each spec also knows
its chance level and unparsed rate (the same aggregation of the leaves' ``chance_level`` /
``unparsed_rate``) and its bootstrap draws.

Bootstrap 95% CIs: the per-document scores of a leaf come from the samples file; a leaf is
bootstrapped only when the mean of those scores reproduces the results file's value (so
metrics that are not a per-document mean, such as circular accuracy or robustness, get no CI
rather than a wrong one). Documents are resampled within each task, ``ITERATIONS`` times,
with a numpy generator seeded from ``seed`` and the task and metric names (deterministic);
aggregates combine the leaves' draws index by index; the CI is the 2.5 / 97.5 percentile.

Several runs of one model (seeds): mean ± std/sqrt(n) per cell (:func:`seed_summary` of the
DORI metrics, population std).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lmms_spatial import run_options
from lmms_spatial.metrics import mmperspective as mmp
from lmms_spatial.metrics import odi_bench as odi
from lmms_spatial.metrics.dori import GRANULARITIES, seed_summary
from lmms_spatial.metrics.dori import TASKS as DORI_TASKS
from lmms_spatial.metrics.mmsi import CATEGORIES as MMSI_CATEGORIES
from lmms_spatial.plugin.empty_tasks import DOCUMENTS_KEY, NO_DOCUMENTS
from lmms_spatial.progress import progress
from lmms_spatial.reports import references
from lmms_spatial.reports.citations import CITATIONS
from lmms_spatial.reports.runs import Run, group_by_label

ITERATIONS = 500
SEED = 0
ROLES = ("value", "chance", "unparsed")


# ---------------------------------------------------------------------------------------
# column specs
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    task: str
    metric: str
    sample_metric: str | None = None  # samples key holding the per-doc record (default: metric)
    score_field: str = "score"
    where: tuple[str, str] | None = None  # keep records whose field equals the value
    chance: str | None = "chance_level"
    unparsed: str | None = "unparsed_rate"

    def tasks(self) -> set[str]:
        return {self.task}

    def value(self, run: Run, role: str = "value") -> float | None:
        metric = {"value": self.metric, "chance": self.chance, "unparsed": self.unparsed}[role]
        return None if metric is None else run.value(self.task, metric)

    def scores(self, run: Run) -> np.ndarray | None:
        lines = run.samples(self.task)
        if not lines:
            return None
        out = []
        for line in lines:
            rec = line.get(self.sample_metric or self.metric)
            if isinstance(rec, dict):
                if self.where and str(rec.get(self.where[0])) != self.where[1]:
                    continue
                if rec.get("failed") or rec.get(self.score_field) is None:
                    continue
                out.append(float(rec[self.score_field]))
            elif isinstance(rec, (int, float)) and not isinstance(rec, bool) and not self.where:
                out.append(float(rec))
        return np.asarray(out, dtype=float) if out else None

    def draws(self, run: Run, seed: int) -> np.ndarray | None:
        scores, value = self.scores(run), self.value(run)
        if scores is None or value is None or abs(scores.mean() - value) > 1e-9:
            return None
        rng = np.random.default_rng([seed, zlib.crc32(f"{self.task}|{self.metric}|{self.where}".encode())])
        idx = rng.integers(0, len(scores), size=(ITERATIONS, len(scores)))
        return scores[idx].mean(axis=1)

    def count(self, run: Run) -> int:
        scores = self.scores(run)
        if scores is not None:
            return len(scores)
        return int(run.data.get("n-samples", {}).get(self.task, {}).get("effective", 0))


@dataclass(frozen=True)
class Mean:
    """Unweighted mean of the leaves present (a paper's macro average)."""

    parts: tuple[Leaf, ...]
    require_all: bool = True

    def tasks(self) -> set[str]:
        return {p.task for p in self.parts}

    def value(self, run: Run, role: str = "value") -> float | None:
        values = [p.value(run, role) for p in self.parts]
        if self.require_all and any(v is None for v in values):
            return None
        values = [v for v in values if v is not None]
        return math.fsum(values) / len(values) if values else None

    def draws(self, run: Run, seed: int) -> np.ndarray | None:
        draws = [p.draws(run, seed) for p in self.parts]
        return None if any(d is None for d in draws) else np.mean(draws, axis=0)


@dataclass(frozen=True)
class Pooled(Mean):
    """Mean over questions: the leaves weighted by their number of scored documents."""

    def value(self, run: Run, role: str = "value") -> float | None:
        pairs = [(p.value(run, role), p.count(run)) for p in self.parts]
        if any(v is None for v, _ in pairs) or not sum(n for _, n in pairs):
            return None
        return math.fsum(v * n for v, n in pairs) / sum(n for _, n in pairs)

    def draws(self, run: Run, seed: int) -> np.ndarray | None:
        draws = [p.draws(run, seed) for p in self.parts]
        if any(d is None for d in draws):
            return None
        counts = np.array([p.count(run) for p in self.parts], dtype=float)
        return (np.array(draws) * counts[:, None]).sum(axis=0) / counts.sum()


Spec = Leaf | Mean


@dataclass(frozen=True)
class Column:
    key: str  # reference column name
    header: str
    spec: Spec | None  # None: a reference-only column
    scaled: bool = True  # False: not a 0-1 score (e.g. a distance), shown as is


# ---------------------------------------------------------------------------------------
# rendered table model
# ---------------------------------------------------------------------------------------


@dataclass
class Cell:
    value: float | None = None
    lo: float | None = None  # bootstrap 95% CI
    hi: float | None = None
    err: float | None = None  # std/sqrt(n) over seeds
    n: int = 1


@dataclass
class Row:
    label: str
    kind: str  # model | reference | chance | unparsed
    cells: list[Cell]
    note: str = ""


@dataclass
class Table:
    key: str
    title: str
    source: str
    headers: list[str]
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    digits: int = 1  # decimals the paper prints


@dataclass(frozen=True)
class Layout:
    key: str
    benchmark: str
    title: str
    columns: tuple[Column, ...]
    reference: str | None = None  # reference table id
    extra_rows: tuple[tuple[str, Callable[[Column], Spec | None]], ...] = ()  # (label, column -> spec)
    notes: tuple[str, ...] = ()
    digits: int = 1

    def tasks(self) -> set[str]:
        return set().union(*(c.spec.tasks() for c in self.columns if c.spec is not None))


def _scale(column: Column, scale: float) -> float:
    return scale if column.scaled else 1.0


def _cell_for_runs(spec: Spec | None, runs: Sequence[Run], factor: float, seed: int, ci: bool) -> Cell:
    if spec is None:
        return Cell()
    values = [spec.value(r) for r in runs]
    if len(runs) > 1:
        present = {str(i): {"v": v} for i, v in enumerate(values) if v is not None}
        if not present:
            return Cell()
        s = seed_summary(present)["v"]
        return Cell(s["mean"] * factor, err=s["error"] * factor, n=s["seeds"])
    if values[0] is None:
        return Cell()
    cell = Cell(values[0] * factor)
    if ci:
        draws = spec.draws(runs[0], seed)
        if draws is not None:
            lo, hi = np.percentile(draws, [2.5, 97.5])
            cell.lo, cell.hi = float(lo) * factor, float(hi) * factor
    return cell


def build_table(layout: Layout, runs: Sequence[Run], *, seed: int = SEED, ci: bool = True) -> Table | None:
    """The layout filled with every model found in ``runs`` (None when no run has its tasks)."""
    mine = [r for r in runs if layout.tasks() & set(r.results)]
    if not mine:
        return None
    ref = references.table(layout.benchmark, layout.reference) if layout.reference else None
    ref_file = references.load(layout.benchmark) if ref else None
    scale = float(ref["scale"]) if ref else 100.0
    cited = CITATIONS[layout.benchmark].text() if layout.benchmark in CITATIONS else ""
    source = f"{ref_file['paper']} {ref['table']}: {cited}" if ref else (cited or "no published rows")
    table = Table(layout.key, layout.title, source, [c.header for c in layout.columns], columns=list(layout.columns))
    table.digits = layout.digits
    table.notes.extend(layout.notes)
    groups = group_by_label(mine)
    for label, group in groups.items():
        cells = [_cell_for_runs(c.spec, group, _scale(c, scale), seed, ci) for c in layout.columns]
        note = f"mean ± std/sqrt(n) over {len(group)} runs" if len(group) > 1 else ""
        empty = tasks_without_documents(group, layout.tasks())
        table.rows.append(Row(f"{label} (not comparable)" if empty else label, "model", cells, note))
        if empty:
            table.notes.append(f"{label}: not comparable to the paper's rows: {NO_DOCUMENTS} for {', '.join(empty)}")
        for extra_label, make in layout.extra_rows:
            specs = [make(c) for c in layout.columns]
            cells = [
                _cell_for_runs(s, group, _scale(c, scale), seed, ci) for s, c in zip(specs, layout.columns, strict=True)
            ]
            if any(c.value is not None for c in cells):
                table.rows.append(Row(f"{label} {extra_label}", "model", cells))
        unparsed = [_role_cell(c, group[0], "unparsed", _scale(c, scale)) for c in layout.columns]
        if any(c.value is not None for c in unparsed):
            table.rows.append(Row(f"{label} unparsed", "unparsed", unparsed))
    table.notes.extend(_settings_notes(groups, layout.tasks()))
    chance = [_role_cell(c, mine[0], "chance", _scale(c, scale)) for c in layout.columns]
    if any(c.value is not None for c in chance):
        table.rows.append(Row("chance level", "chance", chance))
    if ref:
        for r in ref["rows"]:
            cells = [Cell(r["values"].get(c.key)) for c in layout.columns]
            table.rows.append(Row(r["model"], "reference", cells, r.get("note", "")))
        table.notes.extend(ref.get("notes", []))
        table.notes.extend(f"not transcribed: {s}" for s in ref.get("skipped", []))
    return table


def _settings_notes(groups: dict[str, list[Run]], tasks: set[str]) -> list[str]:
    """Each model's non-default run options, and a warning when models saw different inputs."""
    notes, seen = [], {}
    for label, group in groups.items():
        options = [o for run in group for o in run.run_options(tasks)]
        shown = sorted({run_options.describe(o) for o in options})
        if shown and shown != ["defaults"]:
            notes.append(f"{label}: run with {' / '.join(shown)}")
        # what the model saw, apart from DORI's option order (seeds are pooled on purpose)
        seen[label] = sorted({run_options.describe(run_options.what_the_model_saw(o)) for o in options})
    if len({tuple(v) for v in seen.values() if v}) > 1:
        notes.append("WARNING: these models were run with different prompt or image settings (above); "
                     "their rows are not directly comparable")  # fmt: skip
    return notes


def tasks_without_documents(group: Sequence[Run], tasks: set[str]) -> list[str]:
    """The tasks of a table that a model's runs had no documents for (lmms_spatial.plugin.empty_tasks
    names them in the results): their cells stay empty and the row cannot be set against the paper's."""
    return sorted({t for run in group for t in tasks if run.results.get(t, {}).get(DOCUMENTS_KEY) == NO_DOCUMENTS})


def _role_cell(column: Column, run: Run, role: str, factor: float) -> Cell:
    if column.spec is None or not column.scaled:
        return Cell()
    v = column.spec.value(run, role)
    return Cell(None if v is None else v * factor)


# ---------------------------------------------------------------------------------------
# the papers' layouts
# ---------------------------------------------------------------------------------------


def _odi_layout(setting: str) -> Layout:
    metric = "judge_score" if setting == "open" else "accuracy"
    extra = {"chance": None, "unparsed": None} if setting == "open" else {}
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
    return Layout(f"odi_bench_{setting}", "odi_bench", f"ODI-Bench {number}: {setting} setting", tuple(columns), ref,
                  notes=tuple(notes), digits=2)  # fmt: skip


def _dori_layout(prompt: str) -> Layout:
    prefix = "dori_" if prompt == "structured" else "dori_unstructured_"
    leaves = {(t, g): Leaf(f"{prefix}{t}_{g}", "accuracy") for t in DORI_TASKS for g in GRANULARITIES}
    columns = [
        Column(f"{t}_{g}", f"{_DORI_SHORT[t]} {g[0].upper()}", leaves[t, g]) for t in DORI_TASKS for g in GRANULARITIES
    ]
    columns += [
        Column(f"avg_{g}", f"Avg. {g[0].upper()}", Mean(tuple(leaves[t, g] for t in DORI_TASKS))) for g in GRANULARITIES
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


_DORI_SHORT = {
    "view_parallelism": "ViewPar",
    "directional_facing": "DirFace",
    "single_axis_rotation": "1-axis",
    "compound_rotation": "Compound",
    "inter_object_direction": "InterObj",
    "viewer_scene_direction": "ViewerScn",
    "canonical_orientation": "Canon",
}


def _mmperspective_layout(prefix: str) -> Layout:
    leaves = {t: Leaf(f"{prefix}_{t.lower()}", "accuracy") for t in mmp.TASKS}
    robust = f"{prefix}_robust"
    columns = [Column(t, t, leaves[t]) for t in mmp.TASKS] + [
        Column("PAcc", "PAcc", Mean(tuple(leaves[t] for t in mmp.PERCEPTION_TASKS))),
        Column("RAcc", "RAcc", Mean(tuple(leaves[t] for t in mmp.REASONING_TASKS))),
        Column("Overall", "Overall", Mean(tuple(leaves.values()))),
        Column("Graded", "Graded", Leaf(robust, "graded_robustness", chance=None)),
        Column("Binary", "Binary", Leaf(robust, "binary_robustness", chance=None)),
    ]
    cot = prefix.endswith("_cot")
    title = "MMPerspective Table 2 layout (CoT prompt)" if cot else "MMPerspective Table 1: accuracy and robustness"
    return Layout(prefix, "mmperspective", title, tuple(columns), None if cot else "table1",
                  notes=("PAcc / RAcc / Overall: unweighted means of the 4 / 5 / 9 task accuracies",))  # fmt: skip


_SKILLS = ("object_counting", "relative_distance", "relative_direction")


def _osr_layouts() -> list[Layout]:
    def cog(task: str, metric: str, sample: str | None = None, **kw: Any) -> Leaf:
        return Leaf(task, metric, sample_metric=sample, chance=None, **kw)

    def qa(task: str, skill: str) -> Leaf:
        return Leaf(task, skill, sample_metric="accuracy", where=("skill", skill), chance=None, unparsed=None)

    std, neg = "osr_cogmap_standard", "osr_cogmap_negative"
    t2 = (
        Column("avg_distance", "Avg dist.", cog(std, "avg_distance", unparsed=None), scaled=False),
        Column("precision", "Precision", cog(std, "cogmap_precision", unparsed=None)),
        Column("recall", "Recall", cog(std, "cogmap_recall", unparsed=None)),
        Column("f1", "F1", cog(std, "cogmap_f1")),
    )
    t3 = tuple(
        Column(f"{s}{suffix}", f"{s.split('_')[1]} {label}", qa(task, s))
        for s in _SKILLS
        for suffix, label, task in (
            ("_cogmap", "w/ map", "osr_qa_cogmap_standard_vanilla"),
            ("", "w/o map", "osr_qa_standard_vanilla"),
        )
    )
    t4 = (
        Column("precision", "Precision", cog(neg, "cogmap_precision", unparsed=None)),
        Column("recall", "Recall", cog(neg, "cogmap_recall", unparsed=None)),
        Column("chair_s", "CHAIR_S", cog(neg, "chair_s", unparsed=None)),
        Column("chair_i", "CHAIR_I", cog(neg, "chair_i", unparsed=None)),
        Column("chair_instance", "CHAIR_ins", cog(neg, "chair_instance", unparsed=None)),
        *(Column(s, s.replace("_", " "), qa("osr_qa_negative_vanilla", s)) for s in _SKILLS),
    )
    t5 = (Column("format_success_rate", "Success rate (%)", cog(std, "format_success_rate", unparsed=None)),)
    return [
        Layout("osr_table2", "osr_bench", "OSR-Bench Table 2: cognitive map generation", t2, "table2", digits=3),
        Layout("osr_table3", "osr_bench", "OSR-Bench Table 3: QA with / without the map", t3, "table3", digits=3,
               notes=("QA in the vanilla (non-think) prompt; counting scores partial credit",)),
        Layout("osr_table4", "osr_bench", "OSR-Bench Table 4: negative sampling", t4, "table4", digits=3,
               notes=("map metrics from osr_cogmap_negative, QA from osr_qa_negative_vanilla",)),
        Layout("osr_table5", "osr_bench", "OSR-Bench Table 5: well-formatted cognitive maps", t5, "table5", digits=2),
    ]  # fmt: skip


_MMSI_SHORT = {
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


def _mmsi_layout() -> Layout:
    def cat(c: str) -> Leaf:
        return Leaf("mmsi_vanilla", c, sample_metric="accuracy", where=("category", c), unparsed=None)

    columns = (
        Column("accuracy", "Avg.", Leaf("mmsi_vanilla", "accuracy")),
        *(Column(c, _MMSI_SHORT[c], cat(c)) for c in MMSI_CATEGORIES),
        Column("circular", "Circular", Leaf("mmsi_circular", "circular_accuracy", chance=None, unparsed=None)),
    )
    return Layout("mmsi", "mmsi", "MMSI-Bench: overall, per category, circular", columns, "main",
                  notes=("categories and Avg. from mmsi_vanilla; Circular: all four option orders right",))  # fmt: skip


def layouts() -> list[Layout]:
    return [
        _odi_layout("close"),
        _odi_layout("open"),
        _odi_layout("cot"),
        _dori_layout("structured"),
        _dori_layout("unstructured"),
        _mmperspective_layout("mmperspective"),
        _mmperspective_layout("mmperspective_cot"),
        *_osr_layouts(),
        _mmsi_layout(),
    ]


def build_tables(runs: Sequence[Run], *, seed: int = SEED, ci: bool = True) -> list[Table]:
    """Every paper table some run has tasks for (bootstrap CIs over the samples files: the slow part)."""
    candidates = layouts()
    bar = progress(candidates, total=len(candidates), desc="report: tables", unit="table")
    return [t for layout in bar if (t := build_table(layout, runs, seed=seed, ci=ci)) is not None]
