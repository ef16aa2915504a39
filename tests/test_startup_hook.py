"""The startup hook: lmms-eval finds our tasks with no --include_path, and nothing else changes."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import forkserver  # tests/forkserver.py: runs as forks of a pre-warmed interpreter
import pytest

from lmms_spatial.paths import tasks_dir
from lmms_spatial.plugin.tasks import patch_task_manager


def _python(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def test_interpreter_start_does_not_import_lmms_eval(offline_env):
    out = _python("import sys; print('lmms_eval' in sys.modules, type(sys.meta_path[0]).__name__)", offline_env)
    assert out == "False _LmmsEvalFinder"


INDEX = (
    "from lmms_eval.tasks import TaskManager; print('mmsi_vanilla' in TaskManager(include_defaults=False).all_tasks)"
)
# what lmms-eval's registry imported as `evaluate`, and whether transformers' pipelines came with it
EVALUATE = "import sys; print(type(sys.modules['evaluate']).__name__, 'transformers.pipelines' in sys.modules)"


def _python_m(code: str, env: dict[str, str], folder: Path) -> str:
    """``python -m`` of ``code``, a fork of the worker's pre-warmed interpreter (which ran our ``.pth`` when it
    started: tests/forkserver.py) where that is the same run."""
    (folder / "snippet.py").write_text(code)
    run = forkserver.run_module("snippet", [], env, cwd=folder, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.strip()


def test_task_manager_indexes_our_tasks_without_include_path(offline_env, tmp_path):
    # and lmms-eval's `import evaluate` waits for a use (lmms_spatial/plugin/deferred_imports.py), which indexing
    # our tasks is not
    assert _python_m(f"{INDEX}\n{EVALUATE}", offline_env, tmp_path).splitlines() == ["True", "DeferredModule False"]


def test_the_hook_can_be_switched_off(offline_env):
    off = {**offline_env, "LMMS_SPATIAL_DISABLE_HOOK": "1"}
    assert _python(f"{INDEX}\n{EVALUATE}", off).splitlines() == ["False", "module True"]  # a fresh interpreter


def _fake_tasks_module():
    calls = []

    class TaskManager:
        def initialize_tasks(self, include_path=None, include_defaults=True):
            calls.append((include_path, include_defaults))
            return {}

    return types.SimpleNamespace(TaskManager=TaskManager), calls


def test_our_directory_is_appended_after_the_users_paths_once():
    module, calls = _fake_tasks_module()
    patch_task_manager(module)
    patch_task_manager(module)  # patching twice must not stack
    module.TaskManager().initialize_tasks(include_path="/user/tasks")
    module.TaskManager().initialize_tasks(include_path=[tasks_dir()], include_defaults=False)
    assert calls == [(["/user/tasks", tasks_dir()], True), ([tasks_dir()], False)]


def test_tasks_dir_command_prints_the_folder_with_our_yaml(offline_env):
    proc = subprocess.run(
        [sys.executable, "-m", "lmms_spatial.cli", "tasks-dir"], env=offline_env, capture_output=True, text=True
    )
    folder = Path(proc.stdout.strip())
    assert (folder / "mmsi" / "mmsi_vanilla.yaml").is_file()


@pytest.mark.slow
def test_lmms_eval_tasks_list_shows_our_tasks(offline_env):
    exe = Path(sys.executable).with_name("lmms-eval")
    proc = subprocess.run([str(exe), "tasks", "list"], env=offline_env, capture_output=True, text=True, timeout=600)
    names = {line.strip() for line in proc.stdout.splitlines()}
    assert {"mmsi", "mmsi_vanilla", "mmsi_circular", "mmsi_cot", "spatial_suite"} <= names
    assert "mmsi_bench" in names  # the built-in task is still there, untouched


def test_samples_with_a_lone_surrogate_are_written_as_json_that_reads_back_the_same():
    import json

    from lmms_spatial.plugin.samples import EncodableJson

    text = EncodableJson().dumps({"resps": "\ud800A", "ok": "é"}, ensure_ascii=False)
    text.encode("utf-8")  # lmms-eval writes this into a UTF-8 file: it must encode
    assert json.loads(text) == {"resps": "\ud800A", "ok": "é"}
    assert "é" in text  # ordinary text is untouched


def test_lmms_evals_evaluation_tracker_writes_samples_through_the_encodable_json(offline_env, tmp_path):
    code = "import lmms_eval.loggers.evaluation_tracker as t; print(type(t.json).__name__)"
    assert _python_m(code, offline_env, tmp_path) == "EncodableJson"


def _lmms_eval_run(args: list[str], env: dict[str, str], cwd: Path):
    """``python -m lmms_eval ARGS``, a fork of the suite's pre-warmed process (tests/forkserver.py): what a run of
    ours says when it fails; the ``lmms-eval`` script's own start (the hook in a fresh interpreter) is the
    subject of ``test_lmms_eval_tasks_list_shows_our_tasks`` and the tests without the ``.pth`` file, which start
    it."""
    return forkserver.run_module("lmms_eval", [*args, "--output_path", str(cwd / "out")], env, cwd=cwd, timeout=600)


@pytest.mark.slow
def test_a_run_of_ours_without_data_exits_1_with_one_line_naming_the_fix(offline_env, tmp_path):
    env = {k: v for k, v in offline_env.items() if k != "LMMS_SPATIAL_MMSI_PATH"}
    proc = _lmms_eval_run(["--model", "random_choice", "--tasks", "mmsi_vanilla", "--limit", "1"], env, tmp_path)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("lmms-spatial: mmsi_vanilla failed: DataUnavailable: mmsi: offline")
    assert "LMMS_SPATIAL_MMSI_PATH" in last


@pytest.mark.slow
def test_a_bad_row_of_ours_exits_1_naming_the_document(offline_env, tmp_path):
    import datasets

    rows = {"id": [1], "images": [[]], "question": ["Q?\nOptions: A: x, B: y"], "answer": ["E"],
            "question_type": ["MSR"]}  # fmt: skip
    datasets.Dataset.from_dict(rows).to_parquet(str(tmp_path / "bad.parquet"))
    env = {**offline_env, "LMMS_SPATIAL_MMSI_PATH": str(tmp_path / "bad.parquet")}
    proc = _lmms_eval_run(["--model", "random_choice", "--tasks", "mmsi_vanilla"], env, tmp_path)
    assert proc.returncode == 1
    assert "BadDocumentError: document 1, field 'answer': 'E' is not one of" in proc.stderr.strip().splitlines()[-1]
    assert "Traceback" not in proc.stderr  # the line names the row and the field: lmms-eval's traceback is not shown


def test_the_root_cause_is_found_through_tenacity_and_exception_chains():
    import tenacity

    from lmms_spatial.data.images import BadDocumentError
    from lmms_spatial.plugin.failures import root_cause

    bad = BadDocumentError("q1", "answer", "E is not an option")

    @tenacity.retry(stop=tenacity.stop_after_attempt(2), wait=tenacity.wait_none())
    def load():
        try:
            raise bad
        except BadDocumentError as exc:
            raise RuntimeError("dataset processing failed") from exc

    with pytest.raises(tenacity.RetryError) as caught:
        load()
    assert root_cause(caught.value) is bad
    plain = ValueError("x")
    assert root_cause(plain) is plain


def test_without_the_pth_file_the_model_entry_point_installs_the_hook_and_says_so(tmp_path):
    import site

    from lmms_spatial.paths import tasks_dir

    repo = str(Path(tasks_dir()).parent)
    code = (
        "import sys; sys.path[:0] = " + repr([repo, *site.getsitepackages()]) + "\n"
        "import lmms_spatial.models as m; m._ensure_task_hook()\n"
        "print('lmms_spatial_startup' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMMS_SPATIAL_", "LMMS_EVAL_PLUGINS"))}
    proc = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "True"
    assert "did not run" in proc.stderr and "--include_path" in proc.stderr


def _hook_with_a_fake_evaluator(monkeypatch, initializing: bool):
    """The startup hook with one PATCHES entry, ``lmms_eval.evaluator``, already in ``sys.modules`` (still executing
    or not), its patches recorded instead of run; returns (hook, module, names patched so far)."""
    import importlib.util

    import lmms_spatial_startup as hook

    module = types.ModuleType("lmms_eval.evaluator")
    module.__spec__ = importlib.util.spec_from_loader("lmms_eval.evaluator", loader=None)
    module.__spec__._initializing = initializing
    patched: list[str] = []
    monkeypatch.delenv(hook.DISABLE_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "lmms_eval.evaluator", module)
    monkeypatch.setattr(hook, "PATCHES", {"lmms_eval.evaluator": ("x:y",)})
    monkeypatch.setattr(hook, "apply_patches", lambda m: patched.append(m.__name__))
    monkeypatch.setattr(hook, "_deferred", [])
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    return hook, module, patched


def test_a_module_still_executing_when_the_hook_is_installed_late_is_patched_once_its_import_has_finished(
    monkeypatch,
):
    """Installed late (no .pth), the hook comes from our model entry point while lmms_eval.evaluator is still
    executing its imports: patching it then found none of its functions (measured on a GPU machine with
    `pip install --target`: six 'has no lmms_eval.evaluator.*' lines, run handling off). It must wait."""
    hook, module, patched = _hook_with_a_fake_evaluator(monkeypatch, initializing=True)

    hook.install()
    finder = hook._LmmsEvalFinder()
    finder.find_spec("an_unrelated_module", None)
    assert patched == []  # its functions do not exist yet
    module.__spec__._initializing = False
    finder.find_spec("an_unrelated_module", None)
    assert patched == ["lmms_eval.evaluator"]
    finder.find_spec("another_module", None)
    assert patched == ["lmms_eval.evaluator"]  # once


def test_a_module_imported_before_the_hook_and_finished_is_patched_at_once(monkeypatch):
    hook, _module, patched = _hook_with_a_fake_evaluator(monkeypatch, initializing=False)

    hook.install()
    assert patched == ["lmms_eval.evaluator"]


def _site_dirs() -> list[str]:
    """The package folders of this interpreter (a venv may reach its packages through a .pth file)."""
    return [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]


@pytest.mark.slow
def test_without_the_pth_file_lmms_evals_evaluator_is_still_patched(tmp_path):
    import site

    repo = str(Path(tasks_dir()).parent)
    code = (
        "import sys; sys.path[:0] = " + repr([repo, *site.getsitepackages(), *_site_dirs()]) + "\n"
        "import lmms_eval.__main__, lmms_eval.evaluator as e\n"
        "print(*(getattr(f, '_lmms_spatial', False) for f in (e.simple_evaluate, e.get_task_dict, e.evaluate)))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMMS_SPATIAL_", "LMMS_EVAL_PLUGINS"))}
    proc = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "has no lmms_eval.evaluator" not in proc.stderr
    assert proc.stdout.split() == ["True", "True", "True"], proc.stderr[-2000:]  # each carries our one wrapper


def test_the_legacy_plugin_variable_finds_our_model_classes():
    import importlib

    from lmms_spatial.models import AVAILABLE_MODELS

    for name, class_name in AVAILABLE_MODELS.items():  # lmms-eval builds f"lmms_spatial.models.{name}.{class_name}"
        assert hasattr(importlib.import_module(f"lmms_spatial.models.{name}"), class_name)


@pytest.mark.slow
def test_lmms_eval_plugins_set_to_lmms_spatial_runs_our_tasks(offline_env, tmp_path):
    env = {**offline_env, "LMMS_EVAL_PLUGINS": "lmms_spatial"}  # it exited 1 before: no AVAILABLE_MODELS
    proc = _lmms_eval_run(["--model", "random_choice", "--tasks", "mmsi_vanilla", "--limit", "2"], env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list((tmp_path / "out").rglob("*_results.json"))


def test_each_lmms_eval_function_has_one_wrapper_of_ours_around_lmms_evals_own():
    """``simple_evaluate``, ``get_task_dict`` and ``evaluate`` were each wrapped by two modules, and
    ``ConfigurableTask.__init__`` too: now one wrapper each, whose ``__wrapped__`` is lmms-eval's own code
    (applying the patches again, as the late install may, adds no layer)."""
    import os

    import lmms_eval.api.task as task_module
    import lmms_eval.evaluator as evaluator

    import lmms_spatial_startup

    for module in (task_module, evaluator):
        lmms_spatial_startup.apply_patches(module)
    wrapped = {
        "evaluator.simple_evaluate": evaluator.simple_evaluate,
        "evaluator.get_task_dict": evaluator.get_task_dict,
        "evaluator.evaluate": evaluator.evaluate,
        "evaluator.consolidate_group_results": evaluator.consolidate_group_results,
        "ConfigurableTask.__init__": task_module.ConfigurableTask.__init__,
    }
    lmms_eval_dir = os.path.dirname(os.path.realpath(evaluator.__file__)) + os.sep
    where = {
        name: (
            getattr(function, "_lmms_spatial", False),
            os.path.realpath(function.__wrapped__.__code__.co_filename).startswith(lmms_eval_dir),
        )
        for name, function in wrapped.items()
    }
    assert where == {name: (True, True) for name in wrapped}
