"""Finished lmms-eval runs as the report reads them, each read once: results, samples and conditions.

A :class:`Run` is one ``*_results.json`` and the samples files written next to it (same timestamp),
read in one pass by :func:`load_runs`: the metrics, every samples line (less the prompt and the
document, which the report never reads), and the run's conditions
(:class:`~lmms_spatial.conditions.RunConditions`). Tables, pooling, footnotes and plots read those values only;
nothing is read from disk after loading.

Conditions (what produced the numbers): the short model label, the model and its arguments, the
seed, and per task the documents evaluated against the split's size, the judge (an LLM, the
rule-based fallback and its share, or none), the map source of map tasks, the run options and
whether the task had no documents or failed while scoring; and the software that produced the answers
(lmms-eval, transformers, torch, ...: runs that differ in it are never pooled). A run of ours records them at the top
of its results (``"lmms_spatial"``, schema 1: the issue 33 contract), read here as the typed values the run wrote
(:class:`lmms_spatial.conditions.RunConditions`: one schema, one label rule, one model-args parser); for an older
results file the same value is derived from what it holds (``config``, ``n-samples``, the samples' score records:
:func:`derive_conditions`), and a record of an earlier version is completed by it.

Runs are pooled as seeds of one model only when their conditions are equal except the seed
(:func:`pool_key`), generation settings included (``--gen_kwargs``, and each task's settings in effect where
recorded); :func:`distinct_runs` counts a run given twice once.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_spatial import environment, run_options
from lmms_spatial.conditions import (
    DOCUMENTS_KEY,
    FALLBACK_JUDGE,
    KEY,
    NO_DOCUMENTS,
    UNPARSED_REASON,
    Judge,
    ModelRecord,
    RunConditions,
    TaskRecord,
    evaluated,
    int_or_none,
    model_label,
    text_or_none,
    without_seed,
)

JUDGE_METRICS = frozenset({"judge_score", "llm_accuracy"})  # metrics an LLM judge (or its fallback) scores
_DROPPED = ("input", "doc", "arguments", "doc_hash", "token_counts")  # samples fields the report never reads


# ---------------------------------------------------------------------------------------
# conditions
# ---------------------------------------------------------------------------------------


def pool_key(run: Run, tasks: Iterable[str]) -> tuple[Any, ...]:
    """Runs with equal keys differ at most in their seed: they may be pooled as seeds of one model."""
    c = run.conditions
    mine = sorted(set(tasks) & set(run.conditions.tasks))
    return (run.label if run.labelled else None, c.model.name, c.model.args_without_seed(), c.software,
            c.gen_overrides, c.data_of(mine), tuple((t, c.task(t).comparable()) for t in mine))  # fmt: skip


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
    if ca.model.name != cb.model.name:
        out.append(f"model {ca.model.name} vs {cb.model.name}")
    args_a, args_b = ca.model.args_without_seed(), cb.model.args_without_seed()
    if args_a != args_b:
        out.append(f"model_args {args_a or '(none)'} vs {args_b or '(none)'}")
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
    differing(lambda tc: run_options.describe(tc.condition_options()))
    differing(lambda tc: f"generation {describe_generation(tc.in_effect())}")
    if not out:
        out.append(f"the same conditions and seed ({ca.describe_seed(mine)}) but different results")
    return out


def describe_data(entries: Sequence[tuple[str, str]] | None) -> str:
    """``<key>: <org>/<name>@<commit>``, one per benchmark read (``not recorded`` for None)."""
    if entries is None:
        return "not recorded"
    return ", ".join(f"{name}: {source}" for name, source in entries) or "none"


def software_difference(a: RunConditions, b: RunConditions) -> str:
    """``transformers 5.24.0 vs 4.57.1``: the compared packages whose versions differ (or were not recorded)."""
    sa, sb = dict(a.software), dict(b.software)
    if not sa or not sb:
        return f"{environment.describe(a.environment)} vs {environment.describe(b.environment)}"
    return ", ".join(f"{name} {sa.get(name, '?')} vs {sb.get(name, '?')}" for name in environment.COMPARED
                     if sa.get(name) != sb.get(name))  # fmt: skip


def _fraction(tc: TaskRecord) -> str:
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
    conditions: RunConditions
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
        tc = tc or TaskRecord()
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


def derive_conditions(data: dict[str, Any], lines: Mapping[str, list[dict[str, Any]]]) -> RunConditions:
    """The conditions of a results file: its ``"lmms_spatial"`` key where it has one, completed
    (:meth:`RunConditions.completed`) and for older files replaced by what the file and its samples hold. An older
    file's model seed is its ``seed=`` argument, and lmms-eval's ``--seed`` counts as the seed of its answers."""
    config = data.get("config") or {}
    model = str(config.get("model") or data.get("model_name") or "model")
    args = config.get("model_args")
    limit = config.get("limit")
    n_samples = data.get("n-samples") or {}
    results = data.get("results") or {}
    recorded = RunConditions.from_json(data.get(KEY))
    failed = recorded.failed_tasks or {}
    empty = {t for t, v in results.items() if isinstance(v, Mapping) and v.get(DOCUMENTS_KEY) == NO_DOCUMENTS}
    names = set(n_samples) | set(lines) | empty | set(failed)  # failed_tasks: {task: message}, or the tasks
    tasks = {}
    for task in sorted(names):
        counts = n_samples.get(task) or {}
        documents = evaluated(counts, config.get("offset")) if counts.get("effective") is not None else None
        task_lines = lines.get(task) or []
        judge = _judge_from_lines(task_lines) if task_lines else _judge_from_results(results.get(task, {}), documents)
        tasks[task] = TaskRecord(
            documents=documents,
            of=int_or_none(counts.get("original")),
            limit=limit,
            judge=judge,
            map_source=_map_source(task_lines),
            run_options=_options_from_lines(task_lines),
            empty=task in empty,
            failed=str(failed[task])[:200] if isinstance(failed, Mapping) and task in failed else None,
        )
    derived_model = ModelRecord(model_label(model, args), model, args, seed=without_seed(args)[1],
                                sampling_seed=config.get("random_seed"))  # fmt: skip
    derived = RunConditions(derived_model, tasks, schema=0, gen_kwargs=config.get("gen_kwargs"))
    return recorded.completed(derived) if recorded.schema else derived


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
    return Run(
        path, data, label or conditions.model.label, conditions, lines, labelled=label is not None, skipped=skipped
    )


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
