"""Every result carries its conditions: ``results["lmms_spatial"]`` in the results file (schema 1).

lmms-eval writes the whole dict ``simple_evaluate`` returns into ``<output>/<model>/<date>_results.json``.
A run of ours adds one key, ``lmms_spatial``, read by ``lmms-spatial report``
(:mod:`lmms_spatial.reports.runs`); both sides spell it with the typed values of :mod:`lmms_spatial.conditions`
(:class:`~lmms_spatial.conditions.RunConditions`)::

    {"schema": 1, "lmms_spatial_version": "0.1.0",
     "model": {"label": "Qwen2.5-VL-7B-Instruct", "name": "qwen2_5_vl", "args": "pretrained=...", "seed": 0},
     "tasks": {"<leaf task>": {"documents": 3, "of": 12, "limit": 3,
                               "judge": {...} | null, "map_source": "own_map" | "none" | null,
                               "run_options": {...}, "seed": 0}},
     "environment": {"python": "3.11.7", "packages": {"lmms-eval": "0.7.3", "transformers": "5.24.0", ...}, ...}}

- ``model.label``: short (the basename of ``pretrained=`` / ``model_version=`` / ``model=``, else the model's
  name), never the whole ``model_args``; a replayed run keeps the label of the run it replays, and names it
  (``replayed_from``: its results file) when all its answers come from one run;
- ``documents`` / ``of``: documents evaluated (after ``--limit``) / in the split; a task with no documents in the
  release has 0 of 0;
- ``judge`` (tasks that ask an LLM judge): ``{"kind": "llm", "model", "rubric", "rubric_version", "scored",
  "failures", "unparsed"}``, ``{"kind": "rule", "rule", "share"}`` (``LMMS_SPATIAL_JUDGE=none``) or
  ``{"kind": "none", "reason"}``; null for a task that needs no judge;
- ``map_source`` (OSR-Bench's with-map tasks): ``own_map`` when every answer was given with the model's own
  map, ``none`` when none was (the task is unscored), ``partial`` when only some were; null elsewhere;
- ``run_options``: the :mod:`lmms_spatial.run_options` values in effect (``{}``: defaults);
- ``seed``: the model's ``seed=`` argument, else lmms-eval's ``--seed``;
- ``replayed_from`` (``--model replay``): the results file of the run this task's answers come from;
- ``environment`` (top level): the software that produced the answers, recorded at run time
  (:func:`lmms_spatial.environment.snapshot`): ``{"python", "platform", "lmms-spatial": {"version", "commit",
  "dirty"}, "packages": {"lmms-eval", "transformers", "torch", "accelerate", "datasets", "pillow", "numpy",
  "flash-attn", "vllm" (when imported)}, "cuda", "gpu" (when CUDA was used)}``; ``--model replay`` keeps the
  environment of the run it replays (null when that run recorded none) and adds its own as
  ``scorer_environment``.

What answered and how (:func:`add_what_answered`, keys of their own)::

    "model": {..., "fingerprint": "local:3f2a..." | "hub:<id>@<commit>" | "api:<model_version>" | null},
    "store": {"root": ".../cache", "answers": 12, "asked": 40,
              "from": [{"run": "the run of 2026-11-25 22:10:03 UTC into out (run id 1a2b)", "answers": 12}]} | null,
    "tasks": {"<leaf task>": {..., "answers_from_store": 3 | null,
                              "generation": {"protocol": {...} | null, "in_effect": {...}, "overrides": {...}}}}

- ``model.fingerprint``: the weights ``--model_args`` name (:mod:`lmms_spatial.plugin.weights`), part of the
  answer store's key; null when they name none (``random_choice``, ``replay``);
- ``store``: this process's answers that came from the answer store (:mod:`lmms_spatial.plugin.resume`) and the
  earlier runs that gave them; null when the run kept no answers (``LMMS_SPATIAL_RESUME=0``, ``replay``);
  ``answers_from_store``: the same per task (null then). A multi-process run counts rank 0's requests;
- ``generation``: ``protocol``, the task's own ``generation_kwargs`` (its YAML's: the paper's protocol; null when
  the run was recognised too late to read them, ``LMMS_SPATIAL_DISABLE_HOOK=1``); ``in_effect``, what the model
  was sent (the task's, updated by ``--gen_kwargs`` as lmms-eval does); ``overrides``, ``--gen_kwargs`` as
  lmms-eval parsed it (``{}``: none). ``lmms-spatial report`` marks rows whose ``in_effect`` differs from the
  ``protocol`` and never pools runs of different ``in_effect`` as seeds.
- ``requests_failed`` (per task; added by :func:`lmms_spatial.plugin.run.record_conditions`): documents whose
  request to the model failed after its retries (:mod:`lmms_spatial.plugin.failed_requests`), left out of every
  number.

The judge's counts and ``map_source`` come from the task's aggregated metrics (``judge_failures``,
``judge_unparsed``, ``judge_fallback_share``, ``answers_without_map``), which cover every rank of a
multi-process run. The same pass writes the run's last lines (:func:`lmms_spatial.plugin.failures.add_note`)
when with-map tasks went unscored for want of a map, or when more than
:data:`UNPARSED_NOTE_SHARE` of a judge's verdicts could not be read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lmms_spatial.conditions import (  # noqa: F401  (the names the run's code and tests know them by)
    KEY,
    LABEL_ARGS,
    SCHEMA,
    DataRecord,
    DeclaredTask,
    Generation,
    Judge,
    ModelRecord,
    RunConditions,
    StoreRecord,
    TaskRecord,
    benchmark_of,
    declare,
    evaluated,
    model_label,
    parse_model_args,
    short_name,
)

if TYPE_CHECKING:
    from lmms_spatial.run_state import RunNotes

UNPARSED_NOTE_SHARE = 0.05  # more than this share of unreadable verdicts is said in the run's last lines


def unparsed_rule(rubric: str | None) -> str | None:
    """What ``rubric``'s official code does with a verdict it cannot read, when it scores it (the rubric's
    ``unparsed_rule``; None: left out of the score, or not a rubric of ours)."""
    from lmms_spatial.metrics.rubrics import RUBRICS

    found = RUBRICS.get(rubric or "")
    return found.unparsed_rule if found is not None else None


# --- the model ----------------------------------------------------------------------------------


def _model_seed(args: Any) -> int | None:
    """The model's own ``seed=`` argument (lmms-eval's ``--seed`` is not the model's: :func:`sampling_seed`)."""
    raw = parse_model_args(args).get("seed")
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


