"""A run's conditions as typed values: what a run of ours writes (``results["lmms_spatial"]``, schema 1) and
``lmms-spatial report`` reads back, spelled once.

The run builds them (:mod:`lmms_spatial.plugin.conditions`) and writes :meth:`RunConditions.to_json`; the report
reads :meth:`RunConditions.from_json` (:mod:`lmms_spatial.reports.runs`), so the two sides share one model-args
parser (:func:`parse_model_args`), one label rule (:func:`model_label`) and one judge vocabulary (:class:`Judge`).
The JSON layout, key order included, is the one documented in :mod:`lmms_spatial.plugin.conditions`: a results file
is byte-identical to what earlier versions wrote. A file written by an earlier version may lack keys: each value
records the keys its JSON held (``given``), so the report completes only what is absent.

A benchmark declares what its tasks need of a run in one named value, :class:`TaskNeeds`, exported as
``TASK_NEEDS`` from its ``tasks/<key>/utils.py`` (found by that name: :func:`needs_of`).

Importing this module is cheap and imports nothing of the plugin (the report reads runs without it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

SCHEMA = 1
KEY = "lmms_spatial"  # the results file's key
LABEL_ARGS = ("pretrained", "model_version", "model")  # the model's own name, in this order
# the judge's name on a verdict of the rule-based fallback, and the reason of a verdict that could not be read, as
# the score records carry them (lmms_spatial.judge writes them; the report reads them without the judge's code)
FALLBACK_JUDGE = "none (rule-based fallback)"
UNPARSED_REASON = "judge_unparsed"
# a task with no documents in this release: results["results"][task] is {DOCUMENTS_KEY: NO_DOCUMENTS}
# (lmms_spatial.plugin.empty_tasks), and the report shows NO_DOCUMENTS
NO_DOCUMENTS = "no documents in this release"
DOCUMENTS_KEY = "documents,none"
NEEDS_NAME = "TASK_NEEDS"  # the name a benchmark's utils module declares its tasks' needs under


# --- the model's arguments and label: one parser, one rule -------------------------------------------


def parse_model_args(args: Any) -> dict[str, str]:
    """``a=b,c=d`` (lmms-eval's ``--model_args``) as a dict; a dict (``--config``) as is, its values as text."""
    if isinstance(args, Mapping):
        return {str(k): str(v) for k, v in args.items()}
    found: dict[str, str] = {}
    for part in str(args or "").split(","):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            found[name.strip()] = value.strip()
    return found


def short_name(value: str) -> str:
    """The last part of a Hub id or a path (``Qwen/Qwen2.5-VL-7B-Instruct`` -> ``Qwen2.5-VL-7B-Instruct``)."""
    parts = [p for p in str(value).replace("\\", "/").split("/") if p]
    return parts[-1] if parts else str(value)


def model_label(name: str | None, args: Any) -> str:
    """A short label: the basename of ``pretrained=`` / ``model_version=`` / ``model=``, else the model name (never
    the whole ``model_args``: rows and plots stay readable)."""
    parsed = parse_model_args(args)
    for key in LABEL_ARGS:
        if parsed.get(key):
            return short_name(parsed[key])
    return str(name or "model")


# --- the values ---------------------------------------------------------------------------------------


def int_or_none(value: Any) -> int | None:
    """A count as JSON holds it (``3`` or ``3.0``), else None (NaN, a bool, text: not a count)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value else None


def text_or_none(value: Any) -> str | None:
    """``str(value)``, None kept (an absent name stays absent)."""
    return None if value is None else str(value)


@dataclass(frozen=True)
class Judge:
    """Who scored a judged task: ``llm`` (model, rubric), ``rule`` (the rule-based fallback: ``rule``, ``share`` of
    the verdicts) or ``none`` (no verdict at all: ``reason``), with the counts the run recorded."""

    kind: str
    model: str | None = None
    rubric: str | None = None
    rubric_version: str | None = None
    share: float | None = None
    scored: int | None = None
    failures: int | None = None
    unparsed: int | None = None
    reason: str | None = None
    rule: str | None = None
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # keys its JSON held

    def to_json(self) -> dict[str, Any]:
        if self.kind == "rule":
            return {"kind": "rule", "rule": self.rule, "share": self.share}
        if self.kind == "none":
            return {"kind": "none", "reason": self.reason}
        entry: dict[str, Any] = {"kind": self.kind, "model": self.model, "rubric": self.rubric,
                                 "rubric_version": self.rubric_version}  # fmt: skip
        if self.failures is not None:
            entry.update(scored=self.scored, failures=self.failures, unparsed=self.unparsed)
        return entry

    @classmethod
    def from_json(cls, entry: Any) -> Judge | None:
        if not isinstance(entry, Mapping):
            return None
        share = entry.get("share")
        return cls(
            str(entry.get("kind") or "llm"),
            model=text_or_none(entry.get("model")),
            rubric=text_or_none(entry.get("rubric")),
            rubric_version=text_or_none(entry.get("rubric_version")),
            share=float(share) if isinstance(share, (int, float)) else None,
            scored=int_or_none(entry.get("scored")),
            failures=int_or_none(entry.get("failures")),
            unparsed=int_or_none(entry.get("unparsed")),
            reason=text_or_none(entry.get("reason")),
            rule=text_or_none(entry.get("rule")),
            given=frozenset(map(str, entry)),
        )

    def identity(self) -> tuple[Any, ...]:
        """What two runs must share to be pooled (the counts may differ)."""
        return (self.kind, self.model, self.rubric, self.rubric_version)

    def describe(self) -> str:
        rubric = f" (rubric {self.rubric} v{self.rubric_version})" if self.rubric else ""
        if self.kind == "none":
            return f"no judge ({self.reason or 'no verdict'})"
        if self.kind == "rule":
            share = self.share if self.share is not None else 1.0
            if share >= 1.0:
                return f"the rule-based fallback, not an LLM judge{rubric}"
            return (
                f"the rule-based fallback for {share:.0%} of the answers, {self.model or 'an LLM judge'} for the rest"
            )
        return f"{self.model or 'an LLM judge'}{rubric}"

    def short(self) -> str:
        """A few words: the LLM judge's model, ``rule-based fallback`` (with its share), or ``none``."""
        if self.kind == "none":
            return "none"
        if self.kind == "rule":
            share = self.share if self.share is not None else 1.0
            return "rule-based fallback" if share >= 1.0 else f"rule-based fallback {share:.0%}, {self.model or 'LLM'}"
        return self.model or "LLM judge"

    def counts(self) -> str:
        parts = [f"{self.scored} scored"] if self.scored is not None else []
        if self.failures:
            parts.append(f"{self.failures} judge failures")
        if self.unparsed:
            parts.append(f"{self.unparsed} verdicts unparsed")
        return ", ".join(parts)


@dataclass
class Generation:
    """A task's generation settings: its own (``protocol``: its YAML's, the paper's; None when the run was
    recognised too late to read them), what the model was sent (``in_effect``) and ``--gen_kwargs`` (``overrides``)."""

    protocol: dict[str, Any] | None
    in_effect: dict[str, Any] | None
    overrides: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "in_effect": self.in_effect, "overrides": self.overrides}

    @classmethod
    def from_json(cls, entry: Any) -> Generation | None:
        if not isinstance(entry, Mapping):
            return None
        protocol, in_effect, overrides = (entry.get(k) for k in ("protocol", "in_effect", "overrides"))
        return cls(dict(protocol) if isinstance(protocol, Mapping) else None,
                   dict(in_effect) if isinstance(in_effect, Mapping) else None,
                   dict(overrides) if isinstance(overrides, Mapping) else {})  # fmt: skip


