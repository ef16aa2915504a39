"""Startup hook: make lmms-eval index our tasks without ``--include_path``.

Imported at interpreter start by ``lmms_spatial_startup.pth``. It must stay cheap and
must not import lmms-eval: it only puts a finder on ``sys.meta_path`` that waits for the
lmms-eval modules named in :data:`PATCHES` to be imported, then runs each module's patches
on it. The first wraps ``TaskManager.initialize_tasks`` so that our task directory is
appended to ``include_path`` (built-in tasks keep priority).

Set ``LMMS_SPATIAL_DISABLE_HOOK=1`` to switch it off (then use
``--include_path "$(lmms-spatial tasks-dir)"``).
"""

from __future__ import annotations

import importlib.abc
import os
import sys

from lmms_spatial.plugin.api_images import patch_api_image_sizing
from lmms_spatial.plugin.empty_tasks import patch_empty_tasks, patch_skip_empty_tasks

DISABLE_ENV = "LMMS_SPATIAL_DISABLE_HOOK"
TARGET_MODULE = "lmms_eval.tasks"


def _disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _our_tasks_dir() -> str:
    import lmms_spatial.tasks as tasks_pkg

    return os.path.dirname(os.path.abspath(tasks_pkg.__file__))


INCLUDE_PATH_HINT = 'pass --include_path "$(lmms-spatial tasks-dir)" to lmms-eval'


def patch_task_manager(module) -> None:
    """Wrap ``module.TaskManager.initialize_tasks`` once to add our task directory."""
    manager = getattr(module, "TaskManager", None)
    initialize = getattr(manager, "initialize_tasks", None)
    if manager is None or initialize is None:  # an lmms-eval whose internals changed: say how to go on
        print(
            f"lmms-spatial: this lmms-eval has no TaskManager.initialize_tasks, so our tasks are not added "
            f"automatically; {INCLUDE_PATH_HINT}",
            file=sys.stderr,
        )
        return
    if getattr(initialize, "_lmms_spatial", False):
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


class _EncodableJson:
    """The ``json`` module, except that ``dumps`` never returns text UTF-8 cannot encode.

    lmms-eval writes samples with ``json.dumps(..., ensure_ascii=False)`` into a UTF-8 file: one
    reply holding a lone surrogate (``"\\ud800"``, which models do emit) raises there and leaves an
    empty samples file. Lone surrogates become JSON escapes instead, which read back to the same
    string; every other text is unchanged.
    """

    def __getattr__(self, name: str):
        import json

        return getattr(json, name)

    @staticmethod
    def dumps(*args, **kwargs) -> str:
        import json

        text = json.dumps(*args, **kwargs)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
        return text


def patch_sample_encoding(module) -> None:
    """Make lmms-eval's evaluation tracker write every sample, lone surrogates included."""
    if getattr(module, "json", None) is not None and not isinstance(module.json, _EncodableJson):
        module.json = _EncodableJson()


# --- a run whose task of ours failed exits non-zero -------------------------------------

_FAILURES: list[str] = []  # one line per failed evaluation that involved our tasks


def _our_task_names() -> set[str]:
    """Task, group and tag names declared by our YAML files (a plain scan: no YAML parsing)."""
    import re
    from pathlib import Path

    names: set[str] = set()
    pattern = re.compile(r"^(?:task|group|tag):\s*([\w.-]+)\s*(?:#.*)?$", re.MULTILINE)
    for path in Path(_our_tasks_dir()).rglob("*.yaml"):
        names.update(pattern.findall(path.read_text(encoding="utf-8")))
    return names


def root_cause(exc: BaseException) -> BaseException:
    """The exception that explains ``exc``: through tenacity's ``RetryError`` and ``raise ... from``.

    Our own one-line errors (data unavailable, a bad document) win over whatever wraps them.
    """
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        attempt = getattr(current, "last_attempt", None)  # tenacity.RetryError
        inner = attempt.exception() if attempt is not None and hasattr(attempt, "exception") else None
        current = inner or current.__cause__ or current.__context__
    ours = [e for e in chain if type(e).__module__.startswith("lmms_spatial")]
    return ours[0] if ours else chain[-1]