API_ARGS = ("model_version", "base_url")  # a model served over an API: its sampling is the server's


def sampling_seed(config: Mapping[str, Any], generation: Mapping[str, Mapping[str, Any]]) -> int | None:
    """lmms-eval's torch seed (``--seed``'s third value) when it reached the answers: the run samples (some task's
    settings in effect) on a model that samples here, not behind an API. Greedy answers do not depend on it."""
    from lmms_spatial.plugin.sampling import samples

    args = parse_model_args(config.get("model_args"))
    if not samples(dict(generation)) or any(args.get(k) for k in API_ARGS):
        return None
    raw = config.get("torch_seed", config.get("random_seed"))
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


def replayed_runs(args: Any) -> dict[str, tuple[str, str, bool]]:
    """{task: (label, results file, whole) of the newest run whose samples ``--model replay`` answers it from}, for
    the tasks whose run has its results file beside its samples; ``whole``: every answer of the task comes from that
    run (not from the shards of a run split over several jobs, which have no one results file). {} otherwise (replay
    itself refuses runs of different models or settings: :func:`lmms_spatial.models.replay.check_one_model`)."""
    from lmms_spatial.models.replay import task_runs

    spec = parse_model_args(args).get("samples")
    if not spec:
        return {}
    try:
        found = task_runs(spec)
    except (OSError, ValueError):
        return {}
    return {task: (runs[0].label, str(runs[0].results), len(runs) == 1) for task, runs in found.items()
            if runs[0].results is not None}  # fmt: skip


