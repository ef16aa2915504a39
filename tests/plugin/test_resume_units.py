"""The answer store's functions one by one (lmms_spatial/plugin/resume.py, issue 42): which answers are kept, their
keys and fingerprints, each chunk stored as it returns, the read-back of a killed run, what refuses a store.

Fast and exact: hand-made requests, fake models and caches, lmms-eval's own ``ResponseCache`` in a tmp folder where
the store itself is under test; no lmms-eval command line. Every expected value is written here, with its arithmetic.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import sqlite3
import types
from pathlib import Path

import pytest

from lmms_spatial import run_state
from lmms_spatial.plugin import failed_requests, failures, owners, resume
from lmms_spatial.run_state import Call, Run

_RESPONSES = ("CREATE TABLE responses (cache_key TEXT PRIMARY KEY, request_type TEXT, task_name TEXT, doc_id INTEGER, "
              "idx INTEGER, gen_kwargs TEXT, response TEXT, created_at REAL)")  # fmt: skip
_META = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)"


def _db(*tables: str) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    for table in tables:
        db.execute(table)
    return db


def _request(doc_id: int, task: str = "t", text: str | None = None):
    from lmms_eval.api.instance import Instance

    return Instance("generate_until", (text or f"question {doc_id}", {"max_new_tokens": 8, "temperature": 0}), 0,
                    {"task": task, "doc_id": doc_id, "repeats": 1})  # fmt: skip


class _Task:
    def __init__(self, config: dict):
        self.config = config

    def dump_config(self):
        return self.config


# lmms-eval 0.7.1+ opens its store with ResponseCache.create (run folders, the release in each key) and counts the
# served answers from its tables; 0.7.0's one folder per model is tested by the _without_create tests, which run on
# 0.7.0 itself as well
needs_create = pytest.mark.skipif(
    not hasattr(__import__("lmms_eval.caching.response_cache", fromlist=["ResponseCache"]).ResponseCache, "create"),
    reason="lmms-eval 0.7.0's answer store has no create() nor run folders",
)


@pytest.fixture
def inside_a_run(monkeypatch):
    """A run of ours in progress, for the wrappers that act only then (``run_state.active()``)."""
    run = Run(["t"])
    monkeypatch.setattr(run_state.STATE, "runs", [run])
    return run


# --- the switch, the folder, the announcement -----------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "false", "no", "off", " OFF ", "No"])
def test_the_store_is_switched_off_by_each_off_word_in_any_case_and_spacing(monkeypatch, value):
    monkeypatch.setenv(resume.ENV_SWITCH, value)
    assert resume.enabled() is False


@pytest.mark.parametrize("value", ["1", "yes", "on", ""])
def test_any_other_value_or_none_keeps_the_store_on(monkeypatch, value):
    monkeypatch.setenv(resume.ENV_SWITCH, value)
    assert resume.enabled() is True
    monkeypatch.delenv(resume.ENV_SWITCH)
    assert resume.enabled() is True


def test_the_output_path_is_the_command_lines_then_the_trackers_then_none():
    tracker = types.SimpleNamespace(output_path=Path("tracked/out"))
    cli = types.SimpleNamespace(output_path="given/out")
    assert resume._output_path({"evaluation_tracker": tracker}, cli) == "given/out"
    assert resume._output_path({"evaluation_tracker": tracker}, types.SimpleNamespace(output_path="")) == "tracked/out"
    assert resume._output_path({"evaluation_tracker": tracker}, None) == "tracked/out"  # a Path said as text
    assert resume._output_path({}, None) is None


def test_the_default_folder_is_cache_inside_the_output_folder_else_the_home_cache(monkeypatch):
    monkeypatch.setenv("HOME", "/home/r")
    assert resume.default_dir("out/dori") == Path("out/dori/cache")
    # lmms-eval makes out/dori/results.json a folder and writes the run's files into it: the store goes there too
    assert resume.default_dir("out/dori/results.json") == Path("out/dori/results.json/cache")
    assert resume.default_dir("out/dori.v2") == Path("out/dori.v2/cache")  # a dotted folder is still a folder
    assert resume.default_dir("~/runs") == Path("/home/r/runs/cache")
    assert resume.default_dir(None) == Path("/home/r/.cache/lmms_spatial/answers")
    assert resume.default_dir("") == Path("/home/r/.cache/lmms_spatial/answers")


# --- keep_answers: the store opened for a run of ours -------------------------------------------------------------


def _bound(response_cache=None, with_cache_parameter=True, **more):
    if with_cache_parameter:

        def evaluate(lm, task_dict, cli_args=None, response_cache=None, distributed_executor_backend=None):
            pass

        return inspect.signature(evaluate).bind_partial(None, {"t": "task"}, response_cache=response_cache, **more)

    def old_evaluate(lm, task_dict, cli_args=None):
        pass

    return inspect.signature(old_evaluate).bind_partial(None, {"t": "task"}, **more)


def _run(arguments: dict | None, cli_args=None) -> Run:
    call = Call(arguments) if arguments is not None else None
    return Run(["t"], cli_args, call=call)


def test_a_given_cache_is_announced_by_the_folder_lmms_eval_keeps_it_in_and_how_it_was_asked_for(capsys):
    given = types.SimpleNamespace(_cache_root="/store")
    run = _run({"use_cache": "/store"}, types.SimpleNamespace(use_cache="/from/cli"))
    assert resume.keep_answers(_bound(given), run) is None
    assert run.notes.answers == "/store"
    assert capsys.readouterr().err == (
        "lmms-spatial: answers are kept in /store as they come (--use_cache); the same command run again "
        "asks the model only for the missing ones\n"
    )
    # --use_cache /store/legacy.db: lmms-eval 0.7.1+ keeps cache.db and runs/ in the file's folder, and says it there
    run = _run({"use_cache": "/store/legacy.db"})
    resume.keep_answers(_bound(given), run)
    assert run.notes.answers == "/store"
    assert "kept in /store as they come (--use_cache /store/legacy.db: lmms-eval keeps cache.db and runs/ in that " \
           "file's folder)" in capsys.readouterr().err  # fmt: skip
    # a store that names no root (lmms-eval 0.7.0): the argument, from the call, else the command line it was given
    rootless = object()
    run = _run({}, types.SimpleNamespace(use_cache="/from/cli"))
    resume.keep_answers(_bound(rootless), run)
    assert run.notes.answers == "/from/cli"
    run = _run(None)  # no call recorded: the cli_args evaluate was given
    resume.keep_answers(_bound(rootless, cli_args=types.SimpleNamespace(use_cache="/from/bound")), run)
    assert run.notes.answers == "/from/bound"
    run = _run(None)
    resume.keep_answers(_bound(given, cli_args=types.SimpleNamespace()), run)
    assert run.notes.answers == "/store"
    run = _run(None)
    resume.keep_answers(_bound(object()), run)  # a store that names no root, and no argument: nothing to name
    assert run.notes.answers == ""


@pytest.mark.parametrize("model", [None, "replay"])
def test_no_model_or_replay_opens_no_store(monkeypatch, model):
    monkeypatch.delenv(resume.ENV_SWITCH, raising=False)
    monkeypatch.setattr(resume, "open_cache", lambda *a, **k: pytest.fail("opened"))
    run = _run({"model": model})
    assert resume.keep_answers(_bound(), run) is None and run.notes.answers is None


def test_switched_off_no_store_is_opened(monkeypatch):
    monkeypatch.setenv(resume.ENV_SWITCH, "off")
    monkeypatch.setattr(resume, "open_cache", lambda *a, **k: pytest.fail("opened"))
    assert resume.keep_answers(_bound(), _run({"model": "qwen"})) is None


def test_an_evaluate_without_a_response_cache_parameter_is_said_and_opens_nothing(monkeypatch, capsys):
    monkeypatch.delenv(resume.ENV_SWITCH, raising=False)
    monkeypatch.setattr(resume, "open_cache", lambda *a, **k: pytest.fail("opened"))
    run = _run({"model": "qwen"})
    assert resume.keep_answers(_bound(with_cache_parameter=False), run) is None
    assert capsys.readouterr().err == ("lmms-spatial: this lmms-eval's evaluate takes no response cache: answers are "
                                       "not kept as they come\n")  # fmt: skip
    assert run.notes.answers is None


@needs_create
def test_the_store_is_opened_in_the_output_path_with_the_models_arguments_world_size_and_rank(monkeypatch, capsys):
    monkeypatch.delenv(resume.ENV_SWITCH, raising=False)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    opened = []
    cache = object()
    monkeypatch.setattr(resume, "open_cache", lambda root, **kw: opened.append((root, kw)) or cache)
    bound = _bound()
    run = _run({"model": "qwen", "model_args": "pretrained=/w"}, types.SimpleNamespace(output_path="out/a.json"))
    assert resume.keep_answers(bound, run) is cache
    assert bound.arguments["response_cache"] is cache
    assert opened == [("out/a.json/cache", {"model": "qwen", "model_args": "pretrained=/w", "task_dict": {"t": "task"},
                                     "world_size": 4, "global_rank": 3})]  # fmt: skip
    assert run.notes.answers == "out/a.json/cache"
    assert capsys.readouterr().err == ""  # data parallel: rank 0 says it, once for the run
    monkeypatch.setenv("RANK", "0")
    resume.keep_answers(_bound(), run)
    assert capsys.readouterr().err == (
        "lmms-spatial: answers are kept in out/a.json/cache as they come (switch off with LMMS_SPATIAL_RESUME=0); "
        "the same command run again asks the model only for the missing ones\n"
    )


@needs_create
def test_model_and_arguments_come_from_the_command_line_when_the_call_has_none(monkeypatch, capsys):
    monkeypatch.delenv(resume.ENV_SWITCH, raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    opened = []
    monkeypatch.setattr(resume, "open_cache", lambda root, **kw: opened.append((root, kw)) or "cache")
    cli = types.SimpleNamespace(model="llava", model_args="seed=1", output_path="o")
    assert resume.keep_answers(_bound(), _run({}, cli)) == "cache"
    assert opened[-1] == ("o/cache", {"model": "llava", "model_args": "seed=1", "task_dict": {"t": "task"},
                                      "world_size": 1, "global_rank": 0})  # fmt: skip
    cli = types.SimpleNamespace(model="llava", model_args=None, output_path="o")
    resume.keep_answers(_bound(), _run({}, cli))
    assert opened[-1][1]["model_args"] == ""  # no arguments: the empty string lmms-eval keys on
    resume.keep_answers(_bound(), _run({}, types.SimpleNamespace(model="llava")))
    assert opened[-1][1]["model_args"] == ""


def _without_create(monkeypatch):
    from lmms_eval.caching.response_cache import ResponseCache

    # lmms-eval 0.7.0's store: one folder per model, no run folders (on 0.7.0 itself there is nothing to take away)
    monkeypatch.delattr(ResponseCache, "create", raising=False)


def test_on_lmms_eval_0_7_0_the_model_folder_is_held_and_a_held_one_closes_the_store_and_refuses(monkeypatch, tmp_path):
    monkeypatch.delenv(resume.ENV_SWITCH, raising=False)
    monkeypatch.delenv("RANK", raising=False)
    _without_create(monkeypatch)
    closed = []
    cache = types.SimpleNamespace(db_path=str(tmp_path / "model" / "rank0.db"), close=lambda: closed.append(1))
    monkeypatch.setattr(resume, "open_cache", lambda root, **kw: cache)
    held = []
    monkeypatch.setattr(resume, "hold_run_dir", lambda c, r, folder, rank: held.append((c, r, folder, rank)))
    run = _run({"model": "qwen"})
    assert resume.keep_answers(_bound(), run) is cache
    assert held == [(cache, run, str(tmp_path / "model"), 0)] and closed == []

    def refuse(c, r, folder, rank):
        raise failures.RunRefused("held")

    monkeypatch.setattr(resume, "hold_run_dir", refuse)
    bound = _bound()
    with pytest.raises(failures.RunRefused, match="held"):
        resume.keep_answers(bound, _run({"model": "qwen"}))
    assert closed == [1] and bound.arguments["response_cache"] is None


# --- open_cache: as simple_evaluate(use_cache=root) opens it ------------------------------------------------------


@needs_create
def test_the_store_opened_on_lmms_eval_0_7_1_plus_is_lmms_evals_create_with_the_same_arguments(tmp_path, monkeypatch):
    monkeypatch.delenv("LMMS_CACHE_RUN_ID", raising=False)
    cache = resume.open_cache(str(tmp_path / "c"), model="m", model_args="seed=1", task_dict={"d": _Task({"a": 1})},
                              world_size=3, global_rank=2)  # fmt: skip
    try:
        assert cache._task_fingerprints == {"d": hashlib.sha256(b'{"a": 1}').hexdigest()[:16]}
        assert (cache._cache_root, cache._world_size, cache._global_rank) == (str(tmp_path / "c"), 3, 2)
        assert cache.model_fingerprint == 'm|{"seed":1}'
        assert Path(cache.db_path).name == "rank_2.db"
    finally:
        cache.close()


def test_on_lmms_eval_0_7_0_the_store_is_one_folder_per_model_key_and_rank(tmp_path, monkeypatch):
    _without_create(monkeypatch)
    task_dict = {"dori": _Task({"b": 2, "a": "<function f at 0x7f3a>", "c": Path("/d")}), "group": "not a task"}
    cache = resume.open_cache(str(tmp_path), model="m", model_args="seed=1,device=cpu", task_dict=task_dict,
                              world_size=1, global_rank=1)  # fmt: skip
    try:
        # the model key: model, the parsed arguments as sorted compact JSON, the weights' fingerprint (none here)
        fingerprint = 'm|{"device":"cpu","seed":1}|weights:none'
        folder = tmp_path / hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
        assert cache.model_fingerprint == fingerprint
        assert (cache.db_path, cache.audit_path) == (str(folder / "rank1.db"), str(folder / "rank1.jsonl"))
        # a task's key: its configuration as sorted JSON, a function's address dropped (it changes every run)
        config = '{"a": "<function f>", "b": 2, "c": "/d"}'  # a value JSON cannot hold: its text
        assert cache._task_fingerprints == {"dori": hashlib.sha256(config.encode()).hexdigest()[:16]}
        assert cache._lmms_spatial_weights is None
    finally:
        cache.close()


@pytest.mark.parametrize(
    ("model_args", "said"),
    [
        ({"seed": 1, "a": "x", "p": Path("/w")}, '{"a":"x","p":"/w","seed":1}'),
        ("name=café", '{"name":"caf\\u00e9"}'),  # ASCII JSON, as lmms-eval's key
        ("no pairs", "no pairs"),
        ("", "{}"),
    ],
)
def test_on_lmms_eval_0_7_0_arguments_that_are_not_pairs_are_keyed_as_written(tmp_path, monkeypatch, model_args, said):
    _without_create(monkeypatch)
    cache = resume.open_cache(str(tmp_path), model="m", model_args=model_args, task_dict=None, world_size=1,
                              global_rank=0)  # fmt: skip
    cache.close()
    assert cache.model_fingerprint == f"m|{said}|weights:none"


def test_a_weights_fingerprint_joins_the_0_7_0_model_key(tmp_path, monkeypatch):
    from lmms_spatial.plugin import weights

    _without_create(monkeypatch)
    monkeypatch.setattr(weights, "fingerprint", lambda args: f"sha:{args}")
    cache = resume.open_cache(str(tmp_path), model="m", model_args="a=1", task_dict={}, world_size=1, global_rank=0)
    cache.close()
    assert cache.model_fingerprint == 'm|{"a":1}|weights:sha:a=1' and cache._lmms_spatial_weights == "sha:a=1"
    again = resume.open_cache(str(tmp_path), model="m", model_args="a=1", task_dict={}, world_size=1, global_rank=0)
    again.close()  # the same model's folder, opened again by the next run
    assert again.db_path == cache.db_path


# --- close_cache ---------------------------------------------------------------------------------------------------


def test_a_store_is_finalized_with_the_runs_outcome_backend_and_accelerator_else_closed(capsys):
    calls = []
    cache = types.SimpleNamespace(finalize=lambda **kw: calls.append(kw))
    lm = types.SimpleNamespace(accelerator="acc")
    resume.close_cache(cache, True, _bound(distributed_executor_backend="torchrun"), lm)
    resume.close_cache(cache, False, _bound(), types.SimpleNamespace())
    assert calls == [{"success": True, "dist_backend": "torchrun", "accelerator": "acc"},
                     {"success": False, "dist_backend": "accelerate", "accelerator": None}]  # fmt: skip
    closed = []
    resume.close_cache(types.SimpleNamespace(close=lambda: closed.append(1)), True, _bound(), lm)
    assert closed == [1]

    def fail(**kw):
        raise OSError("disk full")

    resume.close_cache(types.SimpleNamespace(finalize=fail), True, _bound(), lm)  # never masks the run's outcome
    assert capsys.readouterr().err == "lmms-spatial: closing the answer store failed: disk full\n"


# --- save_every and chunks -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "batch", "own", "size"),
    [
        ("", 1, None, 64),  # the default
        (" 10 ", 4, None, 12),  # 10 rounded up to whole batches of 4
        ("8", 4, None, 8),  # already whole batches
        ("0", 1, None, 1),  # at least one request
        ("-3", 2, None, 2),  # at least one request, one whole batch
        ("5", 1, 7, 7),  # a model's own chunk is never cut
        ("9", 1, 7, 9),  # ... nor made smaller than asked
        ("5", "auto", None, 5),  # a batch size that is not a number: batches of 1
        ("5", 0, None, 5),
    ],
)
def test_save_every_is_the_setting_or_the_models_chunk_rounded_up_to_whole_batches(monkeypatch, raw, batch, own, size):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, raw)
    assert resume.save_every(types.SimpleNamespace(batch_size=batch, resume_chunk_size=own)) == size


def test_save_every_without_a_batch_size_counts_single_requests(monkeypatch):
    monkeypatch.delenv(resume.ENV_SAVE_EVERY, raising=False)
    assert resume.save_every(object()) == 64
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "2.5")
    with pytest.raises(ValueError) as raised:
        resume.save_every(object())
    assert str(raised.value) == "LMMS_SPATIAL_SAVE_EVERY='2.5': expected a positive integer"
    assert raised.value.__suppress_context__


class _Plain:
    """A request lmms-eval's Collator cannot sort (no ``args``): request order, unless the model says its own."""

    def __init__(self, n: int):
        self.doc_id = n


