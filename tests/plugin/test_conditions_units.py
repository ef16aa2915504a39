"""A run's conditions as typed values (lmms_spatial/conditions.py), pinned value by value (issue 42): what each record
writes (keys in order), what it reads back from a file of this or an earlier version, and the words the report
shows for a judge. Hand-written JSON, no run."""

from __future__ import annotations

import json
import math

import pytest

from lmms_spatial import conditions as c
from lmms_spatial.conditions import (
    DataRecord,
    Generation,
    Judge,
    ModelRecord,
    RunConditions,
    StoreRecord,
    TaskNeeds,
    TaskRecord,
)

# --- model arguments and labels --------------------------------------------------------------------------------------


def test_model_args_are_read_as_name_value_pairs_blank_names_and_parts_without_a_value_left_out():
    assert c.parse_model_args(" pretrained = a/b ,device=cpu,flag,=x,empty=") == {
        "pretrained": "a/b", "device": "cpu", "empty": ""}  # fmt: skip
    assert c.parse_model_args({"seed": 3, 4: True}) == {"seed": "3", "4": "True"}
    assert c.parse_model_args(None) == {} and c.parse_model_args("") == {}
    assert c.parse_model_args("a=b=c") == {"a": "b=c"}


def test_a_short_name_is_the_last_part_of_a_hub_id_or_path():
    assert c.short_name("Qwen/Qwen2.5-VL-7B-Instruct") == "Qwen2.5-VL-7B-Instruct"
    assert c.short_name("C:\\ckpt\\step_100\\") == "step_100"
    assert c.short_name("/") == "/"


def test_the_label_is_pretrained_then_model_version_then_model_else_the_model_name():
    assert c.model_label("qwen", "model=m/c,model_version=v/b,pretrained=p/a") == "a"
    assert c.model_label("openai", "model=m/c,model_version=v/b") == "b"
    assert c.model_label("vllm", "model=m/c,pretrained=") == "c"
    assert c.model_label("random_choice", "seed=1") == "random_choice"
    assert c.model_label(None, "") == "model"


def test_a_count_is_a_whole_or_float_number_never_a_bool_nan_or_text():
    assert [c.int_or_none(v) for v in (3, 3.0, 2.7, True, math.nan, "3", None)] == [3, 3, 2, None, None, None, None]
    # each value on its own: True after 1 (equal as keys) is still no count, and a list is no count, not an error
    assert [c.int_or_none(v) for v in (1, True, 0, False, [1])] == [1, None, 0, None, None]
    assert [c.text_or_none(v) for v in (None, 5, "x")] == [None, "5", "x"]


# --- the judge --------------------------------------------------------------------------------------------------------


def test_an_llm_judge_writes_its_counts_only_when_they_were_recorded():
    judge = Judge("llm", model="gpt-4o", rubric="odi_open", rubric_version="2", scored=10, failures=1, unparsed=2)
    assert list(judge.to_json().items()) == [("kind", "llm"), ("model", "gpt-4o"), ("rubric", "odi_open"),
        ("rubric_version", "2"), ("scored", 10), ("failures", 1), ("unparsed", 2)]  # fmt: skip
    clean = Judge("llm", model="m", rubric="r", rubric_version="1", scored=4, failures=0, unparsed=0)
    assert clean.to_json() == {"kind": "llm", "model": "m", "rubric": "r", "rubric_version": "1", "scored": 4,
                               "failures": 0, "unparsed": 0}  # fmt: skip  # no failure is a count, not an absence
    bare = Judge("llm", model="gpt-4o", rubric="r", rubric_version="1", scored=10)
    assert bare.to_json() == {"kind": "llm", "model": "gpt-4o", "rubric": "r", "rubric_version": "1"}
    assert Judge("rule", rule="letter", share=0.5, model="x").to_json() == {"kind": "rule", "rule": "letter",
                                                                            "share": 0.5}  # fmt: skip
    assert Judge("none", reason="no key", model="x").to_json() == {"kind": "none", "reason": "no key"}


def test_a_judge_is_read_back_with_the_keys_it_held_and_counts_as_numbers():
    entry = {"model": 4, "rubric": "r", "rubric_version": 2, "share": 1, "scored": 3.0, "failures": 1,
             "unparsed": 0, "reason": "x", "rule": "letter"}  # fmt: skip
    judge = Judge.from_json(entry)
    assert (judge.kind, judge.model, judge.rubric, judge.rubric_version, judge.share) == ("llm", "4", "r", "2", 1.0)
    assert (judge.scored, judge.failures, judge.unparsed, judge.reason, judge.rule) == (3, 1, 0, "x", "letter")
    assert judge.given == frozenset(entry)
    assert Judge.from_json({"kind": "rule", "share": "half"}).share is None
    assert Judge.from_json({"failures": "1"}).failures is None  # text is not a count
    assert Judge.from_json([("kind", "llm")]) is None and Judge.from_json(None) is None


