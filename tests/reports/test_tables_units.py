"""The report's cells (issue 42): :mod:`lmms_spatial.reports.tables` on hand-made runs (no results folder, no CLI).

Each test builds :class:`~lmms_spatial.reports.runs.Run` objects by hand (results, samples lines, conditions) and
checks a cell's exact value: a leaf's metric, chance level and unparsed rate (from the results, or over the questions
a ``where`` keeps), means over tasks and over questions, means ± std/sqrt(n) over seeds, bootstrap CIs, the row
marks and notes, and where the chance row goes. The expected values are worked out by hand in the comments."""

from __future__ import annotations

import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lmms_spatial.conditions import Generation, Judge, ModelRecord, RunConditions, TaskRecord
from lmms_spatial.reports import tables
from lmms_spatial.reports.runs import Run
from lmms_spatial.reports.tables import (
    ITERATIONS,
    JUDGE_UNUSABLE,
    Cell,
    Column,
    Layout,
    Leaf,
    Mean,
    Pooled,
    Row,
    _cell_for_runs,
    _coverage,
    _judge_of,
    _merged,
    _rate_cell,
    _sum,
    build_table,
    group_runs,
    tasks_without_documents,
)


def run(
    name: str,
    results: dict[str, dict[str, Any]],
    lines: dict[str, list[dict[str, Any]]] | None = None,
    tasks: dict[str, TaskRecord] | None = None,
    *,
    label: str = "m",
    args: str = "pretrained=org/m",
    seed: str | None = None,
    **conditions: Any,
) -> Run:
    """A run of model ``label`` with these results ({task: {metric: value}}), samples lines and task conditions
    (default: each task of ``results`` with 4 documents of 4)."""
    data = {"results": {t: {f"{k},none": v for k, v in m.items()} for t, m in results.items()}}
    if tasks is None:
        tasks = {t: TaskRecord(documents=4, of=4) for t in results}
    c = RunConditions(ModelRecord(label, "hf", args, seed), tasks, **conditions)
    return Run(Path(f"/runs/{name}/x_results.json"), data, label, c, lines or {})


def acc_lines(scores: list[float | None], **extra: Any) -> list[dict[str, Any]]:
    """Samples lines whose ``acc`` record holds each score (None: a record with no score)."""
    return [{"doc_id": i, "acc": {"score": s, **extra}} for i, s in enumerate(scores)]


# --- a leaf: one metric of one task ------------------------------------------------------------------------------


def test_a_leaf_reads_its_metric_chance_and_unparsed_rate_from_the_results():
    r = run("a", {"t": {"acc": 0.75, "chance_level": 0.25, "unparsed_rate": 0.125, "cl": 0.5, "ur": 0.0625}})
    leaf = Leaf("t", "acc")
    assert (leaf.value(r), leaf.value(r, "chance"), leaf.value(r, "unparsed")) == (0.75, 0.25, 0.125)
    # other keys for the rates are read where the leaf names them
    other = Leaf("t", "acc", chance="cl", unparsed="ur")
    assert (other.value(r, "chance"), other.value(r, "unparsed")) == (0.5, 0.0625)
    assert (leaf.why(r), leaf.why(r, "chance"), leaf.why(r, "unparsed")) == (None, None, None)
    assert leaf.tasks() == {"t"} and leaf.leaves() == (leaf,) and not leaf.judged
    assert Leaf("t", "judge_score").judged and Leaf("t", "llm_accuracy").judged


def test_a_leaf_without_a_chance_level_or_unparsed_rate_says_why():
    r = run("a", {"t": {"dist": 1.5, "chance_level": 0.25, "unparsed_rate": 0.125}})
    bare = Leaf("t", "dist", chance=None, unparsed=None)
    assert (bare.value(r, "chance"), bare.value(r, "unparsed")) == (None, None)
    assert bare.why(r, "chance") == "dist: no chance level" and bare.why(r, "unparsed") == "dist: no unparsed rate"
    said = Leaf("t", "dist", chance=None, unparsed=None, no_chance="a distance", no_unparsed="no parsing")
    assert (said.why(r, "chance"), said.why(r, "unparsed")) == ("a distance", "no parsing")
    # a leaf that has a chance key but says why it has none: its reason
    no_level = run("b", {"t": {"x": 0.5}})
    assert Leaf("t", "x", no_chance="open answers").why(no_level, "chance") == "open answers"


def test_a_withheld_task_empties_the_value_and_unparsed_rate_but_not_the_chance_level():
    empty = {"t": TaskRecord(documents=0, of=4, empty=True)}
    r = run("a", {"t": {"acc": 0.5, "chance_level": 0.25, "unparsed_rate": 0.0}}, tasks=empty)
    leaf = Leaf("t", "acc")
    assert (leaf.value(r), leaf.value(r, "unparsed"), leaf.value(r, "chance")) == (None, None, 0.25)
    assert leaf.why(r) == leaf.why(r, "unparsed") == "t: no documents in this release"


def test_a_judge_that_gave_no_verdict_withholds_the_judged_score_but_not_its_unparsed_rate():
    judge = Judge("none", reason="no judge configured")
    r = run("a", {"t": {"judge_score": 0.5, "unparsed_rate": 0.25}}, tasks={"t": TaskRecord(4, 4, judge=judge)})
    leaf = Leaf("t", "judge_score")
    assert leaf.value(r) is None and leaf.why(r).startswith("no judge: no answer was judged (no judge configured)")
    # the unparsed rate is checked as "unparsed_rate", a metric no judge withholds
    assert leaf.value(r, "unparsed") == 0.25 and leaf.why(r, "unparsed") is None


def test_the_judge_unusable_rate_is_failures_plus_unparsed_verdicts_over_the_documents():
    def rate(judge: Judge | None, documents: int | None = 8) -> float | None:
        r = run("a", {"t": {"judge_score": 0.5}}, tasks={"t": TaskRecord(documents, 8, judge=judge)})
        return Leaf("t", "judge_score", unparsed=JUDGE_UNUSABLE).value(r, "unparsed")

    assert rate(Judge("llm", scored=5, failures=2, unparsed=1)) == 3 / 8  # (2 + 1) / 8
    assert rate(Judge("llm", scored=5, failures=2, unparsed=None)) == 2 / 8  # no unparsed count: 0
    assert rate(Judge("llm", scored=8, failures=0, unparsed=0)) == 0.0  # a count of 0 is a rate, not "unknown"
    assert rate(Judge("llm", scored=5, failures=None, unparsed=1)) is None  # failures not recorded
    assert rate(None) is None  # no judge recorded
    assert rate(Judge("llm", scored=5, failures=2, unparsed=1), documents=0) is None  # no documents: no rate
    assert rate(Judge("llm", scored=5, failures=2, unparsed=1), documents=None) is None


def test_a_leaf_absent_from_the_run_or_without_a_value_says_why():
    r = run("a", {"t": {"acc": math.nan}}, tasks={"t": TaskRecord(4, 4), "u": TaskRecord(4, 4)})
    assert Leaf("t", "acc").why(r) == "no value in the results of t (NaN: no document scored)"
    assert Leaf("t", "acc").why(r, "chance") == "t records no chance level"
    # a task the conditions know but the results do not hold
    assert Leaf("u", "acc").why(r) == "u not in this run"
    # a task neither knows: withheld as such
    assert Leaf("v", "acc").why(r) == "v not in this run"


# --- a leaf over part of a task's questions (one category, one skill) ------------------------------------------

CATEGORY_LINES = [
    # category A: a line with its own rates; a line without (rates from the record: unparsed, 1 of 2 options)
    {"doc_id": 0, "acc": {"category": "A", "score": 1.0, "parsed": "x", "n_options": 4}, "chance_level": 0.25,
     "unparsed_rate": 0.0},
    {"doc_id": 1, "acc": {"category": "A", "score": 0.0, "parsed": None, "n_options": 2}},
    # category B: one line with rates of its own
    {"doc_id": 2, "acc": {"category": "B", "score": 1.0, "parsed": "x", "n_options": 8}, "chance_level": 0.125,
     "unparsed_rate": 1.0},
    # a category given as a number; a record that is not a dict
    {"doc_id": 3, "acc": {"category": 7, "score": 0.5}},
    {"doc_id": 4, "acc": 1.0},
]  # fmt: skip


