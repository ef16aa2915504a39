"""A task of ours with no documents in the release: left out by name, the rest of the run goes on.

lmms-eval 0.7.3 builds every task of a group before evaluating any, and ``ConfigurableTask.__init__``
reads ``self.task_docs[0]``: a release that ships no questions of one task (its filtered split is
empty, whether ``process_docs`` filtered it or the data resolved to nothing) raises ``IndexError``
there and the whole group dies before the first model call. Three steps and an exit status:

* :func:`tolerated` (in the one wrapper of ``ConfigurableTask.__init__``, :mod:`lmms_spatial.plugin.tasks`): the
  constructor of one of *our* tasks tolerates an empty split (everything it sets up comes before that read; the
  read itself only checks one document) and flags the task; built-in tasks keep lmms-eval's behaviour;
* :func:`leave_out` and :func:`named` (in the one wrapper of ``get_task_dict`` and of ``simple_evaluate``,
  :mod:`lmms_spatial.plugin.run`): the task dict ``simple_evaluate``
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

from lmms_spatial import run_state
from lmms_spatial.plugin import failures
from lmms_spatial.plugin.ours import is_ours, leaf_name, leaf_tasks
from lmms_spatial.run_state import DOCUMENTS_KEY, NO_DOCUMENTS, EmptyTasks

COVERAGE_KEY = "tasks_covered,none"  # results["results"][group]: "4 of 5; no documents: <tasks>"
_FLAG = "_lmms_spatial_no_documents"


class NoDocumentsError(RuntimeError):
    """Every task the run asked for has no documents in the release: nothing to evaluate."""


def tolerated(task) -> bool:
    """Whether ``task``, whose ``ConfigurableTask.__init__`` raised ``IndexError``, is one of ours (by the code it
    runs: :func:`~lmms_spatial.plugin.ours.is_ours`, the rule every wrapper reads) with no documents: then it is
    flagged (left out of the run by :func:`leave_out`) and built; otherwise the error is lmms-eval's to raise
    (built-in tasks keep lmms-eval's behaviour). Called by the one wrapper of that constructor
    (:func:`lmms_spatial.plugin.tasks.patch_task_building`)."""
    docs = getattr(task, "task_docs", None)
    if docs is None or len(docs) != 0 or not is_ours(task):
        return False
    setattr(task, _FLAG, True)
    from loguru import logger

    logger.warning(f"{task.config.task}: {NO_DOCUMENTS}; left out, the other tasks run")
    return True


def _group_name(key) -> str:
    return str(getattr(key, "group", None) or getattr(key, "group_name", None) or key)


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
                    coverage[_group_name(key)] = ([name for name, _ in leaf_tasks(sub)], sub_empty)
        elif getattr(value, _FLAG, False):
            empty.append(leaf_name(key, value))
        else:
            kept[key] = value
    return kept, empty, coverage


def left_out() -> list[str]:
    """The tasks of ours the last task dict left out for want of documents."""
    return list(run_state.STATE.empty_tasks.tasks)


def describe_coverage(covered: list[str], empty: list[str]) -> str:
    return f"{len(covered)} of {len(covered) + len(empty)}; {NO_DOCUMENTS}: {', '.join(empty)}"


def annotate(results: dict) -> dict:
    """Name the empty tasks and the groups' coverage in lmms-eval's results dict (in place)."""
    left_out_now = run_state.STATE.empty_tasks
    for section in ("results", "groups"):
        for group, (covered, empty) in left_out_now.coverage.items():
            if group in results.get(section, {}):
                results[section][group][COVERAGE_KEY] = describe_coverage(covered, empty)
    table = results.setdefault("results", {})
    for task in left_out_now.tasks:
        table[task] = {"alias": task, DOCUMENTS_KEY: NO_DOCUMENTS}
    return results


def leave_out(task_dict: dict) -> dict:
    """``task_dict`` as ``get_task_dict`` resolved it, less the flagged tasks (remembered for :func:`annotate`
    and the run's last lines); a run left with nothing fails in one line (:class:`NoDocumentsError`). Called by
    the one wrapper of ``get_task_dict`` (:mod:`lmms_spatial.plugin.run`)."""
    kept, empty, coverage = without_empty_tasks(task_dict)
    if empty and not kept:  # a failed run: its one line says why (lmms_spatial.plugin.failures)
        raise NoDocumentsError(f"{', '.join(empty)}: {NO_DOCUMENTS}; nothing left to evaluate")
    run_state.STATE.empty_tasks = EmptyTasks(empty, coverage)
    if empty:
        failures.add_line(
            f"lmms-spatial: {', '.join(empty)}: {NO_DOCUMENTS}; left out, results written for the other tasks "
            "(group means cover only them)"
        )
    return kept


def named(results):
    """``simple_evaluate``'s results, naming the empty tasks and the groups' coverage when some were left out."""
    return annotate(results) if isinstance(results, dict) and run_state.STATE.empty_tasks.tasks else results