def test_two_judges_pool_when_kind_model_rubric_and_version_agree_whatever_their_counts():
    a = Judge("llm", "m", "r", "1", scored=5)
    assert a.identity() == ("llm", "m", "r", "1")
    assert a == Judge("llm", "m", "r", "1", scored=5, given=frozenset({"kind"}))


@pytest.mark.parametrize(
    ("judge", "described", "short"),
    [
        (Judge("llm", "gpt-4o", "odi_open", "2"), "gpt-4o (rubric odi_open v2)", "gpt-4o"),
        (Judge("llm"), "an LLM judge", "LLM judge"),
        (Judge("none", reason="no key"), "no judge (no key)", "none"),
        (Judge("none"), "no judge (no verdict)", "none"),
        (Judge("rule", rubric="odi_open", rubric_version="2"),
         "the rule-based fallback, not an LLM judge (rubric odi_open v2)", "rule-based fallback"),
        (Judge("rule", share=1.0), "the rule-based fallback, not an LLM judge", "rule-based fallback"),
        (Judge("rule", share=0.25, model="gpt-4o"),
         "the rule-based fallback for 25% of the answers, gpt-4o for the rest", "rule-based fallback 25%, gpt-4o"),
        (Judge("rule", share=0.5), "the rule-based fallback for 50% of the answers, an LLM judge for the rest",
         "rule-based fallback 50%, LLM"),
    ],
)  # fmt: skip
def test_a_judge_is_described_in_words(judge, described, short):
    assert (judge.describe(), judge.short()) == (described, short)


def test_a_judge_s_counts_name_only_what_happened():
    assert (
        Judge("llm", scored=10, failures=2, unparsed=3).counts() == "10 scored, 2 judge failures, 3 verdicts unparsed"
    )
    assert Judge("llm", scored=10, failures=0, unparsed=0).counts() == "10 scored"
    assert Judge("llm", failures=1).counts() == "1 judge failures"
    assert Judge("llm").counts() == ""


# --- the records ------------------------------------------------------------------------------------------------------


def test_generation_settings_round_trip_and_what_is_not_a_mapping_is_none_or_empty():
    value = {"protocol": {"temperature": 0}, "in_effect": {"temperature": 0.2}, "overrides": {"temperature": 0.2}}
    assert Generation.from_json(value).to_json() == value
    assert Generation.from_json({"protocol": [1], "in_effect": "x", "overrides": None}) == Generation(None, None, {})
    assert Generation.from_json("x") is None


def test_a_task_record_writes_its_keys_in_order_and_the_optional_ones_only_when_set():
    task = TaskRecord(documents=5, of=10, limit=5, judge=Judge("none", reason="r"), map_source="own_map",
                      run_options={"A": "1"}, seed=3, replayed_from="/r.json", answers_from_store=2,
                      generation=Generation({"t": 0}, {"t": 0}), requests_failed=1)  # fmt: skip
    assert list(task.to_json()) == ["documents", "of", "limit", "judge", "map_source", "run_options", "seed",
                                    "replayed_from", "answers_from_store", "generation", "requests_failed"]  # fmt: skip
    assert task.to_json()["judge"] == {"kind": "none", "reason": "r"}
    assert (task.to_json()["replayed_from"], task.to_json()["answers_from_store"]) == ("/r.json", 2)
    assert task.to_json()["generation"] == {"protocol": {"t": 0}, "in_effect": {"t": 0}, "overrides": {}}
    assert list(TaskRecord().to_json().items()) == [("documents", None), ("of", None), ("limit", None),
        ("judge", None), ("map_source", None), ("run_options", None), ("seed", None), ("answers_from_store", None),
        ("requests_failed", 0)]  # fmt: skip


