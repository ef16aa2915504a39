"""A pre-warmed start for the suite's ``python -m lmms_eval`` / ``python -m lmms_spatial.cli`` runs.

Each run of the CLI pays about 10 CPU-seconds of imports before lmms-eval does anything (measured on the
project's 2-core machine), 4.5 s of it torch, torchvision, numpy and PIL. Those read nothing of a test's
environment when imported, so one process per pytest worker (the *zygote*) imports them once, and each
run is a ``fork`` of it that then behaves as ``python -m MODULE ARGS`` would: the test's environment,
arguments, working folder and output files, ``sys.path[0]`` and ``PYTHONPATH`` entries, exit status
(``SystemExit``; an uncaught exception: 1; a signal: minus its number, as :mod:`subprocess` reports it),
``atexit`` functions, ``random`` and numpy reseeded from the OS. Only the hash seed is shared by the forks
of one zygote.

What stays a real process (:func:`run_module` starts one):

- a run that sets ``PYTHONHASHSEED``, or whose ``PYTHONPATH`` holds a ``sitecustomize``. The variables read when
  the interpreter or the preloaded modules start (``PYTHON*`` but ``PYTHONPATH``/``PYTHONUNBUFFERED``, ``OMP_*``,
  ``TORCH*``, ..., and ``LMMS_SPATIAL_DISABLE_HOOK``, read by our ``.pth`` start-up hook) pick the zygote: one per
  set of their values (at most three per worker), started under them;
- every run when ``LMMS_SPATIAL_TEST_FORK=0`` is set for pytest, or when the zygote is unsafe to fork (a
  thread started by the preload other than numpy's OpenBLAS pool, which is fork-safe);
- the runs a test asks to be real (``real=True``): one run of all five benchmarks
  (``tests/e2e/test_whole_runs_cli.py``), and tests of start-up, ``accelerate launch`` or a dropped capability
  start their own processes anyway. A run a test interrupts or kills midway is started in the background
  (:func:`start`): a fork where a new process would be the same run, the child of a watcher that records its exit
  status, signalled by its own pid.

Nothing from Hugging Face (``huggingface_hub``, ``datasets``, ``transformers``, ``evaluate``), lmms-eval
or lmms-spatial is imported in that *plain* zygote: they read ``HF_HOME``, ``HF_HUB_OFFLINE``, ``HF_ENDPOINT``
when imported, and tests set those per run (``tests/test_forkserver.py`` pins it). A *deep* zygote imports them
too (:data:`DEEP_PRELOAD`, ~5 CPU s a run): it is started under one run's whole environment and forks only runs
whose environment differs from it in our ``LMMS_SPATIAL_*`` variables alone (our code reads none on import,
pinned), from a folder and ``PYTHONPATH`` that shadow none of its modules. It is a fork of the plain zygote that
then takes that environment and imports the rest (:func:`_deepen`: what the plain preload imported read only the
start-up variables, which the two share), so it costs what an environment's first run would import anyway, ~5 CPU
s, not a new process's ~12: an environment's first lmms-eval run is already a deep fork (its first run of anything
else, a probe or a report that needs less, is a plain fork; its second gets the deep zygote). Up to
:data:`MAX_DEEP` per worker, the least recently used closed first.

Each zygote freezes what it imported out of the garbage collector
(``gc.freeze``): a run's ``gc.collect()`` (accelerate's, between tasks) walks only the run's own objects.

lmms-eval's task index of its own ~1,900 built-in YAMLs (``TaskManager._get_task_and_group`` on its
``tasks/`` folder: about 4 CPU-seconds of pure-Python YAML parsing per run, measured) is the same for every
run of the suite: it is made once per test run, for the first lmms-eval run, by lmms-eval's own function in a
fork that imports lmms-eval (:func:`build_task_index`, ~9 CPU-seconds; the zygote itself stays clean), kept
where every worker finds it (:data:`INDEX_FOLDER`), and every run a zygote forks gets a copy when it asks for
that folder, with the messages lmms-eval logged while indexing it (:func:`_reuse_task_index`). Every other
folder (ours, ``--include_path``) is indexed live (ours: 0.08 CPU s with libyaml, ``lmms_spatial.plugin.yaml_configs``),
and the run still starts at ``python -m lmms_eval``'s entry point and builds its tasks from the YAMLs.

A forked run's own ``python -m lmms_eval`` child (``lmms-spatial demo`` and ``bench`` start one per run, ~10 CPU s
of imports each) is a fork of that run (:func:`_nest_children`) when a new process would be the same run: the
child's environment differs from the run's only in our variables, its folder shadows nothing, nothing asks for a
new session or group, and the run is on one thread once tqdm's monitor is stopped, but for pyarrow's idle pool
workers (a run that wrote datasets in-process has them; :func:`_fork_safe_threads`). It is a real child of the run
all the same: its pid, exit status and ``wait4`` usage, its pipes or files on descriptors 0-2.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

# imported once in the zygote: expensive, and reading no variable that a test sets per run. Not pandas:
# it loads pyarrow, whose jemalloc starts a background thread (a fork must happen with one thread).
PRELOAD = ("numpy", "PIL.Image", "torch", "torchvision")
# modules that read the test's environment when imported: never in the zygote
ENV_READERS = ("huggingface_hub", "datasets", "transformers", "evaluate", "lmms_eval", "lmms_spatial", "accelerate")
# variables read at interpreter start or by the preloaded modules' import: each set of values has its zygote
_START_PREFIXES = ("PYTHON", "OMP_", "OPENBLAS_", "MKL_", "KMP_", "GOMP_", "TORCH", "PYTORCH_", "CUDA_", "LD_",
                   "MALLOC_")  # fmt: skip
_FREE = ("PYTHONPATH", "PYTHONUNBUFFERED")  # honoured in the fork (PYTHONPATH: entries after sys.path[0])
# read by our .pth start-up hook when the interpreter starts: a start-up variable like those above (a zygote started
# with the hook off has no hook, nor have its forks)
HOOK_SWITCH = "LMMS_SPATIAL_DISABLE_HOOK"
_ALWAYS_REAL = ("PYTHONHASHSEED",)
SWITCH = "LMMS_SPATIAL_TEST_FORK"  # "0": every run is a real subprocess; "plain": no deep zygote
# a *deep* zygote also imports what the runs import next (Hugging Face, lmms-eval, and ours through our start-up
# hook: ~5 CPU s a run). Those read the environment when imported, so a deep zygote serves only runs whose whole
# environment equals its own but for the variables nothing reads on import (ours: read when called, pinned by
# tests/test_forkserver.py), from a folder that shadows none of them. PYTHONPATH is the zygote's own (lmms-eval
# imports the LMMS_EVAL_PLUGINS modules on import).
DEEP_PRELOAD = ("datasets", "transformers", "accelerate", "lmms_eval.__main__", "nltk", "sklearn", "pytablewriter",
                "rich.progress")  # fmt: skip
_DEEP_FREE_PREFIXES = ("LMMS_SPATIAL_",)
# read when used, never on import: PYTHONUNBUFFERED (honoured in the fork), TOKENIZERS_PARALLELISM (read by
# tokenizers when it would start threads; `lmms-spatial bench` sets it for the lmms-eval runs it starts), and the
# test plugin's slow_guess settings but SLOW_GUESS_STORE_PAGES (tests/e2e/plugin: read when it answers, pinned by
# tests/test_forkserver.py), which each killed-run test sets to a log file of its own
_DEEP_FREE = ("PYTHONUNBUFFERED", "TOKENIZERS_PARALLELISM", "SLOW_GUESS_DELAY", "SLOW_GUESS_LOG",
              "SLOW_GUESS_HANG_AFTER")  # fmt: skip
MAX_DEEP = 5  # per worker (~1 GB each); the least recently used is closed for a new one
# pyarrow's bundled jemalloc starts a purging thread when datasets is imported (a fork must happen with one thread):
# the deep zygote switches it off for itself (memory is purged on allocation instead; no run reads this)
_NO_JEMALLOC_THREAD = {"JE_ARROW_MALLOC_CONF": "background_thread:false"}
BUILD_INDEX = "--build-task-index"  # `python -m forkserver --build-task-index FILE`: see build_task_index


@dataclass
class Done:
    """What :func:`subprocess.run` with ``capture_output=True, text=True`` gives, and whether it forked."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    forked: bool


