"""Startup hook: make lmms-eval index our tasks without ``--include_path``.

Imported at interpreter start by ``lmms_spatial_startup.pth``. It must stay cheap and
must not import lmms-eval: it only puts a finder on ``sys.meta_path`` that waits for
``lmms_eval.tasks`` to be imported, then wraps ``TaskManager.initialize_tasks`` so that
our task directory is appended to ``include_path`` (built-in tasks keep priority).

Set ``LMMS_SPATIAL_DISABLE_HOOK=1`` to switch it off (then use
``--include_path "$(lmms-spatial tasks-dir)"``).
"""

from __future__ import annotations

import importlib.abc
import os
import sys

DISABLE_ENV = "LMMS_SPATIAL_DISABLE_HOOK"
TARGET_MODULE = "lmms_eval.tasks"


def _disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _our_tasks_dir() -> str:
    import lmms_spatial.tasks as tasks_pkg

    return os.path.dirname(os.path.abspath(tasks_pkg.__file__))


def patch_task_manager(module) -> None:
    """Wrap ``module.TaskManager.initialize_tasks`` once to add our task directory."""
    manager = getattr(module, "TaskManager", None)
    if manager is None or getattr(manager.initialize_tasks, "_lmms_spatial", False):
        return
    original = manager.initialize_tasks

    def initialize_tasks(self, include_path=None, include_defaults=True):
        if include_path is None:
            paths = []
        elif isinstance(include_path, str):
            paths = [include_path]
        else:
            paths = list(include_path)
        ours = _our_tasks_dir()
        if not any(os.path.realpath(p) == os.path.realpath(ours) for p in paths):
            paths.append(ours)
        return original(self, include_path=paths, include_defaults=include_defaults)

    initialize_tasks._lmms_spatial = True
    initialize_tasks.__wrapped__ = original
    manager.initialize_tasks = initialize_tasks


class _LoaderProxy(importlib.abc.Loader):
    """Runs the real loader, then patches the freshly executed module."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        patch_task_manager(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _TasksModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != TARGET_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _LoaderProxy(spec.loader)
                return spec
        return None


def install() -> None:
    if _disabled():
        return
    if TARGET_MODULE in sys.modules:  # imported before us (unusual): patch in place
        patch_task_manager(sys.modules[TARGET_MODULE])
        return
    if not any(isinstance(f, _TasksModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TasksModuleFinder())


try:
    install()
except Exception as exc:  # a broken hook must never break an unrelated Python process
    print(f"lmms-spatial: startup hook not installed: {exc}", file=sys.stderr)
