"""DORI edges (issue 37): the soft-accuracy boundaries of App. L, pattern precedence, decomposition and tables.

Each case states its angles; midpoints of ranges are the angles the rules compare ("0 to 15" is 7.5).
"""

from __future__ import annotations

import math

import pytest

from lmms_spatial.metrics.dori import (
    Meaning,
    compound_decomposition,
    compound_order,
    confusion_patterns,
    error_pattern,
    letter_index,
    parse_option,
    seed_summary,
    soft_score,
    table2,
)

CBD = "Cannot be determined"


def score(task, options, truth, predicted):
    letter = {text: "ABCDEFGHIJKLMNOP"[i] for i, text in enumerate(options)}
    return soft_score(task, options, letter[truth], letter[predicted])[0]


# --- view parallelism: 0 < |midpoint difference| <= 45 --------------------------------------

VP = ["0 to 15 degrees", "45 to 60 degrees", "46 to 60 degrees", "0-15 degrees", "15 to 45 degrees", "25 to 55 degrees"]
VP.append("Parallel to the camera")  # an option naming no angle


def test_view_parallelism_credits_a_difference_of_exactly_45_degrees():
    assert score("view_parallelism", VP, "0 to 15 degrees", "45 to 60 degrees") == 0.5  # 7.5 vs 52.5: 45


def test_view_parallelism_refuses_45_and_a_half_degrees():
    assert score("view_parallelism", VP, "0 to 15 degrees", "46 to 60 degrees") == 0.0  # 7.5 vs 53: 45.5


def test_view_parallelism_gives_no_partial_credit_for_the_same_range_written_twice():
    assert score("view_parallelism", VP, "0 to 15 degrees", "0-15 degrees") == 0.0  # 7.5 vs 7.5: 0 apart


def test_view_parallelism_compares_the_difference_not_the_sum_of_angles():
    # 30 vs 40: 10 apart (credit), although 30 + 40 = 70
    assert score("view_parallelism", VP, "15 to 45 degrees", "25 to 55 degrees") == 0.5


def test_view_parallelism_gives_nothing_for_an_option_without_an_angle():
    assert score("view_parallelism", VP, "0 to 15 degrees", "Parallel to the camera") == 0.0
    assert score("view_parallelism", VP, "Parallel to the camera", "0 to 15 degrees") == 0.0


def test_view_parallelism_credits_half_a_degree_apart():
    options = ["0 to 15 degrees", "1 to 15 degrees"]
    assert score("view_parallelism", options, "0 to 15 degrees", "1 to 15 degrees") == 0.5  # 7.5 vs 8: 0.5


# --- single-axis rotation: one 45-degree step, same side of the camera plane -----------------

SA = ["0 degrees", "15 degrees", "30 degrees", "45 degrees", "80 degrees", "125 degrees", "315 degrees", "180 degrees"]
SA.append("135 to 180 degrees")


def test_single_axis_credits_a_front_step_as_the_back_step():
    assert score("single_axis_rotation", SA, "0 degrees", "45 degrees") == 0.5  # both cos > 0


def test_single_axis_steps_across_0_degrees_the_short_way():
    assert score("single_axis_rotation", SA, "0 degrees", "315 degrees") == 0.5  # 315 is 45 from 0, both front


def test_single_axis_refuses_a_45_degree_step_across_the_camera_plane():
    assert score("single_axis_rotation", SA, "80 degrees", "125 degrees") == 0.0  # cos 80 > 0, cos 125 < 0


def test_single_axis_refuses_a_15_degree_step():
    assert score("single_axis_rotation", SA, "30 degrees", "15 degrees") == 0.0  # 15 apart, not 45


def test_single_axis_refuses_a_range():
    assert score("single_axis_rotation", SA, "180 degrees", "135 to 180 degrees") == 0.0


# --- viewer-scene: the same turn in the other sense only --------------------------------------


def test_viewer_scene_refuses_a_range():
    # a range starting at 270 would be "the same turn in the other sense" if ranges were read as their start
    options = ["90 degrees", "270 to 290 degrees"]
    assert score("viewer_scene_direction", options, "90 degrees", "270 to 290 degrees") == 0.0


# --- compound: one component right, both components known ------------------------------------


def test_compound_refuses_an_option_without_components():
    options = ["90 degrees Horizontal then 180 degrees Vertical", "No rotation"]
    assert score("compound_rotation", options, options[0], "No rotation") == 0.0


# --- inter-object: same sense and neighbouring magnitudes -------------------------------------


