"""OSR-Bench scoring: cognitive maps (Hungarian F1 under 4 rotations, CHAIR) and QA rules.

Follows the official scorer (``UUUserna/OSR-Bench-code``, ``evaluation/metric.py``) rule for
rule, with one deliberate fix. The official overall precision / recall / F1 are computed
*inside* the loop over a Python ``set`` of classes, so they reflect whichever class came last in
that (hash-seeded) order: the same prediction scores 0.385-0.455 under different
``PYTHONHASHSEED`` values on the repo's own example. Here the totals are summed over every
class, in sorted order, and the overall figures computed once after the loop - the value the
official code gives when the loop happens to end on a class that is not skipped (0.385 on
that example). Everything else is unchanged:

- the prediction is the last balanced ``{...}`` of the reply, parsed as JSON
  ``{"class": [[x, y], ...]}``. A position that fails the official range test
  ``0 <= x < 10 and 0 <= y < 10`` is dropped and counted (``dropped_points``: ``[10.5, 3]``,
  ``[1e9, 2]``, NaN, ``[12, "a"]``); an in-range position the official grid cannot index
  (``[2.5, 3]``, ``[3, "a"]``), a point that is not a pair, or JSON that is not an object is a
  *format failure* and gets the lowest score (F1 0, average distance 15, CHAIR 0). A reply
  ``json`` cannot read (too deep, an integer past Python's digit limit) is a format failure too,
  as in the official ``try``/``except``: no reply can raise;
- per class, the Hungarian assignment (``scipy.optimize.linear_sum_assignment``) on the
  Euclidean grid distance; a pair within 2.0 is a TP; unmatched predictions are FPs,
  unmatched ground truths FNs. Both sides are fed to the assignment in the official order,
  row-major over the (rotated) grid: when two optimal assignments tie on total distance but
  not on the number of pairs within 2.0, scipy's choice depends on that order;
- when no class is on both sides the official loop never computes its totals (the
  ``UnboundLocalError`` is caught) and the lowest score is returned, CHAIR 0 included: kept;
- the prediction is also scored rotated by 90, 180 and 270 degrees clockwise; the rotation
  with the highest overall F1 is kept (ties keep the smaller rotation);
- average distance: mean over all assigned pairs (also those beyond 2.0) of the classes
  present on both sides; 15 when there is none;
- CHAIR_S: 1 if a predicted class is absent from the ground truth; CHAIR_I: share of
  predicted classes that are absent; CHAIR_instance: share of predicted instances in them.

Overall (``scripts/analysis.py``): :func:`official_overall`, the unweighted mean of the
per-skill means (plus the maps' mean F1 under the map protocol).

QA rules (``evaluation_re``), verbatim: in think mode the first ``<answer>...</answer>`` (case
as written) replaces the reply when there is one; in vanilla mode the whole reply is read. It is
then stripped and lower-cased. Counting gives ``max(0, 1 - |pred - gt| / max(pred, gt))`` on the
first run of digits (a run past Python's digit limit, where the official code raises, scores 0:
the formula's value for any count that large); relative distance is an exact match; relative
direction an exact match after mapping exactly "front left" / "front-left" (and the other
diagonals) to one spelling. :func:`lenient_direction_score`, reported only as the separate
``relative_direction_lenient`` metric, also accepts "front_left", "Front  Left" and the like.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_spatial.metrics.extraction import first_digit_run, first_tag_content, normalise_direction

GRID = 10
MATCH_THRESHOLD = 2.0
DISTANCE_PENALTY = 15.0
ROTATIONS = (0, 90, 180, 270)
SKILLS = ("object_counting", "relative_distance", "relative_direction")
NOT_FOUND_ANSWERS = (
    "The positioning object is not found in the picture.",
    "The positioning object is not unique in the picture.",
    "None of the candidates were found in the picture.",
    "The orienting object or querying object is not found in the picture.",
)

Positions = dict[str, list[tuple[int, int]]]  # class -> [(row, col), ...]


# ---------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------


def last_json_object(text: str) -> tuple[Any, str]:
    """The last balanced ``{...}`` of ``text`` parsed as JSON, and why (official rule)."""
    end = text.rfind("}")
    if end == -1:
        return None, "unparsed:no_json_object"
    depth, start = 1, end - 1
    while start >= 0:
        if text[start] == "}":
            depth += 1
        elif text[start] == "{":
            depth -= 1
            if depth == 0:
                break
        start -= 1
    if depth:
        return None, "unparsed:unbalanced_braces"
    try:
        return json.loads(text[start : end + 1]), "json_object"
    except RecursionError:  # nested too deep for the json module
        return None, "unparsed:json_too_deep"
    except ValueError:  # invalid JSON, or an integer past Python's digit limit
        return None, "unparsed:invalid_json"


def predicted_positions(obj: Any, grid: int = GRID) -> tuple[Positions | None, str, int]:
    """``{"class": [[x, y], ...]}`` -> ({class: [(row, col)]}, reason, dropped points).

    x is the column, y the row. The official ``convert_model_output_to_cogmap`` rule: a point
    failing ``0 <= x < grid and 0 <= y < grid`` is skipped (counted here); anything else that
    cannot be placed on the grid makes the whole map a format failure.
    """
    if not isinstance(obj, Mapping):
        return None, "unparsed:json_not_an_object", 0
    out: Positions = {}
    dropped = 0
    try:
        for name, points in obj.items():
            for point in points:
                x, y = point
                if 0 <= x < grid and 0 <= y < grid:
                    if not (isinstance(x, int) and isinstance(y, int)):  # the official cogmap[y][x] raises
                        raise TypeError("non-integer position inside the grid")
                    out.setdefault(str(name), []).append((y, x))
                else:
                    dropped += 1
    except (TypeError, ValueError):
        return None, "unparsed:malformed_position", dropped
    return out, "json_object", dropped


def grid_positions(grid: Sequence[Sequence[Sequence[str]]] | str) -> Positions:
    """Ground truth ``[row][col] -> [class, ...]`` (or its JSON text) -> {class: [(row, col)]}."""
    if isinstance(grid, str):
        grid = json.loads(grid)
    out: Positions = {}
    for row, cells in enumerate(grid):
        for col, names in enumerate(cells):
            for name in names:
                out.setdefault(str(name), []).append((row, col))
    return out


def rotate(positions: Positions, degrees: int, grid: int = GRID) -> Positions:
    """Rotate a map clockwise by 0/90/180/270 degrees (official ``rotate_cogmap``).

    Each class's points come back in row-major order of the rotated grid: the order in which
    the official ``extract_objects_with_positions`` reads them, and so feeds the assignment.
    """
    turn = {0: lambda r, c: (r, c), 90: lambda r, c: (c, grid - 1 - r), 180: lambda r, c: (grid - 1 - r, grid - 1 - c)}
    turn[270] = lambda r, c: (grid - 1 - c, r)
    f = turn[degrees]
    return {name: sorted(f(r, c) for r, c in points) for name, points in positions.items()}


# ---------------------------------------------------------------------------------------
# cognitive map metrics
# ---------------------------------------------------------------------------------------


def _assign(truth: list[tuple[int, int]], pred: list[tuple[int, int]]) -> list[float]:
    """Distances of the Hungarian pairs (minimum total Euclidean distance)."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    cost = np.array([[math.dist(t, p) for p in pred] for t in truth], dtype=float)
    rows, cols = linear_sum_assignment(cost)
    return [float(cost[r, c]) for r, c in zip(rows, cols, strict=True)]


