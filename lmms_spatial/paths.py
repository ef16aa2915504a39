"""Where the installed task YAMLs live (the directory lmms-eval must index), and which code is ours."""

from __future__ import annotations

import functools
import os
from typing import Any


def tasks_dir() -> str:
    """The directory holding our task YAMLs, for ``--include_path`` users."""
    import lmms_spatial.tasks as tasks_pkg

    return os.path.dirname(os.path.abspath(tasks_pkg.__file__))


def is_our_code(function: Any) -> bool:
    """Whether ``function`` (``functools.partial`` wrappers looked through) is code of ours: defined in our package,
    or in a file under :func:`tasks_dir` (lmms-eval loads a task folder's ``utils.py`` by file path, as a module
    named ``utils``). The one rule for "ours" of the plugin's wrappers and of the prefetcher."""
    while isinstance(function, functools.partial):
        function = function.func
    if not callable(function):
        return False
    if (getattr(function, "__module__", None) or "").startswith("lmms_spatial."):
        return True
    filename = getattr(getattr(function, "__code__", None), "co_filename", "") or ""
    return bool(filename) and _in_tasks_folder(filename)


@functools.cache
def _in_tasks_folder(filename: str) -> bool:
    """Whether ``filename`` lies under :func:`tasks_dir`, links resolved: once per file, since the prefetcher asks
    for every request (two ``realpath`` calls are ~40 us; a run of another harness's tasks has thousands)."""
    return os.path.realpath(filename).startswith(os.path.realpath(tasks_dir()) + os.sep)


def benchmark_keys() -> list[str]:
    """Every benchmark of ours, in key order: the packages under ``tasks/`` that declare a ``BENCHMARK``
    (:data:`lmms_spatial.data.registry.BENCHMARKS`)."""
    from lmms_spatial.data.registry import BENCHMARKS

    return list(BENCHMARKS)


@functools.cache
def task_benchmarks() -> dict[str, str]:
    """{task name: benchmark key} for every ``task:`` YAML in every benchmark folder (read as text: the ``task:``
    line at the top level of the file; groups are not tasks). Read once per process (the report asks per row);
    callers only read the dict."""
    import re

    found: dict[str, str] = {}
    line = re.compile(r"^task:[ \t]*['\"]?([^'\"\s#]+)", re.MULTILINE)
    for key in benchmark_keys():
        folder = os.path.join(tasks_dir(), key)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".yaml"):
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    match = line.search(fh.read())
                if match:
                    found.setdefault(match.group(1), key)
    return found
