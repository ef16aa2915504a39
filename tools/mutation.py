"""Mutation testing of the scorers (issue 37): is a realistic one-line bug in a metric caught by a test?

``python -m tools.mutation``, run from the repository root (workshop code: not installed, see :mod:`tools`):

* ``[MODULE ...]``: mutate these modules (default: every module of :func:`scope`), run the fast tests of
  :data:`TESTS` against each mutant and print, per module, mutants / killed / equivalent / accepted /
  survived and the score, killed / (mutants - equivalent).
  Exit 1 when a mutant survives that ``mutation/equivalent.txt`` does not list (or lists with another
  mutated line: the id now names another mutation), or when an entry there names a mutant that no longer
  survives (stale: remove it).
* ``--changed``: only the modules whose fingerprint differs from ``mutation/baseline.json`` (what CI runs:
  a clean clone knows nothing of "the previous landing", the committed baseline says what was checked).
* ``--update-baseline``: after a run that passes, record the checked modules' fingerprints (and counts).
* ``--budget S``: stop and fail after S seconds, naming the command to run locally (CI's bound).

Tool: mutmut 3 (chosen by measurement against cosmic-ray 8, see CONTRIBUTING.md). mutmut copies the
sources into ``mutants/`` and switches mutants per call through a trampoline, in forked workers, so a
mutant costs one test run of the tests that reach its function, not an interpreter start. It names a
mutant after the *file path* and must find the mutated copy on ``sys.path`` before the installed
package: here ``metrics/`` and ``tasks/`` are installed as ``lmms_spatial.metrics`` /
``lmms_spatial.tasks`` by an editable finder pointing at the repository, so mutmut run in the
repository mutates a copy the tests never import (it stops: "could not find any test case for any
mutant"). :func:`stage` therefore lays the package out as it is installed (``.mutation/lmms_spatial``
with ``metrics/``, ``tasks/``, ``hub_cards/`` inside, plus ``tests/`` and ``tools/``: the fake judge server
some tests import, and the runs' pytest plugin) and mutmut runs there; its
forced-fail check (every trampoline raises: some test must fail) proves the mutated copy is the one
imported, on every run.

What is not mutated: module-level code (mutmut mutates function bodies: constants, tables and compiled
patterns are pinned by the tests that use them) and :data:`NOT_SCORING` (the adapters' prompts,
images, data validation and logging, and ``main``'s argument plumbing: no score is computed there; the
prompts are pinned by literal-prompt tests). A fingerprint covers the module's source, its lines in
``equivalent.txt`` and the tool's configuration, not its tests: a change to a test alone does not rerun the
check in CI (run the command before weakening a test).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

MUTATION_DIR = "mutation"
EQUIVALENT_FILE = f"{MUTATION_DIR}/equivalent.txt"
BASELINE_FILE = f"{MUTATION_DIR}/baseline.json"
STAGE_DIR = ".mutation"
COMMAND = "python -m tools.mutation"
REPO = Path(__file__).resolve().parents[1]  # the checkout this tool is run from

# Where the scorers live (repository paths, glob patterns): every benchmark's metrics module, the shared
# extraction and aggregation, the judge rubrics and every task adapter's scoring glue. A new benchmark
# (``lmms-spatial new-task``) is in scope as soon as its files exist: no list here to edit.
SCOPE_PATTERNS = ("metrics/*.py", "metrics/rubrics/*.py", "tasks/*/adapter.py")


# functions that compute no score (glob patterns on the function name), left out in every module: the
# adapters' prompts, images, data-source validation and log lines, and command-line argument plumbing
# (``main``; what it prints is computed by functions that are mutated). Everything else (gold answers, option
# shuffles and rotations, process_results, aggregations, report rows) is mutated.
NOT_SCORING = (
    "main",
    "doc_to_visual",
    "doc_to_text",
    "doc_to_messages",
    "*_prompt",
    "prompt_prefix",
    "options_block",
    "format_options",
    "_official_block",
    "_lines",
    "_kwargs",
    "api_image_rule",
    "resolution_cap",
    "describe_cap",
    "_check_against_provider",
    "_check_columns",
    "_check_question_types",
    "validate_rows",
    "undecoded_images",
    "_warn_once",
    "_info_once",
)

# the fast tests that exercise the scorers (mutmut runs, per mutant, those that reach its function)
TESTS = (
    "tests/metrics",
    "tests/tasks",
    "tests/judge/test_judge_rubric_mmsi_mcq.py",
    "tests/judge/test_judge_rubric_odi.py",
    "tests/judge/test_judge_rubric_osr.py",
)
# Tests left out of the mutation runs. mutmut runs the tests several times in one process (stats, clean run,
# then forked mutants): a test that counts a process-wide cache's misses sees the previous run's entries (it
# tests doc_to_visual, out of scope). The hash-seed test runs the scorer in six interpreters (11 s, a third of
# the selection's time, paid again by every mutant it reaches); the value it checks (F1 10/26) is also checked
# in-process by test_official_example_structure_gives_f1_0_385.
LEFT_OUT = (
    "tests/tasks/test_osr_bench_adapter.py::test_rows_reach_the_task_undecoded_and_the_panorama_is_decoded_per_image",
    "tests/metrics/test_osr_bench.py::test_scores_do_not_depend_on_the_hash_seed",
)
PYTEST_ARGS = (
    "-n",
    "0",
    "-m",
    "not slow",
    "-p",
    "no:cacheprovider",
    "--hypothesis-seed=0",
    *(arg for test in LEFT_OUT for arg in ("--deselect", test)),
)

# pytest arguments of the mutation runs that change neither which mutants exist nor which tests meet them (so not
# part of any fingerprint): tqdm's lock made one per process (a worker killed inside a bar must not hang the others)
RUN_ONLY_ARGS = ("-p", "tools.mutation_lock")

KILLED = {"killed", "timeout", "caught by type check", "segfault"}


@dataclass(frozen=True)
class Group:
    """Modules mutated against one test selection (mutmut takes one per run): the scorers, and beyond them the code
    that also decides a reported number (issue 42), each with the fast tests that reach it. A group's tests are
    part of its modules' fingerprints, so a new group leaves the others' baseline valid."""

    name: str
    patterns: tuple[str, ...]
    tests: tuple[str, ...]


def converter_groups(root: Path) -> tuple[Group, ...]:
    """One group per benchmark converter under ``root`` (``tasks/<key>/convert.py``), each against its own test
    files (``tests/scripts/test_convert_<key>.py`` and ``..._edges.py``, edge rows included; a mutant runs only the
    tests that reach it): a new benchmark's converter is in scope as soon as it exists."""
    groups = []
    for convert in sorted(root.glob("tasks/*/convert.py")):
        key = convert.parent.name
        names = (f"test_convert_{key}.py", f"test_convert_{key}_edges.py")
        tests = tuple(f"tests/scripts/{name}" for name in names if (root / "tests" / "scripts" / name).is_file())
        groups.append(Group(f"convert_{key}", (f"tasks/{key}/convert.py",), tests))
    return tuple(groups)