def model_entry(config: Mapping[str, Any], tasks: Any = None,
                replayed: dict[str, tuple[str, str, bool]] | None = None) -> ModelRecord:  # fmt: skip
    """The ``model`` value; for a replay, of the runs that answered ``tasks`` (every task found when None), as
    :func:`replayed_runs` finds them (read here unless ``replayed`` gives them)."""
    name, args = config.get("model"), config.get("model_args")
    entry = ModelRecord(model_label(name, args), name, args, _model_seed(args))
    if name == "replay":
        runs = replayed_runs(args) if replayed is None else replayed
        wanted = [runs[task] for task in runs if tasks is None or task in tasks]
        found = {(label, results) for label, results, _ in wanted}
        if len({label for label, _ in found}) == 1:  # one model with the same settings (replay refuses a mixture)
            entry.label = next(iter(found))[0]
        if len(found) == 1 and all(whole for _, _, whole in wanted):  # every answer from one run (no shards)
            entry.replayed_from = next(iter(found))[1]
    return entry


# --- the tasks: what each declares, read while lmms-eval still holds the task objects --------------


def _leaf_tasks(task_dict: Mapping) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in task_dict.items():
        task = value[1] if isinstance(value, tuple) else value
        if isinstance(task, Mapping):
            found.update(_leaf_tasks(task))
        elif task is not None:
            config = getattr(task, "config", None)
            found[str(getattr(config, "task", None) or key)] = task
    return found


def declared(task_dict: Mapping) -> dict[str, DeclaredTask]:
    """{leaf task of ours: its benchmark, judge rubric, map stage and run options in effect now}.

    Each benchmark declares them once, in its ``utils.py`` (``TASK_NEEDS``, a
    :class:`~lmms_spatial.conditions.TaskNeeds`, by scorer); the run options are read while the model is known
    (API image rules).
    """
    out: dict[str, DeclaredTask] = {}
    for name, task in _leaf_tasks(task_dict).items():
        function = getattr(getattr(task, "config", None), "process_results", None)
        benchmark = benchmark_of(function)
        if benchmark is not None:
            out[name] = declare(benchmark, function)
    return out


def draws_maps(lm: Any) -> bool:
    """Whether the model fills stage placeholders itself (``staged``, ``omni_cot``, or one wrapped for a run)."""
    from lmms_spatial.models.staged import Staged

    return isinstance(lm, Staged)


# --- the conditions of a finished run -------------------------------------------------------------


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(metrics: Mapping[str, Any], name: str) -> int | None:
    value = _number(metrics.get(f"{name},none"))
    return int(value) if value is not None and math.isfinite(value) else None


def _samples_options(samples: list[dict] | None) -> dict[str, str] | None:
    """The run options the task's score records carry (the first that has them)."""
    for sample in samples or []:
        for value in sample.values():
            if isinstance(value, Mapping) and isinstance(value.get("run_options"), Mapping):
                return {str(k): str(v) for k, v in value["run_options"].items()}
    return None


