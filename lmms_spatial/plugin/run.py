"""The run-level wrapper around lmms-eval's ``simple_evaluate`` and ``evaluate``.

A run is *ours* when the tasks it names include one of our tasks, groups or tags. For such a run:

- its answers are kept as they come (:mod:`lmms_spatial.plugin.resume`: lmms-eval's response cache, on by
  default, written chunk by chunk), so a kill, an OOM or a scoring error loses nothing and the same command
  resumes;
- before generation, one notice names the tasks that need an LLM judge when none is configured or its server
  does not answer (:mod:`lmms_spatial.judge.preflight`);
- a task whose scoring or aggregation raises is set aside (:mod:`lmms_spatial.plugin.isolation`): the other
  tasks' results and every sample are written, and the run exits 1 naming it
  (:mod:`lmms_spatial.plugin.failures`);
- an evaluation that raises anyway exits 1 with one line naming the task lmms-eval was building, or the stage;
- the results carry the run's conditions (``results["lmms_spatial"]``: model label, documents of the split,
  judge, map source, run options, seed; :mod:`lmms_spatial.plugin.conditions`), and the run's last lines
  say when with-map tasks went unscored for want of a map or a judge's verdicts could not be read;
- ``--model staged`` keeps its stage outputs (the maps) beside the kept answers, so a resumed run's answers
  still record the map they were given.

Every ``evaluate`` call (ours or not) decodes our tasks' inputs ahead of the model
(:mod:`lmms_spatial.prefetch`; a no-op for other tasks). Runs that name none of our tasks are otherwise
left exactly as lmms-eval runs them.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lmms_spatial.plugin import failures, internal


@dataclass
class Run:
    ours: list[str]
    cli_args: Any = None
    predict_only: bool = False
    notes: dict[str, Any] = field(default_factory=dict)


_RUNS: list[Run] = []  # the run in progress (one evaluation at a time per process)


def current() -> Run | None:
    return _RUNS[-1] if _RUNS else None


def active() -> bool:
    return bool(_RUNS)


def requested_names(tasks: Any) -> set[str]:
    items = tasks if isinstance(tasks, (list, tuple)) else [tasks]
    names: set[str] = set()
    for item in items:
        if isinstance(item, str):
            names.update(part.strip() for part in item.split(",") if part.strip())
    return names


def _bind(function: Callable, args: tuple, kwargs: dict) -> inspect.BoundArguments | None:
    try:
        return inspect.signature(function).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return None


def _wrap(module, name: str, make: Callable[[Callable], Callable]) -> None:
    original = internal(module, name, "that part of our run handling is off")
    if original is None or getattr(original, "_lmms_spatial", False):
        return
    wrapper = functools.wraps(original)(make(original))
    wrapper._lmms_spatial = True
    setattr(module, name, wrapper)


def _simple_evaluate(original: Callable) -> Callable:
    def simple_evaluate(*args, **kwargs):
        bound = _bind(original, args, kwargs)
        if bound is None:
            return original(*args, **kwargs)
        ours = sorted(requested_names(bound.arguments.get("tasks")) & failures.our_task_names())
        if not ours:
            return original(*args, **kwargs)
        from lmms_spatial.plugin import resume

        run = Run(ours, bound.arguments.get("cli_args"), bool(bound.arguments.get("predict_only")))
        model = bound.arguments.get("model")
        run.notes["model_id"] = f"{model if isinstance(model, str) else type(model).__name__}:" \
                                f"{bound.arguments.get('model_args') or ''}"  # fmt: skip
        resume.choose_cache(bound, run)
        _RUNS.append(run)
        try:
            results = original(*bound.args, **bound.kwargs)
        except Exception as exc:
            failures.run_failed(exc, ours)
            raise
        finally:
            _RUNS.remove(run)
        record_conditions(results, run)
        return results

    return simple_evaluate


def record_conditions(results: Any, run: Run) -> None:
    """``results["lmms_spatial"]`` gets the run's conditions, and the run's last lines what they call for.
    Never fails the run: a problem here costs the record, said in one line."""
    if not isinstance(results, dict):  # ranks other than 0 return nothing
        return
    try:
        from lmms_spatial.plugin import conditions, empty_tasks

        value = conditions.build(results, run.notes.get("tasks") or {}, lm_draws_maps=bool(run.notes.get("maps")),
                                 empty=empty_tasks.left_out())  # fmt: skip
        results[conditions.KEY] = {**value, **(results.get(conditions.KEY) or {})}
        conditions.annotate(results, value)
        for line in conditions.notes(value, results.get("samples"), example=conditions.unparsed_example):
            failures.add_note(line)
    except Exception as exc:
        print(f"lmms-spatial: the run's conditions were not recorded in its results ({failures.describe(exc)})",
              file=sys.stderr)  # fmt: skip


def _evaluate(original: Callable) -> Callable:
    def evaluate(*args, **kwargs):
        from lmms_spatial.prefetch import prefetching_model

        bound = _bind(original, args, kwargs)
        lm = bound.arguments.get("lm") if bound is not None else (args[0] if args else None)
        run = current()
        task_dict = (bound.arguments.get("task_dict") if bound is not None else None) or {}
        if run is not None and bound is not None:
            from lmms_spatial.plugin.isolation import tasks_needing_judge

            if not run.predict_only:
                from lmms_spatial.judge.preflight import notice

                message = notice(tasks_needing_judge(task_dict))
                if message:
                    print(message, file=sys.stderr, flush=True)
            _keep_stages(lm, run)
            _note_tasks(task_dict, run)
        with prefetching_model(lm), _own_maps(lm, run) as drawing:
            results = original(*args, **kwargs)
        if run is not None:
            from lmms_spatial.plugin.isolation import set_aside_failed

            set_aside_failed(results)
            run.notes["maps"] = drawing or _draws_maps(lm)
        return results

    return evaluate


def _keep_stages(lm: Any, run: Run) -> None:
    """A stage-drawing model keeps its stage outputs beside the run's kept answers (resumed answers find them)."""
    keep = getattr(type(lm), "keep_stages_with_answers", None)
    if keep is not None and run.notes.get("answers"):
        try:
            keep(lm, run.notes["answers"])
        except Exception as exc:  # never worse than before: the maps are still drawn, only not kept
            print(f"lmms-spatial: stage outputs are not kept with the answers ({failures.describe(exc)})",
                  file=sys.stderr)  # fmt: skip