def map_scores(truth: Positions, pred: Positions, threshold: float = MATCH_THRESHOLD) -> dict[str, Any]:
    """Precision, recall, F1, average distance, CHAIR of one prediction in one orientation."""
    tp = fp = fn = 0
    distances: list[float] = []
    per_class = {}
    for name in sorted(set(truth) | set(pred)):
        t, p = truth.get(name, []), pred.get(name, [])
        if not t or not p:
            fp, fn = fp + len(p), fn + len(t)
            per_class[name] = {"tp": 0, "fp": len(p), "fn": len(t)}
            continue
        pairs = _assign(t, p)
        hits = sum(d <= threshold for d in pairs)
        tp, fp, fn = tp + hits, fp + len(p) - hits, fn + len(t) - hits
        distances.extend(pairs)
        per_class[name] = {"tp": hits, "fp": len(p) - hits, "fn": len(t) - hits}
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    hallucinated = sorted(set(pred) - set(truth))
    n_pred_instances = sum(len(p) for p in pred.values())
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "avg_distance": math.fsum(distances) / len(distances) if distances else DISTANCE_PENALTY,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "chair_s": 1.0 if hallucinated else 0.0,
        "chair_i": len(hallucinated) / len(pred) if pred else 0.0,
        "chair_instance": sum(len(pred[h]) for h in hallucinated) / n_pred_instances if n_pred_instances else 0.0,
        "hallucinated_classes": hallucinated,
        "per_class": per_class,
    }


