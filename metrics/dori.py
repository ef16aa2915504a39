"""DORI scoring rules: option meanings, soft accuracy (App. L) and the error taxonomy.

DORI (seed 001) asks 7 question types at two granularities. Hard accuracy compares letters;
everything else here works on what an option *means*, because letters change when options
are shuffled (App. K seeds) and the paper's rules are stated on angles, ranges, rotation
sense and operation order. :func:`parse_option` turns an option text into a
:class:`Meaning`; the soft-accuracy rules and the error-pattern labels read only meanings.

Soft accuracy (granular questions only; exact answer 1, partial 0.5, else 0). Our reading of
each App. L rule, with the paper's own examples as tests:

``view_parallelism``
    the predicted angle is within 45 deg of the true one, angles being range midpoints
    ("0-15" is 7.5); with the paper's ranges 0-15 / 65-95 / 135-180 no pair qualifies, which
    is why the paper finds soft == hard on this task.
``directional_facing``
    only the mirror confusion "30 degrees left" <-> "30 degrees right".
``single_axis_rotation``
    an adjacent 45 deg step that stays on the same side of the camera plane (front 0-45,
    back 135-180; 90 is its own category): 135 for 180 earns 0.5, 45 for 90 does not -
    the two cases App. L names, which a plain +-45 window cannot both satisfy.
``compound_rotation``
    at least one of the two components ("X deg Horizontal then Y deg Vertical") is right.
``inter_object_direction``
    adjacent magnitude ranges (consecutive among the question's own options) with the
    same rotation sense; "180 in either direction" matches both senses.
``viewer_scene_direction``
    the same turn in the opposite sense (90 <-> 270); no other confusion earns credit.
``canonical_orientation``
    the right operations in the wrong order.

Error patterns (App. L, Table 10) label a "truth -> predicted" confusion, first rule wins:
uncertainty cascade (predicted "Cannot be determined" or unparsed), perpendicular confusion
(parallel 0-15 range vs perpendicular 65-95 range), directional reversal (left/right,
toward/away, clockwise/counterclockwise, same/opposite), frontal bias (predicted the
frontal / canonical / no-change answer), rotational-symmetry confusion (two different
multiples of 90 deg of the same rotation, not a left/right facing), angle compression (a
smaller, non-zero angle than the truth); else ``other``. All sixteen rows of Table 10 get
the label the paper gives them (tested).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_spatial.metrics import aggregation as agg
from lmms_spatial.metrics.aggregation import seed_summary  # noqa: F401  (App. K error bars: tasks/dori/patterns.py)
from lmms_spatial.metrics.extraction import LETTERS

TASKS = (
    "view_parallelism",
    "directional_facing",
    "single_axis_rotation",
    "compound_rotation",
    "inter_object_direction",
    "viewer_scene_direction",
    "canonical_orientation",
)
GRANULARITIES = ("coarse", "granular")
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "frontal_alignment": ("view_parallelism", "directional_facing"),
    "rotational_transformation": ("single_axis_rotation", "compound_rotation"),
    "relative_orientation": ("inter_object_direction", "viewer_scene_direction"),
    "canonical_orientation": ("canonical_orientation",),
}
DIMENSION_OF = {task: dim for dim, tasks in DIMENSIONS.items() for task in tasks}
# Table 2 column headers
TASK_LABELS = {
    "view_parallelism": "View Parallel.",
    "directional_facing": "Dir. Facing",
    "single_axis_rotation": "Single-axis Rot.",
    "compound_rotation": "Compound Rot.",
    "inter_object_direction": "Inter-Obj. Dir.",
    "viewer_scene_direction": "Viewer-Scene Dir.",
    "canonical_orientation": "Canonical Orient.",
}
PATTERNS = (
    "uncertainty_cascade",
    "perpendicular_confusion",
    "directional_reversal",
    "frontal_bias",
    "rotational_symmetry_confusion",
    "angle_compression",
)
UNKNOWN = "UNKNOWN"  # the paper's label for an unparsed prediction


def question_type(task: str, granularity: str) -> str:
    return f"{task}_{granularity}"


# ---------------------------------------------------------------------------------------
# option meanings
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Meaning:
    """What an option says, as far as the scoring rules need it. Unknown parts are None."""

    text: str
    undetermined: bool = False
    lo: float | None = None  # an angle (lo == hi) or a range of angles, in degrees
    hi: float | None = None
    sense: str | None = None  # "cw", "ccw" or "either"
    side: str | None = None  # "left" or "right"
    facing: str | None = None  # "toward", "away", "same", "opposite", "perpendicular"
    horizontal: float | None = None  # compound rotation components
    vertical: float | None = None
    operations: tuple[str, ...] = ()  # canonical orientation, in order
    frontal: bool = False  # the frontal / canonical / no-change answer

    @property
    def angle(self) -> float | None:
        return None if self.lo is None or self.hi is None else (self.lo + self.hi) / 2

    @property
    def is_single_angle(self) -> bool:
        return self.lo is not None and self.lo == self.hi

    @property
    def is_range(self) -> bool:
        return self.lo is not None and self.hi is not None and self.lo < self.hi


_NUM = r"(\d+(?:\.\d+)?)"
_UNIT = r"(?:\s*(?:°|º|-?\s?degrees?\b|deg\b))"
_RANGE = re.compile(rf"{_NUM}{_UNIT}?\s*(?:to|-|–|—)\s*{_NUM}{_UNIT}?", re.IGNORECASE)
_ANGLE = re.compile(rf"{_NUM}{_UNIT}", re.IGNORECASE)
_UNDETERMINED = re.compile(
    r"\b(?:cannot|can't|can ?not|unable to)\s+(?:be\s+)?determin|not\s+(?:visible|clear)\s+enough|\bundetermin|"
    r"\bindeterminate\b|\bunknown\b",
    re.IGNORECASE,
)
_CCW = re.compile(r"counter[\s-]?clockwise|anti[\s-]?clockwise|\bccw\b", re.IGNORECASE)
_CW = re.compile(r"clockwise|\bcw\b", re.IGNORECASE)
_EITHER = re.compile(r"either direction|both directions", re.IGNORECASE)
_LEFT = re.compile(r"\bleft(?:ward)?\b", re.IGNORECASE)
_RIGHT = re.compile(r"\bright(?:ward)?\b", re.IGNORECASE)
_TOWARD = re.compile(r"\btowards?\s+the\s+camera|\bfacing\s+(?:the\s+)?camera|\bdirectly\s+facing\b", re.IGNORECASE)
_AWAY = re.compile(r"\baway\b", re.IGNORECASE)
_NO_CHANGE = re.compile(
    r"\bno\s+(?:change|rotation|transformation)\b|\bnot\s+rotated\b|\balready\b|"
    r"\byes\b.*\bcanonical\b|^\s*(?:is\s+)?in\s+(?:its|the)\s+canonical",
    re.IGNORECASE,
)
_SAME = re.compile(r"\bsame\s+direction", re.IGNORECASE)
_OPPOSITE = re.compile(r"\bopposite\s+direction", re.IGNORECASE)
_PERPENDICULAR = re.compile(r"\bperpendicular\b|\bsideways\b", re.IGNORECASE)
_PARTIAL = re.compile(r"\bpartial", re.IGNORECASE)
_COMPONENT = {
    axis: re.compile(rf"{_NUM}{_UNIT}?\s*(?:of\s+)?{axis}|{axis}\w*\s*(?:rotation)?\s*(?:of|:|by)?\s*{_NUM}", re.I)
    for axis in ("horizontal", "vertical")
}
_STEP_SPLIT = re.compile(r"\s*(?:,?\s*\bthen\b|\bfollowed by\b|;|,|\band\b)\s*", re.IGNORECASE)
_FLIP = re.compile(r"\b(?:flip\w*|mirror\w*)\b", re.IGNORECASE)
_ROTATE = re.compile(r"\brotat\w*\b|\bturn\w*\b", re.IGNORECASE)


def _sense(text: str) -> str | None:
    if _EITHER.search(text):
        return "either"
    if _CCW.search(text):
        return "ccw"
    if _CW.search(text):
        return "cw"
    return None


def _angles(text: str) -> tuple[float | None, float | None]:
    m = _RANGE.search(text)
    if m:
        lo, hi = sorted((float(m.group(1)), float(m.group(2))))
        return lo, hi
    m = _ANGLE.search(text)
    if m:
        value = float(m.group(1))
        return value, value
    return None, None


def _operations(text: str) -> tuple[str, ...]:
    ops = []
    for step in _STEP_SPLIT.split(text):
        if _FLIP.search(step):
            axis = (
                "horizontal"
                if re.search(r"horizontal", step, re.I)
                else "vertical"
                if re.search(r"vertical", step, re.I)
                else ""
            )
            ops.append(f"flip {axis}".strip())
        elif _ROTATE.search(step):
            lo, _ = _angles(step)
            angle = "" if lo is None else f" {lo:g}"
            sense = _sense(step)
            ops.append(f"rotate{angle}{'' if sense is None else ' ' + sense}")
    return tuple(ops)


def parse_option(text: Any) -> Meaning:
    """The meaning of one option text. Total: any input gives a Meaning (maybe empty)."""
    text = "" if text is None else str(text)
    if _UNDETERMINED.search(text):
        return Meaning(text=text, undetermined=True)
    lo, hi = _angles(text)
    if re.search(r"\bno\s+rotation\b", text, re.I) and lo is None:
        lo = hi = 0.0
    horizontal = _component(text, "horizontal")
    vertical = _component(text, "vertical")
    if horizontal is not None or vertical is not None:
        lo = hi = None  # the angles belong to the components
    side = None
    if _LEFT.search(text) and not _RIGHT.search(text):
        side = "left"
    elif _RIGHT.search(text) and not _LEFT.search(text):
        side = "right"
    facing = None
    if _PERPENDICULAR.search(text):
        facing = "perpendicular"
    elif _OPPOSITE.search(text):
        facing = "partially_opposite" if _PARTIAL.search(text) else "opposite"
    elif _SAME.search(text):
        facing = "partially_same" if _PARTIAL.search(text) else "same"
    elif _AWAY.search(text):
        facing = "away"
    elif _TOWARD.search(text):
        facing = "toward"
    operations = _operations(text) if (_FLIP.search(text) or _ROTATE.search(text)) else ()
    frontal = bool(
        facing == "toward"
        or _NO_CHANGE.search(text)
        or (lo is not None and hi is not None and hi <= 15 and side is None and _sense(text) is None)
    )
    return Meaning(
        text=text,
        lo=lo,
        hi=hi,
        sense=_sense(text),
        side=side,
        facing=facing,
        horizontal=horizontal,
        vertical=vertical,
        operations=operations,
        frontal=frontal,
    )


def _component(text: str, axis: str) -> float | None:
    m = _COMPONENT[axis].search(text)
    if not m:
        return None
    value = m.group(1) if m.group(1) is not None else m.group(2)
    return float(value)


def compound_order(text: str) -> tuple[str, ...]:
    """Axes in the order an option names them ("90 Horizontal then 0 Vertical" -> h, v)."""
    found = sorted((m.start(), axis) for axis in ("horizontal", "vertical") for m in re.finditer(axis, text, re.I))
    order: list[str] = []
    for _, axis in found:
        if axis not in order:
            order.append(axis)
    return tuple(order)


# ---------------------------------------------------------------------------------------
# soft accuracy (App. L)
# ---------------------------------------------------------------------------------------


def _circular_difference(a: float, b: float) -> float:
    d = abs(a - b) % 360
    return min(d, 360 - d)


def _hemisphere(angle: float) -> int:
    """+1 front half (cos > 0), -1 back half, 0 exactly perpendicular."""
    c = math.cos(math.radians(angle))
    return 0 if abs(c) < 1e-9 else (1 if c > 0 else -1)


def _soft_view_parallelism(truth: Meaning, pred: Meaning, _all: Sequence[Meaning]) -> bool:
    if truth.angle is None or pred.angle is None:
        return False
    return 0 < abs(truth.angle - pred.angle) <= 45


def _soft_directional_facing(truth: Meaning, pred: Meaning, _all: Sequence[Meaning]) -> bool:
    return (
        {truth.side, pred.side} == {"left", "right"}
        and truth.is_single_angle
        and pred.is_single_angle
        and truth.lo == pred.lo == 30
    )


def _soft_single_axis(truth: Meaning, pred: Meaning, _all: Sequence[Meaning]) -> bool:
    if not (truth.is_single_angle and pred.is_single_angle):
        return False
    step = _circular_difference(truth.lo, pred.lo)
    return step == 45 and _hemisphere(truth.lo) == _hemisphere(pred.lo) != 0


def _soft_compound(truth: Meaning, pred: Meaning, _all: Sequence[Meaning]) -> bool:
    if None in (truth.horizontal, truth.vertical, pred.horizontal, pred.vertical):
        return False
    return truth.horizontal == pred.horizontal or truth.vertical == pred.vertical


def _adjacent_ranges(a: Meaning, b: Meaning, options: Sequence[Meaning]) -> bool:
    """Consecutive among the distinct magnitude ranges the question offers."""
    magnitudes = sorted({(m.lo, m.hi) for m in options if m.lo is not None and m.hi is not None})
    try:
        i, j = magnitudes.index((a.lo, a.hi)), magnitudes.index((b.lo, b.hi))
    except ValueError:
        return False
    return abs(i - j) == 1


def _same_sense(a: Meaning, b: Meaning) -> bool:
    if a.sense is None or b.sense is None:
        return False
    return a.sense == b.sense or "either" in (a.sense, b.sense)


def _soft_inter_object(truth: Meaning, pred: Meaning, options: Sequence[Meaning]) -> bool:
    return _same_sense(truth, pred) and _adjacent_ranges(truth, pred, options)


def _soft_viewer_scene(truth: Meaning, pred: Meaning, _all: Sequence[Meaning]) -> bool:
    if not (truth.is_single_angle and pred.is_single_angle):
        return False
    return truth.lo != pred.lo and (360 - truth.lo) % 360 == pred.lo % 360


def _soft_canonical(truth: Meaning, pred: Meaning, _all: Sequence[Meaning]) -> bool:
    return (
        len(truth.operations) >= 2
        and truth.operations != pred.operations
        and sorted(truth.operations) == sorted(pred.operations)
    )


SOFT_RULES = {
    "view_parallelism": _soft_view_parallelism,
    "directional_facing": _soft_directional_facing,
    "single_axis_rotation": _soft_single_axis,
    "compound_rotation": _soft_compound,
    "inter_object_direction": _soft_inter_object,
    "viewer_scene_direction": _soft_viewer_scene,
    "canonical_orientation": _soft_canonical,
}


def letter_index(letter: Any, n_options: int) -> int | None:
    if not isinstance(letter, str) or len(letter.strip()) != 1:
        return None
    i = LETTERS.find(letter.strip().upper())
    return i if 0 <= i < n_options else None


def soft_score(task: str, options: Sequence[str], answer: str, predicted: str | None) -> tuple[float, str]:
    """(score, reason) for one granular answer: 1 exact, 0.5 by the task's App. L rule, else 0."""
    if predicted is None:
        return 0.0, "unparsed"
    if predicted == answer:
        return 1.0, "exact"
    i, j = letter_index(answer, len(options)), letter_index(predicted, len(options))
    if i is None or j is None:
        return 0.0, "letter_out_of_range"
    meanings = [parse_option(o) for o in options]
    truth, pred = meanings[i], meanings[j]
    if truth.undetermined or pred.undetermined:
        return 0.0, "no_partial_credit:undetermined"
    if SOFT_RULES[task](truth, pred, meanings):
        return 0.5, f"partial:{task}"
    return 0.0, "no_partial_credit"