def test_chunks_follow_the_models_own_order_dropping_repeats_and_positions_out_of_range():
    requests = [_Plain(n) for n in range(6)]
    lm = types.SimpleNamespace(prefetch_order=lambda reqs: [4, 4, 9, -1, 0, 5])
    # order 4 0 5, then the rest in request order: 1 2 3; cut in runs of 4
    assert [[r.doc_id for r in c] for c in resume.chunks(lm, requests, 4)] == [[4, 0, 5, 1], [2, 3]]
    assert [[r.doc_id for r in c] for c in resume.chunks(lm, requests, 6)] == [[4, 0, 5, 1, 2, 3]]
    assert resume.chunks(lm, [], 3) == []


def test_chunks_of_a_chat_model_follow_its_sorted_contexts():
    class Chat:  # a request as lmms-eval's chat models get it: (context, ..., gen_kwargs, doc_id, task, split)
        def __init__(self, text: str, n: int):
            self.args, self.doc_id = (text, None, {"temperature": 0}, n, "t", "test"), n

    requests = [Chat(t, n) for n, t in enumerate(["c", "a", "d", "b"])]
    # contexts sorted: a(1) b(3) c(0) d(2)
    assert [[r.doc_id for r in c] for c in resume.chunks(types.SimpleNamespace(), requests, 3)] == [[1, 3, 0], [2]]


# --- the run's progress bar -------------------------------------------------------------------------------------------


def test_one_bar_counts_the_whole_run_and_only_rank_0_draws_it(monkeypatch):
    from lmms_spatial import progress

    made, closed = [], []

    class Bar:
        def __init__(self, **options):
            made.append(options)

        def close(self):
            closed.append(1)

    monkeypatch.setattr(progress, "tqdm", Bar)
    with resume.one_progress_bar(types.SimpleNamespace(), 12) as bar:
        assert isinstance(bar, Bar) and closed == []
    with pytest.raises(KeyError), resume.one_progress_bar(types.SimpleNamespace(rank=1), 5):
        raise KeyError  # closed when the run fails too
    assert made == [
        {"total": 12, "desc": "Model Responding (answers saved as they come)", "disable": False, "dynamic_ncols": True},
        {"total": 5, "desc": "Model Responding (answers saved as they come)", "disable": True, "dynamic_ncols": True},
    ]
    assert closed == [1, 1]