def test_a_task_record_is_read_back_as_written_and_an_older_one_s_missing_keys_are_absent():
    written = {"documents": 5.0, "of": 10, "limit": 0.5, "judge": {"kind": "none", "reason": "r"}, "map_source": 1,
               "run_options": {"A": 1}, "seed": [1], "replayed_from": 7, "answers_from_store": 2,
               "generation": {"protocol": None, "in_effect": None, "overrides": {}}, "requests_failed": 3}  # fmt: skip
    task = TaskRecord.from_json(written)
    assert (task.documents, task.of, task.limit, task.judge, task.map_source, task.run_options, task.seed,
            task.replayed_from, task.answers_from_store, task.generation, task.requests_failed) == (
        5, 10, 0.5, Judge("none", reason="r"), "1", {"A": "1"}, [1], "7", 2, Generation(None, None, {}), 3)  # fmt: skip
    assert task.given == frozenset(written)
    older = TaskRecord.from_json({"documents": 5, "run_options": "x"})
    assert (older.of, older.judge, older.run_options, older.generation, older.requests_failed) == (
        None, None, None, None, 0)  # fmt: skip
    assert older.given == frozenset({"documents", "run_options"})


def test_a_model_record_writes_replayed_from_only_when_replayed_and_reads_back_text():
    model = ModelRecord("a", "qwen", "pretrained=x/a", seed=1, replayed_from="/r.json", fingerprint="local:12",
                        sampling_seed=8)  # fmt: skip
    assert list(model.to_json().items()) == [("label", "a"), ("name", "qwen"), ("args", "pretrained=x/a"), ("seed", 1),
                                             ("sampling_seed", 8), ("replayed_from", "/r.json"),
                                             ("fingerprint", "local:12")]  # fmt: skip
    assert "replayed_from" not in ModelRecord("a", None, None).to_json()
    assert ModelRecord.from_json(model.to_json()) == model
    # a record written before sampling_seed: its seeds are not known to be those that reached the answers
    assert ModelRecord.from_json({"label": None, "name": 3, "fingerprint": 5}) == ModelRecord(
        "", "3", None, None, None, "5", None, seeds_recorded=False)  # fmt: skip
    assert ModelRecord.from_json("x") == ModelRecord("", None, None, seeds_recorded=False)


def test_a_store_record_and_a_data_record_round_trip():
    store = {"root": "/c", "answers": 3, "asked": 5, "from": [{"run": "r1", "answers": 3}]}
    assert StoreRecord.from_json(store).to_json() == store
    assert StoreRecord.from_json({"root": "/c"}) == StoreRecord("/c", None, None, [])
    assert StoreRecord.from_json(None) is None
    data = {"source": "org/odi", "local": False, "revision": "abc", "fingerprint": "f1"}
    assert list(DataRecord.from_json(data).to_json().items()) == list(data.items())
    assert DataRecord.from_json({"source": "/d", "local": 1, "revision": 2}) == DataRecord("/d", True, "2", None)
    assert DataRecord.from_json({"source": 5}) is None and DataRecord.from_json("x") is None


def test_the_run_conditions_write_their_keys_in_the_documented_order_and_read_back_the_same():
    value = {
        "schema": 1, "lmms_spatial_version": "0.9", "model": ModelRecord("a", "m", "x=1").to_json(),
        "tasks": {"t": TaskRecord(documents=1).to_json()}, "environment": {"packages": {"torch": "2"}},
        "scorer_environment": {"packages": {"torch": "3"}}, "store": {"root": "/c", "answers": 1, "asked": 1,
                                                                      "from": []},
        "data": {"a": DataRecord("/a", True).to_json(), "b": DataRecord("org/b", False).to_json()},
        "failed_tasks": {"t2": "boom"}, "groups_without_scores": ["g"],
    }  # fmt: skip
    conditions = RunConditions.from_json(json.loads(json.dumps(value)))
    assert conditions.to_json() == value
    assert list(conditions.to_json()) == list(value)
    assert conditions.task("t").documents == 1
    bare = RunConditions(ModelRecord("a", None, None))
    assert list(bare.to_json()) == ["schema", "lmms_spatial_version", "model", "tasks", "environment", "store"]
    assert bare.to_json()["schema"] == c.SCHEMA == 1


def test_data_records_are_written_in_name_order():
    conditions = RunConditions(
        ModelRecord("a", None, None), data={"b": DataRecord("/b", True), "a": DataRecord("/a", True)}
    )
    assert list(conditions.to_json()["data"]) == ["a", "b"]