def category_run() -> Run:
    results = {"t": {"acc": 0.5, "A": 0.5, "B": 1.0, "chance_level": 0.9, "unparsed_rate": 0.9}}
    return run("a", results, {"t": CATEGORY_LINES}, tasks={"t": TaskRecord(5, 5)})


def test_a_category_leaf_reads_its_rates_from_its_own_questions_samples():
    r = category_run()
    a = Leaf("t", "A", sample_metric="acc", where=("category", "A"))
    # chance: line 0's 0.25 and line 1's 1/n_options = 1/2: (0.25 + 0.5) / 2 = 0.375 (not the task's 0.9)
    assert a.value(r, "chance") == 0.375
    # unparsed: line 0's 0.0 and line 1's parsed None = 1.0: (0 + 1) / 2 = 0.5
    assert a.value(r, "unparsed") == 0.5
    assert a.value(r) == 0.5  # the value itself is the results file's
    b = Leaf("t", "B", sample_metric="acc", where=("category", "B"))
    assert (b.value(r, "chance"), b.value(r, "unparsed")) == (0.125, 1.0)
    # the category is compared as text: 7 is "7"; that line has no rate at all (nor a parsed field)
    seven = Leaf("t", "acc", where=("category", "7"))
    assert seven._matching(r) and seven.value(r, "chance") is None and seven.value(r, "unparsed") is None


def test_a_category_leaf_with_no_question_or_no_samples_says_why():
    r = category_run()
    none = Leaf("t", "C", sample_metric="acc", where=("category", "C"))
    assert none.value(r, "chance") is None
    assert none.why(r, "chance") == "no C question among the documents of t"
    spaced = Leaf("t", "acc", where=("category", "left_right"))
    assert spaced.why(r, "chance") == "no left right question among the documents of t"
    bare = run("a", {"t": {"acc": 0.5}}, tasks={"t": TaskRecord(5, 5)})
    assert Leaf("t", "acc", where=("skill", "x")).why(bare, "chance") == (
        "per-skill values need the samples file of t (--log_samples)"
    )


def test_a_leaf_scores_are_the_scored_records_of_its_questions():
    lines = [
        {"doc_id": 0, "acc": {"score": 1.0, "category": "A"}, "other": {"points": 3.0, "category": "A"}},
        {"doc_id": 1, "acc": {"score": 0.0, "category": "B"}, "other": {"points": 2.0, "category": "B"}},
        {"doc_id": 2, "acc": {"score": 1.0, "failed": True, "category": "A"}},  # a failed answer: no score
        {"doc_id": 3, "acc": {"score": None, "category": "A"}},  # no score
        {"doc_id": 4, "acc": {"score": 0.5, "failed": False, "category": "A"}},
        {"doc_id": 5, "acc": 0.25},  # a plain number
        {"doc_id": 6, "acc": True},  # a flag, not a score
    ]
    r = run("a", {"t": {"acc": 0.5}}, {"t": lines})
    assert Leaf("t", "acc").scores(r).tolist() == [1.0, 0.0, 0.5, 0.25]
    # a where keeps its questions' records (plain numbers carry no category)
    assert Leaf("t", "acc", where=("category", "A")).scores(r).tolist() == [1.0, 0.5]
    # another samples key and score field
    assert Leaf("t", "x", sample_metric="other", score_field="points").scores(r).tolist() == [3.0, 2.0]
    assert Leaf("t", "acc", where=("category", "Z")).scores(r) is None
    assert Leaf("t", "acc").scores(run("b", {"t": {"acc": 0.5}})) is None  # no samples file
    assert Leaf("t", "acc").scores(run("c", {"t": {"acc": 0.5}}, {"t": []})) is None


def test_a_leaf_is_weighted_by_its_scored_documents_and_its_rates_by_its_documents():
    r = run("a", {"t": {"acc": 0.5}}, {"t": acc_lines([1.0, 0.0, None])}, tasks={"t": TaskRecord(7, 9)})
    leaf = Leaf("t", "acc")
    assert (leaf.count(r), leaf.count(r, "unparsed"), leaf.count(r, "chance")) == (2, 7, 7)
    # without samples: the documents evaluated
    assert Leaf("t", "acc").count(run("b", {"t": {"acc": 0.5}}, tasks={"t": TaskRecord(7, 9)})) == 7


# --- bootstrap draws ---------------------------------------------------------------------------------------------


def test_draws_resample_the_scores_with_a_generator_seeded_from_the_seed_task_and_metric():
    scores = [1.0, 0.0, 1.0, 1.0]
    r = run("a", {"t": {"acc": 0.75}}, {"t": acc_lines(scores)})
    draws = Leaf("t", "acc").draws(r, 3)
    # the documented rule: numpy's default_rng([seed, crc32("task|metric|where")]), ITERATIONS resamples of 4
    rng = np.random.default_rng([3, zlib.crc32(b"t|acc|None")])
    expected = np.asarray(scores)[rng.integers(0, 4, size=(500, 4))].mean(axis=1)
    assert ITERATIONS == 500 and draws.shape == (500,) and draws.tolist() == expected.tolist()
    # every draw is a mean of four 0/1 scores: k/4
    assert set(draws.tolist()) <= {0.0, 0.25, 0.5, 0.75, 1.0}
    assert Leaf("t", "acc").draws(r, 4).tolist() != draws.tolist()  # another seed, other draws
    where = Leaf("t", "acc", where=("category", "A"))
    rc = run("c", {"t": {"acc": 0.75}}, {"t": acc_lines(scores, category="A")})
    rng = np.random.default_rng([3, zlib.crc32(b"t|acc|('category', 'A')")])
    assert where.draws(rc, 3).tolist() == np.asarray(scores)[rng.integers(0, 4, size=(500, 4))].mean(axis=1).tolist()


def test_draws_need_scores_whose_mean_is_the_reported_value():
    lines = {"t": acc_lines([1.0, 0.0, 1.0, 1.0])}  # mean 0.75
    assert Leaf("t", "acc").draws(run("a", {"t": {"acc": 0.75 + 1e-10}}, lines), 0) is not None  # within 1e-9
    assert Leaf("t", "acc").draws(run("a", {"t": {"acc": 0.75 + 1e-8}}, lines), 0) is None  # not per-doc mean
    assert Leaf("t", "acc").draws(run("a", {"t": {"acc": 0.7}}, lines), 0) is None
    assert Leaf("t", "acc").draws(run("a", {"t": {"acc": 0.75}}), 0) is None  # no samples
    assert Leaf("t", "acc").draws(run("a", {"t": {"acc": math.nan}}, lines), 0) is None  # no value


# --- aggregates: a mean over tasks, a mean over questions --------------------------------------------------------


def two_task_run(name: str = "a", **kwargs: Any) -> Run:
    """Task t: 4 scored of 5 documents, 3 right (0.75), unparsed 0.2, chance 0.25; task u: 2 scored of 2, 1 right
    (0.5), unparsed 0.5, chance 0.5."""
    results = {
        "t": {"acc": 0.75, "unparsed_rate": 0.2, "chance_level": 0.25},
        "u": {"acc": 0.5, "unparsed_rate": 0.5, "chance_level": 0.5},
    }
    lines = {"t": acc_lines([1.0, 1.0, 1.0, 0.0, None]), "u": acc_lines([0.0, 1.0])}
    tasks = kwargs.pop("tasks", {"t": TaskRecord(5, 5), "u": TaskRecord(2, 2)})
    return run(name, results, lines, tasks=tasks, **kwargs)