# ---------------------------------------------------------------------------------------
# error patterns (Table 10)
# ---------------------------------------------------------------------------------------


def _is_parallel_range(m: Meaning) -> bool:
    return m.is_range and m.hi <= 20 and m.sense is None


def _is_perpendicular_range(m: Meaning) -> bool:
    return m.is_range and m.lo >= 45 and m.lo <= 90 <= m.hi <= 135 and m.sense is None


def _perpendicular(truth: Meaning, pred: Meaning) -> bool:
    pairs = (
        (_is_parallel_range(truth), _is_perpendicular_range(pred)),
        (_is_perpendicular_range(truth), _is_parallel_range(pred)),
    )
    if any(a and b for a, b in pairs):
        return True
    words = {truth.facing, pred.facing}
    return "perpendicular" in words and bool(words & {"toward", "away"})


_OPPOSITES = [{"toward", "away"}, {"same", "opposite"}, {"partially_same", "partially_opposite"}]


def _reversal(truth: Meaning, pred: Meaning) -> bool:
    if {truth.side, pred.side} == {"left", "right"} and (truth.lo == pred.lo):
        return True
    if {truth.sense, pred.sense} == {"cw", "ccw"} and (truth.lo, truth.hi) == (pred.lo, pred.hi):
        return True
    return {truth.facing, pred.facing} in _OPPOSITES