def _start_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if (k.startswith(_START_PREFIXES) and k not in _FREE) or k == HOOK_SWITCH}


def forkable(env: dict[str, str]) -> bool:
    """Whether a run under ``env`` may be a fork (of a zygote started under the same start-up variables, our
    hook's switch among them): not when it fixes the hash seed (tests about it start processes), nor when its
    ``PYTHONPATH`` holds a ``sitecustomize``/``usercustomize`` (run at interpreter start)."""
    if any(name in env for name in _ALWAYS_REAL):
        return False
    return not any(
        (Path(p) / f"{name}.py").exists() for p in env.get("PYTHONPATH", "").split(os.pathsep) if p
        for name in ("sitecustomize", "usercustomize")
    )  # fmt: skip


def deep_key(env: dict[str, str]) -> tuple:
    """Which deep zygote may fork a run under ``env``: one started under the same value of every variable but
    ours (and ``PYTHONUNBUFFERED``, honoured in the fork)."""
    free = [k for k in env if (k.startswith(_DEEP_FREE_PREFIXES) and k != HOOK_SWITCH) or k in _DEEP_FREE]
    return tuple(sorted((k, v) for k, v in env.items() if k not in free))


def _module_name(entry: str) -> str | None:
    """The top-level module a folder entry would be imported as (``yaml.py``, ``yaml/``, ``_x.cpython-311-....so``);
    None for anything else (``pkg.egg-info``, ``README.md``)."""
    from importlib.machinery import all_suffixes

    if entry.isidentifier():
        return entry  # a package folder (a file without a suffix imports as nothing, and is not looked at)
    for suffix in sorted(all_suffixes(), key=len, reverse=True):
        if entry.endswith(suffix) and entry[: -len(suffix)].isidentifier():
            return entry[: -len(suffix)]
    return None


