"""The lmms-eval patches of lmms_spatial.plugin, piece by piece (the CLI tests in tests/e2e run them whole)."""

from __future__ import annotations

import functools
import json
import sqlite3
import types

import pytest

from lmms_spatial import plugin
from lmms_spatial.judge.preflight import notice
from lmms_spatial.plugin import failures, isolation, resume
from tools.fake_judge import FakeJudgeServer

# --- supported lmms-eval versions ------------------------------------------------------------


@pytest.mark.parametrize(
    ("found", "ok"), [("0.7", True), ("0.7.0", True), ("0.7.3", True), ("0.7.9", True), ("0.6.1", False),
                      ("0.8.0", False), ("1.0", False), ("0.7.4.dev1", True)],
)  # fmt: skip
def test_supported_lmms_eval_versions_are_0_7_x_and_others_get_one_line(found, ok, monkeypatch, capsys):
    monkeypatch.setattr(plugin, "lmms_eval_version", lambda: found)
    # a process that has not checked yet: a fresh cache of the check, the process's own back after the test
    monkeypatch.setattr(plugin, "supported", functools.cache(plugin.supported.__wrapped__))
    assert plugin.supported() is ok
    assert plugin.supported() is ok  # said once
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ([] if ok else [err[0]])
    if not ok:
        assert f"lmms-eval {found} is not supported (supported: lmms-eval>=0.7,<0.8)" in err[0]
        assert "pip install 'lmms-eval>=0.7,<0.8'" in err[0]


# --- the judge notice before generation --------------------------------------------------------


def test_no_notice_when_no_task_needs_a_judge_or_the_fallback_was_chosen():
    assert notice([], env={}) is None
    assert notice(["odi_bench_open_ocr"], env={"LMMS_SPATIAL_JUDGE": "none"}) is None


def test_the_notice_names_the_tasks_and_both_ways_on_when_no_judge_is_set():
    tasks = [f"t{i}" for i in range(8)]
    text = notice(tasks, env={})
    assert text.startswith("lmms-spatial: no LLM judge is configured (LMMS_SPATIAL_JUDGE is not set), and 8 task(s)")
    assert "t0, t1, t2, t3, t4, t5 and 2 more." in text
    assert "LMMS_SPATIAL_JUDGE=<model>" in text and "LMMS_SPATIAL_JUDGE=none" in text


def test_a_judge_that_answers_the_probe_gets_no_notice():
    with FakeJudgeServer() as server:
        assert notice(["x"], env={"LMMS_SPATIAL_JUDGE": "m", "LMMS_SPATIAL_JUDGE_BASE_URL": server.base_url}) is None


def test_a_judge_server_that_does_not_answer_is_named():
    with FakeJudgeServer() as server:
        url = server.base_url
    down = notice(["x"], env={"LMMS_SPATIAL_JUDGE": "m", "LMMS_SPATIAL_JUDGE_BASE_URL": url}, timeout=2)
    assert down.startswith(f"lmms-spatial: the LLM judge m cannot be reached: {url}/models does not answer")


def test_items_judged_soon_after_the_probe_found_no_server_fail_at_once_naming_it():

    from lmms_spatial.judge import Judge, JudgeConfig, JudgeUnavailableError, reset_judges
    from tools.fake_judge import osr_item

    with FakeJudgeServer() as server:
        url = server.base_url
    env = {"LMMS_SPATIAL_JUDGE": "m", "LMMS_SPATIAL_JUDGE_BASE_URL": url, "LMMS_SPATIAL_JUDGE_CACHE": "off"}
    assert notice(["x"], env=env, timeout=2)
    judge = Judge("osr_negative", JudgeConfig.from_env(env))  # 5 retries: 1 + 2 + 4 + 8 + 16 s of backoff
    try:
        with pytest.raises(JudgeUnavailableError, match="does not answer .* when the run started.*marked unavailable"):
            judge.score(osr_item(1))
        assert judge.stats.retries == 0  # failed at once: none of the 1 + 2 + 4 + 8 + 16 s of backoff
    finally:
        reset_judges()


