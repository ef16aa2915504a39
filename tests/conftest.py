"""Shared fixtures: offline environment, fixture datasets, the tiny model, and a checked lmms-eval runner.

Expensive things are built once per test run, not once per test or per xdist worker: fixture
datasets (one benchmark at a time, when a test asks for it), the tiny random Qwen2.5-VL and the
per-benchmark demo runs live in a folder every worker of the run shares (:func:`build_once`).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lmms_spatial.data.demo import DEMO_BENCHMARKS, build_fixture

REPO = Path(__file__).resolve().parents[1]
# pytest caches a test module's rewritten asserts as bytecode, and Python our modules' bytecode, only where bytecode
# may be written: under PYTHONDONTWRITEBYTECODE=1 (exported on this project's machines) each worker rewrote the ~290
# test modules on every run, 6.5 of the 11 s of collection (measured). Written as Python writes it, into the
# __pycache__ folders git ignores; the processes the tests start keep the caller's setting.
sys.dont_write_bytecode = False
if os.environ.get("PYTEST_XDIST_WORKER"):
    # one compute thread per worker (and per lmms-eval it starts): N workers on N cores, instead of each
    # torch/OpenMP pool spinning on every core (measured: 18% less wall time for the e2e runs on 2 cores).
    # Results do not depend on the thread count; an explicit setting wins.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:  # tests/ is not a package: tiny_models.py sits next to this file
    sys.path.insert(0, str(TESTS_DIR))

import forkserver  # noqa: E402  (tests/forkserver.py: the pre-warmed start of the CLI runs below)
from run_folders import shared_folder  # noqa: E402


def pytest_unconfigure(config) -> None:
    forkserver.close()


@pytest.fixture(scope="session", autouse=True)
def _one_task_index_per_run(shared_dir) -> None:
    """lmms-eval's built-in task index, made for the run's first forked lmms-eval run, is kept where every
    worker finds it (:func:`forkserver.Zygote.task_index_file`): one ~9 CPU s build per run, not per worker."""
    forkserver.INDEX_FOLDER = shared_dir


@pytest.fixture
def logged() -> Iterator[Callable[[str], list[str]]]:
    """lmms-eval's loguru messages at or above a level, kept for the test: ``messages = logged("WARNING")``;
    the handlers are removed when the test ends."""
    from loguru import logger

    handlers: list[int] = []

    def capture(level: str) -> list[str]:
        messages: list[str] = []
        handlers.append(logger.add(lambda m: messages.append(m.record["message"]), level=level))
        return messages

    yield capture
    for handler in handlers:
        logger.remove(handler)


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory, request) -> Path:
    """A folder shared by every xdist worker of this run (the run's base temp folder without xdist). A worker is
    told by xdist's ``workerinput``, not by ``PYTEST_XDIST_WORKER``: a pytest a test starts inherits that variable,
    and took the parent of its own base folder, ``pytest-of-<user>``, shared by every run (stale fixtures kept)."""
    return shared_folder(tmp_path_factory.getbasetemp(), request.config)


def build_once(shared: Path, name: str, build: Callable[[Path], object]) -> Path:
    """``shared/name``, made by ``build(folder)`` the first time any worker of this run asks for it.

    A file lock makes the others wait; the folder is built under a temporary name and renamed, so a
    failed build leaves nothing that looks finished (the next caller builds again).
    """
    from filelock import FileLock

    target = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        if not target.is_dir():
            scratch = shared / f"{name}.building"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            build(scratch)
            scratch.rename(target)
    return target


@pytest.fixture(scope="session")
def fixture_folder(shared_dir) -> Callable[[str], Path]:
    """key -> the folder holding that benchmark's fixture dataset (built on first use, once per run)."""

    def folder(key: str) -> Path:
        return build_once(shared_dir, f"fixture_{key}", lambda out: build_fixture(key, out))

    return folder


@pytest.fixture(scope="session")
def offline_base_env(tmp_path_factory) -> dict[str, str]:
    """Environment for subprocesses as a user has it: no Hub, a private HF cache, no benchmark data (see
    ``offline_env``), and no product setting of ours (judge, prefetch, ...): a test that is about one sets it."""
    root = tmp_path_factory.mktemp("lmms_env")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMMS_SPATIAL_")}
    env.update(
        HF_HOME=str(root / "hf_home"),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
    )
    return env


@pytest.fixture(scope="session")
def offline_env(offline_base_env, fixture_folder) -> dict[str, str]:
    """``offline_base_env`` plus every benchmark's fixture dataset, named by its environment variable."""
    from lmms_spatial.data.registry import BENCHMARKS

    return {**offline_base_env, **{BENCHMARKS[key].env_var: str(fixture_folder(key)) for key in DEMO_BENCHMARKS}}


@pytest.fixture(scope="session")
def fixture_datasets(offline_env) -> dict[str, Path]:
    """{benchmark key: folder holding its fixture parquet}."""
    from lmms_spatial.data.registry import BENCHMARKS

    return {key: Path(offline_env[BENCHMARKS[key].env_var]) for key in DEMO_BENCHMARKS}


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """``os.environ`` set to ``values`` inside the block, restored after."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@dataclass(frozen=True)
class ScoredTask:
    """A task of ours as lmms-eval loads it: its fixture documents (no media), scorer and declared metrics."""

    docs: list[dict]
    process_results: Callable
    declared: frozenset[str]


@pytest.fixture(scope="session")
def task_manager():
    from lmms_eval.tasks import TaskManager

    return TaskManager(include_defaults=False)


@pytest.fixture(scope="session")
def benchmark_tasks(task_manager, offline_base_env, fixture_folder) -> Callable[[str], list[dict]]:
    """key -> the task dicts lmms-eval builds for each of :func:`benchmark_roots` (its groups as ``--tasks`` names
    them), on the benchmark's fixture; built once per worker for the contract, aggregation and fuzz tests, which only
    score them (a judge is read when a record is scored, not when a task is built)."""
    from loaded_tasks import benchmark_roots

    from lmms_spatial.data.registry import BENCHMARKS

    built: dict[str, list[dict]] = {}

    def build(key: str) -> list[dict]:
        if key not in built:
            from lmms_eval.tasks import get_task_dict

            with environment({**offline_base_env, BENCHMARKS[key].env_var: str(fixture_folder(key))}):
                built[key] = [get_task_dict([root], task_manager) for root in benchmark_roots(key, task_manager)]
        return built[key]

    return build


@pytest.fixture(scope="session")
def scored_tasks(benchmark_tasks) -> Callable[[str], dict[str, ScoredTask]]:
    """key -> {leaf task of tasks/<key>/: ScoredTask} loaded through lmms-eval on the fixture, once per worker
    (:func:`benchmark_tasks`): every task of the folder (the contract test checks none is missing).

    Call ``process_results`` under the environment the test needs (e.g. ``LMMS_SPATIAL_JUDGE=none``).
    """
    from loaded_tasks import task_leaves

    loaded: dict[str, dict[str, ScoredTask]] = {}

    def load(key: str) -> dict[str, ScoredTask]:
        if key not in loaded:
            leaves = {name: task for task_dict in benchmark_tasks(key) for name, task in task_leaves(task_dict).items()}
            loaded[key] = {
                name: ScoredTask(list(task.eval_docs_no_media), task.config.process_results,
                                 frozenset(m["metric"] for m in task.config.metric_list))
                for name, task in sorted(leaves.items())
            }  # fmt: skip
        return loaded[key]

    return load


@pytest.fixture(scope="session")
def tiny_qwen2_5_vl(shared_dir) -> Path:
    """The tiny random-weight Qwen2.5-VL checkpoint (tests/tiny_models.py), built once per run; read it only."""
    from tiny_models import build_tiny_qwen2_5_vl

    return build_once(shared_dir, "tiny-qwen2.5-vl", build_tiny_qwen2_5_vl)


@dataclass
class DemoRun:
    """One ``lmms-spatial demo`` run: its exit status, output and working folder (data, results, report)."""

    returncode: int
    stdout: str
    stderr: str
    out: Path


def _cli(args: list[str], env: dict[str, str], out: Path) -> None:
    """``python -m lmms_spatial.cli ARGS``, its exit status and output kept in ``out`` (a fork of the
    worker's pre-warmed process, :mod:`forkserver`; ``demo`` itself starts lmms-eval as a real subprocess)."""
    proc = forkserver.run_module("lmms_spatial.cli", args, env, timeout=900)
    (out / "returncode").write_text(str(proc.returncode))
    (out / "stdout").write_text(proc.stdout)
    (out / "stderr").write_text(proc.stderr)


def _demo_run(folder: Path) -> DemoRun:
    read = (folder / "stdout").read_text, (folder / "stderr").read_text
    return DemoRun(int((folder / "returncode").read_text()), read[0](), read[1](), folder / "demo")


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--full-size",
        action="store_true",
        help="also run the full-size viewer test (a whole synthetic OSR-Bench run, 6-11 min on 2 cores; "
        ".ci/run runs it as its own step)",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Order the tests for two workers, and tag each xdist_group test's node id with its group, as
    ``--dist loadgroup`` expects.

    pytest-xdist 3.8 does it by setting ``item._nodeid``, which pytest >= 9.2 no longer reads (ids live
    in ``item._id``: pytest-dev/pytest-xdist#1386), so the groups would silently be ignored. Where xdist's
    own tag took effect (older pytest), nothing is done.
    """
    if not getattr(config.option, "loadgroup", False):
        return

    # the longest first, the many short unit tests last to fill the gaps: two workers finish together.
    # Slow tests of the top-level modules (bench harness, scaffold, startup hook: several lmms-eval runs
    # each) are the longest, then the other slow ones and the groups sharing a load (each benchmark's
    # tasks for the contract and fuzz tests); order within each part is kept.
    def rank(item) -> int:
        slow = item.get_closest_marker("slow") is not None
        if slow and item.path.parent == TESTS_DIR:
            return 0
        return 1 if slow or item.get_closest_marker("xdist_group") is not None else 2

    items.sort(key=rank)
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest < 9.2: xdist's tag works
        return
    for item in items:
        marks = item.iter_markers("xdist_group")
        groups = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks}
        if groups and "@" not in item.nodeid:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(sorted(groups))}")


def pytest_collection_finish(session) -> None:
    """Whether this run needs the whole demo (then every benchmark's demo run is a slice of it); and what the
    imports and the collection made is frozen out of the garbage collector (``gc.freeze``: torch, transformers
    and lmms-eval are millions of objects that every full collection would walk again; measured on 2 cores,
    the fuzz and aggregation tests of one benchmark: 51 -> 44 CPU s). Nothing a test checks is collected."""
    import gc

    gc.collect()
    gc.freeze()
    users = [item for item in session.items if {"demo_run", "full_demo"} & set(getattr(item, "fixturenames", ()))]
    keys = {item.callspec.params.get("key") for item in users if hasattr(item, "callspec")} - {None}
    full = any("full_demo" in item.fixturenames for item in users)
    session.config.stash[_WHOLE_DEMO] = full or len(keys) > 1


_WHOLE_DEMO = pytest.StashKey[bool]()


@pytest.fixture(scope="session")
def full_demo(shared_dir, offline_base_env) -> DemoRun:
    """``lmms-spatial demo`` (every benchmark's demo tasks in one lmms-eval run), once per test run."""
    return _demo_run(build_once(shared_dir, "demo_all", lambda out: _cli(["demo", "--out", str(out / "demo")],
                                                                        offline_base_env, out)))  # fmt: skip


@pytest.fixture(scope="session")
def demo_run(request, shared_dir, offline_base_env) -> Callable[[str], DemoRun]:
    """key -> the benchmark's demo: ``lmms-spatial demo --tasks <its demo tasks>``, once per test run.

    When this run needs the whole demo anyway (``tests/e2e/test_demo.py``, or several benchmarks'
    contract tests), a benchmark's demo is its slice of that one run instead of a run of its own: its
    tasks' results and samples files alone, reported by ``lmms-spatial report`` as the demo reports
    them. Either way the benchmark's tasks went through lmms-eval and its report comes from its own
    samples only; the slice saves one lmms-eval start and one scoring pass per benchmark.
    """

    def alone(key: str, out: Path) -> None:
        _cli(["demo", "--out", str(out / "demo"), "--tasks", ",".join(DEMO_BENCHMARKS[key][1])], offline_base_env, out)

    def sliced(key: str, out: Path) -> None:
        whole = request.getfixturevalue("full_demo")
        tasks = set(DEMO_BENCHMARKS[key][1])
        results = out / "demo" / "results"
        results.mkdir(parents=True)
        for source in (whole.out / "results").glob("*_results.json"):
            data = json.loads(source.read_text())
            for section in ("results", "configs", "versions", "n-shot", "higher_is_better", "n-samples"):
                if isinstance(data.get(section), dict):
                    data[section] = {t: v for t, v in data[section].items() if t in tasks}
            (results / source.name).write_text(json.dumps(data))
            stamp = source.name[: -len("_results.json")]
            for task in tasks:
                samples = source.parent / f"{stamp}_samples_{task}.jsonl"
                if samples.exists():
                    shutil.copy(samples, results / samples.name)
        # plots (~7 CPU s of matplotlib a report) only where a test reads them: MMSI-Bench's slice
        # (tests/reports/test_demo_report.py); the whole demo's report draws every benchmark's
        plots = [] if key == "mmsi" else ["--no-plots"]
        _cli(["report", str(results), "--out", str(out / "demo" / "report"), "--quiet", *plots], offline_base_env, out)
        (out / "stdout").write_text(whole.stdout + (out / "stdout").read_text())  # the demo's table, then the report

    def run(key: str) -> DemoRun:
        build = sliced if request.config.stash.get(_WHOLE_DEMO, False) else alone
        return _demo_run(build_once(shared_dir, f"demo_{key}", lambda out: build(key, out)))

    return run


@dataclass
class Run:
    results: dict
    samples: dict[str, list[dict]]
    stdout: str
    stderr: str
    out: Path
    returncode: int = 0

    def metric(self, task: str, name: str):
        return self.results["results"][task][f"{name},none"]


def _files_with_times(out: Path) -> dict[Path, tuple[int, int]]:
    """Every results and samples file under ``out``, with its modification time and size (what a run changes)."""
    found = {}
    for pattern in ("*_results.json", "*_samples_*.jsonl"):
        for f in out.rglob(pattern):
            stat = f.stat()
            found[f] = (stat.st_mtime_ns, stat.st_size)
    return found


def run_lmms_eval(args: list[str], env: dict[str, str], out: Path, expect_results: bool = True,
                  real: bool = False) -> Run:  # fmt: skip
    """Run ``python -m lmms_eval``; success is judged by the files it wrote, not its exit code.

    lmms-eval 0.7.3 exits 0 even when a task is missing or evaluation raises. The run is a fork of this
    worker's pre-warmed process (:mod:`forkserver`: torch already imported, the rest as a new process
    does), or a real subprocess when ``real`` (one run of all five benchmarks) or when the fork would differ.
    """
    cmd = [*args, "--output_path", str(out), "--log_samples"]
    before = _files_with_times(out)  # several runs may write into one folder: this run's files are those it wrote
    proc = forkserver.run_module("lmms_eval", cmd, env, cwd=out.parent, timeout=900, real=real)
    written = sorted(f for f, stamp in _files_with_times(out).items() if before.get(f) != stamp)
    results_files = [f for f in written if f.name.endswith("_results.json")]
    if not expect_results:
        assert not results_files, f"expected no results, got {results_files}"
        return Run({}, {}, proc.stdout, proc.stderr, out, proc.returncode)
    assert results_files, f"lmms-eval wrote no results (rc={proc.returncode}):\n{proc.stderr[-6000:]}"
    newest = results_files[-1]  # a --config of several runs writes one each: the last, by name (their start order)
    results = json.loads(newest.read_text())
    stamp = newest.name[: -len("_results.json")]
    samples = {}
    for f in newest.parent.glob(f"{glob.escape(stamp)}_samples_*.jsonl"):
        task = f.name[len(f"{stamp}_samples_") : -len(".jsonl")]
        samples[task] = sorted((json.loads(line) for line in f.read_text().splitlines()), key=lambda s: s["doc_id"])
    return Run(results, samples, proc.stdout, proc.stderr, out, proc.returncode)


@pytest.fixture(scope="session")
def lmms_eval_into(offline_env) -> Callable[..., Run]:
    """``(out, *args, env=None)`` -> :class:`Run`: the ``lmms_eval`` runner for module-scoped fixtures
    (a run several tests share), writing into ``out``."""

    def _run(out: Path, *args: str, env: dict[str, str] | None = None, real: bool = False) -> Run:
        return run_lmms_eval(list(args), {**offline_env, **(env or {})}, out, real=real)

    return _run


@pytest.fixture(scope="session")
def lmms_eval_with_env() -> Callable[..., Run]:
    """``(env, out, *args)`` -> :class:`Run`: lmms-eval under exactly ``env`` (a test that leaves a variable
    of ``offline_env`` out, or adds its own), writing into ``out``."""

    def _run(env: dict[str, str], out: Path, *args: str, expect_results: bool = True, real: bool = False) -> Run:
        return run_lmms_eval(list(args), env, out, expect_results, real=real)

    return _run


@pytest.fixture
def lmms_eval(offline_env, tmp_path):
    counter = iter(range(1000))

    def _run(*args: str, env: dict[str, str] | None = None, expect_results: bool = True, real: bool = False) -> Run:
        out = tmp_path / f"run{next(counter)}"
        return run_lmms_eval(list(args), {**offline_env, **(env or {})}, out, expect_results, real=real)

    return _run


@dataclass
class RecordedBar:
    """What a :func:`lmms_spatial.progress.progress` bar was asked to show: total, label, count reached."""

    iterable: object = None
    total: int | None = None
    desc: str = ""
    unit: str = ""
    n: int = 0
    updates: list[int] = field(default_factory=list)  # each update(n), in order: how often the bar moved

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.n += 1

    def update(self, n: int = 1) -> None:
        self.n += n
        self.updates.append(n)

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@pytest.fixture
def progress_bars(monkeypatch) -> list[RecordedBar]:
    """Every progress bar made during the test (in order), recorded instead of drawn."""
    import lmms_spatial.progress

    bars: list[RecordedBar] = []

    def record(iterable=None, total=None, desc="", unit="", **_options) -> RecordedBar:
        bars.append(RecordedBar(iterable, total, desc, unit))
        return bars[-1]

    monkeypatch.setattr(lmms_spatial.progress, "tqdm", record)
    return bars


@pytest.fixture
def run_of_ours():
    """A run of ours in progress (lmms_spatial.run_state) for the answer store's unit tests; released after."""
    from lmms_spatial.plugin import resume
    from lmms_spatial.run_state import STATE, Run

    run = Run(["t"])
    STATE.runs.append(run)
    yield run
    resume.release(run)
    STATE.runs.remove(run)
