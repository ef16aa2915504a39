"""The suite's pre-warmed CLI start (tests/forkserver.py) runs a fork as the real ``python -m`` would run it.

If the zygote imported a module that reads the environment when imported (Hugging Face, lmms-eval, ours),
every forked run would see the zygote's ``HF_HOME``/``HF_HUB_OFFLINE`` instead of its test's: the probe below
reads them through ``huggingface_hub.constants`` in two runs with different values.
"""

from __future__ import annotations

import os
import textwrap

import forkserver
import pytest

PROBE = textwrap.dedent(
    """
    import json, os, sys
    import huggingface_hub.constants as hub
    print(json.dumps({"hf_home": hub.HF_HOME, "offline": hub.HF_HUB_OFFLINE, "cwd": os.getcwd(),
                      "argv": sys.argv[1:], "path0": sys.path[0], "main": __name__,
                      "hook": any(type(f).__name__ == "_LmmsEvalFinder" for f in sys.meta_path)}))
    print("to stderr", file=sys.stderr)
    if "--fail" in sys.argv:
        raise RuntimeError("probe failed")
    sys.exit(int(sys.argv[1]))
    """
)


@pytest.fixture(scope="module")
def zygote():
    # a zygote of its own (OMP_NUM_THREADS=1 as under the suite's xdist workers), closed after these tests
    server = forkserver.Zygote({**os.environ, "OMP_NUM_THREADS": "1"})
    yield server
    server.close()


@pytest.mark.slow
def test_zygote_preloads_torch_but_nothing_that_reads_a_tests_environment(zygote):
    assert zygote.safe
    assert {"torch", "torchvision", "numpy"} <= zygote.modules
    assert not {m.split(".")[0] for m in zygote.modules} & {"huggingface_hub", "datasets", "transformers",
                                                            "evaluate", "lmms_eval", "lmms_spatial"}  # fmt: skip


@pytest.mark.slow
def test_each_forked_run_sees_its_own_environment_arguments_folder_and_exit_status(zygote, tmp_path):
    import json

    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "fork_probe.py").write_text(PROBE)
    seen = []
    for n, offline in ((1, "1"), (2, "0")):
        cwd = tmp_path / f"cwd{n}"
        cwd.mkdir()
        env = {**zygote.env, "HF_HOME": str(tmp_path / f"hf{n}"), "HF_HUB_OFFLINE": offline,
               "PYTHONPATH": str(tmp_path / "mods")}  # fmt: skip
        code, stdout, stderr = zygote.run("fork_probe", [str(n + 2)], env, cwd, cwd, timeout=300)
        assert (code, stderr) == (n + 2, "to stderr\n")
        seen.append(json.loads(stdout))
    assert [s["hf_home"] for s in seen] == [str(tmp_path / "hf1"), str(tmp_path / "hf2")]
    assert [s["offline"] for s in seen] == [True, False]
    assert [s["cwd"] for s in seen] == [str(tmp_path / "cwd1"), str(tmp_path / "cwd2")]
    assert [s["argv"] for s in seen] == [["3"], ["4"]]
    assert [s["path0"] for s in seen] == [s["cwd"] for s in seen]  # python -m puts the working folder first
    assert all(s["main"] == "__main__" and s["hook"] for s in seen)  # run as __main__, our start-up hook in place

    env = {**zygote.env, "PYTHONPATH": str(tmp_path / "mods")}
    code, stdout, stderr = zygote.run("fork_probe", ["0", "--fail"], env, tmp_path, tmp_path, timeout=300)
    assert code == 1 and stderr.rstrip().endswith("RuntimeError: probe failed")


WAITER = textwrap.dedent(
    """
    import os, sys, time
    print(os.getpid(), flush=True)
    print("waiting", file=sys.stderr, flush=True)
    try:
        time.sleep(600)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    """
)


