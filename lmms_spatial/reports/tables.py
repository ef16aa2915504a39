"""The papers' table layouts filled from runs, next to the published rows.

A column is a :class:`Spec`: a :class:`Leaf` (one metric of one task, read from the results
file) or an aggregate of leaves (:class:`Mean`: unweighted mean of the leaves, e.g. a paper's
average over tasks; :class:`Pooled`: mean over questions, e.g. an Overall over all questions). Each
spec also knows its chance level and unparsed rate (the same aggregation of the leaves' ``chance_level`` /
``unparsed_rate``; a leaf restricted to part of a task's questions, such as one skill or one
category, reads them from those questions' samples), its bootstrap draws, and
why a cell of it is empty (:meth:`Leaf.why`): every "-" of a run's row carries its reason.

Tables read prepared values only: each run's results, samples lines and conditions (:class:`~lmms_spatial.
conditions.RunConditions`), loaded once by :func:`~lmms_spatial.reports.runs.load_runs`.

Rows: runs are pooled as seeds of one model only when their conditions are equal except the seed
(:func:`~lmms_spatial.reports.runs.pool_key`); other runs of one model stay separate rows, with a
warning naming the difference. A row's label is the model's short label, with marks for what sets
it apart from the paper's rows: ``(n/N)`` for a partial run (documents of the table's tasks),
``rule-based judge`` for judged columns scored by the rule-based fallback, ``not comparable`` for a
task without documents, ``gen max_new_tokens=16`` for generation settings other than the paper's protocol
(the tasks' own ``generation_kwargs``; ``--gen_kwargs ...`` where the run did not record its settings);
each mark is explained in the table's notes. Runs of different generation settings are never pooled.

Bootstrap 95% CIs: the per-document scores of a leaf come from the samples file; a leaf is
bootstrapped only when the mean of those scores reproduces the results file's value (so
metrics that are not a per-document mean, such as circular accuracy or robustness, get no CI
rather than a wrong one). Documents are resampled within each task, ``ITERATIONS`` times,
with a numpy generator seeded from ``seed`` and the task and metric names (deterministic);
aggregates combine the leaves' draws index by index; the CI is the 2.5 / 97.5 percentile.

Several runs of one model (seeds): mean ± std/sqrt(n) per cell (:func:`seed_summary` of the
scorers, population std).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from lmms_spatial import environment, run_options
from lmms_spatial.conditions import NO_DOCUMENTS, differing_model_args
from lmms_spatial.metrics.aggregation import seed_summary
from lmms_spatial.reports import references, reproduction
from lmms_spatial.reports.citations import Citation
from lmms_spatial.reports.runs import (
    JUDGE_METRICS,
    Judge,
    Run,
    describe_generation,
    differences,
    distinct_runs,
    pool_key,
)

ITERATIONS = 500
SEED = 0
ROLES = ("value", "chance", "unparsed")
JUDGE_UNUSABLE = "judge_unusable"  # a leaf's unparsed rate: answers with no usable verdict (failures + unparsed)


# ---------------------------------------------------------------------------------------
# column specs
# ---------------------------------------------------------------------------------------


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Leaf:
    task: str
    metric: str
    sample_metric: str | None = None  # samples key holding the per-doc record (default: metric)
    score_field: str = "score"
    where: tuple[str, str] | None = None  # keep records whose field equals the value
    chance: str | None = "chance_level"
    unparsed: str | None = "unparsed_rate"  # or JUDGE_UNUSABLE
    no_chance: str | None = None  # why there is no chance level (chance None)
    no_unparsed: str | None = None  # why there is no unparsed rate (unparsed None)

    def tasks(self) -> set[str]:
        return {self.task}

    @property
    def judged(self) -> bool:
        return self.metric in JUDGE_METRICS

    def leaves(self) -> tuple[Leaf, ...]:
        return (self,)

    def value(self, run: Run, role: str = "value") -> float | None:
        if role == "chance":
            if self.chance is None:
                return None
            return self._rate(run, "chance") if self.where else run.value(self.task, self.chance)
        if run.withheld(self.task, self.metric if role == "value" else "unparsed_rate"):
            return None
        if role == "value":
            return run.value(self.task, self.metric)
        if self.unparsed is None:
            return None
        if self.unparsed == JUDGE_UNUSABLE:
            judge, n = run.conditions.task(self.task).judge, run.documents(self.task)
            if judge is None or not n or judge.failures is None:
                return None
            return ((judge.failures or 0) + (judge.unparsed or 0)) / n
        return self._rate(run, "unparsed") if self.where else run.value(self.task, self.unparsed)

    def _matching(self, run: Run) -> bool:
        """Some samples line of the task is one of the questions ``where`` keeps."""
        for line in run.samples(self.task) or []:
            rec = line.get(self.sample_metric or self.metric)
            if isinstance(rec, dict) and str(rec.get(self.where[0])) == self.where[1]:
                return True
        return False

    def _rate(self, run: Run, kind: str) -> float | None:
        """The chance level or unparsed rate over the questions ``where`` keeps, from the samples lines."""
        values = []
        for line in run.samples(self.task) or []:
            rec = line.get(self.sample_metric or self.metric)
            if not isinstance(rec, dict) or str(rec.get(self.where[0])) != self.where[1]:
                continue
            v = _number(line.get("chance_level" if kind == "chance" else "unparsed_rate"))
            if v is None and kind == "unparsed" and "parsed" in rec:
                v = float(rec["parsed"] is None)
            if v is None and kind == "chance" and _number(rec.get("n_options")):
                v = 1.0 / float(rec["n_options"])
            if v is not None:
                values.append(v)
        return math.fsum(values) / len(values) if values else None

    def why(self, run: Run, role: str = "value") -> str | None:
        """Why this leaf's cell of ``run`` is empty (None when it is not)."""
        if self.value(run, role) is not None:
            return None
        if role == "chance" and (self.chance is None or self.no_chance):
            return self.no_chance or f"{self.metric}: no chance level"
        withheld = run.withheld(self.task, self.metric if role == "value" else "unparsed_rate")
        if role != "chance" and withheld:
            return withheld
        if role == "unparsed" and self.unparsed is None:
            return self.no_unparsed or f"{self.metric}: no unparsed rate"
        if self.where and run.samples(self.task) is None:
            return f"per-{self.where[0]} values need the samples file of {self.task} (--log_samples)"
        if self.where and not self._matching(run):
            return f"no {self.where[1].replace('_', ' ')} question among the documents of {self.task}"
        if self.task not in run.results:
            return f"{self.task} not in this run"
        if role == "chance":
            return f"{self.task} records no chance level"
        return f"no value in the results of {self.task} (NaN: no document scored)"

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

    def count(self, run: Run, role: str = "value") -> int:
        """The weight of this leaf in a mean over questions: its scored documents (its documents for rates)."""
        if role == "value":
            scores = self.scores(run)
            if scores is not None:
                return len(scores)
        return run.documents(self.task)


