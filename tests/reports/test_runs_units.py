"""Which runs the report pools as seeds (issue 42): ``pool_key``, ``differences``, ``distinct_runs`` and the
conditions ``derive_conditions`` reads from a results file, on hand-made results dicts (no lmms-eval run).

Each pair of runs differs in exactly one thing, so a bug that ignores that thing (or keys on the wrong one) makes
two runs pool that must not, or keeps apart two seeds that must pool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lmms_spatial.reports.runs import (
    Conditions,
    Run,
    TaskConditions,
    _map_source,
    _without_seed,
    derive_conditions,
    differences,
    distinct_runs,
    pool_key,
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
    return Run(Path(f"/runs/{name}_results.json"), data, label or conditions.label, conditions, lines or {},
               labelled=label is not None)  # fmt: skip


# --- model_args' seed --------------------------------------------------------------------------------------


def test_the_seed_is_taken_out_of_model_args_wherever_it_stands():
    assert _without_seed("pretrained=org/m,seed=7,device=cpu") == ("pretrained=org/m,device=cpu", "7")
    assert _without_seed("seed = 3, pretrained=org/m") == ("pretrained=org/m", "3")
    assert _without_seed("pretrained=org/m,seed=") == ("pretrained=org/m", "")
    # a key that only ends in "seed" is an argument, not the seed
    assert _without_seed("myseed=3,pretrained=org/m") == ("myseed=3,pretrained=org/m", None)


def test_derived_conditions_read_model_seed_random_seed_and_documents():
    c = derive_conditions(results("pretrained=org/m,seed=5", random_seed=9, documents=(3, 12)), {})
    assert (c.label, c.model, c.args, c.seed, c.random_seed) == ("m", "hf", "pretrained=org/m", "5", "9")
    assert c.tasks[TASK] == TaskConditions(documents=3, of=12)
    assert c.tasks[TASK].partial and not c.task("other").partial
    assert c.recorded is False
    # seeds: (model seed, --seed, task seeds, option seeds); the task carries neither of its own
    assert c.seeds([TASK]) == ("5", "9", ("",), ("",))


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


def conditions_with(options: dict[str, str], seed: str = "1") -> Conditions:
    task = TaskConditions(documents=4, of=4, run_options=tuple(sorted(options.items())))
    return Conditions("m", "hf", "pretrained=org/m", seed=seed, tasks={"dori_task": task})


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
