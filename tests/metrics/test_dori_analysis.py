"""DORI error analysis: Table 10 pattern labels, confusion pairs, Table 11 decomposition, seeds, Table 2."""

from __future__ import annotations

import math

import pytest

from lmms_spatial.metrics.dori import compound_decomposition, confusion_patterns, error_pattern, table2

# Every row of the paper's Table 10: (truth, predicted, pattern the paper gives it)
TABLE_10 = [
    ("0°-15°", "65°–95°", "perpendicular_confusion"),
    ("65°–95°", "0°-15°", "perpendicular_confusion"),
    ("30° left", "30° right", "directional_reversal"),
    ("180° (away)", "0° (facing camera)", "directional_reversal"),
    ("46–90° CCW", "46–90° CW", "directional_reversal"),
    ("135°-180°", "65°-95°", "angle_compression"),
    ("90°", "45°", "angle_compression"),
    ("30° left", "0° (facing camera)", "frontal_bias"),
    ("30° right", "0° (facing camera)", "frontal_bias"),
    ("Cannot determine", "No change needed", "frontal_bias"),
    ("270°", "90°", "rotational_symmetry_confusion"),
    ("180°", "90°", "rotational_symmetry_confusion"),
    ("0°", "90°", "rotational_symmetry_confusion"),
    ("0°-15°", "Cannot determine", "uncertainty_cascade"),
    ("Cannot determine", None, "uncertainty_cascade"),  # UNKNOWN: nothing parsed
    ("270°", "Cannot determine", "uncertainty_cascade"),
]


@pytest.mark.parametrize(("truth", "predicted", "pattern"), TABLE_10)
def test_every_table_10_confusion_gets_the_papers_pattern(truth, predicted, pattern):
    assert error_pattern(truth, predicted) == pattern


def test_an_unrelated_confusion_is_labelled_other():
    assert error_pattern("Only Vertical", "Only Horizontal") == "other"


def _record(task, gran, options, answer, parsed):
    return {
        "task": task,
        "granularity": gran,
        "options": options,
        "answer": answer,
        "parsed": parsed,
        "score": 1.0 if parsed == answer else 0.0,
    }


VP = ["0 degrees to 15 degrees", "65 degrees to 95 degrees", "135 degrees to 180 degrees", "Cannot be determined"]


def test_confusion_pairs_keep_only_pairs_above_five_percent_of_the_types_errors():
    # 20 errors: 15 x (0-15 -> 65-95), 4 x (135-180 -> 65-95), 1 x (0-15 -> CBD) = 5% exactly, dropped
    records = (
        [_record("view_parallelism", "granular", VP, "A", "B")] * 15
        + [_record("view_parallelism", "granular", VP, "C", "B")] * 4
        + [_record("view_parallelism", "granular", VP, "A", "D")]
        + [_record("view_parallelism", "granular", VP, "A", "A")] * 7  # right answers are not errors
    )
    rows = confusion_patterns(records)
    assert [(r["truth"], r["predicted"], r["count"], r["share_of_errors"], r["pattern"]) for r in rows] == [
        ("0 degrees to 15 degrees", "65 degrees to 95 degrees", 15, 0.75, "perpendicular_confusion"),
        ("135 degrees to 180 degrees", "65 degrees to 95 degrees", 4, 0.2, "angle_compression"),
    ]
    assert rows[0]["errors"] == 20 and rows[0]["question_type"] == "view_parallelism_granular"


def test_confusion_pairs_are_keyed_by_option_text_so_shuffled_runs_pool():
    reordered = [VP[1], VP[0], VP[2], VP[3]]
    records = [
        _record("view_parallelism", "granular", VP, "A", "B"),
        _record("view_parallelism", "granular", reordered, "B", "A"),
    ]
    (row,) = confusion_patterns(records)
    assert row["count"] == 2 and row["truth"] == "0 degrees to 15 degrees"


def test_an_unparsed_prediction_is_the_papers_unknown():
    records = [_record("canonical_orientation", "coarse", ["Yes", "No", "Cannot be determined"], "C", None)]
    (row,) = confusion_patterns(records)
    assert (row["predicted"], row["pattern"]) == ("UNKNOWN", "uncertainty_cascade")


CR = [
    "90 degrees Horizontal then 180 degrees Vertical",
    "180 degrees Horizontal then 90 degrees Vertical",
    "90 degrees Horizontal then 0 degrees Vertical",
    "0 degrees Horizontal then 0 degrees Vertical",
    "Cannot be determined",
]


def test_compound_decomposition_counts_swaps_components_and_joint_failures():
    # truth always A (90 H, 180 V); predictions: A right, B swap, C horizontal only, D both wrong, E CBD, unparsed
    records = [_record("compound_rotation", "granular", CR, "A", p) for p in ("A", "B", "C", "D", "E", None)]
    result = compound_decomposition(records)
    assert result["n"] == 6
    assert result["order_swap"] == pytest.approx(100 / 6)
    assert result["horizontal_accuracy"] == pytest.approx(200 / 6)  # A, C
    assert result["vertical_accuracy"] == pytest.approx(100 / 6)  # A
    assert result["both_wrong"] == pytest.approx(400 / 6)  # B, D, E, unparsed


def test_compound_decomposition_ignores_other_question_types():
    assert compound_decomposition([_record("view_parallelism", "granular", VP, "A", "B")])["n"] == 0


def test_table2_averages_are_unweighted_over_question_types():
    # view parallelism coarse: 1 of 1 right; directional facing coarse: 1 of 3 right
    opts = ["a", "b", "c", "Cannot be determined"]
    records = [_record("view_parallelism", "coarse", opts, "A", "A")] + [
        _record("directional_facing", "coarse", opts + ["e"], "A", p) for p in ("A", "B", None)
    ]
    t = table2(records)
    assert t["accuracy"]["view_parallelism"]["coarse"] == 1.0
    assert t["accuracy"]["directional_facing"]["coarse"] == pytest.approx(1 / 3)
    assert t["average"]["coarse"] == pytest.approx((1 + 1 / 3) / 2)  # not 2/4
    assert t["dimension"]["frontal_alignment"]["coarse"] == pytest.approx((1 + 1 / 3) / 2)
    assert t["chance_level"]["directional_facing_coarse"] == pytest.approx(1 / 5)
    assert t["unparsed_rate"]["directional_facing_coarse"] == pytest.approx(1 / 3)
    assert math.isnan(t["average"]["granular"])