def _rotational_symmetry(truth: Meaning, pred: Meaning) -> bool:
    if not (truth.is_single_angle and pred.is_single_angle) or truth.lo == pred.lo:
        return False
    same_frame = truth.sense == pred.sense and truth.side is None and pred.side is None
    return truth.lo % 90 == 0 and pred.lo % 90 == 0 and same_frame


def _compression(truth: Meaning, pred: Meaning) -> bool:
    if truth.angle is None or pred.angle is None or truth.sense != pred.sense:
        return False
    return 0 < pred.angle < truth.angle


def error_pattern(truth: str, predicted: str | None) -> str:
    """The Table 10 pattern of one confusion "truth -> predicted" (option texts; None = unparsed)."""
    if predicted is None:
        return "uncertainty_cascade"
    t, p = parse_option(truth), parse_option(predicted)
    if p.undetermined and not t.undetermined:
        return "uncertainty_cascade"
    if _perpendicular(t, p):
        return "perpendicular_confusion"
    if _reversal(t, p):
        return "directional_reversal"
    if p.frontal and not t.frontal:
        return "frontal_bias"
    if _rotational_symmetry(t, p):
        return "rotational_symmetry_confusion"
    if _compression(t, p):
        return "angle_compression"
    return "other"


def _option_text(record: Mapping[str, Any], letter: str | None) -> str | None:
    if letter is None:
        return None
    i = letter_index(letter, len(record["options"]))
    return None if i is None else str(record["options"][i])


