"""One task's scoring failure costs that task's scores, never the other tasks' results or anyone's answers.

lmms-eval 0.7.x scores every task, then aggregates every task, then writes results and samples: one
exception anywhere after generation loses every task's answers. In a run of ours (see
:mod:`lmms_spatial.plugin.run`):

- ``ConfigurableTask.process_results`` that raises records the task as failed and returns
  ``{ERROR_KEY: reason}`` for the document (the sample, with its reply, is still written); the task's other
  documents are not scored again (lmms-eval retries a raising ``process_results`` 5 times, 2 s apart, per
  document). Our own tasks' ``process_results`` is a pure function that never raises on a reply, so it is
  called without lmms-eval's retry: a raise is a bug, and retrying it only costs time;
- a ``TaskOutput`` whose aggregation raises records the task as failed;
- a failed task's metrics are dropped before lmms-eval consolidates the results, so no partial number is
  reported for it, and groups that contain it lose their scores (they would average fewer tasks than they
  name); ``results["lmms_spatial"]`` lists both, and the run exits 1 naming the task.

Runs that are not ours are not touched.
"""

from __future__ import annotations

from typing import Any

from lmms_spatial import run_state
from lmms_spatial.plugin import failed_requests, failures, internal

ERROR_KEY = failures.ERROR_KEY
JUDGE_METRIC = "judge_failures"  # every task of ours that asks an LLM judge reports this metric


def _active() -> bool:
    return run_state.active()


def is_our_task(task: Any) -> bool:
    function = getattr(getattr(task, "config", None), "process_results", None)
    return (getattr(function, "__module__", None) or "").startswith("lmms_spatial.")


def _task_name(task: Any) -> str:
    return str(getattr(getattr(task, "config", None), "task", None) or getattr(task, "task_name", "?"))


def patch_process_results(module) -> None:
    original = internal(module, "ConfigurableTask.process_results", "scoring failures are not isolated")
    if original is None or getattr(original, "_lmms_spatial", False):
        return
    cls = module.ConfigurableTask
    unretried = getattr(original, "__wrapped__", original)  # below lmms-eval's tenacity retry

    def process_results(self, doc, results, *args, **kwargs):
        if not _active():
            return original(self, doc, results, *args, **kwargs)
        name = _task_name(self)
        if name in failures.failed_tasks():
            return {ERROR_KEY: "not scored: an earlier document of this task failed to score"}
        failed = failed_requests.failure_text(results)
        if failed is not None:  # a model class's failure marker is not the model's answer
            return failed_requests.record(failed)
        try:
            return (unretried if is_our_task(self) else original)(self, doc, results, *args, **kwargs)
        except Exception as exc:
            failures.task_failed(name, "scoring", exc)
            return {ERROR_KEY: f"scoring failed: {failures.describe(exc)}"}

    process_results._lmms_spatial = True
    process_results.__wrapped__ = original
    cls.process_results = process_results


def _drop_scores(output: Any) -> None:
    for name in ("sample_metrics", "per_sample_metrics", "agg_metrics"):
        values = getattr(output, name, None)
        if hasattr(values, "clear"):
            values.clear()


def _guarded(original, stage: str):
    def method(self, *args, **kwargs):
        if not _active():
            return original(self, *args, **kwargs)
        if self.task_name in failures.failed_tasks():
            _drop_scores(self)
            return None
        if original.__name__ == "calculate_aggregate_metric":  # rank 0, every rank's records gathered
            failed_requests.note_task(self.task_name, getattr(self, "sample_metrics", None))
        try:
            return original(self, *args, **kwargs)
        except Exception as exc:
            failures.task_failed(self.task_name, stage, exc)
            _drop_scores(self)
            return None

    method._lmms_spatial = True
    method.__wrapped__ = original
    method.__name__ = original.__name__
    return method


def patch_task_output(module) -> None:
    cls = internal(module, "TaskOutput", "aggregation failures are not isolated")
    if cls is None:
        return
    for name in ("calculate_aggregate_metric", "calculate_clt_aggregate_metric", "calculate_stability_metrics"):
        original = getattr(cls, name, None)
        if original is not None and not getattr(original, "_lmms_spatial", False):
            setattr(cls, name, _guarded(original, "aggregating"))


def tasks_needing_judge(task_dict: dict) -> list[str]:
    """Our tasks in ``task_dict`` (nested groups included) whose metrics ask an LLM judge."""
    found: list[str] = []

    def walk(mapping: dict) -> None:
        for value in mapping.values():
            task = value[1] if isinstance(value, tuple) else value
            if isinstance(task, dict):
                walk(task)
            elif task is not None and is_our_task(task):
                metrics = {m.get("metric") for m in (getattr(task.config, "metric_list", None) or [])}
                if JUDGE_METRIC in metrics:
                    found.append(_task_name(task))

    walk(task_dict)
    return sorted(set(found))


def _subtasks(group: str, children: dict[str, list[str]], seen: set[str] | None = None) -> set[str]:
    seen = set() if seen is None else seen
    out: set[str] = set()
    for child in children.get(group, []):
        if child in seen:
            continue
        seen.add(child)
        out.add(child)
        out |= _subtasks(child, children, seen)
    return out


def set_aside_failed(results: dict | None) -> None:
    """Strip the scores of groups that contain a failed task; list failed tasks and such groups in the results."""
    failed = failures.failed_tasks()
    if not failed or not isinstance(results, dict):
        return
    children = results.get("group_subtasks") or {}
    incomplete = sorted(g for g in children if _subtasks(g, children) & set(failed))
    for table in ("results", "groups"):
        for group in incomplete:
            entry = (results.get(table) or {}).get(group)
            if isinstance(entry, dict):
                for key in [k for k in entry if "," in k or k == "samples"]:
                    del entry[key]
    results["lmms_spatial"] = {"failed_tasks": failed, "groups_without_scores": incomplete}
