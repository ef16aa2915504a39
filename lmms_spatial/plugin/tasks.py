"""lmms-eval's task index gets our task folder; a task that fails while being built is named, and
fails at once where retrying cannot help.

``TaskManager.initialize_tasks`` is wrapped once so that our task directory is appended to
``include_path`` (built-in tasks keep priority). ``ConfigurableTask.__init__`` (which loads the
task's dataset) is wrapped so that an exception raised while building a task carries the task's name
(:data:`lmms_spatial.plugin.failures.EXC_TASK_ATTR`): lmms-eval's one exception for a run does not
say which of its tasks failed, and a mixed run must not blame our task for a stock task's data.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from lmms_spatial.plugin import internal
from lmms_spatial.plugin.failures import EXC_OURS_ATTR, EXC_TASK_ATTR, our_tasks_dir

INCLUDE_PATH_HINT = 'pass --include_path "$(lmms-spatial tasks-dir)" to lmms-eval'


# the task config fields that hold a task's code: a task whose code is ours is ours, whatever it is named
CODE_FIELDS = ("process_docs", "doc_to_visual", "doc_to_text", "doc_to_messages", "doc_to_target", "process_results")


def _is_our_code(function: Any) -> bool:
    while isinstance(function, functools.partial):
        function = function.func
    if not callable(function):
        return False
    if (getattr(function, "__module__", None) or "").startswith("lmms_spatial."):
        return True
    code = getattr(function, "__code__", None)  # a function defined in one of our utils.py (loaded by file path)
    where = os.path.realpath(getattr(code, "co_filename", "") or "")
    return bool(where) and where.startswith(os.path.realpath(our_tasks_dir()) + os.sep)


def is_ours(task_or_config: Any) -> bool:
    """Whether a task (or its config: a ``TaskConfig`` or a dict) runs code of ours: one of our YAMLs, or a YAML
    of the user's that includes one of ours or names one of our functions. Its name does not matter."""
    config = getattr(task_or_config, "config", task_or_config)

    def read(name: str) -> Any:  # lmms-eval's TaskConfig is a dict subclass holding its fields as attributes
        found = getattr(config, name, None)
        return found if found is not None or not isinstance(config, dict) else config.get(name)

    return any(_is_our_code(read(name)) for name in CODE_FIELDS)


def is_yaml_file_of_ours(entry: str) -> bool:
    """Whether a ``--tasks`` entry is a YAML file that runs code of ours (:func:`is_ours`); a file lmms-eval
    cannot read is not ours here (lmms-eval says what is wrong with it)."""
    if not (entry.endswith((".yaml", ".yml")) and os.path.isfile(entry)):
        return False
    from lmms_eval.utils import load_yaml_config

    try:
        return is_ours(load_yaml_config(entry))
    except Exception:
        return False


def our_leaves(task_dict: Any) -> list[str]:
    """The tasks of ours in a task dict as lmms-eval's ``get_task_dict`` resolves it (groups nested, leaves
    possibly ``(group, task)`` pairs), by name, sorted."""
    found: set[str] = set()

    def walk(mapping: dict) -> None:
        for key, value in mapping.items():
            task = value[1] if isinstance(value, tuple) and len(value) == 2 else value
            if isinstance(task, dict):
                walk(task)
            elif task is not None and is_ours(task):
                found.add(str(getattr(getattr(task, "config", None), "task", None) or key))

    if isinstance(task_dict, dict):
        walk(task_dict)
    return sorted(found)


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
        ours = our_tasks_dir()
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
    """Wrap ``ConfigurableTask.__init__`` so that an exception raised while building a task names it."""
    original = internal(module, "ConfigurableTask.__init__", "a task that fails while being built is not named")
    if original is None or getattr(original, "_lmms_spatial", False):
        return
    cls = module.ConfigurableTask

    def __init__(self, *args, **kwargs):
        try:
            original(self, *args, **kwargs)
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
            from lmms_spatial.plugin.run import built

            built(_task_name(args, kwargs, self) or "?")

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
