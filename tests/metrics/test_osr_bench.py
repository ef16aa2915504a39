"""OSR-Bench metrics: cognitive-map F1 under rotations, CHAIR, format failures, QA rules."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from lmms_spatial.metrics.extraction import extract_first_digits
from lmms_spatial.metrics.osr_bench import (
    grid_positions,
    is_not_found_answer,
    last_json_object,
    map_scores,
    official_overall,
    relative_direction,
    rotate,
    score_cogmap,
    score_qa,
)


def grid_with(cells: dict[tuple[int, int], list[str]]) -> list[list[list[str]]]:
    """A 10x10 ground-truth grid, ``cells`` keyed by (row, col)."""
    return [[list(cells.get((r, c), [])) for c in range(10)] for r in range(10)]


def reply(objects: dict[str, list[list[int]]]) -> str:
    return "Here is the map:\n```json\n" + json.dumps(objects) + "\n```"


# --- the official example's structure: 5 TP, 6 FP, 10 FN --------------------------------

# ground truth: 15 objects in 5 classes; prediction: 11 objects, 5 of them within 2.0 of a truth
TRUTH = grid_with(
    {
        (1, 1): ["door"], (1, 8): ["door"], (3, 3): ["chair"], (3, 6): ["chair"], (8, 8): ["chair"],
        (5, 5): ["table"], (6, 0): ["window"], (0, 9): ["window"], (9, 0): ["window"], (9, 9): ["window"],
        (2, 2): ["rug"], (7, 7): ["rug"], (4, 9): ["lamp"], (0, 4): ["lamp"], (9, 5): ["lamp"],
    }
)  # fmt: skip
PRED = reply(
    {
        "door": [[1, 2]],  # (row 2, col 1): 1.0 from door (1,1) -> TP
        "chair": [[3, 3], [6, 4]],  # (3,3) exact -> TP; (4,6) 1.0 from chair (3,6) -> TP
        "table": [[5, 6]],  # (6,5): 1.0 -> TP
        "rug": [[2, 3]],  # (3,2): 1.0 from rug (2,2) -> TP
        "sofa": [[0, 0], [9, 9]],  # hallucinated class: 2 FP
        "tv": [[5, 0], [5, 9], [0, 5], [9, 4]],  # hallucinated class: 4 FP
    }
)


def test_official_example_structure_gives_f1_0_385():
    scores = score_cogmap(TRUTH, PRED)
    assert (scores["tp"], scores["fp"], scores["fn"]) == (5, 6, 10)
    assert scores["precision"] == pytest.approx(5 / 11)
    assert scores["recall"] == pytest.approx(5 / 15)
    assert scores["f1"] == pytest.approx(10 / 26)  # 0.3846
    assert round(scores["f1"], 3) == 0.385


def _official_order_dependent_f1(truth, pred_reply, class_order):
    """The official loop's overall F1 for one class order: totals so far, at the last non-skipped class."""
    truth_pos, pred_pos = grid_positions(truth), json.loads(pred_reply.split("```json\n")[1].split("\n```")[0])
    pred_pos = {k: [(y, x) for x, y in v] for k, v in pred_pos.items()}
    tp = fp = fn = 0
    f1 = 0.0
    for name in class_order:
        per = map_scores({name: truth_pos.get(name, [])}, {name: pred_pos.get(name, [])})
        tp, fp, fn = tp + per["tp"], fp + per["fp"], fn + per["fn"]
        if truth_pos.get(name) and pred_pos.get(name):  # the official code 'continue's otherwise
            p, r = tp / (tp + fp), tp / (tp + fn)
            f1 = 2 * p * r / (p + r) if p + r else 0.0
    return f1


def test_the_official_overall_depends_on_class_order_and_ours_does_not():
    classes = ["door", "chair", "table", "rug", "window", "lamp", "sofa", "tv"]
    orders = [classes, list(reversed(classes)), ["tv", "sofa", "lamp", "window", "door", "chair", "table", "rug"]]
    official = {round(_official_order_dependent_f1(TRUTH, PRED, order), 3) for order in orders}
    assert len(official) > 1  # the bug: different values for the same prediction
    assert 0.385 in official  # the loop ending on a matched class after all others gives ours
    assert round(score_cogmap(TRUTH, PRED)["f1"], 3) == 0.385