def test_run_conditions_of_an_earlier_or_broken_file_keep_what_is_readable():
    read = RunConditions.from_json({"tasks": {"t": {"documents": 2}, "u": "broken", 3: {"of": 1}}, "environment": [1],
                                    "scorer_environment": "x", "data": {"a": {"source": "/a"}, "b": {"source": 1}},
                                    "schema": "one", "lmms_spatial_version": 2})  # fmt: skip
    assert sorted(read.tasks) == ["3", "t"]
    assert (read.environment, read.scorer_environment, read.schema, read.lmms_spatial_version) == (None, None, 0, "2")
    assert read.data == {"a": DataRecord("/a", False)}
    assert read.store is None and read.failed_tasks is None and read.groups_without_scores is None
    empty = RunConditions.from_json(None)
    assert (empty.model, empty.tasks, empty.data, empty.schema) == (
        ModelRecord("", None, None, seeds_recorded=False), {}, None, 0)  # fmt: skip
    assert RunConditions.from_json({"tasks": ["t"], "data": ["a"]}).tasks == {}
    assert RunConditions.from_json({"data": ["a"]}).data is None


# --- what a benchmark's tasks declare ---------------------------------------------------------------------------------


def test_the_benchmark_of_a_scorer_is_the_package_under_lmms_spatial_tasks():
    def scorer():
        return None

    scorer.__module__ = "lmms_spatial.tasks.odi_bench.adapter"
    assert c.benchmark_of(scorer) == "odi_bench"
    scorer.__module__ = "lmms_spatial.metrics.dori"
    assert c.benchmark_of(scorer) is None
    scorer.__module__ = "lmms_spatial.tasks.odi_bench"  # a function of the benchmark's package itself
    assert c.benchmark_of(scorer) == "odi_bench"
    scorer.__module__ = "lmms_spatial.tasks"
    assert c.benchmark_of(scorer) is None
    assert c.benchmark_of(object()) is None


def _benchmark_with_needs(monkeypatch, key):
    """A benchmark ``key`` whose ``BENCHMARK.needs`` is ``adapter:TASK_NEEDS``; its adapter module, returned empty."""
    import sys
    import types

    import lmms_spatial.data.registry as registry
    from lmms_spatial.benchmark import Benchmark

    package, adapter = (types.ModuleType(f"lmms_spatial.tasks.{key}{part}") for part in ("", ".adapter"))
    monkeypatch.setitem(sys.modules, package.__name__, package)
    monkeypatch.setitem(sys.modules, adapter.__name__, adapter)
    bench = Benchmark(key, "", "V", needs="adapter:TASK_NEEDS")
    monkeypatch.setattr(registry, "BENCHMARKS", {**registry.BENCHMARKS, key: bench})
    return adapter


def test_a_task_declares_its_judge_map_and_options_by_its_scorer_s_name(monkeypatch):

    def process_results_open():
        return None

    module = _benchmark_with_needs(monkeypatch, "fake_bench")
    module.TASK_NEEDS = TaskNeeds(judge={"process_results_open": "odi_open"}, maps={"process_results_open": "cogmap"},
                                  options=lambda: {"LMMS_X": "1"})  # fmt: skip
    declared = c.declare("fake_bench", process_results_open)
    assert (declared.benchmark, declared.judge_rubric, declared.map_stage, declared.run_options) == (
        "fake_bench", "odi_open", "cogmap", {"LMMS_X": "1"})  # fmt: skip
    assert c.needs_of("fake_bench") is module.TASK_NEEDS
    module.TASK_NEEDS = {"judge": {}}  # not a TaskNeeds: nothing declared
    assert c.needs_of("fake_bench") == TaskNeeds()
    del module.TASK_NEEDS  # none at all: nothing declared
    assert c.needs_of("fake_bench") == TaskNeeds()


def test_a_benchmark_without_needs_needs_nothing_and_a_failing_option_is_recorded_as_its_error(monkeypatch):
    assert c.needs_of("no_such_benchmark") == TaskNeeds()
    declared = c.declare("no_such_benchmark", object())
    assert (declared.judge_rubric, declared.map_stage) == (None, None)

    def bad():
        raise ValueError("LMMS_X must be a number")

    module = _benchmark_with_needs(monkeypatch, "bad_bench")
    module.TASK_NEEDS = TaskNeeds(options=bad)
    assert c.declare("bad_bench", bad).run_options == {"error": "LMMS_X must be a number"}


def test_without_declared_options_the_run_options_in_effect_for_the_benchmark_are_read(monkeypatch):
    from lmms_spatial import run_options

    monkeypatch.setattr(run_options, "in_effect", lambda benchmark: {"benchmark": benchmark})
    assert TaskNeeds().run_options("dori") == {"benchmark": "dori"}
    assert c.declare("no_such_benchmark", object()).run_options == {"benchmark": "no_such_benchmark"}


