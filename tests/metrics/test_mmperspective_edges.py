"""MMPerspective edges (issue 37 item 5) and the cases mutation testing found unpinned: hand-worked values.

PAcc / RAcc / Overall are unweighted means of *task* accuracies (a task of 10 questions counts as much as one of
1,000); robustness means are over *groups* (a seed item with 5 variants counts as much as one with 1).
"""

import math

import pytest

from lmms_spatial.metrics.mmperspective import (
    normalise_perturbation,
    normalise_task,
    robustness_summary,
    table_row,
    table_scores,
)

TASK_KEYS = ("vpp", "clp", "vap", "ldp", "ptr", "lrr", "ovr", "pts", "vpc")


def _record(group, variant, score, expected):
    return {"robust_group": group, "perturbation": variant, "robust_variants": list(expected), "score": score}


@pytest.mark.parametrize("name", [None, ""])
def test_a_missing_perturbation_is_the_original_image(name):
    assert normalise_perturbation(name) == "original"


@pytest.mark.parametrize(("name", "expected"), [(" Flip ", "flip"), ("ROTATE", "rotate"), ("blur", None)])
def test_perturbation_names_are_read_case_blind_and_unknown_ones_refused(name, expected):
    assert normalise_perturbation(name) == expected


@pytest.mark.parametrize(
    ("name", "expected"), [(" vpp ", "VPP"), ("Pts", "PTS"), (None, None), ("", None), ("VP", None)]
)
def test_task_names_are_read_case_blind_and_anything_else_is_no_task(name, expected):
    assert normalise_task(name) == expected


def test_a_missing_task_is_named_in_the_error_not_hit_as_a_bare_key():
    accuracy = {t: 1.0 for t in ("VPP", "CLP", "VAP", "LDP", "PTR", "LRR", "OVR", "VPC")}
    with pytest.raises(KeyError, match=r"need all 9 task accuracies; missing \['PTS'\]"):
        table_scores(accuracy)


def test_overall_weights_every_task_once_whatever_its_question_count():
    # accuracies as lmms-eval reports them: VPP 1/1 right (one question), the 8 other tasks 0/100 right.
    # Overall = (1 + 8 * 0) / 9 = 0.111..., not the question-weighted 1 / 801 = 0.00125
    accuracy = {t: 0.0 for t in ("CLP", "VAP", "LDP", "PTR", "LRR", "OVR", "PTS", "VPC")}
    accuracy["VPP"] = 1.0
    scores = table_scores(accuracy)
    assert scores["Overall"] == pytest.approx(1 / 9)
    assert scores["PAcc"] == 0.25  # (1 + 0 + 0 + 0) / 4
    assert scores["RAcc"] == 0.0


def test_table_row_reads_the_table_1_tasks_by_default():
    results = {"results": {f"mmperspective_{t}": {"accuracy,none": 0.25} for t in TASK_KEYS}}
    results["results"]["mmperspective_robust"] = {"graded_robustness,none": 0.5, "binary_robustness,none": 0.25}
    row = table_row(results)
    assert row["VPP"] == 0.25 and row["Overall"] == 0.25  # (9 * 0.25) / 9
    assert (row["Graded"], row["Binary"]) == (0.5, 0.25)


def test_a_task_missing_from_the_results_file_is_nan_and_so_is_every_mean_over_it():
    results = {"results": {f"mmperspective_{t}": {"accuracy,none": 1.0} for t in TASK_KEYS if t != "ldp"}}
    row = table_row(results)
    assert math.isnan(row["LDP"]) and math.isnan(row["PAcc"]) and math.isnan(row["Overall"])
    assert row["RAcc"] == 1.0  # the 5 reasoning tasks are all there
    assert math.isnan(row["Graded"]) and math.isnan(row["Binary"])  # no robust task in the file


def test_no_records_give_nan_robustness_and_no_groups():
    summary = robustness_summary([])
    assert math.isnan(summary["binary"]) and math.isnan(summary["graded"])
    assert summary["complete_groups"] == 0 and summary["incomplete_groups"] == 0
    assert all(math.isnan(v) for v in summary["per_variant"].values())


def test_a_one_variant_group_is_complete_and_scores_its_single_answer():
    right = robustness_summary([_record("g", "original", 1.0, ["original"])])
    wrong = robustness_summary([_record("g", "original", 0.0, ["original"])])
    assert (right["binary"], right["graded"], right["complete_groups"]) == (1.0, 1.0, 1)
    assert (wrong["binary"], wrong["graded"]) == (0.0, 0.0)


def test_graded_is_a_mean_over_groups_not_over_answers():
    five = ["original", "crop", "flip", "mask", "rotate"]
    records = [_record("a", v, s, five) for v, s in zip(five, [1, 1, 1, 1, 0], strict=True)]
    records.append(_record("b", "original", 1.0, ["original"]))
    summary = robustness_summary(records)
    # group a: 4/5 = 0.8, group b: 1/1 = 1 -> graded (0.8 + 1) / 2 = 0.9, not the answer share 5/6 = 0.833
    assert summary["graded"] == pytest.approx(0.9)
    assert summary["binary"] == 0.5  # b right on every variant, a not: 1/2
    # per variant: original right in both groups (1.0); rotate only asked in a, wrong (0.0); crop a only (1.0)
    assert summary["per_variant"]["original"] == 1.0
    assert summary["per_variant"]["rotate"] == 0.0
    assert summary["per_variant"]["crop"] == 1.0


def test_per_variant_is_nan_for_a_perturbation_no_complete_group_has():
    summary = robustness_summary([_record("g", v, 1.0, ["original", "flip"]) for v in ("original", "flip")])
    assert summary["per_variant"]["flip"] == 1.0 and math.isnan(summary["per_variant"]["mask"])


def test_a_variant_answered_but_not_declared_is_still_expected():
    # the record names 'crop' although the group declares only the original: crop is one of its variants
    records = [_record("g", "original", 1.0, ["original"]), _record("g", "crop", 0.0, ["original"])]
    summary = robustness_summary(records)
    assert summary["complete_groups"] == 1 and summary["graded"] == 0.5 and summary["binary"] == 0.0


def test_a_group_id_is_compared_as_text():
    # group 7 (an int from one row) and "7" (a string from another) are one group: complete with both variants
    records = [_record(7, "original", 1.0, ["original", "flip"]), _record("7", "flip", 1.0, ["original", "flip"])]
    summary = robustness_summary(records)
    assert summary["complete_groups"] == 1 and summary["incomplete_groups"] == 0