def confusion_patterns(records: Iterable[Mapping[str, Any]], threshold: float = 0.05) -> list[dict[str, Any]]:
    """Systematic confusions: "truth -> predicted" pairs above ``threshold`` of a question type's errors.

    Records are DORI score records (``task``, ``granularity``, ``options``, ``answer``,
    ``parsed``, ``score``). Pairs are keyed by option *text*, so runs with shuffled options
    pool correctly; an unparsed prediction is the paper's ``UNKNOWN``. Sorted by question
    type, then share (largest first), then text - a deterministic order.
    """
    errors: dict[str, dict[tuple[str, str], int]] = {}
    totals: dict[str, int] = {}
    for r in records:
        if r["score"] >= 1:
            continue
        qt = question_type(r["task"], r["granularity"])
        truth = _option_text(r, r["answer"]) or str(r["answer"])
        pred = _option_text(r, r["parsed"])
        key = (truth, UNKNOWN if pred is None else pred)
        errors.setdefault(qt, {})[key] = errors.get(qt, {}).get(key, 0) + 1
        totals[qt] = totals.get(qt, 0) + 1
    rows = []
    for qt, pairs in errors.items():
        for (truth, pred), count in pairs.items():
            share = count / totals[qt]
            if share > threshold:
                rows.append(
                    {
                        "question_type": qt,
                        "truth": truth,
                        "predicted": pred,
                        "count": count,
                        "errors": totals[qt],
                        "share_of_errors": share,
                        "pattern": error_pattern(truth, None if pred == UNKNOWN else pred),
                    }
                )
    return sorted(rows, key=lambda r: (r["question_type"], -r["share_of_errors"], r["truth"], r["predicted"]))