@dataclass(frozen=True)
class Mean:
    """Unweighted mean of the leaves present (a paper's macro average)."""

    parts: tuple[Leaf, ...]
    require_all: bool = True

    def tasks(self) -> set[str]:
        return {p.task for p in self.parts}

    @property
    def judged(self) -> bool:
        return any(p.judged for p in self.parts)

    def leaves(self) -> tuple[Leaf, ...]:
        return self.parts

    def value(self, run: Run, role: str = "value") -> float | None:
        values = [p.value(run, role) for p in self.parts]
        if self.require_all and any(v is None for v in values):
            return None
        values = [v for v in values if v is not None]
        return math.fsum(values) / len(values) if values else None

    def why(self, run: Run, role: str = "value") -> str | None:
        if self.value(run, role) is not None:
            return None
        reasons = list(dict.fromkeys(r for p in self.parts if (r := p.why(run, role))))
        if len(reasons) == 1:
            return reasons[0]
        return f"needs every part; {reasons[0]} (and {len(reasons) - 1} other reasons)" if reasons else None

    def draws(self, run: Run, seed: int) -> np.ndarray | None:
        draws = [p.draws(run, seed) for p in self.parts]
        return None if any(d is None for d in draws) else np.mean(draws, axis=0)


@dataclass(frozen=True)
class Pooled(Mean):
    """Mean over questions: the leaves weighted by their number of scored documents."""

    def value(self, run: Run, role: str = "value") -> float | None:
        pairs = [(p.value(run, role), p.count(run, role)) for p in self.parts]
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
    note: str | None = None  # why the cell is empty (rendered as a footnote)
    inside: bool | None = None  # a Δ cell: whether the paper's value lies inside the run's 95% interval
    grade: str | None = None  # a Δ cell: EASI's grade of |Δ| (lmms_spatial.reports.reproduction)


