"""A task of ours with no documents: built, left out of the evaluated tasks by name, the groups say what they cover.

The one wrapper of each lmms-eval function (``ConfigurableTask.__init__``: :mod:`lmms_spatial.plugin.tasks`;
``get_task_dict`` and ``simple_evaluate``: :mod:`lmms_spatial.plugin.run`) runs here on stand-ins for lmms-eval's
modules (same names and call shapes); the end-to-end test (tests/e2e/test_api_models_and_releases_cli.py) runs them
inside the lmms-eval CLI.
"""

from __future__ import annotations

import types

import pytest

from lmms_spatial import run_state
from lmms_spatial.plugin import empty_tasks, failures
from lmms_spatial.plugin.empty_tasks import (
    COVERAGE_KEY,
    DOCUMENTS_KEY,
    NO_DOCUMENTS,
    NoDocumentsError,
    without_empty_tasks,
)
from lmms_spatial.plugin.run import patch_evaluator
from lmms_spatial.plugin.tasks import patch_task_building


@pytest.fixture(autouse=True)
def _forget_empty_tasks():
    """The state a run leaves (read at exit to set the exit status) must not outlive a test."""
    failures.reset()
    yield
    run_state.STATE.empty_tasks = run_state.EmptyTasks()
    failures.reset()


def _ours(doc):  # a task function of our package
    return doc


_ours.__module__ = "lmms_spatial.tasks.odi_bench.adapter"


def _builtin(doc):
    return doc


_builtin.__module__ = "lmms_eval.tasks.mme.utils"


def _task_module():
    """lmms_eval.api.task's ConfigurableTask as far as the patch sees it: docs set up, then ``task_docs[0]``."""

    class ConfigurableTask:
        def __init__(self, config=None, model_name=None):
            self.config = types.SimpleNamespace(**config)
            self.task_docs = list(self.config.docs)
            self.features = ["id"]
            _ = self.task_docs[0]  # "Test One Doc"

    return types.SimpleNamespace(ConfigurableTask=ConfigurableTask)


def test_our_task_with_no_documents_is_built_and_flagged():
    module = _task_module()
    patch_task_building(module)
    task = module.ConfigurableTask(config={"task": "odi_bench_close_ocr", "docs": [], "process_docs": _ours})
    assert task.features == ["id"] and getattr(task, empty_tasks._FLAG)


def test_our_task_with_documents_is_not_flagged():
    module = _task_module()
    patch_task_building(module)
    task = module.ConfigurableTask(config={"task": "odi_bench_close_oa", "docs": [{"id": 1}], "process_docs": _ours})
    assert not getattr(task, empty_tasks._FLAG, False)


def test_a_built_in_task_with_no_documents_fails_as_lmms_eval_makes_it():
    module = _task_module()
    patch_task_building(module)
    with pytest.raises(IndexError):
        module.ConfigurableTask(config={"task": "mme", "docs": [], "process_docs": _builtin})


def test_ours_here_is_the_plugins_one_rule_a_users_yaml_on_our_messages_builder_included():
    """A YAML of the user's whose only code of ours is ``doc_to_messages`` (its own ``process_docs`` and scorer) is
    ours for every wrapper (:func:`lmms_spatial.plugin.ours.is_ours`): with no documents it is left out like ours,
    not ended by lmms-eval's ``IndexError`` (this module read three fields of its own and missed it)."""
    module = _task_module()
    patch_task_building(module)
    config = {"task": "my_odi_ocr", "docs": [], "process_docs": _builtin, "doc_to_messages": _ours,
              "process_results": _builtin}  # fmt: skip
    assert getattr(module.ConfigurableTask(config=config), empty_tasks._FLAG)


def test_patching_twice_wraps_once():
    module = _task_module()
    patch_task_building(module)
    once = module.ConfigurableTask.__init__
    patch_task_building(module)
    assert module.ConfigurableTask.__init__ is once


class _Group:
    """lmms-eval's ConfigurableGroup as a task-dict key: hashable, named by ``group``."""

    def __init__(self, name: str) -> None:
        self.group = name


def _task(name: str, empty: bool = False):
    task = types.SimpleNamespace(config=types.SimpleNamespace(task=name))
    if empty:
        setattr(task, empty_tasks._FLAG, True)
    return task


def _odi_task_dict():
    """odi_bench -> close (general: OA, OCR; spatial: RD) and open (general: OCR only)."""
    general, spatial = _Group("odi_bench_close_general"), _Group("odi_bench_close_spatial")
    close, opened, top = _Group("odi_bench_close"), _Group("odi_bench_open"), _Group("odi_bench")
    open_general = _Group("odi_bench_open_general")
    return {
        top: {
            close: {
                general: {"odi_bench_close_oa": _task("odi_bench_close_oa"),
                          "odi_bench_close_ocr": _task("odi_bench_close_ocr", empty=True)},
                spatial: {"odi_bench_close_rd": _task("odi_bench_close_rd")},
            },
            opened: {open_general: {"odi_bench_open_ocr": _task("odi_bench_open_ocr", empty=True)}},
        }
    }  # fmt: skip