# ---------------------------------------------------------------- the zygote (its own process)


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _fresh_random_state() -> None:
    """Reseed what the preload seeded from the OS, as a new process would be (forks share the zygote's
    state otherwise). The hash seed stays the zygote's: tests about it start real processes."""
    import random

    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


def build_task_index(path: str) -> None:
    """Pickle lmms-eval's index of its built-in task folder to ``path``, made by its own
    ``TaskManager._get_task_and_group`` (the call ``initialize_tasks`` makes for it), with the messages
    it logged meanwhile (level, text), so that a run reusing it logs what a run indexing it would."""
    from lmms_eval import tasks
    from loguru import logger

    folder = os.path.dirname(os.path.abspath(tasks.__file__)) + "/"  # as TaskManager.initialize_tasks spells it
    logged: list[tuple[str, str]] = []
    sink = logger.add(lambda m: logged.append((m.record["level"].name, m.record["message"])), level=0)
    try:
        manager = object.__new__(tasks.TaskManager)  # only its logger and _config_is_* are used
        manager.logger = tasks.eval_logger
        index = tasks.TaskManager._get_task_and_group(manager, folder)
    finally:
        logger.remove(sink)
    with open(path + ".part", "wb") as f:
        pickle.dump({"folder": folder, "index": index, "logged": logged}, f)
    os.replace(path + ".part", path)


def _reuse_task_index(path: str) -> None:
    """In a fork: when the run imports ``lmms_eval.tasks``, wrap ``TaskManager._get_task_and_group`` so that
    the built-in folder's index is a fresh copy of the one :func:`build_task_index` made (its messages
    logged again); any other folder goes to lmms-eval's function."""

    def wrap(module) -> None:
        original = module.TaskManager._get_task_and_group

        def _get_task_and_group(self, task_dir):
            with open(path, "rb") as f:
                saved = pickle.load(f)
            if task_dir != saved["folder"]:
                return original(self, task_dir)
            for level, message in saved["logged"]:
                self.logger.log(level, message)
            return saved["index"]

        _get_task_and_group.__wrapped__ = original
        module.TaskManager._get_task_and_group = _get_task_and_group

    class Loader:
        def __init__(self, loader):
            self._loader = loader

        def create_module(self, spec):
            return self._loader.create_module(spec)

        def exec_module(self, module):
            self._loader.exec_module(module)
            wrap(module)

        def __getattr__(self, name):
            return getattr(self._loader, name)

    class Finder:
        """Answers for ``lmms_eval.tasks`` alone, with the spec the other finders give (our start-up hook's
        included, which asks every finder but itself: ``busy`` keeps that from coming back here)."""

        busy = False

        def find_spec(self, fullname, search_path, target=None):
            if fullname != "lmms_eval.tasks" or self.busy:
                return None
            self.busy = True
            try:
                for finder in sys.meta_path:
                    if finder is self or not hasattr(finder, "find_spec"):
                        continue
                    spec = finder.find_spec(fullname, search_path, target)
                    if spec is not None:
                        if spec.loader is not None:
                            spec.loader = Loader(spec.loader)
                        sys.meta_path.remove(self)
                        return spec
            finally:
                self.busy = False
            return None

        def invalidate_caches(self):
            pass

    if "lmms_eval.tasks" in sys.modules:  # a deep zygote imported it
        wrap(sys.modules["lmms_eval.tasks"])
    else:
        sys.meta_path.insert(0, Finder())


def _child(request: dict) -> int:
    """In the fork: become ``python -m MODULE ARGS`` under the request's environment, and run it, its output
    in the request's files."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    os.close(null)
    return _become(request)


def _take_environment(env: dict[str, str], imported_env: dict[str, str]) -> None:
    """``os.environ`` becomes ``env``, plus what the zygote's preload set for itself (as a new process's imports
    would)."""
    os.environ.clear()
    os.environ.update(env)
    for name, value in imported_env.items():
        os.environ.setdefault(name, value)


def _become(request: dict) -> int:
    """Run ``python -m MODULE ARGS`` in this process, on file descriptors 0-2 as they are, under the request's
    environment, folder and path, and return its exit status as the interpreter would."""
    import io
    import runpy
    import traceback

    os.chdir(request["cwd"])
    _take_environment(request["env"], request.get("imported_env", {}))
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                                   write_through=True)  # fmt: skip
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                                   errors="backslashreplace", write_through=True)  # fmt: skip
    _fresh_random_state()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    extra = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.getcwd(), *[os.path.abspath(p) for p in extra], *request["base_path"]]
    sys.argv = [request["module"], *request["args"]]  # runpy puts the module's file first, as -m does
    global _index_reused
    if request.get("task_index") and not _index_reused:  # a nested run inherits its parent's
        _reuse_task_index(request["task_index"])
        _index_reused = True
    _nest_children(request)
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 128 + signal.SIGINT
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        traceback.print_exc()
        code = 1
    try:
        import threading

        threading._shutdown()  # non-daemon threads are waited for, as at interpreter exit
    except Exception:  # noqa: BLE001
        pass
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    return code


_index_reused = False  # in a fork: the built-in task index is served (a nested run's parent did it)
# the modules a forked run may start as a child (`python -m MODULE`) that is a fork of the run itself:
# `lmms-spatial demo` and `bench` start lmms-eval as a real process of their own (~10 CPU s of imports each)
NESTED_MODULES = ("lmms_eval",)


def _fork_into(run) -> int:
    """Fork; the child calls ``run()`` and exits with the status it returns (1 if it raises), never returning
    into the caller's code; the parent gets the child's pid."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = run()
        finally:
            os._exit(code & 0xFF)
    return pid