def test_inter_object_refuses_a_sense_without_a_magnitude():
    options = ["0 to 45 degrees clockwise", "Slightly clockwise"]
    assert score("inter_object_direction", options, options[0], "Slightly clockwise") == 0.0


def test_inter_object_no_rotation_has_no_sense_even_next_to_either_direction():
    # two magnitudes only (0 and 180): neighbours, but "No rotation" has no sense to share
    options = ["No rotation", "180 degrees in either direction", CBD]
    assert score("inter_object_direction", options, "No rotation", "180 degrees in either direction") == 0.0


def test_soft_score_of_a_letter_outside_the_options_says_so():
    assert soft_score("single_axis_rotation", ["0 degrees", "45 degrees"], "A", "C") == (0.0, "letter_out_of_range")
    assert soft_score("single_axis_rotation", ["0 degrees", "45 degrees"], "E", "A") == (0.0, "letter_out_of_range")


def test_soft_score_names_undetermined_options_and_refused_credit():
    options = ["0 degrees", "90 degrees", CBD]
    assert soft_score("single_axis_rotation", options, "A", "C") == (0.0, "no_partial_credit:undetermined")
    assert soft_score("single_axis_rotation", options, "A", "B") == (0.0, "no_partial_credit")


# --- error patterns: which rule, in which order ------------------------------------------------


@pytest.mark.parametrize(
    ("truth", "predicted", "pattern"),
    [
        # senses differ: not a compression, even with a smaller angle
        ("90 degrees clockwise", "45 degrees counterclockwise", "other"),
        # a 1-degree answer is still a smaller, non-zero angle
        ("90 degrees clockwise", "1 degree clockwise", "angle_compression"),
        # 0 is not a compression (it is no angle at all)
        ("45 degrees clockwise", "0 degrees clockwise", "other"),
        # the same angle is not smaller
        ("0 to 90 degrees clockwise", "45 degrees clockwise", "other"),
        # rotational symmetry needs two single angles: a range of 90 to 180 is a compression by midpoints
        ("90 to 180 degrees", "0 to 45 degrees", "angle_compression"),
        ("180 degrees", "0 to 90 degrees", "angle_compression"),
        # a left/right facing is not a rotation of the same frame
        ("90 degrees left", "180 degrees", "other"),
        # nor are two senses
        ("90 degrees clockwise", "180 degrees counterclockwise", "other"),
    ],
)
def test_error_pattern_edges(truth, predicted, pattern):
    assert error_pattern(truth, predicted) == pattern


def test_a_truth_without_an_angle_is_never_a_compression():
    assert error_pattern("Clockwise", "45 degrees clockwise") == "other"


# --- canonical operations as parsed ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "operations"),
    [
        ("Flip Horizontally then rotate 90 degrees", ("flip horizontal", "rotate 90")),
        ("Flip Vertically", ("flip vertical",)),
        ("Flip the image", ("flip",)),
        ("Rotate clockwise", ("rotate cw",)),
        ("Rotate 90 degrees", ("rotate 90",)),
        ("rotate 180 degrees counterclockwise, then flip vertically", ("rotate 180 ccw", "flip vertical")),
    ],
)
def test_operations_are_read_in_order_with_axis_angle_and_sense(text, operations):
    assert parse_option(text).operations == operations


@pytest.mark.parametrize(
    ("text", "order"),
    [
        ("90 degrees Horizontal then 0 degrees Vertical", ("horizontal", "vertical")),
        ("0 degrees vertical, then 90 degrees HORIZONTAL", ("vertical", "horizontal")),
        ("Horizontal 90, vertical 0, horizontal again", ("horizontal", "vertical")),
        ("No rotation", ()),
    ],
)
def test_compound_order_lists_each_axis_once_where_it_is_first_named(text, order):
    assert compound_order(text) == order


# --- confusion patterns and the compound decomposition: which records count ---------------------


def _record(task, gran, options, answer, parsed):
    return {"task": task, "granularity": gran, "options": options, "answer": answer, "parsed": parsed,
            "score": 1.0 if parsed == answer else 0.0}  # fmt: skip


OPTS = ["0 degrees", "90 degrees", "180 degrees", CBD]


def test_right_answers_before_errors_do_not_stop_the_count():
    records = [
        _record("single_axis_rotation", "coarse", OPTS, "A", "A"),
        _record("single_axis_rotation", "coarse", OPTS, "A", "B"),
    ]
    (row,) = confusion_patterns(records)
    assert (row["truth"], row["predicted"], row["count"], row["errors"]) == ("0 degrees", "90 degrees", 1, 1)


