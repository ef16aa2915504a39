"""Which way the package's rooms point: runtime code never imports the measuring tools, no module imports
another that imports it back (directly or round a longer circle), and nothing below the plugin imports it.

The import graph is read from the source with ``ast``: every ``import`` anywhere in a module, at its top or inside
a function (an import inside a function is still an arrow: it only waits until the call), except those under
``if TYPE_CHECKING:`` (never executed). The installed package is the mapped layout of ``pyproject.toml``:
``lmms_spatial/`` plus ``tasks/`` as ``lmms_spatial.tasks`` and ``metrics/`` as ``lmms_spatial.metrics``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lmms_spatial"
# the installed package: folder -> its dotted name (pyproject.toml's package-dir)
LAYOUT = {PACKAGE: "lmms_spatial", ROOT / "tasks": "lmms_spatial.tasks", ROOT / "metrics": "lmms_spatial.metrics"}
PLUGIN = "lmms_spatial.plugin"


def _sources() -> dict[str, tuple[str, bool]]:
    """{module name: (its source, whether it is a package's __init__)} for every module of the package."""
    found: dict[str, tuple[str, bool]] = {}
    for folder, prefix in LAYOUT.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            is_init = parts[-1] == "__init__"
            name = ".".join((prefix, *(parts[:-1] if is_init else parts)))
            found[name] = (path.read_text(encoding="utf-8"), is_init)
    return found


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` (top level, functions, classes, try blocks) not under TYPE_CHECKING."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            if not _type_checking_only(child):
                stack.append(child)
            else:
                stack.extend(child.orelse)  # the else branch does run
    return found


@functools.cache
def _imports_of(text: str) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """:func:`_imports` of a module's source, parsed once per text: every test reads the same ~200 files."""
    return tuple(_imports(ast.parse(text)))


def _graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """{module: the modules of the package it imports}; ``from a import b`` is an arrow to ``a.b`` when that is a
    module, else to ``a``; a name outside the package is no arrow."""

    def nearest_module(name: str) -> str | None:
        while name and name not in sources:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (text, is_init) in sources.items():
        package = name if is_init else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports_of(text):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in sources else base)
        graph[name] = {m for t in targets if (m := nearest_module(t)) is not None and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: each strongly connected set of two or more modules, sorted (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return sorted(found)


def _upward(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """{module of the package outside the plugin: the plugin modules it imports}, for those that import any. Every
    module is below the plugin (the plugin is the top layer over lmms-eval; the startup hook, outside the package,
    installs it): a new module is covered without editing this test."""
    found = {
        name: sorted(t for t in targets if t == PLUGIN or t.startswith(PLUGIN + "."))
        for name, targets in graph.items()
        if not (name == PLUGIN or name.startswith(PLUGIN + "."))
    }
    return {name: targets for name, targets in found.items() if targets}


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_model_code_imports_nothing_from_the_bench_package():
    offenders = {
        path.name: sorted(m for m in _imported_modules(path) if m.startswith("lmms_spatial.bench"))
        for path in sorted((PACKAGE / "models").glob("*.py"))
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def test_the_bench_takes_the_qwen_constants_from_the_model_code():
    from lmms_spatial.bench import checkpoints, floor
    from lmms_spatial.models import qwen2_5_vl_architecture as arch

    assert checkpoints.ARCHITECTURES["7b"] is arch.QWEN2_5_VL_7B
    assert (floor.LMMS_EVAL_MIN_PIXELS, floor.LMMS_EVAL_MAX_PIXELS) == (256 * 28 * 28, 1605632)


def test_no_module_of_the_package_imports_one_that_imports_it_back():
    assert _cycles(_graph(_sources())) == []


def test_no_module_outside_the_plugin_imports_it():
    assert _upward(_graph(_sources())) == {}


def test_the_graph_holds_every_module_of_the_installed_package():
    """The modules are read from the folders pyproject.toml installs, not from a list: a new module is covered."""
    names = set(_sources())
    assert {"lmms_spatial.environment", "lmms_spatial.plugin.cli", "lmms_spatial.reports.reproduction",
            "lmms_spatial.tasks.dori.adapter", "lmms_spatial.metrics.mmsi"} <= names  # fmt: skip
    assert len(names) == sum(len(list(folder.rglob("*.py"))) for folder in LAYOUT)


def _benchmark_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """{module of lmms_spatial/: the modules of a benchmark's folder (``lmms_spatial.tasks.<key>...``) it imports by
    name}, for those that import any. The measuring tools (``lmms_spatial.bench``) measure named benchmarks on
    purpose and are left out; ``tasks/`` and ``metrics/`` are the benchmarks' own."""
    ours = ("lmms_spatial.tasks", "lmms_spatial.metrics", "lmms_spatial.bench")
    found = {
        name: sorted(t for t in targets if t.startswith("lmms_spatial.tasks."))
        for name, targets in graph.items()
        if name.startswith("lmms_spatial.") and not name.startswith(ours)
    }
    return {name: targets for name, targets in found.items() if targets}


def test_nothing_in_the_package_imports_a_benchmark_s_module_by_name():
    """One benchmark, one folder (issue 43): the registry, converters, demo, report and CLI find a benchmark's
    modules through its ``BENCHMARK`` (``lmms_spatial.benchmark``), so adding or removing one edits no shared file."""
    assert _benchmark_imports(_graph(_sources())) == {}


def test_a_benchmark_module_imported_by_name_is_found():
    # what cli.py did before the move: import DORI's analysis for its dori-report command
    added = "def _cmd():\n    from lmms_spatial.tasks.dori.patterns import build_report\n"
    graph = _graph(_with(_sources(), "lmms_spatial.cli", added))
    assert _benchmark_imports(graph) == {"lmms_spatial.cli": ["lmms_spatial.tasks.dori.patterns"]}


def test_the_graph_holds_the_imports_inside_functions_and_every_layer_of_the_package():
    graph = _graph(_sources())
    # top level: the plugin's wrappers read the run's state
    assert "lmms_spatial.run_state" in graph["lmms_spatial.plugin.run"]
    # inside a function (run.py imports resume only where a run of ours ends)
    assert "lmms_spatial.plugin.resume" in graph["lmms_spatial.plugin.run"]
    # a relative import of the mapped metrics/ folder
    assert "lmms_spatial.metrics.rubrics.base" in graph["lmms_spatial.metrics.rubrics.mcq_extract"]
    # under TYPE_CHECKING: never executed, no arrow (run_state names ModelImages for its annotation only)
    assert "lmms_spatial.data.api_images" not in graph["lmms_spatial.run_state"]
    assert "lmms_spatial.run_state" in graph["lmms_spatial.data.api_images"]


def _with(sources: dict[str, tuple[str, bool]], module: str, added: str) -> dict[str, tuple[str, bool]]:
    text, is_init = sources[module]
    return {**sources, module: (text + "\n\n" + added, is_init)}


@pytest.mark.parametrize(
    "module, added, circle",
    [
        # what isolation.py did before the run state existed: ask the run wrapper whether a run is ours
        (
            "lmms_spatial.plugin.isolation",
            "def _active():\n    from lmms_spatial.plugin.run import active\n\n    return active()\n",
            ["lmms_spatial.plugin.isolation", "lmms_spatial.plugin.run"],
        ),
        # what store_check.py did: take resume's reader of an audit log (resume opens the store check)
        (
            "lmms_spatial.plugin.store_check",
            "def _replay(db, log):\n    from lmms_spatial.plugin.resume import rebuild\n",
            ["lmms_spatial.plugin.resume", "lmms_spatial.plugin.store_check"],
        ),
        # a longer circle: the report's tables asking the benchmark modules (which import the tables) for layouts
        (
            "lmms_spatial.reports.tables",
            "def layouts():\n    from lmms_spatial.reports.layouts import all_layouts\n\n    return all_layouts()\n",
            None,
        ),
    ],
)
def test_a_circle_put_back_inside_a_function_is_found(module, added, circle):
    cycles = _cycles(_graph(_with(_sources(), module, added)))
    assert cycles != []
    if circle is not None:
        assert cycles == [circle]
    else:
        assert any(module in c and "lmms_spatial.reports.layouts" in c for c in cycles)


def test_a_lower_layer_importing_the_plugin_is_found():
    # what data/loading.py did: patch lmms-eval late and name the failure through the plugin
    added = (
        "def _late():\n"
        "    from lmms_spatial.plugin import install_late\n"
        "    from lmms_spatial.plugin.run import in_call\n"
    )
    graph = _graph(_with(_sources(), "lmms_spatial.data.loading", added))
    assert _upward(graph) == {"lmms_spatial.data.loading": ["lmms_spatial.plugin", "lmms_spatial.plugin.run"]}
