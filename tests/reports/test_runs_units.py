"""Which runs the report pools as seeds (issue 42): ``pool_key``, ``differences``, ``distinct_runs`` and the
conditions ``derive_conditions`` reads from a results file, on hand-made results dicts (no lmms-eval run). The
conditions' own methods (the seed taken out of the model's arguments, the seeds, the data compared, the recorded
judge completed) are pinned in tests/plugin/test_conditions_units.py.

Each pair of runs differs in exactly one thing, so a bug that ignores that thing (or keys on the wrong one) makes
two runs pool that must not, or keeps apart two seeds that must pool."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from lmms_spatial.conditions import (
    DataRecord,
    Generation,
    Judge,
    ModelRecord,
    RunConditions,
    TaskRecord,
)
from lmms_spatial.reports.runs import (
    SKIPPED_NAMED,
    Run,
    SkippedLine,
    _fraction,
    _judge_from_lines,
    _judge_from_results,
    _map_source,
    _tasks,
    derive_conditions,
    describe_data,
    describe_generation,
    differences,
    distinct_runs,
    find_results_files,
    load_run,
    load_runs,
    name_skipped,
    pool_key,
    read_samples,
    skipped_warnings,
    software_difference,
)

TASK = "a_task"  # not one of ours: no benchmark, so data_of() holds nothing to compare


def results(
    model_args: str = "pretrained=org/m,seed=1",
    random_seed: Any = 0,
    documents: tuple[int, int] = (12, 12),
    accuracy: float = 0.5,
    model: str = "hf",
) -> dict[str, Any]:
    """A results file as lmms-eval writes it (the keys the report reads)."""
    return {
        "config": {"model": model, "model_args": model_args, "random_seed": random_seed},
        "n-samples": {TASK: {"effective": documents[0], "original": documents[1]}},
        "results": {TASK: {"acc,none": accuracy}},
    }


def run(name: str, data: dict[str, Any], label: str | None = None, lines: dict | None = None) -> Run:
    conditions = derive_conditions(data, lines or {})
    return Run(Path(f"/runs/{name}_results.json"), data, label or conditions.model.label, conditions, lines or {},
               labelled=label is not None)  # fmt: skip


def test_derived_conditions_read_model_seed_random_seed_and_documents():
    c = derive_conditions(results("pretrained=org/m,seed=5", random_seed=9, documents=(3, 12)), {})
    # seeds()[:2]: (the model's seed, lmms-eval's --seed), as text
    assert (c.model.label, c.model.name, c.model.args_without_seed(), *c.seeds([])[:2]) == (
        "m", "hf", "pretrained=org/m", "5", "9")  # fmt: skip
    assert c.tasks[TASK] == TaskRecord(documents=3, of=12)
    assert c.tasks[TASK].partial and not c.task("other").partial
    assert c.recorded is False
    # seeds: (model seed, --seed, task seeds, option seeds); the task carries neither of its own
    assert c.seeds([TASK]) == ("5", "9", ("",), ("",))


def test_conditions_derived_from_the_file_alone_are_of_no_schema():
    c = derive_conditions(results(), {})
    assert (c.schema, c.recorded) == (0, False)  # as a results file without the key reads


def test_an_older_files_documents_are_those_evaluated_after_its_offset():
    data = results("pretrained=org/m", documents=(3, 12))
    data["config"]["offset"] = 10  # questions 10 and 11: lmms-eval's "effective" says 3
    assert derive_conditions(data, {}).tasks[TASK] == TaskRecord(documents=2, of=12)
    data["config"]["offset"] = 0
    assert derive_conditions(data, {}).tasks[TASK] == TaskRecord(documents=3, of=12)
    data["n-samples"][TASK] = {"original": 12}  # no effective count: not known
    assert derive_conditions(data, {}).tasks[TASK].documents is None


def test_recorded_seeds_are_those_that_reached_the_answers_and_an_older_records_are_read_as_before():
    data = results("pretrained=org/m", random_seed=9)
    data["lmms_spatial"] = {"schema": 1, "model": {"label": "m", "name": "hf", "args": "pretrained=org/m",
                                                  "seed": None, "sampling_seed": 1234}}  # fmt: skip
    # seeds()[:2]: (the model's seed, the seed that reached the answers), as text
    assert derive_conditions(data, {}).seeds([])[:2] == (None, "1234")
    data["lmms_spatial"]["model"]["sampling_seed"] = None  # greedy: --seed 9 reached nothing
    assert derive_conditions(data, {}).seeds([])[1] is None
    del data["lmms_spatial"]["model"]["sampling_seed"]  # written before sampling_seed: --seed, as it was read
    assert derive_conditions(data, {}).seeds([])[1] == "9"


# --- pooling ------------------------------------------------------------------------------------------------


def test_runs_differing_only_in_the_model_seed_pool_and_stay_two_runs():
    a, b = run("a", results("pretrained=org/m,seed=1")), run("b", results("pretrained=org/m,seed=2"))
    assert pool_key(a, [TASK]) == pool_key(b, [TASK])
    assert distinct_runs([a, b]) == ([a, b], [])
    assert differences(a, b, [TASK]) == ["the same conditions and seed (seed=1) but different results"]


def test_runs_differing_only_in_lmms_eval_seed_are_two_seeds_even_with_equal_numbers():
    a = run("a", results("pretrained=org/m", random_seed=0))
    b = run("b", results("pretrained=org/m", random_seed=1))
    assert pool_key(a, [TASK]) == pool_key(b, [TASK])
    assert a.conditions.describe_seed([TASK]) == "--seed 0"
    assert distinct_runs([a, b]) == ([a, b], [])


def test_a_run_given_twice_or_copied_counts_once_with_a_warning():
    a, copy = run("a", results()), run("copy", results())
    again = run("a", results())
    kept, warnings = distinct_runs([a, again, copy])
    assert kept == [a]
    assert warnings == [
        "WARNING: /runs/a_results.json was given twice; counted once",
        "WARNING: /runs/copy_results.json holds the same results as /runs/a_results.json (m); counted once, "
        "not as a second seed",
    ]


def test_same_conditions_and_seed_with_other_numbers_are_kept():
    a, b = run("a", results(accuracy=0.5)), run("b", results(accuracy=0.25))
    assert distinct_runs([a, b]) == ([a, b], [])


def test_each_condition_keeps_runs_apart_and_is_named():
    base = run("a", results())
    cases = {
        "model_args": (results("pretrained=org/n,seed=1"), "model_args pretrained=org/m vs pretrained=org/n"),
        "model": (results(model="llava"), "model hf vs llava"),
        "documents": (results(documents=(3, 12)), f"documents 12/12 vs documents 3/12 ({TASK})"),
    }
    for name, (data, said) in cases.items():
        other = run("b", data)
        assert pool_key(base, [TASK]) != pool_key(other, [TASK]), name
        assert said in differences(base, other, [TASK]), name


def test_no_model_args_reads_none_in_the_difference():
    a, b = run("a", results("")), run("b", results("pretrained=org/m"))
    assert differences(a, b, [TASK])[0] == "model_args (none) vs pretrained=org/m"


def test_labels_keep_runs_apart_only_when_both_were_given():
    a, b = run("a", results(), label="first"), run("b", results("pretrained=org/m,seed=2"), label="second")
    assert pool_key(a, [TASK]) != pool_key(b, [TASK])
    assert differences(a, b, [TASK])[0] == "labels first vs second"
    unlabelled = run("c", results("pretrained=org/m,seed=3"))
    assert "labels" not in " ".join(differences(a, unlabelled, [TASK]))


def test_a_task_one_run_lacks_is_named():
    a = run("a", results())
    data = results()
    data["n-samples"]["b_task"] = {"effective": 1, "original": 1}
    b = run("b", data)
    assert differences(a, b, [TASK, "b_task"]) == ["tasks run - vs b_task"]
    assert pool_key(a, [TASK, "b_task"]) != pool_key(b, [TASK, "b_task"])


def conditions_with(options: dict[str, str], seed: str = "1") -> RunConditions:
    task = TaskRecord(documents=4, of=4, run_options=options)
    return RunConditions(ModelRecord("m", "hf", "pretrained=org/m", seed=seed), {"dori_task": task})


def test_the_dori_seed_option_is_a_seed_and_any_other_option_a_condition():
    def as_run(name: str, options: dict[str, str]) -> Run:
        return Run(Path(f"/runs/{name}_results.json"), results(), "m", conditions_with(options))

    one = as_run("a", {"LMMS_SPATIAL_DORI_SEED": "1", "LMMS_SPATIAL_X": "on"})
    two = as_run("b", {"LMMS_SPATIAL_DORI_SEED": "2", "LMMS_SPATIAL_X": "on"})
    off = as_run("c", {"LMMS_SPATIAL_DORI_SEED": "1", "LMMS_SPATIAL_X": "off"})
    assert pool_key(one, ["dori_task"]) == pool_key(two, ["dori_task"])
    assert one.conditions.seeds(["dori_task"]) == ("1", None, ("",), ("1",))
    assert one.conditions.describe_seed(["dori_task"]) == "option seed 1"
    assert pool_key(one, ["dori_task"]) != pool_key(off, ["dori_task"])
    assert differences(one, off, ["dori_task"]) == ["LMMS_SPATIAL_X=on vs LMMS_SPATIAL_X=off (dori_task)"]


# --- what the samples lines say -----------------------------------------------------------------------------


def test_the_map_source_is_own_map_none_or_partial_from_the_stage_outputs():
    drawn = {"score": {"stage_outputs": {"map": "grid"}}}
    missing = {"score": {"stage_outputs": {"map": None}}}
    empty = {"score": {"stage_outputs": {}}}
    assert _map_source([drawn, drawn]) == "own_map"
    assert _map_source([missing, empty]) == "none"
    assert _map_source([drawn, missing]) == "partial"
    assert _map_source([{"score": {"acc": 1}}]) is None


def test_map_sources_that_differ_keep_runs_apart():
    drawn = {TASK: [{"score": {"stage_outputs": {"map": "grid"}}}]}
    missing = {TASK: [{"score": {"stage_outputs": {"map": None}}}]}
    a, b = run("a", results(), lines=drawn), run("b", results("pretrained=org/m,seed=2"), lines=missing)
    assert pool_key(a, [TASK]) != pool_key(b, [TASK])
    assert differences(a, b, [TASK]) == [f"map own_map vs map none ({TASK})"]


# --- the judge an older results file shows (no samples lines), and the recorded judge completed ----------------


def test_the_judge_of_a_results_file_without_samples_is_read_from_its_counts():
    assert _judge_from_results({"acc,none": 1.0}, 10) is None
    values = {"judge_failures,none": 1, "judge_unparsed,none": 2, "judge_fallback_share,none": 0.25}
    # scored = 10 documents - 1 failure - 2 unparsed = 7
    assert _judge_from_results(values, 10) == Judge("rule", share=0.25, scored=7, failures=1, unparsed=2)
    # no fallback share (0, NaN or absent): an LLM judged; 3.0 is a count of 3; scored = 4 - 3 - 0 = 1
    llm = Judge("llm", scored=1, failures=3, unparsed=None)
    assert _judge_from_results({"judge_failures,none": 3.0, "judge_fallback_share,none": 0}, 4) == llm
    assert _judge_from_results({"judge_failures,none": 3, "judge_fallback_share,none": float("nan")}, 4) == llm
    # documents unknown: nothing scored is counted
    assert _judge_from_results({"judge_failures,none": 2}, None) == Judge("llm", failures=2)


def test_every_judge_call_failed_is_no_judge_even_with_a_fallback_share():
    values = {"judge_failures,none": 4, "judge_unparsed,none": 1, "judge_fallback_share,none": 0.5}
    # scored = max(0, 4 - 4 - 1) = 0
    none = Judge("none", reason="every judge call failed", scored=0, failures=4, unparsed=1)
    assert _judge_from_results(values, 4) == none
    assert _judge_from_results({**values, "judge_failures,none": 5}, 4) == Judge(
        "none", reason="every judge call failed", scored=0, failures=5, unparsed=1
    )
    # one document short of all failing: the rule judged (scored = max(0, 4 - 3 - 1) = 0)
    assert _judge_from_results({**values, "judge_failures,none": 3}, 4).kind == "rule"


def test_derived_conditions_take_the_judge_from_the_results_when_there_are_no_samples():
    data = results(documents=(6, 6))
    data["results"][TASK].update({"judge_failures,none": 1, "judge_unparsed,none": 0})
    # scored = 6 - 1 - 0 = 5
    assert derive_conditions(data, {}).tasks[TASK].judge == Judge("llm", scored=5, failures=1, unparsed=0)


# --- the words of a difference --------------------------------------------------------------------------------

VERSIONS = {"lmms-eval": "0.7.3", "transformers": "5.0", "torch": "2.1"}


def with_software(name: str, packages: dict[str, str] | None) -> Run:
    environment = None if packages is None else {"packages": packages}
    conditions = RunConditions(ModelRecord("m", "hf", "pretrained=org/m", seed=name), environment=environment)
    return Run(Path(f"/runs/{name}_results.json"), results(), "m", conditions)


def test_software_differences_name_each_package_whose_version_differs():
    a = with_software("1", VERSIONS)
    older = with_software("2", {**VERSIONS, "transformers": "4.5"})
    assert software_difference(a.conditions, older.conditions) == "transformers 5.0 vs 4.5"
    assert differences(a, older, []) == ["software transformers 5.0 vs 4.5"]
    assert pool_key(a, []) != pool_key(older, [])
    no_torch = with_software("3", {"lmms-eval": "0.7.3", "transformers": "5.0"})
    assert software_difference(a.conditions, no_torch.conditions) == "torch 2.1 vs ?"
    assert software_difference(no_torch.conditions, older.conditions) == "transformers 5.0 vs 4.5, torch ? vs 2.1"
    unrecorded = with_software("4", None)
    assert software_difference(unrecorded.conditions, a.conditions) == (
        "software not recorded vs lmms-eval 0.7.3, transformers 5.0, torch 2.1")  # fmt: skip
    assert software_difference(a.conditions, unrecorded.conditions) == (
        "lmms-eval 0.7.3, transformers 5.0, torch 2.1 vs software not recorded")  # fmt: skip


def test_fractions_task_lists_and_data_read_as_written():
    assert _fraction(TaskRecord(documents=3, of=12)) == "3/12"
    assert _fraction(TaskRecord(of=12)) == "?/12"
    assert _fraction(TaskRecord(documents=3)) == "3/?"
    assert _fraction(TaskRecord(documents=0, of=0, empty=True)) == "none (no documents in this release)"
    assert _tasks(["a", "b", "c"]) == "a, b, c"
    assert _tasks(["a", "b", "c", "d"]) == "a, b, c and 1 more"
    assert _tasks(["a", "b", "c", "d", "e"]) == "a, b, c and 2 more"
    assert describe_data(None) == "not recorded"
    assert describe_data(()) == "none"
    assert describe_data([("mmsi", "R/M@abc"), ("dori", "a local copy")]) == "mmsi: R/M@abc, dori: a local copy"


# --- the judge the samples lines show -------------------------------------------------------------------------


def verdict(**fields: Any) -> dict[str, Any]:
    """One samples line whose score record is a judge's (the first mapping value is not: it is skipped)."""
    return {"doc_id": 0, "other": {"acc": 1}, "llm_accuracy": fields}