def test_scores_do_not_depend_on_the_hash_seed():
    code = (
        "import json, sys; from lmms_spatial.metrics.osr_bench import score_cogmap;"
        "s = score_cogmap(json.loads(sys.argv[1]), sys.argv[2]);"
        "print(json.dumps([s['f1'], s['precision'], s['avg_distance'], s['chair_i'], s['rotation']]))"
    )
    outputs = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", code, json.dumps(TRUTH), PRED], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(proc.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())[0] == pytest.approx(10 / 26)


def test_chair_counts_hallucinated_classes_and_instances():
    scores = score_cogmap(TRUTH, PRED)
    assert scores["hallucinated_classes"] == ["sofa", "tv"]
    assert scores["chair_s"] == 1.0
    assert scores["chair_i"] == pytest.approx(2 / 6)  # 6 predicted classes
    assert scores["chair_instance"] == pytest.approx(6 / 11)  # 6 of 11 predicted instances


def test_average_distance_is_over_assigned_pairs_of_shared_classes():
    # door 1.0, chair 0 and 1.0 (chair (8,8) unassigned), table 1.0, rug 1.0 (rug (7,7) unassigned)
    assert score_cogmap(TRUTH, PRED)["avg_distance"] == pytest.approx(4.0 / 5)


def test_pairs_beyond_2_grid_units_are_not_true_positives_but_count_in_the_distance():
    truth = grid_with({(0, 0): ["bed"]})
    scores = score_cogmap(truth, reply({"bed": [[3, 0]]}))  # (row 0, col 3): 3.0 away
    assert (scores["tp"], scores["fp"], scores["fn"], scores["avg_distance"]) == (0, 1, 1, 3.0)
    assert score_cogmap(truth, reply({"bed": [[2, 0]]}))["tp"] == 1  # exactly 2.0 is a match


def test_hungarian_assignment_minimises_total_distance():
    # greedy nearest-first would pair truth (0,2) with pred (0,3) and leave (0,0) 3.0 from (0,3)
    truth = grid_with({(0, 0): ["box"], (0, 2): ["box"]})
    scores = score_cogmap(truth, reply({"box": [[1, 0], [3, 0]]}))  # (0,1) and (0,3)
    assert scores["tp"] == 2 and scores["avg_distance"] == pytest.approx(1.0)


def test_best_of_four_rotations_is_kept():
    truth = grid_with({(0, 9): ["sink"]})  # top right
    scores = score_cogmap(truth, reply({"sink": [[0, 0]]}))  # top left: the 90 deg clockwise turn maps it there
    assert scores["f1"] == 1.0 and scores["rotation"] == 90


def test_rotation_matches_the_official_clockwise_convention():
    assert rotate({"x": [(0, 0), (2, 7)]}, 90) == {"x": [(0, 9), (7, 7)]}
    assert rotate({"x": [(2, 7)]}, 270) == {"x": [(2, 2)]}
    assert rotate(rotate({"x": [(2, 7)]}, 90), 270) == {"x": [(2, 7)]}


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("I see a door and a window.", "unparsed:no_json_object"),
        ('{"door": [[1, 2]', "unparsed:no_json_object"),
        ('{"door": [[1, 2]]}}', "unparsed:unbalanced_braces"),
        ("{door: [[1, 2]]}", "unparsed:invalid_json"),
        ('{"door": [[1, 2, 3]]}', "unparsed:malformed_position"),
        ('{"door": [[1.5, 2]]}', "unparsed:malformed_position"),
    ],
)
def test_format_failures_get_the_lowest_score_and_say_why(response, reason):
    scores = score_cogmap(TRUTH, response)
    assert scores["format_ok"] is False and scores["reason"] == reason
    assert (scores["f1"], scores["avg_distance"], scores["chair_s"]) == (0.0, 15.0, 0.0)


def test_positions_outside_the_grid_are_dropped():
    scores = score_cogmap(grid_with({(1, 1): ["tv"]}), reply({"tv": [[1, 1], [10, 3], [-1, 0]]}))
    assert (scores["tp"], scores["fp"]) == (1, 0)