@dataclass
class Row:
    label: str
    kind: str  # model | delta (the row above against its published row) | reference | chance | unparsed
    cells: list[Cell]
    note: str = ""
    model: str = ""  # the model's label without marks (model, chance and unparsed rows of a run)
    runs: list[Run] = field(default_factory=list, repr=False)  # the runs behind a run's row (their conditions)


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
    scale: float = 100.0  # what a 0-1 score is multiplied by in this table (the paper's convention)
    warnings: list[str] = field(default_factory=list)  # runs of one model kept apart, and why


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

    def judged_tasks(self) -> set[str]:
        return {leaf.task for c in self.columns if c.spec is not None for leaf in c.spec.leaves() if leaf.judged}


def _scale(column: Column, scale: float) -> float:
    return scale if column.scaled else 1.0


def _cell_for_runs(spec: Spec | None, runs: Sequence[Run], factor: float, seed: int, ci: bool) -> Cell:
    if spec is None:
        return Cell()
    values = [spec.value(r) for r in runs]
    if len(runs) > 1:
        present = {str(i): {"v": v} for i, v in enumerate(values) if v is not None}
        if not present:
            return Cell(note=spec.why(runs[0]))
        s = seed_summary(present)["v"]
        return Cell(s["mean"] * factor, err=s["error"] * factor, n=s["seeds"])
    if values[0] is None:
        return Cell(note=spec.why(runs[0]))
    cell = Cell(values[0] * factor)
    if ci:
        draws = spec.draws(runs[0], seed)
        if draws is not None:
            lo, hi = np.percentile(draws, [2.5, 97.5])
            cell.lo, cell.hi = float(lo) * factor, float(hi) * factor
    return cell


def _rate_cell(column: Column, runs: Sequence[Run], role: str, factor: float) -> Cell:
    """A chance level or unparsed rate (mean over the runs of a pooled row), or why there is none."""
    if column.spec is None:
        return Cell()
    if role == "chance" and not column.scaled:
        return Cell(note=f"{column.header}: not a score, no chance level")
    values = [v for r in runs if (v := column.spec.value(r, role)) is not None]
    if not values:
        return Cell(note=column.spec.why(runs[0], role))
    return Cell(math.fsum(values) / len(values) * factor)


# ---------------------------------------------------------------------------------------
# rows: which runs pool, and what their label says
# ---------------------------------------------------------------------------------------


def group_runs(runs: Sequence[Run], tasks: set[str]) -> tuple[list[list[Run]], list[str]]:
    """Runs pooled as seeds: equal conditions on ``tasks`` except the seed, and different seeds (runs of
    equal conditions and seed that differ in their numbers stay apart); first-seen order. A run whose
    numbers on ``tasks`` equal those of a run of equal conditions and seed is counted once: the notes say so."""
    groups: list[list[Run]] = []
    notes = []
    for run in runs:
        key, seeds, digest = pool_key(run, tasks), run.conditions.seeds(tasks), run.digest(tasks)
        for group in groups:
            if pool_key(group[0], tasks) != key:
                continue
            twin = next((r for r in group if r.conditions.seeds(tasks) == seeds and r.digest(tasks) == digest), None)
            if twin is not None:
                notes.append(f"{run.results_file} holds the same results for this table as {twin.results_file}: "
                             "counted once")  # fmt: skip
                break
            if all(r.conditions.seeds(tasks) != seeds for r in group):
                same = next((r for r in group if r.digest(tasks) == digest), None)
                if same is not None:  # pooled all the same (they are the seeds recorded), and said
                    notes.append(
                        f"{run.results_file} and {same.results_file} were recorded with different seeds "
                        f"({run.conditions.describe_seed(tasks)}; {same.conditions.describe_seed(tasks)}) "
                        "and hold the same results for this table: the seed may not have reached the model"
                    )
                group.append(run)
                break
        else:
            groups.append([run])
    return groups, notes


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def _coverage(run: Run, tasks: set[str]) -> tuple[int | None, int | None, float | None]:
    """Documents evaluated and in the split over the table's tasks the run has, and its --limit."""
    mine = [
        run.conditions.task(t) for t in sorted(tasks & set(run.conditions.tasks)) if not run.conditions.task(t).empty
    ]
    return _sum([t.documents for t in mine]), _sum([t.of for t in mine]), next((t.limit for t in mine if t.limit), None)