def test_a_mean_is_the_unweighted_mean_of_its_parts():
    r = two_task_run()
    mean = Mean((Leaf("t", "acc"), Leaf("u", "acc")))
    assert mean.value(r) == 0.625  # (0.75 + 0.5) / 2
    assert mean.value(r, "unparsed") == 0.35 and mean.value(r, "chance") == 0.375  # (0.2+0.5)/2, (0.25+0.5)/2
    assert mean.tasks() == {"t", "u"} and mean.leaves() == (Leaf("t", "acc"), Leaf("u", "acc"))
    assert not mean.judged and Mean((Leaf("t", "acc"), Leaf("u", "judge_score"))).judged
    # a part missing: no value, unless the mean takes the parts present
    missing = (Leaf("t", "acc"), Leaf("v", "acc"))
    assert Mean(missing).value(r) is None and Mean(missing, require_all=False).value(r) == 0.75
    assert Mean((Leaf("v", "acc"), Leaf("w", "acc")), require_all=False).value(r) is None


def test_a_mean_says_why_it_is_empty():
    r = two_task_run()
    assert Mean((Leaf("t", "acc"), Leaf("u", "acc"))).why(r) is None
    assert Mean((Leaf("t", "acc"), Leaf("v", "acc"))).why(r) == "v not in this run"
    # one reason given twice is one reason
    assert Mean((Leaf("v", "acc"), Leaf("v", "acc2"))).why(r) == "v not in this run"
    three = Mean((Leaf("v", "acc"), Leaf("w", "acc"), Leaf("x", "acc"), Leaf("t", "acc")))
    assert three.why(r) == "needs every part; v not in this run (and 2 other reasons)"


def test_a_mean_draws_are_the_parts_draws_averaged_index_by_index():
    r = two_task_run()
    t, u = Leaf("t", "acc").draws(r, 0), Leaf("u", "acc").draws(r, 0)
    assert Mean((Leaf("t", "acc"), Leaf("u", "acc"))).draws(r, 0).tolist() == ((t + u) / 2).tolist()
    assert Mean((Leaf("t", "acc"), Leaf("v", "acc"))).draws(r, 0) is None


def test_a_pooled_mean_weights_each_task_by_its_scored_questions_and_its_rates_by_documents():
    r = two_task_run()
    pooled = Pooled((Leaf("t", "acc"), Leaf("u", "acc")))
    # 3 right of 4 scored and 1 of 2: 4 of 6 questions right
    assert pooled.value(r) == pytest.approx(4 / 6)
    # unparsed over documents: (0.2 * 5 + 0.5 * 2) / 7 = 2 / 7; chance (0.25 * 5 + 0.5 * 2) / 7 = 2.25 / 7
    assert pooled.value(r, "unparsed") == pytest.approx(2 / 7) and pooled.value(r, "chance") == pytest.approx(2.25 / 7)
    assert Pooled((Leaf("t", "acc"), Leaf("v", "acc"))).value(r) is None
    # draws weighted alike: (4 * t + 2 * u) / 6
    t, u = Leaf("t", "acc").draws(r, 0), Leaf("u", "acc").draws(r, 0)
    assert pooled.draws(r, 0) == pytest.approx((4 * t + 2 * u) / 6)
    assert Pooled((Leaf("t", "acc"), Leaf("v", "acc"))).draws(r, 0) is None


def test_a_pooled_mean_over_no_document_is_empty():
    r = run("a", {"t": {"acc": 0.5, "unparsed_rate": 0.0}}, tasks={"t": TaskRecord(0, 4)})
    assert Pooled((Leaf("t", "acc"),)).value(r, "unparsed") is None  # 0 documents: no weight, no rate


# --- cells: one run (with its CI), several seeds (mean ± std/sqrt(n)), rates ------------------------------------


def test_a_cell_of_one_run_is_the_value_scaled_with_its_bootstrap_ci():
    all_right = run("a", {"t": {"acc": 1.0}}, {"t": acc_lines([1.0, 1.0, 1.0])})
    cell = _cell_for_runs(Leaf("t", "acc"), [all_right], 100.0, 0, True)
    assert (cell.value, cell.lo, cell.hi, cell.err, cell.n, cell.note) == (100.0, 100.0, 100.0, None, 1, None)
    # one of two right: a resample's mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4; of 500 draws about 125
    # are 0 and 125 are 1, so the 2.5th and 97.5th percentiles are 0 and 1 (times the scale)
    half = run("b", {"t": {"acc": 0.5}}, {"t": acc_lines([1.0, 0.0])})
    cell = _cell_for_runs(Leaf("t", "acc"), [half], 10.0, 0, True)
    assert (cell.value, cell.lo, cell.hi) == (5.0, 0.0, 10.0)
    # no CI asked, or none possible (no samples): the value alone
    assert _cell_for_runs(Leaf("t", "acc"), [half], 100.0, 0, False) == Cell(50.0)
    assert _cell_for_runs(Leaf("t", "acc"), [run("c", {"t": {"acc": 0.5}})], 100.0, 0, True) == Cell(50.0)


def test_a_cell_of_several_seeds_is_their_mean_with_the_population_std_over_sqrt_n():
    runs = [run(f"s{i}", {"t": {"acc": v}}, seed=str(i)) for i, v in enumerate([0.5, 0.75, 1.0])]
    cell = _cell_for_runs(Leaf("t", "acc"), runs, 100.0, 0, True)
    # mean 75; deviations -25, 0, 25: std sqrt(1250 / 3) = 20.41; error 20.41 / sqrt(3) = 11.785; no CI
    assert cell.value == pytest.approx(75.0) and cell.n == 3
    assert cell.err == pytest.approx(math.sqrt(1250 / 3) / math.sqrt(3)) and (cell.lo, cell.hi) == (None, None)
    # a seed without a value is left out: mean of 0.5 and 1.0, deviations 25: std 25, error 25 / sqrt(2)
    runs[1] = run("s1", {"t": {"acc": math.nan}}, seed="1")
    cell = _cell_for_runs(Leaf("t", "acc"), runs, 100.0, 0, True)
    assert (cell.value, cell.n) == (75.0, 2) and cell.err == pytest.approx(25 / math.sqrt(2))
    # no seed has a value: empty, saying why
    empty = [run(f"e{i}", {"t": {"acc": math.nan}}) for i in range(2)]
    assert _cell_for_runs(Leaf("t", "acc"), empty, 100.0, 0, True) == Cell(
        note="no value in the results of t (NaN: no document scored)"
    )


def test_an_empty_cell_of_one_run_says_why_and_a_column_without_a_spec_is_blank():
    r = run("a", {"t": {"acc": 0.5}})
    assert _cell_for_runs(Leaf("u", "acc"), [r], 100.0, 0, True) == Cell(note="u not in this run")
    assert _cell_for_runs(None, [r], 100.0, 0, True) == Cell()


def test_a_rate_cell_is_the_mean_rate_over_the_rows_runs():
    runs = [run("a", {"t": {"acc": 0.5, "unparsed_rate": 0.25}}), run("b", {"t": {"acc": 0.5, "unparsed_rate": 0.5}})]
    column = Column("T", "T", Leaf("t", "acc"))
    assert _rate_cell(column, runs, "unparsed", 100.0) == Cell(37.5)  # (25 + 50) / 2
    # a run without the rate is left out of the mean
    runs.append(run("c", {"t": {"acc": 0.5}}))
    assert _rate_cell(column, runs, "unparsed", 100.0) == Cell(37.5)
    assert _rate_cell(column, runs[2:], "unparsed", 100.0) == Cell(note="no value in the results of t (NaN: no "
                                                                          "document scored)")  # fmt: skip
    assert _rate_cell(Column("R", "R", None), runs, "unparsed", 100.0) == Cell()
    # a column that is not a score (a distance) has no chance level, whatever the results say
    dist = Column("D", "Dist.", Leaf("t", "acc"), scaled=False)
    assert _rate_cell(dist, runs, "chance", 100.0) == Cell(note="Dist.: not a score, no chance level")
    # but an unparsed rate, scaled as given
    assert _rate_cell(dist, runs[:1], "unparsed", 100.0) == Cell(25.0)