@dataclass
class TaskRecord:
    """One leaf task's conditions (``tasks.<name>``)."""

    documents: int | None = None  # evaluated (after --limit)
    of: int | None = None  # in the split
    limit: Any = None  # --limit as given
    judge: Judge | None = None  # None: the task needs no judge
    map_source: str | None = None  # "own_map" | "none" | "partial"; None: not a with-map task
    run_options: dict[str, str] | None = None
    seed: Any = None
    replayed_from: str | None = None  # --model replay: the results file this task's answers come from
    answers_from_store: int | None = None  # None: the run kept no answers
    generation: Generation | None = None
    requests_failed: int = 0
    given: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # keys its JSON held

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "documents": self.documents, "of": self.of, "limit": self.limit,
            "judge": self.judge.to_json() if self.judge is not None else None,
            "map_source": self.map_source, "run_options": self.run_options, "seed": self.seed,
        }  # fmt: skip
        if self.replayed_from is not None:
            entry["replayed_from"] = self.replayed_from
        entry["answers_from_store"] = self.answers_from_store
        if self.generation is not None:
            entry["generation"] = self.generation.to_json()
        entry["requests_failed"] = self.requests_failed
        return entry

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> TaskRecord:
        options = entry.get("run_options")
        return cls(
            documents=int_or_none(entry.get("documents")),
            of=int_or_none(entry.get("of")),
            limit=entry.get("limit"),
            judge=Judge.from_json(entry.get("judge")),
            map_source=text_or_none(entry.get("map_source")),
            run_options={str(k): str(v) for k, v in options.items()} if isinstance(options, Mapping) else None,
            seed=entry.get("seed"),
            replayed_from=text_or_none(entry.get("replayed_from")),
            answers_from_store=int_or_none(entry.get("answers_from_store")),
            generation=Generation.from_json(entry.get("generation")),
            requests_failed=int_or_none(entry.get("requests_failed")) or 0,
            given=frozenset(map(str, entry)),
        )