def test_a_refused_key_is_said_as_such(monkeypatch):
    import urllib.error
    import urllib.request

    def refuse(request, timeout):
        raise urllib.error.HTTPError(request.full_url, 401, "Unauthorized", {}, None)

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    text = notice(["x"], env={"LMMS_SPATIAL_JUDGE": "gpt-4o", "OPENAI_API_KEY": "sk-bad"})
    assert "https://api.openai.com/v1/models refused the API key (HTTP 401)" in text
    assert "set LMMS_SPATIAL_JUDGE_API_KEY (or OPENAI_API_KEY) to a key that server accepts" in text


def test_the_openai_api_with_no_key_set_is_said_without_asking_it(monkeypatch):
    import urllib.request

    def no_request(request, timeout):
        raise AssertionError("probed")

    monkeypatch.setattr(urllib.request, "urlopen", no_request)
    text = notice(["x"], env={"LMMS_SPATIAL_JUDGE": "gpt-4o"})  # no base URL: the OpenAI API, which needs a key
    assert text.startswith(
        "lmms-spatial: the LLM judge gpt-4o cannot be used: no API key is set for https://api.openai.com/v1, and 1 "
        "task(s) of this run score with one: x."
    )
    assert (
        "stop here and set LMMS_SPATIAL_JUDGE_API_KEY (or OPENAI_API_KEY) to your key, or LMMS_SPATIAL_JUDGE=none"
        in text
    )
    local = {"LMMS_SPATIAL_JUDGE": "m", "LMMS_SPATIAL_JUDGE_BASE_URL": "http://judge.invalid/v1"}  # a server: asked
    assert "http://judge.invalid/v1/models does not answer (AssertionError: probed)" in notice(["x"], env=local)


def test_items_the_judge_refuses_for_the_key_end_the_run_naming_the_key_variable():
    from lmms_spatial.judge import Judge, JudgeConfig, JudgeUnavailableError, reset_judges
    from lmms_spatial.judge.preflight import refused_key_line
    from tools.fake_judge import osr_item

    reset_judges()
    assert refused_key_line(["osr_qa_negative_vanilla"]) is None
    with FakeJudgeServer(api_key="sk-right") as server:
        url = server.base_url
        env = {"LMMS_SPATIAL_JUDGE": "m", "LMMS_SPATIAL_JUDGE_BASE_URL": url,
               "LMMS_SPATIAL_JUDGE_API_KEY": "sk-wrong", "LMMS_SPATIAL_JUDGE_CACHE": "off"}  # fmt: skip
        try:
            with pytest.raises(JudgeUnavailableError, match=r"HTTP 401.*set LMMS_SPATIAL_JUDGE_API_KEY to a key"):
                Judge("osr_negative", JudgeConfig.from_env(env)).score(osr_item(1))
            line = refused_key_line(["osr_qa_negative_vanilla"])
        finally:
            reset_judges()
    assert line.startswith(f"lmms-spatial: the LLM judge at {url}")
    assert "refused the API key (HTTP 401), so the judged items of osr_qa_negative_vanilla were not judged" in line
    assert line.endswith("set LMMS_SPATIAL_JUDGE_API_KEY (or OPENAI_API_KEY) to a key it accepts, then score the "
                         "kept answers again with --model replay")  # fmt: skip


# --- answers saved chunk by chunk ------------------------------------------------------------


class _Request:
    def __init__(self, text: str, n: int) -> None:
        self.args = (text, None, {"temperature": 0}, n, "task", "test")
        self.task_name, self.doc_id = "task", n


def test_chunks_hold_every_request_once_in_the_models_reading_order_and_whole_batches(monkeypatch):
    monkeypatch.delenv(resume.ENV_SAVE_EVERY, raising=False)
    requests = [_Request(text, n) for n, text in enumerate("dbcae" * 30)]  # 150 requests
    lm = types.SimpleNamespace(batch_size=7)
    size = resume.save_every(lm)
    assert size == 70  # the default 64 requests, rounded up to whole batches of 7
    chunks = resume.chunks(lm, requests, size)
    assert [len(c) for c in chunks] == [70, 70, 10]
    flat = [r for chunk in chunks for r in chunk]
    assert sorted(id(r) for r in flat) == sorted(id(r) for r in requests)
    assert [r.args[0] for r in flat] == sorted(r.args[0] for r in requests)  # chat models read sorted contexts