def _lowest(reason: str, *, format_ok: bool = False, dropped_points: int = 0) -> dict[str, Any]:
    return {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "avg_distance": DISTANCE_PENALTY,
        "tp": 0,
        "fp": 0,
        "fn": 0,
        "chair_s": 0.0,
        "chair_i": 0.0,
        "chair_instance": 0.0,
        "hallucinated_classes": [],
        "per_class": {},
        "rotation": 0,
        "format_ok": format_ok,
        "dropped_points": dropped_points,
        "reason": reason,
    }


def score_cogmap(truth_grid: Any, response: Any, threshold: float = MATCH_THRESHOLD) -> dict[str, Any]:
    """Best-rotation scores of a cognitive-map reply against the ground-truth grid."""
    text = response if isinstance(response, str) else ""
    obj, reason = last_json_object(text)
    if obj is None:
        return _lowest(reason)
    pred, reason, dropped = predicted_positions(obj)
    if pred is None:
        return _lowest(reason, dropped_points=dropped)
    truth = grid_positions(truth_grid)
    if not set(truth) & set(pred):  # the official totals are never computed: its lowest score
        return _lowest("json_object:no_class_in_common", format_ok=True, dropped_points=dropped)
    best: dict[str, Any] | None = None
    for degrees in ROTATIONS:
        scores = map_scores(truth, rotate(pred, degrees), threshold)
        if best is None or scores["f1"] > best["f1"]:
            best = {**scores, "rotation": degrees}
    assert best is not None
    return {
        **best,
        "format_ok": True,
        "dropped_points": dropped,
        "reason": f"json_object:rotation_{best['rotation']}",
    }


# ---------------------------------------------------------------------------------------
# map geometry (question generation)
# ---------------------------------------------------------------------------------------

DIRECTIONS = ("Front", "Front Left", "Left", "Back Left", "Back", "Back Right", "Right", "Front Right")


def relative_direction(standing: tuple[int, int], facing: tuple[int, int], query: tuple[int, int]) -> str:
    """Where ``query`` is for someone at ``standing`` facing ``facing`` (cells as (row, col)).

    The map is seen from above with row 0 at the top: the left of someone facing "up" the
    map is column 0's side. Eight 45-degree sectors centred on front, front-left, ...
    """
    fx, fy = facing[1] - standing[1], facing[0] - standing[0]
    vx, vy = query[1] - standing[1], query[0] - standing[0]
    front = vx * fx + vy * fy
    left = vx * fy - vy * fx  # projection on (fy, -fx), the left-hand direction
    sector = round(math.degrees(math.atan2(left, front)) / 45.0) % 8
    return DIRECTIONS[sector]


# ---------------------------------------------------------------------------------------
# question answering
# ---------------------------------------------------------------------------------------

_DIRECTION_SPELLINGS = {
    "front left": "front-left",
    "front right": "front-right",
    "back left": "back-left",
    "back right": "back-right",
}
_PARSED_CHARS = 200  # a parsed free-text answer is logged up to this length