def test_a_chunks_count_is_capped_at_its_size(monkeypatch):
    from lmms_spatial import progress

    seen = []

    @contextlib.contextmanager
    def counting_into(bar, modules, cap=None):
        seen.append((bar, modules, cap))
        yield "sink"

    monkeypatch.setattr(progress, "counting_into", counting_into)
    with resume.answered_chunk(types.SimpleNamespace(), "bar", 7) as sink:
        assert sink == "sink"
    assert seen == [("bar", ["types"], 7)]


# --- the data each task read joins its key ----------------------------------------------------------------------------


class _Split:
    def __init__(self, fingerprint: str):
        self._fingerprint = fingerprint


def test_each_tasks_data_fingerprint_lists_its_splits_in_order():
    lm = types.SimpleNamespace(task_dict={"b": {"test": _Split("t1"), "dev": _Split("d1")}, "a": {"test": _Split("x")},
                                          "c": {"test": object()}})  # fmt: skip
    assert resume.data_fingerprints(lm, {"b", "a", "c", "missing"}) == {"a": "test:x", "b": "dev:d1,test:t1"}
    assert resume.data_fingerprints(lm, {"0-missing", "b"}) == {"b": "dev:d1,test:t1"}  # one missing: the next read
    lm.task_dict["0-bad"] = {"test": object()}
    assert resume.data_fingerprints(lm, {"0-bad", "a"}) == {"a": "test:x"}  # one unreadable: the next read
    assert list(resume.data_fingerprints(lm, {"b", "a"})) == ["a", "b"]
    assert resume.data_fingerprints(types.SimpleNamespace(task_dict=None), {"a"}) == {}
    assert resume.data_fingerprints(object(), {"a"}) == {}


def test_the_data_fingerprint_is_folded_into_each_asked_tasks_key_once():
    cache = types.SimpleNamespace(_task_fingerprints={"t": "cfg1", "u": "cfg2"})
    lm = types.SimpleNamespace(task_dict={"t": {"test": _Split("d1")}, "u": {"test": _Split("d2")},
                                          "v": {"test": _Split("d3")}})  # fmt: skip
    requests = [types.SimpleNamespace(task_name="t"), types.SimpleNamespace(task_name="v"), object()]
    resume._fold_data_fingerprints(cache, lm, requests)
    t = hashlib.sha256(b"cfg1|data:test:d1").hexdigest()[:16]
    v = hashlib.sha256(b"|data:test:d3").hexdigest()[:16]  # a task with no configuration key yet
    assert cache._task_fingerprints == {"t": t, "u": "cfg2", "v": v}  # u was not asked: left as it was
    resume._fold_data_fingerprints(cache, lm, [types.SimpleNamespace(task_name="u")])
    assert cache._task_fingerprints == {"t": t, "u": "cfg2", "v": v}  # folded once per store
    not_ours = types.SimpleNamespace(_task_fingerprints=None)
    resume._fold_data_fingerprints(not_ours, lm, requests)
    assert not hasattr(not_ours, "_lmms_spatial_data_folded")


# --- execute: every chunk kept as it returns --------------------------------------------------------------------------


class _Original:
    """lmms-eval's ``execute`` as ours wraps it: records each call's documents, answers ``A<doc>`` (or a failure
    marker for the documents in ``failing``)."""

    def __init__(self, failing=(), short=False):
        self.calls, self.failing, self.short = [], set(failing), short

    def __call__(self, cache, lm, reqtype, requests):
        self.calls.append((reqtype, [r.doc_id for r in requests]))
        answers = [f"{failed_requests.MARKERS[0]}] boom {r.doc_id}" if r.doc_id in self.failing else f"A{r.doc_id}"
                   for r in requests]  # fmt: skip
        return answers[:-1] if self.short else answers


def _store():
    return types.SimpleNamespace(_task_fingerprints={}, _cache_root="/store")


def test_outside_a_run_of_ours_or_with_no_request_execute_is_lmms_evals_own(monkeypatch):
    monkeypatch.setattr(run_state.STATE, "runs", [])
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "1")
    original = _Original()
    requests = [_Plain(0), _Plain(1)]
    assert resume._execute(original)(_store(), object(), "generate_until", requests) == ["A0", "A1"]
    assert original.calls == [("generate_until", [0, 1])]  # one call: not cut


def test_an_empty_request_list_is_lmms_evals_own_call(inside_a_run):
    seen = []
    execute = resume._execute(lambda cache, lm, reqtype, requests: seen.append(requests) or [])
    assert execute(_store(), object(), "generate_until", []) == [] and seen == [[]]


def test_a_run_of_exactly_one_chunk_is_one_call_and_one_more_request_makes_two(inside_a_run, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "3")
    original = _Original()
    execute = resume._execute(original)
    assert execute(_store(), object(), "generate_until", [_Plain(n) for n in range(3)]) == ["A0", "A1", "A2"]
    assert original.calls == [("generate_until", [0, 1, 2])]
    original.calls.clear()
    assert execute(_store(), object(), "generate_until", [_Plain(n) for n in range(4)]) == ["A0", "A1", "A2", "A3"]
    assert original.calls == [("generate_until", [0, 1, 2]), ("generate_until", [3])]


def test_chunks_go_in_the_models_order_and_answers_come_back_in_request_order(inside_a_run, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "2")
    original = _Original()
    lm = types.SimpleNamespace(prefetch_order=lambda reqs: [4, 2, 0, 3, 1])
    requests = [_Plain(n) for n in (10, 11, 12, 13, 14)]
    answers = resume._execute(original)(_store(), lm, "loglikelihood", requests)
    assert original.calls == [("loglikelihood", [14, 12]), ("loglikelihood", [10, 13]), ("loglikelihood", [11])]
    assert answers == ["A10", "A11", "A12", "A13", "A14"]


def test_the_data_fingerprints_are_folded_and_the_served_answers_counted_before_the_first_chunk(
    inside_a_run, monkeypatch
):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "1")
    order = []
    monkeypatch.setattr(resume, "_fold_data_fingerprints", lambda cache, lm, reqs: order.append(("fold", len(reqs))))
    monkeypatch.setattr(resume, "count_served", lambda cache, reqtype, reqs: order.append(("count", reqtype)))

    def original(cache, lm, reqtype, requests):
        order.append(("ask", [r.doc_id for r in requests]))
        return ["x"] * len(requests)

    resume._execute(original)(_store(), object(), "generate_until", [_Plain(0), _Plain(1)])
    assert order == [("fold", 2), ("count", "generate_until"), ("ask", [0]), ("ask", [1])]


def test_a_chunk_answered_short_fails_rather_than_scoring_a_request_not_asked(inside_a_run, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "2")
    with pytest.raises(ValueError):
        resume._execute(_Original(short=True))(_store(), object(), "generate_until", [_Plain(n) for n in range(3)])


def test_a_request_no_chunk_held_is_never_scored(inside_a_run, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "2")
    monkeypatch.setattr(resume, "chunks", lambda lm, requests, size: [requests[:2]])  # the third one lost
    with pytest.raises(RuntimeError) as raised:
        resume._execute(_Original())(_store(), object(), "generate_until", [_Plain(n) for n in range(3)])
    assert str(raised.value) == "lmms-spatial: 1 requests got no answer from the chunked model calls"


def test_a_dead_server_stops_the_run_when_a_chunk_ends_eight_failures_in_a_row(inside_a_run, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "4")
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    original = _Original(failing=range(1, 12))  # 0 answers; 1..11 fail
    with pytest.raises(failures.RunRefused) as raised:
        resume._execute(original)(_store(), object(), "generate_until", [_Plain(n) for n in range(16)])
    # after chunk [0-3]: 3 in a row; after [4-7]: 7; after [8-11]: 11 >= 8, stop; [12-15] never asked
    assert [docs for _, docs in original.calls] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert "the last 11 requests failed" in str(raised.value)
    assert "boom 11" in str(raised.value) and "kept in /store" in str(raised.value)


def test_eight_failures_in_a_row_at_a_chunks_end_stop_the_run_at_once(inside_a_run, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "4")
    original = _Original(failing=range(8))
    with pytest.raises(failures.RunRefused, match="the last 8 requests failed"):
        resume._execute(original)(_store(), object(), "generate_until", [_Plain(n) for n in range(12)])
    assert len(original.calls) == 2  # 4 + 4 = 8 in a row: the third chunk is never sent


def test_an_answer_between_failures_restarts_the_count_and_the_last_error_is_the_last_failure(
    inside_a_run, monkeypatch
):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "4")
    # 0-6 fail (7 in a row), 7 answers (0), 8-15 fail: 8 in a row when chunk [12-15] ends
    original = _Original(failing=[*range(7), *range(8, 16)])
    with pytest.raises(failures.RunRefused) as raised:
        resume._execute(original)(_store(), object(), "generate_until", [_Plain(n) for n in range(20)])
    assert len(original.calls) == 4
    assert "the last 8 requests failed" in str(raised.value) and "boom 15" in str(raised.value)


def test_a_failure_then_answers_keeps_the_run_going(inside_a_run, monkeypatch):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "2")
    original = _Original(failing=[0, 1, 2, 3, 4, 5, 6])  # 7 in a row, then answers
    answers = resume._execute(original)(_store(), object(), "generate_until", [_Plain(n) for n in range(10)])
    assert answers[7:] == ["A7", "A8", "A9"] and len(original.calls) == 5


def test_each_chunk_moves_the_bar_by_what_the_model_did_not_count(inside_a_run, monkeypatch, progress_bars):
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "2")
    resume._execute(_Original())(_store(), object(), "generate_until", [_Plain(n) for n in range(5)])
    (bar,) = progress_bars
    assert (bar.total, bar.updates) == (5, [2, 2, 1])


# --- what refuses a store, and failure markers kept out of it ---------------------------------------------------------