@pytest.mark.parametrize(
    ("counts", "offset", "documents"),
    [
        ({"original": 12, "effective": 3}, 10, 2),
        ({"original": 12, "effective": 3}, 9, 3),
        ({"original": 12, "effective": 12}, 1, 11),
        ({"original": 12, "effective": 12}, 12, 0),
        ({"original": 12, "effective": 12}, 30, 0),
        ({"original": 12, "effective": 5}, 0, 5),
        ({"original": 12, "effective": 5}, None, 5),
        ({"original": 12, "effective": 5}, -3, 5),
        ({"original": 12, "effective": 5}, True, 5),
        ({"original": 12, "effective": 5}, "2", 5),
        ({"effective": 5}, 2, 5),
        ({"original": 7}, 2, 5),
        ({}, 0, 0),
        ({"original": 12, "effective": 12}, None, 12),
        ({"original": 12, "effective": 12}, 0, 12),
        ({"original": 3, "effective": 5}, 0, 5),
    ],  # fmt: skip
)
def test_the_documents_evaluated_are_the_limit_or_the_split_after_the_offset(counts, offset, documents):
    assert c.evaluated(counts, offset) == documents


# --- the model's arguments as the report compares them ---------------------------------------------------------------


def test_the_seed_is_taken_out_of_model_args_wherever_it_stands():
    assert c.without_seed("pretrained=org/m,seed=7,device=cpu") == ("pretrained=org/m,device=cpu", "7")
    assert c.without_seed("seed = 3, pretrained=org/m") == ("pretrained=org/m", "3")
    assert c.without_seed("pretrained=org/m,seed=") == ("pretrained=org/m", "")
    # a key that only ends in "seed" is an argument, not the seed
    assert c.without_seed("myseed=3,pretrained=org/m") == ("myseed=3,pretrained=org/m", None)


def test_only_separators_are_stripped_from_model_args():
    assert c.without_seed("model=AX,seed=1") == ("model=AX", "1")


def test_the_other_arguments_stay_as_written_and_the_first_seed_is_the_seed():
    # spaces, a part without a value and a blank part are kept; every seed= part goes, the first one's value stays
    assert c.without_seed("a = 1, flag,,seed=2, seed = 3 ,b=4") == ("a = 1, flag,,b=4", "2")
    # the separators a seed leaves at either end go: ", a=b" -> "a=b"; "a=b," -> "a=b"
    assert c.without_seed("seed=1, a=b") == ("a=b", "1")
    assert c.without_seed("a=b,seed=1,") == ("a=b", "1")
    # a dict (--config) is read as lmms-eval's text of it, in its order
    assert c.without_seed({"pretrained": "org/m", "seed": 4, "device": "cpu"}) == ("pretrained=org/m,device=cpu", "4")
    assert c.without_seed(None) == ("", None)


def test_model_args_are_joined_as_lmms_eval_takes_them_and_text_is_kept_as_given():
    assert c.join_model_args({"pretrained": "org/m", "seed": 4}) == "pretrained=org/m,seed=4"
    assert c.join_model_args(" a=1, b ") == " a=1, b "
    assert c.join_model_args(None) == "" and c.join_model_args({}) == ""
    assert c.parse_model_args(c.join_model_args({"a": "1", "b": "x=y"})) == {"a": "1", "b": "x=y"}


def test_rows_of_one_model_are_told_apart_by_the_arguments_they_do_not_share():
    # the parts as written less their spaces, blank ones left out; the one all three share (a=1) dropped: flag is
    # in the first two only, a dict (--config) is read as its text
    assert c.differing_model_args([" a=1, flag ,,b = 2,", "a=1,flag,b=3", {"a": 1, "b": "2"}]) == [
        "flag,b = 2", "flag,b=3", "b=2"]  # fmt: skip
    assert c.differing_model_args(["a=1", "a=1,x=2"]) == ["", "x=2"]
    assert c.differing_model_args([None, "a=1"]) == ["", "a=1"]
    assert c.differing_model_args([]) == []


# --- a record of an earlier version, completed by what the results file shows ----------------------------------------