def test_a_models_partial_reading_order_still_puts_every_request_in_a_chunk():
    requests = [_Request("x", n) for n in range(5)]
    lm = types.SimpleNamespace(batch_size=1, prefetch_order=lambda reqs: [3, 1])  # reads only two documents
    chunks = resume.chunks(lm, requests, 2)
    assert [[r.doc_id for r in c] for c in chunks] == [[3, 1], [0, 2], [4]]


def test_the_chunks_of_a_resumed_run_are_the_chunks_it_had_not_finished():
    everything = [_Request(t, n) for n, t in enumerate("hgfedcba")]
    lm = types.SimpleNamespace(batch_size=1)
    first = resume.chunks(lm, everything, 3)
    missing = [r for r in everything if r not in first[0]]  # the first chunk was saved before the kill
    assert resume.chunks(lm, missing, 3) == first[1:]


def test_save_every_is_a_positive_integer(monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "10")
    assert resume.save_every(types.SimpleNamespace(batch_size=4)) == 12
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "many")
    with pytest.raises(ValueError, match="LMMS_SPATIAL_SAVE_EVERY='many': expected a positive integer"):
        resume.save_every(types.SimpleNamespace(batch_size=4))


def test_the_default_folder_is_inside_the_output_path_else_the_home_cache():
    assert str(resume.default_dir("runs/osr")) == "runs/osr/cache"
    assert str(resume.default_dir("runs/osr/results.json")) == "runs/osr/results.json/cache"  # a folder to lmms-eval
    assert resume.default_dir(None) == resume.HOME_CACHE.expanduser()


def _audit_line(key: str, response: str, deterministic: bool = True) -> str:
    return json.dumps({"cache_key": key, "request_type": "generate_until", "task_name": "t", "doc_id": 0, "idx": 0,
                       "gen_kwargs": "{}", "response": json.dumps(response), "created_at": 1.0,
                       "deterministic": deterministic})  # fmt: skip


def test_answers_of_runs_that_never_finished_are_read_into_the_new_run(tmp_path, capsys):
    root = tmp_path / "cache"
    killed, done, own = (root / "runs" / name for name in ("killed", "done", "own"))
    for folder in (killed, done, own):
        folder.mkdir(parents=True)
    (killed / "rank_0.audit.jsonl").write_text(
        _audit_line("k1", "A") + "\n" + _audit_line("k2", "B", deterministic=False) + "\n" + '{"cache_key": "k3", "resp'
    )  # a sampled answer is not reused; the last line was cut short by the kill
    (done / "rank_0.audit.jsonl").write_text(_audit_line("k4", "C") + "\n")
    (done / ".merged").write_text("1\n")  # already in the root store
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE responses (cache_key TEXT PRIMARY KEY, request_type TEXT, task_name TEXT, doc_id "
               "INTEGER, idx INTEGER, gen_kwargs TEXT, response TEXT, created_at REAL)")  # fmt: skip
    cache = types.SimpleNamespace(_cache_root=str(root), _run_dir=str(own), db=db)
    assert resume.replay_unmerged_runs(cache) == 1
    assert db.execute("SELECT cache_key, response FROM responses").fetchall() == [("k1", '"A"')]
    assert resume.replay_unmerged_runs(cache) == 0  # already there
    assert "1 answers of earlier interrupted runs found in" in capsys.readouterr().err


def test_saved_answers_are_keyed_on_the_lmms_eval_release_not_the_commit_of_the_repository_around_the_venv(
    tmp_path, monkeypatch
):
    import lmms_eval

    monkeypatch.setattr(plugin, "lmms_eval_version", lambda: "0.7.3")
    package = tmp_path / "venv" / "site-packages" / "lmms_eval"
    package.mkdir(parents=True)
    (tmp_path / ".git").mkdir()  # the project the venv sits in: its commit must not key the answers
    monkeypatch.setattr(lmms_eval, "__file__", str(package / "__init__.py"))
    assert resume.release_version("68113a7") == "0.7.3"
    (package.parent / ".git").mkdir()  # lmms-eval is itself a git checkout: its commit is the version
    assert resume.release_version("68113a7") == "68113a7"


