"""Where the installed task YAMLs live (the directory lmms-eval must index)."""

from __future__ import annotations

import os

TASKS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tasks")


def tasks_dir() -> str:
    """The directory holding our task YAMLs, for ``--include_path`` users."""
    import lmms_spatial.tasks as tasks_pkg

    return os.path.dirname(os.path.abspath(tasks_pkg.__file__))


def benchmark_keys() -> list[str]:
    """Every benchmark with a task folder (``tasks/<key>/``) holding a YAML, in key order: a benchmark is its
    folder. A folder left with only ``__pycache__`` (a benchmark removed with git, which keeps ignored files)
    is not one."""
    root = tasks_dir()
    return sorted(
        name
        for name in os.listdir(root)
        if not name.startswith(("_", "."))
        and os.path.isdir(os.path.join(root, name))
        and any(f.endswith(".yaml") for f in os.listdir(os.path.join(root, name)))
    )