def test_lines_without_a_judge_record_show_no_judge():
    assert _judge_from_lines([{"score": {"acc": 1}}, {"score": {"failed": True, "reason": "parse"}}]) is None


def test_the_llm_judge_and_its_rubric_are_read_from_the_verdicts():
    lines = [
        verdict(judge="gpt-b", rubric="", rubric_version=None),  # the first rubric is empty: the next one counts
        verdict(judge="gpt-a", rubric="open", rubric_version=2),
        verdict(judge="gpt-a", rubric="other", rubric_version=3, failed=True, reason="judge_unparsed"),
        verdict(rubric="open", failed=True, reason="judge_failed:timeout:30s"),
    ]
    # answered: 3 (the unparsed one counts as answered), unparsed 1 -> scored 2; failures 1
    assert _judge_from_lines(lines) == Judge(
        "llm", model="gpt-a, gpt-b", rubric="open", rubric_version="2", scored=2, failures=1, unparsed=1
    )


def test_the_rule_based_fallback_share_is_of_the_answered_verdicts():
    lines = [
        verdict(judge="gpt-a", rubric="open", rubric_version=1),
        verdict(judge="none (rule-based fallback)", rubric="open", rubric_version=1),
        verdict(judge="gpt-a", rubric="open", rubric_version=1, fallback=True),
        verdict(judge="gpt-a", rubric="open", rubric_version=1),
        verdict(failed=True, reason="judge_failed:http 500"),
    ]
    # answered 4, of which 2 by the rule: share 2/4 = 0.5; the LLM's name from the other two
    assert _judge_from_lines(lines) == Judge(
        "rule", model="gpt-a", rubric="open", rubric_version="1", share=0.5, scored=4, failures=1, unparsed=0
    )
    only_rule = [verdict(judge="none (rule-based fallback)", rubric="open")]
    assert _judge_from_lines(only_rule) == Judge("rule", rubric="open", share=1.0, scored=1, failures=0, unparsed=0)