# ---------------------------------------------------------------------------------------
# compound rotation decomposition (Table 11)
# ---------------------------------------------------------------------------------------


def compound_decomposition(records: Iterable[Mapping[str, Any]]) -> dict[str, float | int]:
    """Order swap, horizontal / vertical component accuracy and both-wrong, in % of answers.

    Over granular compound-rotation records whose true option has both components; an
    unparsed or "Cannot be determined" prediction has both components wrong. Order swap:
    the two angles exchanged between the axes (truth "90 H then 180 V", predicted "180 H
    then 90 V"); it is also counted in both-wrong, as the paper's rows (summing past 100)
    suggest.
    """
    n = swap = horizontal = vertical = both_wrong = 0
    for r in records:
        if r["task"] != "compound_rotation" or r["granularity"] != "granular":
            continue
        truth = parse_option(_option_text(r, r["answer"]))
        if truth.horizontal is None or truth.vertical is None:
            continue
        pred_text = _option_text(r, r["parsed"])
        pred = parse_option(pred_text) if pred_text is not None else Meaning(text="")
        n += 1
        h_ok, v_ok = pred.horizontal == truth.horizontal, pred.vertical == truth.vertical
        horizontal += h_ok
        vertical += v_ok
        both_wrong += not h_ok and not v_ok
        swap += (
            truth.horizontal != truth.vertical
            and pred.horizontal == truth.vertical
            and pred.vertical == truth.horizontal
        )
    pct = (lambda k: 100.0 * k / n) if n else (lambda k: float("nan"))
    return {
        "n": n,
        "order_swap": pct(swap),
        "horizontal_accuracy": pct(horizontal),
        "vertical_accuracy": pct(vertical),
        "both_wrong": pct(both_wrong),
    }


