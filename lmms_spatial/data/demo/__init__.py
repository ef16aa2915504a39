"""Small synthetic datasets in the normalised schemas, drawn by code.

The same builders make the demo data (``lmms-spatial demo``), the test fixtures and
``lmms-spatial fixture`` (a benchmark's fixture in a folder, for the real CLI), so all
exercise the exact loading path of the real data: parquet files with ``datasets`` features
(images as ``Image()``) read by ``datasets.load_dataset`` from a local folder named by the
benchmark's environment variable.

Each benchmark's module ``tasks/<key>/demo.py`` holds its fixture builder ``build(out_dir, n)`` and
the tasks the demo runs on it (``DEMO_TASKS``); this package finds every such module by file name (the
shipped benchmarks' too), so adding a benchmark edits no shared file. The benchmark itself (key, Hub id,
environment variable, schema) is declared in ``tasks/<key>/declaration.py``, which this needs and never
the other way round. The modules here are drawing helpers that builders share.

A folder built here holds :data:`FIXTURE_MARKER` (a hidden JSON file that ``datasets`` does not
read as data): ``lmms-spatial export`` finds it and says in the card that the rows are synthetic.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from lmms_spatial.data.registry import BENCHMARKS
from lmms_spatial.paths import benchmark_modules


def _discover_demo_modules() -> dict[str, tuple[Callable[..., Path], list[str]]]:
    """{benchmark key: (builder(out_dir, n) -> path written, tasks the demo runs)}, in key order."""
    found: dict[str, tuple[Callable[..., Path], list[str]]] = {}
    for key, name in benchmark_modules("demo").items():
        module = importlib.import_module(name)
        if not (hasattr(module, "build") and hasattr(module, "DEMO_TASKS")):
            continue
        if key not in BENCHMARKS:
            raise ValueError(
                f"tasks/{key}/demo.py builds demo data for {key!r}, which is not a registered "
                f"benchmark: declare it in tasks/{key}/declaration.py "
                f"(BENCHMARK = Benchmark({key!r}, hub_id, env_var))"
            )
        found[key] = (module.build, list(module.DEMO_TASKS))
    return found


# written into every folder build_fixture builds: the rows there are synthetic (lmms-spatial export reads it)
FIXTURE_MARKER = ".lmms_spatial_fixture.json"

# benchmark key -> (builder(out_dir, n) -> parquet path, tasks the demo runs)
DEMO_BENCHMARKS: dict[str, tuple[Callable[..., Path], list[str]]] = _discover_demo_modules()


def build_fixture(key: str, folder: Path, n: int | None = None) -> Path:
    """Build benchmark ``key``'s fixture into ``folder`` (the value of its environment variable)."""
    if key not in DEMO_BENCHMARKS:
        raise KeyError(f"{key!r} has no fixture builder (tasks/{key}/demo.py); known: "
                       f"{', '.join(DEMO_BENCHMARKS)}")  # fmt: skip
    import datasets

    datasets.disable_progress_bars()
    import json

    from lmms_spatial import __version__

    builder = DEMO_BENCHMARKS[key][0]
    builder(Path(folder)) if n is None else builder(Path(folder), n)
    marker = {"benchmark": key, "builder": f"tasks/{key}/demo.py", "lmms_spatial": __version__, "n": n}
    (Path(folder) / FIXTURE_MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
    return Path(folder)


def build_demo_data(root: Path, n: int | None = None, keys: list[str] | None = None) -> dict[str, str]:
    """Build the demo datasets of ``keys`` (default: every benchmark) under ``root/<key>``; returns
    {env var: folder} to export."""
    return {BENCHMARKS[key].env_var: str(build_fixture(key, Path(root) / key, n)) for key in keys or DEMO_BENCHMARKS}


def demo_tasks(keys: list[str] | None = None) -> list[str]:
    """The tasks the demo runs for ``keys`` (default: every benchmark)."""
    return [task for key in keys or DEMO_BENCHMARKS for task in DEMO_BENCHMARKS[key][1]]


def benchmark_of_task(task: str) -> str | None:
    """The benchmark whose demo runs ``task`` (None: no benchmark's)."""
    return next((key for key, (_builder, tasks) in DEMO_BENCHMARKS.items() if task in tasks), None)