def test_no_answered_verdict_is_no_judge_with_the_first_failure_as_reason():
    lines = [verdict(failed=True, reason="judge_failed:no_api_key:set it"), verdict(failed=True, reason="judge_x")]
    assert _judge_from_lines(lines) == Judge("none", reason="no_api_key", scored=0, failures=2, unparsed=0)
    assert _judge_from_lines([verdict(failed=True, reason="judge_failed:")]) == Judge(
        "none", reason="no verdict", scored=0, failures=1, unparsed=0
    )


# --- what a run shows ---------------------------------------------------------------------------------------


def test_a_value_is_a_finite_number_and_anything_else_none():
    data = results()
    data["results"][TASK].update({"n,none": 3, "flag,none": True, "nan,none": float("nan"), "text,none": "0.5"})
    a = run("a", data)
    assert (a.value(TASK, "acc"), a.value(TASK, "n")) == (0.5, 3.0)
    assert [a.value(TASK, m) for m in ("flag", "nan", "text", "missing")] == [None, None, None, None]
    assert a.value("other", "acc") is None
    assert a.has(TASK) and not a.has("other")
    assert a.documents(TASK) == 12 and a.documents("other") == 0
    assert a.samples(TASK) is None


def test_withheld_says_why_a_value_must_not_be_shown():
    def with_task(**fields: Any) -> Run:
        conditions = RunConditions(ModelRecord("m", "hf", ""), {TASK: TaskRecord(documents=2, of=2, **fields)})
        return Run(Path("/runs/a_results.json"), results(), "m", conditions)

    assert with_task().withheld(TASK, "acc") is None
    assert with_task().withheld("b_task", "acc") == "b_task not in this run"
    assert with_task(empty=True).withheld(TASK, "acc") == f"{TASK}: no documents in this release"
    assert with_task(failed="boom").withheld(TASK, "acc") == f"{TASK}: scoring failed (boom)"
    no_map = "no map: answered without a map drawn by the model (a chat model draws its own; or --model staged)"
    assert with_task(map_source="none").withheld(TASK, "acc") == no_map
    assert with_task(map_source="partial").withheld(TASK, "acc") == (
        "map stage: only some answers had the model's own map in the conversation")  # fmt: skip
    assert with_task(map_source="own_map").withheld(TASK, "acc") is None
    no_judge = with_task(judge=Judge("none", reason="no key"))
    assert no_judge.withheld(TASK, "llm_accuracy") == (
        "no judge: no answer was judged (no key); set LMMS_SPATIAL_JUDGE and re-score the samples with --model replay"
    )
    assert with_task(judge=Judge("none")).withheld(TASK, "judge_score").startswith(
        "no judge: no answer was judged (no verdict);")  # fmt: skip
    assert no_judge.withheld(TASK, "acc") is None  # not a judged metric
    unparsed = with_task(judge=Judge("llm", scored=0, unparsed=2))
    assert unparsed.withheld(TASK, "llm_accuracy") == "judge: every verdict unparsed (no answer scored)"
    assert with_task(judge=Judge("llm", scored=1, unparsed=2)).withheld(TASK, "llm_accuracy") is None
    assert with_task(judge=Judge("llm", scored=0, unparsed=0)).withheld(TASK, "llm_accuracy") is None
    # a task in the results without conditions is shown
    bare = Run(Path("/runs/a_results.json"), results(), "m", RunConditions(ModelRecord("m", "hf", "")))
    assert bare.withheld(TASK, "acc") is None