def test_merged_chance_rows_are_one_row_when_every_value_agrees():
    def row(*values: float | None) -> Row:
        return Row("x", "chance", [Cell(v) if v is not None else Cell(note="why") for v in values])

    merged = _merged([row(25.0, None, 50.0), row(25.0 + 3e-10, 12.5, None)])
    assert merged == [Cell(25.0), Cell(12.5), Cell(50.0)]  # each column's first value; 3e-10 is rounding (9 digits)
    assert _merged([row(None), row(None)]) == [Cell(note="why")]
    assert _merged([row(25.0, 50.0), row(25.0, 50.001)]) is None


# --- rows: which runs, their coverage and judge ------------------------------------------------------------------


def test_coverage_sums_documents_and_split_over_the_tables_tasks_with_data():
    tasks = {
        "t": TaskRecord(3, 4, limit=3),
        "u": TaskRecord(2, 5, limit=3),
        "e": TaskRecord(None, None, empty=True),  # no documents in the release (no counts): not counted
        "o": TaskRecord(100, 100),  # not a task of this table
    }
    r = run("a", {"t": {}, "u": {}}, tasks=tasks)
    assert _coverage(r, {"t", "u", "e", "x"}) == (5, 9, 3)
    r = run("a", {"t": {}}, tasks={"t": TaskRecord(3, None), "u": TaskRecord(2, 5)})
    assert _coverage(r, {"t", "u"}) == (5, None, None)  # a split size not recorded: no N
    assert _sum([1, 2, 3]) == 6 and _sum([1, None]) is None and _sum([]) == 0


def test_the_judge_of_a_table_sums_the_counts_and_weights_the_rule_share_by_answers():
    tasks = {
        "j1": TaskRecord(4, 4, judge=Judge("rule", share=1.0, scored=3, failures=0, unparsed=1, rule="r")),
        "j2": TaskRecord(
            8, 8, judge=Judge("llm", model="gpt", rubric="x", rubric_version="1", scored=6, failures=2, unparsed=0)
        ),  # fmt: skip
        "k": TaskRecord(8, 8),  # no judge
    }
    r = run("a", {}, tasks=tasks)
    judge = _judge_of(r, {"j1", "j2", "k"})
    # rule share: the rule answered all 4 answered of j1 (3 scored + 1 unparsed), an LLM the 6 of j2: 4 / 10
    assert judge.kind == "rule" and judge.share == pytest.approx(0.4)
    assert (judge.scored, judge.failures, judge.unparsed, judge.model) == (9, 2, 1, "gpt")
    assert _judge_of(r, {"k"}) is None
    llm = _judge_of(r, {"j2"})
    assert (llm.kind, llm.share, llm.model, llm.rubric, llm.rubric_version) == ("llm", None, "gpt", "x", "1")
    none = run("b", {}, tasks={"n": TaskRecord(4, 4, judge=Judge("none", reason="no key"))})
    assert (_judge_of(none, {"n"}).kind, _judge_of(none, {"n"}).reason) == ("none", "no key")


def test_runs_pool_as_seeds_only_with_other_seeds_and_a_twin_counts_once():
    a = run("a", {"t": {"acc": 0.5}}, seed="1")
    b = run("b", {"t": {"acc": 0.75}}, seed="2")
    twin = run("twin", {"t": {"acc": 0.5}}, seed="1")  # same seed, same numbers
    same_seed = run("c", {"t": {"acc": 0.25}}, seed="1")  # same seed, other numbers: apart
    other = run("d", {"t": {"acc": 0.5}}, args="pretrained=org/n", seed="3")
    groups, notes = group_runs([a, b, twin, same_seed, other], {"t"})
    assert groups == [[a, b], [same_seed], [other]]
    assert notes == ["/runs/twin/x_results.json holds the same results for this table as /runs/a/x_results.json: "
                     "counted once"]  # fmt: skip


def test_runs_recorded_with_other_seeds_and_the_same_numbers_pool_and_the_notes_say_it():
    a = run("a", {"t": {"acc": 0.5}}, seed="0")
    b = run("b", {"t": {"acc": 0.5}}, seed="7")  # another seed, the same numbers: a seed that reached nothing?
    c = run("c", {"t": {"acc": 0.75}}, seed="8")
    groups, notes = group_runs([a, b, c], {"t"})
    assert groups == [[a, b, c]]
    assert notes == ["/runs/b/x_results.json and /runs/a/x_results.json were recorded with different seeds "
                     "(seed=7; seed=0) and hold the same results for this table: the seed may not have reached the "
                     "model"]  # fmt: skip
    # the numbers of another table's tasks do not count: only this table's
    d = run("d", {"t": {"acc": 0.25}, "u": {"acc": 0.5}}, seed="9")
    e = run("e", {"t": {"acc": 0.25}, "u": {"acc": 0.75}}, seed="10")
    assert group_runs([d, e], {"t"})[1] != [] and group_runs([d, e], {"t", "u"})[1] == []


def test_tasks_without_documents_are_those_of_the_table_any_run_of_the_row_had_none_of():
    a = run("a", {}, tasks={"t": TaskRecord(0, 0, empty=True), "z": TaskRecord(0, 0, empty=True)})
    b = run("b", {}, tasks={"u": TaskRecord(0, 0, empty=True), "t": TaskRecord(0, 0, empty=True)})
    assert tasks_without_documents([a, b], {"t", "u", "v"}) == ["t", "u"]


# --- a whole table ----------------------------------------------------------------------------------------------

LAYOUT = Layout(
    "toy",
    "toy_bench",
    "Toy",
    (
        Column("T", "T", Leaf("t", "acc")),
        Column("U", "U", Leaf("u", "acc")),
        Column("Avg.", "Avg.", Mean((Leaf("t", "acc"), Leaf("u", "acc")))),
        Column("Paper", "Paper only", None),
    ),
    digits=2,
    notes=("a note of the layout",),
)


def test_a_table_has_each_rows_cells_unparsed_row_and_one_chance_row_at_the_end():
    a = two_task_run("a", label="ma")
    b = two_task_run("b", label="mb", args="pretrained=org/mb")
    table = build_table(LAYOUT, [a, b], ci=False)
    assert (table.key, table.title, table.source, table.digits, table.scale) == ("toy", "Toy", "no published rows",
                                                                                 2, 100.0)  # fmt: skip
    assert table.headers == ["T", "U", "Avg.", "Paper only"] and table.notes[0] == "a note of the layout"
    assert [(r.label, r.kind) for r in table.rows] == [
        ("ma", "model"), ("ma unparsed", "unparsed"), ("mb", "model"), ("mb unparsed", "unparsed"),
        ("chance level", "chance"),
    ]  # fmt: skip
    ma = table.rows[0]
    assert [c.value for c in ma.cells] == [75.0, 50.0, 62.5, None] and ma.model == "ma" and ma.runs == [a]
    assert [c.value for c in table.rows[1].cells] == [pytest.approx(20.0), 50.0, pytest.approx(35.0), None]
    assert [c.value for c in table.rows[-1].cells] == [25.0, 50.0, 37.5, None]


def test_runs_that_saw_other_chance_levels_get_a_chance_row_each_after_every_model():
    a = two_task_run("a", label="ma")
    b = run("b", {"t": {"acc": 0.5, "chance_level": 0.5}, "u": {"acc": 0.5, "chance_level": 0.5}}, label="mb")
    table = build_table(LAYOUT, [a, b], ci=False)
    assert [(r.label, r.kind) for r in table.rows] == [
        ("ma", "model"), ("ma unparsed", "unparsed"), ("mb", "model"), ("mb unparsed", "unparsed"),
        ("ma chance level", "chance"), ("mb chance level", "chance"),
    ]  # fmt: skip
    assert [c.value for c in table.rows[-1].cells] == [50.0, 50.0, 50.0, None]
    assert table.rows[-1].model == "mb"


