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
- an evaluation that raises anyway exits 1 with one line naming the task lmms-eval was building, or the stage.

Every ``evaluate`` call (ours or not) decodes our tasks' inputs ahead of the model
(:mod:`lmms_spatial.prefetch`; a no-op for other tasks). Runs that name none of our tasks are otherwise
left exactly as lmms-eval runs them.
"""

from __future__ import annotations

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
        resume.choose_cache(bound, run)
        _RUNS.append(run)
        try:
            return original(*bound.args, **bound.kwargs)
        except Exception as exc:
            failures.run_failed(exc, ours)
            raise
        finally:
            _RUNS.remove(run)

    return simple_evaluate


def _evaluate(original: Callable) -> Callable:
    def evaluate(*args, **kwargs):
        from lmms_spatial.prefetch import prefetching_model

        bound = _bind(original, args, kwargs)
        lm = bound.arguments.get("lm") if bound is not None else (args[0] if args else None)
        run = current()
        if run is not None and bound is not None:
            from lmms_spatial.plugin.isolation import tasks_needing_judge

            if not run.predict_only:
                from lmms_spatial.judge.preflight import notice

                message = notice(tasks_needing_judge(bound.arguments.get("task_dict") or {}))
                if message:
                    print(message, file=sys.stderr, flush=True)
        with prefetching_model(lm):
            results = original(*args, **kwargs)
        if run is not None:
            from lmms_spatial.plugin.isolation import set_aside_failed

            set_aside_failed(results)
        return results

    return evaluate


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