def test_the_digest_holds_the_numbers_of_the_tasks_asked_for():
    a, same = run("a", results()), run("b", results("pretrained=org/other"))
    assert a.digest() == same.digest()  # conditions are not numbers
    other_docs = run("c", results(documents=(3, 12)))
    assert a.digest() != other_docs.digest()  # n-samples are
    data = results()
    data["results"]["b_task"] = {"acc,none": 0.9}
    wider = run("d", data)
    assert wider.digest() != a.digest()
    assert wider.digest([TASK]) == a.digest([TASK]) == a.digest()
    assert run("e", results(accuracy=0.25)).digest([TASK]) != a.digest([TASK])


def test_run_options_are_the_distinct_options_recorded_for_the_tasks_asked():
    tasks = {
        "t1": TaskRecord(run_options={"LMMS_SPATIAL_X": "on"}),
        "t2": TaskRecord(run_options={"LMMS_SPATIAL_X": "on"}),
        "t3": TaskRecord(run_options={}),
        "t4": TaskRecord(),  # not recorded
    }
    r = Run(Path("/runs/a_results.json"), results(), "m", RunConditions(ModelRecord("m", "hf", ""), tasks))
    assert r.run_options(["t1", "t2", "t3", "t4", "t5"]) == [{"LMMS_SPATIAL_X": "on"}, {}]
    assert r.run_options(["t3"]) == [{}]
    assert r.run_options(["t4"]) == []