def test_a_partial_run_is_marked_n_of_n_and_seeds_pool_into_one_row_with_a_note():
    tasks = {"t": TaskRecord(3, 4, limit=3), "u": TaskRecord(3, 4, limit=3)}
    results = {"t": {"acc": 0.5}, "u": {"acc": 0.25}}
    seeds = [run(f"s{i}", results, tasks=tasks, seed=str(i)) for i in (1, 2)]
    table = build_table(LAYOUT, seeds, ci=False)
    row = table.rows[0]
    assert row.label == "m (6/8)" and row.model == "m" and row.runs == seeds
    assert [c.n for c in row.cells[:3]] == [2, 2, 2] and row.cells[2].value == 37.5 and row.cells[2].err == 0.0
    assert "m: partial run, 6 of 8 documents of this table's tasks (--limit 3)" in table.notes
    assert "m: mean ± std/sqrt(n) over 2 runs (seed=1, seed=2)" in table.notes


def test_an_extra_row_appears_only_where_it_has_a_value():
    layout = Layout(
        "toy", "toy_bench", "Toy", LAYOUT.columns,
        extra_rows=(("with map", lambda c: Leaf("t", "acc_map") if c.key == "T" else None),),
    )  # fmt: skip
    with_map = run("a", {"t": {"acc": 0.5, "acc_map": 0.25}, "u": {"acc": 0.5}})
    table = build_table(layout, [with_map], ci=False)
    extra = table.rows[1]
    assert (extra.label, extra.kind, extra.model) == ("m with map", "model", "m with map")
    assert extra.cells[0].value == 25.0 and extra.cells[1] == Cell(note="with map: not defined for this column")
    assert extra.cells[3] == Cell()  # a reference-only column stays blank
    without = run("b", {"t": {"acc": 0.5}, "u": {"acc": 0.5}})
    assert "m with map" not in [r.label for r in build_table(layout, [without], ci=False).rows]


def test_a_table_has_no_rows_without_runs_of_its_tasks():
    assert build_table(LAYOUT, [run("a", {"z": {"acc": 1.0}})]) is None
    # a run that knows a task only by its conditions (no results: scoring failed) still makes a table
    failed = run("a", {}, tasks={"t": TaskRecord(4, 4, failed="boom")})
    table = build_table(LAYOUT, [failed], ci=False)
    assert table.rows[0].cells[0] == Cell(note="t: scoring failed (boom)")


def test_a_table_passes_seed_and_ci_to_its_cells():
    r = two_task_run()
    with_ci = build_table(LAYOUT, [r], seed=5).rows[0].cells[0]
    draws = Leaf("t", "acc").draws(r, 5)
    lo, hi = np.percentile(draws, [2.5, 97.5])
    assert (with_ci.lo, with_ci.hi) == (float(lo) * 100, float(hi) * 100)
    assert build_table(LAYOUT, [r], ci=False).rows[0].cells[0].lo is None


def test_layout_tasks_and_judged_tasks():
    layout = Layout("k", "b", "K", (Column("J", "J", Mean((Leaf("j", "judge_score"), Leaf("t", "acc")))),
                                    Column("X", "X", None)))  # fmt: skip
    assert layout.tasks() == {"j", "t"} and layout.judged_tasks() == {"j"}
    assert tables._scale(Column("a", "a", None, scaled=False), 100.0) == 1.0
    assert tables._scale(Column("a", "a", None), 100.0) == 100.0


# --- a row's label: its marks, and what tells two rows of one model apart -----------------------------------------

JUDGED = Layout(
    "judged",
    "toy_bench",
    "Judged",
    (
        Column("J", "J", Leaf("j", "judge_score", unparsed=JUDGE_UNUSABLE)),
        Column("T", "T", Leaf("t", "acc")),
        Column("E", "E", Leaf("e", "acc")),
    ),
)
JUDGED_RESULTS = {"j": {"judge_score": 0.5}, "t": {"acc": 0.5, "chance_level": 0.25}, "e": {}}


def judged_run(name: str, judge: Judge | None, label: str, **kwargs: Any) -> Run:
    tasks = {"j": TaskRecord(4, 4, judge=judge), "t": TaskRecord(4, 4), "e": TaskRecord(0, 0)}
    return run(name, JUDGED_RESULTS, tasks=tasks | kwargs.pop("tasks", {}), label=label, **kwargs)


def test_a_row_is_marked_and_footnoted_for_its_judge_empty_tasks_and_generation_settings():
    partly_rule = Judge("rule", model="gpt", share=0.5, scored=4, failures=0, unparsed=0)
    off = TaskRecord(4, 4, generation=Generation(protocol={"max_new_tokens": 32}, in_effect={"max_new_tokens": 16}))
    a = judged_run("a", partly_rule, "ma", tasks={"e": TaskRecord(0, 0, empty=True), "t": off})
    b = judged_run("b", Judge("rule", share=1.0, scored=4), "mb", gen_kwargs={"max_new_tokens": 8})
    c = judged_run("c", Judge("llm", model="gpt-4o", rubric="odi_open", rubric_version="1.0", scored=3, failures=1,
                             unparsed=0), "mc")  # fmt: skip
    d = judged_run("d", Judge("none", reason="no key"), "md")
    table = build_table(JUDGED, [a, b, c, d], ci=False)
    labels = [r.label for r in table.rows if r.kind == "model"]
    assert labels == [
        "ma (rule-based judge 50%; not comparable; gen max_new_tokens=16)",
        "mb (rule-based judge; --gen_kwargs max_new_tokens=8)",  # all the rule's: no share shown
        "mc",
        "md",
    ]
    assert [r.model for r in table.rows if r.kind == "model"] == ["ma", "mb", "mc", "md"]
    assert table.notes == [
        "ma: judged columns scored by the rule-based fallback for 50% of the answers, gpt for the rest (4 scored)",
        "ma: not comparable to the paper's rows: no documents in this release for e",
        "ma: generation settings other than the paper's protocol (the tasks' own generation_kwargs): "
        "max_new_tokens=16 (protocol 32) on t",
        "mb: judged columns scored by the rule-based fallback, not an LLM judge (4 scored)",
        "mb: run with --gen_kwargs max_new_tokens=8; its tasks' own settings (the paper's protocol) are not in this "
        "results file: it may not follow the protocol",
        "mc: judged by gpt-4o (rubric odi_open v1.0) (3 scored, 1 judge failures)",
        "md: no judge verdict (no key)",
    ]
    # the judge's unusable answers: (failures + unparsed) / documents = 1 / 4 for mc; the none judge's cell says why
    unparsed = {r.label: r for r in table.rows if r.kind == "unparsed"}
    assert unparsed["mc unparsed"].cells[0].value == 25.0
    assert table.rows[-1].label == "chance level" and table.rows[-1].cells[1].value == 25.0


def test_a_setting_the_protocol_leaves_unset_and_one_it_sets_are_both_named():
    off = TaskRecord(4, 4, generation=Generation(protocol={"max_new_tokens": 32}, in_effect={"temperature": 0.7}))
    a = judged_run("a", None, "ma", tasks={"t": off, "e": off})
    table = build_table(JUDGED, [a], ci=False)
    assert table.rows[0].label == "ma (gen max_new_tokens=(unset), temperature=0.7)"
    assert table.notes == [
        "ma: generation settings other than the paper's protocol (the tasks' own generation_kwargs): "
        "temperature=0.7 (protocol unset) on e, t; max_new_tokens=(unset) (protocol 32) on e, t"
    ]


def test_a_run_that_recorded_its_protocol_is_not_marked_for_its_gen_kwargs():
    same = TaskRecord(4, 4, generation=Generation(protocol={"max_new_tokens": 32}, in_effect={"max_new_tokens": 32}))
    a = judged_run("a", None, "ma", tasks={"t": same}, gen_kwargs={"max_new_tokens": 32})
    table = build_table(JUDGED, [a], ci=False)
    assert table.rows[0].label == "ma" and table.notes == []