def _note_tasks(task_dict: dict, run: Run) -> None:
    """What the tasks declare about their judge, map and settings, read while the model is known."""
    try:
        from lmms_spatial.plugin import conditions

        run.notes["tasks"] = {**run.notes.get("tasks", {}), **conditions.declared(task_dict)}
    except Exception as exc:
        print(f"lmms-spatial: the tasks' conditions were not read ({failures.describe(exc)})", file=sys.stderr)


def _draws_maps(lm: Any) -> bool:
    from lmms_spatial.plugin import conditions

    return conditions.draws_maps(lm)


def _own_maps(lm: Any, run: Run | None):
    """A chat model asked for with-map tasks draws its own maps (:mod:`lmms_spatial.plugin.maps`)."""
    if run is None:
        return contextlib.nullcontext(False)
    from lmms_spatial.plugin.maps import map_tasks, own_maps

    tasks = map_tasks(run.notes.get("tasks") or {})
    return own_maps(lm, tasks, run.notes.get("model_id", ""), run.notes.get("answers"))


def _group_results(original: Callable) -> Callable:
    """Group aggregation that raises costs the group's scores, not the run's results."""

    def consolidate_group_results(results, versions, task_dict, *args, **kwargs):
        if not active():
            return original(results, versions, task_dict, *args, **kwargs)
        try:
            return original(results, versions, task_dict, *args, **kwargs)
        except Exception as exc:
            failures.add_line(f"lmms-spatial: group scores were not computed: {failures.describe(exc)}; every "
                              "task's own results and samples were written")  # fmt: skip
            return results, versions, False, {}

    return consolidate_group_results


def patch_evaluator(module) -> None:
    failures.register_exit()  # before lmms-eval registers its own exit handlers: ours runs after them
    _wrap(module, "simple_evaluate", _simple_evaluate)
    _wrap(module, "evaluate", _evaluate)
    _wrap(module, "consolidate_group_results", _group_results)
