"""OSR-Bench metrics: cognitive-map F1 under rotations, CHAIR, format failures, QA rules."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from lmms_spatial.metrics.osr_bench import (
    grid_positions,
    is_not_found_answer,
    last_json_object,
    lenient_direction_score,
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
    procs = [  # one interpreter per hash seed, started together (each is ~0.5 s of imports)
        subprocess.Popen([sys.executable, "-c", code, json.dumps(TRUTH), PRED], text=True,
                         env={**os.environ, "PYTHONHASHSEED": seed}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for seed in ("0", "1", "2", "3", "4", "5")
    ]  # fmt: skip
    outputs = set()
    for proc in procs:
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        outputs.add(out)
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
    assert (scores["tp"], scores["fp"], scores["dropped_points"]) == (1, 0, 2)


def test_points_failing_the_official_range_test_are_dropped_and_counted_not_fatal():
    # [10.5, 3], [1e9, 2], NaN and [12, "a"] all fail `0 <= x < 10 and ...` before any indexing
    response = '{"tv": [[1, 1], [10.5, 3], [1e9, 2], [NaN, 1], [12, "a"]]}'
    scores = score_cogmap(grid_with({(1, 1): ["tv"]}), response)
    assert scores["format_ok"] and scores["dropped_points"] == 4
    assert (scores["tp"], scores["fp"], scores["fn"], scores["f1"]) == (1, 0, 0, 1.0)


@pytest.mark.parametrize("point", ["[2.5, 3]", '[3, "a"]', "[3]", '"ab"', "null"])
def test_a_point_the_official_grid_cannot_hold_fails_the_whole_map(point):
    scores = score_cogmap(grid_with({(1, 1): ["tv"]}), '{"tv": [[1, 1], ' + point + "]}")
    assert scores["format_ok"] is False and scores["reason"] == "unparsed:malformed_position"


def test_tied_assignments_are_broken_as_the_official_row_major_order_breaks_them():
    # Chairs at (row, col) (1,7), (2,6), (3,7); predicted (0,8), (1,7), (4,8). Two optimal
    # assignments tie on total distance; the one scipy picks depends on the order of the
    # predictions. Read row-major, as the official code reads its grid, it pairs two within
    # 2.0: TP 2, FP 1, FN 1, F1 2/3 (the official evaluate_with_rotations gives 0.6667 here).
    truth = grid_with({(1, 7): ["chair"], (2, 6): ["chair"], (3, 7): ["chair"]})
    json_order = {"chair": [[8, 4], [7, 1], [8, 0]]}  # (x, y): the reply lists them bottom-up
    scores = score_cogmap(truth, reply(json_order))
    assert (scores["tp"], scores["fp"], scores["fn"], scores["rotation"]) == (2, 1, 1, 0)
    assert scores["f1"] == pytest.approx(2 / 3)
    as_listed = map_scores(grid_positions(truth), {"chair": [(4, 8), (1, 7), (0, 8)]})  # JSON order
    assert as_listed["tp"] != scores["tp"]  # the order really decides this case


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("[" * 5000 + "]" * 5000 + ' {"a": ' + "[" * 3000 + "]" * 3000 + "}", "unparsed:json_too_deep"),
        ('{"tv": [[' + "9" * 5000 + ", 1]]}", "unparsed:invalid_json"),
        ("{" * 200_000, "unparsed:no_json_object"),
        ("}" * 200_000, "unparsed:unbalanced_braces"),
    ],
)
def test_hostile_maps_score_the_lowest_and_never_raise(response, reason):
    scores = score_cogmap(TRUTH, response)
    assert scores["format_ok"] is False and scores["reason"] == reason and scores["f1"] == 0.0


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
    assert score_qa("object_counting", "2", "about 2.5 of them")["score"] == 1.0


def test_vanilla_counting_reads_the_first_digits_of_the_whole_reply_tags_and_all():
    # official: no tag handling in vanilla mode, so the "1" in "step 1" is the count
    result = score_qa("object_counting", "3", "step 1: look. <answer>3</answer>")
    assert (result["parsed"], result["score"]) == (1, 1 - 2 / 3)


def test_think_counting_reads_only_the_lower_case_answer_tag():
    assert score_qa("object_counting", "3", "<think>2 or 4</think><answer>3</answer>", think=True)["score"] == 1.0
    upper = score_qa("object_counting", "3", "<think>2 or 4</think><ANSWER>3</ANSWER>", think=True)
    assert (upper["parsed"], upper["reason"]) == (2, "first_digits:no_answer_tag")


def test_think_mode_reads_the_first_answer_tag_as_re_search_does():
    response = "<answer>left</answer> on reflection <answer>right</answer>"
    assert score_qa("relative_direction", "left", response, think=True)["score"] == 1.0


def test_a_count_past_pythons_digit_limit_scores_0_and_does_not_raise():
    result = score_qa("object_counting", "3", "9" * 5000)
    assert result["score"] == 0.0 and result["reason"] == "digits_over_limit:reply"


def test_an_unclosed_answer_tag_is_read_in_linear_time():
    response = "<answer>" * 100_000 + "left"  # 800 KB; a lazy regex rescans from every tag
    result = score_qa("relative_direction", "left", response, think=True)
    assert (result["score"], result["reason"]) == (0.0, "exact_match:no_answer_tag")


def test_relative_distance_is_an_exact_lower_cased_match():
    assert score_qa("relative_distance", "Sofa", " sofa ")["score"] == 1.0
    assert score_qa("relative_distance", "sofa", "The sofa")["score"] == 0.0


def test_relative_direction_normalises_front_left_spellings():
    assert score_qa("relative_direction", "front-left", "Front left")["score"] == 1.0
    assert score_qa("relative_direction", "Front Left", "front-left")["score"] == 1.0
    assert score_qa("relative_direction", "back-right", "back left")["score"] == 0.0


@pytest.mark.parametrize("spelling", ["front_left", "Front  Left", "front - left", "front\tleft", "-front-left"])
def test_official_direction_rule_accepts_only_front_left_and_front_hyphen_left(spelling):
    assert score_qa("relative_direction", "Front Left", spelling)["score"] == 0.0
    assert lenient_direction_score("Front Left", spelling) == 1.0  # the separate, opt-in metric


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


def test_an_empty_prediction_gets_the_official_lowest_score():
    # no class on both sides: the official loop never sets its totals and returns lowest_score
    scores = score_cogmap(TRUTH, "{}")
    assert scores["format_ok"] and not math.isnan(scores["avg_distance"])
    assert (scores["f1"], scores["avg_distance"], scores["tp"], scores["fp"], scores["fn"]) == (0.0, 15.0, 0, 0, 0)


def test_a_map_of_only_hallucinated_classes_gets_chair_0_as_the_official_code_does():
    scores = score_cogmap(TRUTH, reply({"sofa": [[0, 0]], "tv": [[5, 5]]}))
    assert scores["reason"] == "json_object:no_class_in_common"
    assert (scores["chair_s"], scores["chair_i"], scores["chair_instance"], scores["f1"]) == (0.0, 0.0, 0.0, 0.0)


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