@pytest.mark.slow
def test_a_background_run_is_signalled_by_its_pid_while_the_zygote_serves_other_runs(zygote, tmp_path, monkeypatch):
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "waiter.py").write_text(WAITER)
    (tmp_path / "mods" / "fork_probe.py").write_text(PROBE)
    env = {**zygote.env, "PYTHONPATH": str(tmp_path / "mods")}
    monkeypatch.setattr(forkserver, "zygote", lambda env, cwd=None, eager=False: zygote)  # this module's zygote
    first, second = (forkserver.start("waiter", [], env, cwd=tmp_path) for _ in range(2))
    assert first.forked and second.forked and first.pid != second.pid
    # the zygote is not waiting on them: it forks a run to its end meanwhile
    code, _, _ = zygote.run("fork_probe", ["7"], env, tmp_path, tmp_path, timeout=300)
    assert code == 7 and first.poll() is None and second.poll() is None
    import time

    for run in (first, second):  # its SIGINT handler is in place once it prints
        deadline = time.monotonic() + 120
        while "waiting" not in (run._folder / "stderr").read_text():
            assert time.monotonic() < deadline, "the background run never started"
            time.sleep(0.02)
    first.send_signal(forkserver.signal.SIGINT)
    second.send_signal(forkserver.signal.SIGKILL)
    assert first.communicate(timeout=60) == (f"{first.pid}\n", "waiting\ninterrupted\n")  # the pid is the run's
    assert first.returncode == 130
    assert second.wait(timeout=60) == -forkserver.signal.SIGKILL and second.communicate()[1] == "waiting\n"


def test_a_run_that_fixes_the_hash_seed_is_a_real_process_and_one_with_the_hook_off_a_fork_of_its_own(tmp_path):
    base = {"PATH": "/bin", "OMP_NUM_THREADS": "1", "HF_HOME": "/a"}
    assert forkserver.forkable({**base, "LMMS_SPATIAL_JUDGE": "none", "PYTHONPATH": str(tmp_path)})
    assert not forkserver.forkable({**base, "PYTHONHASHSEED": "0"})
    off = {**base, "LMMS_SPATIAL_DISABLE_HOOK": "1"}  # read at interpreter start: its own zygotes, plain and deep
    assert forkserver.forkable(off)
    assert forkserver._start_env(off) == {"OMP_NUM_THREADS": "1", "LMMS_SPATIAL_DISABLE_HOOK": "1"}
    assert forkserver.deep_key(off) != forkserver.deep_key(base)
    assert forkserver.deep_key({**base, "LMMS_SPATIAL_JUDGE": "none"}) == forkserver.deep_key(base)
    (tmp_path / "sitecustomize.py").write_text("")
    assert not forkserver.forkable({**base, "PYTHONPATH": str(tmp_path)})


def test_runs_share_a_zygote_only_with_the_same_start_up_variables(monkeypatch):
    started = []
    monkeypatch.setattr(forkserver, "_zygotes", {})
    monkeypatch.setattr(forkserver, "Zygote", lambda env: started.append(env) or _Alive())
    monkeypatch.delenv(forkserver.SWITCH, raising=False)
    one = forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/a", "LMMS_SPATIAL_JUDGE": "x"})
    same = forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/b", "PYTHONPATH": "/p"})
    other = forkserver.zygote({"OMP_NUM_THREADS": "2", "HF_HOME": "/a"})
    off = forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/a", "LMMS_SPATIAL_DISABLE_HOOK": "1"})
    assert one is same and len({id(one), id(other), id(off)}) == 3
    assert [(env["OMP_NUM_THREADS"], "LMMS_SPATIAL_DISABLE_HOOK" in env) for env in started] == [
        ("1", False), ("2", False), ("1", True)]  # fmt: skip


def test_a_fourth_start_up_environment_closes_the_least_recently_used_plain_zygote_after_its_deep_ones(monkeypatch):
    closed = []

    class Server(_Alive):
        threaded = False

        def __init__(self, env, deep=False, parent=None):
            self.name = ("deep " if deep else "plain ") + env["OMP_NUM_THREADS"]
            self.deep, self.forked_from = deep, parent

        def shadows(self, env, cwd):
            return False

        def close(self):  # a plain zygote waits for the deep ones forked from it: they are closed first
            closed.append(self.name)

    monkeypatch.setattr(forkserver, "_deep", {})
    monkeypatch.setattr(forkserver, "_zygotes", {})
    monkeypatch.setattr(forkserver, "_asked", set())
    monkeypatch.setattr(forkserver, "Zygote", Server)
    monkeypatch.delenv(forkserver.SWITCH, raising=False)
    here = forkserver.Path(".")
    for threads in ("1", "2", "3", "1"):  # "1" used again: "2" is now the least recently used
        forkserver.zygote({"OMP_NUM_THREADS": threads, "HF_HOME": "/a"}, here, eager=True)
    assert closed == []
    forkserver.zygote({"OMP_NUM_THREADS": "4", "HF_HOME": "/a"}, here, eager=True)
    assert closed == ["deep 2", "plain 2"]
    assert sorted(s.name for s in forkserver._zygotes.values()) == ["plain 1", "plain 3", "plain 4"]