def test_the_recorded_judge_is_completed_field_by_field_from_the_score_records():
    # a recorded null judge (the run said: no judge needed) stays null whatever the score records show
    assert TaskRecord.from_json({"judge": None}).completed(TaskRecord(judge=Judge("llm", model="x"))).judge is None
    derived = Judge("llm", model="x", rubric="r", rubric_version="2", share=0.3, scored=5, failures=9, unparsed=1,
                    reason="d")  # fmt: skip
    entry = Judge.from_json({"kind": "llm", "model": "gpt", "failures": 1, "share": 0.0})
    assert entry.completed(derived) == Judge(
        "llm", model="gpt", rubric="r", rubric_version="2", share=0.0, scored=5, failures=1, unparsed=1, reason="d"
    )
    given_counts = Judge.from_json({"kind": "llm", "scored": 0, "unparsed": 0, "rubric": "q", "rubric_version": 3})
    completed = given_counts.completed(derived)
    assert (completed.rubric, completed.rubric_version, completed.scored, completed.failures, completed.unparsed) == (
        "q", "3", 0, 9, 0)  # fmt: skip
    # the rule's text stands as the reason; no derived judge: nothing else to take
    rule = Judge.from_json({"kind": "rule", "rule": "first letter", "share": 0.5})
    assert rule.completed(None) == Judge("rule", share=0.5, reason="first letter")
    both = Judge.from_json({"kind": "none", "reason": "no key", "rule": "first letter"})
    assert both.completed(derived).reason == "no key"


def test_a_recorded_judge_without_a_share_keeps_the_derived_share():
    derived = Judge("rule", share=0.3)
    assert Judge.from_json({"kind": "rule"}).completed(derived).share == 0.3


def test_a_recorded_task_keeps_each_key_it_held_and_takes_the_others_from_the_file():
    derived = TaskRecord(documents=12, of=12, limit=5, judge=Judge("llm", model="gpt-a", scored=3), map_source="none",
                         run_options={"A": "1"}, seed="9", empty=True, failed="boom")  # fmt: skip
    # held: the documents, a null judge and a null map source (no judged, no with-map task), the seed, a count
    entry = TaskRecord.from_json({"documents": 5, "judge": None, "map_source": None, "seed": 7, "requests_failed": 2})
    assert entry.completed(derived) == TaskRecord(documents=5, of=12, limit=5, run_options={"A": "1"}, seed=7,
                                                  requests_failed=2, empty=True, failed="boom")  # fmt: skip
    # held: the split's size, --limit, no run options and a judge, completed by the derived one (its count)
    entry = TaskRecord.from_json({"of": 20, "limit": 3, "run_options": {}, "judge": {"kind": "llm", "model": "gpt-b"}})
    done = entry.completed(derived)
    assert (done.documents, done.of, done.limit, done.run_options, done.judge, done.seed, done.map_source) == (
        12, 20, 3, {}, Judge("llm", model="gpt-b", scored=3), "9", "none")  # fmt: skip
    # nothing held: the file's word on each
    assert TaskRecord.from_json({}).completed(derived) == derived


def test_a_recorded_model_keeps_what_it_recorded_and_takes_the_rest_from_the_config():
    derived = ModelRecord("m", "hf", "pretrained=org/m,seed=1", seed="1", sampling_seed=9)
    own = ModelRecord("M", "hf2", "pretrained=org/n,seed=2", seed=2, sampling_seed=None)
    assert own.completed(derived) == own
    # an earlier record without label, name, arguments or seeds: the config's
    assert ModelRecord.from_json({}).completed(derived) == ModelRecord(
        "m", "hf", "pretrained=org/m,seed=1", seed="1", sampling_seed=9, seeds_recorded=False)  # fmt: skip
    # no seed of the model's own recorded: its recorded arguments' seed=, else the config's
    assert ModelRecord.from_json({"args": "pretrained=org/m,seed=4"}).completed(derived).seed == "4"
    assert ModelRecord.from_json({"args": {"pretrained": "org/m"}}).completed(derived).seed == "1"
    # a record older than sampling_seed: --seed is the seed of its answers only where the model has no seed of its own
    assert ModelRecord.from_json({"seed": 3}).completed(derived).sampling_seed is None
    assert ModelRecord.from_json({"sampling_seed": None}).completed(derived).sampling_seed is None  # none reached
    assert ModelRecord.from_json({"sampling_seed": 7}).completed(derived).sampling_seed == 7


