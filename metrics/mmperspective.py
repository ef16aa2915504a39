"""MMPerspective scoring rules (seed 004, sec. 2.4 and Table 1/2). Pure functions, no I/O.

Accuracy (P'Percep, P'Reason)
    One accuracy per task. ``PAcc`` is the unweighted mean of the 4 perception tasks (VPP,
    CLP, VAP, LDP), ``RAcc`` the unweighted mean of the 5 reasoning tasks (PTR, LRR, OVR, PTS,
    VPC) and ``Overall`` the unweighted mean of all 9 task accuracies: NOT the mean of PAcc and
    RAcc (checked on Table 1: InternVL2.5-2B has PAcc 37.1, RAcc 38.1, Overall 37.7 =
    (4 * 37.125 + 5 * 38.12) / 9, while (37.1 + 38.1) / 2 = 37.6).

How lmms-eval 0.7.3 produces these numbers (read in ``evaluator_utils.consolidate_group_results``
and ``api.metrics.aggregate_subtask_metrics``)
    A group's ``aggregate_metric_list`` entry with ``weight_by_size: false`` is the plain mean of
    the metric over the group's *leaf* tasks: a nested group's list of tasks is extended with
    its subgroups' leaf tasks, so a parent never averages its subgroups' scores. Hence the YAMLs:
    ``mmperspective_perception`` (4 leaf tasks, ``accuracy`` = PAcc), ``mmperspective_reasoning``
    (5 leaf tasks, ``accuracy`` = RAcc) and ``mmperspective`` (both subgroups plus
    ``mmperspective_robust``; ``accuracy`` = mean over the 9 leaf tasks that report
    ``accuracy`` = Overall; the robust task reports no metric whose name contains "accuracy",
    because lmms-eval matches group metric names by substring). :func:`table_row` recomputes
    the Table 1 row from a results file and is what the end-to-end test checks the groups against.

Robustness (P'Robust)
    A seed item s has a set V_s of variants (the original image and its perturbed copies,
    rows sharing ``robust_group``). Binary = share of seeds answered correctly on EVERY
    variant; Graded = mean over seeds of the fraction of variants answered correctly
    (4 of 5 right: graded 0.8, binary 0). A group is *complete* when every variant it
    declares (``robust_variants``: the original plus each perturbation the dataset holds for
    that group) was answered; incomplete groups (e.g. cut by ``--limit``) are counted and
    reported, never scored.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from lmms_spatial.metrics.aggregation import mean

PERCEPTION_TASKS = ("VPP", "CLP", "VAP", "LDP")
REASONING_TASKS = ("PTR", "LRR", "OVR", "PTS", "VPC")
TASKS = PERCEPTION_TASKS + REASONING_TASKS
TASK_NAMES = {
    "VPP": "Vanishing Point Perception",
    "CLP": "Critical Line Perception",
    "VAP": "View Angle Perception",
    "LDP": "Lens Distortion Perception",
    "PTR": "Perspective Type Reasoning",
    "LRR": "Line Relationship Reasoning",
    "OVR": "Out-of-View Reasoning",
    "PTS": "Perspective Transformation Spotting",
    "VPC": "Vanishing Point Counting",
}
# number of images per question: PTS compares two images, every other task shows one
N_IMAGES = {task: (2 if task == "PTS" else 1) for task in TASKS}

ORIGINAL = "original"
PERTURBATIONS = (ORIGINAL, "crop", "flip", "mask", "rotate")


def normalise_task(name: Any) -> str | None:
    """ "vpp", " VPP " -> "VPP"; None when the name is not one of the 9 tasks."""
    text = str(name).strip().upper() if name is not None else ""
    return text if text in TASKS else None


def normalise_perturbation(name: Any) -> str | None:
    """ "Flip" -> "flip"; a missing/empty value is the original; None for unknown names."""
    text = "" if name is None else str(name).strip().lower()
    if not text:
        return ORIGINAL
    return text if text in PERTURBATIONS else None


# ---------------------------------------------------------------------------------------
# PAcc / RAcc / Overall
# ---------------------------------------------------------------------------------------


def table_scores(task_accuracy: Mapping[str, float]) -> dict[str, float]:
    """PAcc, RAcc, Overall from the 9 task accuracies (any scale: 0-1 or percent).

    Every task must be present: a mean over fewer tasks is not the paper's number.
    """
    missing = [t for t in TASKS if t not in task_accuracy]
    if missing:
        raise KeyError(f"MMPerspective scores need all 9 task accuracies; missing {missing}")
    return {
        "PAcc": mean(task_accuracy[t] for t in PERCEPTION_TASKS),
        "RAcc": mean(task_accuracy[t] for t in REASONING_TASKS),
        "Overall": mean(task_accuracy[t] for t in TASKS),
    }


# ---------------------------------------------------------------------------------------
# robustness
# ---------------------------------------------------------------------------------------


def _groups(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for r in records:
        key = str(r["robust_group"])
        group = groups.setdefault(key, {"expected": set(), "scores": {}})
        group["expected"].update(str(v) for v in r["robust_variants"])
        variant = str(r["perturbation"])
        group["expected"].add(variant)
        if variant in group["scores"]:
            raise ValueError(f"robust group {key!r} has two answers for variant {variant!r}")
        group["scores"][variant] = float(r["score"])
    return {k: groups[k] for k in sorted(groups)}


def robustness_summary(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Binary and Graded robustness (sec. 2.4, eq. 1-2) over complete groups.

    ``records`` hold ``robust_group``, ``perturbation``, ``robust_variants`` (the variants
    the group must have, original included) and ``score`` (1 right, 0 wrong/unparsed). A
    group is complete when every expected variant has a record; only complete groups are
    scored. NaN when no group is complete.
    """
    groups = _groups(records)
    complete = {k: g for k, g in groups.items() if g["expected"] and set(g["scores"]) >= g["expected"]}
    incomplete = sorted(set(groups) - set(complete))
    scored = {k: [g["scores"][v] for v in sorted(g["expected"])] for k, g in complete.items()}
    per_variant: dict[str, list[float]] = {}
    for g in complete.values():
        for v in g["expected"]:
            per_variant.setdefault(v, []).append(g["scores"][v])
    return {
        "binary": mean(1.0 if all(s == 1.0 for s in ss) else 0.0 for ss in scored.values()),
        "graded": mean(mean(ss) for ss in scored.values()),
        "complete_groups": len(complete),
        "incomplete_groups": len(incomplete),
        "incomplete_group_ids": incomplete,
        "per_variant": {v: mean(per_variant.get(v, [])) for v in PERTURBATIONS},
    }


# ---------------------------------------------------------------------------------------
# the Table 1 / Table 2 row from an lmms-eval results file
# ---------------------------------------------------------------------------------------


def _value(results: Mapping[str, Any], task: str, metric: str) -> float:
    try:
        return float(results["results"][task][f"{metric},none"])
    except KeyError:
        return math.nan


def table_row(results: Mapping[str, Any], prefix: str = "mmperspective") -> dict[str, float]:
    """The paper's row (9 tasks, PAcc, RAcc, Overall, Graded, Binary) from ``*_results.json``.

    ``prefix`` is ``mmperspective`` (Table 1) or ``mmperspective_cot`` (Table 2). Task
    accuracies come from the leaf tasks; PAcc/RAcc/Overall are recomputed from them with
    :func:`table_scores` (they equal the group rows lmms-eval writes).
    """
    row = {t: _value(results, f"{prefix}_{t.lower()}", "accuracy") for t in TASKS}
    row.update(table_scores(row))
    row["Graded"] = _value(results, f"{prefix}_robust", "graded_robustness")
    row["Binary"] = _value(results, f"{prefix}_robust", "binary_robustness")
    return row