def _judge_of(run: Run, tasks: set[str]) -> Judge | None:
    """The judge of the table's judged tasks, one value (counts summed; the rule's share over all verdicts)."""
    judges = [j for t in sorted(tasks) if (j := run.conditions.task(t).judge) is not None]
    if not judges:
        return None
    kinds = {j.kind for j in judges}
    kind = "rule" if "rule" in kinds else "llm" if "llm" in kinds else "none"
    answered = [(j.scored or 0) + (j.unparsed or 0) for j in judges]
    # a rule judge whose share was not recorded is the rules alone, as Judge.describe reads it
    shares = [(1.0 if j.share is None else j.share) if j.kind == "rule" else 0.0 for j in judges]
    total = sum(answered)
    share = math.fsum(s * n for s, n in zip(shares, answered, strict=True)) / total if total else None
    models = sorted({j.model for j in judges if j.model})
    first = judges[0]
    return Judge(
        kind,
        model=", ".join(models) or None,
        rubric=first.rubric,
        rubric_version=first.rubric_version,
        share=share if kind == "rule" else None,
        scored=_sum([j.scored for j in judges]),
        failures=_sum([j.failures for j in judges]),
        unparsed=_sum([j.unparsed for j in judges]),
        reason=next((j.reason for j in judges if j.reason), None),
    )


@dataclass
class _Entry:
    """A row of runs (one run, or seeds pooled), its label and the notes that explain its marks."""

    runs: list[Run]
    model: str
    tag: str = ""  # what tells it apart from other rows of the model (their model_args, folder, ...)
    partial: tuple[int, int] | None = None  # (documents, of) of a partial run: its first mark, ``n/N``
    marks: list[str] = field(default_factory=list)  # how it differs from the paper's protocol (judge, gen, ...)
    notes: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        """The model and its tag: how notes name the row."""
        return f"{self.model} ({self.tag})" if self.tag else self.model

    @property
    def label(self) -> str:
        covered = [f"{self.partial[0]}/{self.partial[1]}"] if self.partial else []
        inside = [self.tag] * bool(self.tag) + covered + self.marks
        return f"{self.model} ({'; '.join(inside)})" if inside else self.model


