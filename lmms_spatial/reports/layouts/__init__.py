"""Each benchmark's part of ``lmms-spatial report``, declared by the benchmark's own module.

``tasks/<key>/report.py`` (found by its file name in the benchmark's folder, like the registry) may hold:

- ``layouts() -> list[Layout]``: the paper's tables (columns from metrics of its tasks; a layout's
  ``reference`` names a table of the published rows in ``tasks/<key>/published.json``);
- ``CITATION``: the paper (:class:`~lmms_spatial.reports.citations.Citation`), cited under each table;
- ``SCATTERS``: plots of one table column against another (:class:`~lmms_spatial.reports.plots.Scatter`);
- ``analysis(run, judge) -> str | None``: text from a run's samples files (``judge``: the user allowed
  analyses that ask the LLM judge);
- ``hint(runs, judged) -> str | None``: one line under the tables (e.g. how to get more).

A benchmark with a task folder but no such module (or no ``layouts()``) still gets a table: one
per task, its YAML's ``metric_list`` as columns (``chance_level`` and ``unparsed_rate`` as rows),
so ``lmms-spatial demo --tasks <a new benchmark's task>`` ends with a report before anyone writes
a layout. Benchmarks come in key order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lmms_spatial.reports.citations import Citation
from lmms_spatial.reports.plots import Scatter
from lmms_spatial.reports.runs import Run
from lmms_spatial.reports.tables import Column, Layout, Leaf

# metrics shown as the rows under a model (not columns) in a default table
ROW_METRICS = ("chance_level", "unparsed_rate")


@dataclass(frozen=True)
class BenchmarkReport:
    key: str
    layouts: tuple[Layout, ...]
    citation: Citation | None = None
    scatters: tuple[Scatter, ...] = ()
    analysis: Callable[[Run, bool], str | None] | None = None
    hint: Callable[[Sequence[Run], bool], str | None] | None = None
    declared: bool = True  # False: the default tables from the task YAMLs


def _tasks_root() -> Path:
    from lmms_spatial.paths import tasks_dir

    return Path(tasks_dir())


def _yaml_loader() -> type:
    """A safe loader that reads lmms-eval's ``!function utils.x`` as the string ``utils.x``."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    return Loader


def read_task_yaml(path: Path) -> dict[str, Any]:
    """A task YAML with its ``include`` chain merged (the included file first), read without lmms-eval."""
    import yaml

    config = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_yaml_loader()) or {}
    include = config.pop("include", None)
    if include:
        return {**read_task_yaml(Path(path).parent / include), **config}
    return config


def task_metrics(folder: Path) -> dict[str, list[str]]:
    """{leaf task: metrics of its ``metric_list``} for the task YAMLs in ``folder``, in file-name order."""
    found: dict[str, list[str]] = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        config = read_task_yaml(path)
        if isinstance(config.get("task"), str) and config.get("metric_list"):
            found[config["task"]] = [str(m["metric"]) for m in config["metric_list"]]
    return found


def default_layouts(key: str, folder: Path | None = None) -> list[Layout]:
    """One table per task of ``tasks/<key>/``: its declared metrics, chance level and unparsed rate."""
    out = []
    for task, metrics in task_metrics(folder or _tasks_root() / key).items():
        chance = "chance_level" if "chance_level" in metrics else None
        unparsed = "unparsed_rate" if "unparsed_rate" in metrics else None
        why = {
            "no_chance": f"{task}'s YAML declares no chance_level",
            "no_unparsed": f"{task}'s YAML declares no unparsed_rate",
        }
        columns = tuple(
            Column(m, m, Leaf(task, m, chance=chance, unparsed=unparsed, **why))
            for m in metrics
            if m not in ROW_METRICS
        )
        if columns:
            notes = (f"every metric of {task}'s YAML; tasks/{key}/report.py can declare the paper's "
                     "table, its published rows and citation",)  # fmt: skip
            out.append(Layout(task, key, f"{task}: the metrics of its YAML", columns, notes=notes))
    return out


def _from_module(key: str, module: Any) -> BenchmarkReport:
    declared = callable(getattr(module, "layouts", None))
    return BenchmarkReport(
        key,
        tuple(module.layouts() if declared else default_layouts(key)),
        getattr(module, "CITATION", None),
        tuple(getattr(module, "SCATTERS", ())),
        getattr(module, "analysis", None),
        getattr(module, "hint", None),
        declared,
    )


@cache
def benchmark_reports() -> dict[str, BenchmarkReport]:
    """{benchmark key: its report part}: every ``tasks/<key>/report.py``, and every task folder (default tables)."""
    from lmms_spatial.data.registry import BENCHMARKS

    reports = {}
    for key, bench in BENCHMARKS.items():
        if bench.report:
            reports[key] = _from_module(key, bench.load("report"))
        else:
            reports[key] = BenchmarkReport(key, tuple(default_layouts(key)), declared=False)
    return reports


def all_layouts() -> list[Layout]:
    return [layout for report in benchmark_reports().values() for layout in report.layouts]


def citations() -> dict[str, Citation]:
    return {key: r.citation for key, r in benchmark_reports().items() if r.citation is not None}