# --- the recorded conditions (issue 33) over the derived ones ------------------------------------------------


def test_the_recorded_conditions_replace_the_derived_ones_field_by_field():
    data = results("pretrained=org/m,seed=1", random_seed=0)
    data["lmms_spatial"] = {
        "schema": 1,
        "model": {"label": "M", "name": "hf2", "args": {"pretrained": "org/m", "seed": 4}, "seed": None},
        "tasks": {
            TASK: {
                "documents": 3, "of": 12, "limit": 3, "map_source": "own_map", "run_options": {"B": "2", "A": "1"},
                "seed": 7, "generation": {"protocol": {"max_new_tokens": 16},
                                          "in_effect": {"max_new_tokens": 16.0, "temperature": 0}},
            }
        },
        "environment": {"packages": {"torch": "2.1"}},
        "data": {"mmsi": {"source": "R/M", "revision": "abc"}, "dori": {"source": "/x", "local": True},
                 "osr": {"source": "O/B"}},
    }  # fmt: skip
    c = derive_conditions(data, {})
    # the args' seed=4 is the seed (the model records none of its own); --seed 0 stays beside it
    assert c == RunConditions(
        ModelRecord("M", "hf2", {"pretrained": "org/m", "seed": 4}, seed="4", sampling_seed=0, seeds_recorded=False),
        tasks={TASK: TaskRecord(
            documents=3, of=12, limit=3, map_source="own_map", run_options={"A": "1", "B": "2"}, seed=7,
            generation=Generation({"max_new_tokens": 16}, {"max_new_tokens": 16.0, "temperature": 0}))},
        environment={"packages": {"torch": "2.1"}},
        data={"mmsi": DataRecord("R/M", False, "abc"), "dori": DataRecord("/x", True), "osr": DataRecord("O/B", False)},
    )  # fmt: skip
    # as the report compares them: text, the settings as generation_items, the data by release
    assert (c.model.label, c.model.name, c.model.args_without_seed(), *c.seeds([])[:2], c.recorded) == (
        "M", "hf2", "pretrained=org/m", "4", "0", True)  # fmt: skip
    tc = c.tasks[TASK]
    assert (tc.options(), c.seeds([TASK])[2], tc.in_effect(), tc.protocol()) == (
        {"A": "1", "B": "2"},
        ("7",),
        (("max_new_tokens", "16"), ("temperature", "0")),
        (("max_new_tokens", "16"),),
    )
    assert c.data_entries() == (("dori", "a local copy"), ("mmsi", "R/M@abc"), ("osr", "O/B@default branch"))
    assert c.software == (("torch", "2.1"),)
    assert c.tasks[TASK].off_protocol() == {"temperature": ("0", None)}


def test_a_recorded_entry_of_an_earlier_version_keeps_what_it_lacks_from_the_file():
    data = results("pretrained=org/m,seed=1", random_seed=0, documents=(12, 12))
    data["config"]["limit"] = 5
    lines = {TASK: [verdict(judge="gpt-a", rubric="open", rubric_version=1)]}
    data["lmms_spatial"] = {
        "schema": 1,
        "model": {"seed": 9},
        "tasks": {TASK: {"documents": 5, "judge": {"kind": "llm", "model": "gpt-b"}}, "b_task": {"of": 2}},
    }
    c = derive_conditions(data, lines)
    assert (c.model.label, c.model.name, c.model.args_without_seed(), *c.seeds([])[:2]) == (
        "m", "hf", "pretrained=org/m", "9", None)  # fmt: skip
    assert c.tasks[TASK] == TaskRecord(
        documents=5, of=12, limit=5,
        judge=Judge("llm", model="gpt-b", rubric="open", rubric_version="1", scored=1, failures=0, unparsed=0),
    )  # fmt: skip
    assert c.tasks["b_task"] == TaskRecord(of=2)
    assert c.data is None and c.environment is None
    # the args' seed when the model records none: the derived one
    data["lmms_spatial"]["model"] = {}
    assert derive_conditions(data, lines).seeds([])[0] == "1"


def test_without_a_schema_the_record_is_ignored():
    data = results("pretrained=org/m,seed=1")
    data["lmms_spatial"] = {"model": {"label": "M", "seed": 9}}
    c = derive_conditions(data, {})
    assert (c.model.label, c.seeds([])[0], c.recorded) == ("m", "1", False)


# --- what else a results file says --------------------------------------------------------------------------