@dataclass
class ModelRecord:
    """The model that answered (``model``): its short label, lmms-eval name, arguments, seed and weights."""

    label: str
    name: str | None
    args: Any  # --model_args as lmms-eval kept it (text, or a dict from --config)
    seed: int | None = None  # the model's own seed (its seed= argument, or the default it used); None: it takes none
    replayed_from: str | None = None  # --model replay, every answer from one run: that run's results file
    fingerprint: str | None = None  # the weights --model_args name (lmms_spatial.plugin.weights)
    # lmms-eval's torch seed (--seed), where it reached the answers: a local model that samples. None: it did not
    # (greedy decoding, an API model, a model that draws from its own seed). A record without the key is older: its
    # seeds are what --seed said, reached or not (seeds_recorded)
    sampling_seed: int | None = None
    seeds_recorded: bool = True  # False: read from a record older than sampling_seed

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"label": self.label, "name": self.name, "args": self.args, "seed": self.seed,
                                 "sampling_seed": self.sampling_seed}  # fmt: skip
        if self.replayed_from is not None:
            entry["replayed_from"] = self.replayed_from
        entry["fingerprint"] = self.fingerprint
        return entry

    @classmethod
    def from_json(cls, entry: Any) -> ModelRecord:
        entry = entry if isinstance(entry, Mapping) else {}
        return cls(
            label=str(entry.get("label") or ""),
            name=text_or_none(entry.get("name")),
            args=entry.get("args"),
            seed=entry.get("seed"),
            replayed_from=text_or_none(entry.get("replayed_from")),
            fingerprint=text_or_none(entry.get("fingerprint")),
            sampling_seed=entry.get("sampling_seed"),
            seeds_recorded="sampling_seed" in entry,
        )


