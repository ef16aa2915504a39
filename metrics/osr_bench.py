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
  ``{"class": [[x, y], ...]}``; positions outside the 10x10 grid are dropped; a reply without
  such an object (or with a malformed or non-integer position) is a *format failure* and gets the lowest
  score (F1 0, average distance 15, CHAIR 0);
- per class, the Hungarian assignment (``scipy.optimize.linear_sum_assignment``) on the
  Euclidean grid distance; a pair within 2.0 is a TP; unmatched predictions are FPs,
  unmatched ground truths FNs;
- the prediction is also scored rotated by 90, 180 and 270 degrees clockwise; the rotation
  with the highest overall F1 is kept (ties keep the smaller rotation);
- average distance: mean over all assigned pairs (also those beyond 2.0) of the classes
  present on both sides; 15 when there is none;
- CHAIR_S: 1 if a predicted class is absent from the ground truth; CHAIR_I: share of
  predicted classes that are absent; CHAIR_instance: share of predicted instances in them.

Overall (``scripts/analysis.py``): :func:`official_overall`, the unweighted mean of the
per-skill means (plus the maps' mean F1 under the map protocol).

QA rules (``evaluation_re``): counting gives ``max(0, 1 - |pred - gt| / max(pred, gt))`` on the
first run of digits; relative distance is an exact match of the lower-cased answer;
relative direction an exact match after normalising "front left" / "front-left".
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from lmms_spatial.metrics.extraction import extract_first_digits, normalise_direction

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
    except ValueError:
        return None, "unparsed:invalid_json"


def predicted_positions(obj: Any, grid: int = GRID) -> tuple[Positions | None, str]:
    """``{"class": [[x, y], ...]}`` -> {class: [(row, col)]}; x is the column, y the row."""
    if not isinstance(obj, Mapping):
        return None, "unparsed:json_not_an_object"
    out: Positions = {}
    try:
        for name, points in obj.items():
            for point in points:
                x, y = point
                if not all(isinstance(v, int) for v in (x, y)):  # the official grid indexing fails on these
                    raise TypeError("non-integer position")
                if 0 <= x < grid and 0 <= y < grid:
                    out.setdefault(str(name), []).append((y, x))
    except (TypeError, ValueError):
        return None, "unparsed:malformed_position"
    return out, "json_object"


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
    """Rotate a map clockwise by 0/90/180/270 degrees (official ``rotate_cogmap``)."""
    turn = {0: lambda r, c: (r, c), 90: lambda r, c: (c, grid - 1 - r), 180: lambda r, c: (grid - 1 - r, grid - 1 - c)}
    turn[270] = lambda r, c: (grid - 1 - c, r)
    f = turn[degrees]
    return {name: [f(r, c) for r, c in points] for name, points in positions.items()}


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


def _lowest(reason: str) -> dict[str, Any]:
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
        "format_ok": False,
        "reason": reason,
    }


def score_cogmap(truth_grid: Any, response: Any, threshold: float = MATCH_THRESHOLD) -> dict[str, Any]:
    """Best-rotation scores of a cognitive-map reply against the ground-truth grid."""
    text = response if isinstance(response, str) else ""
    obj, reason = last_json_object(text)
    if obj is None:
        return _lowest(reason)
    pred, reason = predicted_positions(obj)
    if pred is None:
        return _lowest(reason)
    truth = grid_positions(truth_grid)
    best: dict[str, Any] | None = None
    for degrees in ROTATIONS:
        scores = map_scores(truth, rotate(pred, degrees), threshold)
        if best is None or scores["f1"] > best["f1"]:
            best = {**scores, "rotation": degrees}
    assert best is not None
    return {**best, "format_ok": True, "reason": f"json_object:rotation_{best['rotation']}"}


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

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def answer_text(response: Any, think: bool) -> tuple[str, str]:
    """The text a QA rule reads: the ``<answer>`` tag in think mode (else the whole reply)."""
    text = response if isinstance(response, str) else ""
    if think:
        m = _ANSWER_TAG.search(text)
        if m:
            return m.group(1).strip(), "answer_tag"
        return text.strip(), "no_answer_tag"
    return text.strip(), "reply"


def counting_score(predicted: int, truth: int) -> float:
    if predicted == truth:
        return 1.0
    return max(0.0, 1.0 - abs(predicted - truth) / max(predicted, truth))


def score_qa(skill: str, truth: str, response: Any, *, think: bool = False) -> dict[str, Any]:
    """Rule score of one answer: {score, parsed, reason} (official ``evaluation_re``)."""
    text, where = answer_text(response, think)
    truth_norm = str(truth).strip().lower()
    if skill == "object_counting":
        extraction = extract_first_digits(text)
        if extraction.value is None:
            return {"score": 0.0, "parsed": None, "reason": f"{extraction.reason}:{where}"}
        try:
            gt = int(truth_norm)
        except ValueError:  # a negative-sampling ground truth such as "not found": exact match only
            return {"score": 0.0, "parsed": extraction.value, "reason": f"truth_not_a_count:{where}"}
        return {
            "score": counting_score(extraction.value, gt),
            "parsed": extraction.value,
            "reason": f"first_digits:{where}",
        }
    answer = text.lower()
    if skill == "relative_direction":
        answer, truth_norm = normalise_direction(answer), normalise_direction(truth_norm)
    elif skill != "relative_distance":
        raise ValueError(f"unknown OSR-Bench skill {skill!r}; known: {SKILLS}")
    if not answer:
        return {"score": 0.0, "parsed": None, "reason": f"unparsed:empty:{where}"}
    return {"score": 1.0 if answer == truth_norm else 0.0, "parsed": answer, "reason": f"exact_match:{where}"}


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
