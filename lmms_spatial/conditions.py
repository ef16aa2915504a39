"""A run's conditions as typed values: what a run of ours writes (``results["lmms_spatial"]``, schema 1) and
``lmms-spatial report`` reads back, spelled once.

The run builds them (:mod:`lmms_spatial.plugin.conditions`) and writes :meth:`RunConditions.to_json`; the report
reads :meth:`RunConditions.from_json` (:mod:`lmms_spatial.reports.runs`), so the two sides share one model-args
parser (:func:`parse_model_args`, with :func:`join_model_args` and :func:`without_seed`), one label rule
(:func:`model_label`) and one judge vocabulary (:class:`Judge`). The JSON layout, key order included, is the one
documented in :mod:`lmms_spatial.plugin.conditions`: a results file is byte-identical to what earlier versions wrote.
A file written by an earlier version may lack keys: each value records the keys its JSON held (``given``), so the
report completes only what is absent (:meth:`RunConditions.completed`, by what the rest of the results file says).

The report reads these same values: what it compares and shows of them (the model's arguments less its seed, which
runs are seeds of one model, the generation settings off the protocol, the data read) are their methods, so a
condition the run records is read one way everywhere.

A benchmark declares what its tasks need of a run in one value, a :class:`TaskNeeds`, which its ``BENCHMARK``
names as its ``needs`` (:func:`needs_of`).

Importing this module is cheap and imports nothing of the plugin (the report reads runs without it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from lmms_spatial.paths import task_benchmarks

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


# --- the model's arguments and label: one parser, one rule -------------------------------------------


def _pair(part: str) -> tuple[str, str] | None:
    """One comma-separated part of ``--model_args`` text as (name, value), both stripped; None for a part with no
    ``=`` or no name (lmms-eval would fail on it: it is no argument)."""
    name, sep, value = part.partition("=")
    return (name.strip(), value.strip()) if sep and name.strip() else None


def parse_model_args(args: Any) -> dict[str, str]:
    """``a=b,c=d`` (lmms-eval's ``--model_args``) as a dict; a dict (``--config``) as is, its values as text."""
    if isinstance(args, Mapping):
        return {str(k): str(v) for k, v in args.items()}
    return dict(pair for part in str(args or "").split(",") if (pair := _pair(part)) is not None)


def join_model_args(args: Any) -> str:
    """``--model_args`` as text: a dict (``--config``, or parsed arguments) as ``a=b,c=d`` in its order; text as given
    (None: empty). The report shows and compares arguments as this text, whichever way they were given."""
    if isinstance(args, Mapping):
        return ",".join(f"{k}={v}" for k, v in args.items())
    return str(args or "")


def _seed_of(part: str) -> str | None:
    """The value of a ``seed=`` part of ``--model_args`` text; None for any other part."""
    pair = _pair(part)
    return pair[1] if pair is not None and pair[0] == "seed" else None


def without_seed(args: Any) -> tuple[str, str | None]:
    """``--model_args`` as text less its ``seed=`` parts, and the first one's value (None: no seed). Runs that differ
    only in the model's seed are seeds of one model, so the seed is compared apart from the other arguments; those
    stay as written (only the separators the seed leaves at either end are dropped)."""
    parts = join_model_args(args).split(",")
    seeds = [seed for part in parts if (seed := _seed_of(part)) is not None]
    kept = ",".join(part for part in parts if _seed_of(part) is None)
    return kept.strip(", "), seeds[0] if seeds else None


def differing_model_args(args: Sequence[Any]) -> list[str]:
    """Each of several runs' ``--model_args`` less the parts every one of them shares, the others as written (stripped,
    blank ones left out): what tells rows of one model apart (``samples=a`` rather than the whole text)."""
    parts = [[part.strip() for part in join_model_args(one).split(",") if part.strip()] for one in args]
    common = set.intersection(*(set(mine) for mine in parts)) if parts else set()
    return [",".join(part for part in mine if part not in common) for mine in parts]


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


# --- what the report compares of a run, beside its record ------------------------------------------------


def generation_items(kwargs: Any) -> tuple[tuple[str, str], ...] | None:
    """Generation settings as comparable text (``0.0`` and ``0`` alike, as lmms-eval's cache keys them); None for
    anything but a mapping (not recorded)."""
    if not isinstance(kwargs, Mapping):
        return None

    def plain(value: Any) -> Any:
        return int(value) if isinstance(value, float) and value.is_integer() else value

    return tuple(sorted((str(k), json.dumps(plain(v), sort_keys=True, default=str)) for k, v in kwargs.items()))


@cache
def seed_options() -> frozenset[str]:
    """Run options that are seeds, not conditions (each benchmark's ``BENCHMARK.seed_options``): runs of several
    such seeds pool."""
    from lmms_spatial.data.registry import BENCHMARKS

    return frozenset(option for bench in BENCHMARKS.values() for option in bench.seed_options)


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

    def completed(self, derived: Judge | None) -> Judge:
        """This recorded judge, each value it lacks taken from ``derived`` (the judge its score records show): a
        count where its JSON held none, a name or share where it recorded none; the rule's text, or why there was no
        judge, stands as the ``reason`` the report names."""
        d = derived or Judge(self.kind)
        return Judge(
            self.kind,
            model=self.model or d.model,
            rubric=self.rubric or d.rubric,
            rubric_version=self.rubric_version or d.rubric_version,
            share=self.share if self.share is not None else d.share,
            scored=self.scored if "scored" in self.given else d.scored,
            failures=self.failures if "failures" in self.given else d.failures,
            unparsed=self.unparsed if "unparsed" in self.given else d.unparsed,
            reason=self.reason or self.rule or d.reason,
        )


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
    """One leaf task's conditions (``tasks.<name>``), and what the report reads of the task beside them."""

    documents: int | None = None  # evaluated (after --limit)
    of: int | None = None  # in the split
    limit: Any = None  # --limit as given
    judge: Judge | None = None  # None: the task needs no judge
    map_source: str | None = None  # "own_map" | "none" | "partial"; None: not a with-map task
    run_options: dict[str, str] | None = None  # None: not recorded (older samples)
    seed: Any = None
    replayed_from: str | None = None  # --model replay: the results file this task's answers come from
    answers_from_store: int | None = None  # None: the run kept no answers
    generation: Generation | None = None
    requests_failed: int = 0
    # what the rest of the results file says of the task, which the report reads and the run writes elsewhere (never
    # under this key): no documents in this release (its results entry), its scoring failed (failed_tasks: the
    # message, cut short)
    empty: bool = False
    failed: str | None = None
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

    @property
    def partial(self) -> bool:
        """Fewer documents evaluated than the split holds (``--limit``, ``--offset``)."""
        return self.documents is not None and self.of is not None and self.documents < self.of

    def options(self) -> dict[str, str]:
        """The run options in name order ({} when not recorded)."""
        return dict(sorted((self.run_options or {}).items()))

    def option_seed(self) -> str | None:
        """The values of the options that are seeds (:func:`seed_options`), joined; None: none set."""
        options = self.options()
        found = [options[k] for k in sorted(seed_options()) if k in options]
        return ",".join(found) if found else None

    def condition_options(self) -> dict[str, str]:
        """The run options less those that are seeds: what two runs' task must share to be seeds of one model."""
        return {k: v for k, v in self.options().items() if k not in seed_options()}

    def in_effect(self) -> tuple[tuple[str, str], ...] | None:
        """The generation settings the model was sent, comparable (:func:`generation_items`); None: not recorded."""
        return generation_items(self.generation.in_effect) if self.generation is not None else None

    def protocol(self) -> tuple[tuple[str, str], ...] | None:
        """The task's own generation settings (its YAML's: the paper's protocol), comparable; None: not recorded."""
        return generation_items(self.generation.protocol) if self.generation is not None else None

    def comparable(self) -> tuple[Any, ...]:
        """Everything that must be equal to pool two runs' task (an option seed is a seed, not a condition)."""
        return (self.documents, self.of, self.empty, self.judge.identity() if self.judge else None, self.map_source,
                tuple(self.condition_options().items()), self.in_effect())  # fmt: skip

    def off_protocol(self) -> dict[str, tuple[str, str | None]]:
        """{setting: (in effect, the protocol's or None)} where the generation settings differ from the task's own."""
        mine, own = self.in_effect(), self.protocol()
        if mine is None or own is None:
            return {}
        sent, paper = dict(mine), dict(own)
        return {k: (sent[k], paper.get(k)) for k in sorted(sent) if sent[k] != paper.get(k)} | {
            k: ("(unset)", paper[k]) for k in sorted(paper) if k not in sent}  # fmt: skip

    def completed(self, derived: TaskRecord) -> TaskRecord:
        """This record of a file of an earlier version, each key its JSON did not hold taken from ``derived`` (what
        the results file and the samples show); a recorded null stays null (the run said: no judge, no with-map
        task). Whether the task had documents and scored is the file's word (``derived``) in any case."""
        given = self.given
        judge = derived.judge
        if "judge" in given:
            judge = None if self.judge is None else self.judge.completed(derived.judge)
        return replace(
            self,
            documents=self.documents if "documents" in given else derived.documents,
            of=self.of if "of" in given else derived.of,
            limit=self.limit if "limit" in given else derived.limit,
            judge=judge,
            map_source=self.map_source if "map_source" in given else derived.map_source,
            run_options=self.run_options if self.run_options is not None else derived.run_options,
            seed=self.seed if self.seed is not None else derived.seed,
            empty=derived.empty,
            failed=derived.failed,
        )


@dataclass
class ModelRecord:
    """The model that answered (``model``): its short label, lmms-eval name, arguments, seed and weights."""

    label: str
    name: str | None
    args: Any  # --model_args as lmms-eval kept it (text, or a dict from --config)
    # the model's own seed (its seed= argument, or the default it used); None: it takes none. Read from a file that
    # recorded none: its seed= argument as written (text)
    seed: int | str | None = None
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

    def args_without_seed(self) -> str:
        """The arguments as text less ``seed=`` (:func:`without_seed`): what runs pooled as seeds share."""
        return without_seed(self.args)[0]

    def completed(self, derived: ModelRecord) -> ModelRecord:
        """This record of a file of an earlier version, each value it lacks taken from ``derived`` (what the results
        file's config says): the label, name and arguments; the seed from the recorded arguments' ``seed=``, else
        from the config's. A record older than ``sampling_seed`` keeps lmms-eval's ``--seed`` as the seed of its
        answers where the model has no seed of its own (as such a record was always read)."""
        own = without_seed(self.args)[1]  # None without arguments
        return replace(
            self,
            label=self.label or derived.label,
            name=self.name or derived.name,
            args=self.args if self.args is not None else derived.args,
            seed=self.seed if self.seed is not None else (own or derived.seed),
            sampling_seed=(
                self.sampling_seed if self.seeds_recorded else derived.sampling_seed if self.seed is None else None
            ),
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
    """``results["lmms_spatial"]``: the whole value (see :mod:`lmms_spatial.plugin.conditions` for each key); as the
    report reads a run, also lmms-eval's ``--gen_kwargs`` (its config's, never written here)."""

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
    gen_kwargs: Any = None  # --gen_kwargs as lmms-eval's config holds them (the report reads them there)

    def task(self, name: str) -> TaskRecord:
        """The task's record; an empty one for a task the run has none of (nothing recorded, nothing compared)."""
        return self.tasks.get(name) or TaskRecord()

    @property
    def recorded(self) -> bool:
        """Read from a run of ours (the key's schema), not derived from an older results file alone."""
        return bool(self.schema)

    @property
    def software(self) -> tuple[tuple[str, str], ...]:
        """The versions a report compares between rows (lmms-eval, transformers, torch); () when not recorded."""
        from lmms_spatial import environment

        return environment.compared(self.environment)

    @property
    def gen_overrides(self) -> tuple[tuple[str, str], ...]:
        """``--gen_kwargs`` as comparable text (:func:`generation_items`); () when none were given."""
        return generation_items(self.gen_kwargs) or ()

    def data_entries(self) -> tuple[tuple[str, str], ...] | None:
        """The data read as the report compares it, in name order: a Hub release by id and revision; a local copy
        only as such (its path and ``datasets`` fingerprint follow the machine and the files' times, not their
        content). None: not recorded."""
        if self.data is None:
            return None
        return tuple(sorted((name, "a local copy" if r.local else f"{r.source}@{r.revision or 'default branch'}")
                            for name, r in self.data.items()))  # fmt: skip

    def data_of(self, tasks: Iterable[str]) -> tuple[tuple[str, str], ...] | None:
        """The data entries of the benchmarks ``tasks`` belong to (a benchmark's entry, or its configs')."""
        entries = self.data_entries()
        if entries is None:
            return None
        keys = {task_benchmarks().get(t) for t in tasks}
        return tuple((name, source) for name, source in entries if name.partition("/")[0] in keys)

    def seeds(self, tasks: Iterable[str]) -> tuple[Any, ...]:
        """What makes two runs of equal conditions different seeds, as text: (the model's seed, the seed that reached
        the answers, the tasks' seeds, the tasks' option seeds)."""
        mine = [self.tasks[t] for t in tasks if t in self.tasks]
        task_seeds = sorted({text_or_none(t.seed) or "" for t in mine})
        option_seeds = sorted({t.option_seed() or "" for t in mine})
        return (text_or_none(self.model.seed), text_or_none(self.model.sampling_seed), tuple(task_seeds),
                tuple(option_seeds))  # fmt: skip

    def describe_seed(self, tasks: Iterable[str]) -> str:
        """The seed in words, by what sets it first: an option seed, the model's, the tasks', lmms-eval's."""
        mine = [self.tasks[t] for t in tasks if t in self.tasks]
        option_seeds = sorted({t.option_seed() for t in mine} - {None})
        if option_seeds:
            return f"option seed {', '.join(option_seeds)}"
        if self.model.seed is not None:
            return f"seed={self.model.seed}"
        task_seeds = sorted({text_or_none(t.seed) for t in mine} - {None})
        if task_seeds:
            return f"seed {', '.join(task_seeds)}"
        return f"--seed {self.model.sampling_seed}" if self.model.sampling_seed is not None else "seed unknown"

    def completed(self, derived: RunConditions) -> RunConditions:
        """This record, each value a file of an earlier version lacks taken from ``derived`` (the conditions the
        results file and its samples show, :func:`lmms_spatial.reports.runs.derive_conditions`): the model's, each
        task's (a task only the file names kept as the file says it), and ``--gen_kwargs``."""
        tasks = dict(derived.tasks)
        for name, entry in self.tasks.items():
            tasks[name] = entry.completed(tasks.get(name) or TaskRecord())
        return replace(self, model=self.model.completed(derived.model), tasks=tasks, gen_kwargs=derived.gen_kwargs)

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
    """What a benchmark's tasks need of a run, declared once and named by its ``BENCHMARK.needs``; each entry is
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
    """The ``needs`` its ``BENCHMARK`` names (a benchmark that names none, or no benchmark of ours, needs nothing:
    no judge, no map, the default run options). A run never stops on it: a ``needs`` that is missing or not a
    :class:`TaskNeeds` reads as none here, and fails the benchmark's contract test
    (``test_every_part_a_benchmark_names_is_there``)."""
    from lmms_spatial.data.registry import BENCHMARKS

    bench = BENCHMARKS.get(benchmark)
    try:
        found = bench.load("needs") if bench is not None else None
    except (ImportError, AttributeError):
        return TaskNeeds()
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
