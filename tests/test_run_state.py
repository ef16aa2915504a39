"""One run state: what a run changes as it goes is a field of ``lmms_spatial.run_state.STATE``, nowhere else.

A module-level list, dict or set that a function changes is state a second evaluation in the same process inherits
unless someone remembers to clear it (failure lines, empty tasks, counts, "said once" flags each had their own, and
their own way of being forgotten). The scan below reads every module of the installed package (the folders
``pyproject.toml`` maps, listed as ``tests/test_import_direction.py`` lists them: a new module is covered without
editing this test) and fails on such a container outside ``run_state.py``; the few true process-wide caches are
named in :data:`ALLOWED`, each with why. The other tests pin what ``run_state`` promises: :func:`reset` forgets every
field, and an outermost ``simple_evaluate`` starts from nothing an earlier one left.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import types
from collections.abc import Iterator

import pytest
from test_import_direction import _sources, _with

from lmms_spatial import run_state
from lmms_spatial.plugin import empty_tasks, failed_requests, failures
from lmms_spatial.plugin.run import patch_evaluator

RUN_STATE = "lmms_spatial.run_state"

# (module, name) -> why it is no run's state: module-level containers that functions change on purpose
ALLOWED = {
    ("lmms_spatial.data.loading", "_loaded"): "a memo of datasets.load_dataset by source and arguments: the same "
    "release read again gives the same rows, in any run of the process (forget_loaded: a test that changes the files)",
    ("lmms_spatial.judge.client", "_JUDGES"): "the shared judge clients, one connection pool and concurrency limit "
    "per rubric and config for the whole process; what their servers said is the run state's (JudgeEndpoints)",
}

# calls that make a container (or a flag object) a function can change in place
MAKERS = frozenset({"list", "dict", "set", "Counter", "defaultdict", "OrderedDict", "deque", "Event"})
# methods that change their container in place (Event.set: a "said once" flag)
CHANGERS = frozenset(
    "append extend insert remove pop popitem clear add discard update setdefault sort reverse appendleft extendleft "
    "difference_update intersection_update symmetric_difference_update set __setitem__ __delitem__".split()
)


@functools.cache
def _parsed(text: str) -> ast.Module:
    """A module's source parsed once per text: every test here reads the same files."""
    return ast.parse(text)


def _is_container(value: ast.expr | None) -> bool:
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return name in MAKERS
    return False


def _module_containers(tree: ast.Module) -> dict[str, int]:
    """{name: line} of the module-level assignments of a container (in the module's body, its ifs and trys)."""
    found: dict[str, int] = {}
    statements = list(tree.body)
    while statements:
        node = statements.pop(0)
        if isinstance(node, (ast.If, ast.Try)):
            statements.extend([*node.body, *node.orelse, *getattr(node, "finalbody", [])])
            statements.extend(s for handler in getattr(node, "handlers", []) for s in handler.body)
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and _is_container(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update({t.id: node.lineno for t in targets if isinstance(t, ast.Name)})
    return found


def _aliases(tree: ast.Module, module: str, is_init: bool, modules: frozenset[str]) -> dict[str, str]:
    """{local name: the module of the package it stands for} (``import a.b as c``, ``from a import b``, relative)."""
    package = module if is_init else module.rpartition(".")[0]
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    found[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - (node.level - 1)], *([node.module] if node.module else [])])
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    found[alias.asname or alias.name] = f"{base}.{alias.name}"
    return found


