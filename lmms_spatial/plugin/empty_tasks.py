"""A task of ours with no documents in the release: left out by name, the rest of the run goes on.

lmms-eval 0.7.3 builds every task of a group before evaluating any, and ``ConfigurableTask.__init__``
reads ``self.task_docs[0]``: a release that ships no questions of one task (its filtered split is
empty, whether ``process_docs`` filtered it or the data resolved to nothing) raises ``IndexError``
there and the whole group dies before the first model call. Two patches and an exit status:

* :func:`patch_empty_tasks` (``lmms_eval.api.task``): the constructor of one of *our* tasks
  tolerates an empty split (everything it sets up comes before that read; the read itself only
  checks one document) and flags the task; built-in tasks keep lmms-eval's behaviour;
* :func:`patch_skip_empty_tasks` (``lmms_eval.evaluator``): the task dict ``simple_evaluate``
  evaluates leaves flagged tasks out (a group left with no task goes too), so group means cover
  the tasks that have documents; a run left with nothing to evaluate fails in one line
  (:class:`NoDocumentsError`). After evaluation the results name every empty task
  (``"documents,none": "no documents in this release"``: its metrics absent, not 0) and every
  group that lost tasks says which it covers (``"tasks_covered,none"``, in ``results`` and
  ``groups``); both print in lmms-eval's tables;
* exit status: like every other data problem of ours (data unavailable, a bad document), the run
  exits 1, its last stderr lines naming the empty tasks (:mod:`lmms_spatial.plugin.failures`), but only
  after lmms-eval has written the results and samples of the other tasks. A release that is not the
  paper's benchmark must not pass as a success in a script, and nothing that did run is lost.
"""

from __future__ import annotations

import functools
import sys

from lmms_spatial.conditions import DOCUMENTS_KEY, NO_DOCUMENTS  # noqa: F401  (results[task] of an empty task)
from lmms_spatial.plugin import failures

COVERAGE_KEY = "tasks_covered,none"  # results["results"][group]: "4 of 5; no documents: <tasks>"
_FLAG = "_lmms_spatial_no_documents"


class NoDocumentsError(RuntimeError):
    """Every task the run asked for has no documents in the release: nothing to evaluate."""


# what the last task dict left out: empty tasks (in order), and {group: (covered, empty) leaf tasks}
_empty: list[str] = []
_coverage: dict[str, tuple[list[str], list[str]]] = {}


def _internals_differ(missing: str) -> None:
    print(
        f"lmms-spatial: this lmms-eval has no {missing}, so a task with no documents in the release stops the "
        "run; ask only for the tasks the release has",
        file=sys.stderr,
    )


def _is_ours(task) -> bool:
    """Whether the task's functions come from our package (built-in tasks keep lmms-eval's behaviour)."""
    config = getattr(task, "config", None)
    functions = (getattr(config, name, None) for name in ("process_docs", "doc_to_text", "process_results"))
    return any(str(getattr(f, "__module__", "") or "").startswith("lmms_spatial") for f in functions)


def patch_empty_tasks(module) -> None:
    """Let one of our tasks be built with no documents (``ConfigurableTask.__init__``), flagged."""
    cls = getattr(module, "ConfigurableTask", None)
    init = getattr(cls, "__init__", None)
    if init is None:
        _internals_differ("api.task.ConfigurableTask")
        return
    if getattr(init, _FLAG, False):
        return

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):  # noqa: N807 - the method it replaces
        try:
            init(self, *args, **kwargs)
        except IndexError:
            docs = getattr(self, "task_docs", None)
            if docs is None or len(docs) != 0 or not _is_ours(self):
                raise
            setattr(self, _FLAG, True)
            from loguru import logger

            logger.warning(f"{self.config.task}: {NO_DOCUMENTS}; left out, the other tasks run")

    setattr(__init__, _FLAG, True)
    cls.__init__ = __init__