def test_a_gold_letter_outside_the_options_is_kept_as_written_and_a_wild_prediction_is_unknown():
    (row,) = confusion_patterns([_record("single_axis_rotation", "coarse", OPTS, "F", "Z")])
    assert (row["truth"], row["predicted"], row["pattern"]) == ("F", "UNKNOWN", "uncertainty_cascade")


CR = ["90 degrees Horizontal then 180 degrees Vertical", "180 degrees Horizontal then 90 degrees Vertical",
      "No rotation", "45 degrees Horizontal"]  # fmt: skip


def test_decomposition_counts_only_granular_compound_questions_with_two_component_truths():
    records = [
        _record("compound_rotation", "coarse", CR, "A", "B"),  # coarse: not counted
        _record("view_parallelism", "granular", CR, "A", "B"),  # another task: not counted
        _record("compound_rotation", "granular", CR, "D", "A"),  # truth has one component: not counted
        _record("compound_rotation", "granular", CR, "C", "A"),  # truth has no component: not counted
        _record("compound_rotation", "granular", CR, "A", "B"),  # counted: swap, both wrong
        _record("compound_rotation", "granular", CR, "A", "C"),  # counted: "No rotation" has no component
    ]
    result = compound_decomposition(records)
    assert result == {
        "n": 2,
        "order_swap": 50.0,  # 1 of 2
        "horizontal_accuracy": 0.0,
        "vertical_accuracy": 0.0,
        "both_wrong": 100.0,
    }


def test_a_prediction_matching_one_swapped_component_is_no_swap():
    options = ["90 degrees Horizontal then 180 degrees Vertical", "180 degrees Horizontal then 0 degrees Vertical"]
    result = compound_decomposition([_record("compound_rotation", "granular", options, "A", "B")])
    # truth (90 H, 180 V); predicted (180 H, 0 V): H matches truth's V, V does not match truth's H
    assert result["order_swap"] == 0.0 and result["both_wrong"] == 100.0


def test_an_unparsed_compound_prediction_has_both_components_wrong():
    result = compound_decomposition([_record("compound_rotation", "granular", CR, "A", None)])
    assert (result["n"], result["both_wrong"], result["horizontal_accuracy"]) == (1, 100.0, 0.0)


def test_decomposition_of_nothing_is_nan():
    result = compound_decomposition([])
    assert result["n"] == 0 and all(math.isnan(result[k]) for k in ("order_swap", "both_wrong"))


# --- seeds and Table 2 ----------------------------------------------------------------------


def test_one_seed_has_no_sample_deviation_and_zero_error():
    summary = seed_summary({42: {"vp_c": 0.5}})["vp_c"]
    assert summary["mean"] == 0.5 and summary["std"] == 0.0 and summary["error"] == 0.0 and summary["seeds"] == 1
    assert math.isnan(summary["std_sample"])


def test_two_seeds_have_a_sample_deviation():
    summary = seed_summary({1: {"q": 0.25}, 2: {"q": 0.75}})["q"]
    # deviations 0.25 each: population sqrt(0.125 / 2) = 0.25, sample sqrt(0.125 / 1) = 0.3536
    assert summary["std"] == 0.25 and summary["std_sample"] == pytest.approx(math.sqrt(0.125))
    assert summary["seeds"] == 2


def test_table2_soft_accuracy_is_for_granular_types_whose_every_record_has_one():
    opts = ["0 degrees", "45 degrees", "90 degrees", CBD]
    gran = [
        dict(_record("single_axis_rotation", "granular", opts, "A", p), soft_score=s)
        for p, s in (("A", 1.0), ("B", 0.5))
    ]
    coarse = [dict(_record("compound_rotation", "coarse", opts, "A", "A"), soft_score=1.0)]
    partial = [_record("viewer_scene_direction", "granular", opts, "A", "A")]  # no soft score recorded
    partial.append(dict(_record("viewer_scene_direction", "granular", opts, "A", "B"), soft_score=0.0))
    t = table2(gran + coarse + partial)
    assert t["soft"] == {"single_axis_rotation": 0.75}  # (1 + 0.5) / 2
    assert t["soft_average"] == 0.75
    assert t["n"] == {
        "single_axis_rotation_granular": 2,
        "compound_rotation_coarse": 1,
        "viewer_scene_direction_granular": 2,
    }
    # chance: 1/4 per question everywhere
    assert t["chance_average"] == {"coarse": 0.25, "granular": 0.25}
    assert t["accuracy"]["viewer_scene_direction"]["granular"] == 0.5