def test_rows_of_one_model_are_told_apart_by_the_model_arguments_they_do_not_share():
    a = run("a", {"t": {"acc": 0.5}}, args="pretrained=org/m,samples=a,device=cpu")
    b = run("b", {"t": {"acc": 0.75}}, args="pretrained=org/m,samples=b,device=cpu")
    table = build_table(LAYOUT, [a, b], ci=False)
    assert [r.label for r in table.rows if r.kind == "model"] == ["m (samples=a)", "m (samples=b)"]
    assert [r.model for r in table.rows if r.kind == "model"] == ["m (samples=a)", "m (samples=b)"]
    assert table.warnings == [
        "WARNING: m (samples=a) and m (samples=b) are not pooled as seeds of m: model_args pretrained=org/m,"
        "samples=a,device=cpu vs pretrained=org/m,samples=b,device=cpu"
    ]
    assert table.warnings[0] in table.notes


def test_rows_of_one_model_with_equal_arguments_are_told_apart_by_generation_seed_or_folder():
    def gen(value: str) -> dict[str, TaskRecord]:
        return {"t": TaskRecord(4, 4, generation=Generation(protocol=None, in_effect={"max_new_tokens": int(value)}))}

    a, b = run("a", {"t": {"acc": 0.5}}, tasks=gen("16")), run("b", {"t": {"acc": 0.5}}, tasks=gen("32"))
    labels = [r.label for r in build_table(LAYOUT, [a, b], ci=False).rows if r.kind == "model"]
    assert labels == ["m (max_new_tokens=16)", "m (max_new_tokens=32)"]
    # equal arguments and generation, one seed each, other numbers: the seed tells them apart
    a, b = run("a", {"t": {"acc": 0.5}}, seed="1"), run("b", {"t": {"acc": 0.25}}, seed="1")
    labels = [r.label for r in build_table(LAYOUT, [a, b], ci=False).rows if r.kind == "model"]
    assert labels == ["m (a)", "m (b)"]  # the same seed: the folder
    # one argument more in one run: the other has none to show, so the next thing (the folder) tells them apart
    a, b = run("a", {"t": {"acc": 0.5}}), run("b", {"t": {"acc": 0.5}}, args="pretrained=org/m,x=1")
    labels = [r.label for r in build_table(LAYOUT, [a, b], ci=False).rows if r.kind == "model"]
    assert labels == ["m (a)", "m (b)"]


def test_rows_in_one_folder_are_told_apart_by_their_file_names():
    a, b = run("a", {"t": {"acc": 0.5}}, seed="1"), run("b", {"t": {"acc": 0.25}}, seed="1")
    a.results_file, b.results_file = Path("/runs/x/2026_a_results.json"), Path("/runs/x/2026_b_results.json")
    labels = [r.label for r in build_table(LAYOUT, [a, b], ci=False).rows if r.kind == "model"]
    assert labels == ["m (2026_a)", "m (2026_b)"]


def test_a_partial_row_of_a_model_with_two_rows_names_the_row_in_its_note():
    a = run("a", {"t": {"acc": 0.5}, "u": {"acc": 0.5}}, args="pretrained=org/m,samples=a")
    b = run("b", {"t": {"acc": 0.5}, "u": {"acc": 0.5}}, args="pretrained=org/m,samples=b",
            tasks={"t": TaskRecord(2, 4), "u": TaskRecord(4, 4)})  # fmt: skip
    table = build_table(LAYOUT, [a, b], ci=False)
    # the mark tells the rows apart (no tag needed); the note names the row by its label, the model having two
    assert [r.label for r in table.rows if r.kind == "model"] == ["m", "m (6/8)"]
    assert "m (6/8): partial run, 6 of 8 documents of this table's tasks" in table.notes


# --- notes under a table: run options and software -----------------------------------------------------------------


def options(values: dict[str, str]) -> dict[str, TaskRecord]:
    return {"t": TaskRecord(4, 4, run_options=dict(values))}