def test_an_unwritable_store_ends_the_run_naming_its_folder_and_the_fix():
    refused = resume.store_unwritable("/data/cache", sqlite3.OperationalError("database or disk is full"))
    assert isinstance(refused, failures.RunRefused)
    assert str(refused) == (
        "the answer store /data/cache cannot be written (OperationalError: database or disk is full): the answers "
        "saved before are kept there; free space there (or give --use_cache another folder) and run the same "
        "command again: it asks the model only for the missing ones"
    )


def test_the_stores_folder_is_its_root_else_its_databases_folder():
    assert resume._store_folder(types.SimpleNamespace(_cache_root="/root", db_path="/x/y.db")) == "/root"
    assert resume._store_folder(types.SimpleNamespace(_cache_root=None, db_path="/x/y.db")) == "/x"
    assert resume._store_folder(types.SimpleNamespace(db_path="/m/rank0.db")) == "/m"  # 0.7.0's store: no root


class _FakeStore:
    """The three ResponseCache methods ``_not_failures`` wraps, with lmms-eval's parameter names; records calls."""

    def __init__(self, found=None, error=None):
        self.calls, self.found, self.error, self._cache_root = [], found, error, "/fake"

    def _store(self, cache_key, request_type, task_name, doc_id, idx, gen_kwargs, response):
        if self.error:
            raise self.error
        self.calls.append(("store", cache_key, response))

    def _log_to_audit(self, request_type, task_name, doc_id, idx, gen_kwargs, response, *, cache_key=""):
        if self.error:
            raise self.error
        self.calls.append(("log", cache_key, response))

    def _lookup(self, cache_key):
        if self.error:
            raise self.error
        self.calls.append(("lookup", cache_key))
        return self.found


MARKER = "[LMMS_EVAL_REQUEST_FAILED] Connection error."


def _wrapped(name):
    return resume._not_failures(getattr(_FakeStore, name), name)


def test_a_failure_marker_is_not_stored_and_logged_without_its_key_in_a_run_of_ours(inside_a_run):
    store = _FakeStore()
    assert _wrapped("_store")(store, "k1", "gen", "t", 0, 0, {}, MARKER) is None
    _wrapped("_store")(store, "k2", "gen", "t", 0, 0, {}, response="A")
    _wrapped("_log_to_audit")(store, "gen", "t", 0, 0, {}, MARKER, cache_key="k3")
    _wrapped("_log_to_audit")(store, "gen", "t", 0, 0, {}, response=MARKER, cache_key="k4")
    _wrapped("_log_to_audit")(store, "gen", "t", 0, 0, {}, "B", cache_key="k5")
    assert store.calls == [("store", "k2", "A"), ("log", "", MARKER), ("log", "", MARKER), ("log", "k5", "B")]
    assert _wrapped("_store")._lmms_spatial is True


def test_a_stored_failure_marker_is_not_served_and_an_answer_is(inside_a_run):
    assert _wrapped("_lookup")(_FakeStore(found=MARKER), "k") is None
    assert _wrapped("_lookup")(_FakeStore(found="A"), "k") == "A"


def test_outside_a_run_of_ours_failure_markers_are_lmms_evals_business(monkeypatch):
    monkeypatch.setattr(run_state.STATE, "runs", [])
    store = _FakeStore(found=MARKER)
    _wrapped("_store")(store, "k1", "gen", "t", 0, 0, {}, MARKER)
    _wrapped("_log_to_audit")(store, "gen", "t", 0, 0, {}, MARKER, cache_key="k2")
    assert _wrapped("_lookup")(store, "k3") == MARKER
    assert store.calls == [("store", "k1", MARKER), ("log", "k2", MARKER), ("lookup", "k3")]
    with pytest.raises(sqlite3.OperationalError):  # lmms-eval's own error, not ours
        _wrapped("_store")(_FakeStore(error=sqlite3.OperationalError("full")), "k", "gen", "t", 0, 0, {}, "A")


@pytest.mark.parametrize("error", [sqlite3.OperationalError("database or disk is full"), OSError(28, "No space")])
def test_a_write_that_fails_in_a_run_of_ours_names_the_stores_folder(inside_a_run, error):
    for name, args in (("_store", ("k", "gen", "t", 0, 0, {}, "A")), ("_log_to_audit", ("gen", "t", 0, 0, {}, "A"))):
        with pytest.raises(failures.RunRefused, match=r"^the answer store /fake cannot be written") as raised:
            _wrapped(name)(_FakeStore(error=error), *args)
        assert raised.value.__cause__ is error


def test_a_method_without_a_response_parameter_is_passed_through(inside_a_run):
    class Other:
        def _store(self, key):
            return f"stored {key}"

    assert resume._not_failures(Other._store, "_store")(Other(), MARKER) == f"stored {MARKER}"


# --- the read-back of runs that never finished ------------------------------------------------------------------------


def _audit_line(key: str, response: str, doc_id: int = 0, deterministic: bool = True) -> str:
    return json.dumps({"cache_key": key, "request_type": "generate_until", "task_name": "t", "doc_id": doc_id,
                       "idx": 0, "gen_kwargs": "{}", "response": json.dumps(response), "created_at": 1.0,
                       "deterministic": deterministic})  # fmt: skip


def _run_record_db(path: Path, records: dict[str, dict]) -> None:
    db = sqlite3.connect(path)
    db.execute(_META)
    for run_id, record in records.items():
        db.execute("INSERT INTO meta VALUES (?, ?)", (resume.RUN_RECORD + run_id, json.dumps(record)))
    db.execute("INSERT INTO meta VALUES ('model_fingerprint', 'm')")  # not a run record: not copied
    db.commit()
    db.close()


def test_killed_runs_answers_and_run_records_are_read_back_and_merged_or_own_runs_are_not(tmp_path, capsys):
    root = tmp_path / "cache"
    runs = root / "runs"
    for name in ("a_killed", "b_killed", "c_merged", "d_own"):
        (runs / name).mkdir(parents=True)
    (runs / "a_killed" / "rank_0.audit.jsonl").write_text(_audit_line("k1", "A") + "\n")
    (runs / "a_killed" / "rank_1.audit.jsonl").write_text(_audit_line("k2", "B", 1) + "\n")
    (runs / "a_killed" / "other.jsonl").write_text(_audit_line("k9", "no") + "\n")  # not a rank's log
    _run_record_db(runs / "a_killed" / "rank_1.db", {"r1": {"started": 5.0}})
    (runs / "a_killed" / "rank_0.db").write_text("not a database")  # damaged: the next shard's records still read
    (runs / "b_killed" / "rank_0.audit.jsonl").write_text(_audit_line("k3", "C", 2) + "\n")
    (runs / "c_merged" / "rank_0.audit.jsonl").write_text(_audit_line("k4", "D") + "\n")
    (runs / "c_merged" / ".merged").write_text("1\n")
    (runs / "d_own" / "rank_0.audit.jsonl").write_text(_audit_line("k5", "E") + "\n")
    (runs / "a_file").write_text("")  # not a run folder
    db = _db(_RESPONSES, _META)
    cache = types.SimpleNamespace(_cache_root=str(root), _run_dir=str(runs / "d_own"), db=db)
    assert resume.replay_unmerged_runs(cache) == 3
    assert db.execute("SELECT cache_key, response FROM responses ORDER BY cache_key").fetchall() == [
        ("k1", '"A"'), ("k2", '"B"'), ("k3", '"C"')]  # fmt: skip
    assert db.execute("SELECT key, value FROM meta").fetchall() == [(resume.RUN_RECORD + "r1", '{"started": 5.0}')]
    assert capsys.readouterr().err == f"lmms-spatial: 3 answers of earlier interrupted runs found in {root}\n"
    assert resume.replay_unmerged_runs(cache) == 0  # already there: nothing said
    assert capsys.readouterr().err == ""


def test_the_committed_read_back_is_seen_by_another_connection(tmp_path):
    root = tmp_path / "cache"
    (root / "runs" / "killed").mkdir(parents=True)
    (root / "runs" / "killed" / "rank_0.audit.jsonl").write_text(_audit_line("k1", "A") + "\n")
    path = tmp_path / "own.db"
    db = sqlite3.connect(path)
    db.execute(_RESPONSES)
    db.execute(_META)
    db.commit()
    assert resume.replay_unmerged_runs(types.SimpleNamespace(_cache_root=str(root), _run_dir=None, db=db)) == 1
    other = sqlite3.connect(path)
    assert other.execute("SELECT cache_key FROM responses").fetchall() == [("k1",)]


def test_a_live_runs_folder_is_left_to_it_and_said(tmp_path, capsys, monkeypatch):
    root = tmp_path / "cache"
    for name in ("a_live", "b_killed"):
        (root / "runs" / name).mkdir(parents=True)
        (root / "runs" / name / "rank_0.audit.jsonl").write_text(_audit_line(f"k_{name}", "A") + "\n")
    monkeypatch.setattr(
        owners, "live_owner", lambda folder: {"pid": 41, "host": "gpu3"} if "live" in folder.name else None
    )
    cache = types.SimpleNamespace(_cache_root=str(root), _run_dir=None, db=_db(_RESPONSES, _META))
    assert resume.replay_unmerged_runs(cache) == 1  # the killed run after the live one is still read
    assert cache.db.execute("SELECT cache_key FROM responses").fetchall() == [("k_b_killed",)]
    assert capsys.readouterr().err == (
        f"lmms-spatial: process 41 on gpu3 is writing answers into {root} now: this run keeps its own apart and does "
        "not read that run's (if both evaluate the same, stop one)\n"
        f"lmms-spatial: 1 answers of earlier interrupted runs found in {root}\n"
    )


def test_no_root_or_no_database_or_no_runs_folder_reads_nothing(tmp_path):
    db = _db(_RESPONSES, _META)
    assert resume.replay_unmerged_runs(types.SimpleNamespace(_cache_root=None, db=db)) == 0
    assert resume.replay_unmerged_runs(types.SimpleNamespace(_cache_root=str(tmp_path), db=None)) == 0
    assert resume.replay_unmerged_runs(types.SimpleNamespace(_cache_root=str(tmp_path), db=db)) == 0
    assert resume.replay_unmerged_runs(types.SimpleNamespace(db=db)) == 0  # not lmms-eval 0.7.1+'s store
    assert resume.replay_unmerged_runs(types.SimpleNamespace(_cache_root=str(tmp_path))) == 0


