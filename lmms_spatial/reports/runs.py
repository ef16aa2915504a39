"""Finished lmms-eval runs as the report reads them, each read once: results, samples and conditions.

A :class:`Run` is one ``*_results.json`` and the samples files written next to it (same timestamp),
read in one pass by :func:`load_runs`: the metrics, every samples line (less the prompt and the
document, which the report never reads), and the run's :class:`Conditions`. Tables, pooling,
footnotes and plots read those values only; nothing is read from disk after loading.

Conditions (what produced the numbers): the short model label, the model and its arguments, the
seed, and per task the documents evaluated against the split's size, the judge (an LLM, the
rule-based fallback and its share, or none), the map source of map tasks, the run options and
whether the task had no documents or failed while scoring; and the software that produced the answers
(lmms-eval, transformers, torch, ...: runs that differ in it are never pooled). A run of ours records them at the top
of its results (``"lmms_spatial"``, schema 1: the issue 33 contract), read here as the typed values the run wrote
(:class:`lmms_spatial.conditions.RunConditions`: one schema, one label rule); for an older results file the
same value is derived from what it holds (``config``, ``n-samples``, the samples' score records).

Runs are pooled as seeds of one model only when their conditions are equal except the seed
(:func:`pool_key`), generation settings included (``--gen_kwargs``, and each task's settings in effect where
recorded); :func:`distinct_runs` counts a run given twice once.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from lmms_spatial import environment, run_options
from lmms_spatial.conditions import (
    DOCUMENTS_KEY,
    FALLBACK_JUDGE,
    KEY,
    NO_DOCUMENTS,
    UNPARSED_REASON,
    Generation,
    Judge,
    RunConditions,
    evaluated,
    int_or_none,
    model_label,
    text_or_none,
)

_SEED_ARG = re.compile(r"(^|,)\s*seed\s*=\s*([^,]*)")
JUDGE_METRICS = frozenset({"judge_score", "llm_accuracy"})  # metrics an LLM judge (or its fallback) scores
_DROPPED = ("input", "doc", "arguments", "doc_hash", "token_counts")  # samples fields the report never reads


@cache
def _seed_options() -> frozenset[str]:
    """Run options that are seeds, not conditions (each benchmark's ``seed_options`` in its declaration): runs of
    several such seeds pool."""
    from lmms_spatial.data.registry import BENCHMARKS

    return frozenset(option for bench in BENCHMARKS.values() for option in bench.seed_options)


def _option_seed(options: Mapping[str, str]) -> str | None:
    """The values of the seed options a task ran with (None: none set)."""
    found = [options[k] for k in sorted(_seed_options()) if k in options]
    return ",".join(found) if found else None


# ---------------------------------------------------------------------------------------
# conditions
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskConditions:
    documents: int | None = None  # evaluated (after --limit)
    of: int | None = None  # in the split
    limit: float | None = None
    judge: Judge | None = None  # None: the task needs no judge
    map_source: str | None = None  # "own_map" | "none" | "partial"; None: not a map task
    run_options: tuple[tuple[str, str], ...] | None = None  # None: not recorded (older samples)
    seed: str | None = None
    empty: bool = False  # no documents in this release
    failed: str | None = None  # scoring failed (the message)
    generation: tuple[tuple[str, str], ...] | None = None  # generation settings in effect; None: not recorded
    protocol: tuple[tuple[str, str], ...] | None = None  # the task's own (its YAML's: the paper's protocol)

    @property
    def partial(self) -> bool:
        return self.documents is not None and self.of is not None and self.documents < self.of

    def options(self) -> dict[str, str]:
        return dict(self.run_options or ())

    def comparable(self) -> tuple[Any, ...]:
        """Everything that must be equal to pool two runs' task (an option seed is a seed)."""
        options = tuple((k, v) for k, v in self.options().items() if k not in _seed_options())
        return (self.documents, self.of, self.empty, self.judge.identity() if self.judge else None, self.map_source,
                options, self.generation)  # fmt: skip

    def off_protocol(self) -> dict[str, tuple[str, str | None]]:
        """{setting: (in effect, the protocol's or None)} where the generation settings differ from the task's own."""
        if self.generation is None or self.protocol is None:
            return {}
        mine, own = dict(self.generation), dict(self.protocol)
        return {k: (mine[k], own.get(k)) for k in sorted(mine) if mine[k] != own.get(k)} | {
            k: ("(unset)", own[k]) for k in sorted(own) if k not in mine}  # fmt: skip


@dataclass(frozen=True)
class Conditions:
    label: str  # short: pretrained / model_version / model basename, else the model's name
    model: str
    args: str  # model_args without seed=
    seed: str | None = None  # model_args seed= (or the recorded model seed)
    random_seed: str | None = None  # lmms-eval --seed (config.random_seed)
    tasks: Mapping[str, TaskConditions] = field(default_factory=dict)
    recorded: bool = False  # read from the results' "lmms_spatial" key (else derived)
    # the software that produced the answers (lmms_spatial.environment.snapshot); None: not recorded
    environment: Mapping[str, Any] | None = field(default=None, compare=False)
    gen_overrides: tuple[tuple[str, str], ...] = ()  # --gen_kwargs (lmms-eval's config.gen_kwargs)
    # where each benchmark's documents came from ((entry, "<hub id>@<revision>" or "a local copy"), ...); None: not
    # recorded (results files written before 2026-11-26)
    data: tuple[tuple[str, str], ...] | None = None

    def data_of(self, tasks: Iterable[str]) -> tuple[tuple[str, str], ...] | None:
        """The data entries of the benchmarks ``tasks`` belong to (a benchmark's entry, or its configs')."""
        if self.data is None:
            return None
        keys = {_benchmark_of(t) for t in tasks}
        return tuple((name, source) for name, source in self.data if name.split("/", 1)[0] in keys)

    @property
    def software(self) -> tuple[tuple[str, str], ...]:
        """The versions a report compares between rows (lmms-eval, transformers, torch); () when not recorded."""
        return environment.compared(self.environment)

    def task(self, name: str) -> TaskConditions:
        return self.tasks.get(name) or TaskConditions()

    def seeds(self, tasks: Iterable[str]) -> tuple[Any, ...]:
        """What makes two runs of equal conditions different seeds."""
        option_seeds = sorted({_option_seed(self.task(t).options()) or "" for t in tasks if t in self.tasks})
        task_seeds = sorted({self.task(t).seed or "" for t in tasks if t in self.tasks})
        return (self.seed, self.random_seed, tuple(task_seeds), tuple(option_seeds))

    def describe_seed(self, tasks: Iterable[str]) -> str:
        tasks = list(tasks)
        option_seeds = sorted({_option_seed(self.task(t).options()) for t in tasks if t in self.tasks} - {None})
        if option_seeds:
            return f"option seed {', '.join(option_seeds)}"
        if self.seed is not None:
            return f"seed={self.seed}"
        task_seeds = sorted({self.task(t).seed for t in tasks if t in self.tasks} - {None})
        if task_seeds:
            return f"seed {', '.join(task_seeds)}"
        return f"--seed {self.random_seed}" if self.random_seed is not None else "seed unknown"


def pool_key(run: Run, tasks: Iterable[str]) -> tuple[Any, ...]:
    """Runs with equal keys differ at most in their seed: they may be pooled as seeds of one model."""
    c = run.conditions
    mine = sorted(set(tasks) & set(run.conditions.tasks))
    return (run.label if run.labelled else None, c.model, c.args, c.software, c.gen_overrides, c.data_of(mine),
            tuple((t, c.task(t).comparable()) for t in mine))  # fmt: skip


def generation_items(kwargs: Any) -> tuple[tuple[str, str], ...] | None:
    """Generation settings as comparable text (``0.0`` and ``0`` alike, as lmms-eval's cache keys them)."""
    if not isinstance(kwargs, Mapping):
        return None

    def plain(value: Any) -> Any:
        return int(value) if isinstance(value, float) and value.is_integer() else value

    return tuple(sorted((str(k), json.dumps(plain(v), sort_keys=True, default=str)) for k, v in kwargs.items()))


def describe_generation(items: Iterable[tuple[str, str]] | None) -> str:
    """``max_new_tokens=16, temperature=0`` (``not recorded`` for None)."""
    if items is None:
        return "not recorded"
    return ", ".join(f"{k}={v}" for k, v in items) or "none"


def differences(a: Run, b: Run, tasks: Iterable[str]) -> list[str]:
    """What keeps two runs apart, in words (``documents 3/12 vs 12/12 (a_task)``)."""
    ca, cb = a.conditions, b.conditions
    out = []
    if a.labelled and b.labelled and a.label != b.label:
        out.append(f"labels {a.label} vs {b.label}")
    if ca.model != cb.model:
        out.append(f"model {ca.model} vs {cb.model}")
    if ca.args != cb.args:
        out.append(f"model_args {ca.args or '(none)'} vs {cb.args or '(none)'}")
    if ca.software != cb.software:
        out.append(f"software {software_difference(ca, cb)}")
    if ca.gen_overrides != cb.gen_overrides:
        out.append(f"--gen_kwargs {describe_generation(ca.gen_overrides)} vs {describe_generation(cb.gen_overrides)}")
    mine = sorted(set(tasks) & (set(ca.tasks) | set(cb.tasks)))
    if ca.data_of(mine) != cb.data_of(mine):
        out.append(f"data {describe_data(ca.data_of(mine))} vs {describe_data(cb.data_of(mine))}")
    only_a = [t for t in mine if t in ca.tasks and t not in cb.tasks]
    only_b = [t for t in mine if t in cb.tasks and t not in ca.tasks]
    if only_a or only_b:
        out.append(f"tasks run {_tasks(only_a) or '-'} vs {_tasks(only_b) or '-'}")
    both = [t for t in mine if t in ca.tasks and t in cb.tasks]

    def differing(describe) -> None:
        by_pair: dict[tuple[str, str], list[str]] = {}
        for t in both:
            x, y = describe(ca.task(t)), describe(cb.task(t))
            if x != y:
                by_pair.setdefault((x, y), []).append(t)
        out.extend(f"{x} vs {y} ({_tasks(ts)})" for (x, y), ts in by_pair.items())

    differing(lambda tc: f"documents {_fraction(tc)}")
    differing(lambda tc: "judge " + (tc.judge.describe() if tc.judge else "none needed"))
    differing(lambda tc: f"map {tc.map_source}")
    differing(lambda tc: run_options.describe({k: v for k, v in tc.options().items() if k not in _seed_options()}))
    differing(lambda tc: f"generation {describe_generation(tc.generation)}")
    if not out:
        out.append(f"the same conditions and seed ({ca.describe_seed(mine)}) but different results")
    return out


def describe_data(entries: Sequence[tuple[str, str]] | None) -> str:
    """``<key>: <org>/<name>@<commit>``, one per benchmark read (``not recorded`` for None)."""
    if entries is None:
        return "not recorded"
    return ", ".join(f"{name}: {source}" for name, source in entries) or "none"


def data_entries(recorded: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...] | None:
    """A run's recorded data as the report compares it: a Hub release by id and revision; a local copy only as
    such (its path and ``datasets`` fingerprint follow the machine and the files' times, not their content)."""
    if recorded is None:
        return None
    return tuple(sorted((name, "a local copy" if r.local else f"{r.source}@{r.revision or 'default branch'}")
                        for name, r in recorded.items()))  # fmt: skip


@cache
def _task_benchmarks() -> dict[str, str]:
    from lmms_spatial.paths import task_benchmarks

    return task_benchmarks()


def _benchmark_of(task: str) -> str | None:
    return _task_benchmarks().get(task)


def software_difference(a: Conditions, b: Conditions) -> str:
    """``transformers 5.24.0 vs 4.57.1``: the compared packages whose versions differ (or were not recorded)."""
    sa, sb = dict(a.software), dict(b.software)
    if not sa or not sb:
        return f"{environment.describe(a.environment)} vs {environment.describe(b.environment)}"
    return ", ".join(f"{name} {sa.get(name, '?')} vs {sb.get(name, '?')}" for name in environment.COMPARED
                     if sa.get(name) != sb.get(name))  # fmt: skip


def _fraction(tc: TaskConditions) -> str:
    if tc.empty:
        return "none (no documents in this release)"
    return f"{tc.documents if tc.documents is not None else '?'}/{tc.of if tc.of is not None else '?'}"


def _tasks(tasks: Sequence[str]) -> str:
    return ", ".join(tasks) if len(tasks) <= 3 else f"{', '.join(tasks[:3])} and {len(tasks) - 3} more"


# ---------------------------------------------------------------------------------------
# runs
# ---------------------------------------------------------------------------------------


@dataclass
class Run:
    """One ``*_results.json``, its samples lines and its conditions, all read when it is loaded."""

    results_file: Path
    data: dict[str, Any]
    label: str  # the name given with --labels, else the short model label
    conditions: Conditions
    lines: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)  # task -> samples lines
    labelled: bool = False  # label from --labels
    skipped: list[SkippedLine] = field(default_factory=list, repr=False)  # lines of its samples files not samples

    @property
    def results(self) -> dict[str, dict[str, Any]]:
        return self.data.get("results", {})

    def has(self, task: str) -> bool:
        return task in self.results

    def value(self, task: str, metric: str) -> float | None:
        raw = self.results.get(task, {}).get(f"{metric},none")
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or math.isnan(raw):
            return None
        return float(raw)

    def samples(self, task: str) -> list[dict[str, Any]] | None:
        """The samples lines of ``task`` as loaded (None without a samples file)."""
        return self.lines.get(task)

    def documents(self, task: str) -> int:
        """Documents evaluated for ``task`` (0 when unknown)."""
        return int(self.conditions.task(task).documents or 0)

    def skipped_in(self, tasks: Iterable[str]) -> list[SkippedLine]:
        """The lines of the samples files of ``tasks`` that were skipped, not samples."""
        stamp = self.results_file.name[: -len("_results.json")]
        files = {f"{stamp}_samples_{task}.jsonl" for task in tasks}
        return [bad for bad in self.skipped if bad.file.name in files]

    def withheld(self, task: str, metric: str) -> str | None:
        """Why ``metric`` of ``task`` must not be shown, whatever the results file says; None when it may."""
        tc = self.conditions.tasks.get(task)
        if task not in self.results and tc is None:
            return f"{task} not in this run"
        tc = tc or TaskConditions()
        if tc.empty:
            return f"{task}: no documents in this release"
        if tc.failed:
            return f"{task}: scoring failed ({tc.failed})"
        if tc.map_source == "none":
            return "no map: answered without a map drawn by the model (a chat model draws its own; or --model staged)"
        if tc.map_source == "partial":
            return "map stage: only some answers had the model's own map in the conversation"
        judge = tc.judge
        if metric in JUDGE_METRICS and judge is not None:
            if judge.kind == "none":
                return (f"no judge: no answer was judged ({judge.reason or 'no verdict'}); set LMMS_SPATIAL_JUDGE "
                        "and re-score the samples with --model replay")  # fmt: skip
            if judge.unparsed and not judge.scored:
                return "judge: every verdict unparsed (no answer scored)"
        return None

    def run_options(self, tasks: Iterable[str]) -> list[dict[str, str]]:
        """The distinct run options (:mod:`lmms_spatial.run_options`) recorded for ``tasks``."""
        chosen = sorted(set(tasks) & set(self.conditions.tasks))
        found = [self.conditions.task(t).options() for t in chosen if self.conditions.task(t).run_options is not None]
        return run_options.collect([{run_options.RECORD_KEY: o} for o in found])

    def digest(self, tasks: Iterable[str] | None = None) -> str:
        """The run's numbers (of ``tasks``, default all): two runs with equal digests hold the same results."""
        keep = set(self.results) | set(self.data.get("n-samples", {})) if tasks is None else set(tasks)
        payload = {
            "results": {t: v for t, v in self.results.items() if t in keep},
            "n-samples": {t: v for t, v in self.data.get("n-samples", {}).items() if t in keep},
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _args_text(args: str | Mapping[str, Any] | None) -> str:
    if isinstance(args, Mapping):
        return ",".join(f"{k}={v}" for k, v in args.items())
    return str(args or "")


def _without_seed(args: str) -> tuple[str, str | None]:
    match = _SEED_ARG.search(args)
    seed = match.group(2).strip() if match else None
    return _SEED_ARG.sub("", args).strip(", "), seed


def _judge_from_lines(lines: Sequence[Mapping[str, Any]]) -> Judge | None:
    """The judge of a task from its score records (None when no record is a judge's)."""
    verdicts = []
    for line in lines:
        for value in line.values():
            if isinstance(value, Mapping) and (
                "rubric" in value or (value.get("failed") is True and str(value.get("reason", "")).startswith("judge_"))
            ):
                verdicts.append(value)
                break
    if not verdicts:
        return None
    unparsed = sum(1 for v in verdicts if v.get("reason") == UNPARSED_REASON)
    failed = [v for v in verdicts if v.get("failed") and v.get("reason") != UNPARSED_REASON]
    answered = [v for v in verdicts if not v.get("failed") or v.get("reason") == UNPARSED_REASON]
    rule = [v for v in answered if v.get("fallback") or v.get("judge") == FALLBACK_JUDGE]
    llm = sorted({str(v.get("judge")) for v in answered if v not in rule and v.get("judge")})
    rubric = next((v for v in answered if v.get("rubric")), {})
    counts = {"scored": len(answered) - unparsed, "failures": len(failed), "unparsed": unparsed}
    common = {"rubric": rubric.get("rubric"), "rubric_version": text_or_none(rubric.get("rubric_version")), **counts}
    if not answered:
        reason = str(failed[0].get("reason", "")).removeprefix("judge_failed:").split(":")[0] if failed else None
        return Judge("none", reason=reason or "no verdict", **counts)
    if rule:
        return Judge("rule", model=", ".join(llm) or None, share=len(rule) / len(answered), **common)
    return Judge("llm", model=", ".join(llm) or None, **common)


def _judge_from_results(values: Mapping[str, Any], documents: int | None) -> Judge | None:
    if "judge_failures,none" not in values:
        return None
    failures = int_or_none(values.get("judge_failures,none"))
    unparsed = int_or_none(values.get("judge_unparsed,none"))
    share = values.get("judge_fallback_share,none")
    share = float(share) if isinstance(share, (int, float)) and not math.isnan(share) else None
    scored = None if documents is None else max(0, documents - (failures or 0) - (unparsed or 0))
    counts = {"scored": scored, "failures": failures, "unparsed": unparsed}
    if documents is not None and failures is not None and failures >= documents:
        return Judge("none", reason="every judge call failed", **counts)
    if share:
        return Judge("rule", share=share, **counts)
    return Judge("llm", **counts)


def _map_source(lines: Sequence[Mapping[str, Any]]) -> str | None:
    """own_map / none / partial from the records' ``stage_outputs`` (None: not a map task)."""
    outputs = []
    for line in lines:
        record = next((v for v in line.values() if isinstance(v, Mapping) and "stage_outputs" in v), None)
        if record is not None:
            stages = record.get("stage_outputs") or {}
            outputs.append(bool(stages) and all(v is not None for v in stages.values()))
    if not outputs:
        return None
    return "own_map" if all(outputs) else "none" if not any(outputs) else "partial"


def _options_from_lines(lines: Sequence[Mapping[str, Any]]) -> dict[str, str] | None:
    first = next(iter(lines), {})  # one run, one setting: the first sample says it
    for value in first.values():
        if isinstance(value, Mapping):
            options = run_options.from_record(value)
            if options is not None:
                return options
    return None


def derive_conditions(data: dict[str, Any], lines: Mapping[str, list[dict[str, Any]]]) -> Conditions:
    """The conditions of a results file: its ``"lmms_spatial"`` key where it has one, completed (and for
    older files replaced) by what the file and its samples hold."""
    config = data.get("config") or {}
    model = str(config.get("model") or data.get("model_name") or "model")
    args, seed = _without_seed(_args_text(config.get("model_args")))
    random_seed = text_or_none(config.get("random_seed"))
    limit = config.get("limit")
    n_samples = data.get("n-samples") or {}
    results = data.get("results") or {}
    recorded = RunConditions.from_json(data.get(KEY))
    failed = recorded.failed_tasks or {}
    empty = {t for t, v in results.items() if isinstance(v, Mapping) and v.get(DOCUMENTS_KEY) == NO_DOCUMENTS}
    names = set(n_samples) | set(lines) | empty
    names |= set(failed) if isinstance(failed, Mapping) else set(failed)
    tasks = {}
    for task in sorted(names):
        counts = n_samples.get(task) or {}
        documents = evaluated(counts, config.get("offset")) if counts.get("effective") is not None else None
        of = int_or_none(counts.get("original"))
        task_lines = lines.get(task) or []
        judge = _judge_from_lines(task_lines) if task_lines else _judge_from_results(results.get(task, {}), documents)
        options = _options_from_lines(task_lines)
        tasks[task] = TaskConditions(
            documents=documents,
            of=of,
            limit=limit,
            judge=judge,
            map_source=_map_source(task_lines),
            run_options=None if options is None else tuple(sorted(options.items())),
            empty=task in empty,
            failed=str(failed[task])[:200] if isinstance(failed, Mapping) and task in failed else None,
        )
    derived = Conditions(model_label(model, config.get("model_args")), model, args, seed, random_seed, tasks,
                         gen_overrides=generation_items(config.get("gen_kwargs")) or ())  # fmt: skip
    return _overlay(derived, recorded) if recorded.schema else derived


def _overlay(derived: Conditions, recorded: RunConditions) -> Conditions:
    """The recorded conditions (issue 33 contract), each field a file of an earlier version lacks taken from the
    derived ones."""
    model = recorded.model
    args, seed = _without_seed(_args_text(model.args)) if model.args is not None else (derived.args, None)
    tasks = dict(derived.tasks)
    for task, entry in recorded.tasks.items():
        old = tasks.get(task) or TaskConditions()
        given = entry.given
        tasks[task] = TaskConditions(
            documents=entry.documents if "documents" in given else old.documents,
            of=entry.of if "of" in given else old.of,
            limit=entry.limit if "limit" in given else old.limit,
            judge=_recorded_judge(entry.judge, old.judge) if "judge" in given else old.judge,
            map_source=entry.map_source if "map_source" in given else old.map_source,
            run_options=tuple(sorted(entry.run_options.items())) if entry.run_options is not None else old.run_options,
            seed=text_or_none(entry.seed) if entry.seed is not None else old.seed,
            empty=old.empty,
            failed=old.failed,
            **_recorded_generation(entry.generation),
        )
    return Conditions(
        label=model.label or derived.label,
        model=model.name or derived.model,
        args=args,
        seed=text_or_none(model.seed) if model.seed is not None else (seed or derived.seed),
        # the seeds that reached the answers (lmms-eval's --seed only where the run sampled on a local model); an
        # older record's --seed counts where the model had no seed of its own, as before
        random_seed=(text_or_none(model.sampling_seed) if model.seeds_recorded
                     else derived.random_seed if model.seed is None else None),  # fmt: skip
        tasks=tasks,
        recorded=True,
        environment=recorded.environment,
        gen_overrides=derived.gen_overrides,
        data=data_entries(recorded.data),
    )


def _recorded_generation(entry: Generation | None) -> dict[str, Any]:
    """A task's recorded ``generation`` (in effect, protocol) as :class:`TaskConditions` fields."""
    if entry is None:
        return {}
    return {"generation": generation_items(entry.in_effect), "protocol": generation_items(entry.protocol)}


def _recorded_judge(entry: Judge | None, derived: Judge | None) -> Judge | None:
    """The recorded judge, each absent field taken from the one the score records show (the rule's text, or why
    there was none, as its ``reason``)."""
    if entry is None:
        return None
    d = derived or Judge(entry.kind)
    return Judge(
        entry.kind,
        model=entry.model or d.model,
        rubric=entry.rubric or d.rubric,
        rubric_version=entry.rubric_version or d.rubric_version,
        share=entry.share if entry.share is not None else d.share,
        scored=entry.scored if "scored" in entry.given else d.scored,
        failures=entry.failures if "failures" in entry.given else d.failures,
        unparsed=entry.unparsed if "unparsed" in entry.given else d.unparsed,
        reason=entry.reason or entry.rule or d.reason,
    )


def find_results_files(paths: Iterable[Path | str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_file() and p.name.endswith("_results.json"):
            files.append(p)
        elif p.is_dir():
            files.extend(sorted(p.rglob("*_results.json")))
        else:
            raise FileNotFoundError(f"{p}: neither a *_results.json file nor a folder")
    if not files:
        raise FileNotFoundError(f"no *_results.json under {', '.join(map(str, paths))}")
    return files


@dataclass(frozen=True)
class SkippedLine:
    """A line of a samples file that is not a sample, and why (:func:`read_samples` skips it)."""

    file: Path
    line: int  # counted from 1, as an editor counts lines
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.why}"


def read_samples(path: Path, drop: Iterable[str] = ()) -> tuple[list[dict[str, Any]], list[SkippedLine]]:
    """The samples of a samples file (each less the fields ``drop`` names), and the lines that are not samples.

    Read in binary and decoded line by line, so a line that is not a sample costs that line, never the file: one
    cut short (the last line of a run killed while writing it), with bytes that are not UTF-8 (a model wrote them),
    not JSON, or JSON that is not an object is skipped and said (:class:`SkippedLine`). Lines end as in text mode
    (``\\n``, ``\\r\\n`` or ``\\r``); blank lines are no lines of samples and are passed over unsaid."""
    samples: list[dict[str, Any]] = []
    skipped: list[SkippedLine] = []
    number = 0
    with open(path, "rb") as fh:
        for chunk in fh:
            pieces = chunk.splitlines()
            for i, raw in enumerate(pieces):
                number += 1
                last = i == len(pieces) - 1 and not chunk.endswith((b"\n", b"\r"))  # no line end: the file's end
                sample = _sample(raw, last)
                if isinstance(sample, str):
                    skipped.append(SkippedLine(path, number, sample))
                elif sample is not None:
                    for key in drop:
                        sample.pop(key, None)
                    samples.append(sample)
    return samples, skipped


def _sample(raw: bytes, last: bool) -> dict[str, Any] | str | None:
    """One line of a samples file: the sample, why it is none (a str), or None for a blank line. ``last``: the
    file's last line, with no line end."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 (0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line)"
    if not text.strip():
        return None
    try:
        sample = json.loads(text)
    except json.JSONDecodeError as exc:
        what = f"{exc.msg}: column {exc.colno}"
        if last:
            return f"cut short: the last line, with no line end, is not whole JSON ({what}), as a killed run leaves it"
        return f"not JSON ({what})"
    if not isinstance(sample, dict):
        return f"not a samples record (a JSON {type(sample).__name__}, not an object)"
    return sample


SKIPPED_NAMED = 10  # the lines of one samples file named one by one in the warnings (the others are counted)


def skipped_warnings(runs: Sequence[Run]) -> list[str]:
    """The report's warnings of the lines its samples files held that are not samples: per run, how many and what
    they leave out, then each line (:func:`name_skipped`)."""
    out = []
    for run in runs:
        if run.skipped:
            out.append(f"WARNING: {run.label}: {count_of(len(run.skipped), 'samples line')} skipped, not samples "
                       f"({run.results_file.parent}): the values read from the samples lines (CIs, per-question "
                       "values, analyses) leave them out")  # fmt: skip
            out += [f"WARNING: skipped {line}" for line in name_skipped(run.skipped)]
    return out


def name_skipped(skipped: Sequence[SkippedLine]) -> list[str]:
    """``file:line: why`` of each skipped line, at most :data:`SKIPPED_NAMED` of one file, then how many more."""
    by_file: dict[Path, list[SkippedLine]] = {}
    for bad in skipped:
        by_file.setdefault(bad.file, []).append(bad)
    out = []
    for file, bad in by_file.items():
        out += [str(b) for b in bad[:SKIPPED_NAMED]]
        if len(bad) > SKIPPED_NAMED:
            out.append(f"{file}: {count_of(len(bad) - SKIPPED_NAMED, 'more line')} not samples")
    return out


def count_of(n: int, noun: str) -> str:
    """``4 lines``, ``1 line``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def load_run(path: Path, label: str | None = None) -> Run:
    """One results file, every samples file beside it (same timestamp) and its conditions."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # cut short (a writer killed mid-file), not lmms-eval's
        raise ValueError(
            f"{path}: not a JSON results file ({exc}); move it out of the folder, or run it again"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a results file (a JSON {type(data).__name__}, lmms-eval writes an object)")
    stamp = path.name[: -len("_results.json")]
    prefix = f"{stamp}_samples_"
    lines: dict[str, list[dict[str, Any]]] = {}
    skipped: list[SkippedLine] = []
    for f in sorted(path.parent.glob(f"{prefix}*.jsonl")):
        lines[f.name[len(prefix) : -len(".jsonl")]], bad = read_samples(f, _DROPPED)
        skipped += bad
    conditions = derive_conditions(data, lines)
    return Run(path, data, label or conditions.label, conditions, lines, labelled=label is not None, skipped=skipped)


def load_runs(paths: Iterable[Path | str], labels: list[str] | None = None) -> list[Run]:
    """Every run found under ``paths``, read once; ``labels`` (one per results file, in order) override the names."""
    files = find_results_files(paths)
    if labels and len(labels) != len(files):
        raise ValueError(f"{len(labels)} labels for {len(files)} results files: {[str(f) for f in files]}")
    return [load_run(f, labels[i] if labels else None) for i, f in enumerate(files)]


def distinct_runs(runs: Sequence[Run]) -> tuple[list[Run], list[str]]:
    """``runs`` with each run given twice (the same results file, or a file with the same results,
    conditions and seed) kept once, and a warning for each one left out."""
    kept: list[Run] = []
    warnings = []
    for run in runs:
        twin = next((k for k in kept if _same_run(k, run)), None)
        if twin is None:
            kept.append(run)
        elif twin.results_file.resolve() == run.results_file.resolve():
            warnings.append(f"WARNING: {run.results_file} was given twice; counted once")
        else:
            warnings.append(f"WARNING: {run.results_file} holds the same results as {twin.results_file} "
                            f"({twin.label}); counted once, not as a second seed")  # fmt: skip
    return kept, warnings


def _same_run(a: Run, b: Run) -> bool:
    if a.results_file.resolve() == b.results_file.resolve():
        return True
    tasks = set(a.conditions.tasks) | set(b.conditions.tasks)
    same_seed = a.conditions.seeds(tasks) == b.conditions.seeds(tasks)
    return same_seed and pool_key(a, tasks) == pool_key(b, tasks) and a.digest() == b.digest()