class _Alive:
    safe = True

    def alive(self) -> bool:
        return True


@pytest.mark.slow
@pytest.mark.parametrize("hook", ["on", "off"])
def test_the_suite_s_runner_forks_and_a_real_run_prints_the_same(tmp_path, monkeypatch, hook):
    """With our start-up hook on or switched off (``LMMS_SPATIAL_DISABLE_HOOK``, the README's --include_path route,
    read when the interpreter starts), a forked run has the hook exactly where a real process has it."""
    import json

    (tmp_path / "fork_probe.py").write_text(PROBE)
    monkeypatch.delenv(forkserver.SWITCH, raising=False)
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tmp_path)}
    if hook == "off":
        env["LMMS_SPATIAL_DISABLE_HOOK"] = "1"
    forked = forkserver.run_module("fork_probe", ["5"], env, cwd=tmp_path, timeout=300)
    real = forkserver.run_module("fork_probe", ["5"], env, cwd=tmp_path, timeout=300, real=True)
    assert (forked.forked, real.forked) == (True, False)
    assert (forked.returncode, forked.stderr) == (real.returncode, real.stderr) == (5, "to stderr\n")
    assert json.loads(forked.stdout) == json.loads(real.stdout)
    assert json.loads(real.stdout)["hf_home"] == str(tmp_path / "hf")
    assert json.loads(real.stdout)["hook"] is (hook == "on")


INDEX_PROBE = textwrap.dedent(
    """
    import json, sys
    from loguru import logger
    logged = []
    logger.add(lambda m: logged.append([m.record["level"].name, m.record["message"]]), level=0)
    from lmms_eval.tasks import TaskManager
    manager = TaskManager(include_path=sys.argv[1])
    print(json.dumps({"index": manager.task_index, "logged": logged,
                      "shared": hasattr(TaskManager._get_task_and_group, "__wrapped__")}))
    """
)