def test_the_cache_version_is_the_installed_release_unless_lmms_eval_is_a_git_checkout(tmp_path, monkeypatch):
    import lmms_eval

    from lmms_spatial import plugin

    package = tmp_path / "project" / ".venv" / "site-packages" / "lmms_eval"
    package.mkdir(parents=True)
    (tmp_path / "project" / ".git").mkdir()  # the project around the venv: not lmms-eval's commit
    monkeypatch.setattr(lmms_eval, "__file__", str(package / "__init__.py"))
    monkeypatch.setattr(plugin, "lmms_eval_version", lambda: "0.7.3")
    assert resume.release_version("abc1234") == "0.7.3"
    monkeypatch.setattr(plugin, "lmms_eval_version", lambda: "unknown")
    assert resume.release_version("abc1234") == "abc1234"  # no release known: lmms-eval's own value
    monkeypatch.setattr(plugin, "lmms_eval_version", lambda: "0.7.3")
    (package.parent / ".git").mkdir()  # lmms-eval is the checkout
    assert resume.release_version("abc1234") == "abc1234"


# --- the run folder's lock --------------------------------------------------------------------------------------------


def test_a_run_folder_is_held_for_the_caches_rank_and_released_at_the_end(tmp_path, monkeypatch):
    held = []
    monkeypatch.setattr(owners, "hold", lambda folder, rank: held.append((folder, rank)) or ("handle", None))
    released = []
    monkeypatch.setattr(owners, "release", lambda handle: released.append(handle))
    run = Run(["t"])
    resume.hold_run_dir(types.SimpleNamespace(_run_dir=str(tmp_path / "r"), _global_rank=3), run)
    assert held == [(tmp_path / "r", 3)] and run.notes.lock == "handle"
    resume.hold_run_dir(types.SimpleNamespace(_run_dir="", _global_rank=None), run, folder=str(tmp_path / "m"))
    resume.hold_run_dir(types.SimpleNamespace(_run_dir=str(tmp_path / "r"), _global_rank=3), run, rank=1)
    assert held[1:] == [(tmp_path / "m", 0), (tmp_path / "r", 1)]
    resume.hold_run_dir(types.SimpleNamespace(_run_dir=str(tmp_path / "s")), run)  # no rank said: rank 0
    assert held[3] == (tmp_path / "s", 0)
    resume.hold_run_dir(types.SimpleNamespace(), run)  # no folder: nothing held
    assert len(held) == 4
    resume.release(run)
    assert released == ["handle"] and run.notes.lock is None


def test_a_run_folder_a_live_process_holds_refuses_the_run_naming_it_and_the_fix(tmp_path, monkeypatch):
    owner = {"pid": 77, "host": "node1", "started": "12:00"}
    monkeypatch.setattr(owners, "hold", lambda folder, rank: (None, owner))
    for name in resume._RUN_ID_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    run = Run(["t"])
    with pytest.raises(failures.RunRefused) as raised:
        resume.hold_run_dir(types.SimpleNamespace(_run_dir="/c/runs/x"), run)
    assert str(raised.value) == (
        "process 77 on node1, since 12:00 is writing answers into /c/runs/x, the folder of the same run id: two live "
        "runs cannot share one; wait for it to end, or give this run its own (LMMS_CACHE_RUN_ID=<id>)"
    )
    monkeypatch.setenv("SLURM_JOB_ID", "991")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "5")
    with pytest.raises(failures.RunRefused, match=r"the same run id \(SLURM_JOB_ID=991\): "):
        resume.hold_run_dir(types.SimpleNamespace(_run_dir="/c/runs/x"), run)
    with pytest.raises(failures.RunRefused) as raised:
        resume.hold_run_dir(types.SimpleNamespace(), run, folder="/c/abc")
    assert str(raised.value) == (
        "process 77 on node1, since 12:00 is writing answers into /c/abc, this lmms-eval's one answer store for this "
        "model: two live runs cannot share one; wait for it to end, or give this run another --output_path"
    )
    assert run.notes.lock is None


# --- ResponseCache.create in a run of ours ----------------------------------------------------------------------------


@needs_create
def test_a_store_created_in_a_run_of_ours_keys_on_the_release_folds_the_weights_and_holds_its_folder(
    tmp_path, run_of_ours, monkeypatch
):
    from lmms_eval.caching.response_cache import ResponseCache

    monkeypatch.setattr(resume, "release_version", lambda found: f"release-of-{found}")
    cache = ResponseCache.create(str(tmp_path), model="m", model_args="x=1", task_dict={})
    try:
        assert cache._eval_version.startswith("release-of-")
        assert cache.model_fingerprint == 'm|{"x":1}|weights:none'
        assert run_of_ours.notes.lock is not None
        assert owners.live_owner(Path(cache._run_dir))["pid"] == __import__("os").getpid()
    finally:
        cache.close()


@needs_create
def test_a_store_created_outside_a_run_of_ours_is_lmms_evals_own(tmp_path, monkeypatch):
    from lmms_eval.caching.response_cache import ResponseCache

    monkeypatch.setattr(run_state.STATE, "runs", [])
    cache = ResponseCache.create(str(tmp_path), model="m", model_args="x=1", task_dict={})
    cache.close()
    assert cache.model_fingerprint == 'm|{"x":1}' and not hasattr(cache, "_lmms_spatial_weights_folded")


@needs_create
def test_a_store_that_cannot_be_made_in_a_run_of_ours_names_its_folder(tmp_path, run_of_ours):
    from lmms_eval.caching.response_cache import ResponseCache

    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the folder should be
    with pytest.raises(failures.RunRefused, match=f"^the answer store {blocked} cannot be written"):
        ResponseCache.create(str(blocked), model="m", model_args="x=1", task_dict={})
    with pytest.raises(failures.RunRefused, match=f"^the answer store {blocked} cannot be written"):
        ResponseCache.create(cache_root=str(blocked), model="m", model_args="x=1", task_dict={})


@needs_create
def test_outside_a_run_of_ours_a_store_that_cannot_be_made_raises_lmms_evals_error(tmp_path, monkeypatch):
    from lmms_eval.caching.response_cache import ResponseCache

    monkeypatch.setattr(run_state.STATE, "runs", [])
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(OSError):
        ResponseCache.create(str(blocked), model="m", model_args="x=1", task_dict={})


@needs_create
def test_a_check_or_read_back_that_fails_is_said_and_the_store_still_opens(tmp_path, run_of_ours, monkeypatch, capsys):
    from lmms_eval.caching.response_cache import ResponseCache

    from lmms_spatial.plugin import store_check

    def broken(*args):
        raise ValueError("broken")

    monkeypatch.setattr(store_check, "check", broken)
    monkeypatch.setattr(resume, "replay_unmerged_runs", broken)
    cache = ResponseCache.create(str(tmp_path), model="m", model_args="x=1", task_dict={})
    cache.close()
    err = capsys.readouterr().err
    assert "lmms-spatial: the answer store was not checked: broken\n" in err
    assert "lmms-spatial: earlier runs' answers not read: broken\n" in err


@needs_create
def test_a_store_created_in_a_run_of_ours_reads_back_a_killed_runs_answers(tmp_path, run_of_ours):
    from lmms_eval.caching.response_cache import ResponseCache

    (tmp_path / "runs" / "killed").mkdir(parents=True)
    (tmp_path / "runs" / "killed" / "rank_0.audit.jsonl").write_text(_audit_line("k1", "A") + "\n")
    cache = ResponseCache.create(str(tmp_path), model="m", model_args="x=1", task_dict={})
    try:
        assert cache.db.execute("SELECT cache_key FROM responses").fetchall() == [("k1",)]
    finally:
        cache.close()


# --- lmms-eval's merge lock -------------------------------------------------------------------------------------------


def _lock_recording(events):
    @contextlib.contextmanager
    def original(lock_dir, *args, **kwargs):
        events.append(("enter", lock_dir, args, kwargs))
        yield
        events.append(("exit", lock_dir))

    return original


def test_outside_a_run_of_ours_the_merge_lock_is_lmms_evals(monkeypatch):
    monkeypatch.setattr(run_state.STATE, "runs", [])
    monkeypatch.setattr(owners, "take_over_dead_merge_lock", lambda d: pytest.fail("taken over"))
    events = []
    with resume._merge_lock(_lock_recording(events))("/c/.lock", 60, poll_interval_seconds=1.0):
        events.append(("inside",))
    assert events == [("enter", "/c/.lock", (60,), {"poll_interval_seconds": 1.0}), ("inside",), ("exit", "/c/.lock")]


@pytest.mark.parametrize(
    ("owner", "said"),
    [
        (None, ""),
        ({"pid": 9, "host": "h"}, "lmms-spatial: the answer store's merge lock /c/.lock was left by process 9 on h, "
                                  "which is no longer running: taken over\n"),
    ],
)  # fmt: skip
def test_a_dead_owners_merge_lock_is_taken_over_and_said(inside_a_run, monkeypatch, capsys, owner, said):
    seen = []
    monkeypatch.setattr(owners, "take_over_dead_merge_lock", lambda d: seen.append(d) or owner)
    events = []
    with resume._merge_lock(_lock_recording(events))("/c/.lock", 5):
        events.append(("inside",))
    assert seen == [Path("/c/.lock")]
    assert events == [("enter", "/c/.lock", (5,), {}), ("inside",), ("exit", "/c/.lock")]
    assert capsys.readouterr().err == said


def test_a_lock_left_by_an_owner_that_never_recorded_itself_is_said_so(inside_a_run, monkeypatch, capsys):
    monkeypatch.setattr(owners, "take_over_dead_merge_lock", lambda d: {})
    with resume._merge_lock(_lock_recording([]))("/c/.lock"):
        pass
    assert capsys.readouterr().err == (
        "lmms-spatial: the answer store's merge lock /c/.lock was left by a process that never recorded itself: taken "
        "over\n"
    )