GROUPS = (
    Group("scorers", SCOPE_PATTERNS, TESTS),
    # which answer a model gives without a network: random_choice's guesses (the demo's numbers) and the answer set
    # each question allows (also the chance levels)
    Group(
        "answers",
        ("lmms_spatial/models/random_choice.py", "lmms_spatial/data/answer_space.py", "tasks/*/answers.py"),
        ("tests/models/test_random_choice.py", "tests/data/test_sources_and_images.py"),
    ),
    # what image an API model is sent: the provider's size rule, and which of two image settings wins
    Group(
        "api_images",
        ("lmms_spatial/data/api_images.py",),
        ("tests/data/test_api_images.py", "tests/tasks/test_odi_bench_api_images.py"),
    ),
    # how each release's answers and image files are matched into the rows the tasks read: one group per
    # benchmark's converter (converter_groups, below)
    *converter_groups(REPO),
    # the judge: what part of a reply is the verdict, retries and refusals, the verdict cache's keys and read-back
    Group(
        "judge",
        ("lmms_spatial/judge/client.py", "lmms_spatial/judge/cache.py"),
        (
            "tests/judge/test_judge_client.py",
            "tests/judge/test_judge_verdict_text.py",
            "tests/judge/test_judge_faults.py",
            "tests/judge/test_judge_units.py",
        ),
    ),  # fmt: skip
    # which logged answer replay gives (and when it refuses), and which map the staged model puts before a question
    # (its cache keys, one map per image, read-back)
    Group(
        "replay_staged",
        ("lmms_spatial/models/replay.py", "lmms_spatial/models/staged.py"),
        (
            "tests/models/test_replay_answers.py",
            "tests/models/test_replay_files.py",
            "tests/models/test_replay_units.py",
            "tests/models/test_staged.py",
            "tests/models/test_staged_jobs.py",
            "tests/models/test_staged_units.py",
        ),
    ),  # fmt: skip
    # the answer store's key: the fingerprint of the weights a run's --model_args name (which argument, which bytes)
    Group(
        "store_weights",
        ("lmms_spatial/plugin/weights.py",),
        ("tests/test_weights_sampling.py", "tests/plugin/test_weights_units.py"),
    ),
    # which live process writes into a folder of the answer store (a live run's answers are its own, a dead one's are
    # read back) and lmms-eval's merge lock a dead owner left
    Group("store_owners", ("lmms_spatial/plugin/owners.py",), ("tests/plugin/test_owners_units.py",)),
    # the run conditions a results file records and the report reads back (to_json / from_json, the judge's words)
    Group("conditions", ("lmms_spatial/conditions.py",), ("tests/plugin/test_conditions_units.py",)),
    # which runs the report pools as seeds (pool_key, differences, distinct_runs) and the conditions it reads back
    Group(
        "report_runs",
        ("lmms_spatial/reports/runs.py",),
        (
            "tests/reports/test_runs_units.py",
            "tests/reports/test_report_conditions.py",
            "tests/reports/test_report_environment.py",
        ),
    ),
    # the report's cells: means over seeds, bootstrap CIs, n/N and the other row marks, chance and unparsed rows, which
    # column a metric goes in, missing cells and why; left out: test_report_ci.py (a CLI report with plots per
    # mutant; its CIs are pinned in-process by test_tables_units.py) and test_mmsi_diagnosis.py (an lmms-eval run)
    Group(
        "report_tables",
        ("lmms_spatial/reports/tables.py",),
        (
            "tests/reports/test_tables_units.py",
            "tests/reports/test_report_tables.py",
            "tests/reports/test_report_conditions.py",
            "tests/reports/test_layouts.py",
            "tests/reports/test_report_api_images_and_empty_tasks.py",
            "tests/reports/test_report_environment.py",
            "tests/reports/test_reproduction.py",
        ),
    ),
    # did a run reproduce the paper: name matching, the paper's value against the run's interval, EASI's grades
    Group("reproduction", ("lmms_spatial/reports/reproduction.py",), ("tests/reports/test_reproduction.py",)),
    # how a 360° panorama is decoded (resolution caps, sizes) and projected to views (which ERP pixel a direction
    # samples, the wrap at the seam, the resolution level), and Omni-CoT's box -> crop rule
    Group(
        "erp_projection",
        ("lmms_spatial/data/erp_image.py", "lmms_spatial/data/projection.py"),
        ("tests/data/test_erp_image.py", "tests/data/test_projection.py", "tests/data/test_erp_projection_units.py"),
    ),
    # the answer store: which answers are kept (never a failure marker), their keys (weights, data fingerprints, the
    # release), each chunk stored as it returns, the read-back of killed runs, what refuses a shared or full store
    Group(
        "store_resume",
        ("lmms_spatial/plugin/resume.py",),
        (
            "tests/plugin/test_resume_units.py",
            "tests/test_answer_store_chunks.py",
            "tests/test_store_weights.py",
            "tests/test_owners.py",
            "tests/test_progress_bars.py",
            "tests/test_failed_requests.py",
        ),
    ),  # fmt: skip
    # Omni-CoT's answer path: the coordinate system a grounding box is read in, its crop, which crops a relevance
    # reply keeps, which answer is final, each stage's cache key; omni_cot_prompts.py holds string constants only
    # (module-level: nothing to mutate; pinned by the literal-prompt tests)
    Group(
        "omni_cot",
        ("lmms_spatial/models/omni_cot.py",),
        (
            "tests/models/test_omni_cot.py",
            "tests/models/test_omni_cot_answer_units.py",
            "tests/models/test_omni_cot_units.py",
        ),
    ),  # fmt: skip
)


