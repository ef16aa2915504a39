"""Which tasks, task files and runs are ours: by the code a task runs, never by its name.

Read by every wrapper that must leave other runs as lmms-eval runs them (:mod:`.run`, :mod:`.resume`,
:mod:`.names`, :mod:`.tasks`); it imports none of them. A run of ours, once recognised, lives in the run's state
(:mod:`lmms_spatial.run_state`).
"""

from __future__ import annotations

import os
from typing import Any

from lmms_spatial import run_state
from lmms_spatial.paths import is_our_code

# the task config fields that hold a task's code: a task whose code is ours is ours, whatever it is named
CODE_FIELDS = ("process_docs", "doc_to_visual", "doc_to_text", "doc_to_messages", "doc_to_target", "process_results")


def is_ours(task_or_config: Any) -> bool:
    """Whether a task (or its config: a ``TaskConfig`` or a dict) runs code of ours: one of our YAMLs, or a YAML
    of the user's that includes one of ours or names one of our functions. Its name does not matter."""
    config = getattr(task_or_config, "config", task_or_config)

    def read(name: str) -> Any:  # lmms-eval's TaskConfig is a dict subclass holding its fields as attributes
        found = getattr(config, name, None)
        return found if found is not None or not isinstance(config, dict) else config.get(name)

    return any(is_our_code(read(name)) for name in CODE_FIELDS)


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


def leaf_tasks(task_dict: Any) -> list[tuple[str, Any]]:
    """Every leaf task of a task dict as lmms-eval's ``get_task_dict`` resolves it (groups nested, a leaf possibly a
    ``(group, task)`` pair), with its name (its config's ``task``, else its key), in the dict's order. The one walk
    of a task dict: which tasks are ours, which an empty release left out, what a group covers."""
    found: list[tuple[str, Any]] = []
    if not isinstance(task_dict, dict):
        return found
    for key, value in task_dict.items():
        task = value[1] if isinstance(value, tuple) and len(value) == 2 else value
        if isinstance(task, dict):
            found += leaf_tasks(task)
        elif task is not None:
            found.append((leaf_name(key, task), task))
    return found


def leaf_name(key: Any, task: Any) -> str:
    """A leaf task's name: its config's ``task``, else its key in the task dict."""
    return str(getattr(getattr(task, "config", None), "task", None) or key)


def our_leaves(task_dict: Any) -> list[str]:
    """The tasks of ours in a task dict (:func:`leaf_tasks`), by name, sorted."""
    return sorted({name for name, task in leaf_tasks(task_dict) if is_ours(task)})


def recognise(task_dict: Any) -> run_state.Run | None:
    """The run of ours in progress; made now if ``task_dict`` (as lmms-eval resolved it) holds a task of ours."""
    if run_state.STATE.runs:
        return run_state.STATE.runs[-1]
    ours = our_leaves(task_dict)
    if not ours:
        return None
    call = run_state.current_call()
    arguments = call.arguments if call is not None else {}
    run = run_state.Run(ours, arguments.get("cli_args"), bool(arguments.get("predict_only")), call=call)
    model = arguments.get("model")
    run.notes.model_id = f"{model if isinstance(model, str) else type(model).__name__}:" \
                            f"{arguments.get('model_args') or ''}"  # fmt: skip
    if call is not None:
        call.run = run
    run_state.STATE.runs.append(run)
    return run