def judge_entry(rubric: str, metrics: Mapping[str, Any], documents: int, without_map: int) -> Judge:
    from lmms_spatial.judge import JudgeConfig, get_rubric
    from lmms_spatial.judge.config import ENV_MODEL

    config = JudgeConfig.from_env()
    failures, unparsed = _count(metrics, "judge_failures"), _count(metrics, "judge_unparsed")
    if config.is_none:
        share = _number(metrics.get("judge_fallback_share,none"))
        if share is None or not math.isfinite(share):
            share = 1.0 if documents > without_map else None
        return Judge("rule", rule=f"{rubric} rule-based fallback ({ENV_MODEL}=none)", share=share)
    if config.model is None:
        return Judge("none", reason=f"no judge configured ({ENV_MODEL} is not set)")
    judge = Judge("llm", model=config.model, rubric=rubric, rubric_version=get_rubric(rubric).version)
    if failures is None:
        return judge
    answered = documents - failures - without_map
    scored = answered if unparsed_rule(rubric) else answered - (unparsed or 0)
    return Judge("llm", model=judge.model, rubric=rubric, rubric_version=judge.rubric_version, scored=scored,
                 failures=failures, unparsed=unparsed or 0)  # fmt: skip


def map_source(metrics: Mapping[str, Any], documents: int, lm_draws_maps: bool) -> str:
    without = _count(metrics, "answers_without_map")
    if without is None:  # not scored (--predict_only): what the model does
        return "own_map" if lm_draws_maps else "none"
    if without == 0:
        return "own_map"
    return "none" if without >= documents else "partial"


def build(results: Mapping[str, Any], tasks: Mapping[str, DeclaredTask], *, lm_draws_maps: bool = False,
          empty: list[str] = ()) -> RunConditions:  # fmt: skip
    """The ``lmms_spatial`` value of one finished run (see the module doc)."""
    from lmms_spatial import __version__

    config = results.get("config") or {}
    replayed = replayed_runs(config.get("model_args")) if config.get("model") == "replay" else {}
    model = model_entry(config, tasks, replayed)
    limit = config.get("limit")
    if isinstance(limit, float) and limit.is_integer():  # lmms-eval keeps --limit 3 as 3.0
        limit = int(limit)
    counts = results.get("n-samples") or {}
    table = results.get("results") or {}
    samples = results.get("samples") or {}
    entries: dict[str, TaskRecord] = {}
    for name, info in sorted(tasks.items()):
        n = counts.get(name) or {}
        documents = evaluated(n, config.get("offset"))
        metrics = table.get(name) or {}
        without_map = _count(metrics, "answers_without_map") or 0
        rubric = info.judge_rubric
        options = _samples_options(samples.get(name))
        entries[name] = TaskRecord(
            documents=documents,
            of=int(n.get("original", documents) or 0),
            limit=limit,
            judge=judge_entry(rubric, metrics, documents, without_map) if rubric else None,
            map_source=map_source(metrics, documents, lm_draws_maps) if info.map_stage else None,
            run_options=options if options is not None else dict(info.run_options or {}),
            seed=model.seed,
            replayed_from=replayed[name][1] if name in replayed and replayed[name][2] else None,
        )
    for name in empty:
        entries[name] = TaskRecord(documents=0, of=0, limit=limit, run_options={}, seed=model.seed)
    environment, scorer_environment = environments(model, entries)
    return RunConditions(model, entries, environment, scorer_environment, lmms_spatial_version=__version__)


def environments(model: ModelRecord, tasks: Mapping[str, TaskRecord] | None = None) -> tuple[Any, Any]:
    """(``environment``, ``scorer_environment``): the software that produced the answers
    (:func:`lmms_spatial.environment.snapshot`), and None. A replayed run's answers were produced by the runs it
    replays (``replayed_from``, per task): their recorded environment (None when they recorded none, or, which
    replay refuses, different ones), and this process's snapshot as the scorer's."""
    from lmms_spatial import environment

    here = environment.snapshot()
    if model.name != "replay":
        return here, None
    sources = {model.replayed_from} | {entry.replayed_from for entry in (tasks or {}).values()}
    found = [recorded_environment(source) for source in sorted(s for s in sources if s)]
    distinct = {json.dumps(env, sort_keys=True) for env in found}
    return (found[0] if len(distinct) == 1 else None), here