def scope(root: Path) -> list[str]:
    """The modules in scope under ``root``, sorted (``__init__.py`` files hold no scorer)."""
    found = {p.relative_to(root).as_posix() for g in GROUPS for pattern in g.patterns for p in root.glob(pattern)}
    return sorted(m for m in found if not m.endswith("/__init__.py"))


def group_of(module: str) -> Group:
    """The group whose patterns match ``module`` (the first, in :data:`GROUPS` order)."""
    for group in GROUPS:
        if any(fnmatch.fnmatchcase(module, pattern) for pattern in group.patterns):
            return group
    raise KeyError(module)


def package_path(module: str) -> str:
    """``metrics/dori.py`` -> ``lmms_spatial/metrics/dori.py`` (where it sits in the installed layout); a module of
    the package itself keeps its path."""
    return module if module.startswith("lmms_spatial/") else f"lmms_spatial/{module}"


def dotted(module: str) -> str:
    """``metrics/rubrics/base.py`` -> ``lmms_spatial.metrics.rubrics.base`` (mutmut's name prefix)."""
    return package_path(module)[: -len(".py")].replace("/", ".")


def module_of(mutant: str) -> str | None:
    """The repository path of the module a mutant name belongs to (``None``: not one of ours).

    A name is ``<module>.<mangled function>__mutmut_<n>``; the mangled function holds no dot.
    """
    parts = mutant.rpartition(".")[0].split(".")
    if len(parts) < 2 or parts[0] != "lmms_spatial":  # lmms_spatial.conditions: a module of the package's top
        return None
    return "/".join(parts[1:] if parts[1] in ("metrics", "tasks") else parts) + ".py"


