"""OSR-Bench edges (issue 37): the 2.0 match threshold, whole QA results, lenient reading, overall of nothing."""

import json
import math

import pytest

from lmms_spatial.metrics.osr_bench import (
    grid_positions,
    last_json_object,
    lenient_direction_score,
    map_scores,
    official_overall,
    predicted_positions,
    relative_direction,
    rotate,
    score_cogmap,
    score_qa,
)


def grid(cells):
    return [[list(cells.get((r, c), [])) for c in range(10)] for r in range(10)]


@pytest.mark.parametrize(
    ("point", "tp", "distance"),
    [
        ([2, 0], 1, 2.0),  # (row 0, col 2): exactly 2.0 from (0, 0): a match
        ([1, 1], 1, math.sqrt(2)),  # 1.414: a match
        ([2, 1], 0, math.sqrt(5)),  # 2.236: just beyond
        ([0, 0], 1, 0.0),
    ],
)
def test_a_prediction_matches_at_distance_2_0_or_less(point, tp, distance):
    scores = score_cogmap(grid({(0, 0): ["bed"], (9, 9): ["lamp"]}), json.dumps({"bed": [point], "lamp": [[9, 9]]}))
    # lamp exact in every case; bed a TP only within 2.0. rotation 0 (the others move lamp off (9, 9)... to 0 TP)
    assert scores["rotation"] == 0 and scores["tp"] == 1 + tp
    assert scores["avg_distance"] == pytest.approx(distance / 2)  # mean of (bed distance, 0)


def test_an_over_long_count_is_recorded_as_its_first_20_digits():
    result = score_qa("object_counting", "3", "9" * 5000)
    assert result == {"score": 0.0, "parsed": "9" * 20 + "...", "reason": "digits_over_limit:reply"}


def test_a_ground_truth_that_is_no_count_scores_0_and_says_so():
    assert score_qa("object_counting", "three", "3") == {"score": 0.0, "parsed": 3, "reason": "truth_not_a_count:reply"}


def test_an_empty_reply_is_a_whole_unparsed_result():
    assert score_qa("relative_distance", "chair", "   ") == {
        "score": 0.0,
        "parsed": None,
        "reason": "unparsed:empty:reply",
    }


def test_a_reply_that_is_not_text_is_empty():
    assert score_qa("relative_distance", "chair", None)["reason"] == "unparsed:empty:reply"
    assert score_qa("relative_distance", "chair", ["chair"])["reason"] == "unparsed:empty:reply"


def test_the_lenient_reading_is_vanilla_unless_told_and_an_empty_reply_is_wrong():
    assert lenient_direction_score("Front Left", "<answer>front_left</answer>") == 0.0  # the tags are part of it
    assert lenient_direction_score("Front Left", "<answer>front_left</answer>", think=True) == 1.0
    assert lenient_direction_score("", "") == 0.0  # nothing read: never right, even against an empty truth
    assert lenient_direction_score("Left", "right") == 0.0


def test_the_overall_of_no_record_is_nan():
    assert math.isnan(official_overall([]))


def test_a_json_object_followed_by_text_is_read():
    assert last_json_object('map: {"a": [[1, 2]]}.') == ({"a": [[1, 2]]}, "json_object")


def test_positions_in_grid_and_out_of_it():
    assert predicted_positions([1, 2]) == (None, "unparsed:json_not_an_object", 0)
    # x is the column, y the row; y = 10 is off the 10 x 10 grid: dropped
    assert predicted_positions({"a": [[1, 10], [3, 2]]}) == ({"a": [(2, 3)]}, "json_object", 1)


def test_a_ground_truth_grid_given_as_json_text_is_read():
    assert grid_positions('[[["a"], []], [[], ["a", "b"]]]') == {"a": [(0, 0), (1, 1)], "b": [(1, 1)]}


def test_a_half_turn_maps_row_and_column_to_their_mirror():
    assert rotate({"x": [(2, 7), (0, 0)]}, 180) == {"x": [(7, 2), (9, 9)]}


def test_map_scores_per_class_counts():
    truth = {"bed": [(0, 0), (5, 5)], "tv": [(9, 9)]}
    pred = {"bed": [(0, 1)], "lamp": [(3, 3)]}
    scores = map_scores(truth, pred)
    # bed: 1 pair within 2.0 (TP), 1 truth unmatched (FN); tv: missed (FN); lamp: hallucinated (FP)
    assert scores["per_class"] == {
        "bed": {"tp": 1, "fp": 0, "fn": 1},
        "lamp": {"tp": 0, "fp": 1, "fn": 0},
        "tv": {"tp": 0, "fp": 0, "fn": 1},
    }
    assert (scores["precision"], scores["recall"]) == (0.5, pytest.approx(1 / 3))


def test_map_scores_without_predictions_or_without_truth_are_zero_not_one():
    empty_pred = map_scores({"bed": [(0, 0)]}, {})
    assert (empty_pred["precision"], empty_pred["recall"], empty_pred["f1"]) == (0.0, 0.0, 0.0)
    assert (empty_pred["chair_s"], empty_pred["chair_i"], empty_pred["chair_instance"]) == (0.0, 0.0, 0.0)
    no_truth = map_scores({}, {"bed": [(0, 0)]})
    assert (no_truth["recall"], no_truth["chair_s"], no_truth["chair_i"]) == (0.0, 1.0, 1.0)


def test_a_format_failure_is_the_whole_lowest_record():
    assert score_cogmap(grid({(1, 1): ["tv"]}), "no map") == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "avg_distance": 15.0,
        "tp": 0,
        "fp": 0,
        "fn": 0,
        "chair_s": 0.0,
        "chair_i": 0.0,
        "chair_instance": 0.0,
        "hallucinated_classes": [],
        "per_class": {},
        "rotation": 0,
        "format_ok": False,
        "dropped_points": 0,
        "reason": "unparsed:no_json_object",
    }


def test_points_dropped_before_a_failure_are_still_counted():
    malformed = score_cogmap(grid({(1, 1): ["tv"]}), '{"tv": [[10, 3], [2.5, 3]]}')
    assert (malformed["reason"], malformed["dropped_points"]) == ("unparsed:malformed_position", 1)
    disjoint = score_cogmap(grid({(1, 1): ["tv"]}), '{"sofa": [[1, 1]], "x": [[12, 0]]}')
    assert (disjoint["reason"], disjoint["dropped_points"], disjoint["format_ok"]) == (
        "json_object:no_class_in_common",
        1,
        True,
    )


def test_a_reply_that_is_not_text_has_no_json_object():
    assert score_cogmap(grid({(1, 1): ["tv"]}), None)["reason"] == "unparsed:no_json_object"


def test_the_match_threshold_can_be_widened():
    truth = grid({(0, 0): ["bed"]})
    assert score_cogmap(truth, '{"bed": [[3, 0]]}')["tp"] == 0  # 3.0 away
    assert score_cogmap(truth, '{"bed": [[3, 0]]}', threshold=3.0)["tp"] == 1


@pytest.mark.parametrize(
    ("standing", "facing", "query", "direction"),
    [
        ((5, 2), (2, 2), (5, 0), "Left"),  # facing up the map: column 0's side is the left
        ((12, 5), (11, 5), (0, 0), "Front Left"),  # 12 ahead, 5 left: 22.6 degrees, past the 22.5 boundary
        ((5, 5), (0, 5), (3, 4), "Front Left"),  # 10 ahead, 5 left: 26.6 degrees
    ],
)
def test_relative_direction_sectors(standing, facing, query, direction):
    assert relative_direction(standing, facing, query) == direction