def test_the_record_is_completed_by_what_the_results_file_shows_task_by_task():
    derived = RunConditions(
        ModelRecord("m", "hf", "seed=1", seed="1", sampling_seed=0),
        {"a": TaskRecord(documents=2, of=2), "b": TaskRecord(of=3, failed="boom")},
        schema=0,
        gen_kwargs={"temperature": 0},
    )
    recorded = RunConditions.from_json({"schema": 1, "model": {"label": "M"}, "tasks": {"b": {"documents": 1},
                                        "c": {"of": 5}}, "environment": {"packages": {"torch": "2"}}})  # fmt: skip
    done = recorded.completed(derived)
    assert done.model == ModelRecord("M", "hf", "seed=1", seed="1", sampling_seed=0, seeds_recorded=False)
    # a task only the file names as the file says; one only the record names completed by an empty one
    assert done.tasks == {"a": TaskRecord(documents=2, of=2), "b": TaskRecord(documents=1, of=3, failed="boom"),
                          "c": TaskRecord(of=5)}  # fmt: skip
    assert (done.environment, done.gen_kwargs, done.recorded) == (
        {"packages": {"torch": "2"}},
        {"temperature": 0},
        True,
    )
    assert not derived.recorded


# --- what the report compares of a run -------------------------------------------------------------------------------


def test_generation_settings_compare_as_text_and_off_the_protocol_setting_by_setting():
    assert c.generation_items({"temperature": 0.0, "top_p": 0.5, "stop": ["\n"]}) == (
        ("stop", '["\\n"]'), ("temperature", "0"), ("top_p", "0.5"))  # fmt: skip
    assert c.generation_items(None) is None and c.generation_items("temperature=0") is None
    tc = TaskRecord(generation=Generation({"b": 3, "c": 4}, {"a": 1, "b": 2}))
    assert tc.off_protocol() == {"b": ("2", "3"), "a": ("1", None), "c": ("(unset)", "4")}
    assert TaskRecord(generation=Generation(None, {"a": 1})).off_protocol() == {}
    assert TaskRecord(generation=Generation({"a": 1}, None)).off_protocol() == {}
    # a setting sent as the protocol sets it (1.0 reads as 1) is on the protocol
    assert TaskRecord(generation=Generation({"a": 1, "b": 3}, {"a": 1.0, "b": 2})).off_protocol() == {"b": ("2", "3")}


def test_nested_generation_settings_compare_whatever_their_key_order():
    assert c.generation_items({"stop": {"b": 1, "a": 2}}) == (("stop", '{"a": 2, "b": 1}'),)


def test_a_task_s_options_seeds_and_settings_as_the_report_compares_them():
    seed = "LMMS_SPATIAL_DORI_SEED"  # DORI's option seed (its BENCHMARK.seed_options)
    task = TaskRecord(documents=3, of=4, judge=Judge("llm", model="g", scored=3), map_source="own_map",
                      run_options={seed: "2", "B": "x", "A": "y"},
                      generation=Generation({"max_new_tokens": 32}, {"max_new_tokens": 16.0}))  # fmt: skip
    assert task.partial and not TaskRecord(documents=4, of=4).partial
    assert not TaskRecord(of=4).partial and not TaskRecord(documents=4).partial
    assert list(task.options().items()) == [("A", "y"), ("B", "x"), (seed, "2")]  # in name order
    assert TaskRecord().options() == {}
    assert (task.option_seed(), TaskRecord(run_options={"A": "1"}).option_seed()) == ("2", None)
    assert list(task.condition_options().items()) == [("A", "y"), ("B", "x")]
    assert (task.in_effect(), task.protocol()) == ((("max_new_tokens", "16"),), (("max_new_tokens", "32"),))
    assert (TaskRecord().in_effect(), TaskRecord().protocol()) == (None, None)
    # what two runs' task must share to pool: the option seed is left out
    assert task.comparable() == (3, 4, False, ("llm", "g", None, None), "own_map", (("A", "y"), ("B", "x")),
                                 (("max_new_tokens", "16"),))  # fmt: skip
    assert TaskRecord(empty=True).comparable() == (None, None, True, None, None, (), None)


def test_two_option_seeds_are_joined_in_name_order_and_neither_is_a_condition(monkeypatch):
    monkeypatch.setattr(c, "seed_options", lambda: frozenset({"B_SEED", "A_SEED"}))
    task = TaskRecord(run_options={"B_SEED": "2", "X": "x", "A_SEED": "1"})
    assert (task.option_seed(), task.condition_options()) == ("1,2", {"X": "x"})