def functions(source: str) -> list[str]:
    """mutmut's names for the functions it mutates: ``x_name`` (top level) and ``xǁClassǁname`` (methods)."""
    names: list[str] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(f"x_{node.name}")
        elif isinstance(node, ast.ClassDef):
            names += [
                f"x\u01c1{node.name}\u01c1{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
    return names


def _function_name(mangled: str) -> str:
    return mangled.rpartition("\u01c1")[2] if "\u01c1" in mangled else mangled[2:]


def mutant_globs(module: str, source: str) -> list[str]:
    """The mutant-name patterns run for ``module``: every function, less :data:`NOT_SCORING`."""
    names = functions(source)
    names = [n for n in names if not any(fnmatch.fnmatchcase(_function_name(n), p) for p in NOT_SCORING)]
    return [f"{dotted(module)}.{name}__mutmut_*" for name in names]


# ---------------------------------------------------------------------------------------------------
# equivalent mutants: "<mutant id> | <mutated line(s)> | <why it cannot change a score>"
# ---------------------------------------------------------------------------------------------------


# kinds of accepted survivors (see the head of equivalent.txt): the first two are equivalent mutants, the others
# survivors that are counted as such in the score but do not fail the check
EQUIVALENT_KINDS = ("equivalent", "valid data")
ACCEPTED_KINDS = ("not a score", "gap")


@dataclass(frozen=True)
class Equivalent:
    mutant: str
    line: str
    reason: str

    @property
    def kind(self) -> str:
        return self.reason.split(":", 1)[0].strip()

    @property
    def is_equivalent(self) -> bool:
        return self.kind in EQUIVALENT_KINDS


def parse_equivalents(text: str) -> dict[str, Equivalent]:
    """Entries of ``equivalent.txt``; ``#`` starts a comment line. Raises on a malformed or repeated entry."""
    entries: dict[str, Equivalent] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        # the mutated line is code and may hold " | " itself: the id is the first field, the reason the last
        fields = raw.split(" | ")
        parts = [fields[0].strip(), " | ".join(fields[1:-1]).strip(), fields[-1].strip()] if len(fields) >= 3 else []
        if len(parts) != 3 or not all(parts) or "__mutmut_" not in parts[0]:
            raise ValueError(f"{EQUIVALENT_FILE}:{number}: expected '<mutant id> | <mutated line> | <reason>'")
        if parts[0] in entries:
            raise ValueError(f"{EQUIVALENT_FILE}:{number}: {parts[0]} listed twice")
        entry = Equivalent(*parts)
        if entry.kind not in EQUIVALENT_KINDS + ACCEPTED_KINDS or ":" not in entry.reason:
            raise ValueError(
                f"{EQUIVALENT_FILE}:{number}: the reason starts with one of {EQUIVALENT_KINDS + ACCEPTED_KINDS}"
            )
        entries[parts[0]] = entry
    return entries


def mutated_line(diff: str) -> str:
    """The ``+`` lines of a mutant's diff, stripped and joined by `` ⏎ ``: what an entry must repeat."""
    added = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++") and line[1:].strip()
    ]
    return " \u23ce ".join(added)