def test_table2_without_granular_records_has_nan_soft_average():
    opts = ["a", "b"]
    t = table2([_record("view_parallelism", "coarse", opts, "A", "B")])
    assert t["soft"] == {} and math.isnan(t["soft_average"]) and math.isnan(t["chance_average"]["granular"])
    assert t["chance_average"]["coarse"] == 0.5


# --- option meanings ---------------------------------------------------------------------------


def test_a_missing_option_text_is_an_empty_meaning():
    assert parse_option(None) == Meaning(text="")
    assert parse_option("Cannot be determined") == Meaning(text="Cannot be determined", undetermined=True)


@pytest.mark.parametrize("text", ["No rotation", "no   rotation needed", "NO ROTATION"])
def test_no_rotation_is_an_angle_of_zero_and_the_frontal_answer(text):
    meaning = parse_option(text)
    assert (meaning.lo, meaning.hi, meaning.frontal, meaning.text) == (0.0, 0.0, True, text)


def test_an_option_without_angle_side_or_sense_is_not_frontal():
    meaning = parse_option("Facing away")
    assert (meaning.lo, meaning.facing, meaning.frontal) == (None, "away", False)


def test_one_compound_component_still_owns_its_angle():
    meaning = parse_option("45 degrees Horizontal")
    assert (meaning.horizontal, meaning.vertical, meaning.lo, meaning.hi) == (45.0, None, None, None)


def test_components_are_read_written_either_way_round():
    meaning = parse_option("Horizontal rotation of 90 degrees, vertical: 180")
    assert (meaning.horizontal, meaning.vertical) == (90.0, 180.0)


@pytest.mark.parametrize(
    ("text", "facing"),
    [
        ("Perpendicular to the camera", "perpendicular"),
        ("Facing the opposite direction", "opposite"),
        ("Partially facing the opposite direction", "partially_opposite"),
        ("Facing the same direction", "same"),
        ("Partially facing the same direction", "partially_same"),
        ("Facing away from the camera", "away"),
        ("Facing towards the camera", "toward"),
        ("45 degrees", None),
    ],
)
def test_facing_words(text, facing):
    assert parse_option(text).facing == facing


@pytest.mark.parametrize(
    ("text", "frontal"),
    [
        ("0 to 15 degrees", True),  # at most 15 degrees, no side, no sense
        ("0 to 16 degrees", False),
        ("10 degrees", True),
        ("10 degrees left", False),  # a side: a turn, not the frontal answer
        ("10 degrees clockwise", False),  # a sense: a rotation
        ("Directly facing the camera", True),  # no angle: frontal by the facing word
    ],
)
def test_the_frontal_answer(text, frontal):
    assert parse_option(text).frontal is frontal


def test_letter_index_refuses_what_is_no_letter_of_the_question():
    assert letter_index(3, 4) is None
    assert letter_index("E", 4) is None and letter_index("D", 4) == 3
    assert letter_index(" b ", 4) == 1 and letter_index("AB", 4) is None


# --- perpendicular confusion: the parallel range (up to 20) against the perpendicular one ---------


@pytest.mark.parametrize(
    ("predicted", "pattern"),
    [
        ("45 to 95 degrees", "perpendicular_confusion"),  # starts at 45 (the lowest start)
        ("90 to 120 degrees", "perpendicular_confusion"),  # starts at 90 (the highest start)
        ("60 to 90 degrees", "perpendicular_confusion"),  # ends at 90 (the lowest end)
        ("60 to 135 degrees", "perpendicular_confusion"),  # ends at 135 (the highest end)
        ("60 to 136 degrees", "other"),  # ends past 135
        ("30 degrees", "other"),  # a single angle is no range
    ],
)
def test_perpendicular_range_bounds(predicted, pattern):
    assert error_pattern("0 to 15 degrees", predicted) == pattern


def test_the_parallel_range_ends_at_20_degrees_at_most():
    assert error_pattern("0 to 20 degrees", "65 to 95 degrees") == "perpendicular_confusion"
    assert error_pattern("0 to 21 degrees", "65 to 95 degrees") == "other"


def test_perpendicular_facing_confused_with_toward_or_away_is_perpendicular_confusion_and_with_same_is_not():
    assert error_pattern("Facing the camera", "Perpendicular to the camera") == "perpendicular_confusion"
    assert error_pattern("Facing away", "Sideways") == "perpendicular_confusion"
    assert error_pattern("Facing the same direction", "Perpendicular to it") == "other"
