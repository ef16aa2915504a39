"""lmms-eval's ``import evaluate`` waits for a use (lmms_spatial/plugin/deferred_imports.py), on packages made here.

Each test writes a small package into its own folder: its ``__init__`` records each time it runs, so a test sees
whether, when and how often the deferred code ran. The wiring in the start-up hook on the real ``evaluate``:
tests/test_startup_hook.py (a fresh interpreter with the hook on, and one with it off).
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import threading
import types
from importlib.machinery import PathFinder

import pytest

import lmms_spatial_startup
from lmms_spatial.plugin.deferred_imports import DeferredModule, deferred_spec


@pytest.fixture
def package(tmp_path, monkeypatch):
    """make(name, init) -> the deferred module of a package ``name`` whose ``__init__.py`` is ``init``, made as the
    import system makes it (and put in ``sys.modules``); ``RUNS`` lists each run of an ``__init__``."""
    monkeypatch.syspath_prepend(str(tmp_path))
    runs: list[str] = []
    monkeypatch.setattr(sys, "deferred_import_runs", runs, raising=False)
    made: list[str] = []

    def make(name: str, init: str, sub: str = "") -> types.ModuleType:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "__init__.py").write_text(f"import sys\nsys.deferred_import_runs.append(__name__)\n{init}")
        if sub:
            (folder / "sub.py").write_text(sub)
        spec = deferred_spec(PathFinder.find_spec(name))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        made.append(name)
        monkeypatch.setitem(sys.modules, name, module)
        return module

    yield make, runs
    for name in [m for m in sys.modules if m.split(".")[0] in made]:
        sys.modules.pop(name, None)


def test_the_code_runs_at_the_first_use_into_the_same_module_once(package):
    make, runs = package
    module = make("heavy_pkg", "from . import sub\nVALUE = 42\n", sub="NAME = 'sub'\n")
    assert type(module) is DeferredModule and runs == []
    # what every module has, and the probes tools make of every module, are no use of it
    assert module.__file__.endswith("heavy_pkg/__init__.py") and module.__name__ == "heavy_pkg"
    assert module.__path__ == [module.__file__[: -len("/__init__.py")]]
    assert inspect.getmodule(test_the_code_runs_at_the_first_use_into_the_same_module_once) is sys.modules[__name__]
    assert not hasattr(module, "__wrapped__") and not hasattr(module, "__array_interface__")
    assert runs == []

    assert module.VALUE == 42  # the first use
    assert runs == ["heavy_pkg"] and type(module) is types.ModuleType and sys.modules["heavy_pkg"] is module
    assert module.sub is sys.modules["heavy_pkg.sub"] and module.sub.NAME == "sub"
    assert type(module.__spec__.loader).__name__ == "SourceFileLoader" and module.__loader__ is module.__spec__.loader
    assert module.VALUE == 42 and runs == ["heavy_pkg"]  # never again
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        _ = module.missing


@pytest.mark.parametrize("name", ["__version__", "__all__"])
def test_asking_for_its_version_or_its_public_names_runs_the_code(package, name):
    make, runs = package
    module = make(f"pkg{name.strip('_')}", "__version__ = '1.2'\n__all__ = ['VALUE']\nVALUE = 1\n")
    assert getattr(module, name) == {"__version__": "1.2", "__all__": ["VALUE"]}[name] and len(runs) == 1


def test_code_that_asks_its_own_module_for_a_name_not_set_yet_fails_as_a_half_made_import_does(package):
    make, runs = package
    module = make("circular_pkg", "LATER = sys.modules[__name__].NOT_YET\n")
    with pytest.raises(AttributeError, match=r"^module 'circular_pkg' could not be imported \(AttributeError: "
                                             r"partially initialized module 'circular_pkg' has no attribute "
                                             r"'NOT_YET'\)$"):  # fmt: skip
        _ = module.LATER
    assert runs == ["circular_pkg"]


def test_a_package_that_cannot_be_imported_fails_at_each_use_naming_its_error_and_runs_once(package):
    make, runs = package
    module = make("broken_pkg", "raise ImportError('needs libfoo')\n")
    assert runs == []  # the import itself succeeds: nothing ran
    for _ in range(2):
        with pytest.raises(AttributeError, match=r"^module 'broken_pkg' could not be imported \(ImportError: "
                                                 r"needs libfoo\)$") as failed:  # fmt: skip
            _ = module.load
        assert isinstance(failed.value.__cause__, ImportError)
    assert runs == ["broken_pkg"]
    assert getattr(module, "load", None) is None  # code that probes a module with a default goes on


def test_a_ctrl_c_while_its_code_runs_is_raised_as_itself_and_the_next_use_runs_it_again(package):
    make, runs = package
    module = make("interrupted_pkg", "if len(sys.deferred_import_runs) == 1:\n    raise KeyboardInterrupt\nVALUE = 3\n")
    with pytest.raises(KeyboardInterrupt):
        _ = module.VALUE
    assert type(module) is DeferredModule
    assert module.VALUE == 3 and runs == ["interrupted_pkg", "interrupted_pkg"]


def test_two_threads_using_it_at_once_run_its_code_once_and_both_see_it(package):
    make, runs = package
    gate = threading.Event()
    started = threading.Event()
    sys.deferred_import_gate = (started, gate)
    try:
        module = make("slow_pkg", "started, gate = sys.deferred_import_gate\nstarted.set()\ngate.wait(60)\nVALUE = 7\n")
        seen: list[int] = []
        first = threading.Thread(target=lambda: seen.append(module.VALUE))
        second = threading.Thread(target=lambda: seen.append(module.VALUE))
        first.start()
        assert started.wait(60)  # the first use is running the code
        second.start()  # waits for it (or comes after it): never runs it again, never sees it half-made
        gate.set()
        first.join(60)
        second.join(60)
    finally:
        del sys.deferred_import_gate
    assert seen == [7, 7] and runs == ["slow_pkg"]


def test_a_module_no_finder_finds_is_not_deferred(monkeypatch):
    registry = types.ModuleType("lmms_eval.api.registry")
    registry.__spec__ = importlib.util.spec_from_loader("lmms_eval.api.registry", loader=None)
    registry.__spec__._initializing = True
    monkeypatch.setitem(sys.modules, "lmms_eval.api.registry", registry)
    monkeypatch.setitem(lmms_spatial_startup.DEFERRED, "no_such_module_anywhere_xyz", "lmms_eval.api.registry")
    assert lmms_spatial_startup._LmmsEvalFinder().find_spec("no_such_module_anywhere_xyz", None) is None


def test_the_hook_defers_evaluate_only_while_lmms_evals_registry_is_importing_it(monkeypatch):
    finder = lmms_spatial_startup._LmmsEvalFinder()
    registry = types.ModuleType("lmms_eval.api.registry")
    registry.__spec__ = importlib.util.spec_from_loader("lmms_eval.api.registry", loader=None)
    monkeypatch.setitem(sys.modules, "lmms_eval.api.registry", registry)
    assert lmms_spatial_startup.DEFERRED == {"evaluate": "lmms_eval.api.registry"}
    assert finder.find_spec("evaluate", None) is None  # imported by anyone once the registry has been imported
    registry.__spec__._initializing = True  # the registry's `import evaluate as hf_evaluate`
    spec = finder.find_spec("evaluate", None)
    assert spec.name == "evaluate" and spec.origin.endswith("evaluate/__init__.py")
    assert type(spec.loader).__name__ == "_DeferredLoader" and spec.loader.real.origin == spec.origin
    assert finder.find_spec("evaluate.loading", None) is None  # only the package named