def equivalents_text_of(module: str, text: str) -> str:
    """The lines of ``equivalent.txt`` about ``module`` (part of its fingerprint)."""
    own = [line.strip() for line in text.splitlines() if module_of(line.strip().split(" | ", 1)[0]) == module]
    return "\n".join(sorted(own))


def config_fingerprint(tests: tuple[str, ...] = TESTS) -> str:
    """What decides which mutants exist and which tests meet them, besides a module's source (its group's tests)."""
    from importlib.metadata import version

    config = (version("mutmut"), NOT_SCORING, tests, PYTEST_ARGS)
    return hashlib.sha256(repr(config).encode()).hexdigest()[:16]


def fingerprint(module: str, root: Path, equivalents_text: str) -> str:
    """sha256 of the module's source, of its entries in ``equivalent.txt`` and of :func:`config_fingerprint`."""
    digest = hashlib.sha256(config_fingerprint(group_of(module).tests).encode())
    digest.update((root / module).read_bytes())
    digest.update(b"\0")
    digest.update(equivalents_text_of(module, equivalents_text).encode())
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------------


def stage(root: Path, work: Path, modules: list[str], tests: tuple[str, ...] = TESTS) -> None:
    """Lay the package out as installed (metrics/, tasks/, hub_cards/ inside lmms_spatial/) under ``work``.

    ``work/mutants`` (mutmut's copy and results) is removed: every run mutates afresh (no cache to trust).
    """
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(root / "lmms_spatial", work / "lmms_spatial", ignore=ignore)
    for folder in ("metrics", "tasks", "hub_cards"):
        shutil.copytree(root / folder, work / "lmms_spatial" / folder, ignore=ignore)
    shutil.copytree(root / "tests", work / "tests", ignore=ignore)
    shutil.copytree(root / "tools", work / "tools", ignore=ignore)  # the fake judge server, the runs' pytest plugin
    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    config = [
        "",
        "[tool.mutmut]",
        'source_paths = ["lmms_spatial"]',
        'also_copy = ["tools/"]',  # into mutants/, where the tests run (mutmut copies tests/ itself)
        f"only_mutate = {json.dumps([package_path(m) for m in modules])}",
        f"pytest_add_cli_args = {json.dumps([*PYTEST_ARGS, *RUN_ONLY_ARGS])}",
        f"pytest_add_cli_args_test_selection = {json.dumps(list(tests))}",
        "",
    ]
    (work / "pyproject.toml").write_text(pyproject + "\n".join(config), encoding="utf-8")


@dataclass(frozen=True)
class Survivor:
    mutant: str
    status: str  # mutmut's: "survived", or "no tests" (no selected test reaches the function)
    line: str  # the mutated line(s)
    listed: bool  # listed in equivalent.txt, but with another line: the id now names another mutation


@dataclass
class ModuleResult:
    module: str
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0  # listed as equivalent (or equivalent on valid data)
    accepted: int = 0  # listed as "not a score" or "gap": survivors that do not fail the check
    survived: list[Survivor] = field(default_factory=list)  # not listed, or listed with another line
    stale: list[str] = field(default_factory=list)  # listed, but the mutant is killed or gone
    seconds: float = 0.0

    @property
    def score(self) -> float:
        tested = self.mutants - self.equivalent
        return self.killed / tested if tested else 1.0


# Address space allowed to mutmut and its forked mutant workers (each inherits the limit). A mutant that turns a
# bounded loop into an unbounded one can grow without end: one reached 15 GB resident on this 24 GB machine before
# its CPU-time limit. With the cap its allocation fails (MemoryError: a test fails, the mutant is killed, as a
# timeout is). A normal worker maps ~8 GiB (torch, datasets; ~3 GB resident).
MEMORY_LIMIT_GIB = 12.0