@dataclass
class StoreRecord:
    """The answers of this process that came from the answer store, and the earlier runs that gave them."""

    root: str | None
    answers: int | None
    asked: int | None
    sources: list[dict[str, Any]] = field(default_factory=list)  # JSON "from": [{"run", "answers"}]

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "answers": self.answers, "asked": self.asked, "from": list(self.sources)}

    @classmethod
    def from_json(cls, entry: Any) -> StoreRecord | None:
        if not isinstance(entry, Mapping):
            return None
        return cls(entry.get("root"), entry.get("answers"), entry.get("asked"), list(entry.get("from") or []))


@dataclass(frozen=True)
class DataRecord:
    """Where one benchmark's documents (one config of it, if it has several) came from in this run: the Hub
    release (its id and the revision read) or a local copy (its absolute path), and the ``datasets``
    fingerprint of the split read. Two runs that read different data are not the same experiment, and the
    viewer finds a local copy's images from here."""

    source: str  # Hub id, or the absolute path of the local copy (its root, not the config's folder)
    local: bool
    revision: str | None = None  # the Hub revision asked for (None: the default branch, or a local copy)
    fingerprint: str | None = None  # datasets' fingerprint of the test split read (None: not known)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "local": self.local, "revision": self.revision, "fingerprint": self.fingerprint}

    @classmethod
    def from_json(cls, entry: Any) -> DataRecord | None:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("source"), str):
            return None
        return cls(entry["source"], bool(entry.get("local")), text_or_none(entry.get("revision")),
                   text_or_none(entry.get("fingerprint")))  # fmt: skip


@dataclass
class RunConditions:
    """``results["lmms_spatial"]``: the whole value (see :mod:`lmms_spatial.plugin.conditions` for each key)."""

    model: ModelRecord
    tasks: dict[str, TaskRecord] = field(default_factory=dict)
    environment: dict[str, Any] | None = None  # the software that produced the answers; None: not recorded
    scorer_environment: dict[str, Any] | None = None  # --model replay: the software that scored them
    store: StoreRecord | None = None
    # {benchmark key, or "<key>/<config>": where its documents came from}; None: not recorded (older files)
    data: dict[str, DataRecord] | None = None
    schema: int = SCHEMA
    lmms_spatial_version: str | None = None
    # written by lmms_spatial.plugin.isolation when a task's scoring failed: {task: message}, groups left unscored
    failed_tasks: Any = None
    groups_without_scores: Any = None

    def task(self, name: str) -> TaskRecord:
        return self.tasks[name]

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {
            "schema": self.schema, "lmms_spatial_version": self.lmms_spatial_version, "model": self.model.to_json(),
            "tasks": {name: entry.to_json() for name, entry in self.tasks.items()}, "environment": self.environment,
        }  # fmt: skip
        if self.scorer_environment is not None:
            value["scorer_environment"] = self.scorer_environment
        value["store"] = self.store.to_json() if self.store is not None else None
        if self.data is not None:
            value["data"] = {name: record.to_json() for name, record in sorted(self.data.items())}
        if self.failed_tasks is not None:
            value["failed_tasks"] = self.failed_tasks
        if self.groups_without_scores is not None:
            value["groups_without_scores"] = self.groups_without_scores
        return value

    @classmethod
    def from_json(cls, value: Any) -> RunConditions:
        """A results file's ``"lmms_spatial"`` value (or what part of it an earlier version wrote)."""
        value = value if isinstance(value, Mapping) else {}
        tasks = value.get("tasks") if isinstance(value.get("tasks"), Mapping) else {}
        environment = value.get("environment")
        scorer = value.get("scorer_environment")
        data = value.get("data")
        if isinstance(data, Mapping):
            data = {str(k): r for k, r in ((k, DataRecord.from_json(e)) for k, e in data.items()) if r is not None}
        return cls(
            model=ModelRecord.from_json(value.get("model")),
            tasks={
                str(name): TaskRecord.from_json(entry) for name, entry in tasks.items() if isinstance(entry, Mapping)
            },
            environment=dict(environment) if isinstance(environment, Mapping) else None,
            scorer_environment=dict(scorer) if isinstance(scorer, Mapping) else None,
            store=StoreRecord.from_json(value.get("store")),
            data=data if isinstance(data, dict) else None,
            schema=int_or_none(value.get("schema")) or 0,
            lmms_spatial_version=text_or_none(value.get("lmms_spatial_version")),
            failed_tasks=value.get("failed_tasks"),
            groups_without_scores=value.get("groups_without_scores"),
        )


