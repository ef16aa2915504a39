"""Per-task CPU cost (``tasks`` section): what a chat-model run pays our code per document.

In-process through lmms-eval's ``TaskManager``: dataset load, then per document ``doc_to_visual``,
``doc_to_text``, ``doc_to_messages`` and ``process_results`` on the target as reply, plus the task's
aggregations.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from lmms_spatial.bench.measure import Timer, peak_rss_mb, quiet_logs

NON_ODI_BUDGET_MS = 20.0  # our CPU ms per document, every benchmark but ODI-Bench (its ERPs are huge)


def bench_tasks(tasks: list[str], docs_per_task: int) -> dict[str, dict[str, Any]]:
    """Per task: load seconds, per-doc CPU/wall ms of each phase, peak RSS growth."""
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_spatial.paths import tasks_dir

    quiet_logs()
    manager = TaskManager(include_defaults=False, include_path=tasks_dir(), verbosity="ERROR")
    out: dict[str, dict[str, Any]] = {}
    for name in tasks:
        rss0 = peak_rss_mb()
        load = Timer()
        with load:
            task = get_task_dict([name], manager)[name]
            docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
            n_docs = len(docs)
        phases = {p: Timer() for p in ("row", "visual", "prompt", "messages", "score")}
        per_metric: dict[str, list] = {}
        n = max(1, docs_per_task)
        for i in range(n):
            with phases["row"]:  # datasets decodes Image() columns on row access, as the model's lookup does
                doc = docs[i % n_docs]
            with phases["visual"]:
                _load_pixels(task.doc_to_visual(doc))
            with phases["prompt"]:
                task.doc_to_text(doc)
            with phases["messages"]:  # pixels forced: lazily opened images would otherwise decode in the model
                _load_pixels(to_messages(task, doc))
            target = task.doc_to_target(doc)
            reply = target if isinstance(target, str) else json.dumps(target)
            with phases["score"]:
                scored = task.process_results(doc, [reply])
            if i < n_docs:  # aggregations see each document once (cycling would duplicate groups)
                for metric, value in scored.items():
                    per_metric.setdefault(metric, []).append(value)
        aggregate = Timer()
        with aggregate:
            functions = task.aggregation()
            for metric, values in per_metric.items():
                if metric in functions:
                    functions[metric](values)
        row = {
            "benchmark": benchmark_of(name),
            "n_docs_in_dataset": n_docs,
            "docs_measured": n,
            "load_s": round(load.wall, 4),
            "load_cpu_s": round(load.cpu, 4),
            **{f"{p}_cpu_ms_per_doc": round(1000 * t.cpu / n, 3) for p, t in phases.items()},
            **{f"{p}_wall_ms_per_doc": round(1000 * t.wall / n, 3) for p, t in phases.items()},
            "aggregate_cpu_ms_per_doc": round(1000 * aggregate.cpu / min(n, n_docs), 3),
        }
        row["our_cpu_ms_per_doc"] = round(
            row["row_cpu_ms_per_doc"]
            + row["messages_cpu_ms_per_doc"]
            + row["score_cpu_ms_per_doc"]
            + row["aggregate_cpu_ms_per_doc"],
            3,
        )
        row["our_wall_ms_per_doc"] = round(
            row["row_wall_ms_per_doc"]
            + row["messages_wall_ms_per_doc"]
            + row["score_wall_ms_per_doc"]
            + 1000 * aggregate.wall / min(n, n_docs),
            3,
        )
        row["peak_rss_mb"] = round(peak_rss_mb(), 1)
        row["peak_rss_growth_mb"] = round(peak_rss_mb() - rss0, 1)
        out[name] = row
    return out


def _load_pixels(value: Any) -> None:
    """Decode every PIL image inside ``value`` (lists, dicts, messages)."""
    if hasattr(value, "load") and hasattr(value, "size"):
        value.load()
    elif isinstance(value, dict):
        for v in value.values():
            _load_pixels(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _load_pixels(v)


def to_messages(task, doc: dict) -> Any:
    """The chat messages a chat model gets (``ConfigurableMessagesTask.doc_to_messages``), from any task object."""
    fn = getattr(task.config, "doc_to_messages", None)
    if not callable(fn):  # no messages function: the model builds them from doc_to_visual + doc_to_text
        return [task.doc_to_visual(doc), task.doc_to_text(doc)]
    kwargs = getattr(task, "lmms_eval_specific_kwargs", None)
    params = inspect.signature(fn).parameters
    if kwargs is not None and ("lmms_eval_specific_kwargs" in params or len(params) == 2):
        return fn(doc, lmms_eval_specific_kwargs=kwargs)
    return fn(doc)


def benchmark_of(task: str) -> str:
    for prefix, key in (("mmsi", "mmsi"), ("dori", "dori"), ("mmperspective", "mmperspective"),
                        ("odi_bench", "odi_bench"), ("osr_", "osr_bench")):  # fmt: skip
        if task.startswith(prefix):
            return key
    return task.split("_")[0]
