"""Every result carries its conditions: ``results["lmms_spatial"]`` in the results file (schema 1).

lmms-eval writes the whole dict ``simple_evaluate`` returns into ``<output>/<model>/<date>_results.json``.
A run of ours adds one key, ``lmms_spatial``, read by ``lmms-spatial report``
(:mod:`lmms_spatial.reports.runs`)::

    {"schema": 1, "lmms_spatial_version": "0.1.0",
     "model": {"label": "Qwen2.5-VL-7B-Instruct", "name": "qwen2_5_vl", "args": "pretrained=...", "seed": 0},
     "tasks": {"<leaf task>": {"documents": 3, "of": 12, "limit": 3,
                               "judge": {...} | null, "map_source": "own_map" | "none" | null,
                               "run_options": {...}, "seed": 0}}}

- ``model.label``: short (the basename of ``pretrained=`` / ``model_version=`` / ``model=``, else the model's
  name), never the whole ``model_args``; a replayed run keeps the label of the run it replays;
- ``documents`` / ``of``: documents evaluated (after ``--limit``) / in the split; a task with no documents in the
  release has 0 of 0;
- ``judge`` (tasks that ask an LLM judge): ``{"kind": "llm", "model", "rubric", "rubric_version", "scored",
  "failures", "unparsed"}``, ``{"kind": "rule", "rule", "share"}`` (``LMMS_SPATIAL_JUDGE=none``) or
  ``{"kind": "none", "reason"}``; null for a task that needs no judge;
- ``map_source`` (OSR-Bench's with-map tasks): ``own_map`` when every answer was given with the model's own
  map, ``none`` when none was (the task is unscored), ``partial`` when only some were; null elsewhere;
- ``run_options``: the :mod:`lmms_spatial.run_options` values in effect (``{}``: defaults);
- ``seed``: the model's ``seed=`` argument, else lmms-eval's ``--seed``;
- ``requests_failed`` (added by :func:`lmms_spatial.plugin.run.record_conditions`): documents whose request to the
  model failed after its retries (:mod:`lmms_spatial.plugin.failed_requests`), left out of every number.

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
from typing import Any

SCHEMA = 1
KEY = "lmms_spatial"
UNPARSED_NOTE_SHARE = 0.05  # more than this share of unreadable verdicts is said in the run's last lines
LABEL_ARGS = ("pretrained", "model_version", "model")
# rubrics whose official code scores an unreadable verdict 0 (kept, and counted): OSR-Bench's
# evaluation/llm_evaluator.py (json.loads fails, or no "score": 0)
SCORED_UNPARSED = frozenset({"osr_negative"})


# --- the model ----------------------------------------------------------------------------------


def parse_model_args(args: Any) -> dict[str, str]:
    """``a=b,c=d`` (lmms-eval's ``--model_args``) as a dict; a dict as is."""
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
    """A short label: the basename of ``pretrained=`` / ``model_version=`` / ``model=``, else the model name."""
    parsed = parse_model_args(args)
    for key in LABEL_ARGS:
        if parsed.get(key):
            return short_name(parsed[key])
    return str(name or "model")


def _model_seed(args: Any, config: Mapping[str, Any]) -> int | None:
    raw = parse_model_args(args).get("seed", config.get("random_seed"))
    try:
        return int(raw) if raw is not None else None
    except (TypeError, ValueError):
        return None


def replayed_label(args: Any) -> tuple[str, str] | None:
    """(label, results file) of the run whose samples ``--model replay`` answers from, when its results file
    sits next to them; None otherwise."""
    from lmms_spatial.models.replay import find_samples_files

    spec = parse_model_args(args).get("samples")
    if not spec:
        return None
    try:
        files = find_samples_files(spec)
    except (OSError, ValueError):
        return None
    for samples in sorted(files.values()):
        stamp = samples.name.split("_samples_", 1)[0]
        results = samples.parent / f"{stamp}_results.json"
        try:
            data = json.loads(results.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        recorded = (data.get(KEY) or {}).get("model") or {}
        config = data.get("config") or {}
        label = recorded.get("label") or model_label(config.get("model"), config.get("model_args"))
        return str(label), str(results)
    return None


def model_entry(config: Mapping[str, Any]) -> dict[str, Any]:
    name, args = config.get("model"), config.get("model_args")
    entry: dict[str, Any] = {"label": model_label(name, args), "name": name, "args": args,
                             "seed": _model_seed(args, config)}  # fmt: skip
    if name == "replay":
        found = replayed_label(args)
        if found is not None:
            entry["label"], entry["replayed_from"] = found
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


def benchmark_of(function: Any) -> str | None:
    """``odi_bench`` for a function of ``lmms_spatial.tasks.odi_bench...``; None for another module's."""
    parts = str(getattr(function, "__module__", "") or "").split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["lmms_spatial", "tasks"] else None


def declared(task_dict: Mapping) -> dict[str, dict[str, Any]]:
    """{leaf task of ours: its benchmark, judge rubric, map stage and run options in effect now}.

    Tasks declare them on their ``process_results`` function (``judge_rubric``, ``map_stage``,
    ``run_options_in_effect``); the run options are read while the model is known (API image rules).
    """
    from lmms_spatial import run_options

    out: dict[str, dict[str, Any]] = {}
    for name, task in _leaf_tasks(task_dict).items():
        function = getattr(getattr(task, "config", None), "process_results", None)
        benchmark = benchmark_of(function)
        if benchmark is None:
            continue
        options = getattr(function, "run_options_in_effect", None)
        try:
            in_effect = options() if callable(options) else run_options.in_effect(benchmark)
        except Exception as exc:  # a bad option value fails the run elsewhere, naming it
            in_effect = {"error": str(exc)}
        out[name] = {
            "benchmark": benchmark,
            "judge_rubric": getattr(function, "judge_rubric", None),
            "map_stage": getattr(function, "map_stage", None),
            "run_options": in_effect,
        }
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


def judge_entry(rubric: str, metrics: Mapping[str, Any], documents: int, without_map: int) -> dict[str, Any]:
    from lmms_spatial.judge import JudgeConfig, get_rubric
    from lmms_spatial.judge.config import ENV_MODEL

    config = JudgeConfig.from_env()
    failures, unparsed = _count(metrics, "judge_failures"), _count(metrics, "judge_unparsed")
    if config.is_none:
        share = _number(metrics.get("judge_fallback_share,none"))
        if share is None or not math.isfinite(share):
            share = 1.0 if documents > without_map else None
        return {"kind": "rule", "rule": f"{rubric} rule-based fallback ({ENV_MODEL}=none)", "share": share}
    if config.model is None:
        return {"kind": "none", "reason": f"no judge configured ({ENV_MODEL} is not set)"}
    entry: dict[str, Any] = {"kind": "llm", "model": config.model, "rubric": rubric,
                             "rubric_version": get_rubric(rubric).version}  # fmt: skip
    if failures is not None:
        answered = documents - failures - without_map
        scored = answered if rubric in SCORED_UNPARSED else answered - (unparsed or 0)
        entry.update(scored=scored, failures=failures, unparsed=unparsed or 0)
    return entry


def map_source(metrics: Mapping[str, Any], documents: int, lm_draws_maps: bool) -> str:
    without = _count(metrics, "answers_without_map")
    if without is None:  # not scored (--predict_only): what the model does
        return "own_map" if lm_draws_maps else "none"
    if without == 0:
        return "own_map"
    return "none" if without >= documents else "partial"


def build(results: Mapping[str, Any], tasks: Mapping[str, Mapping[str, Any]], *, lm_draws_maps: bool = False,
          empty: list[str] = ()) -> dict[str, Any]:  # fmt: skip
    """The ``lmms_spatial`` value of one finished run (see the module doc)."""
    from lmms_spatial import __version__

    config = results.get("config") or {}
    model = model_entry(config)
    limit = config.get("limit")
    if isinstance(limit, float) and limit.is_integer():  # lmms-eval keeps --limit 3 as 3.0
        limit = int(limit)
    counts = results.get("n-samples") or {}
    table = results.get("results") or {}
    samples = results.get("samples") or {}
    entries: dict[str, Any] = {}
    for name, info in sorted(tasks.items()):
        n = counts.get(name) or {}
        documents = int(n.get("effective", n.get("original", 0)) or 0)
        metrics = table.get(name) or {}
        without_map = _count(metrics, "answers_without_map") or 0
        rubric = info.get("judge_rubric")
        options = _samples_options(samples.get(name))
        entries[name] = {
            "documents": documents,
            "of": int(n.get("original", documents) or 0),
            "limit": limit,
            "judge": judge_entry(rubric, metrics, documents, without_map) if rubric else None,
            "map_source": map_source(metrics, documents, lm_draws_maps) if info.get("map_stage") else None,
            "run_options": options if options is not None else dict(info.get("run_options") or {}),
            "seed": model["seed"],
        }
    for name in empty:
        entries[name] = {"documents": 0, "of": 0, "limit": limit, "judge": None, "map_source": None,
                         "run_options": {}, "seed": model["seed"]}  # fmt: skip
    return {"schema": SCHEMA, "lmms_spatial_version": __version__, "model": model, "tasks": entries}


EXAMPLE_CHAT_MODEL = "qwen2_5_vl --model_args pretrained=Qwen/Qwen2.5-VL-7B-Instruct"
NOT_SCORED_KEY = "not_scored,none"  # results["results"][task] of a with-map task answered without maps
NO_MAP = "no map"


def annotate(results: dict, conditions: Mapping[str, Any]) -> None:
    """Name in lmms-eval's results table why a with-map task's scores are NaN (in place): ``not_scored: no map``
    (short, so lmms-eval's value column keeps its width; the run's last lines say the rest)."""
    table = results.get("results") or {}
    for task, entry in (conditions.get("tasks") or {}).items():
        if entry.get("map_source") == "none" and isinstance(table.get(task), dict):
            table[task][NOT_SCORED_KEY] = NO_MAP


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


def notes(conditions: Mapping[str, Any], samples: Mapping[str, list[dict]] | None = None,
          example: Any = None) -> list[str]:  # fmt: skip
    """The last lines a run's conditions call for (see the module doc). ``example(rubric)`` gives an unreadable
    verdict when the samples hold none."""
    lines: list[str] = []
    tasks = conditions.get("tasks") or {}
    model = conditions.get("model") or {}
    mapless = [t for t, c in sorted(tasks.items()) if c.get("map_source") in ("none", "partial")]
    if mapless:
        name = model.get("name") or "the model"
        why = "replays answers given without one" if name == "replay" else "is not a chat model"
        lines.append(
            f"lmms-spatial: {', '.join(mapless)}: not scored (NaN): they ask each question after the model's own "
            f"map, and {model.get('label') or name} drew none ({name} {why}; answers_without_map counts them). A chat "
            f"model draws its own map, e.g. lmms-eval --model {EXAMPLE_CHAT_MODEL} --tasks {','.join(mapless)}"
        )
    by_rubric: dict[tuple[str, str], list[str]] = {}
    for task, entry in sorted(tasks.items()):
        judge = entry.get("judge") or {}
        if judge.get("kind") == "llm" and judge.get("scored") is not None:  # every task this judge scored
            by_rubric.setdefault((judge["model"], judge["rubric"]), []).append(task)
    for (judge_model, rubric), names in sorted(by_rubric.items()):
        unparsed = sum(tasks[t]["judge"]["unparsed"] for t in names)
        scored = sum(tasks[t]["judge"].get("scored", 0) for t in names)
        answered = scored if rubric in SCORED_UNPARSED else scored + unparsed
        if not unparsed or unparsed / answered <= UNPARSED_NOTE_SHARE:
            continue
        shown = example_verdict(samples or {}, names)
        if shown is None and callable(example):
            shown = example(rubric)
        what = ("scored 0 in llm_accuracy, as the official OSR-Bench evaluator scores them"
                if rubric in SCORED_UNPARSED else "left out of judge_score")  # fmt: skip
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
