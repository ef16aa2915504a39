"""Aggregation edges (issue 37): empty and one-element groups, unequal sizes, option counts of 0 and 1."""

import math

import pytest

from lmms_spatial.metrics.aggregation import (
    accuracy,
    chance_level,
    group_accuracy,
    group_by,
    mean,
    unparsed_rate,
    unweighted_mean,
)


def test_chance_level_skips_a_question_without_options_and_keeps_a_one_option_question():
    # 4 options -> 1/4, 1 option -> 1/1, 0 options -> no guess to make (skipped, not a division by zero)
    assert chance_level([4, 1, 0]) == pytest.approx((0.25 + 1.0) / 2)


def test_chance_level_of_no_question_is_nan():
    assert math.isnan(chance_level([])) and math.isnan(chance_level([0]))


def test_group_accuracy_averages_the_field_it_is_given():
    records = [
        {"task": "a", "score": 0.0, "soft_score": 0.5},
        {"task": "a", "score": 1.0, "soft_score": 1.0},
        {"task": "b", "score": 0.0, "soft_score": 0.0},
    ]
    assert group_accuracy(records, "task", key="soft_score") == {"a": 0.75, "b": 0.0}  # (0.5 + 1) / 2; 0 / 1
    assert group_accuracy(records, "task") == {"a": 0.5, "b": 0.0}


def test_groups_come_in_the_order_of_their_keys_as_text():
    records = [{"k": 9}, {"k": 10}, {"k": None}, {"k": 9}]
    # as text: "10" < "9" < "None"; numbers and None together cannot be sorted any other way
    assert list(group_by(records, "k")) == [10, 9, None]
    assert group_by(records, "k")[9] == [{"k": 9}, {"k": 9}]


def test_group_by_takes_a_function_of_the_record():
    records = [{"t": "x", "g": "c"}, {"t": "y", "g": "c"}, {"t": "x", "g": "f"}]
    assert group_by(records, lambda r: (r["t"], r["g"])) == {
        ("x", "c"): [records[0]],
        ("x", "f"): [records[2]],
        ("y", "c"): [records[1]],
    }


def test_a_one_record_group_is_its_record():
    assert group_accuracy([{"g": "only", "score": 0.5}], "g") == {"only": 0.5}


def test_micro_and_macro_means_differ_on_unequal_groups():
    # group a: 1 record right; group b: 3 records wrong.
    records = [{"g": "a", "score": 1.0}] + [{"g": "b", "score": 0.0}] * 3
    assert accuracy(records) == 0.25  # micro: 1 of 4 records
    assert unweighted_mean(group_accuracy(records, "g")) == 0.5  # macro: (1 + 0) / 2 groups


def test_empty_inputs_are_nan_never_zero():
    assert math.isnan(accuracy([])) and math.isnan(unparsed_rate([])) and math.isnan(unweighted_mean({}))


def test_unparsed_rate_counts_a_missing_parsed_field_as_unparsed():
    assert unparsed_rate([{"parsed": "A"}, {"parsed": None}, {}]) == pytest.approx(2 / 3)


def test_mean_reads_numbers_given_as_text_or_booleans():
    assert mean(["1", True, 0]) == pytest.approx(2 / 3)