@pytest.mark.slow
def test_a_forked_run_reuses_lmms_eval_s_built_in_task_index_and_indexes_other_folders_live(zygote, tmp_path):
    """The fork's TaskManager holds the index a real process makes (lmms-eval's ~1,900 built-in YAMLs from the
    zygote's shared copy, a user's --include_path folder and ours read live) and logs the same messages."""
    import json
    import subprocess
    import sys

    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "index_probe.py").write_text(INDEX_PROBE)
    user = tmp_path / "user_tasks"
    user.mkdir()
    (user / "mine.yaml").write_text("task: my_probe_task\ntag: my_probe_tag\ndataset_path: nowhere\n")
    env = {**zygote.env, "PYTHONPATH": str(tmp_path / "mods")}
    assert zygote.task_index_file(timeout=300) is not None  # made for the first `lmms_eval` run, here at once
    forks = []
    for _ in range(2):  # two forks of one zygote: the same index and messages
        code, stdout, stderr = zygote.run("index_probe", [str(user)], env, tmp_path, tmp_path, timeout=300)
        assert code == 0, stderr[-3000:]
        forks.append(json.loads(stdout))
    forked = forks[0]
    assert forks[1] == forked
    real = subprocess.run([sys.executable, "-m", "index_probe", str(user)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert real.returncode == 0, real.stderr[-3000:]
    fresh = json.loads(real.stdout)
    assert (forked["shared"], fresh["shared"]) == (True, False)
    assert forked["index"]["my_probe_task"] == {"type": "task", "yaml_path": str(user / "mine.yaml")}
    assert forked["index"]["my_probe_tag"] == {"type": "tag", "task": ["my_probe_task"], "yaml_path": -1}
    assert forked["index"]["mme"]["yaml_path"].endswith("/lmms_eval/tasks/mme/mme.yaml")  # lmms-eval's own
    assert forked["index"]["mmsi_vanilla"]["yaml_path"] == str(
        forkserver.Path(__file__).parents[1] / "tasks" / "mmsi" / "mmsi_vanilla.yaml"
    )
    assert len(forked["index"]) == len(fresh["index"]) > 2000
    assert forked == {**fresh, "shared": True}


def _run_on_import(path):
    """The AST nodes of the module at ``path`` that run when it is imported: all but those inside a function or
    lambda body (a decorator or a default value runs on import; a body runs when called)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    deferred = {
        id(n)
        for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for part in (f.body if isinstance(f.body, list) else [f.body]) for n in ast.walk(part)
    }  # fmt: skip
    return [n for n in ast.walk(tree) if id(n) not in deferred]


def test_our_code_reads_no_variable_when_imported():
    """A deep zygote (lmms-eval and ours imported once) serves runs that differ from it only in our variables
    (``LMMS_SPATIAL_*``): right only while no module of ours reads one on import, outside a function body."""
    import ast

    root = forkserver.Path(__file__).parents[1]
    found = []
    for folder in ("lmms_spatial", "tasks", "metrics"):
        for path in sorted((root / folder).rglob("*.py")):
            found += [
                f"{path.relative_to(root)}:{n.lineno}"
                for n in _run_on_import(path)
                if isinstance(n, ast.Attribute) and n.attr in ("environ", "getenv")
            ]
    assert found == []


def test_a_deep_zygote_serves_only_runs_whose_environment_differs_from_its_own_in_our_variables(monkeypatch):
    started = []

    class Server(_Alive):
        threaded = False

        def __init__(self, env, deep=False, parent=None):
            self.deep, self.parent = deep, parent
            started.append((deep, env.get("HF_HOME")))

        def shadows(self, env, cwd):
            return False

        def close(self):  # the least recently used deep one, for a fourth
            started.append(("closed", self.deep))

    monkeypatch.setattr(forkserver, "_deep", {})
    monkeypatch.setattr(forkserver, "_zygotes", {})
    monkeypatch.setattr(forkserver, "_asked", set())
    monkeypatch.setattr(forkserver, "Zygote", Server)
    monkeypatch.setattr(forkserver, "MAX_DEEP", 3)  # three kept: the fourth below closes the least recently used
    monkeypatch.delenv(forkserver.SWITCH, raising=False)
    here = forkserver.Path(".")
    # an environment's first run that starts lmms-eval: the plain zygote of its start-up variables, and a deep one
    # forked from it
    one = forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/a", "LMMS_SPATIAL_JUDGE": "x"}, here, eager=True)
    plain = one.parent
    assert one.deep and not plain.deep and started == [(False, "/a"), (True, "/a")]
    same = forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/a", "LMMS_SPATIAL_JUDGE": "y",
                              "PYTHONUNBUFFERED": "1", "SLOW_GUESS_LOG": "/l"}, here)  # fmt: skip
    assert same is one and len(started) == 2  # ours and the free variables differ: the same deep one
    # any other first run (a probe, a report) is a plain fork; the environment's second gets a deep zygote
    assert forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/b"}, here) is plain and len(started) == 2
    other_home = forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/b"}, here)
    other_path = forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/a", "PYTHONPATH": "/p"}, here, eager=True)
    assert other_home.parent is plain and other_path.parent is plain
    pages = {"OMP_NUM_THREADS": "1", "HF_HOME": "/a", "SLOW_GUESS_STORE_PAGES": "6"}  # read on import: its own
    assert forkserver.zygote(pages, here) is plain and forkserver.zygote(pages, here).deep
    assert len({id(one), id(other_home), id(other_path)}) == 3
    assert started == [(False, "/a"), (True, "/a"), (True, "/b"), (True, "/a"), ("closed", True), (True, "/a")]
    assert forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/b"}, here) is other_home  # kept
    assert forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/a"}, eager=True) is plain  # no folder: plain
    monkeypatch.setenv(forkserver.SWITCH, "plain")
    assert forkserver.zygote({"OMP_NUM_THREADS": "1", "HF_HOME": "/a"}, here, eager=True) is plain
    assert started[-1] == (True, "/a")  # nothing more started


def test_runs_that_start_lmms_eval_are_told_from_those_that_do_not():
    assert forkserver.starts_lmms_eval("lmms_eval", ["--model", "x"])
    assert forkserver.starts_lmms_eval("lmms_spatial.cli", ["demo", "--out", "x"])
    assert forkserver.starts_lmms_eval("lmms_spatial.cli", ["bench", "--tiny"])
    assert not forkserver.starts_lmms_eval("lmms_spatial.cli", ["report", "runs"])
    assert not forkserver.starts_lmms_eval("fork_probe", ["5"])


def test_the_test_plugin_reads_only_slow_guess_store_pages_when_imported():
    """slow_guess's other variables are free in a deep zygote (forkserver._DEEP_FREE): read when it answers."""
    import ast

    plugin = forkserver.Path(__file__).parent / "e2e" / "plugin"
    read = []
    for path in sorted(plugin.rglob("*.py")):
        read += sorted({
            n.value for n in _run_on_import(path)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isupper()
        })  # fmt: skip
    assert read == ["SLOW_GUESS_STORE_PAGES"]
    assert "SLOW_GUESS_STORE_PAGES" not in forkserver._DEEP_FREE
    assert {"SLOW_GUESS_DELAY", "SLOW_GUESS_LOG", "SLOW_GUESS_HANG_AFTER"} <= set(forkserver._DEEP_FREE)


def test_a_folder_holding_another_copy_of_a_preloaded_module_is_not_forked_from_it(tmp_path):
    server = object.__new__(forkserver.Zygote)
    server.files = {"datasets": "/site-packages/datasets", "yaml": "/site-packages/yaml"}
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "run0").mkdir()
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "my_plugin.py").write_text("")
    (tmp_path / "mods" / "datasets.egg-info").mkdir()  # no module: nothing is imported from it
    (tmp_path / "mods" / "yaml.md").write_text("")
    assert not server.shadows({"PYTHONPATH": str(tmp_path / "mods")}, tmp_path / "work")
    (tmp_path / "mods" / "yaml.py").write_text("")  # `python -m` would import this yaml, not the preloaded one
    assert server.shadows({"PYTHONPATH": str(tmp_path / "mods")}, tmp_path / "work")
    (tmp_path / "work" / "datasets").mkdir()
    assert server.shadows({}, tmp_path / "work")
    assert not server.shadows({}, tmp_path / "mods" / "missing")