def test_a_merge_lock_that_fails_half_made_is_dropped_and_a_timeout_is_not(inside_a_run, monkeypatch):
    monkeypatch.setattr(owners, "take_over_dead_merge_lock", lambda d: None)
    dropped = []
    monkeypatch.setattr(owners, "drop_half_made_merge_lock", lambda d: dropped.append(d))

    def failing(error):
        @contextlib.contextmanager
        def original(lock_dir, *args, **kwargs):
            raise error
            yield

        return original

    with pytest.raises(OSError, match="No space"):
        with resume._merge_lock(failing(OSError(28, "No space")))("/c/.lock"):
            pass
    assert dropped == [Path("/c/.lock")]
    with pytest.raises(TimeoutError):
        with resume._merge_lock(failing(TimeoutError("60 s")))("/c/.lock"):
            pass
    assert dropped == [Path("/c/.lock")]  # someone else's live lock: left alone
    assert resume._merge_lock(failing(OSError()))._lmms_spatial is True


# --- patching lmms-eval's ResponseCache -------------------------------------------------------------------------------


def test_the_response_cache_is_patched_once_each_method_wrapped_by_ours(inside_a_run):
    class ResponseCache:
        def execute(self, lm, reqtype, requests):
            return "executed"

        def _store(self, cache_key, response):
            pass

        def _log_to_audit(self, response, *, cache_key=""):
            pass

        def _lookup(self, cache_key):
            return MARKER

        @classmethod
        def create(cls, cache_root):
            return cls()

    entered = []

    @contextlib.contextmanager
    def _merge_lock(lock_dir):
        entered.append(lock_dir)
        yield

    module = types.SimpleNamespace(ResponseCache=ResponseCache, _merge_lock=_merge_lock)
    resume.patch_response_cache(module)
    patched = {name: ResponseCache.__dict__[name] for name in ("execute", "_store", "_log_to_audit", "_lookup")}
    assert all(getattr(method, "_lmms_spatial", False) for method in patched.values())
    create = ResponseCache.__dict__["create"]
    assert create.__func__._lmms_spatial is True
    assert module._merge_lock._lmms_spatial is True
    lock = module._merge_lock
    resume.patch_response_cache(module)  # again: nothing wrapped twice
    assert {name: ResponseCache.__dict__[name] for name in patched} == patched and module._merge_lock is lock
    assert ResponseCache.__dict__["create"] is create
    assert ResponseCache.__dict__["execute"].__wrapped__.__name__ == "execute"
    assert not hasattr(ResponseCache.__dict__["execute"].__wrapped__, "__wrapped__")
    # the wrapped methods work as ours: a stored failure marker is not served, create and the lock still work
    assert ResponseCache()._lookup("k") is None
    assert isinstance(ResponseCache.create("/nowhere"), ResponseCache)
    with module._merge_lock("/c/.lock"):
        pass
    assert entered == ["/c/.lock"]


def test_an_lmms_eval_without_the_execute_it_knows_is_left_unpatched_and_said(capsys):
    module = types.ModuleType("fake_response_cache")

    class ResponseCache:
        def _store(self, cache_key, response):
            pass

    module.ResponseCache = ResponseCache
    resume.patch_response_cache(module)
    assert not hasattr(ResponseCache.__dict__["_store"], "_lmms_spatial")
    assert capsys.readouterr().err == (
        "lmms-spatial: this lmms-eval has no fake_response_cache.ResponseCache.execute; answers are saved only when "
        "the model returns all of them\n"
    )


def test_lmms_eval_0_7_0_without_create_or_merge_lock_gets_execute_and_the_three_methods():
    class ResponseCache:
        def execute(self, lm, reqtype, requests):
            pass

        def _lookup(self, cache_key):
            pass

    module = types.SimpleNamespace(ResponseCache=ResponseCache)
    resume.patch_response_cache(module)
    assert ResponseCache.__dict__["execute"]._lmms_spatial and ResponseCache.__dict__["_lookup"]._lmms_spatial
    assert "create" not in ResponseCache.__dict__ and not hasattr(module, "_merge_lock")


# --- what answered: the weights in the key, the runs recorded, the answers served -------------------------------------


def _weights_cache(tmp_path, db=True, **more):
    values = {"model_fingerprint": 'm|{"x":1}', "_model_fingerprint_hash": "legacy0123456789", "_run_id": "r7",
              "_cache_root": str(tmp_path), "db": _db(_META) if db else None, **more}  # fmt: skip
    return types.SimpleNamespace(**values)


def test_the_weights_join_the_model_key_and_the_run_is_recorded_in_the_store(tmp_path, monkeypatch, capsys):
    import time

    from lmms_spatial.plugin import weights

    monkeypatch.setattr(weights, "fingerprint", lambda args: f"local:{args}")
    cache = _weights_cache(tmp_path)
    run = _run({"model": "m"}, types.SimpleNamespace(output_path="out/q"))
    before = time.time()
    resume.fold_weights(cache, "w1", run)
    after = time.time()
    key = 'm|{"x":1}|weights:local:w1'
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    assert (cache.model_fingerprint, cache._model_fingerprint_hash) == (key, digest)
    assert (cache._lmms_spatial_weights, cache._lmms_spatial_weights_folded) == ("local:w1", True)
    meta = dict(cache.db.execute("SELECT key, value FROM meta").fetchall())
    record = json.loads(meta.pop(resume.RUN_RECORD + "r7"))
    assert meta == {"model_fingerprint": key, "model_fingerprint_hash": digest}
    assert before <= record.pop("started") <= after
    assert record == {"output_path": "out/q", "weights": "local:w1", "model_hash": digest}
    assert capsys.readouterr().err == ""  # resolved weights, no answers kept without them: nothing said
    resume.fold_weights(cache, "w2", run)  # folded once
    assert cache.model_fingerprint == key
    assert not cache.db.in_transaction  # committed


def test_a_store_with_no_run_id_records_the_run_as_run_and_an_earlier_record_is_kept(tmp_path, monkeypatch):
    from lmms_spatial.plugin import weights

    monkeypatch.setattr(weights, "fingerprint", lambda args: None)
    cache = _weights_cache(tmp_path, _run_id="")
    cache.db.execute("INSERT INTO meta VALUES (?, ?)", (resume.RUN_RECORD + "run", '{"started": 1.0}'))
    resume.fold_weights(cache, "", None)
    assert cache.model_fingerprint == 'm|{"x":1}|weights:none' and cache._lmms_spatial_weights is None
    rows = cache.db.execute("SELECT key, value FROM meta WHERE key LIKE 'lmms_spatial_run:%'").fetchall()
    assert rows == [(resume.RUN_RECORD + "run", '{"started": 1.0}')]  # INSERT OR IGNORE: the first record stays


def test_a_store_not_ours_or_without_a_database_is_keyed_but_not_recorded(tmp_path, monkeypatch, capsys):
    from lmms_spatial.plugin import weights

    monkeypatch.setattr(weights, "fingerprint", lambda args: "hub:q@unresolved")
    other = types.SimpleNamespace(model_fingerprint=None)
    resume.fold_weights(other, "a")
    assert other.model_fingerprint is None and not hasattr(other, "_lmms_spatial_weights_folded")
    cache = _weights_cache(tmp_path, db=False)
    resume.fold_weights(cache, "a")
    assert cache.model_fingerprint == 'm|{"x":1}|weights:hub:q@unresolved'
    assert capsys.readouterr().err == ""  # no database: nothing recorded, nothing said


def test_unresolved_weights_and_answers_kept_without_a_fingerprint_are_each_said(tmp_path, monkeypatch, capsys):
    from lmms_spatial.plugin import weights

    monkeypatch.setattr(weights, "fingerprint", lambda args: "hub:org/q@unresolved")
    needle = '"model_fingerprint_hash": "legacy0123456789"'
    (tmp_path / "cache.audit.jsonl").write_text(f"{{{needle}}}\n{{{needle}}}\n{{}}\n")
    resume.fold_weights(_weights_cache(tmp_path), "pretrained=org/q")
    assert capsys.readouterr().err == (
        "lmms-spatial: the weights of this model are not fingerprinted (weights hub:org/q@unresolved): its kept "
        "answers are keyed on --model_args alone\n"
        f"lmms-spatial: 2 answers in {tmp_path} were kept for the same --model_args without a fingerprint of the "
        "weights (an earlier lmms-spatial, or lmms-eval alone): not served, since the weights that gave them are "
        "unknown; they are asked again\n"
    )


def test_a_record_that_cannot_be_written_is_said_and_the_key_is_still_folded(tmp_path, monkeypatch, capsys):
    from lmms_spatial.plugin import weights

    monkeypatch.setattr(weights, "fingerprint", lambda args: "local:1")
    cache = _weights_cache(tmp_path, db=False)
    cache.db = _db()  # no meta table
    resume.fold_weights(cache, "a")
    assert cache.model_fingerprint.endswith("|weights:local:1")
    assert capsys.readouterr().err == (
        "lmms-spatial: this run is not recorded in its answer store (no such table: meta)\n"
    )


def test_a_runs_output_is_its_calls_or_command_lines():
    assert resume._run_output(None) is None
    assert resume._run_output(_run({}, types.SimpleNamespace(output_path="o1"))) == "o1"
    tracker = types.SimpleNamespace(output_path="o2")
    assert resume._run_output(_run({"evaluation_tracker": tracker}, None)) == "o2"
    assert resume._run_output(types.SimpleNamespace(cli_args=types.SimpleNamespace(output_path="o3"))) == "o3"
    assert resume._run_output(types.SimpleNamespace(call=Call({"evaluation_tracker": tracker}))) == "o2"