# --- what a benchmark's tasks declare --------------------------------------------------------------------


@dataclass(frozen=True)
class TaskNeeds:
    """What a benchmark's tasks need of a run, declared once in its ``utils.py`` as ``TASK_NEEDS``; each entry is
    keyed by the name of the task's ``process_results`` function (the YAML's ``!function utils.<name>``).

    - ``judge``: the rubric of the LLM judge a scorer asks (its verdicts and counts are recorded, and named when
      unreadable); absent: no judge;
    - ``maps``: the stage a scorer's question follows, whose output the model must draw itself (a with-map task:
      unscored without that map); absent: none;
    - ``options``: the run options in effect for every task of the benchmark, read while the model is known (API
      image rules); None: :func:`lmms_spatial.run_options.in_effect` of the benchmark.
    """

    judge: Mapping[str, str] = field(default_factory=dict)
    maps: Mapping[str, str] = field(default_factory=dict)
    options: Callable[[], Mapping[str, str]] | None = None

    def run_options(self, benchmark: str) -> dict[str, str]:
        if self.options is not None:
            return dict(self.options())
        from lmms_spatial import run_options

        return run_options.in_effect(benchmark)


@dataclass
class DeclaredTask:
    """One leaf task of ours as the run reads it before it evaluates: its benchmark, the judge rubric and map stage
    its scorer declares (:class:`TaskNeeds`) and the run options in effect."""

    benchmark: str
    judge_rubric: str | None = None
    map_stage: str | None = None
    run_options: dict[str, Any] = field(default_factory=dict)


def evaluated(counts: Mapping[str, Any], offset: Any) -> int:
    """The documents a run evaluated: lmms-eval's ``n-samples`` ``effective`` is ``--limit`` (or the split's size)
    whatever ``--offset``, which skips that many documents first (``--offset 1`` on a split of 12: 11, not 12)."""
    documents = int(counts.get("effective", counts.get("original")) or 0)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset <= 0 or "original" not in counts:
        return documents
    return min(documents, max(int(counts["original"] or 0) - offset, 0))


def benchmark_of(function: Any) -> str | None:
    """``odi_bench`` for a function of ``lmms_spatial.tasks.odi_bench...``; None for another module's."""
    parts = str(getattr(function, "__module__", "") or "").split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["lmms_spatial", "tasks"] else None


def needs_of(benchmark: str) -> TaskNeeds:
    """The ``TASK_NEEDS`` of ``lmms_spatial.tasks.<benchmark>.utils`` (a benchmark that declares none needs
    nothing: no judge, no map, the default run options)."""
    try:
        module = importlib.import_module(f"lmms_spatial.tasks.{benchmark}.utils")
    except ImportError:
        return TaskNeeds()
    found = getattr(module, NEEDS_NAME, None)
    return found if isinstance(found, TaskNeeds) else TaskNeeds()


def declare(benchmark: str, scorer: Any) -> DeclaredTask:
    """What the task whose ``process_results`` is ``scorer`` needs, by its benchmark's :class:`TaskNeeds`."""
    needs = needs_of(benchmark)
    name = str(getattr(scorer, "__name__", "") or "")
    try:
        options = needs.run_options(benchmark)
    except Exception as exc:  # a bad option value fails the run elsewhere, naming it
        options = {"error": str(exc)}
    return DeclaredTask(benchmark, needs.judge.get(name), needs.maps.get(name), options)