@pytest.mark.slow
def test_a_deep_zygote_has_lmms_eval_imported_and_each_fork_sees_its_own_variables_of_ours(tmp_path):
    """Started as a process of its own or forked from the plain zygote (how the suite gets one), a deep zygote has
    the same modules from the same files, and its forks see the same environment, path and state."""
    import json

    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "fork_probe.py").write_text(PROBE.replace(
        '"argv": sys.argv[1:],', '"argv": sys.argv[1:], "ours": os.environ.get("LMMS_SPATIAL_JUDGE"), '
        '"preloaded": "lmms_eval.evaluator" in sys.modules, "environ": dict(os.environ), "path": sys.path, '
        '"threads": len(os.listdir("/proc/self/task")), "modules": sorted(sys.modules),'))  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(tmp_path / "mods")}  # fmt: skip
    plain = forkserver.Zygote(env)
    started = forkserver.Zygote(env, deep=True)
    forked = forkserver.Zygote(env, deep=True, parent=plain)
    seen = {}
    try:
        for name, server in (("started", started), ("forked", forked)):
            assert server.safe and server.alive()
            assert {"lmms_eval", "transformers", "datasets"} <= {m.split(".")[0] for m in server.modules}
            for judge in ("none", "gpt-4o"):
                code, stdout, stderr = server.run("fork_probe", ["0"], {**env, "LMMS_SPATIAL_JUDGE": judge}, tmp_path,
                                                  tmp_path, timeout=300)  # fmt: skip
                assert (code, stderr) == (0, "to stderr\n")
                seen.setdefault(name, []).append(json.loads(stdout))
        assert forked.modules == started.modules and forked.files == started.files
    finally:
        for server in (forked, started, plain):
            server.close()
    assert not forked.alive()
    for runs in seen.values():
        assert [s["ours"] for s in runs] == ["none", "gpt-4o"]
        assert all(s["preloaded"] and s["hook"] and s["hf_home"] == str(tmp_path / "hf") for s in runs)
        assert runs[0]["path"][:2] == [str(tmp_path), str(tmp_path / "mods")] and runs[0]["threads"] == 1
    assert seen["forked"] == seen["started"]