# ---------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------


def table2(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Table 2 layout from score records: per question type, dimension and granularity.

    ``accuracy[task][granularity]`` (micro average within a question type), ``soft`` for
    granular types, ``average[granularity]`` the unweighted mean over the question types
    present (the paper's Avg. columns: Random 25.7 / 16.5 is the mean of its 7 cells),
    ``dimension[dim][granularity]`` the unweighted mean of the dimension's question types,
    plus ``unparsed_rate``, ``chance_level`` and ``n`` per question type. Values in [0, 1].
    """
    by_type = agg.group_by(list(records), lambda r: (r["task"], r["granularity"]))
    acc: dict[str, dict[str, float]] = {}
    soft: dict[str, float] = {}
    unparsed: dict[str, float] = {}
    chance: dict[str, float] = {}
    n: dict[str, int] = {}
    for (task, gran), rs in by_type.items():
        qt = question_type(task, gran)
        acc.setdefault(task, {})[gran] = agg.accuracy(rs)
        if gran == "granular" and all("soft_score" in r for r in rs):
            soft[task] = agg.accuracy(rs, "soft_score")
        unparsed[qt] = agg.unparsed_rate(rs)
        chance[qt] = agg.mean(1.0 / len(r["options"]) for r in rs)
        n[qt] = len(rs)
    average = {gran: agg.mean(acc[t][gran] for t in TASKS if gran in acc.get(t, {})) for gran in GRANULARITIES}
    dimension = {
        dim: {gran: agg.mean(acc[t][gran] for t in tasks if gran in acc.get(t, {})) for gran in GRANULARITIES}
        for dim, tasks in DIMENSIONS.items()
    }
    chance_average = {
        gran: agg.mean(v for qt, v in chance.items() if qt.endswith(f"_{gran}")) for gran in GRANULARITIES
    }
    return {
        "accuracy": acc,
        "soft": soft,
        "soft_average": agg.mean(soft.values()),
        "average": average,
        "dimension": dimension,
        "unparsed_rate": unparsed,
        "chance_level": chance,
        "chance_average": chance_average,
        "n": n,
    }
