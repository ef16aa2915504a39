"""MMPerspective rules: PAcc / RAcc / Overall and the two robustness scores, hand-worked values."""

import math

import pytest

from lmms_spatial.metrics.mmperspective import robustness_summary, table_row, table_scores

VARIANTS = ["original", "crop", "flip", "mask", "rotate"]


def test_pacc_racc_overall_are_unweighted_task_means_and_overall_is_not_their_mean():
    accuracy = {"VPP": 0.5, "CLP": 0.25, "VAP": 1.0, "LDP": 0.25, "PTR": 0.0, "LRR": 0.5, "OVR": 0.5, "PTS": 1.0}
    accuracy["VPC"] = 0.5
    scores = table_scores(accuracy)
    assert scores["PAcc"] == 2.0 / 4  # (0.5 + 0.25 + 1 + 0.25) / 4
    assert scores["RAcc"] == 2.5 / 5  # (0 + 0.5 + 0.5 + 1 + 0.5) / 5
    assert scores["Overall"] == 4.5 / 9
    accuracy["VPP"] = 1.0  # perception now 0.625, reasoning 0.5: Overall 5/9, not (0.625 + 0.5) / 2
    scores = table_scores(accuracy)
    assert scores["Overall"] == pytest.approx(5.0 / 9) and scores["Overall"] != pytest.approx((0.625 + 0.5) / 2)


def test_table1_row_of_internvl2_5_2b_is_reproduced():
    row = {"VPP": 47.4, "CLP": 22.8, "VAP": 13.0, "LDP": 65.3, "PTR": 62.2, "LRR": 31.8, "OVR": 16.6, "PTS": 30.0}
    row["VPC"] = 50.0
    scores = table_scores(row)  # the paper prints PAcc 37.1, RAcc 38.1, Overall 37.7
    assert (round(scores["PAcc"], 1), round(scores["RAcc"], 1), round(scores["Overall"], 1)) == (37.1, 38.1, 37.7)


def test_scores_refuse_a_missing_task():
    with pytest.raises(KeyError, match="PTS"):
        table_scores({t: 1.0 for t in ("VPP", "CLP", "VAP", "LDP", "PTR", "LRR", "OVR", "VPC")})


def _group(name, scores, variants=VARIANTS, expected=VARIANTS):
    return [
        {"robust_group": name, "perturbation": v, "robust_variants": list(expected), "score": s}
        for v, s in zip(variants, scores, strict=True)
    ]


def test_one_wrong_variant_of_five_gives_graded_0_8_and_binary_0():
    summary = robustness_summary(_group("g", [1, 1, 0, 1, 1]))
    assert summary["graded"] == pytest.approx(0.8)
    assert summary["binary"] == 0.0


def test_binary_and_graded_average_over_seed_groups():
    records = _group("a", [1, 1, 1, 1, 1]) + _group("b", [1, 1, 0, 1, 1]) + _group("c", [0, 0, 0, 1, 0])
    summary = robustness_summary(records)
    assert summary["binary"] == pytest.approx(1 / 3)  # only group a is right on every variant
    assert summary["graded"] == pytest.approx((1.0 + 0.8 + 0.2) / 3)
    assert summary["per_variant"]["flip"] == pytest.approx(1 / 3)  # a right, b and c wrong
    assert summary["complete_groups"] == 3 and summary["incomplete_groups"] == 0


def test_incomplete_groups_are_reported_and_not_scored():
    records = _group("a", [1, 1, 1, 1, 1]) + _group("b", [0, 0], variants=VARIANTS[:2])  # b cut by --limit
    summary = robustness_summary(records)
    assert (summary["binary"], summary["graded"]) == (1.0, 1.0)
    assert summary["incomplete_groups"] == 1 and summary["incomplete_group_ids"] == ["b"]


def test_a_group_declaring_three_variants_is_complete_with_three_answers():
    records = _group("a", [1, 0, 1], variants=["original", "crop", "mask"], expected=["original", "crop", "mask"])
    summary = robustness_summary(records)
    assert summary["complete_groups"] == 1 and summary["graded"] == pytest.approx(2 / 3)


def test_a_group_whose_original_was_not_answered_is_incomplete():
    records = _group("a", [1, 1, 1, 1], variants=VARIANTS[1:])
    summary = robustness_summary(records)
    assert summary["incomplete_groups"] == 1 and math.isnan(summary["binary"])


def test_robustness_does_not_depend_on_record_order():
    records = _group("a", [1, 1, 1, 1, 1]) + _group("b", [1, 0, 1, 1, 1])
    assert robustness_summary(records) == robustness_summary(list(reversed(records)))


def test_two_answers_for_one_variant_are_an_error():
    with pytest.raises(ValueError, match="two answers for variant 'flip'"):
        robustness_summary(_group("a", [1, 1], variants=["flip", "flip"]))


def test_table_row_reads_leaf_tasks_and_robust_scores_from_a_results_file():
    tasks = ("vpp", "clp", "vap", "ldp", "ptr", "lrr", "ovr", "pts", "vpc")
    results = {"results": {f"mmperspective_cot_{t}": {"accuracy,none": 0.5} for t in tasks}}
    results["results"]["mmperspective_cot_vpp"]["accuracy,none"] = 1.0
    results["results"]["mmperspective_cot_robust"] = {"graded_robustness,none": 0.8, "binary_robustness,none": 0.0}
    row = table_row(results, prefix="mmperspective_cot")
    assert row["VPP"] == 1.0 and row["PAcc"] == 0.625 and row["RAcc"] == 0.5
    assert row["Overall"] == pytest.approx(5.0 / 9) and (row["Graded"], row["Binary"]) == (0.8, 0.0)
