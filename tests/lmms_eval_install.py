"""Facts about the installed lmms-eval that some tests depend on, read without importing it (seconds)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def builtin_task_yamls() -> list[Path]:
    """The task YAMLs the installed lmms-eval ships, sorted; none for the 0.7.0 wheel on PyPI, which has none."""
    spec = importlib.util.find_spec("lmms_eval")
    assert spec is not None and spec.submodule_search_locations, "lmms-eval is not installed"
    return sorted(Path(next(iter(spec.submodule_search_locations)), "tasks").rglob("*.yaml"))


NO_BUILTIN_TASKS = "this lmms-eval wheel ships no task YAMLs (0.7.0 on PyPI): it has no built-in task"