def _entries(groups: list[list[Run]], layout: Layout, published: bool) -> list[_Entry]:
    """The rows' runs, labels (marks first; then a tag where two labels would still be equal) and notes."""
    tasks, judged = layout.tasks(), layout.judged_tasks()
    entries = [_Entry(g, g[0].label) for g in groups]
    facts = []
    for e in entries:
        run = e.runs[0]
        n, of, limit = _coverage(run, tasks)
        partial = n is not None and of is not None and n < of
        judge = _judge_of(run, judged)
        empty = sorted({t for r in e.runs for t in tasks if r.conditions.task(t).empty})
        if partial:
            e.partial = (n, of)
        if judge is not None and judge.kind == "rule":
            share = judge.share if judge.share is not None else 1.0
            e.marks.append("rule-based judge" if share >= 1.0 else f"rule-based judge {share:.0%}")
        if empty:
            e.marks.append("not comparable")
        off, unrecorded = _off_protocol(run, tasks), _unrecorded_overrides(run, tasks)
        if off:
            e.marks.append("gen " + ", ".join(sorted({f"{k}={v}" for k, v, _ in off})))
        elif unrecorded:
            e.marks.append(f"--gen_kwargs {unrecorded}")
        facts.append((partial, n, of, limit, judge, empty, off, unrecorded))
    _disambiguate(entries, tasks)
    for e, (partial, n, of, limit, judge, empty, off, unrecorded) in zip(entries, facts, strict=True):
        who = e.label if sum(x.base == e.base for x in entries) > 1 else e.base  # the notes name the row
        if partial:
            e.notes.append(f"{who}: partial run, {n} of {of} documents of this table's tasks"
                           + (f" (--limit {limit:g})" if isinstance(limit, (int, float)) else "")
                           + ("; the published rows cover the whole split" if published else ""))  # fmt: skip
        if judge is not None:
            counts = f" ({judge.counts()})" if judge.counts() else ""
            if judge.kind == "rule":
                e.notes.append(f"{who}: judged columns scored by {judge.describe()}{counts}"
                               + ("; the published rows were scored by an LLM judge: not comparable with them"
                                  if published else ""))  # fmt: skip
            elif judge.kind == "none":
                e.notes.append(f"{who}: no judge verdict ({judge.reason or 'no judge'}){counts}")
            else:
                e.notes.append(f"{who}: judged by {judge.describe()}{counts}")
        if empty:
            e.notes.append(f"{who}: not comparable to the paper's rows: {NO_DOCUMENTS} for {', '.join(empty)}")
        if off:
            what = "; ".join(f"{k}={v} (protocol {p if p is not None else 'unset'}) on {', '.join(ts)}"
                             for (k, v, p), ts in off.items())  # fmt: skip
            e.notes.append(f"{who}: generation settings other than the paper's protocol (the tasks' own "
                           f"generation_kwargs): {what}" + ("; not comparable with the published rows"
                                                            if published else ""))  # fmt: skip
        elif unrecorded:
            e.notes.append(f"{who}: run with --gen_kwargs {unrecorded}; its tasks' own settings (the paper's "
                           "protocol) are not in this results file: it may not follow the protocol")  # fmt: skip
        if len(e.runs) > 1:
            seeds = ", ".join(r.conditions.describe_seed(tasks) for r in e.runs)
            e.notes.append(f"{who}: mean ± std/sqrt(n) over {len(e.runs)} runs ({seeds})")
    return entries


def _disambiguate(entries: list[_Entry], tasks: set[str]) -> None:
    """Rows of one label (runs of one model kept apart) get the first thing that tells them apart."""
    clashing: dict[str, list[_Entry]] = {}
    for e in entries:
        clashing.setdefault(e.label, []).append(e)
    for same in clashing.values():
        if len(same) < 2:
            continue
        for describe in (
            _differing_args(same),
            lambda e: _generation_tag(e.runs[0], tasks),
            lambda e: e.runs[0].conditions.describe_seed(tasks),
            lambda e: e.runs[0].results_file.parent.name,
            lambda e: e.runs[0].results_file.name[: -len("_results.json")],
            lambda e: str(e.runs[0].results_file),
        ):
            tags = [describe(e) for e in same]
            if len(set(tags)) == len(tags) and all(tags):
                for e, tag in zip(same, tags, strict=True):
                    e.tag = tag
                break


def _off_protocol(run: Run, tasks: set[str]) -> dict[tuple[str, str, str | None], list[str]]:
    """{(setting, in effect, protocol): the table's tasks} where the run's generation differs from the protocol."""
    found: dict[tuple[str, str, str | None], list[str]] = {}
    for task in sorted(tasks & set(run.conditions.tasks)):
        for key, (mine, own) in run.conditions.task(task).off_protocol().items():
            found.setdefault((key, mine, own), []).append(task)
    return found


def _unrecorded_overrides(run: Run, tasks: set[str]) -> str:
    """``--gen_kwargs`` of a run that recorded no generation settings for the table's tasks ('' otherwise)."""
    mine = tasks & set(run.conditions.tasks)
    if not run.conditions.gen_overrides or any(run.conditions.task(t).protocol() is not None for t in mine):
        return ""
    return describe_generation(run.conditions.gen_overrides)


def _generation_tag(run: Run, tasks: set[str]) -> str:
    """The generation settings in effect of the table's tasks (or ``--gen_kwargs``), a row's tag."""
    recorded = [run.conditions.task(t).in_effect() for t in sorted(tasks & set(run.conditions.tasks))]
    shown = sorted({describe_generation(g) for g in recorded if g is not None})
    overrides = run.conditions.gen_overrides
    return " / ".join(shown) or (f"--gen_kwargs {describe_generation(overrides)}" if overrides else "")