def test_the_seed_is_described_by_what_sets_it_first():
    def conditions(seed=None, random_seed=None, **tasks: TaskRecord) -> RunConditions:
        return RunConditions(ModelRecord("m", "hf", "", seed=seed, sampling_seed=random_seed), tasks)

    dori = {"LMMS_SPATIAL_DORI_SEED": "2"}
    options = {k: TaskRecord(run_options=v) for k, v in (("t1", dori), ("t2", {"A": "1"}))}
    assert conditions("5", **options).describe_seed(["t1", "t2", "t3"]) == "option seed 2"
    two = {"t1": TaskRecord(run_options={"LMMS_SPATIAL_DORI_SEED": "3"}), "t2": options["t1"]}
    assert conditions(**two).describe_seed(["t2", "t1"]) == "option seed 2, 3"
    assert conditions(**two).seeds(["t2", "t1", "t9"]) == (None, None, ("",), ("2", "3"))
    assert conditions("5", "0", **options).describe_seed(["t2"]) == "seed=5"
    task_seeds = {"t1": TaskRecord(seed="8"), "t2": TaskRecord(seed="7"), "t3": TaskRecord()}
    assert conditions(None, "0", **task_seeds).describe_seed(["t1", "t2", "t3"]) == "seed 7, 8"
    assert conditions(None, "0", **task_seeds).seeds(["t1", "t3"]) == (None, "0", ("", "8"), ("",))
    assert conditions(None, "0", **task_seeds).describe_seed(["t3"]) == "--seed 0"
    assert conditions(None, "0").describe_seed(["t1"]) == "--seed 0"
    assert conditions().describe_seed([]) == "seed unknown"


def test_seeds_recorded_as_numbers_compare_as_text():
    model = ModelRecord("m", "hf", "", seed=5, sampling_seed=1234)
    tasks = {"t": TaskRecord(seed=0)}
    assert RunConditions(model, tasks).seeds(["t"]) == ("5", "1234", ("0",), ("",))
    assert RunConditions(ModelRecord("m", "hf", "", sampling_seed=1234), tasks).describe_seed(["t"]) == "seed 0"


def test_the_data_of_the_benchmarks_run_is_compared():
    data = {
        "mmsi/extra": DataRecord("M", False, "2"),
        "mmsi": DataRecord("M", False, "1"),
        "dori": DataRecord("D", False, "1"),
    }
    c_ = RunConditions(ModelRecord("m", "hf", ""), data=data)
    assert c_.data_of(["mmsi_vanilla"]) == (("mmsi", "M@1"), ("mmsi/extra", "M@2"))
    assert c_.data_of(["dori_view_parallelism_coarse"]) == (("dori", "D@1"),)
    assert c_.data_of([]) == ()
    assert RunConditions(ModelRecord("m", "hf", "")).data_of(["dori_view_parallelism_coarse"]) is None
    # an entry's benchmark is the text before its first '/'
    deep = RunConditions(ModelRecord("m", "hf", ""), data={"mmsi/a/b": DataRecord("M", False, "3")})
    assert deep.data_of(["mmsi_vanilla"]) == (("mmsi/a/b", "M@3"),)


def test_the_data_read_compare_by_release_and_a_local_copy_only_as_such():
    data = {
        "osr": DataRecord("O/B", False),
        "mmsi": DataRecord("R/M", False, "abc"),
        "dori": DataRecord("/x", True, None, "f"),
    }
    assert RunConditions(ModelRecord("m", "hf", ""), data=data).data_entries() == (
        ("dori", "a local copy"), ("mmsi", "R/M@abc"), ("osr", "O/B@default branch"))  # fmt: skip
    assert RunConditions(ModelRecord("m", "hf", ""), data={}).data_entries() == ()
    assert RunConditions(ModelRecord("m", "hf", "")).data_entries() is None


def test_the_report_reads_the_task_the_software_and_gen_kwargs_of_a_run():
    task = TaskRecord(documents=1)
    packages = {"torch": "2.1", "numpy": "2"}
    run = RunConditions(ModelRecord("m", "hf", ""), {"t": task}, environment={"packages": packages},
                        gen_kwargs={"temperature": 0.0, "max_new_tokens": 8})  # fmt: skip
    assert run.task("t") is task and run.task("other") == TaskRecord()
    assert run.software == (("torch", "2.1"),)  # the compared packages only
    assert run.gen_overrides == (("max_new_tokens", "8"), ("temperature", "0"))
    assert RunConditions(ModelRecord("m", "hf", ""), gen_kwargs="").gen_overrides == ()
    assert RunConditions(ModelRecord("m", "hf", "")).software == ()
    assert run.recorded and not RunConditions(ModelRecord("m", "hf", ""), schema=0).recorded
    assert ModelRecord("m", "hf", {"pretrained": "org/m", "seed": 4}).args_without_seed() == "pretrained=org/m"