NEST_OUTER = textwrap.dedent(
    """
    import json, os, subprocess, sys
    import tqdm

    sys.nest_outer_ran = True  # seen by a child that is a fork of this process only
    for _ in tqdm.tqdm(range(2), disable=False, mininterval=0):  # its monitor thread is started
        pass
    calls = {
        "ours_differ": ({**os.environ, "LMMS_SPATIAL_JUDGE": "none"}, {}),
        "hf_home_differs": ({**os.environ, "HF_HOME": "/nowhere"}, {}),
        "new_session": (None, {"start_new_session": True}),
    }
    seen = {"pid": os.getpid()}
    for name, (env, extra) in calls.items():
        proc = subprocess.run([sys.executable, "-m", "nest_inner", name], env=env, capture_output=True, text=True,
                              **extra)
        seen[name] = {"code": proc.returncode, "stderr": proc.stderr, **json.loads(proc.stdout)}
    print(json.dumps(seen))
    """
)
NEST_INNER = textwrap.dedent(
    """
    import json, os, sys
    print(json.dumps({"forked": hasattr(sys, "nest_outer_ran"), "ppid": os.getppid(), "argv": sys.argv[1:],
                      "judge": os.environ.get("LMMS_SPATIAL_JUDGE"), "cwd": os.getcwd()}))
    print("inner stderr", file=sys.stderr)
    sys.exit(3)
    """
)


@pytest.mark.slow
def test_a_forked_run_s_python_m_child_is_a_fork_of_it_only_where_a_real_process_would_be_the_same(zygote, tmp_path):
    """``lmms-spatial demo``/``bench`` start ``python -m lmms_eval`` themselves: in a forked run such a child is a
    fork of the run (its pipes, exit status and pid as a real child's) when its environment differs from the
    run's only in our variables, and a real process when another variable differs (``HF_HOME``: read on
    import) or it asks for what only a new process gives (a new session). tqdm's monitor thread, which a run
    that showed a bar has, is stopped first (a fork needs one thread)."""
    import json

    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "nest_outer.py").write_text(NEST_OUTER)
    (tmp_path / "mods" / "nest_inner.py").write_text(NEST_INNER)
    env = {**zygote.env, "HF_HOME": str(tmp_path / "hf"), "PYTHONPATH": str(tmp_path / "mods")}
    code, stdout, stderr = zygote.run("nest_outer", [], env, tmp_path, tmp_path, timeout=300, nest=("nest_inner",))
    assert code == 0, stderr
    seen = json.loads(stdout)
    for name, forked in (("ours_differ", True), ("hf_home_differs", False), ("new_session", False)):
        child = seen[name]
        assert (child["forked"], child["code"], child["stderr"], child["argv"]) == (forked, 3, "inner stderr\n", [name])
        assert child["ppid"] == seen["pid"] and child["cwd"] == str(tmp_path)
    assert seen["ours_differ"]["judge"] == "none" and seen["new_session"]["judge"] is None


THREADS_PROBE = """
import sys, threading
sys.path.insert(0, sys.argv[1])
import forkserver
import pyarrow as pa, pyarrow.parquet as pq
seen = [(forkserver._threads(), forkserver._fork_safe_threads())]
pq.write_table(pa.table({"a": list(range(1000))}), sys.argv[2])
pq.read_table(sys.argv[2], pre_buffer=True, use_threads=True)  # starts pyarrow's pool workers
seen.append((forkserver._threads(), forkserver._fork_safe_threads()))
threading.Thread(target=threading.Event().wait, args=(30,), daemon=True).start()
seen.append((forkserver._threads(), forkserver._fork_safe_threads()))
print(seen)
"""


@pytest.mark.parametrize("omp", ["1", None])
def test_a_run_forks_its_child_on_one_thread_or_beside_pyarrows_idle_pool_workers_only(tmp_path, omp):
    """A run that read or wrote parquet in-process (``lmms-spatial bench``) has pyarrow's pool workers: it may
    still fork its ``python -m lmms_eval`` child (the pool re-makes itself in a fork), but not once it has a
    Python thread of its own, nor where an OpenMP pool may exist (``OMP_NUM_THREADS`` not 1: libgomp hangs in a
    fork's child; numpy's OpenBLAS starts its threads on import then)."""
    import ast
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env.update({"JE_ARROW_MALLOC_CONF": "background_thread:false", **({"OMP_NUM_THREADS": omp} if omp else {})})
    probe = [sys.executable, "-c", THREADS_PROBE, os.path.dirname(forkserver.__file__), str(tmp_path / "t.parquet")]
    done = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (alone, safe), (with_pool, pool_safe), (with_thread, thread_safe) = ast.literal_eval(done.stdout.strip())
    assert with_pool > alone and with_thread == with_pool + 1  # the pool's workers, then one Python thread
    if omp == "1":
        assert (alone, safe, pool_safe, thread_safe) == (1, True, True, False)
    else:
        assert (safe, pool_safe, thread_safe) == (alone == 1, False, False)