def _local_names(function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names a function binds itself (its arguments and assignments): they hide a module-level one."""
    arguments = function.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    names.update(a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None)
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _changed_in_functions(
    tree: ast.Module, module: str, aliases: dict[str, str]
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """What the functions of ``tree`` do to module-level names: ``({(module, name)} changed in place, {(module, name)}
    rebound)``. In place: ``NAME.append(...)``, ``NAME[k] = v``, ``del NAME[k]``, ``other_module.NAME.clear()``;
    rebound: ``global NAME``, ``other_module.NAME = v`` (a module of the package)."""

    def owner(node: ast.expr, local: set[str]) -> tuple[str, str] | None:
        if isinstance(node, ast.Name):
            return None if node.id in local else (module, node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            return aliases[node.value.id], node.attr
        return None

    changed: set[tuple[str, str]] = set()
    rebound: set[tuple[str, str]] = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        local = _local_names(function) - {n for g in ast.walk(function) if isinstance(g, ast.Global) for n in g.names}
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                rebound.update((module, name) for name in node.names)
            in_place: list[ast.expr] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CHANGERS:
                in_place.append(node.func.value)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                in_place.extend(t.value for t in targets if isinstance(t, ast.Subscript))
                rebound.update(
                    o for t in targets if isinstance(t, ast.Attribute) and (o := owner(t, local)) is not None
                )
            changed.update(o for target in in_place if (o := owner(target, local)) is not None)
    return changed, rebound


@functools.cache
def _changes_of(module: str, text: str, is_init: bool, modules: frozenset[str]) -> tuple[frozenset, frozenset]:
    """:func:`_changed_in_functions` of one module, once per text (the planted tests change one module)."""
    tree = _parsed(text)
    in_place, rebound = _changed_in_functions(tree, module, _aliases(tree, module, is_init, modules))
    return frozenset(in_place), frozenset(rebound)


def _what_functions_change(sources: dict[str, tuple[str, bool]]) -> tuple[set, set]:
    """:func:`_changed_in_functions` over every module: (changed in place, rebound), as ``(module, name)``."""
    changed: set[tuple[str, str]] = set()
    rebound: set[tuple[str, str]] = set()
    for name, (text, is_init) in sources.items():
        in_place, again = _changes_of(name, text, is_init, frozenset(sources))
        changed |= in_place
        rebound |= again
    return changed, rebound


def run_state_elsewhere(sources: dict[str, tuple[str, bool]]) -> dict[str, list[str]]:
    """{module: ["NAME (line N)" or "NAME (rebound)", ...]}: module-level containers outside run_state.py that some
    function of the package changes, less :data:`ALLOWED`; and every module-level name a function rebinds
    (``global NAME``, ``module.NAME = v``), whatever it holds."""
    changed, rebound = _what_functions_change(sources)
    found: dict[str, list[str]] = {}
    for name, (text, _) in sources.items():
        if name == RUN_STATE:
            continue
        containers = _module_containers(_parsed(text))
        names = [
            f"{n} (line {line})"
            for n, line in sorted(containers.items())
            if (name, n) in changed and (name, n) not in ALLOWED
        ]
        names += [f"{n} (rebound)" for m, n in sorted(rebound) if m == name and (m, n) not in ALLOWED]
        if names:
            found[name] = names
    return found


def test_no_module_but_run_state_keeps_what_a_run_changes():
    """Each name found belongs in run_state.RunState (typed, forgotten by reset/start_call), or in a
    functools.cache where it is a process-wide memo of a pure computation."""
    assert run_state_elsewhere(_sources()) == {}


def test_each_allowed_container_is_still_there_and_still_changed():
    """An entry for a name that moved or stopped changing is stale: remove it, or the list hides a new one."""
    sources = _sources()
    changed, _ = _what_functions_change(sources)
    for module, name in ALLOWED:
        assert name in _module_containers(_parsed(sources[module][0])), (module, name)
        assert (module, name) in changed, (module, name)


@pytest.mark.parametrize(
    "module, added, expected",
    [
        # failed_requests before the run state held its counts
        (
            "lmms_spatial.plugin.failed_requests",
            "_COUNTS: dict[str, int] = {}\n\n\ndef note(task):\n    _COUNTS[task] = 1\n",
            ["_COUNTS"],
        ),
        # a "said once" flag where a cache was meant (plugin.supported before functools.cache)
        (
            "lmms_spatial.plugin",
            "_checked: list[bool] = []\n\n\ndef check():\n    _checked.append(True)\n",
            ["_checked"],
        ),
        # osr_bench's warned-once flags
        (
            "lmms_spatial.tasks.osr_bench.adapter",
            "import threading\n_warned = threading.Event()\n\n\ndef warn():\n    _warned.set()\n",
            ["_warned"],
        ),
        # a name rebound at run time, whatever it holds
        (
            "lmms_spatial.prefetch",
            "_LAST = None\n\n\ndef keep(stats):\n    global _LAST\n    _LAST = stats\n",
            ["_LAST"],
        ),
    ],
)
def test_a_run_value_put_back_in_a_module_is_found(module, added, expected):
    found = run_state_elsewhere(_with(_sources(), module, added))
    assert list(found) == [module]
    assert [entry.split(" (")[0] for entry in found[module]] == expected


def test_a_name_another_module_sets_is_found():
    added = "def keep(stats):\n    from lmms_spatial import prefetch\n\n    prefetch.LAST_STATS = stats\n"
    found = run_state_elsewhere(_with(_sources(), "lmms_spatial.bench.prefetch", added))
    assert found == {"lmms_spatial.prefetch": ["LAST_STATS (rebound)"]}


def test_a_container_another_module_changes_is_found():
    added = "def forget():\n    from lmms_spatial.plugin import empty_tasks\n\n    empty_tasks._empty.clear()\n"
    sources = _with(_sources(), "lmms_spatial.plugin.empty_tasks", "_empty: list[str] = []\n")
    found = run_state_elsewhere(_with(sources, "lmms_spatial.plugin.run", added))
    assert found == {"lmms_spatial.plugin.empty_tasks": [found["lmms_spatial.plugin.empty_tasks"][0]]}
    assert found["lmms_spatial.plugin.empty_tasks"][0].startswith("_empty (line ")


def test_a_table_built_at_import_and_a_local_of_the_same_name_are_no_state():
    """What the module body fills while it is imported is a constant (mmperspective's demo BUILDERS); a function's
    own list named like a module's is that function's."""
    added = (
        "TABLE = {'a': 1}\nTABLE['b'] = 2\nSEEN = []\n\n\n"
        "def f():\n    SEEN = []\n    SEEN.append(1)\n    return SEEN\n"
    )
    assert run_state_elsewhere(_with(_sources(), "lmms_spatial.paths", added)) == {}


# --- what run_state promises ------------------------------------------------------------------------------------


@pytest.fixture
def fresh_state() -> Iterator[run_state.RunState]:
    """A run state as a new process has it, for this test only: the state other tests left comes back after."""
    before = dict(vars(run_state.STATE))
    run_state.reset()
    try:
        yield run_state.STATE
    finally:
        vars(run_state.STATE).update(before)


def _dirty(state: run_state.RunState) -> None:
    """Every field of ``state`` set as a run would leave it."""
    call = run_state.Call({"tasks": "x"})
    state.calls.append(call)
    state.runs.append(run_state.Run(["x"], call=call))
    state.evaluation = run_state.Evaluation(object(), None)
    state.written_for_hub, state.push_failure_said = ("results.json", "hf upload"), True
    state.last_lines = run_state.LastLines(["a failure"], ["a note"], {"t": "scoring: E"}, 130)
    state.empty_tasks = run_state.EmptyTasks(["t"], {"g": (["u"], ["t"])})
    state.failed_requests["t"] = (2, "[ERROR] down")
    state.prefetch_stats = types.SimpleNamespace(hits=1)
    state.progress_sinks.append(object())
    state.stages.outputs[("s", "k")] = "a map"
    state.stages.artifacts[("s", "k")] = {"key": "k"}
    state.stages.stores.append(lambda stage, key: None)
    state.judges.outages["http://judge"] = (0.0, RuntimeError("down"))
    state.judges.refused_keys["http://judge"] = 401
    state.warned.add("odi_bench: once")


def test_reset_forgets_every_field_and_keeps_the_plugins_listeners(fresh_state):
    def listener(key, exc):
        return None

    run_state.on_documents_failed(listener)
    # the plugin's own listener is there too when an earlier test of this process patched lmms-eval
    listeners = list(fresh_state.documents_failed)
    assert listeners[-1] is listener
    _dirty(fresh_state)
    new = run_state.RunState()
    # every field is dirtied (a new field that _dirty misses fails here), the listeners are the plugin's
    assert [f.name for f in dataclasses.fields(new) if getattr(fresh_state, f.name) == getattr(new, f.name)] == []
    run_state.reset()
    assert run_state.STATE is fresh_state  # modules that hold it see the fresh values
    for f in dataclasses.fields(new):
        expected = listeners if f.name == "documents_failed" else getattr(new, f.name)
        assert getattr(fresh_state, f.name) == expected, f.name


def test_an_outermost_call_forgets_the_last_evaluation_and_the_command_keeps_its_last_lines(fresh_state):
    _dirty(fresh_state)
    fresh_state.calls.clear()
    kept = {f.name: getattr(fresh_state, f.name) for f in dataclasses.fields(fresh_state)}
    outer, inner = run_state.Call({}), run_state.Call({})
    run_state.start_call(outer)
    assert fresh_state.empty_tasks == run_state.EmptyTasks() and fresh_state.failed_requests == {}
    assert fresh_state.last_lines == run_state.LastLines(["a failure"], ["a note"], {"t": "scoring: E"}, 130)
    for name in ("stages", "judges", "warned", "prefetch_stats", "written_for_hub"):  # the process's, not a call's
        assert getattr(fresh_state, name) is kept[name], name
    fresh_state.failed_requests["t"] = (1, None)
    run_state.start_call(inner)  # a nested call is part of the outer one: nothing forgotten
    assert fresh_state.failed_requests == {"t": (1, None)} and fresh_state.calls == [outer, inner]
    run_state.end_call(inner)
    run_state.end_call(outer)
    run_state.end_call(outer)  # already ended (a reset in between): nothing to remove
    assert fresh_state.calls == []


def test_a_warning_is_said_the_first_time_only(fresh_state):
    assert [run_state.first_time("k"), run_state.first_time("k"), run_state.first_time("other")] == [True, False, True]


def _task(name: str, empty: bool = False):
    task = types.SimpleNamespace(config=types.SimpleNamespace(task=name))
    if empty:
        task._lmms_spatial_no_documents = True  # what empty_tasks.tolerated flags
    return task


def test_two_evaluations_in_one_process_do_not_share_what_the_first_left(fresh_state):
    """The Python API's second ``simple_evaluate`` (stand-ins for lmms-eval's evaluator, same call shapes): the
    first left an empty task, failed requests and the data it read; the second sees none of them, in its results
    or while it runs. The first's failure line stays: it is the command's (said at exit, exit 1)."""
    seen: list[dict] = []
    module = types.SimpleNamespace(task_dict={})

    def simple_evaluate(tasks):
        evaluated = module.get_task_dict(tasks)
        seen.append(
            {
                "left_out": empty_tasks.left_out(),
                "failed": failed_requests.counts(),
                "data": dict(run_state.current_call().data),
            }
        )
        if tasks == ["first"]:
            failed_requests.note_task("odi_bench_close_oa", {("lmms_spatial_error", "none"): ["request failed: x"]})
            run_state.data_read("odi_bench", run_state.DataRecord("/data/odi", True, None, None))
        return {"results": {name: {"accuracy,none": 1.0} for name in evaluated}}

    module.get_task_dict = lambda tasks: module.task_dict
    module.simple_evaluate = simple_evaluate
    module.evaluate = module.consolidate_group_results = lambda *args, **kwargs: None  # wrapped, never called here
    patch_evaluator(module)

    module.task_dict = {
        "odi_bench_close_oa": _task("odi_bench_close_oa"),
        "odi_bench_close_ocr": _task("odi_bench_close_ocr", empty=True),
    }
    first = module.simple_evaluate(["first"])
    no_documents = {"alias": "odi_bench_close_ocr", empty_tasks.DOCUMENTS_KEY: empty_tasks.NO_DOCUMENTS}
    assert first["results"]["odi_bench_close_ocr"] == no_documents
    assert failed_requests.counts() == {"odi_bench_close_oa": 1}
    module.task_dict = {"odi_bench_close_oa": _task("odi_bench_close_oa")}
    second = module.simple_evaluate(["second"])
    assert second == {"results": {"odi_bench_close_oa": {"accuracy,none": 1.0}}}
    assert seen[1] == {"left_out": [], "failed": {}, "data": {}}
    assert empty_tasks.left_out() == [] and failed_requests.counts() == {}
    assert [line.split(":")[1].strip() for line in failures.lines()] == ["odi_bench_close_ocr"]
