"""Startup hook: make lmms-eval index our tasks without ``--include_path``, at no cost to other programs.

Imported at interpreter start by ``lmms_spatial_startup.pth``, so every Python process of the
environment (pip, pytest, a worker, a script that never touches lmms-eval) runs it. It therefore
imports nothing (``os`` and ``sys`` are loaded already) and only puts a finder on ``sys.meta_path``
that waits for the lmms-eval modules named in :data:`PATCHES`. When one of them is first imported,
the patches named for it are imported from :mod:`lmms_spatial.plugin` and run on the fresh module
(``tests/test_startup_hook.py`` pins the cost with ``python -X importtime``).

Set ``LMMS_SPATIAL_DISABLE_HOOK=1`` to switch it off (then use
``--include_path "$(lmms-spatial tasks-dir)"``).
"""

import os
import sys

DISABLE_ENV = "LMMS_SPATIAL_DISABLE_HOOK"

# lmms-eval module -> "module:function" patches run on it right after it is first executed.
# Each is idempotent and cheap; one that raises is reported and skipped, never breaks the import.
# One wrapper per lmms-eval function: docs/plugin.md lists each, the line of lmms-eval it depends on, and the
# upstream change that would retire it.
PATCHES = {
    "lmms_eval.utils": ("lmms_spatial.plugin.yaml_configs:patch_yaml_loading",),
    "lmms_eval.tasks": ("lmms_spatial.plugin.tasks:patch_task_manager",),
    "lmms_eval.api.task": (
        "lmms_spatial.plugin.tasks:patch_task_building",
        "lmms_spatial.plugin.tasks:patch_data_retries",
        "lmms_spatial.plugin.isolation:patch_process_results",
    ),
    "lmms_eval.loggers.evaluation_tracker": (
        "lmms_spatial.plugin.samples:patch_sample_encoding",
        "lmms_spatial.plugin.outputs:patch_result_files",
    ),
    "lmms_eval.evaluator_utils": ("lmms_spatial.plugin.isolation:patch_task_output",),
    "lmms_eval.caching.response_cache": ("lmms_spatial.plugin.resume:patch_response_cache",),
    "lmms_eval.evaluator": ("lmms_spatial.plugin.run:patch_evaluator",),
    "lmms_eval.loggers.wandb_logger": ("lmms_spatial.plugin.trackers:patch_wandb_samples",),
    "lmms_eval.__main__": ("lmms_spatial.plugin.cli:patch_cli",),
}


# module -> the lmms-eval module whose import of it is deferred to its first use (lmms_spatial.plugin.deferred_imports:
# `import evaluate`, for one fallback of lmms_eval.api.registry, is half of `import lmms_eval.__main__`)
DEFERRED = {"evaluate": "lmms_eval.api.registry"}


def _disabled():
    return os.environ.get(DISABLE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def apply_patches(module):
    """Run the patches named for ``module`` (an lmms-eval module that was just executed)."""
    targets = PATCHES.get(module.__name__, ())
    if not targets:
        return
    from importlib import import_module

    try:
        from lmms_spatial.plugin import supported

        if not supported():  # an lmms-eval outside the declared range: said once, nothing patched
            return
    except Exception as exc:
        print(f"lmms-spatial: lmms-eval patches not installed: {exc}", file=sys.stderr)
        return
    for target in targets:
        module_name, _, function = target.partition(":")
        try:
            getattr(import_module(module_name), function)(module)
        except Exception as exc:  # a broken patch must never break `import lmms_eval`
            print(f"lmms-spatial: {function} skipped on {module.__name__}: {exc}", file=sys.stderr)


class _PatchingLoader:
    """Runs the real loader, then patches the freshly executed module."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        apply_patches(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _LmmsEvalFinder:
    """A ``sys.meta_path`` finder that answers only for the modules in :data:`PATCHES` and :data:`DEFERRED`."""

    def find_spec(self, fullname, path, target=None):
        if _deferred:
            _patch_deferred()
        if fullname in DEFERRED:
            return self._deferred_spec(fullname, path, target)
        if fullname not in PATCHES:
            return None
        spec = self._real_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec

    def _real_spec(self, fullname, path, target):
        """The spec the other finders of ``sys.meta_path`` give, the first found (None: none)."""
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None

    def _deferred_spec(self, fullname, path, target):
        """A deferred module's spec when the lmms-eval module of :data:`DEFERRED` is importing it, else None."""
        importer = sys.modules.get(DEFERRED[fullname])
        if importer is None or not _initializing(importer):
            return None
        real = self._real_spec(fullname, path, target)
        if real is None:  # not installed: the import fails as usual
            return None
        try:
            from lmms_spatial.plugin.deferred_imports import deferred_spec

            return deferred_spec(real) or real  # None: a loader that cannot run it later, imported now
        except Exception as exc:  # never break the import: it goes on as usual
            print(f"lmms-spatial: import of {fullname} not deferred: {exc}", file=sys.stderr)
            return real

    def invalidate_caches(self):
        pass


# Modules of PATCHES that were still executing when the hook was installed late (see install()).
_deferred = []


def _initializing(module) -> bool:
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _patch_deferred():
    """Patch each deferred module whose own import has finished since (the next import anywhere asks us)."""
    for module in [m for m in _deferred if not _initializing(m)]:
        _deferred.remove(module)
        apply_patches(module)


# What install_late() found in this process: None before its first call, then whether it patched lmms-eval.
_late_patched = None


def late_installed():
    """Whether :func:`install_late` patched lmms-eval in this process."""
    return bool(_late_patched)


def install_late():
    """With the startup hook off (``LMMS_SPATIAL_DISABLE_HOOK=1``, the README's ``--include_path`` route), patch
    the lmms-eval modules already imported when lmms-eval first builds a task of ours (its documents are loaded:
    ``lmms_spatial.data.loading.documents_of`` calls this), so that run gets every guarantee of a run of ours. Our
    task folder is not added to lmms-eval's task index (that is what the switch is for). Once per process;
    nothing when the hook did its work, or lmms-eval is not running."""
    global _late_patched
    if _late_patched is not None:
        return
    evaluator = sys.modules.get("lmms_eval.evaluator")
    if evaluator is None:  # lmms-eval is not evaluating (a script that builds tasks): nothing to do yet
        return
    _late_patched = not getattr(evaluator, "_lmms_spatial_patched", False)  # False: the hook did its work
    if not _late_patched:
        return
    for name in PATCHES:
        module = sys.modules.get(name)
        if module is not None and name != "lmms_eval.tasks":
            apply_patches(module)


def install():
    if _disabled():
        return
    for name in PATCHES:
        module = sys.modules.get(name)
        if module is None:
            continue
        # Imported before us: patch in place. Installed late (no .pth run: `pip install --target` and
        # PYTHONPATH), the hook is installed from our model entry point, which lmms-eval loads while
        # lmms_eval.evaluator is still executing its own imports: its functions do not exist yet. Such a module
        # is patched at the next import made after it has finished (the finder below is asked for every one).
        if _initializing(module):
            _deferred.append(module)
        else:
            apply_patches(module)
    if not any(type(f).__name__ == "_LmmsEvalFinder" for f in sys.meta_path):
        sys.meta_path.insert(0, _LmmsEvalFinder())


try:
    install()
except Exception as exc:  # a broken hook must never break an unrelated Python process
    print(f"lmms-spatial: startup hook not installed: {exc}", file=sys.stderr)