def test_empty_tasks_and_groups_left_with_nothing_are_left_out():
    kept, empty, coverage = without_empty_tasks(_odi_task_dict())
    ((top, close_only),) = kept.items()
    assert top.group == "odi_bench" and [g.group for g in close_only] == ["odi_bench_close"]
    (close,) = close_only.values()
    assert {g.group: sorted(tasks) for g, tasks in close.items()} == {
        "odi_bench_close_general": ["odi_bench_close_oa"],
        "odi_bench_close_spatial": ["odi_bench_close_rd"],
    }
    assert empty == ["odi_bench_close_ocr", "odi_bench_open_ocr"]
    assert coverage == {
        "odi_bench_close_general": (["odi_bench_close_oa"], ["odi_bench_close_ocr"]),
        "odi_bench_close": (["odi_bench_close_oa", "odi_bench_close_rd"], ["odi_bench_close_ocr"]),
        "odi_bench": (["odi_bench_close_oa", "odi_bench_close_rd"], ["odi_bench_close_ocr", "odi_bench_open_ocr"]),
    }


def _evaluator_module(task_dict, results):
    """lmms_eval.evaluator as the patch sees it: simple_evaluate evaluates what get_task_dict gives."""
    module = types.SimpleNamespace(evaluated=None)

    def simple_evaluate(tasks):
        module.evaluated = module.get_task_dict(tasks)
        return results

    module.get_task_dict = lambda tasks: task_dict
    module.simple_evaluate = simple_evaluate
    return module


def test_results_name_each_empty_task_and_what_each_group_covers():
    results = {
        "results": {"odi_bench": {"alias": "odi_bench"}, "odi_bench_close": {"accuracy,none": 0.5},
                    "odi_bench_close_general": {"accuracy,none": 0.25}, "odi_bench_close_oa": {"accuracy,none": 0.25}},
        "groups": {"odi_bench_close": {"accuracy,none": 0.5}},
    }  # fmt: skip
    module = _evaluator_module(_odi_task_dict(), results)
    patch_evaluator(module)
    out = module.simple_evaluate(["odi_bench"])
    assert [g.group for g in module.evaluated] == ["odi_bench"]
    assert out["results"]["odi_bench_close_ocr"] == {"alias": "odi_bench_close_ocr", DOCUMENTS_KEY: NO_DOCUMENTS}
    assert "accuracy,none" not in out["results"]["odi_bench_close_ocr"]  # absent, not 0
    assert out["results"]["odi_bench_open_ocr"] == {"alias": "odi_bench_open_ocr", DOCUMENTS_KEY: NO_DOCUMENTS}
    expected = f"2 of 3; {NO_DOCUMENTS}: odi_bench_close_ocr"
    assert out["results"]["odi_bench_close"][COVERAGE_KEY] == out["groups"]["odi_bench_close"][COVERAGE_KEY] == expected
    assert out["results"]["odi_bench_close_general"][COVERAGE_KEY] == f"1 of 2; {NO_DOCUMENTS}: odi_bench_close_ocr"
    both = f"2 of 4; {NO_DOCUMENTS}: odi_bench_close_ocr, odi_bench_open_ocr"
    assert out["results"]["odi_bench"][COVERAGE_KEY] == both
    assert COVERAGE_KEY not in out["results"]["odi_bench_close_oa"]


def test_a_run_with_only_empty_tasks_fails_in_one_line_naming_them():
    only_ocr = {"odi_bench_close_ocr": _task("odi_bench_close_ocr", empty=True)}
    module = _evaluator_module(only_ocr, {"results": {}})
    patch_evaluator(module)
    with pytest.raises(NoDocumentsError, match=f"^odi_bench_close_ocr: {NO_DOCUMENTS}; nothing left to evaluate$"):
        module.simple_evaluate(["odi_bench_close_ocr"])
    assert empty_tasks.left_out() == []  # the failure's own line says it; no second line at exit


def test_a_run_without_empty_tasks_is_untouched():
    task_dict = {"odi_bench_close_oa": _task("odi_bench_close_oa")}
    results = {"results": {"odi_bench_close_oa": {"accuracy,none": 1.0}}}
    module = _evaluator_module(task_dict, results)
    patch_evaluator(module)
    assert module.simple_evaluate(["odi_bench_close_oa"]) == {"results": {"odi_bench_close_oa": {"accuracy,none": 1.0}}}
    assert module.evaluated == task_dict