# --- failures: the right task, in one line ---------------------------------------------------


@pytest.fixture
def clean_failures():
    failures.reset()
    yield
    failures.reset()


def test_a_failure_while_building_a_stock_task_names_it_and_not_ours(clean_failures):
    exc = FileNotFoundError("Dataset lmms-lab/MME is not cached")
    setattr(exc, failures.EXC_TASK_ATTR, "mme")
    wrapped = RuntimeError("evaluation failed")
    wrapped.__cause__ = exc
    failures.run_failed(wrapped, ["mmsi_vanilla"])
    assert failures.lines() == [
        "lmms-spatial: the run stopped while building task mme (an lmms-eval task, not one of ours; mmsi_vanilla not "
        "evaluated): FileNotFoundError: Dataset lmms-lab/MME is not cached"
    ]


def test_a_failure_with_no_task_known_says_what_is_known_and_guesses_none(clean_failures):
    failures.run_failed(MemoryError("CUDA out of memory"), ["dori", "mmsi"])
    assert failures.lines() == [
        "lmms-spatial: the run stopped before writing results (dori, mmsi not evaluated): "
        "MemoryError: CUDA out of memory"
    ]


def test_a_task_that_fails_twice_is_said_once(clean_failures):
    assert failures.task_failed("t", "scoring", ValueError("bad")) is True
    assert failures.task_failed("t", "aggregating", ValueError("worse")) is False
    assert failures.failed_tasks() == {"t": "scoring: ValueError: bad"}
    assert len(failures.lines()) == 1


def test_groups_that_contain_a_failed_task_lose_their_scores_and_the_results_say_which(clean_failures):
    failures.task_failed("b", "scoring", TypeError("x"))
    results = {
        "results": {"g": {"alias": "g", "accuracy,none": 0.5, "samples": 4}, "h": {"alias": "h", "accuracy,none": 1.0},
                    "a": {"alias": "a", "accuracy,none": 1.0}, "b": {"alias": "b"}},
        "groups": {"g": {"alias": "g", "accuracy,none": 0.5}},
        "group_subtasks": {"top": ["g", "h"], "g": ["a", "sub"], "sub": ["b"], "h": ["a"]},
    }  # fmt: skip
    isolation.set_aside_failed(results)
    assert results["results"]["g"] == {"alias": "g"} and results["groups"]["g"] == {"alias": "g"}
    assert results["results"]["h"] == {"alias": "h", "accuracy,none": 1.0}
    assert results["lmms_spatial"] == {"failed_tasks": {"b": "scoring: TypeError: x"},
                                       "groups_without_scores": ["g", "sub", "top"]}  # fmt: skip


def test_staged_saves_whole_chunks_of_its_own_so_an_image_gets_one_map():
    from lmms_spatial.models.staged import Staged

    staged = Staged.__new__(Staged)
    staged.chunk_size = 256
    staged.__dict__["base"] = types.SimpleNamespace(batch_size=8)
    assert resume.save_every(staged) == 256


def _evaluate_call(model: str | None, response_cache=None):
    """``evaluate``'s arguments as our wrapper sees them, in a run of ours made by ``simple_evaluate(model=...)``."""
    import inspect

    from lmms_spatial.run_state import Call, Run

    def evaluate(lm, task_dict, limit=None, cli_args=None, response_cache=None):
        pass

    bound = inspect.signature(evaluate).bind_partial(None, {"t": object()}, response_cache=response_cache)
    call = Call({"model": model, "model_args": "seed=0", "cli_args": types.SimpleNamespace(output_path="runs/x")})
    return bound, Run(["t"], call.arguments["cli_args"], call=call)