def recorded_environment(results_file: Any) -> dict[str, Any] | None:
    """The ``environment`` a results file of ours recorded (None for an older file, or none at hand)."""
    if not results_file:
        return None
    try:
        with open(results_file, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return RunConditions.from_json(data.get(KEY) if isinstance(data, dict) else None).environment


EXAMPLE_CHAT_MODEL = "qwen2_5_vl --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct"
NOT_SCORED_KEY = "not_scored,none"  # results["results"][task] of a with-map task answered without maps
NO_MAP = "no map"


def annotate(results: dict, conditions: RunConditions) -> None:
    """Name in lmms-eval's results table why a with-map task's scores are NaN (in place): ``not_scored: no map``
    (short, so lmms-eval's value column keeps its width; the run's last lines say the rest)."""
    table = results.get("results") or {}
    for task, entry in conditions.tasks.items():
        if entry.map_source == "none" and isinstance(table.get(task), dict):
            table[task][NOT_SCORED_KEY] = NO_MAP


def name_data(results: dict, tasks: Mapping[str, DeclaredTask], data: Mapping[str, DataRecord] | None) -> None:
    """Each task of ours in ``results["configs"]`` (what ``--show_config`` prints and W&B logs as the task's config)
    names the data the run read, in place of lmms-eval's placeholder (``dataset_path: json`` and our placeholder
    file: our tasks load their documents themselves, :mod:`lmms_spatial.data`): ``dataset_path`` the Hub id or
    local folder, ``dataset_kwargs`` the revision read, ``metadata.data`` each record as ``results["lmms_spatial"]``
    holds it."""
    configs = results.get("configs")
    if not isinstance(configs, dict) or not data:
        return
    for task, declared_task in tasks.items():
        config = configs.get(task)
        prefix = f"{declared_task.benchmark}/"
        records = {name: record for name, record in data.items()
                   if name == declared_task.benchmark or name.startswith(prefix)}  # fmt: skip
        if not isinstance(config, dict) or not records:
            continue
        sources = sorted({record.source for record in records.values()})
        revisions = sorted({record.revision for record in records.values() if record.revision})
        config["dataset_path"] = sources[0] if len(sources) == 1 else sources
        config["dataset_kwargs"] = {"revision": revisions[0]} if len(revisions) == 1 else {}
        metadata = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
        config["metadata"] = {**metadata, "data": {name: record.to_json() for name, record in sorted(records.items())}}


# --- the run's last lines -----------------------------------------------------------------------------


def _one_line(text: Any, limit: int = 100) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def example_verdict(samples: Mapping[str, list[dict]], tasks: list[str]) -> str | None:
    """One unreadable verdict, from the score records of ``tasks``, if the samples are at hand."""
    from lmms_spatial.judge import UNPARSED_REASON

    for task in tasks:
        for sample in samples.get(task) or []:
            for value in sample.values():
                record = value.get("judge") if isinstance(value, Mapping) else None
                record = record if isinstance(record, Mapping) else value
                if isinstance(record, Mapping) and record.get("reason") == UNPARSED_REASON:
                    reply = record.get("judge_reply", record.get("raw_reply"))
                    if reply is not None:
                        return str(reply)
    return None


def notes(conditions: RunConditions, samples: Mapping[str, list[dict]] | None = None,
          example: Any = None) -> list[str]:  # fmt: skip
    """The last lines a run's conditions call for (see the module doc). ``example(rubric)`` gives an unreadable
    verdict when the samples hold none."""
    lines: list[str] = []
    tasks = conditions.tasks
    model = conditions.model
    mapless = [t for t, c in sorted(tasks.items()) if c.map_source in ("none", "partial")]
    if mapless:
        name = model.name or "the model"
        why = "replays answers given without one" if name == "replay" else "is not a chat model"
        lines.append(
            f"lmms-spatial: {', '.join(mapless)}: not scored (NaN): they ask each question after the model's own "
            f"map, and {model.label or name} drew none ({name} {why}; answers_without_map counts them). A chat "
            f"model draws its own map, e.g. lmms-eval --model {EXAMPLE_CHAT_MODEL} --tasks {','.join(mapless)}"
        )
    by_rubric: dict[tuple[str, str], list[str]] = {}
    for task, entry in sorted(tasks.items()):
        judge = entry.judge
        if judge is not None and judge.kind == "llm" and judge.scored is not None:  # every task this judge scored
            by_rubric.setdefault((judge.model, judge.rubric), []).append(task)
    for (judge_model, rubric), names in sorted(by_rubric.items()):
        unparsed = sum(tasks[t].judge.unparsed or 0 for t in names)
        scored = sum(tasks[t].judge.scored or 0 for t in names)
        rule = unparsed_rule(rubric)
        answered = scored if rule else scored + unparsed
        if not unparsed or unparsed / answered <= UNPARSED_NOTE_SHARE:
            continue
        shown = example_verdict(samples or {}, names)
        if shown is None and callable(example):
            shown = example(rubric)
        what = rule or "left out of judge_score"
        lines.append(
            f"lmms-spatial: {unparsed} of {answered} verdicts of the judge {judge_model} (rubric {rubric}) could not "
            f"be read ({unparsed / answered:.0%}): {what}, counted in judge_unparsed"
            + (f"; e.g. {_one_line(shown)!r}" if shown is not None else "")
            + ". Check the judge model and its server"
        )
    return lines


def unparsed_example(rubric: str) -> str | None:
    """An unreadable verdict of this process's judge for ``rubric`` (its stats keep the first one)."""
    from lmms_spatial.judge import get_judge

    try:
        return get_judge(rubric).stats.example_unparsed
    except Exception:
        return None


# --- what answered, and with which generation settings (their own keys: see the module doc) ---------------


def generation_kwargs_of(task_dict: Mapping) -> dict[str, dict[str, Any]]:
    """{leaf task of ours: its ``generation_kwargs`` now}, a JSON copy (lmms-eval updates the dict in place)."""
    out: dict[str, dict[str, Any]] = {}
    for name, task in _leaf_tasks(task_dict).items():
        config = getattr(task, "config", None)
        if benchmark_of(getattr(config, "process_results", None)) is None:
            continue
        kwargs = getattr(config, "generation_kwargs", None)
        if isinstance(kwargs, Mapping):
            out[name] = json.loads(json.dumps(dict(kwargs), sort_keys=True, default=str))
    return out


def add_what_answered(value: RunConditions, results: Mapping[str, Any], notes: RunNotes) -> None:
    """``model.fingerprint``, ``store`` and each task's ``answers_from_store`` and ``generation`` (in place)."""
    from lmms_spatial.plugin import weights

    store = notes.store
    value.model.fingerprint = (store or {}).get("weights") or weights.fingerprint(value.model.args)
    if value.model.seed is None and notes.model_seed is not None:  # the seed the model drew from by default
        value.model.seed = notes.model_seed
        for entry in value.tasks.values():
            entry.seed = notes.model_seed
    value.model.sampling_seed = (
        None if notes.own_seed_only else sampling_seed(results.get("config") or {}, notes.generation)
    )
    value.store = (
        StoreRecord(store.get("root"), store.get("answers"), store.get("asked"), list(store.get("from") or []))
        if store
        else None
    )
    overrides = (results.get("config") or {}).get("gen_kwargs")
    overrides = json.loads(json.dumps(dict(overrides), default=str)) if isinstance(overrides, Mapping) else {}
    protocol, in_effect = notes.protocol, notes.generation
    served = (store or {}).get("tasks") or {}
    for name, entry in value.tasks.items():
        entry.answers_from_store = int(served.get(name, 0)) if store else None
        if name in in_effect or name in protocol:
            entry.generation = Generation(protocol.get(name), in_effect.get(name, protocol.get(name)), overrides)
