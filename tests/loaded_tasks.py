"""What the suite reads of the task dicts lmms-eval builds for a benchmark of ours (``tests/conftest.py``'s
``benchmark_tasks``): which names ``--tasks`` takes to run all of a benchmark, and the leaf tasks of a task dict."""

from __future__ import annotations

from pathlib import Path


def folder_index(key: str, task_manager) -> dict[str, dict]:
    """lmms-eval's index entries (tasks, groups, tags) whose YAML lies in benchmark ``key``'s folder,
    ``tasks/<key>/``."""
    from lmms_spatial.paths import tasks_dir

    root = tasks_dir()
    return {name: entry for name, entry in task_manager._get_task_and_group(root).items()
            if isinstance(entry.get("yaml_path"), str)
            and Path(entry["yaml_path"]).relative_to(root).parts[0] == key}  # fmt: skip


def benchmark_roots(key: str, task_manager) -> list[str]:
    """The groups of benchmark ``key`` (``tasks/<key>/``) that no other group contains, and its tasks in no group:
    what ``--tasks`` names to run all of it."""
    from lmms_eval.utils import load_yaml_config

    index = folder_index(key, task_manager)
    members: set[str] = set()
    for entry in index.values():
        if entry["type"] == "group":
            config = load_yaml_config(entry["yaml_path"], mode="simple")
            members.update(t if isinstance(t, str) else t.get("task", "") for t in config.get("task", []))
    return sorted(n for n, e in index.items() if e["type"] in ("group", "task") and n not in members)


def task_leaves(task_dict: dict) -> dict[str, object]:
    """{task name: task} of every leaf task in a task dict ``get_task_dict`` built, groups walked (the plugin's walk:
    :func:`lmms_spatial.plugin.ours.leaf_tasks`)."""
    from lmms_spatial.plugin.ours import leaf_tasks

    return dict(leaf_tasks(task_dict))