def test_a_run_of_ours_without_a_cache_opens_one_in_the_output_path_and_replay_keeps_nothing(
    monkeypatch, capsys, tmp_path
):
    # A cache object as both lmms-eval versions' stores look to keep_answers: 0.7.0's has no run folders, so its
    # model folder (the db file's folder) is locked; 0.7.3's carries its own run folder.
    the_cache = types.SimpleNamespace(db_path=str(tmp_path / "model" / "cache.db"), _run_dir=str(tmp_path / "run"),
                                      close=lambda: None)  # fmt: skip
    opened = []
    monkeypatch.setattr(resume, "open_cache", lambda root, **kw: opened.append((root, kw["model"])) or the_cache)
    monkeypatch.delenv(resume.ENV_SWITCH, raising=False)
    bound, run = _evaluate_call("replay")
    assert resume.keep_answers(bound, run) is None and opened == []  # replay answers from files: nothing to keep
    bound, run = _evaluate_call("qwen2_5_vl")
    assert resume.keep_answers(bound, run) is the_cache
    resume.release(run)  # the model folder's lock, on lmms-eval 0.7.0
    assert opened == [("runs/x/cache", "qwen2_5_vl")] and bound.arguments["response_cache"] is the_cache
    assert "answers are kept in runs/x/cache" in capsys.readouterr().err
    monkeypatch.setenv(resume.ENV_SWITCH, "0")
    bound, run = _evaluate_call("qwen2_5_vl")
    assert resume.keep_answers(bound, run) is None and len(opened) == 1  # switched off


def test_a_cache_the_run_was_given_is_said_and_none_is_opened(monkeypatch, capsys):
    monkeypatch.setattr(resume, "open_cache", lambda root, **kw: pytest.fail("a second cache was opened"))
    bound, run = _evaluate_call("qwen2_5_vl", response_cache=types.SimpleNamespace(_cache_root="/data/answers"))
    assert resume.keep_answers(bound, run) is None
    assert "answers are kept in /data/answers as they come (--use_cache)" in capsys.readouterr().err


@pytest.mark.parametrize("limit", [0, 0.0, -2, -0.5])
def test_a_limit_that_evaluates_nothing_is_refused_naming_limit(limit):
    from lmms_spatial.plugin.run import check_limit

    with pytest.raises(failures.RunRefused, match=r"^--limit -?0?\.?\d* (leaves no document|is no number)") as caught:
        check_limit(limit)
    assert "(--limit 8)" in str(caught.value) and "no --limit for all of them" in str(caught.value)


@pytest.mark.parametrize("limit", [None, -1, 1, 0.1, 8])
def test_limits_that_evaluate_documents_pass(limit):
    from lmms_spatial.plugin.run import check_limit

    check_limit(limit)  # -1 is lmms-eval's "every document"


def test_a_refused_run_says_its_own_line_and_nothing_else(clean_failures):
    wrapped = RuntimeError("evaluation failed")
    wrapped.__cause__ = failures.RunRefused("--limit 0 leaves no document to evaluate: ...")
    failures.run_failed(wrapped, ["mmsi_vanilla"])
    assert failures.lines() == ["lmms-spatial: --limit 0 leaves no document to evaluate: ..."]


def _attempts_of_lmms_evals_download_retry(error: Exception) -> int:
    """How many times lmms-eval's own retry around ``ConfigurableTask.download`` (as patched) calls a
    loader that raises ``error`` (its 2 s waits left out)."""
    import tenacity
    from lmms_eval.api.task import ConfigurableTask

    calls = 0

    def load() -> None:
        nonlocal calls
        calls += 1
        raise error

    with pytest.raises(type(error)):
        ConfigurableTask.download.retry.copy(wait=tenacity.wait_none(), reraise=True)(load)
    return calls


def test_data_that_cannot_be_there_fails_at_once_and_a_failed_download_is_retried():
    from lmms_spatial.data.hub_cache import DataUnavailable

    assert _attempts_of_lmms_evals_download_retry(DataUnavailable("offline and not cached")) == 1
    network = DataUnavailable("cannot download (connection reset)")
    network.transient = True
    assert _attempts_of_lmms_evals_download_retry(network) == 5  # lmms-eval's stop_after_attempt(5)
    assert _attempts_of_lmms_evals_download_retry(OSError("a stock task's error")) == 5


# --- which runs are ours: what they run, not how they were named ------------------------------


def _task(name: str, **functions):
    config = types.SimpleNamespace(task=name, **functions)
    return types.SimpleNamespace(config=config)