def test_answers_without_a_fingerprint_are_counted_in_the_merged_log_and_in_runs_never_merged(tmp_path):
    legacy = "abcdef0123456789"
    line = json.dumps({"model_fingerprint_hash": legacy, "response": "x"})
    other = json.dumps({"model_fingerprint_hash": "ffffffffffffffff"})
    (tmp_path / "cache.audit.jsonl").write_text(f"{line}\n{other}\n{line}\n")  # 2
    runs = tmp_path / "runs"
    for name in ("killed", "merged"):
        (runs / name).mkdir(parents=True)
    (runs / "killed" / "rank_0.audit.jsonl").write_text(f"{line}\n")  # 1
    (runs / "killed" / "rank_1.audit.jsonl").write_text(f"{line}\n{line}\n")  # 2
    (runs / "killed" / "notes.jsonl").write_text(f"{line}\n")  # not a rank's log
    (runs / "merged" / "rank_0.audit.jsonl").write_text(f"{line}\n")  # already in the merged log
    (runs / "merged" / ".merged").write_text("")
    (runs / "rank_0.audit.jsonl").write_text(f"{line}\n")  # a file, not a run folder
    assert resume.count_unfingerprinted(str(tmp_path), legacy) == 5  # 2 + 1 + 2
    assert resume.count_unfingerprinted(str(tmp_path), "") == 0
    assert resume.count_unfingerprinted(None, legacy) == 0
    assert resume.count_unfingerprinted(str(tmp_path / "none"), legacy) == 0  # no log at all
    (tmp_path / "cache.audit.jsonl").unlink()  # never merged yet: only the runs' logs
    assert resume.count_unfingerprinted(str(tmp_path), legacy) == 3


def test_the_time_an_answer_was_kept_is_read_from_the_own_store_then_the_shared_one():
    own, shared = _db(_RESPONSES), _db(_RESPONSES)
    own.execute("INSERT INTO responses (cache_key, created_at) VALUES ('a', 5.5), ('z', NULL)")
    shared.execute("INSERT INTO responses (cache_key, created_at) VALUES ('a', 1.0), ('b', 7)")
    cache = types.SimpleNamespace(db=own, _shared_db=shared)
    assert resume._lookup_created(cache, "a") == 5.5
    assert resume._lookup_created(cache, "b") == 7.0 and isinstance(resume._lookup_created(cache, "b"), float)
    assert resume._lookup_created(cache, "z") == 0.0
    assert resume._lookup_created(cache, "c") is None
    broken = types.SimpleNamespace(db=_db(), _shared_db=shared)  # no responses table in the own store
    assert resume._lookup_created(broken, "b") == 7.0
    assert resume._lookup_created(types.SimpleNamespace(db=None, _shared_db=None), "a") is None
    assert resume._lookup_created(types.SimpleNamespace(db=None, _shared_db=shared), "b") == 7.0
    assert resume._lookup_created(types.SimpleNamespace(_shared_db=shared), "b") == 7.0
    assert resume._lookup_created(types.SimpleNamespace(db=own), "a") == 5.5  # 0.7.0: no shared store


def _real_store(tmp_path):
    from lmms_eval.caching.response_cache import ResponseCache

    tmp_path.mkdir(parents=True, exist_ok=True)
    return ResponseCache(str(tmp_path / "c.db"), str(tmp_path / "c.jsonl"), model_fingerprint="m|x")


def _sampled(doc_id: int, task: str = "t"):
    from lmms_eval.api.instance import Instance

    return Instance("generate_until", (f"question {doc_id}", {"max_new_tokens": 8, "temperature": 0.7}), 0,
                    {"task": task, "doc_id": doc_id, "repeats": 1})  # fmt: skip


class _Echo:
    def generate_until(self, requests):
        return [f"A{r.doc_id}" for r in requests]


@needs_create
def test_the_answers_the_store_will_serve_are_counted_per_task_with_the_time_each_was_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(run_state.STATE, "runs", [])
    store = _real_store(tmp_path)
    try:
        store.execute(_Echo(), "generate_until", [_request(0), _request(1, task="u")])
        kept = dict(store.db.execute("SELECT doc_id, created_at FROM responses").fetchall())
        asked = [_request(0), _request(1, task="u"), _request(2), _sampled(0), _request(1)]
        resume.count_served(store, "generate_until", asked)
        # kept: t/0 and u/1; t/2, t/1 never answered; a sampled request is never served
        assert store._lmms_spatial_served == {"t": [kept[0]], "u": [kept[1]]}
        assert store._lmms_spatial_asked == {"t": 4, "u": 1}
        resume.count_served(store, "generate_until", [_request(0)])  # the next call adds to the counts
        assert store._lmms_spatial_served == {"t": [kept[0], kept[0]], "u": [kept[1]]}
        assert store._lmms_spatial_asked == {"t": 5, "u": 1}
    finally:
        store.close()


def test_ctrl_c_between_an_answers_log_line_and_its_store_row_still_counts_it_kept(tmp_path, monkeypatch):
    """lmms-eval logs each answer (fsync'd) before it writes the store row; a Ctrl-C between the two leaves the answer
    in the log only. The same command reads it back from the log, so the interrupted run's line counts it."""
    from lmms_spatial.plugin import run as run_module

    monkeypatch.setattr(run_state.STATE, "runs", [])
    store = _real_store(tmp_path)
    stored = store._store

    def interrupted_at_the_second(*args):
        if store.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 1:
            raise KeyboardInterrupt  # the second answer is in the log, not in the store
        stored(*args)

    monkeypatch.setattr(store, "_store", interrupted_at_the_second)
    try:
        with pytest.raises(KeyboardInterrupt):
            store.execute(_Echo(), "generate_until", [_request(0), _request(1), _request(2)])
        assert store.db.execute("SELECT doc_id FROM responses").fetchall() == [(0,)]
        run = Run(["t"])
        run_module._count_kept(store, run)
        assert run.notes.kept_answers == 2  # doc 0 from the store, doc 1 from the log; doc 2 was never answered
        assert store.db.execute("SELECT doc_id, response FROM responses ORDER BY doc_id").fetchall() == [
            (0, json.dumps("A0")), (1, json.dumps("A1"))]  # fmt: skip
    finally:
        store.close()


@needs_create
def test_a_request_evening_out_the_ranks_is_neither_asked_nor_served(tmp_path, monkeypatch):
    """Data parallel: lmms-eval pads a rank with fewer requests with copies of its last one (never scored)."""
    monkeypatch.setattr(run_state.STATE, "runs", [])
    store = _real_store(tmp_path)
    try:
        store.execute(_Echo(), "generate_until", [_request(0)])
        pad = _request(0)
        pad.metadata = {**(pad.metadata or {}), resume.PADDING: True}
        resume.count_served(store, "generate_until", [_request(0), pad, _request(1, task="u")])
        assert store._lmms_spatial_asked == {"t": 1, "u": 1}  # the pad of t/0 is neither asked
        assert len(store._lmms_spatial_served["t"]) == 1  # nor served
    finally:
        store.close()


@needs_create
def test_a_request_keyed_under_another_task_fingerprint_or_model_is_not_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(run_state.STATE, "runs", [])
    store = _real_store(tmp_path)
    try:
        store.execute(_Echo(), "generate_until", [_request(0)])
        store._task_fingerprints = {"t": "changed"}
        resume.count_served(store, "generate_until", [_request(0)])
        assert store._lmms_spatial_served == {} and store._lmms_spatial_asked == {"t": 1}
    finally:
        store.close()


def test_a_count_that_cannot_be_made_is_unknown_never_wrong():
    cache = types.SimpleNamespace(_task_fingerprints=None)  # not lmms-eval's store
    resume.count_served(cache, "generate_until", [_request(0)])
    assert cache._lmms_spatial_served is None


def _records_db(rows: dict[str, str]) -> sqlite3.Connection:
    db = _db(_META)
    for key, value in rows.items():
        db.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
    return db


def test_the_runs_recorded_in_the_store_are_read_from_both_databases_sorted_by_start_without_this_one():
    R = resume.RUN_RECORD
    own = _records_db({R + "b": '{"started": 20, "weights": "w"}', R + "me": '{"started": 30}', R + "bad": "{",
                       R + "list": "[1]", R + "nostart": '{"x": 1}', R + "text": '{"started": "10"}',
                       "model_fingerprint": '{"started": 1}'})  # fmt: skip
    shared = _records_db({R + "a": '{"started": 10.5}', R + "b": '{"started": 20, "weights": "w"}'})
    cache = types.SimpleNamespace(db=own, _shared_db=shared, _run_id="me")
    assert resume._run_records(cache) == [{"started": 10.5, "run_id": "a"},
                                          {"started": 20, "weights": "w", "run_id": "b"}]  # fmt: skip
    broken = types.SimpleNamespace(db=_db(), _shared_db=None, _run_id="")
    assert resume._run_records(broken) == []
    first_broken = types.SimpleNamespace(db=_db(), _shared_db=shared, _run_id="")
    assert [r["run_id"] for r in resume._run_records(first_broken)] == ["a", "b"]
    no_own = types.SimpleNamespace(db=None, _shared_db=shared, _run_id="")
    assert [r["run_id"] for r in resume._run_records(no_own)] == ["a", "b"]
    assert resume._run_records(types.SimpleNamespace()) == []  # not lmms-eval's store


def test_an_unreadable_run_record_does_not_hide_the_ones_after_it():
    R = resume.RUN_RECORD
    db = _db(_META)
    db.execute("INSERT INTO meta VALUES (?, ?)", (R + "a_bad", "{"))
    db.execute("INSERT INTO meta VALUES (?, ?)", (R + "b_good", '{"started": 1}'))
    assert db.execute("SELECT key FROM meta").fetchall() == [(R + "a_bad",), (R + "b_good",)]  # read in this order
    assert resume._run_records(types.SimpleNamespace(db=db)) == [{"started": 1, "run_id": "b_good"}]


def test_a_run_is_described_by_its_start_in_utc_its_output_and_id():
    assert resume.describe_run({"started": 0, "output_path": "runs/a", "run_id": "1a2b"}) == (
        "the run of 1970-01-01 00:00:00 UTC into runs/a (run id 1a2b)")  # fmt: skip
    assert resume.describe_run({"started": 86400 + 3661.9, "output_path": None, "run_id": "x"}) == (
        "the run of 1970-01-02 01:01:01 UTC (run id x)")  # fmt: skip
    assert resume.describe_run(None) == (
        "a run that did not record itself (an earlier lmms-spatial, or lmms-eval alone)")  # fmt: skip


