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

import numpy as np

from lmms_spatial import run_options
from lmms_spatial.metrics.dori import seed_summary
from lmms_spatial.plugin.empty_tasks import DOCUMENTS_KEY, NO_DOCUMENTS
from lmms_spatial.progress import progress
from lmms_spatial.reports import references
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
    from lmms_spatial.reports.layouts import citations

    citation = citations().get(layout.benchmark)
    cited = citation.text() if citation is not None else ""
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


def layouts() -> list[Layout]:
    """Every benchmark's tables, as its own module declares them (:mod:`lmms_spatial.reports.layouts`)."""
    from lmms_spatial.reports.layouts import all_layouts

    return all_layouts()


def build_tables(runs: Sequence[Run], *, seed: int = SEED, ci: bool = True) -> list[Table]:
    """Every paper table some run has tasks for (bootstrap CIs over the samples files: the slow part)."""
    candidates = layouts()
    bar = progress(candidates, total=len(candidates), desc="report: tables", unit="table")
    return [t for layout in bar if (t := build_table(layout, runs, seed=seed, ci=ci)) is not None]
