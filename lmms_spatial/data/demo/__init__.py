"""Small synthetic datasets in the normalised schemas, drawn by code.

The same builders make the demo data (``lmms-spatial demo``), the test fixtures and
``lmms-spatial fixture`` (a benchmark's fixture in a folder, for the real CLI), so all
exercise the exact loading path of the real data: parquet files with ``datasets`` features
(images as ``Image()``) read by ``datasets.load_dataset`` from a local folder named by the
benchmark's environment variable.

Each benchmark's ``demo`` part (``tasks/<key>/demo.py``, named by its ``BENCHMARK``) holds its fixture
builder ``build(out_dir, n)`` and the tasks the demo runs on it (``DEMO_TASKS``), so adding a benchmark
edits no shared file. The modules here are drawing helpers that builders share.

A folder built here holds :data:`FIXTURE_MARKER` (a hidden JSON file that ``datasets`` does not
read as data): ``lmms-spatial export`` finds it and says in the card that the rows are synthetic.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmms_spatial.data.registry import BENCHMARKS, with_part


def _discover_demo_modules() -> dict[str, tuple[Callable[..., Path], list[str]]]:
    """{benchmark key: (builder(out_dir, n) -> path written, tasks the demo runs)}, in key order: every benchmark
    whose ``BENCHMARK`` names a ``demo`` part. Read on first use, not at import: a demo module imports the drawing
    helpers of this package."""
    found: dict[str, tuple[Callable[..., Path], list[str]]] = {}
    for key, bench in with_part("demo").items():
        module = bench.load("demo")
        if not (hasattr(module, "build") and hasattr(module, "DEMO_TASKS")):
            raise TypeError(f"{bench.module_name('demo')} must define build(out_dir, n) and DEMO_TASKS")
        found[key] = (module.build, list(module.DEMO_TASKS))
    return found


# written into every folder build_fixture builds: the rows there are synthetic (lmms-spatial export reads it)
FIXTURE_MARKER = ".lmms_spatial_fixture.json"


@functools.cache
def demo_benchmarks() -> dict[str, tuple[Callable[..., Path], list[str]]]:
    """benchmark key -> (builder(out_dir, n) -> parquet path, tasks the demo runs)."""
    return _discover_demo_modules()


def __getattr__(name: str) -> Any:
    if name == "DEMO_BENCHMARKS":  # ``from lmms_spatial.data.demo import DEMO_BENCHMARKS``, read on first use
        return demo_benchmarks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_fixture(key: str, folder: Path, n: int | None = None) -> Path:
    """Build benchmark ``key``'s fixture into ``folder`` (the value of its environment variable)."""
    if key not in demo_benchmarks():
        raise KeyError(f"{key!r} has no fixture builder (tasks/{key}/demo.py); known: "
                       f"{', '.join(demo_benchmarks())}")  # fmt: skip
    import datasets

    datasets.disable_progress_bars()
    import json

    from lmms_spatial import __version__

    builder = demo_benchmarks()[key][0]
    builder(Path(folder)) if n is None else builder(Path(folder), n)
    marker = {"benchmark": key, "builder": f"tasks/{key}/demo.py", "lmms_spatial": __version__, "n": n}
    (Path(folder) / FIXTURE_MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    return Path(folder)


def build_demo_data(root: Path, n: int | None = None, keys: list[str] | None = None) -> dict[str, str]:
    """Build the demo datasets of ``keys`` (default: every benchmark) under ``root/<key>``; returns
    {env var: folder} to export."""
    return {BENCHMARKS[key].env_var: str(build_fixture(key, Path(root) / key, n)) for key in keys or demo_benchmarks()}


def demo_tasks(keys: list[str] | None = None) -> list[str]:
    """The tasks the demo runs for ``keys`` (default: every benchmark)."""
    return [task for key in keys or demo_benchmarks() for task in demo_benchmarks()[key][1]]


def benchmark_of_task(task: str) -> str | None:
    """The benchmark whose demo runs ``task`` (None: no benchmark's)."""
    return next((key for key, (_builder, tasks) in demo_benchmarks().items() if task in tasks), None)