def test_the_last_json_object_of_the_reply_is_read():
    obj, _ = last_json_object('draft {"a": [[0, 0]]} final {"b": {"nested": 1}}')
    assert obj == {"b": {"nested": 1}}


# --- QA --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("response", "truth", "score"),
    [
        ("3", "3", 1.0),
        ("There are 2 chairs.", "4", 0.5),
        ("6", "4", 1 - 2 / 6),
        ("0", "3", 0.0),
        ("12", "1", 1 - 11 / 12),
    ],
)
def test_counting_partial_credit(response, truth, score):
    assert score_qa("object_counting", truth, response)["score"] == pytest.approx(score)


def test_counting_reads_digits_only_as_the_official_scorer():
    result = score_qa("object_counting", "3", "three chairs")
    assert result["score"] == 0.0 and result["reason"].startswith("unparsed:no_digits")
    assert extract_first_digits("about 2.5 of them").value == 2


def test_relative_distance_is_an_exact_lower_cased_match():
    assert score_qa("relative_distance", "Sofa", " sofa ")["score"] == 1.0
    assert score_qa("relative_distance", "sofa", "The sofa")["score"] == 0.0


def test_relative_direction_normalises_front_left_spellings():
    assert score_qa("relative_direction", "front-left", "Front left")["score"] == 1.0
    assert score_qa("relative_direction", "back-right", "back left")["score"] == 0.0


def test_think_mode_scores_the_answer_tag():
    response = "<think>the lamp is behind me, so back</think><answer>back</answer>"
    assert score_qa("relative_direction", "back", response, think=True) == {
        "score": 1.0,
        "parsed": "back",
        "reason": "exact_match:answer_tag",
    }


def test_empty_reply_is_unparsed_not_wrong_silently():
    assert score_qa("relative_distance", "sofa", "")["reason"].startswith("unparsed:empty")


def test_unknown_skill_is_refused():
    with pytest.raises(ValueError, match="skill"):
        score_qa("cognitive_map", "x", "y")


def test_fixed_negative_sampling_answers_are_recognised():
    assert is_not_found_answer("the positioning object is not found in the picture.")
    assert not is_not_found_answer("The sofa is to the left.")


def test_nan_free_scores_for_an_empty_prediction():
    scores = score_cogmap(TRUTH, "{}")
    assert scores["format_ok"] and scores["fn"] == 15 and not math.isnan(scores["avg_distance"])


# --- question geometry (fixture answers) ------------------------------------------------


@pytest.mark.parametrize(
    ("query", "direction"),
    [((5, 0), "Left"), ((5, 9), "Right"), ((9, 5), "Back"), ((1, 1), "Front Left"), ((9, 9), "Back Right")],
)
def test_relative_direction_of_a_query_for_someone_facing_up_the_map(query, direction):
    assert relative_direction((5, 5), (0, 5), query) == direction


def test_relative_direction_turns_with_the_facing_object():
    # facing east (right on the map): north is on the left
    assert relative_direction((5, 5), (5, 9), (0, 5)) == "Left"


def test_official_overall_is_the_mean_of_per_skill_means_not_of_questions():
    records = [
        {"skill": "object_counting", "score": 1.0},
        {"skill": "object_counting", "score": 0.0},
        {"skill": "object_counting", "score": 0.5},  # counting mean 0.5
        {"skill": "relative_direction", "score": 1.0},  # direction mean 1.0
    ]
    assert official_overall(records) == pytest.approx(0.75)  # question-weighted would be 0.625


def test_official_overall_adds_the_mean_map_f1_once_per_image():
    records = [
        {"skill": "relative_distance", "score": 0.0, "map_key": "s1", "map_f1": 0.5},
        {"skill": "relative_distance", "score": 1.0, "map_key": "s1", "map_f1": 0.5},  # same image: counted once
        {"skill": "relative_distance", "score": 1.0, "map_key": "s2", "map_f1": 1.0},
    ]
    assert official_overall(records) == pytest.approx((2 / 3 + 0.75) / 2)
