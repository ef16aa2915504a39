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


def benchmark_modules(part: str, roots: list[str] | None = None) -> dict[str, str]:
    """{benchmark key: ``lmms_spatial.tasks.<key>.<part>``} for every benchmark folder (a package under ``tasks/``)
    that holds ``<part>.py``, in key order. Nothing is imported but the (empty) ``lmms_spatial.tasks`` package: a
    benchmark's declaration, converter, fixture builder and report layout are found by file name, so the generic
    code names no benchmark and adding one edits no shared file. ``roots``: the folders to search (default: the
    package's ``__path__``); folders starting with an underscore are not benchmarks."""
    import pkgutil

    import lmms_spatial.tasks as tasks_pkg

    found: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(roots if roots is not None else tasks_pkg.__path__), key=lambda i: i.name):
        if not info.ispkg or info.name.startswith(("_", ".")) or info.name in found:
            continue
        if os.path.isfile(os.path.join(getattr(info.module_finder, "path", ""), info.name, f"{part}.py")):
            found[info.name] = f"{tasks_pkg.__name__}.{info.name}.{part}"
    return found


def task_benchmarks() -> dict[str, str]:
    """{task name: benchmark key} for every ``task:`` YAML in every benchmark folder (read as text: the ``task:``
    line at the top level of the file; groups are not tasks)."""
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