def test_empty_and_failed_tasks_options_and_gen_kwargs_are_derived():
    data = results()
    data["config"]["gen_kwargs"] = {"temperature": 0.0, "max_new_tokens": 8}
    data["results"]["empty_task"] = {"documents,none": "no documents in this release"}
    data["lmms_spatial"] = {"failed_tasks": {"bad_task": "x" * 250}}
    lines = {TASK: [{"doc_id": 0, "score": {"acc": 1, "run_options": {"LMMS_SPATIAL_DORI_SEED": 3}}}, {"score": {}}]}
    c = derive_conditions(data, lines)
    assert c.gen_overrides == (("max_new_tokens", "8"), ("temperature", "0"))
    assert c.tasks["empty_task"] == TaskRecord(empty=True)
    assert c.tasks["bad_task"] == TaskRecord(failed="x" * 200)
    assert c.tasks[TASK].run_options == {"LMMS_SPATIAL_DORI_SEED": "3"}
    assert c.describe_seed([TASK]) == "option seed 3"
    data["lmms_spatial"] = {"failed_tasks": ["bad_task"]}
    assert derive_conditions(data, {}).tasks["bad_task"] == TaskRecord()


def test_generation_settings_read_in_words():
    assert describe_generation(None) == "not recorded"
    assert describe_generation(()) == "none"
    assert describe_generation((("max_new_tokens", "8"), ("temperature", "0"))) == "max_new_tokens=8, temperature=0"


def test_gen_kwargs_keep_runs_apart_and_are_named():
    a, b = run("a", results()), run("b", results("pretrained=org/m,seed=2"))
    b.conditions = replace(b.conditions, gen_kwargs={"temperature": 0})
    assert pool_key(a, [TASK]) != pool_key(b, [TASK])
    assert differences(a, b, [TASK]) == ["--gen_kwargs none vs temperature=0"]


# --- reading the files ----------------------------------------------------------------------------------------