def _threads() -> int:
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1


def _fork_safe_threads() -> bool:
    """Whether this process may fork a run: it is on one thread, or its other threads can only be pyarrow's idle
    pool workers. A run that wrote datasets in-process (``lmms-spatial bench``) has those: ``arrow::internal::
    ThreadPool`` workers waiting on their condition variable (seen with gdb), and the pool re-makes its state in
    a fork's child (``ThreadPool::ProtectAgainstFork``). Everything else keeps it a real process: a Python thread
    besides this one, an OpenMP pool (libgomp's is not fork-safe: a fork of a process that had one hung in its
    first parallel loop, seen; so only under ``OMP_NUM_THREADS=1``, which the suite's workers set, and torch on
    one thread), or more native threads than pyarrow's two pools hold (plus jemalloc's background thread)."""
    import threading

    extra = _threads() - 1
    if extra == 0:
        return True
    pyarrow, torch = sys.modules.get("pyarrow"), sys.modules.get("torch")
    if pyarrow is None or threading.active_count() != 1 or os.environ.get("OMP_NUM_THREADS") != "1":
        return False
    if torch is not None and torch.get_num_threads() != 1:
        return False
    jemalloc = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                jemalloc += f.read().strip() == "jemalloc_bg_thd"
        except OSError:  # it ended meanwhile
            continue
    return extra - jemalloc <= pyarrow.io_thread_count() + pyarrow.cpu_count()


def _module_files() -> dict[str, str]:
    """Top-level module -> its file or package folder, for every module imported here: what a run's folder or
    PYTHONPATH may shadow."""
    files = {}
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None) if "." not in name else None
        if where:
            where = os.path.dirname(where) if os.path.basename(where).startswith("__init__.") else where
            files[name] = os.path.realpath(where)
    return files