def test_the_served_summary_names_the_latest_run_started_before_each_answer(tmp_path):
    R = resume.RUN_RECORD
    db = _records_db({R + "r1": json.dumps({"started": 100, "output_path": "o1", "model_hash": "h"}),
                      R + "r2": json.dumps({"started": 200, "model_hash": "h"}),
                      R + "other": json.dumps({"started": 150, "model_hash": "other weights"})})  # fmt: skip
    cache = types.SimpleNamespace(db=db, _shared_db=None, _run_id="now", _model_fingerprint_hash="h",
                                  _cache_root="/store", _lmms_spatial_weights="local:w",
                                  _lmms_spatial_served={"t": [150, 100, 250], "u": [50, 200]},
                                  _lmms_spatial_asked={"u": 4, "t": 5, "v": 1})  # fmt: skip
    r1 = "the run of 1970-01-01 00:01:40 UTC into o1 (run id r1)"
    r2 = "the run of 1970-01-01 00:03:20 UTC (run id r2)"
    unknown = resume.describe_run(None)
    # 150 and 100 -> r1 (started 100; "other" has other weights); 250 and 200 -> r2; 50 -> before any record
    assert resume.served_summary(cache) == {
        "root": "/store", "weights": "local:w", "answers": 5, "asked": 10, "tasks": {"t": 3, "u": 2, "v": 0},
        "from": [{"run": r1, "answers": 2}, {"run": r2, "answers": 2}, {"run": unknown, "answers": 1}],
    }  # fmt: skip
    assert resume.served_line(resume.served_summary(cache)) == (
        f"lmms-spatial: 5 of 10 answers came from the answer store in /store: 2 from {r1}; 2 from {r2}; 1 from "
        f"{unknown}; 5 asked of the model"
    )


def test_a_summary_is_none_when_the_count_is_unknown_and_its_root_falls_back_to_the_databases_folder():
    assert resume.served_summary(None) is None
    assert resume.served_summary(types.SimpleNamespace(_lmms_spatial_served=None)) is None
    cache = types.SimpleNamespace(db=None, db_path="/a/b/rank0.db", _lmms_spatial_served={})
    assert resume.served_summary(cache) == {"root": "/a/b", "weights": None, "answers": 0, "asked": 0, "tasks": {},
                                            "from": []}  # fmt: skip
    assert resume.served_line(resume.served_summary(cache)) is None
    assert resume.served_line(None) is None


def test_sources_with_as_many_answers_are_named_in_order():
    served = {"t": [3, 2, 1]}
    R = resume.RUN_RECORD
    db = _records_db({R + "b": json.dumps({"started": 2}), R + "a": json.dumps({"started": 3})})
    cache = types.SimpleNamespace(db=db, _run_id="", _model_fingerprint_hash=None, _lmms_spatial_served=served,
                                  _lmms_spatial_asked={"t": 3})  # fmt: skip
    # 3 -> a; 2 -> b; 1 -> no record: one each, named in alphabetical order of their text, not in the order met
    assert [s["run"] for s in resume.served_summary(cache)["from"]] == sorted(
        [resume.describe_run(None), "the run of 1970-01-01 00:00:02 UTC (run id b)",
         "the run of 1970-01-01 00:00:03 UTC (run id a)"])  # fmt: skip


def test_a_short_hash_is_sha256s_first_16_digits_and_nothing_for_nothing():
    assert resume._short_hash("m|x") == hashlib.sha256(b"m|x").hexdigest()[:16]
    assert resume._short_hash("") == ""


def test_a_store_that_lacks_lmms_evals_later_attributes_is_keyed_and_recorded_as_run(tmp_path, monkeypatch, capsys):
    from lmms_spatial.plugin import weights

    monkeypatch.setattr(weights, "fingerprint", lambda args: "local:1")
    cache = types.SimpleNamespace(model_fingerprint="m|a", db=_db(_META))  # no hash, run id or root
    resume.fold_weights(cache, "a")
    assert cache._model_fingerprint_hash == hashlib.sha256(b"m|a|weights:local:1").hexdigest()[:16]
    assert [k for (k,) in cache.db.execute("SELECT key FROM meta WHERE key LIKE 'lmms_spatial_run:%'")] == [
        resume.RUN_RECORD + "run"]  # fmt: skip
    nothing = types.SimpleNamespace(model_fingerprint="m|a")  # no database either
    resume.fold_weights(nothing, "a")
    assert nothing.model_fingerprint == "m|a|weights:local:1"
    assert capsys.readouterr().err == ""


@needs_create
def test_a_request_with_another_option_index_or_no_task_is_counted_apart(tmp_path, monkeypatch):
    from lmms_eval.api.instance import Instance

    monkeypatch.setattr(run_state.STATE, "runs", [])
    store = _real_store(tmp_path)
    option = Instance("generate_until", ("q", {"temperature": 0}), 1, {"task": "t", "doc_id": 0, "repeats": 1})
    untasked = Instance("generate_until", ("q", {"temperature": 0}), 0, {"task": None, "doc_id": 0, "repeats": 1})
    try:
        store.execute(_Echo(), "generate_until", [option])  # option 1 of document 0 kept
        kept = store.db.execute("SELECT created_at FROM responses").fetchone()[0]
        resume.count_served(store, "generate_until", [_request(0), option, untasked])
        assert store._lmms_spatial_served == {"t": [kept]}  # option 0 of the same document is not option 1
        assert store._lmms_spatial_asked == {"t": 2, "?": 1}
    finally:
        store.close()


def test_the_summary_of_a_store_without_a_model_hash_names_runs_that_recorded_none():
    R = resume.RUN_RECORD
    db = _records_db({R + "a": json.dumps({"started": 1}), R + "b": json.dumps({"started": 2, "model_hash": "h"})})
    cache = types.SimpleNamespace(db=db, _lmms_spatial_served={"t": [5]}, _lmms_spatial_asked={"t": 1})
    assert resume.served_summary(cache)["from"] == [{"run": "the run of 1970-01-01 00:00:01 UTC (run id a)",
                                                     "answers": 1}]  # fmt: skip


def _fake_response_cache_module():
    """What patch_response_cache patches, as lmms-eval 0.7.3's caching.response_cache has it."""
    from lmms_eval.caching import response_cache as rc

    module = types.ModuleType("fake_response_cache")

    class ResponseCache:
        def execute(self, lm, reqtype, requests):
            return []

        def _store(self, cache_key, request_type, task_name, doc_id, idx, gen_kwargs, response):
            return None

        def _log_to_audit(self, request_type, task_name, doc_id, idx, gen_kwargs, response, *, cache_key=""):
            return None

        def _lookup(self, cache_key):
            return None

        @classmethod
        def create(cls, cache_root, **kwargs):
            return cls()

        def finalize(self, *, success, dist_backend="accelerate", accelerator=None):
            return "finalized"

    @contextlib.contextmanager
    def _merge_lock(lock_dir, timeout_seconds=60, poll_interval_seconds=1.0):
        yield

    module.ResponseCache = ResponseCache
    module.extract_gen_kwargs = getattr(rc.extract_gen_kwargs, "__wrapped__", rc.extract_gen_kwargs)
    module.is_deterministic = getattr(rc.is_deterministic, "__wrapped__", rc.is_deterministic)
    module.CACHE_RELEVANT_KEYS = frozenset({"temperature", "do_sample"})
    module._resolve_cache_run_id = lambda world_size: "none"
    module._merge_lock = _merge_lock
    return module


def test_the_response_cache_is_patched_once_each_function_by_one_wrapper(monkeypatch):
    from lmms_spatial.plugin import sampling

    module = _fake_response_cache_module()
    originals = {name: getattr(module, name) for name in ("extract_gen_kwargs", "is_deterministic",
                                                            "_resolve_cache_run_id")}  # fmt: skip
    finalize = module.ResponseCache.finalize
    resume.patch_response_cache(module)
    patched = {name: getattr(module, name) for name in originals}
    for name, function in patched.items():
        assert function is not originals[name] and function._lmms_spatial and function.__wrapped__ is originals[name]
    assert module.ResponseCache.finalize._lmms_spatial and module.ResponseCache.finalize.__wrapped__ is finalize
    # sampled answers: their key holds the seed and draw, they are kept, and the key canonicalises with it
    assert module.CACHE_RELEVANT_KEYS == frozenset({"temperature", "do_sample", sampling.KEY})
    monkeypatch.setattr(sampling, "_seed", lambda: "torch=3")
    sampled = types.SimpleNamespace(args=("q", {"do_sample": True}), request_type="generate_until", metadata={})
    kept = module.extract_gen_kwargs(sampled)
    assert kept == {"do_sample": True, sampling.KEY: {"seed": "torch=3", "draw": 0}}
    assert module.is_deterministic("generate_until", kept) and not module.is_deterministic(
        "generate_until", {"do_sample": True}
    )
    assert module._resolve_cache_run_id(1) == "none"  # one process: lmms-eval's own id
    # patched again (lmms-eval imported twice, a test's reload): nothing is wrapped twice
    again = {name: getattr(module, name) for name in ("extract_gen_kwargs", "is_deterministic",
                                                        "_resolve_cache_run_id", "CACHE_RELEVANT_KEYS")}  # fmt: skip
    wrapped_finalize, lock = module.ResponseCache.finalize, module._merge_lock
    resume.patch_response_cache(module)
    assert all(getattr(module, name) is value for name, value in again.items())
    assert module.ResponseCache.finalize is wrapped_finalize and module._merge_lock is lock


def test_a_finalize_outside_a_run_of_ours_or_of_a_failed_run_sends_nothing_to_the_main_rank(monkeypatch):
    from lmms_spatial.plugin import ranks

    sent = []
    monkeypatch.setattr(ranks, "send_to_main", sent.append)
    module = _fake_response_cache_module()
    resume.patch_response_cache(module)
    cache = module.ResponseCache()
    monkeypatch.setattr(run_state.STATE, "runs", [])
    assert cache.finalize(success=True) == "finalized" and sent == []
    monkeypatch.setattr(run_state.STATE, "runs", [Run(["t"])])
    assert cache.finalize(success=False) == "finalized" and sent == []
    assert cache.finalize(success=True) == "finalized" and sent == [cache]


def test_the_backend_is_the_calls_else_accelerate(monkeypatch):
    monkeypatch.setattr(run_state.STATE, "calls", [])
    assert resume._backend() == "accelerate"
    monkeypatch.setattr(run_state.STATE, "calls", [Call({"distributed_executor_backend": "torchrun"})])
    assert resume._backend() == "torchrun"
    monkeypatch.setattr(run_state.STATE, "calls", [Call({"distributed_executor_backend": None})])
    assert resume._backend() == "accelerate"
