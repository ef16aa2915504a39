"""DORI soft accuracy (App. L): one hand-worked case per rule, on option meanings, not letters."""

from __future__ import annotations

import pytest

from lmms_spatial.metrics.dori import parse_option, soft_score

CBD = "Cannot be determined"


def score(task: str, options: list[str], truth: str, predicted: str | None) -> float:
    letter = {text: "ABCDEFGHIJKLMNOP"[i] for i, text in enumerate(options)}
    return soft_score(task, options, letter[truth], None if predicted is None else letter[predicted])[0]


# --- view parallelism: within 45 deg (range midpoints) ------------------------------------

VP = [
    "0 degrees to 15 degrees",
    "15 degrees to 45 degrees",
    "65 degrees to 95 degrees",
    "135 degrees to 180 degrees",
    CBD,
]


def test_view_parallelism_neighbouring_range_within_45_degrees_gets_half():
    # midpoints 7.5 and 30: 22.5 deg apart
    assert score("view_parallelism", VP, "0 degrees to 15 degrees", "15 degrees to 45 degrees") == 0.5


def test_view_parallelism_parallel_for_perpendicular_gets_nothing():
    # 7.5 vs 80: 72.5 deg apart
    assert score("view_parallelism", VP, "0 degrees to 15 degrees", "65 degrees to 95 degrees") == 0.0


def test_view_parallelism_paper_ranges_never_earn_partial_credit():
    # 65-95 vs 135-180: midpoints 80 and 157.5 (77.5 apart) - why the paper finds soft == hard here
    assert score("view_parallelism", VP, "135 degrees to 180 degrees", "65 degrees to 95 degrees") == 0.0


# --- directional facing: only the 30 deg mirror --------------------------------------------

DF = [
    "0 degrees (facing the camera)",
    "30 degrees left",
    "30 degrees right",
    "90 degrees left",
    "90 degrees right",
    CBD,
]


def test_directional_facing_30_left_for_30_right_gets_half():
    assert score("directional_facing", DF, "30 degrees right", "30 degrees left") == 0.5


def test_directional_facing_other_mirror_confusions_get_nothing():
    assert score("directional_facing", DF, "90 degrees left", "90 degrees right") == 0.0
    assert score("directional_facing", DF, "30 degrees left", "0 degrees (facing the camera)") == 0.0


# --- single-axis rotation: adjacent 45 deg step on the same side ---------------------------

SA = ["0 degrees", "45 degrees", "90 degrees", "135 degrees", "180 degrees", CBD]


def test_single_axis_135_for_180_gets_half():
    assert score("single_axis_rotation", SA, "180 degrees", "135 degrees") == 0.5


def test_single_axis_45_for_90_gets_nothing():
    assert score("single_axis_rotation", SA, "90 degrees", "45 degrees") == 0.0


def test_single_axis_two_steps_away_gets_nothing():
    assert score("single_axis_rotation", SA, "180 degrees", "90 degrees") == 0.0


# --- compound rotation: one component right ------------------------------------------------

CR = [
    "90 degrees Horizontal then 0 degrees Vertical",
    "90 degrees Horizontal then 180 degrees Vertical",
    "180 degrees Horizontal then 90 degrees Vertical",
    "0 degrees Horizontal then 90 degrees Vertical",
    CBD,
]


def test_compound_paper_example_horizontal_right_vertical_wrong_gets_half():
    truth = "90 degrees Horizontal then 180 degrees Vertical"
    assert score("compound_rotation", CR, truth, "90 degrees Horizontal then 0 degrees Vertical") == 0.5


def test_compound_both_components_wrong_gets_nothing():
    # the order swap of Table 11: angles exchanged between the axes
    truth = "90 degrees Horizontal then 180 degrees Vertical"
    assert score("compound_rotation", CR, truth, "180 degrees Horizontal then 90 degrees Vertical") == 0.0


# --- inter-object direction: adjacent range, same sense ------------------------------------

IO = [
    "No rotation",
    "0 to 45 degrees clockwise",
    "0 to 45 degrees counterclockwise",
    "46 to 90 degrees clockwise",
    "46 to 90 degrees counterclockwise",
    "91 to 135 degrees clockwise",
    "180 degrees in either direction",
    CBD,
]


