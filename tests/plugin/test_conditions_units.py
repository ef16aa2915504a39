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


def test_a_task_declares_its_judge_map_and_options_by_its_scorer_s_name(monkeypatch):
    import types

    def process_results_open():
        return None

    module = types.ModuleType("lmms_spatial.tasks.fake_bench.utils")
    module.TASK_NEEDS = TaskNeeds(judge={"process_results_open": "odi_open"}, maps={"process_results_open": "cogmap"},
                                  options=lambda: {"LMMS_X": "1"})  # fmt: skip
    monkeypatch.setitem(__import__("sys").modules, "lmms_spatial.tasks.fake_bench.utils", module)
    declared = c.declare("fake_bench", process_results_open)
    assert (declared.benchmark, declared.judge_rubric, declared.map_stage, declared.run_options) == (
        "fake_bench", "odi_open", "cogmap", {"LMMS_X": "1"})  # fmt: skip
    assert c.needs_of("fake_bench") is module.TASK_NEEDS
    module.TASK_NEEDS = {"judge": {}}  # not a TaskNeeds: nothing declared
    assert c.needs_of("fake_bench") == TaskNeeds()
    del module.TASK_NEEDS  # none at all: nothing declared
    assert c.needs_of("fake_bench") == TaskNeeds()


def test_a_benchmark_without_a_utils_module_needs_nothing_and_a_failing_option_is_recorded_as_its_error(monkeypatch):
    assert c.needs_of("no_such_benchmark") == TaskNeeds()
    declared = c.declare("no_such_benchmark", object())
    assert (declared.judge_rubric, declared.map_stage) == (None, None)
    import types

    def bad():
        raise ValueError("LMMS_X must be a number")

    module = types.ModuleType("lmms_spatial.tasks.bad_bench.utils")
    module.TASK_NEEDS = TaskNeeds(options=bad)
    monkeypatch.setitem(__import__("sys").modules, "lmms_spatial.tasks.bad_bench.utils", module)
    assert c.declare("bad_bench", bad).run_options == {"error": "LMMS_X must be a number"}


def test_without_declared_options_the_run_options_in_effect_for_the_benchmark_are_read(monkeypatch):
    from lmms_spatial import run_options

    monkeypatch.setattr(run_options, "in_effect", lambda benchmark: {"benchmark": benchmark})
    assert TaskNeeds().run_options("dori") == {"benchmark": "dori"}
    assert c.declare("no_such_benchmark", object()).run_options == {"benchmark": "no_such_benchmark"}


@pytest.mark.parametrize(
    ("counts", "offset", "documents"),
    [({"original": 12, "effective": 3}, 10, 2), ({"original": 12, "effective": 3}, 9, 3),
     ({"original": 12, "effective": 12}, 1, 11), ({"original": 12, "effective": 12}, 12, 0),
     ({"original": 12, "effective": 12}, 30, 0), ({"original": 12, "effective": 5}, 0, 5),
     ({"original": 12, "effective": 5}, None, 5), ({"original": 12, "effective": 5}, -3, 5),
     ({"original": 12, "effective": 5}, True, 5), ({"original": 12, "effective": 5}, "2", 5),
     ({"effective": 5}, 2, 5), ({"original": 7}, 2, 5), ({}, 0, 0), ({"original": 12, "effective": 12}, None, 12),
     ({"original": 12, "effective": 12}, 0, 12), ({"original": 3, "effective": 5}, 0, 5)],  # fmt: skip
)
def test_the_documents_evaluated_are_the_limit_or_the_split_after_the_offset(counts, offset, documents):
    assert c.evaluated(counts, offset) == documents