def test_a_task_is_ours_when_its_code_is_ours_whatever_it_is_named():
    from lmms_spatial.plugin.ours import is_ours
    from lmms_spatial.tasks.mmsi import adapter

    def users_scorer(doc, results):
        return {}

    assert is_ours(_task("my_mmsi", doc_to_messages=adapter.doc_to_messages, process_results=users_scorer))
    assert is_ours({"task": "my_mmsi", "process_docs": adapter.process_docs})  # a config dict, as a YAML loads
    assert not is_ours(_task("mme", doc_to_text=len, process_results=users_scorer))


def test_a_function_written_in_one_of_our_utils_files_is_ours(tmp_path):
    import os

    from lmms_spatial.paths import tasks_dir
    from lmms_spatial.plugin.ours import is_ours

    namespace: dict = {}  # lmms-eval loads utils.py by file path, as module "utils"
    source = "def doc_to_text(doc):\n    return ''\n"
    exec(compile(source, os.path.join(tasks_dir(), "mmsi", "utils.py"), "exec"), namespace)
    assert is_ours(_task("t", doc_to_text=namespace["doc_to_text"]))
    exec(compile(source, str(tmp_path / "utils.py"), "exec"), namespace)
    assert not is_ours(_task("t", doc_to_text=namespace["doc_to_text"]))


def test_a_callable_without_source_is_not_ours_wherever_the_run_starts(monkeypatch):
    """``len`` has no code object, so no file: not ours, even run from inside a task folder (the rule once read
    the working directory for a missing file name)."""
    import os

    from lmms_spatial.paths import tasks_dir
    from lmms_spatial.plugin.ours import is_ours

    monkeypatch.chdir(os.path.join(tasks_dir(), "mmsi"))
    assert not is_ours(_task("t", doc_to_text=len))


def test_our_tasks_are_found_in_nested_groups_and_group_task_pairs():
    from lmms_spatial.plugin.ours import our_leaves
    from lmms_spatial.tasks.mmsi import adapter

    ours = {"process_results": adapter.process_results}
    task_dict = {
        "my_suite": {"dori": {"dori_a": _task("dori_a", **ours)}, "mme": _task("mme", doc_to_text=len)},
        "my_tagged": ("my_tag", _task("my_tagged", **ours)),
        "empty": ("g", None),
    }
    assert our_leaves(task_dict) == ["dori_a", "my_tagged"]
    assert our_leaves({"mme": _task("mme", doc_to_text=len)}) == []


def test_accelerate_launch_that_started_fewer_processes_than_asked_is_found_with_whether_it_was_cpu():
    from lmms_spatial.plugin.run import processes_lost

    python, script = "/venv/bin/python", "/venv/bin/accelerate"
    run = ["-m", "lmms_eval", "--model", "random_choice", "--tasks", "mmsi_vanilla"]
    assert processes_lost([python, script, "launch", "--cpu", "--num_processes", "2", *run], 1) == (2, True)
    launch = [python, "-m", "accelerate.commands.launch"]
    assert processes_lost([*launch, "--num_processes=4", "--cpu", *run], 1) == (4, True)
    assert processes_lost(["/venv/bin/accelerate-launch", "--mixed_precision", "no", "--cpu", "--num_processes",
                           "3", "/venv/bin/lmms-eval", "--limit", "2"], 1) == (3, True)  # fmt: skip
    # no --multi_gpu on a machine without a GPU: one process started
    assert processes_lost([python, script, "launch", "--num_processes", "2", *run], 1) == (2, False)
    # one process asked for, really as many ranks as asked, options of the launched program, no launcher: nothing
    assert processes_lost([python, script, "launch", "--cpu", "--num_processes", "1", *run], 1) is None
    assert processes_lost([python, script, "launch", "--multi_gpu", "--num_processes", "2", *run], 2) is None
    assert processes_lost([python, script, "launch", "--cpu", "--num_processes", "2", *run], 2) is None
    assert processes_lost([python, script, "launch", "train.py", "--num_processes", "2"], 1) is None
    assert processes_lost(["/bin/bash", "job.sh", "--cpu", "--num_processes", "2"], 1) is None