def _address_space_limit(gib: float):
    """A ``preexec_fn`` capping the child's address space at ``gib`` GiB (none when ``gib`` <= 0)."""

    def limit() -> None:
        if gib > 0:
            import resource

            cap = int(gib * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return limit


def _mutmut(
    work: Path, args: list[str], deadline: float | None, log, memory_gib: float = MEMORY_LIMIT_GIB
) -> subprocess.CompletedProcess:
    timeout = None if deadline is None else max(1.0, deadline - time.monotonic())
    env = dict(os.environ, PYTHONHASHSEED="0")
    return subprocess.run(
        [sys.executable, "-m", "mutmut", *args],
        cwd=work,
        env=env,
        preexec_fn=_address_space_limit(memory_gib),
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
        check=False,
    )


_DIFF_SCRIPT = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
wanted = json.load(sys.stdin)
json.dump({name: get_diff_for_mutant(name, path=path) for name, path in wanted.items()}, sys.stdout)
"""


def diffs(work: Path, mutants: dict[str, str]) -> dict[str, str]:
    """``mutmut show``'s diff of each mutant ({name: path of its module}), in one process."""
    if not mutants:
        return {}
    out = subprocess.run(
        [sys.executable, "-c", _DIFF_SCRIPT],
        cwd=work,
        input=json.dumps(mutants),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def collect(work: Path, modules: list[str], equivalents: dict[str, Equivalent]) -> dict[str, ModuleResult]:
    """Read mutmut's verdicts (``mutants/<path>.meta``) and sort survivors into equivalent / not."""
    results: dict[str, ModuleResult] = {}
    alive: dict[str, str] = {}  # surviving mutant -> its status
    for module in modules:
        source = (work / package_path(module)).read_text(encoding="utf-8")
        wanted = mutant_globs(module, source)
        meta = json.loads((work / "mutants" / (package_path(module) + ".meta")).read_text(encoding="utf-8"))
        result = ModuleResult(module)
        for mutant, code in meta["exit_code_by_key"].items():
            if not any(fnmatch.fnmatchcase(mutant, g) for g in wanted):
                continue
            result.mutants += 1
            result.seconds += float(meta.get("durations_by_key", {}).get(mutant) or 0.0)
            if _status(code) in KILLED:
                result.killed += 1
            else:
                alive[mutant] = _status(code)
        results[module] = result
    lines = {
        name: mutated_line(diff) for name, diff in diffs(work, {m: package_path(module_of(m)) for m in alive}).items()
    }
    for mutant, status in alive.items():
        result = results[module_of(mutant)]
        entry = equivalents.get(mutant)
        if entry is not None and entry.line == lines[mutant]:
            if entry.is_equivalent:
                result.equivalent += 1
            else:
                result.accepted += 1
        else:
            result.survived.append(Survivor(mutant, status, lines[mutant], listed=entry is not None))
    for module, result in results.items():
        result.stale = sorted(m for m in equivalents if module_of(m) == module and m not in alive)
    return results


def _status(code) -> str:
    from mutmut.stats import status_by_exit_code  # the tool's own table (imported only when running)

    return status_by_exit_code[code]


def report(results: dict[str, ModuleResult]) -> str:
    """One row per module: mutants, killed, equivalent, accepted survivors, new survivors, score.

    score = killed / (mutants - equivalent): accepted survivors count against it.
    """
    header = f"{'module':34} {'mutants':>7} {'killed':>7} {'equiv.':>7} {'accepted':>8} {'survived':>8} {'score':>7}"
    total = ModuleResult("total")
    rows = []
    for r in [*results.values(), total]:
        if r is not total:
            total.mutants += r.mutants
            total.killed += r.killed
            total.equivalent += r.equivalent
            total.accepted += r.accepted
            total.survived += r.survived
        rows.append(
            f"{r.module:34} {r.mutants:7d} {r.killed:7d} {r.equivalent:7d} {r.accepted:8d} {len(r.survived):8d} "
            f"{r.score:7.1%}"
        )
    return "\n".join([header, *rows])


def load_baseline(root: Path) -> dict:
    path = root / BASELINE_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"modules": {}}


def write_baseline(root: Path, baseline: dict) -> None:
    modules = baseline["modules"]
    body = ",\n".join(f"    {json.dumps(m)}: {json.dumps(modules[m], sort_keys=True)}" for m in sorted(modules))
    text = '{\n  "tool": ' + json.dumps(baseline.get("tool", "")) + ',\n  "modules": {\n' + body + "\n  }\n}\n"
    (root / BASELINE_FILE).write_text(text, encoding="utf-8")


def changed_modules(root: Path, equivalents_text: str, baseline: dict) -> list[str]:
    """Modules in :func:`scope` whose fingerprint is not the one recorded in the baseline."""
    recorded = baseline.get("modules", {})
    return [m for m in scope(root) if recorded.get(m, {}).get("fingerprint") != fingerprint(m, root, equivalents_text)]


OVERHEAD_S = 90.0  # staging, mutant generation, the stats run and the clean run of the selection (measured: 60-90 s)


def estimated_seconds(modules: list[str], baseline: dict, max_children: int) -> float | None:
    """Wall seconds to check ``modules``, from the test time the baseline recorded for them (None: not recorded)."""
    recorded = baseline.get("modules", {})
    if any(m not in recorded for m in modules):
        return None
    return OVERHEAD_S + sum(float(recorded[m].get("seconds", 0.0)) for m in modules) / max(1, max_children)


def _mutmut_version() -> str:
    from importlib.metadata import version

    return f"mutmut {version('mutmut')}"


def _print_results(work: Path, results: dict[str, ModuleResult], elapsed: float, max_children: int) -> bool:
    """The table, then every new survivor and stale entry (also written to ``.mutation/survivors.txt``); True
    when the check fails."""
    print(report(results))
    print(f"mutation: {elapsed:.0f} s wall, {max_children} workers ({_mutmut_version()})")
    listing = [f"{s.mutant} | {s.line} | " for r in results.values() for s in r.survived]
    (work / "survivors.txt").write_text("".join(line + "\n" for line in listing), encoding="utf-8")
    failed = False
    for r in results.values():
        for s in r.survived:
            failed = True
            note = f" (listed in {EQUIVALENT_FILE} with another line)" if s.listed else ""
            print(f"SURVIVED {s.mutant} | {s.line}  [{s.status}{note}; `cd {STAGE_DIR} && mutmut show {s.mutant}`]")
        for mutant in r.stale:
            failed = True
            print(f"STALE {EQUIVALENT_FILE}: {mutant} is killed or no longer exists; remove its line")
    if failed:
        print(
            f"mutation: kill each survivor with an exact test, or list it in {EQUIVALENT_FILE} as "
            "'<mutant id> | <mutated line> | <kind>: <why>'"
        )
    return failed


def _again(root: Path, equivalents: dict[str, Equivalent], max_children: int) -> int:
    """Rerun the survivors of the last run (``.mutation/survivors.txt``) with the repository's current tests."""
    start = time.monotonic()
    work = root / STAGE_DIR
    try:
        last = json.loads((work / "run.json").read_text(encoding="utf-8"))
        survivors = [line.split(" | ", 1)[0] for line in (work / "survivors.txt").read_text().splitlines() if line]
    except FileNotFoundError:
        print(f"{COMMAND} --again: no previous run in {STAGE_DIR}; run without --again first")
        return 2
    changed = [
        m for m, digest in last["sources"].items() if hashlib.sha256((root / m).read_bytes()).hexdigest() != digest
    ]
    if changed:
        print(f"{COMMAND} --again: {', '.join(changed)} changed since the last run; run without --again")
        return 2
    if survivors:
        shutil.rmtree(work / "tests")
        shutil.copytree(root / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        with open(work / "mutmut.log", "w", encoding="utf-8") as log:
            run = _mutmut(work, ["run", "--max-children", str(max_children), *survivors], None, log)
        if run.returncode != 0:
            print(f"mutation: mutmut failed (exit {run.returncode}); its log: {work / 'mutmut.log'}")
            return 1
    results = collect(work, last["modules"], equivalents)
    return 1 if _print_results(work, results, time.monotonic() - start, max_children) else 0


def _run_group(root: Path, work: Path, modules: list[str], tests: tuple[str, ...], equivalents: dict[str, Equivalent],
               deadline: float | None, args: argparse.Namespace) -> dict[str, ModuleResult] | None:  # fmt: skip
    """Stage, mutate and test ``modules`` against ``tests``; their results, or None after saying why it failed."""
    stage(root, work, modules, tests)
    sources = {m: hashlib.sha256((root / m).read_bytes()).hexdigest() for m in modules}
    (work / "run.json").write_text(json.dumps({"modules": modules, "sources": sources}), encoding="utf-8")
    globs = [g for m in modules for g in mutant_globs(m, (root / m).read_text(encoding="utf-8"))]
    log_path = work / "mutmut.log"
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            run = _mutmut(work, ["run", "--max-children", str(args.max_children), *globs], deadline, log)
        except subprocess.TimeoutExpired:
            print(
                f"mutation: over the {args.budget:.0f} s budget checking {', '.join(modules)}; run "
                f"`{COMMAND} --changed --update-baseline` locally and commit {BASELINE_FILE}"
            )
            return None
    if run.returncode != 0:
        print(log_path.read_text(encoding="utf-8")[-4000:])
        print(f"mutation: mutmut failed (exit {run.returncode}); its log: {log_path}")
        return None
    return collect(work, modules, equivalents)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="repository paths (default: every module in scope)")
    parser.add_argument("--changed", action="store_true", help="only modules whose baseline fingerprint differs")
    parser.add_argument("--update-baseline", action="store_true", help="record the checked modules when all pass")
    parser.add_argument("--budget", type=float, default=None, help="fail after this many seconds")
    parser.add_argument("--max-children", type=int, default=2, help="parallel mutant workers (default 2)")
    parser.add_argument(
        "--tests", nargs="+", help="test files instead of the default selection (to iterate; not for the baseline)"
    )
    parser.add_argument(
        "--again",
        action="store_true",
        help="rerun only the last run's survivors against the current tests (to iterate; not for the baseline)",
    )
    args = parser.parse_args(argv)
    root = Path.cwd()
    if not (root / "metrics").is_dir() or not (root / "tasks").is_dir() or not (root / "tests").is_dir():
        print(f"{COMMAND}: run it from the repository root (metrics/, tasks/ and tests/ not found here)")
        return 2
    start = time.monotonic()
    deadline = None if args.budget is None else start + args.budget
    equivalents_text = (root / EQUIVALENT_FILE).read_text(encoding="utf-8") if (root / EQUIVALENT_FILE).exists() else ""
    try:
        equivalents = parse_equivalents(equivalents_text)
    except ValueError as exc:
        print(exc)
        return 1
    baseline = load_baseline(root)
    if (args.tests or args.again) and args.update_baseline:
        print(f"{COMMAND}: the baseline records whole runs of the default test selection; drop --tests/--again")
        return 2
    if args.again:
        return _again(root, equivalents, args.max_children)
    in_scope = scope(root)
    unknown = [m for m in args.modules if m not in in_scope]
    if unknown:
        print(f"{COMMAND}: not in scope: {unknown} (scope: {', '.join(in_scope)})")
        return 2
    modules = args.modules or in_scope
    if args.changed:
        modules = [m for m in modules if m in changed_modules(root, equivalents_text, baseline)]
        if not modules:
            print(f"mutation: every module matches {BASELINE_FILE}; nothing to check")
            return 0
        print(f"mutation: changed since {BASELINE_FILE}: {', '.join(modules)}")
    estimate = estimated_seconds(modules, baseline, args.max_children)
    if args.budget is not None and estimate is not None and estimate > args.budget:
        print(
            f"mutation: checking {', '.join(modules)} takes about {estimate:.0f} s, over the {args.budget:.0f} s "
            f"budget; run `{COMMAND} --changed --update-baseline` locally and commit {BASELINE_FILE}"
        )
        return 1
    work = root / STAGE_DIR
    results: dict[str, ModuleResult] = {}
    for group in GROUPS:  # one mutmut run per test selection; the last group's stage stays for --again
        members = [m for m in modules if group_of(m) is group]
        if not members:
            continue
        found = _run_group(root, work, members, tuple(args.tests or group.tests), equivalents, deadline, args)
        if found is None:
            return 1
        results.update(found)
    failed = _print_results(work, results, time.monotonic() - start, args.max_children)
    if failed:
        return 1
    if args.update_baseline:
        baseline["tool"] = _mutmut_version()
        for r in results.values():
            baseline["modules"][r.module] = {
                "fingerprint": fingerprint(r.module, root, equivalents_text),
                "mutants": r.mutants,
                "killed": r.killed,
                "equivalent": r.equivalent,
                "accepted": r.accepted,
                "seconds": round(r.seconds, 1),
            }
        write_baseline(root, baseline)
        print(f"mutation: {BASELINE_FILE} updated for {', '.join(results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