def write_run(folder: Path, stamp: str, data: dict[str, Any], samples: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for task, text in samples.items():
        (folder / f"{stamp}_samples_{task}.jsonl").write_text(text, encoding="utf-8")
    path = folder / f"{stamp}_results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_run_is_its_results_and_the_samples_files_of_its_timestamp(tmp_path):
    line = {"doc_id": 0, "input": "p", "doc": {}, "arguments": [], "doc_hash": "h", "token_counts": 1, "target": "A"}
    path = write_run(tmp_path, "2026_a", results(), {TASK: json.dumps(line) + "\n\n" + json.dumps({"doc_id": 1})})
    write_run(tmp_path, "2026_b", results(), {"b_task": json.dumps({"doc_id": 9})})
    r = load_run(path)
    assert r.lines == {TASK: [{"doc_id": 0, "target": "A"}, {"doc_id": 1}]}  # the prompt and document dropped
    assert (r.label, r.labelled, r.results_file) == ("m", False, path)
    assert load_run(path, "mine").label == "mine" and load_run(path, "mine").labelled


# a samples file as models and killed runs leave them: line 2 holds a byte a model wrote that is not UTF-8 (0xff: the
# 21st byte, after the 20 of '{"doc_id": 1, "r": "'), line 3 is blank, line 4 is not JSON, line 5 is a JSON array,
# line 6 ends in CR LF, and line 7 was cut by a killed run (no line end; its string opens at its 22nd character)
ANY_SAMPLES = (b'{"doc_id": 0, "input": "p", "doc": {}}\n{"doc_id": 1, "r": "\xff"}\n\n{oops\n[1, 2]\n'
               b'{"doc_id": 2}\r\n{"doc_id": 3, "cut": "ab')  # fmt: skip


def test_each_line_that_is_not_a_sample_is_skipped_naming_its_file_line_and_why(tmp_path):
    path = tmp_path / "s_samples_a_task.jsonl"
    path.write_bytes(ANY_SAMPLES)
    samples, skipped = read_samples(path, ("input", "doc"))
    assert samples == [{"doc_id": 0}, {"doc_id": 2}]  # the fields asked dropped
    assert [str(s) for s in skipped] == [
        f"{path}:2: not UTF-8 (0xff at byte 21 of the line)",
        f"{path}:4: not JSON (Expecting property name enclosed in double quotes: column 2)",
        f"{path}:5: not a samples record (a JSON list, not an object)",
        f"{path}:7: cut short: the last line, with no line end, is not whole JSON (Unterminated string starting at: "
        "column 22), as a killed run leaves it",
    ]
    assert skipped[0] == SkippedLine(path, 2, "not UTF-8 (0xff at byte 21 of the line)")
    assert read_samples(path) == ([{"doc_id": 0, "input": "p", "doc": {}}, {"doc_id": 2}], skipped)  # none dropped


def test_lines_end_as_in_text_mode_and_only_the_last_line_without_an_end_is_cut_short(tmp_path):
    path = tmp_path / "s_samples_a_task.jsonl"
    # CR alone ends a line too (as Python's text mode reads it): line 2 is not JSON, line 3 the cut last one
    path.write_bytes(b'{"doc_id": 0}\n[bad\r{"doc_id": 2')
    assert [s.line for s in read_samples(path)[1]] == [2, 3]
    assert read_samples(path)[1][0].why == "not JSON (Expecting value: column 2)"
    assert read_samples(path)[1][1].why.startswith("cut short: the last line")
    path.write_bytes(b'{"doc_id": 0}\r{"doc_id": 1}\r{oops\r')  # the last line ends (in CR): not JSON, not cut
    assert read_samples(path) == ([{"doc_id": 0}, {"doc_id": 1}], [
        SkippedLine(path, 3, "not JSON (Expecting property name enclosed in double quotes: column 2)")])  # fmt: skip
    path.write_bytes(b'{"doc_id": 0}\n{"doc_id": 1}')  # a whole last line without an end is a sample
    assert read_samples(path) == ([{"doc_id": 0}, {"doc_id": 1}], [])
    path.write_bytes(b"\xef\xbb\xbf" + b'{"doc_id": 0}\n \t\x0c\n')  # a BOM is no JSON; a line of spaces is blank
    assert [(s.line, s.why) for s in read_samples(path)[1]] == [
        (1, "not JSON (Unexpected UTF-8 BOM (decode using utf-8-sig): column 1)")]  # fmt: skip


def test_a_run_keeps_its_samples_and_the_lines_it_skipped(tmp_path):
    path = write_run(tmp_path, "s", results(), {})
    (tmp_path / "s_samples_a_task.jsonl").write_bytes(ANY_SAMPLES)
    (tmp_path / "s_samples_b_task.jsonl").write_bytes(b"[]\n")
    r = load_run(path)
    assert r.lines == {TASK: [{"doc_id": 0}, {"doc_id": 2}], "b_task": []}  # the prompt and document dropped
    assert [(s.file.name, s.line) for s in r.skipped] == [("s_samples_a_task.jsonl", n) for n in (2, 4, 5, 7)] + [
        ("s_samples_b_task.jsonl", 1)]  # fmt: skip
    assert [s.line for s in r.skipped_in([TASK])] == [2, 4, 5, 7]
    assert [s.line for s in r.skipped_in(["b_task", "c_task"])] == [1]
    assert r.skipped_in([]) == [] and load_run(write_run(tmp_path / "good", "s", results(), {})).skipped == []


def test_the_warnings_count_the_skipped_lines_of_each_run_and_name_ten_of_each_file(tmp_path):
    a, b = Path("/runs/x/s_samples_a_task.jsonl"), Path("/runs/x/s_samples_b_task.jsonl")
    bad = [SkippedLine(a, n, "not JSON") for n in range(1, 13)] + [SkippedLine(b, 5, "cut short")]
    assert SKIPPED_NAMED == 10
    assert name_skipped(bad) == [f"{a}:{n}: not JSON" for n in range(1, 11)] + [
        f"{a}: 2 more lines not samples", f"{b}:5: cut short"]  # fmt: skip
    assert name_skipped(bad[:11]) == [f"{a}:{n}: not JSON" for n in range(1, 11)] + [f"{a}: 1 more line not samples"]
    assert name_skipped(bad[:10]) == [f"{a}:{n}: not JSON" for n in range(1, 11)]
    one, none = run("x/s", results()), run("y/s", results(), label="clean")
    one.skipped = bad[-1:]
    assert skipped_warnings([none, one]) == [
        "WARNING: m: 1 samples line skipped, not samples (/runs/x): the values read from the samples lines (CIs, "
        "per-question values, analyses) leave them out",
        f"WARNING: skipped {b}:5: cut short",
    ]
    one.skipped = bad[:2]
    assert skipped_warnings([one])[0].startswith("WARNING: m: 2 samples lines skipped, not samples (/runs/x): ")


def test_a_results_file_cut_short_not_utf8_or_not_an_object_names_the_file(tmp_path):
    path = write_run(tmp_path, "s", results(), {})
    path.write_bytes(b'{"results": {"\xff": {}}}')  # edited by a tool that wrote Latin-1
    with pytest.raises(ValueError) as caught:
        load_run(path)
    assert str(caught.value) == (
        f"{path}: not a JSON results file ('utf-8' codec can't decode byte 0xff in position 14: invalid start byte); "
        "move it out of the folder, or run it again"
    )
    path.write_text('{"results": ', encoding="utf-8")  # a writer killed mid-file
    with pytest.raises(ValueError) as caught:
        load_run(path)
    assert str(caught.value) == (
        f"{path}: not a JSON results file (Expecting value: line 1 column 13 (char 12)); move it out of the folder, "
        "or run it again"
    )
    path.write_text("[1]", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        load_run(path)
    assert str(caught.value) == f"{path}: not a results file (a JSON list, lmms-eval writes an object)"


def test_results_files_are_found_in_folders_and_labels_must_match_them(tmp_path):
    one = write_run(tmp_path / "x", "1", results(), {})
    two = write_run(tmp_path / "y" / "deep", "2", results("pretrained=org/m,seed=2"), {})
    (tmp_path / "y" / "notes.json").write_text("{}")
    assert find_results_files([tmp_path]) == [one, two]
    assert find_results_files([two, tmp_path / "x"]) == [two, one]
    with pytest.raises(FileNotFoundError, match="neither a"):
        find_results_files([tmp_path / "y" / "notes.json"])
    with pytest.raises(FileNotFoundError, match=f"no \\*_results.json under {tmp_path / 'empty'}"):
        (tmp_path / "empty").mkdir()
        find_results_files([tmp_path / "empty"])
    runs = load_runs([tmp_path], labels=["a", "b"])
    assert [(r.label, r.conditions.seeds([])[0]) for r in runs] == [("a", "1"), ("b", "2")]
    assert [r.label for r in load_runs([tmp_path])] == ["m", "m"]
    with pytest.raises(ValueError, match="1 labels for 2 results files"):
        load_runs([tmp_path], labels=["a"])


# --- survivors of the first mutation run (issue 42), each pinned -------------------------------------------------


def test_the_digest_holds_the_n_samples_of_a_task_without_results_and_ignores_key_order():
    a = run("a", results())
    data = results()
    data["n-samples"]["b_task"] = {"effective": 1, "original": 1}
    assert run("b", data).digest() != a.digest()
    reordered = {"results": {TASK: {"acc,none": 0.5}}, "n-samples": {TASK: {"original": 12, "effective": 12}}}
    shuffled = Run(Path("/runs/c_results.json"), reordered, "m", a.conditions)
    assert shuffled.digest() == a.digest()
    bare = Run(Path("/runs/d_results.json"), {"results": {TASK: {"acc,none": 0.5}}}, "m", a.conditions)
    assert bare.digest() != a.digest() and bare.digest([TASK]) != a.digest([TASK])


def test_pooling_keys_on_the_judge_and_the_asked_tasks_only():
    def with_judge(name: str, judge: Judge | None, extra: bool = False) -> Run:
        tasks = {TASK: TaskRecord(documents=2, of=2, judge=judge)}
        if extra:
            tasks["b_task"] = TaskRecord(documents=1, of=9)
        return Run(
            Path(f"/runs/{name}_results.json"), results(), name, RunConditions(ModelRecord("m", "hf", ""), tasks)
        )

    gpt, other = with_judge("a", Judge("llm", model="gpt-a")), with_judge("b", Judge("llm", model="gpt-b"))
    assert pool_key(gpt, [TASK]) != pool_key(other, [TASK])
    assert differences(gpt, other, [TASK]) == [f"judge gpt-a vs judge gpt-b ({TASK})"]
    assert differences(with_judge("c", None), gpt, [TASK]) == [f"judge none needed vs judge gpt-a ({TASK})"]
    # unlabelled runs (labels "a" and "d" here are names only) pool; a task not asked for is not compared
    assert pool_key(gpt, [TASK]) == pool_key(with_judge("d", Judge("llm", model="gpt-a"), extra=True), [TASK])
    wide = with_judge("e", Judge("llm", model="gpt-a"), extra=True)
    assert differences(gpt, wide, [TASK]) == ["the same conditions and seed (seed unknown) but different results"]
    assert differences(wide, gpt, [TASK, "b_task"]) == ["tasks run b_task vs -"]


def test_a_missing_model_args_reads_none_on_either_side():
    a, b = run("a", results("pretrained=org/m")), run("b", results(""))
    assert differences(a, b, [TASK])[0] == "model_args pretrained=org/m vs (none)"


def test_a_failed_verdict_without_a_reason_is_no_verdict():
    assert _judge_from_lines([verdict(rubric="open", failed=True)]) == Judge(
        "none", reason="no verdict", scored=0, failures=1, unparsed=0
    )


def test_the_model_name_falls_back_to_model_name_then_model():
    data = results()
    del data["config"]["model"]
    data["model_name"] = "gpt-4o"
    assert derive_conditions(data, {}).model.name == "gpt-4o"
    del data["model_name"]
    assert derive_conditions(data, {}).model.name == "model"


def test_a_recorded_task_keeps_what_it_does_not_record_from_the_samples():
    data = results()
    data["lmms_spatial"] = {"schema": 1, "tasks": {TASK: {"of": 12}}, "failed_tasks": {TASK: "boom"}}
    lines = {TASK: [{"doc_id": 0, "llm_accuracy": {"judge": "gpt-a", "rubric": "r", "stage_outputs": {"m": "x"}}}]}
    tc = derive_conditions(data, lines).tasks[TASK]
    assert (tc.documents, tc.map_source, tc.failed) == (12, "own_map", "boom")
    assert tc.judge == Judge("llm", model="gpt-a", rubric="r", scored=1, failures=0, unparsed=0)


def test_messages_name_every_path_and_file(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(FileNotFoundError, match=f"under {tmp_path / 'a'}, {tmp_path / 'b'}$"):
        find_results_files([tmp_path / "a", tmp_path / "b"])
    one = write_run(tmp_path / "a", "1", results(), {})
    with pytest.raises(ValueError, match=re.escape(f"2 labels for 1 results files: ['{one}']")):
        load_runs([tmp_path / "a"], labels=["x", "y"])


def test_a_copy_that_failed_one_more_task_is_another_run():
    a = run("a", results())
    data = results()
    data["lmms_spatial"] = {"failed_tasks": {"b_task": "boom"}}
    b = run("b", data)
    assert distinct_runs([a, b]) == ([a, b], [])


def test_a_rule_judge_names_every_llm_beside_it():
    lines = [verdict(judge="gpt-b", rubric="r"), verdict(judge="gpt-a", rubric="r"), verdict(rubric="r", fallback=True)]
    judge = _judge_from_lines(lines)
    assert (judge.kind, judge.model, judge.share) == ("rule", "gpt-a, gpt-b", 1 / 3)


def test_an_unreadable_failure_count_subtracts_nothing():
    # documents 4 - failures (none readable: 0) - unparsed 1 = 3 scored
    values = {"judge_failures,none": None, "judge_unparsed,none": 1}
    assert _judge_from_results(values, 4) == Judge("llm", scored=3, failures=None, unparsed=1)


def test_a_recorded_task_with_no_documents_in_this_release_stays_empty():
    data = results()
    data["results"]["empty_task"] = {"documents,none": "no documents in this release"}
    data["lmms_spatial"] = {"schema": 1, "tasks": {"empty_task": {"documents": 0}}}
    assert derive_conditions(data, {}).tasks["empty_task"] == TaskRecord(documents=0, empty=True)