def test_inter_object_adjacent_range_same_sense_gets_half():
    assert score("inter_object_direction", IO, "0 to 45 degrees clockwise", "46 to 90 degrees clockwise") == 0.5


def test_inter_object_adjacent_range_opposite_sense_gets_nothing():
    assert score("inter_object_direction", IO, "0 to 45 degrees clockwise", "46 to 90 degrees counterclockwise") == 0.0


def test_inter_object_range_two_bins_away_gets_nothing():
    assert score("inter_object_direction", IO, "0 to 45 degrees clockwise", "91 to 135 degrees clockwise") == 0.0


def test_inter_object_180_either_way_is_adjacent_to_the_largest_range_of_both_senses():
    assert score("inter_object_direction", IO, "180 degrees in either direction", "91 to 135 degrees clockwise") == 0.5


def test_inter_object_no_rotation_has_no_sense_so_no_credit():
    assert score("inter_object_direction", IO, "0 to 45 degrees clockwise", "No rotation") == 0.0


# --- viewer-scene direction: 90 <-> 270 ----------------------------------------------------

VS = ["0 degrees", "90 degrees", "180 degrees", "270 degrees", CBD]


def test_viewer_scene_270_for_90_gets_half():
    assert score("viewer_scene_direction", VS, "90 degrees", "270 degrees") == 0.5


def test_viewer_scene_other_angle_confusions_get_nothing():
    assert score("viewer_scene_direction", VS, "90 degrees", "180 degrees") == 0.0
    assert score("viewer_scene_direction", VS, "180 degrees", "0 degrees") == 0.0


# --- canonical orientation: right operations, wrong order ----------------------------------

CO = [
    "No change needed",
    "Rotate 180 degrees",
    "Rotate 90 degrees clockwise then flip horizontally",
    "Flip horizontally then rotate 90 degrees clockwise",
    "Flip vertically then rotate 90 degrees clockwise",
    CBD,
]


def test_canonical_swapped_operation_order_gets_half():
    truth = "Rotate 90 degrees clockwise then flip horizontally"
    assert score("canonical_orientation", CO, truth, "Flip horizontally then rotate 90 degrees clockwise") == 0.5


def test_canonical_different_operations_get_nothing():
    truth = "Rotate 90 degrees clockwise then flip horizontally"
    assert score("canonical_orientation", CO, truth, "Flip vertically then rotate 90 degrees clockwise") == 0.0


# --- common behaviour ----------------------------------------------------------------------


def test_exact_answer_scores_one_and_says_so():
    assert soft_score("single_axis_rotation", SA, "E", "E") == (1.0, "exact")


def test_unparsed_answer_scores_zero_with_reason():
    assert soft_score("single_axis_rotation", SA, "E", None) == (0.0, "unparsed")


def test_cannot_be_determined_never_earns_partial_credit():
    assert score("viewer_scene_direction", VS, CBD, "90 degrees") == 0.0


def test_rules_read_meanings_so_shuffled_letters_give_the_same_score():
    shuffled = list(reversed(SA))
    assert score("single_axis_rotation", shuffled, "180 degrees", "135 degrees") == 0.5


@pytest.mark.parametrize(
    ("text", "lo", "hi", "sense"),
    [
        ("135 degrees to 180 degrees", 135, 180, None),
        ("0°-15°", 0, 15, None),
        ("46–90° CCW", 46, 90, "ccw"),
        ("0 to 45 degrees counter-clockwise", 0, 45, "ccw"),
        ("91 to 135 degrees clockwise", 91, 135, "cw"),
        ("270 degrees", 270, 270, None),
    ],
)
def test_option_angles_and_rotation_sense_are_read_from_the_text(text, lo, hi, sense):
    meaning = parse_option(text)
    assert (meaning.lo, meaning.hi, meaning.sense) == (lo, hi, sense)


def test_compound_option_components_are_read_per_axis():
    meaning = parse_option("180 degrees Vertical then 90 degrees Horizontal")
    assert (meaning.horizontal, meaning.vertical) == (90, 180)


def test_canonical_operations_keep_their_order():
    assert parse_option("Flip horizontally then rotate 90 degrees clockwise").operations == (
        "flip horizontal",
        "rotate 90 cw",
    )