def _differing_args(entries: list[_Entry]) -> Callable[[_Entry], str]:
    """An entry's model arguments that not every entry shares (``samples=a`` rather than the whole string)."""
    tags = differing_model_args([e.runs[0].conditions.model.args_without_seed() for e in entries])
    position = {id(e): i for i, e in enumerate(entries)}
    return lambda e: tags[position[id(e)]]


def _pool_warnings(entries: list[_Entry], tasks: set[str]) -> list[str]:
    """Each row of a model after its first: why it was not pooled with it."""
    first: dict[str, _Entry] = {}
    warnings = []
    for e in entries:
        model = e.model
        if model not in first:
            first[model] = e
            continue
        why = "; ".join(differences(first[model].runs[0], e.runs[0], tasks))
        warnings.append(f"WARNING: {first[model].label} and {e.label} are not pooled as seeds of {model}: {why}")
    return warnings


# ---------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------


def build_table(
    layout: Layout, runs: Sequence[Run], *, seed: int = SEED, ci: bool = True, citation: Citation | None = None
) -> Table | None:
    """The layout filled with every model found in ``runs`` (None when no run has its tasks), citing
    ``citation`` (its benchmark's, as :func:`lmms_spatial.reports.report.build_tables` finds it)."""
    tasks = layout.tasks()
    mine = [r for r in runs if tasks & (set(r.results) | set(r.conditions.tasks))]
    if not mine:
        return None
    mine, _ = distinct_runs(mine)  # the report names runs given twice once, above its tables
    ref = references.table(layout.benchmark, layout.reference) if layout.reference else None
    ref_file = references.load(layout.benchmark) if ref else None
    scale = float(ref["scale"]) if ref else 100.0
    cited = citation.text() if citation is not None else ""
    source = f"{ref_file['paper']} {ref['table']}: {cited}" if ref else (cited or "no published rows")
    table = Table(layout.key, layout.title, source, [c.header for c in layout.columns], columns=list(layout.columns))
    table.digits, table.scale = layout.digits, scale
    table.notes.extend(layout.notes)
    groups, counted_once = group_runs(mine, tasks)
    table.notes.extend(counted_once)
    entries = _entries(groups, layout, published=ref is not None)
    chance_rows = []
    for e in entries:
        group = e.runs
        cells = [_cell_for_runs(c.spec, group, _scale(c, scale), seed, ci) for c in layout.columns]
        table.rows.append(Row(e.label, "model", cells, model=e.base, runs=list(group)))
        table.notes.extend(e.notes)
        names = reproduction.run_names(e.model, group[0].conditions.model.args_without_seed())
        published_row = reproduction.match(names, ref["rows"]) if ref else None
        if published_row is not None:
            delta, note = _reproduced(e, published_row, cells, layout, scale, f"{ref_file['paper']} {ref['table']}")
            table.rows.append(Row(f"Δ vs {published_row['model']} (published)", "delta", delta))
            table.notes.append(note)
        for extra_label, make in layout.extra_rows:
            specs = [make(c) for c in layout.columns]
            cells = [
                _cell_for_runs(s, group, _scale(c, scale), seed, ci) if s is not None
                else Cell(note=f"{extra_label}: not defined for this column") if c.spec is not None else Cell()
                for s, c in zip(specs, layout.columns, strict=True)
            ]  # fmt: skip
            if any(c.value is not None for c in cells):
                table.rows.append(
                    Row(f"{e.label} {extra_label}", "model", cells, model=f"{e.base} {extra_label}", runs=list(group))
                )
        unparsed = [_rate_cell(c, group, "unparsed", scale) for c in layout.columns]
        table.rows.append(Row(f"{e.label} unparsed", "unparsed", unparsed, model=e.base, runs=list(group)))
        chance = [_rate_cell(c, group, "chance", scale) for c in layout.columns]
        chance_rows.append(Row(f"{e.label} chance level", "chance", chance, model=e.base))
    table.warnings.extend(_pool_warnings(entries, tasks))
    table.notes.extend(table.warnings)
    table.notes.extend(_settings_notes(entries, tasks))
    merged = _merged(chance_rows)
    if merged is not None:
        table.rows.append(Row("chance level", "chance", merged))
    else:  # the runs saw questions with other chance levels (a partial run, another release): one row each
        table.rows.extend(chance_rows)
    if ref:
        for r in ref["rows"]:
            cells = [Cell(r["values"].get(c.key)) for c in layout.columns]
            table.rows.append(Row(r["model"], "reference", cells, r.get("note", "")))
        if any(c.value is None for r in table.rows if r.kind == "reference" for c in r.cells):
            table.notes.append("published rows: - where the paper prints no value")
        table.notes.extend(ref.get("notes", []))
        table.notes.extend(f"not transcribed: {s}" for s in ref.get("skipped", []))
    return table


