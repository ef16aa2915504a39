"""lmms-eval's task index gets our task folder; a task that fails while being built is named, and
fails at once where retrying cannot help.

``TaskManager.initialize_tasks`` is wrapped once so that our task directory is appended to
``include_path`` (built-in tasks keep priority). ``ConfigurableTask.__init__`` (which loads the
task's dataset) is wrapped so that an exception raised while building a task carries the task's name
(:data:`lmms_spatial.plugin.failures.EXC_TASK_ATTR`): lmms-eval's one exception for a run does not
say which of its tasks failed, and a mixed run must not blame our task for a stock task's data.
"""

from __future__ import annotations

import os

from lmms_spatial import run_state
from lmms_spatial.paths import tasks_dir
from lmms_spatial.plugin import empty_tasks, internal
from lmms_spatial.plugin.failures import EXC_OURS_ATTR, EXC_TASK_ATTR
from lmms_spatial.plugin.ours import is_ours

INCLUDE_PATH_HINT = 'pass --include_path "$(lmms-spatial tasks-dir)" to lmms-eval'


def patch_task_manager(module) -> None:
    """Wrap ``module.TaskManager.initialize_tasks`` once to add our task directory, and ``match_tasks`` to name
    our nearest tasks for a name it cannot find (:mod:`lmms_spatial.plugin.names`)."""
    from lmms_spatial.plugin.names import patch_match_tasks

    patch_match_tasks(module)
    initialize = internal(module, "TaskManager.initialize_tasks", f"our tasks are not added: {INCLUDE_PATH_HINT}")
    if initialize is None or getattr(initialize, "_lmms_spatial", False):
        return
    manager = module.TaskManager
    original = manager.initialize_tasks

    def initialize_tasks(self, include_path=None, include_defaults=True):
        if include_path is None:
            paths = []
        elif isinstance(include_path, str):
            paths = [include_path]
        else:
            paths = list(include_path)
        ours = tasks_dir()
        if not any(os.path.realpath(p) == os.path.realpath(ours) for p in paths):
            paths.append(ours)
        from lmms_spatial.plugin.run import refuse_cli_mistakes

        refuse_cli_mistakes()  # the command line's first call into lmms-eval's tasks: before the model loads
        return original(self, include_path=paths, include_defaults=include_defaults)

    initialize_tasks._lmms_spatial = True
    initialize_tasks.__wrapped__ = original
    manager.initialize_tasks = initialize_tasks


def _task_name(args: tuple, kwargs: dict, task) -> str | None:
    config = kwargs.get("config")
    if config is None and len(args) >= 4:  # ConfigurableTask(data_dir, cache_dir, download_mode, config, ...)
        config = args[3]
    if isinstance(config, dict) and config.get("task"):
        return str(config["task"])
    return getattr(getattr(task, "_config", None), "task", None)


def patch_task_building(module) -> None:
    """Wrap ``ConfigurableTask.__init__`` (the one wrapper of it) so that a task of ours with no documents in the
    release is built and flagged (:func:`lmms_spatial.plugin.empty_tasks.tolerated`), an exception raised while
    building a task names it, and a task of ours built is noted in the run's state (a later failure is ours)."""
    original = internal(
        module,
        "ConfigurableTask.__init__",
        "a task that fails while being built is not named, and a task of ours with no documents stops the run",
    )
    if original is None or getattr(original, "_lmms_spatial", False):
        return
    cls = module.ConfigurableTask

    def __init__(self, *args, **kwargs):
        try:
            try:
                original(self, *args, **kwargs)
            except IndexError:  # lmms-eval reads task_docs[0]: an empty split of ours is left out, not fatal
                if not empty_tasks.tolerated(self):
                    raise
        except Exception as exc:
            if getattr(exc, EXC_TASK_ATTR, None) is None:  # the innermost task wins
                config = kwargs.get("config", args[3] if len(args) >= 4 else None)
                try:
                    setattr(exc, EXC_TASK_ATTR, _task_name(args, kwargs, self))
                    setattr(exc, EXC_OURS_ATTR, is_ours(config if isinstance(config, dict) else self))
                except Exception:  # an exception type that refuses attributes: nothing to add
                    pass
            raise
        if is_ours(self):
            run_state.built(_task_name(args, kwargs, self) or "?")

    __init__._lmms_spatial = True
    __init__.__wrapped__ = original
    __init__.__doc__ = original.__doc__
    cls.__init__ = __init__


def _worth_retrying(exc: BaseException) -> bool:
    from lmms_spatial.data.hub_cache import DataUnavailable

    return not isinstance(exc, DataUnavailable) or exc.transient


def patch_data_retries(module) -> None:
    """lmms-eval retries ``ConfigurableTask.download`` 5 times, 2 s apart, whatever it raised. A
    :class:`~lmms_spatial.data.hub_cache.DataUnavailable` of ours that is not transient (offline and not
    cached, a wrong path or variable) would fail the same way each time: it now fails at once, as itself
    (not wrapped in tenacity's ``RetryError``), instead of 8 s later. Every other error, and every stock
    task, is retried as before.
    """
    download = internal(module, "ConfigurableTask.download", "a task without its data fails after lmms-eval's retries")
    retrying = getattr(download, "retry", None)  # tenacity's Retrying behind @retry; each call copies it
    if retrying is None or getattr(retrying, "_lmms_spatial", False) or not hasattr(retrying, "retry"):
        return
    import tenacity

    retrying.retry = tenacity.retry_if_exception(_worth_retrying) & retrying.retry
    retrying._lmms_spatial = True