def _task_name(key, value) -> str:
    config = getattr(value, "config", None)
    return str(getattr(config, "task", None) or key)


def _group_name(key) -> str:
    return str(getattr(key, "group", None) or getattr(key, "group_name", None) or key)


def _leaves(task_dict: dict) -> list[str]:
    out: list[str] = []
    for key, value in task_dict.items():
        out += _leaves(value) if isinstance(value, dict) else [_task_name(key, value)]
    return out


def without_empty_tasks(task_dict: dict) -> tuple[dict, list[str], dict[str, tuple[list[str], list[str]]]]:
    """``task_dict`` less the flagged tasks (and the groups left empty), the empty tasks in order,
    and ``{group: (covered, empty)}`` for every kept group that lost some."""
    kept: dict = {}
    empty: list[str] = []
    coverage: dict[str, tuple[list[str], list[str]]] = {}
    for key, value in task_dict.items():
        if isinstance(value, dict):
            sub, sub_empty, sub_coverage = without_empty_tasks(value)
            empty += sub_empty
            coverage.update(sub_coverage)
            if sub:
                kept[key] = sub
                if sub_empty:
                    coverage[_group_name(key)] = (_leaves(sub), sub_empty)
        elif getattr(value, _FLAG, False):
            empty.append(_task_name(key, value))
        else:
            kept[key] = value
    return kept, empty, coverage


def left_out() -> list[str]:
    """The tasks of ours the last task dict left out for want of documents."""
    return list(_empty)


def describe_coverage(covered: list[str], empty: list[str]) -> str:
    return f"{len(covered)} of {len(covered) + len(empty)}; {NO_DOCUMENTS}: {', '.join(empty)}"


def annotate(results: dict) -> dict:
    """Name the empty tasks and the groups' coverage in lmms-eval's results dict (in place)."""
    for section in ("results", "groups"):
        for group, (covered, empty) in _coverage.items():
            if group in results.get(section, {}):
                results[section][group][COVERAGE_KEY] = describe_coverage(covered, empty)
    table = results.setdefault("results", {})
    for task in _empty:
        table[task] = {"alias": task, DOCUMENTS_KEY: NO_DOCUMENTS}
    return results


def patch_skip_empty_tasks(module) -> None:
    """Wrap ``get_task_dict`` and ``simple_evaluate`` of ``lmms_eval.evaluator`` (see the module doc)."""
    get_task_dict = getattr(module, "get_task_dict", None)
    simple_evaluate = getattr(module, "simple_evaluate", None)
    if get_task_dict is None or simple_evaluate is None:
        _internals_differ("evaluator.get_task_dict / simple_evaluate")
        return
    if getattr(get_task_dict, _FLAG, False):
        return

    @functools.wraps(get_task_dict)
    def get_task_dict_without_empty(*args, **kwargs):
        task_dict = get_task_dict(*args, **kwargs)
        kept, empty, coverage = without_empty_tasks(task_dict)
        if empty and not kept:  # a failed run: its one line says why (lmms_spatial.plugin.failures)
            raise NoDocumentsError(f"{', '.join(empty)}: {NO_DOCUMENTS}; nothing left to evaluate")
        _empty[:] = empty
        _coverage.clear()
        _coverage.update(coverage)
        if empty:
            failures.add_line(
                f"lmms-spatial: {', '.join(empty)}: {NO_DOCUMENTS}; left out, results written for the other tasks "
                "(group means cover only them)"
            )
        return kept

    @functools.wraps(simple_evaluate)
    def simple_evaluate_naming_empty_tasks(*args, **kwargs):
        results = simple_evaluate(*args, **kwargs)
        return annotate(results) if isinstance(results, dict) and _empty else results

    setattr(get_task_dict_without_empty, _FLAG, True)
    module.get_task_dict = get_task_dict_without_empty
    module.simple_evaluate = simple_evaluate_naming_empty_tasks