def _reproduced(e: _Entry, published: dict, cells: list[Cell], layout: Layout, scale: float,
                source: str) -> tuple[list[Cell], str]:  # fmt: skip
    """The Δ row of a run's row against the published row of its model, and the table's note on it."""
    out, comparisons = [], []
    for column, cell in zip(layout.columns, cells, strict=True):
        paper = _number(published["values"].get(column.key))
        if cell.value is None or paper is None or column.spec is None:
            out.append(Cell())
            continue
        bounds = reproduction.interval(cell.value, cell.lo, cell.hi, cell.err)
        found = reproduction.compare(column.header, cell.value, paper, bounds, scale, percentage=column.scaled)
        comparisons.append(found)
        out.append(Cell(found.delta, inside=found.inside, grade=found.grade))
    tasks = layout.tasks()
    partial = f"{e.partial[0]} of {e.partial[1]} documents" if e.partial else None
    differences = list(e.marks)
    options = [o for r in e.runs for o in r.run_options(tasks)]
    shown = {k: v for o in options for k, v in o.items() if _changes_what_the_model_sees(k)}
    if shown:
        differences.append(f"run options {run_options.describe(shown)}")
    return out, reproduction.verdict(e.label, published["model"], source, comparisons, differences, partial)


def _changes_what_the_model_sees(env: str) -> bool:
    return any(o.env == env and o.affects in ("images", "prompt") for o in run_options.OPTIONS)


def _merged(rows: list[Row]) -> list[Cell] | None:
    """One row of cells when the rows agree wherever they have a value (None when they do not)."""
    out = []
    for cells in zip(*(r.cells for r in rows), strict=True):
        values = {round(c.value, 9) for c in cells if c.value is not None}
        if len(values) > 1:
            return None
        out.append(next((c for c in cells if c.value is not None), cells[0]))
    return out


def _settings_notes(entries: list[_Entry], tasks: set[str]) -> list[str]:
    """Each row's non-default run options, and a warning when models saw different inputs."""
    notes, seen = [], {}
    for e in entries:
        options = [o for run in e.runs for o in run.run_options(tasks)]
        shown = sorted({run_options.describe(o) for o in options})
        if shown and shown != ["defaults"]:
            notes.append(f"{e.base}: run with {' / '.join(shown)}")
        # what the model saw, apart from an option order seed (seeds are pooled on purpose)
        seen[e.base] = sorted({run_options.describe(run_options.what_the_model_saw(o)) for o in options})
    if len({tuple(v) for v in seen.values() if v}) > 1:
        notes.append("WARNING: these models were run with different prompt or image settings (above); "
                     "their rows are not directly comparable")  # fmt: skip
    notes.extend(software_warning(entries))
    return notes


def software_warning(entries: list[_Entry]) -> list[str]:
    """A warning when the rows were produced by different lmms-eval / transformers / torch versions (numbers move
    with them), naming each row's versions of the packages that differ; rows that recorded none are named too."""
    software = {e.label: dict(e.runs[0].conditions.software) for e in entries}
    if len({tuple(sorted(s.items())) for s in software.values()}) <= 1:
        return []
    differing = [n for n in environment.COMPARED if len({s.get(n) for s in software.values()}) > 1]
    rows = "; ".join(
        f"{label}: " + (", ".join(f"{n} {s.get(n, '?')}" for n in differing) if s else "software not recorded")
        for label, s in software.items()
    )
    return [f"WARNING: these rows were produced with different software ({rows}); numbers can move with these "
            "versions"]  # fmt: skip


def tasks_without_documents(group: Sequence[Run], tasks: set[str]) -> list[str]:
    """The tasks of a table that a model's runs had no documents for (lmms_spatial.plugin.empty_tasks
    names them in the results): their cells stay empty and the row cannot be set against the paper's."""
    return sorted({t for run in group for t in tasks if run.conditions.task(t).empty})