def _exit_if_one_of_ours_failed() -> None:
    if _FAILURES:
        sys.stdout.flush()
        for line in _FAILURES:
            print(line, file=sys.stderr)
        sys.stderr.flush()
        os._exit(1)


def patch_exit_code(module) -> None:
    """lmms-eval 0.7.3 logs an evaluation that raised and exits 0: when the run asked for one of
    our tasks, print the cause in one line at exit and exit 1 instead. Runs with no task of ours
    keep lmms-eval's behaviour."""
    original = getattr(module, "simple_evaluate", None)
    if original is None or getattr(original, "_lmms_spatial", False):
        return
    import atexit
    import functools

    @functools.wraps(original)
    def simple_evaluate(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except Exception as exc:
            tasks = kwargs.get("tasks", args[3] if len(args) > 3 else None) or []
            requested = {t for t in (tasks if isinstance(tasks, (list, tuple)) else [tasks]) if isinstance(t, str)}
            ours = sorted(requested & _our_task_names())
            if ours:
                cause = root_cause(exc)
                first = (str(cause).strip().splitlines() or [""])[0]
                _FAILURES.append(f"lmms-spatial: {', '.join(ours)} failed: {type(cause).__name__}: {first}")
            raise

    simple_evaluate._lmms_spatial = True
    module.simple_evaluate = simple_evaluate
    atexit.register(_exit_if_one_of_ours_failed)  # registered early: runs after lmms-eval's own handlers


def patch_prefetch(module) -> None:
    """Wrap ``module.evaluate`` so that, while it runs, the model's ``generate_until`` builds our tasks'
    inputs ahead of the model on worker threads (:mod:`lmms_spatial.prefetch`; a no-op for runs
    without our tasks, ``LMMS_SPATIAL_PREFETCH=0`` switches it off)."""
    original = getattr(module, "evaluate", None)
    if original is None or getattr(original, "_lmms_spatial", False):
        return
    import functools

    @functools.wraps(original)
    def evaluate(*args, **kwargs):
        from lmms_spatial.prefetch import prefetching_model

        lm = kwargs.get("lm", args[0] if args else None)
        with prefetching_model(lm):
            return original(*args, **kwargs)

    evaluate._lmms_spatial = True
    module.evaluate = evaluate


# module name -> patches run on it right after it is first executed. Each patch must be
# idempotent and cheap; one that raises is reported and skipped, never breaks the import.
PATCHES: dict[str, list] = {
    TARGET_MODULE: [patch_task_manager],
    "lmms_eval.loggers.evaluation_tracker": [patch_sample_encoding],
    "lmms_eval.evaluator": [patch_exit_code, patch_prefetch, patch_api_image_sizing, patch_skip_empty_tasks],
    "lmms_eval.api.task": [patch_empty_tasks],
}


def apply_patches(module) -> None:
    for patch in PATCHES.get(module.__name__, ()):
        try:
            patch(module)
        except Exception as exc:  # a broken patch must never break `import lmms_eval`
            hint = f"; {INCLUDE_PATH_HINT}" if patch is patch_task_manager else ""
            print(f"lmms-spatial: {patch.__name__} skipped on {module.__name__}: {exc}{hint}", file=sys.stderr)


class _LoaderProxy(importlib.abc.Loader):
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


class _TasksModuleFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in PATCHES:
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
    for name in PATCHES:
        if name in sys.modules:  # imported before us (unusual): patch in place
            apply_patches(sys.modules[name])
    if not any(isinstance(f, _TasksModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TasksModuleFinder())


try:
    install()
except Exception as exc:  # a broken hook must never break an unrelated Python process
    print(f"lmms-spatial: startup hook not installed: {exc}", file=sys.stderr)
