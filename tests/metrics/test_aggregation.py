"""Aggregation helpers: order-independent means, groups, unparsed rate, chance level."""

import math
import random

import pytest

from lmms_spatial.metrics.aggregation import (
    accuracy,
    chance_level,
    group_accuracy,
    mean,
    seed_summary,
    unparsed_rate,
    unweighted_mean,
)


def test_accuracy_is_the_share_of_correct_records():
    records = [{"score": 1.0}, {"score": 0.0}, {"score": 1.0}, {"score": 1.0}]
    assert accuracy(records) == 0.75


def test_mean_does_not_depend_on_record_order():
    values = [0.1] * 7 + [1e-17] * 3 + [0.3] * 5
    shuffled = values[:]
    random.Random(3).shuffle(shuffled)
    # the exact mean is (0.7 + 1.5 + 3e-17) / 15 = 0.146666...67: the nearest double is 0.14666666666666667.
    # A plain left-to-right sum of the shuffled order gives 0.1466666666666667 (one unit in the last place off).
    assert mean(values) == mean(shuffled) == 0.14666666666666667
    assert sum(shuffled) / 15 == 0.1466666666666667  # the order-dependent answer the fsum mean avoids


def test_mean_of_nothing_is_nan_not_zero():
    assert math.isnan(mean([]))


def test_group_accuracy_is_per_group_micro_average():
    records = [
        {"category": "MSR", "score": 1.0},
        {"category": "MSR", "score": 0.0},
        {"category": "Motion (Cam.)", "score": 1.0},
    ]
    assert group_accuracy(records, "category") == {"MSR": 0.5, "Motion (Cam.)": 1.0}


def test_unweighted_mean_counts_each_subscore_once():
    # 2 tasks: 90% on a 10-question task and 10% on a 1000-question task
    assert unweighted_mean({"small": 0.9, "large": 0.1}) == 0.5


def test_unparsed_rate_counts_records_without_a_parsed_answer():
    records = [
        {"parsed": "A"},
        {"parsed": None},
        {"parsed": "C"},
        {"parsed": "B"},
        {},
    ]  # no record of a parse: unparsed
    assert unparsed_rate(records) == 2 / 5


def test_chance_level_is_mean_of_one_over_option_count():
    # DORI mixes 4-option and 16-option questions: (1/4 + 1/16) / 2
    assert chance_level([4, 16]) == (0.25 + 0.0625) / 2


# -- seeds (DORI App. K's error bars; the report's seed pools) ------------------------------------------------


def test_seed_summary_is_mean_and_population_std_over_sqrt_seeds():
    summary = seed_summary({42: {"vp_c": 0.50}, 1998: {"vp_c": 0.60}, 107983: {"vp_c": 0.70}})["vp_c"]
    std = math.sqrt(((0.5 - 0.6) ** 2 + 0 + (0.7 - 0.6) ** 2) / 3)  # 0.0816...
    assert summary["mean"] == pytest.approx(0.6)
    assert summary["std"] == pytest.approx(std)
    assert summary["error"] == pytest.approx(std / math.sqrt(3))
    assert summary["std_sample"] == pytest.approx(0.1)


def test_seed_summary_counts_the_seeds_of_each_key_and_has_no_sample_std_for_one():
    summary = seed_summary({1: {"b": 1.0, "a": 0.25}, 2: {"a": 0.75}})
    assert list(summary) == ["a", "b"]  # keys in order
    assert summary["a"] == {"mean": 0.5, "std": 0.25, "std_sample": pytest.approx(math.sqrt(0.125)),
                            "error": pytest.approx(0.25 / math.sqrt(2)), "seeds": 2}  # fmt: skip
    assert (summary["b"]["mean"], summary["b"]["std"], summary["b"]["error"], summary["b"]["seeds"]) == (1.0, 0, 0, 1)
    assert math.isnan(summary["b"]["std_sample"])