def shadowed(files: dict[str, str], env: dict[str, str], cwd: Path) -> bool:
    """Whether the run's folder or a ``PYTHONPATH`` entry holds another copy of a module in ``files`` (``python
    -m`` there would import that copy): such a run is not a fork of a process that imported them."""
    folders = [Path(cwd), *(Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    for folder in folders:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            name = _module_name(entry)
            if name in files and os.path.realpath(folder / entry) != files[name]:
                return True
    return False


def _stop_tqdm_monitors() -> None:
    """Stop tqdm's monitor threads (one per bar class, started by the first bar: a run that built datasets has
    one), so that the process is on one thread when it forks; the next bar starts a new one, as tqdm does
    after a monitor exits."""
    tqdm_monitor = sys.modules.get("tqdm._monitor")
    if tqdm_monitor is None:
        return
    import threading
    import time

    before = _threads()
    stopped = 0
    for thread in threading.enumerate():
        if isinstance(thread, tqdm_monitor.TMonitor):
            thread.exit()  # joins it: its Python side has ended
            stopped += 1
    # its native thread leaves /proc/self/task a moment after the join returns (seen under load: a child that would
    # have forked started as a real process): wait for it, at most 1 s
    deadline = time.monotonic() + 1
    while stopped and _threads() > before - stopped and time.monotonic() < deadline:
        time.sleep(0.001)


def _nested_request(call: dict, started_under: tuple, parent: dict) -> dict | None:
    """The request for a child ``Popen`` would start, when a fork of this process is that same run: ``python
    -m lmms_eval`` (:data:`NESTED_MODULES`) with this interpreter, an environment equal to the one this process
    imported under but for our variables, a folder that shadows nothing imported here, this process on one
    thread, and nothing only a new process gives (a session or group, ``preexec_fn``, ids, ``pass_fds``);
    None otherwise (Popen starts a real process)."""
    args = call["args"]
    if call["shell"] or call["executable"] is not None or not isinstance(args, (list, tuple)):
        return None
    if len(args) < 3 or not all(isinstance(a, str) for a in args):
        return None
    if args[0] != sys.executable or args[1] != "-m" or args[2] not in parent.get("nest", NESTED_MODULES):
        return None
    if call["preexec_fn"] is not None or call["start_new_session"] or call["pass_fds"]:
        return None
    if call.get("process_group", -1) not in (-1, None) or call["umask"] >= 0:
        return None
    if any(call[k] is not None for k in ("uid", "gid", "gids")):
        return None
    env = dict(os.environ if call["env"] is None else call["env"])
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return None
    cwd = os.path.abspath(os.fspath(call["cwd"])) if call["cwd"] is not None else os.getcwd()
    if not forkable(env) or deep_key(env) != started_under or shadowed(_module_files(), env, Path(cwd)):
        return None
    _stop_tqdm_monitors()
    if not _fork_safe_threads():
        return None
    keep = ("base_path", "imported_env", "task_index", "nest")
    return {"module": args[2], "args": list(args[3:]), "env": env, "cwd": cwd, **{k: parent.get(k) for k in keep}}


def _nest_children(request: dict) -> None:
    """In a fork: the run's own ``python -m lmms_eval`` children are forks of it where that is the same run
    (:func:`_nested_request`), as :func:`run_module` makes the test's runs forks of a zygote. The child is a
    real child process of the run (its pid, its pipes or files on descriptors 0-2, its exit status and
    ``wait4`` usage), so ``subprocess.run``/``Popen`` and the caller's reading of it work unchanged."""
    import atexit
    import inspect
    import subprocess

    original = subprocess.Popen._execute_child
    signature = inspect.signature(original)
    imported = {k: v for k, v in request.get("imported_env", {}).items() if k not in request["env"]}
    started_under = deep_key({**request["env"], **imported})
    ends = ("p2cread", "p2cwrite", "c2pread", "c2pwrite", "errread", "errwrite")

    def _execute_child(self, *args, **kwargs):
        call = signature.bind(self, *args, **kwargs).arguments
        child = _nested_request(call, started_under, request)
        if child is None:
            return original(self, *args, **kwargs)
        p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite = (call[k] for k in ends)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()

        def become() -> int:
            for fd, own in ((0, p2cread), (1, c2pwrite), (2, errwrite)):
                if own != -1 and own != fd:
                    os.dup2(own, fd)
            for own in {p2cwrite, c2pread, errread} - {-1, 0, 1, 2}:  # the parent's ends of the pipes
                os.close(own)
            subprocess.Popen._execute_child = original
            atexit._clear()  # the parent's exit functions are the parent's
            return _become(child)

        self.pid = _fork_into(become)
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)

    subprocess.Popen._execute_child = _execute_child


def serve(deep: bool = False, preload: tuple[str, ...] | None = None, start: dict[str, str] | None = None) -> None:
    """The zygote: preload (``deep``: :data:`DEEP_PRELOAD` too), say whether forking is safe, then fork one child
    per request line on stdin. A deep zygote forked from a plain one (:func:`_deepen`) preloads the rest alone;
    ``start`` is then the environment it was started under."""

    # numpy first: OpenBLAS may start its pool on import (OMP_NUM_THREADS unset), and that pool is fork-safe
    # (it stops itself around fork(), pthread_atfork). Any thread started after it (torch's OpenMP pool,
    # pyarrow's jemalloc) is not: then the zygote says it is unsafe and every run is a real process.
    start = dict(os.environ) if start is None else start
    if preload is None:
        preload = PRELOAD + (DEEP_PRELOAD if deep else ())
        # threads counted from after numpy's import (its OpenBLAS pool is fork-safe); a fork starts on one thread
        baseline = 1
    else:
        baseline = 0
    counts = [_threads()]
    failed = []
    for name in preload:
        try:
            __import__(name)
        except ImportError:
            pass
        except Exception as exc:  # noqa: BLE001 - a run would meet it on its own import: it is not forked from here
            failed.append(f"{name}: {exc!r}")
        counts.append(_threads())
    started = counts[-1] - counts[baseline]
    import gc

    gc.freeze()  # what the preload made is never collected: each run's gc.collect() walks only its own objects
    leaked = [] if deep else sorted({m.split(".")[0] for m in sys.modules} & set(ENV_READERS))
    # sys.path[0] is this script's folder: each child puts its cwd there instead, then its PYTHONPATH entries
    own = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    base_path = [p for p in sys.path[1:] if os.path.abspath(p) not in own]
    # variables the preload set for itself (torch: TORCHINDUCTOR_CACHE_DIR), as the run's own imports would have
    imported_env = {k: v for k, v in os.environ.items() if start.get(k) != v and k not in _NO_JEMALLOC_THREAD}
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    files = _module_files()
    hello = {"threads_started": started, "env_readers": leaked, "modules": sorted(sys.modules), "files": files,
             "failed": failed}  # fmt: skip
    replies.write(json.dumps(hello) + "\n")
    waiters: set[int] = set()  # the watchers of background runs (start()), reaped once they end
    deepened: set[int] = set()  # the deep zygotes forked from this one (_deepen), waited for before it ends
    for line in sys.stdin:
        request = json.loads(line)
        request["base_path"] = base_path
        request["imported_env"] = imported_env
        sys.stdout.flush()
        sys.stderr.flush()
        _reap(waiters)
        _reap(deepened)
        if "deepen" in request:  # a deep zygote forked from this one: it serves on its own; reaped once it ends
            pid = _fork_into(partial(_deepen, request["deepen"], imported_env, replies))
            deepened.add(pid)
            replies.write(json.dumps({"pid": pid}) + "\n")
            continue
        background = bool(request.get("status"))
        pid = _fork_into(partial(_watch, request, replies) if background else partial(_child, request))
        if background:  # a background run: its watcher says its pid; the zygote serves the next request
            waiters.add(pid)
            continue
        replies.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
    for child in deepened:  # each ends when the test side closes its socket (close() closes them first)
        os.waitpid(child, 0)


def _reap(children: set[int]) -> None:
    """Reap those of ``children`` that have ended, and forget them."""
    for child in list(children):
        if os.waitpid(child, os.WNOHANG)[0]:
            children.discard(child)


def _deepen(deepen: dict, imported_env: dict[str, str], replies) -> int:
    """A deep zygote forked from a plain one (its child, reaped by it: its usage counts in the test run's): it
    connects to the test's socket, reads requests from it and replies on it (descriptors 0 and 1, as a started
    zygote has its pipes), and becomes what a deep zygote started under ``deepen["env"]`` is: that
    environment, with what the plain preload set for itself; its ``PYTHONPATH`` entries after ``sys.path[0]``;
    then :data:`DEEP_PRELOAD`. The plain preload read none of the run's variables but the start-up ones, which
    the two share (pinned by tests/test_forkserver.py), so the result is the zygote a new process would be."""
    import io

    replies.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(deepen["socket"])
    for fd in (0, 1):
        os.dup2(sock.fileno(), fd)
    sock.close()
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                                   line_buffering=True)  # fmt: skip
    env = deepen["env"]
    _take_environment(env, imported_env)
    extra = [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = list(dict.fromkeys([sys.path[0], *extra, *sys.path[1:]]))  # as site.removeduppaths leaves it
    serve(deep=True, preload=DEEP_PRELOAD, start=env)
    return 0


def _watch(request: dict, replies) -> int:
    """A background run's watcher (a fork of the zygote): fork the run, say its pid, wait for it and leave its exit
    status in the request's status file (written whole: the test polls for it), as Popen.wait would give it."""
    pid = _fork_into(partial(_child, request))
    replies.write(json.dumps({"pid": pid}) + "\n")
    replies.flush()
    _, status = os.waitpid(pid, 0)
    path = request["status"]
    with open(path + ".part", "w") as handle:
        handle.write(str(os.waitstatus_to_exitcode(status)))
    os.replace(path + ".part", path)
    return 0


# ---------------------------------------------------------------- the test side


class Zygote:
    """One zygote process, started on first use; used by one pytest worker at a time (one run at a time)."""

    def __init__(self, env: dict[str, str], deep: bool = False, parent: Zygote | None = None):
        """Start a zygote under ``env``; a deep one is a fork of ``parent`` (a safe plain zygote started under the
        same start-up variables) where one is given: ~5 CPU s of imports instead of a new process's ~12."""
        # each child of a plain zygote adds its own PYTHONPATH entries; a deep one imports from them
        self.env = dict(env) if deep else {k: v for k, v in env.items() if k != "PYTHONPATH"}
        self.deep = deep
        own = {**_NO_JEMALLOC_THREAD, **self.env} if deep else self.env
        self.proc: subprocess.Popen | None = None
        self.forked_from = parent if deep else None
        self._socket: socket.socket | None = None  # a forked deep zygote's connection
        self._closed = False
        if self.forked_from is not None:
            self._requests, self._replies = self._fork_from(parent, own)
        else:
            self.proc = subprocess.Popen([sys.executable, __file__, *(["--deep"] if deep else [])], env=own,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                         cwd=os.path.dirname(__file__))  # fmt: skip
            self._requests, self._replies = self.proc.stdin, self.proc.stdout
        hello = json.loads(self._replies.readline() or "{}")
        self.threaded = hello.get("threads_started") != 0
        self.modules = set(hello.get("modules", ()))
        self.files: dict[str, str] = hello.get("files", {})
        self.safe = (
            hello.get("threads_started") == 0 and not hello.get("env_readers", True) and not hello.get("failed", True)
        )
        self.task_index: str | None = None  # made for the first lmms-eval run (build_task_index); None: live
        self._scratch = None

    def _fork_from(self, parent: Zygote, env: dict[str, str]):
        """Ask ``parent`` for a deep zygote of its own (:func:`_deepen`) that connects to a socket of ours: its
        request and reply streams. An empty reply stream (no hello: not safe) if it never connects."""
        import tempfile

        with tempfile.TemporaryDirectory(prefix="zygote-") as folder, \
                socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:  # fmt: skip
            path = os.path.join(folder, "socket")
            listener.bind(path)
            listener.listen(1)
            listener.settimeout(300)
            parent._requests.write(json.dumps({"deepen": {"env": env, "socket": path}}) + "\n")
            parent._requests.flush()
            parent._reply()  # the deep zygote's pid: it is connecting
            try:
                self._socket, _ = listener.accept()
            except OSError:  # it failed before connecting
                return open(os.devnull, "w"), open(os.devnull)
        self._socket.settimeout(None)
        requests = self._socket.makefile("w", encoding="utf-8", buffering=1)
        return requests, self._socket.makefile("r", encoding="utf-8")

    def task_index_file(self, timeout: float) -> str | None:
        """The built-in task index file: made once per test run by a fork of the first zygote that asks (in
        :data:`INDEX_FOLDER`, shared by every worker, under a file lock; without it, once per zygote). On
        failure every run indexes live, as lmms-eval does, and the reason is printed."""
        if self._scratch is None:
            import tempfile

            from filelock import FileLock

            self._scratch = tempfile.TemporaryDirectory(prefix="zygote-index-")
            scratch = Path(self._scratch.name)
            path = str(Path(INDEX_FOLDER or scratch) / "lmms_eval_task_index.pickle")
            with FileLock(path + ".lock"):
                code, stderr = 0, ""
                if not os.path.exists(path):
                    here = os.path.dirname(os.path.abspath(__file__))
                    request = {"module": "forkserver", "args": [BUILD_INDEX, path], "env": self.env, "cwd": here}
                    code, _, stderr = self._run(request, scratch, timeout)
            if code == 0 and os.path.exists(path):
                self.task_index = path
            else:
                print(f"forkserver: lmms-eval's task index not shared (status {code}):\n{stderr[-2000:]}",
                      file=sys.stderr)  # fmt: skip
        return self.task_index

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        if self._closed or self._socket is None:
            return False
        ready, _, _ = select.select([self._socket], [], [], 0)  # between runs a live one says nothing
        if ready and not self._socket.recv(1, socket.MSG_PEEK):
            self._closed = True  # it ended (its end of the socket is closed)
        return not self._closed

    def shadows(self, env: dict[str, str], cwd: Path) -> bool:
        """Whether the run's folder or a ``PYTHONPATH`` entry holds another copy of a module this zygote
        imported (:func:`shadowed`): such a run is not forked from it."""
        return shadowed(self.files, env, cwd)

    def run(self, module: str, args: list[str], env: dict[str, str], cwd: Path, scratch: Path,
            timeout: float, nest: tuple[str, ...] = NESTED_MODULES) -> tuple[int, str, str]:  # fmt: skip
        return self._run(self._request(module, args, env, cwd, timeout, nest), scratch, timeout)

    def _request(self, module: str, args: list[str], env: dict[str, str], cwd: Path, timeout: float,
                 nest: tuple[str, ...]) -> dict:  # fmt: skip
        # the task index is made for the first lmms-eval run, ours or one our CLI starts (demo, bench: nested forks
        # of the run); a zygote that only runs `lmms-spatial report` never pays for it
        index = self.task_index_file(timeout) if starts_lmms_eval(module, args) else self.task_index
        return {"module": module, "args": args, "env": env, "cwd": str(cwd), "task_index": index, "nest": nest}

    def _run(self, request: dict, scratch: Path, timeout: float) -> tuple[int, str, str]:
        out, err = scratch / "stdout", scratch / "stderr"
        module, args = request["module"], request["args"]
        request = {**request, "stdout": str(out), "stderr": str(err)}
        self._requests.write(json.dumps(request) + "\n")
        self._requests.flush()
        pid = self._reply()["pid"]
        ready, _, _ = select.select([self._replies], [], [], timeout)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        code = self._reply()["returncode"]
        stdout, stderr = (p.read_text(encoding="utf-8", errors="replace") for p in (out, err))
        if not ready:
            raise subprocess.TimeoutExpired([module, *args], timeout, stdout, stderr)
        return code, stdout, stderr

    def start(self, module: str, args: list[str], env: dict[str, str], cwd: Path, scratch: Path,
              timeout: float) -> int:  # fmt: skip
        """Fork a run in the background (:func:`start`): its pid; its exit status lands in ``scratch/status``."""
        request = {**self._request(module, args, env, cwd, timeout, NESTED_MODULES),
                   **{name: str(scratch / name) for name in ("stdout", "stderr", "status")}}  # fmt: skip
        self._requests.write(json.dumps(request) + "\n")
        self._requests.flush()
        return self._reply()["pid"]

    def _reply(self) -> dict:
        line = self._replies.readline()
        if not line:
            status = self.proc.wait() if self.proc is not None else "unknown (a fork of a plain zygote)"
            raise RuntimeError(f"the test zygote (tests/forkserver.py) ended with status {status}")
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None and self.alive():
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        elif self.proc is None and not self._closed:  # it ends on the end of its request stream
            self._closed = True
            for stream in (self._requests, self._replies):
                stream.close()
            if self._socket is not None:
                self._socket.close()
        if self._scratch is not None:
            self._scratch.cleanup()


_zygotes: dict[tuple, Zygote] = {}  # in the order of last use
INDEX_FOLDER: Path | None = None  # where the built-in task index is kept for every worker (tests/conftest.py)
MAX_ZYGOTES = 3  # plain ones per worker, in the order of last use: one per start-up environment (usually one)


_deep: dict[tuple, Zygote] = {}  # in the order of last use
_threaded: set[tuple] = set()  # start-up environments whose deep preload starts a thread: no deep zygote for them
_asked: set[tuple] = set()  # deep keys (deep_key) of the runs asked for so far


def starts_lmms_eval(module: str, args: list[str]) -> bool:
    """Whether ``python -m MODULE ARGS`` runs lmms-eval: itself, or our CLI's demo and bench (nested forks of it)."""
    return module == "lmms_eval" or (module == "lmms_spatial.cli" and args[:1] in (["demo"], ["bench"]))


def zygote(env: dict[str, str], cwd: Path | None = None, eager: bool = False) -> Zygote | None:
    """This worker's zygote for runs under ``env`` in ``cwd``, or None where forking is off: a deep one
    (:data:`DEEP_PRELOAD`) started under ``env``, unless the run's folder or PYTHONPATH shadows what it
    imported; else a plain one (started on first need, under ``env``: what it preloads reads only the
    start-up variables, which every run it forks shares). A deep zygote is a fork of the plain one that costs
    what a run importing lmms-eval would import anyway (~5 CPU s), so it is made for an environment's first run
    when that run starts lmms-eval (``eager``), else for its second: a run that needs less (a probe, a report)
    is a plain fork."""
    switch = os.environ.get(SWITCH, "").strip()
    if switch == "0" or not hasattr(os, "fork"):
        return None
    start = tuple(sorted(_start_env(env).items()))
    plain = _zygotes.pop(start, None)
    if plain is None or not plain.alive():
        while len(_zygotes) >= MAX_ZYGOTES:  # the least recently used is closed, after the deep ones forked from it
            oldest = _zygotes.pop(next(iter(_zygotes)))
            for forked in [k for k, server in _deep.items() if server.forked_from is oldest]:
                _deep.pop(forked).close()
            oldest.close()
        plain = Zygote(env)
    _zygotes[start] = plain
    key = deep_key(env)
    again = key in _asked  # every key of _deep was asked for before
    _asked.add(key)
    if cwd is not None and switch != "plain" and start not in _threaded and plain.safe and (eager or again):
        server = _deep.pop(key, None)
        if server is None or not server.alive():
            while len(_deep) >= MAX_DEEP:
                _deep.pop(next(iter(_deep))).close()
            server = Zygote(env, deep=True, parent=plain)
            if server.threaded:
                _threaded.add(start)
        _deep[key] = server
        if server.safe and not server.shadows(env, cwd):
            return server
    return plain if plain.safe and (cwd is None or not plain.shadows(env, cwd)) else None


def close() -> None:
    for server in [*_deep.values(), *_zygotes.values()]:  # a plain zygote waits for the deep ones forked from it
        server.close()


_runs = 0


def run_module(module: str, args: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 900,
               real: bool = False) -> Done:  # fmt: skip
    """``python -m MODULE ARGS`` under ``env`` in ``cwd``: a fork of this worker's zygote where that is
    the same run (see the module docstring), a real subprocess otherwise or when ``real``."""
    global _runs
    cwd = Path(cwd or os.getcwd())
    cmd = [sys.executable, "-m", module, *args]
    server = None if real or not forkable(env) else zygote(env, cwd, eager=starts_lmms_eval(module, args))
    if server is not None:
        import tempfile

        _runs += 1
        with tempfile.TemporaryDirectory(prefix=f"fork{_runs}-") as scratch:
            code, stdout, stderr = server.run(module, args, env, cwd, Path(scratch), timeout)
        return Done(cmd, code, stdout, stderr, forked=True)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    return Done(cmd, proc.returncode, proc.stdout, proc.stderr, forked=False)


class Started:
    """A run started in the background (:func:`start`), used as a :class:`subprocess.Popen` of
    ``python -m MODULE ARGS`` would be: ``pid``, ``poll``, ``wait``, ``send_signal``, ``communicate`` (stdout and
    stderr as text, read from files once it has ended: a run that logs much never blocks on a full pipe),
    ``returncode`` as Popen gives it (minus the signal's number for a run a signal ended); ``forked`` says which."""

    def __init__(self, args: list[str], scratch, pid: int | None = None, proc: subprocess.Popen | None = None):
        self.args, self._scratch, self._proc, self.returncode = args, scratch, proc, None
        self._folder = Path(scratch.name)
        self.pid = proc.pid if proc is not None else pid
        self.forked = proc is None

    def poll(self) -> int | None:
        if self.returncode is None:
            if self._proc is not None:
                self.returncode = self._proc.poll()
            elif (self._folder / "status").exists():
                self.returncode = int((self._folder / "status").read_text())
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return tuple(
            (self._folder / name).read_text(encoding="utf-8", errors="replace") for name in ("stdout", "stderr")
        )


def start(module: str, args: list[str], env: dict[str, str], cwd: Path, timeout: float = 900) -> Started:
    """``python -m MODULE ARGS`` under ``env`` in ``cwd``, started and left running: a fork of this worker's zygote
    where :func:`run_module` would fork it (a child of a watcher process that records its exit status), else a real
    process (SIGINT at its default, as a shell starts it). ``timeout`` bounds only the wait for the shared task
    index (the first lmms-eval run of a test run makes it); the caller ends the run or waits for it."""
    import tempfile

    global _runs
    _runs += 1
    cmd = [sys.executable, "-m", module, *args]
    scratch = tempfile.TemporaryDirectory(prefix=f"start{_runs}-")
    folder = Path(scratch.name)
    server = zygote(env, Path(cwd), eager=starts_lmms_eval(module, args)) if forkable(env) else None
    if server is not None:
        return Started(cmd, scratch, pid=server.start(module, args, env, Path(cwd), folder, timeout))
    with open(folder / "stdout", "wb") as out, open(folder / "stderr", "wb") as err:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    return Started(cmd, scratch, proc=proc)


if __name__ == "__main__":
    if sys.argv[1:2] == [BUILD_INDEX]:
        build_task_index(sys.argv[2])
    else:
        serve(deep=sys.argv[1:2] == ["--deep"])