def answer_text(response: Any, think: bool) -> tuple[str, str]:
    """The text the official rules read, stripped and lower-cased, and where it came from.

    Think mode: the first ``<answer>...</answer>`` (exactly that case), else the whole reply;
    vanilla mode: the whole reply, tags and all.
    """
    text = response if isinstance(response, str) else ""
    where = "reply"
    if think:
        tagged = first_tag_content(text, "<answer>", "</answer>")
        if tagged is not None:
            text, where = tagged, "answer_tag"
        else:
            where = "no_answer_tag"
    return text.strip().lower(), where


def official_direction(text: str) -> str:
    """The official spelling map: only exactly "front left" (etc.) becomes "front-left"."""
    return _DIRECTION_SPELLINGS.get(text, text)


def counting_score(predicted: int, truth: int) -> float:
    if predicted == truth:
        return 1.0
    return max(0.0, 1.0 - abs(predicted - truth) / max(predicted, truth))


def score_qa(skill: str, truth: str, response: Any, *, think: bool = False) -> dict[str, Any]:
    """Rule score of one answer: {score, parsed, reason} (official ``evaluation_re``)."""
    if skill not in SKILLS:
        raise ValueError(f"unknown OSR-Bench skill {skill!r}; known: {SKILLS}")
    text, where = answer_text(response, think)
    truth_norm = str(truth).strip().lower()
    if skill == "object_counting":
        value, digits = first_digit_run(text)
        if digits is None:
            return {"score": 0.0, "parsed": None, "reason": f"unparsed:no_digits:{where}"}
        if value is None:  # the official int() raises here; any count this large scores 0 by the formula
            return {"score": 0.0, "parsed": digits[:20] + "...", "reason": f"digits_over_limit:{where}"}
        try:
            gt = int(truth_norm)
        except ValueError:  # rows are validated; kept total for hand-built documents
            return {"score": 0.0, "parsed": value, "reason": f"truth_not_a_count:{where}"}
        return {"score": counting_score(value, gt), "parsed": value, "reason": f"first_digits:{where}"}
    if not text:
        return {"score": 0.0, "parsed": None, "reason": f"unparsed:empty:{where}"}
    answer = text
    if skill == "relative_direction":
        answer, truth_norm = official_direction(answer), official_direction(truth_norm)
    return {
        "score": 1.0 if answer == truth_norm else 0.0,
        "parsed": answer[:_PARSED_CHARS],
        "reason": f"exact_match:{where}",
    }


def lenient_direction_score(truth: str, response: Any, *, think: bool = False) -> float:
    """Opt-in, not the paper's rule: "front_left", "Front  Left", "front - left" count as front-left."""
    text, _ = answer_text(response, think)
    return 1.0 if text and normalise_direction(text) == normalise_direction(str(truth)) else 0.0


def official_overall(records: Sequence[Mapping[str, Any]]) -> float:
    """The official ``scripts/analysis.py`` overall: the mean of the per-skill mean scores.

    With the map protocol the official CSV also holds each image's map turn, so the mean F1 of
    the maps (one per image, from ``map_key`` / ``map_f1`` of the records) is one more term.
    Distinct from the question-weighted mean of all QA scores (the script's other figure,
    our ``accuracy``).
    """
    by_skill: dict[str, list[float]] = {}
    maps: dict[str, float] = {}
    for r in records:
        by_skill.setdefault(str(r["skill"]), []).append(float(r["score"]))
        if r.get("map_f1") is not None:
            maps[str(r["map_key"])] = float(r["map_f1"])
    terms = [math.fsum(v) / len(v) for _, v in sorted(by_skill.items())]
    if maps:
        terms.append(math.fsum(maps.values()) / len(maps))
    return math.fsum(terms) / len(terms) if terms else float("nan")


def is_not_found_answer(text: str) -> bool:
    """True for the fixed negative-sampling ground truths ("... not found in the picture.")."""
    return str(text).strip().lower() in {a.lower() for a in NOT_FOUND_ANSWERS}