def test_each_row_with_run_options_is_named_and_different_inputs_are_warned_of():
    cap = {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"}
    a = run("a", {"t": {"acc": 0.5}}, tasks=options(cap), label="ma")
    b = run("b", {"t": {"acc": 0.5}}, tasks=options({}), label="mb")
    notes = build_table(LAYOUT, [a, b], ci=False).notes
    assert notes == [
        "a note of the layout",
        "ma: run with LMMS_SPATIAL_ODI_MAX_PIXELS=524288",
        "WARNING: these models were run with different prompt or image settings (above); their rows are not "
        "directly comparable",
    ]


def test_an_option_seed_alone_is_named_but_is_not_a_different_input():
    a = run("a", {"t": {"acc": 0.5}}, tasks=options({"LMMS_SPATIAL_DORI_SEED": "1"}), label="ma")
    b = run("b", {"t": {"acc": 0.5}}, tasks=options({"LMMS_SPATIAL_DORI_SEED": "2"}), label="mb", args="x=1")
    notes = build_table(LAYOUT, [a, b], ci=False).notes
    assert notes == ["a note of the layout", "ma: run with LMMS_SPATIAL_DORI_SEED=1",
                     "mb: run with LMMS_SPATIAL_DORI_SEED=2"]  # fmt: skip


def test_rows_made_with_other_software_are_warned_of_naming_the_versions_that_differ():
    def software(**versions: str) -> dict[str, Any]:
        return {"packages": {"lmms-eval": "0.7.3", **{k.replace("_", "-"): v for k, v in versions.items()}}}

    a = run("a", {"t": {"acc": 0.5}}, label="ma", environment=software(torch="2.1", transformers="4.5"))
    b = run("b", {"t": {"acc": 0.5}}, label="mb", environment=software(torch="2.2", transformers="4.5"))
    c = run("c", {"t": {"acc": 0.5}}, label="mc")
    notes = build_table(LAYOUT, [a, b], ci=False).notes
    assert notes[-1] == (
        "WARNING: these rows were produced with different software (ma: torch 2.1; mb: torch 2.2); numbers can move "
        "with these versions"
    )
    # a row that recorded none: every version differs from it
    notes = build_table(LAYOUT, [a, c], ci=False).notes
    assert notes[-1] == (
        "WARNING: these rows were produced with different software (ma: lmms-eval 0.7.3, transformers 4.5, torch 2.1; "
        "mc: software not recorded); numbers can move with these versions"
    )
    notes = build_table(LAYOUT, [a, run("d", {"t": {"acc": 0.5}}, label="md", environment=software(torch="2.1",
                                                                                               transformers="4.5"))],
                        ci=False).notes  # fmt: skip
    assert not any("different software" in n for n in notes)


# --- why a cell is empty, on the edges ------------------------------------------------------------------------------


def test_an_unparsed_cell_of_a_judged_leaf_without_a_verdict_says_the_rate_is_missing_not_the_judge():
    judge = Judge("none", reason="no key")
    r = run("a", {"t": {"judge_score": 0.5}}, tasks={"t": TaskRecord(4, 4, judge=judge)})
    # the unparsed rate is withheld as "unparsed_rate" (no judge withholds it): it is simply not in the results
    assert Leaf("t", "judge_score").why(r, "unparsed") == "no value in the results of t (NaN: no document scored)"


def test_a_chance_cell_of_a_task_without_documents_says_no_chance_level_was_recorded():
    r = run("a", {"t": {"acc": 0.5}}, tasks={"t": TaskRecord(0, 0, empty=True)})
    # the chance level is never withheld: its reason is the missing level, not the empty task
    assert Leaf("t", "acc").why(r, "chance") == "t records no chance level"


def test_draws_are_kept_when_the_mean_is_exactly_1e_9_from_the_value():
    lines = {"t": acc_lines([0.0, 0.0])}
    # |0 - 1e-9| is 1e-9 exactly: within the tolerance (more than 1e-9 is not)
    assert Leaf("t", "acc").draws(run("a", {"t": {"acc": 1e-9}}, lines), 0).tolist() == [0.0] * 500


def test_a_mean_says_why_for_the_role_asked():
    # the value is missing but the unparsed rate is there: the value's reason, by default and when asked
    r = run("a", {"t": {"acc": math.nan, "unparsed_rate": 0.1}, "u": {"acc": 0.5, "unparsed_rate": 0.1}})
    mean = Mean((Leaf("t", "acc"), Leaf("u", "acc")))
    assert mean.why(r) == mean.why(r, "value") == "no value in the results of t (NaN: no document scored)"
    # the chance level is missing, the value and unparsed rate are not: the chance level's reason
    assert mean.why(r, "chance") == "needs every part; t records no chance level (and 1 other reasons)"
    assert mean.why(r, "unparsed") is None
    # the value is there, the chance level is not: the chance cell still says why
    present = run("b", {"t": {"acc": 0.5}})
    assert Mean((Leaf("t", "acc"),)).why(present, "chance") == "t records no chance level"


def test_a_pooled_mean_over_no_document_has_no_reason_to_give():
    r = run("a", {"t": {"acc": 0.5, "unparsed_rate": 0.0}}, tasks={"t": TaskRecord(0, 4)})
    # every part has its rate, but there is no document to weight it by: empty, and no part to blame
    assert Pooled((Leaf("t", "acc"),)).why(r, "unparsed") is None


def test_a_rule_judge_with_no_answer_counted_is_marked_as_the_rules_alone():
    r = judged_run("a", Judge("rule", share=None, scored=None, unparsed=None), "ma")
    table = build_table(JUDGED, [r], ci=False)
    # no answer counted: no share to weight, shown as the rule's alone
    assert table.rows[0].label == "ma (rule-based judge)"


def test_a_rule_judge_whose_share_was_not_recorded_counts_as_the_rules_alone_not_as_none_of_the_answers():
    tasks = {
        "j1": TaskRecord(4, 4, judge=Judge("rule", share=None, scored=3, failures=0, unparsed=1)),
        "j2": TaskRecord(4, 4, judge=Judge("llm", model="gpt-a", scored=4, failures=0, unparsed=0)),
    }
    # j1's 4 answered verdicts are the rule's (share unknown: all of them), j2's 4 the LLM's: 4 / 8 = 0.5
    assert _judge_of(run("a", {}, tasks=tasks), {"j1", "j2"}).share == 0.5
    alone = _judge_of(run("a", {}, tasks={"j1": tasks["j1"]}), {"j1"})
    assert alone.share == 1.0 and alone.describe() == "the rule-based fallback, not an LLM judge"


def test_a_judge_with_no_verdict_and_no_reason_is_named_no_judge():
    r = judged_run("a", Judge("none"), "ma")
    assert "ma: no judge verdict (no judge)" in build_table(JUDGED, [r], ci=False).notes


def test_every_task_without_documents_is_named_in_the_note():
    empty = {"e": TaskRecord(0, 0, empty=True), "t": TaskRecord(0, 0, empty=True)}
    r = judged_run("a", None, "ma", tasks=empty)
    assert "ma: not comparable to the paper's rows: no documents in this release for e, t" in (
        build_table(JUDGED, [r], ci=False).notes
    )


# --- rows of one model told apart: every clash, and the last resort ---------------------------------------------


def model_labels(runs: list[Run], layout: Layout = LAYOUT) -> list[str]:
    return [r.label for r in build_table(layout, runs, ci=False).rows if r.kind == "model"]


def test_every_clash_of_labels_is_resolved_not_only_the_first():
    k = run("k", {"t": {"acc": 0.5}}, label="k")
    m = [run(f"m{x}", {"t": {"acc": 0.5}}, label="m", args=f"pretrained=org/m,samples={x}") for x in "ab"]
    n = [run(f"n{x}", {"t": {"acc": 0.5}}, label="n", args=f"pretrained=org/n,samples={x}") for x in "ab"]
    assert model_labels([k, *m, *n]) == ["k", "m (samples=a)", "m (samples=b)", "n (samples=a)", "n (samples=b)"]


def test_rows_differing_in_several_arguments_show_them_all():
    a = run("a", {"t": {"acc": 0.5}}, args="pretrained=org/m,samples=a,bs=1")
    b = run("b", {"t": {"acc": 0.5}}, args="pretrained=org/m,samples=b,bs=2")
    assert model_labels([a, b]) == ["m (samples=a,bs=1)", "m (samples=b,bs=2)"]


def test_rows_kept_apart_by_a_run_option_are_told_apart_by_their_seed():
    a = run("a", {"t": {"acc": 0.5}}, tasks=options({"LMMS_SPATIAL_ODI_PROMPT": "p1"}), seed="1")
    b = run("b", {"t": {"acc": 0.5}}, tasks=options({"LMMS_SPATIAL_ODI_PROMPT": "p2"}), seed="2")
    assert model_labels([a, b]) == ["m (seed=1)", "m (seed=2)"]


def test_rows_in_folders_of_one_name_are_told_apart_by_their_whole_path():
    a, b = run("a", {"t": {"acc": 0.5}}, seed="1"), run("b", {"t": {"acc": 0.25}}, seed="1")
    a.results_file, b.results_file = Path("/x/run/r_results.json"), Path("/y/run/r_results.json")
    assert model_labels([a, b]) == ["m (/x/run/r_results.json)", "m (/y/run/r_results.json)"]


def test_generation_tags_name_the_tables_tasks_only():
    def gen(**values: str) -> dict[str, TaskRecord]:
        return {
            t: TaskRecord(4, 4, generation=Generation(protocol=None, in_effect={"max_new_tokens": int(v)}))
            for t, v in values.items()
        }

    a = run("a", {"t": {"acc": 0.5}}, tasks=gen(t="16", z="99"))
    b = run("b", {"t": {"acc": 0.5}}, tasks=gen(t="32", z="99"))
    assert model_labels([a, b]) == ["m (max_new_tokens=16)", "m (max_new_tokens=32)"]
    # two settings among the table's tasks: both, sorted
    c = run("c", {"t": {"acc": 0.5}, "u": {"acc": 0.5}}, tasks=gen(t="16", u="8"))
    d = run("d", {"t": {"acc": 0.5}, "u": {"acc": 0.5}}, tasks=gen(t="32", u="32"))
    assert model_labels([c, d]) == ["m (max_new_tokens=16 / max_new_tokens=8)", "m (max_new_tokens=32)"]
    # one run recorded its settings, the other did not: no tag for one, so the folder tells them apart
    e = run("e", {"t": {"acc": 0.5}}, tasks=gen(t="16"))
    f = run("f", {"t": {"acc": 0.5}})
    assert model_labels([e, f]) == ["m (e)", "m (f)"]


def test_gen_kwargs_tell_apart_runs_that_recorded_their_protocol_but_not_the_settings_in_effect():
    own = {"t": TaskRecord(4, 4, generation=Generation(protocol={"max_new_tokens": 32}, in_effect=None))}
    a = run("a", {"t": {"acc": 0.5}}, tasks=own, gen_kwargs={"max_new_tokens": 8})
    b = run("b", {"t": {"acc": 0.5}}, tasks=own, gen_kwargs={"max_new_tokens": 16})
    assert model_labels([a, b]) == ["m (--gen_kwargs max_new_tokens=8)", "m (--gen_kwargs max_new_tokens=16)"]


def test_generation_marks_look_at_the_tables_tasks_only():
    off = TaskRecord(4, 4, generation=Generation(protocol={"max_new_tokens": 32}, in_effect={"max_new_tokens": 16}))
    a = run("a", {"t": {"acc": 0.5}}, tasks={"t": TaskRecord(4, 4), "z": off})
    assert model_labels([a]) == ["m"]  # z is not in the table: its settings are not this table's business
    # --gen_kwargs with no protocol recorded for the table's tasks is marked, whatever another task recorded
    b = run("b", {"t": {"acc": 0.5}}, tasks={"t": TaskRecord(4, 4), "z": off}, gen_kwargs={"seed": 1})
    assert model_labels([b]) == ["m (--gen_kwargs seed=1)"]


# --- a table with published rows, and its extra and unparsed rows ---------------------------------------------


def test_published_rows_come_last_after_the_chance_row_with_their_notes(monkeypatch):
    reference = {
        "scale": 1.0,
        "table": "Table 2",
        "rows": [{"model": "GPT-4o", "values": {"T": 0.4, "Avg.": 0.45}, "note": "as printed"},
                 {"model": "Human", "values": {"T": 0.9, "U": 0.8, "Avg.": 0.85}}],
        "notes": ["the paper's note"],
        "skipped": ["Table 3"],
    }  # fmt: skip
    monkeypatch.setattr(tables.references, "table", lambda benchmark, key: reference)
    monkeypatch.setattr(tables.references, "load", lambda benchmark: {"paper": "Toy et al. 2025"})
    layout = Layout("toy", "toy_bench", "Toy", LAYOUT.columns, reference="t2")
    off = TaskRecord(4, 4, generation=Generation(protocol={"max_new_tokens": 32}, in_effect={"max_new_tokens": 16}))
    a = two_task_run("a", tasks={"t": off, "u": TaskRecord(2, 4)})  # 4 + 2 of 4 + 4 documents
    table = build_table(layout, [a], ci=False)
    assert table.source == "Toy et al. 2025 Table 2: " and table.scale == 1.0
    assert [(r.label, r.kind) for r in table.rows] == [
        ("m (6/8; gen max_new_tokens=16)", "model"), ("m (6/8; gen max_new_tokens=16) unparsed", "unparsed"),
        ("chance level", "chance"), ("GPT-4o", "reference"), ("Human", "reference"),
    ]  # fmt: skip
    # the run's cells on the paper's scale (0-1): 0.75 for t
    assert table.rows[0].cells[0].value == 0.75
    gpt = table.rows[3]
    assert [c.value for c in gpt.cells] == [0.4, None, 0.45, None] and gpt.note == "as printed"
    assert table.rows[4].note == ""  # a published row without a note of its own
    assert table.notes == [
        # one row of the model: the notes name it by the model alone
        "m: partial run, 6 of 8 documents of this table's tasks; the published rows cover the whole split",
        "m: generation settings other than the paper's protocol (the tasks' own generation_kwargs): "
        "max_new_tokens=16 (protocol 32) on t; not comparable with the published rows",
        "published rows: - where the paper prints no value",
        "the paper's note",
        "not transcribed: Table 3",
    ]


def test_extra_and_unparsed_rows_carry_the_rows_runs_and_the_ci_of_the_tables_seed():
    layout = Layout(
        "toy", "toy_bench", "Toy", (Column("T", "T", Leaf("t", "acc_map")), Column("U", "U", Leaf("u", "acc"))),
        extra_rows=(("with map", lambda c: Leaf("t", "acc_map") if c.key == "T" else None),),
    )  # fmt: skip
    lines = [{"doc_id": i, "acc_map": {"score": s}} for i, s in enumerate([1.0, 0.0, 1.0, 1.0])]
    r = run("a", {"t": {"acc_map": 0.75, "unparsed_rate": 0.25}}, {"t": lines})
    table = build_table(layout, [r], seed=7)
    extra, unparsed = table.rows[1], table.rows[2]
    lo, hi = np.percentile(Leaf("t", "acc_map").draws(r, 7), [2.5, 97.5])
    assert (extra.cells[0].lo, extra.cells[0].hi) == (float(lo) * 100, float(hi) * 100)
    assert extra.runs == [r] and (unparsed.label, unparsed.model, unparsed.runs) == ("m unparsed", "m", [r])
    assert unparsed.cells[0] == Cell(25.0)
    # a leaf that has no unparsed rate says so in the unparsed row
    bare = Layout("toy", "toy_bench", "Toy", (Column("D", "D", Leaf("t", "acc_map", unparsed=None)),))
    assert build_table(bare, [r], ci=False).rows[1].cells[0] == Cell(note="acc_map: no unparsed rate")
    assert build_table(layout, [r], ci=False).rows[1].cells[0].lo is None


def test_an_empty_cell_of_seeds_says_why_for_the_first_seed():
    nan = run("a", {"t": {"acc": math.nan}}, seed="1")
    failed = run("b", {"t": {"acc": math.nan}}, tasks={"t": TaskRecord(4, 4, failed="boom")}, seed="2")
    assert _cell_for_runs(Leaf("t", "acc"), [nan, failed], 100.0, 0, True) == Cell(
        note="no value in the results of t (NaN: no document scored)"
    )


def test_a_copy_of_a_run_for_this_tables_tasks_counts_once_whatever_its_other_tasks_hold():
    a = run("a", {"t": {"acc": 0.5}, "z": {"acc": 0.1}}, seed="1")
    copy = run("copy", {"t": {"acc": 0.5}, "z": {"acc": 0.9}}, seed="1")  # same numbers on t, other on z
    groups, notes = group_runs([a, copy], {"t"})
    assert groups == [[a]] and len(notes) == 1


def test_the_rule_share_counts_only_answered_verdicts_and_names_every_llm():
    tasks = {
        "j1": TaskRecord(4, 4, judge=Judge("rule", share=1.0, scored=0, failures=4, unparsed=None)),
        "j2": TaskRecord(4, 4, judge=Judge("llm", model="gpt-b", scored=3, failures=1, unparsed=0)),
        "j3": TaskRecord(4, 4, judge=Judge("llm", model="gpt-a", scored=4, failures=0, unparsed=0)),
    }
    judge = _judge_of(run("a", {}, tasks=tasks), {"j1", "j2", "j3"})
    # the rule answered none of j1 (4 failures): 0 of 7 answered verdicts are the rule's
    assert judge.kind == "rule" and judge.share == 0.0
    assert judge.model == "gpt-a, gpt-b" and (judge.scored, judge.failures, judge.unparsed) == (7, 5, None)


def test_the_published_rows_note_on_missing_values_appears_only_when_one_is_missing():
    def table_with(values: dict[str, float]) -> list[str]:
        reference = {"scale": 100.0, "table": "Table 1", "rows": [{"model": "GPT", "values": values}]}
        layout = Layout("toy", "toy_bench", "Toy", LAYOUT.columns[:3], reference="t1")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(tables.references, "table", lambda benchmark, key: reference)
            mp.setattr(tables.references, "load", lambda benchmark: {"paper": "Toy"})
            return build_table(layout, [two_task_run()], ci=False).notes

    assert "published rows: - where the paper prints no value" not in table_with({"T": 1.0, "U": 2.0, "Avg.": 1.5})
    assert "published rows: - where the paper prints no value" in table_with({"T": 1.0, "U": 2.0})


def test_seeds_run_with_other_options_name_every_set():
    a = run("a", {"t": {"acc": 0.5}}, tasks=options({"LMMS_SPATIAL_DORI_SEED": "1"}))
    b = run("b", {"t": {"acc": 0.25}}, tasks=options({"LMMS_SPATIAL_DORI_SEED": "2"}))
    notes = build_table(LAYOUT, [a, b], ci=False).notes
    assert "m: run with LMMS_SPATIAL_DORI_SEED=1 / LMMS_SPATIAL_DORI_SEED=2" in notes


def test_a_package_a_row_did_not_record_is_shown_as_a_question_mark():
    a = run("a", {"t": {"acc": 0.5}}, label="ma", environment={"packages": {"lmms-eval": "0.7.3", "torch": "2.1"}})
    b = run("b", {"t": {"acc": 0.5}}, label="mb", environment={"packages": {"lmms-eval": "0.7.3"}})
    assert build_table(LAYOUT, [a, b], ci=False).notes[-1] == (
        "WARNING: these rows were produced with different software (ma: torch 2.1; mb: torch ?); numbers can move "
        "with these versions"
    )


def test_an_llm_judges_share_never_counts_as_the_rules():
    tasks = {
        "j1": TaskRecord(2, 2, judge=Judge("rule", share=1.0, scored=2, failures=0, unparsed=0)),
        "j2": TaskRecord(2, 2, judge=Judge("llm", model="gpt", share=0.5, scored=2, failures=0, unparsed=0)),
    }
    # the rule's 2 of 4 answered verdicts: 0.5 (the LLM judge's own share field is not the rule's)
    assert _judge_of(run("a", {}, tasks=tasks), {"j1", "j2"}).share == 0.5
