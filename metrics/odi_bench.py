"""ODI-Bench scoring rules and report layout (seed 000, Tables 2, 3, 8; App. D.1.3).

Ten tasks, two levels (the paper's column order)::

    General: object_attribute (OA), human_attribute (HA), existence (Exist.), counting (Count.), ocr (OCR)
    Spatial: egocentric_view_orientation (EVO), allocentric_view_orientation (AVO),
             scene_simulation (SS), relative_direction (RD), odi_reasoning (OR)

Every task is asked in two settings:

* **close-ended**: multiple choice (existence: yes/no); score 1 when the parsed letter /
  Yes-No equals the answer, else 0 (unparsed = 0, counted in ``unparsed_rate``);
* **open-ended**: the LLM judge's 0 / 0.5 / 1 with the ``odi_open`` rubric
  (:mod:`lmms_spatial.metrics.rubrics.odi_open`).

Aggregates (what Tables 2 / 3 report):

* per task: mean score over its questions;
* **General**, **Spatial** and **Overall**: means over *questions* (every question counts
  once), not means of task scores. Checked against the paper: with the per-task question
  counts its Table 2 implies (:data:`PAPER_QUESTION_COUNTS`: General 2,017, Spatial 2,237,
  4,254 in all) the question-weighted mean reproduces every model's Overall (GPT-4o 55.79,
  o3 62.62, ...) and the Random row's 26.93 (the mean of the 10 task scores gives 63.22 for o3
  and 29.10 for Random); recomputed from Table 2's task scores, Gemini-2.0-flash's General /
  Spatial are 70.50 / 45.05 per question (Table 5 prints 70.49 / 45.05) against 68.29 / 47.27
  per task, and every row of Table 5 satisfies Overall = (2017 General + 2237 Spatial) / 4254
  within 0.015 (docs/faithfulness.md).

Open-ended judge failures (judge unreachable or not configured) are *not* scored: such a
record carries ``failed=True`` and a ``reason``, has no ``score``, is left out of every mean
and is counted in ``judge_failures``. A run therefore never turns an outage into zeros;
re-running (``--model replay`` on the samples files) fills the gaps from the judge cache.
A judge reply that cannot be parsed (reason ``judge_unparsed``, after the judge layer's re-asks)
is a fault of the judge, not a 0 of the model: it has no ``score`` either, is left out of every
mean and is counted in ``judge_unparsed`` (NaN when no verdict could be read).

Option anchoring (App. D.1.3): for one model run in both settings, the share of questions
answered right open-ended but wrong close-ended ("option anchoring bias") and the reverse,
computed from the two runs' samples files (:func:`option_anchoring`; the command line is the benchmark's,
``tasks/odi_bench/anchoring.py``)::

    python -m lmms_spatial.tasks.odi_bench.anchoring anchoring CLOSE_RUN OPEN_RUN [--open-threshold 1] [--json a.json]

where each RUN is a samples ``.jsonl`` file or a folder searched for ``*_samples_odi_bench_*``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lmms_spatial.metrics.aggregation import mean

GENERAL_TASKS = ("object_attribute", "human_attribute", "existence", "counting", "ocr")
SPATIAL_TASKS = (
    "egocentric_view_orientation",
    "allocentric_view_orientation",
    "scene_simulation",
    "relative_direction",
    "odi_reasoning",
)
TASKS = GENERAL_TASKS + SPATIAL_TASKS
LEVELS = {"General": GENERAL_TASKS, "Spatial": SPATIAL_TASKS}

ABBREVIATIONS = {
    "object_attribute": "OA",
    "human_attribute": "HA",
    "existence": "Exist.",
    "counting": "Count.",
    "ocr": "OCR",
    "egocentric_view_orientation": "EVO",
    "allocentric_view_orientation": "AVO",
    "scene_simulation": "SS",
    "relative_direction": "RD",
    "odi_reasoning": "OR",
}

# Questions per task, read off Table 2: the best fit, not an exact one (185 of its 210 model cells are a
# whole number of right answers at these counts, the most any counts summing to the paper's 4,254 QA pairs
# allow; EVO fits 815 best, 814 next; docs/faithfulness.md names the 25 cells that fit none).
# Used by tests that recompute the paper's aggregates, never to weight a run's scores.
PAPER_QUESTION_COUNTS = {
    "object_attribute": 1220,
    "human_attribute": 304,
    "existence": 200,
    "counting": 172,
    "ocr": 121,
    "egocentric_view_orientation": 815,
    "allocentric_view_orientation": 477,
    "scene_simulation": 500,
    "relative_direction": 245,
    "odi_reasoning": 200,
}

# Tasks whose open-ended prompt asks for an orientation word (Fig. 12 / App. E.2): the
# direction-answer tasks, the same family the judge scores with the 45-degree rule.
ORIENTATION_TASKS = ("egocentric_view_orientation", "allocentric_view_orientation", "relative_direction")

YES_NO = ("Yes", "No")
SETTINGS = ("close", "open", "cot")


def normalise_task(name: str) -> str:
    """Canonical task key from a spelling such as "Object Attribute", "object-attribute" or "OA"."""
    key = "_".join(str(name).strip().lower().replace("-", " ").replace("_", " ").split())
    if key in TASKS:
        return key
    by_abbrev = {a.lower().rstrip("."): t for t, a in ABBREVIATIONS.items()}
    by_abbrev.update({"exist": "existence", "count": "counting", "odi_reason": "odi_reasoning"})
    found = by_abbrev.get(key.rstrip("."))
    if found is None:
        raise ValueError(f"unknown ODI-Bench task {name!r}; known: {', '.join(TASKS)}")
    return found


def level_of(task: str) -> str:
    return "General" if task in GENERAL_TASKS else "Spatial"


def is_yes_no(doc: Mapping[str, Any]) -> bool:
    """A yes/no question: no options and a Yes/No answer (the existence task)."""
    options = doc.get("options")
    return not options and str(doc.get("answer", "")).strip().capitalize() in YES_NO


# ---------------------------------------------------------------------------------------
# record aggregations (the task YAMLs' metric functions)
# ---------------------------------------------------------------------------------------


def scored(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Records that have a score (open-ended judge failures have none)."""
    return [r for r in records if not r.get("failed") and r.get("score") is not None]


def mean_score(records: Iterable[Mapping[str, Any]]) -> float:
    """Mean score of the scored records; NaN when none is scored."""
    return mean(float(r["score"]) for r in scored(records))


def count_where(records: Iterable[Mapping[str, Any]], key: str) -> int:
    return sum(1 for r in records if r.get(key))


def chance_of(record: Mapping[str, Any]) -> float:
    """Expected accuracy of a uniform guess for one close-ended question."""
    n = int(record.get("n_options") or 0)
    return 1.0 / n if n > 0 else 0.5


# ---------------------------------------------------------------------------------------
# report layout: Tables 2 / 3
# ---------------------------------------------------------------------------------------


def summarise(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per task, General, Spatial, Overall from score records (``task`` and ``score`` fields).

    The exact definitions of the module docstring: General, Spatial and Overall are means over
    the scored questions of their tasks (as the paper's). ``n`` counts scored records per task;
    ``failed`` the unscored ones.
    """
    records = list(records)
    per_task: dict[str, float] = {}
    counts: dict[str, int] = {}
    for task in TASKS:
        mine = [r for r in records if r.get("task") == task]
        counts[task] = len(scored(mine))
        if counts[task]:
            per_task[task] = mean_score(mine)
    summary: dict[str, Any] = {"tasks": per_task, "n": counts, "failed": len(records) - len(scored(records))}
    for level, tasks in LEVELS.items():
        summary[level] = mean_score([r for r in records if r.get("task") in tasks])
    summary["Overall"] = mean_score(records)
    return summary


def format_table(summary: Mapping[str, Any], label: str = "model", scale: float = 100.0) -> str:
    """One row in the paper's column order: Overall, then the 10 tasks (General, Spatial in between)."""
    header = ["", "Overall", "General", "Spatial", *(ABBREVIATIONS[t] for t in TASKS)]

    def cell(value: float | None) -> str:
        return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value * scale:.2f}"

    row = [label, cell(summary["Overall"]), cell(summary["General"]), cell(summary["Spatial"])]
    row += [cell(summary["tasks"].get(t)) for t in TASKS]
    return "| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n| " + " | ".join(row) + " |"


# ---------------------------------------------------------------------------------------
# option anchoring (App. D.1.3)
# ---------------------------------------------------------------------------------------


def option_anchoring(
    close_records: Iterable[Mapping[str, Any]],
    open_records: Iterable[Mapping[str, Any]],
    *,
    open_threshold: float = 1.0,
) -> dict[str, Any]:
    """Shares of questions right in one setting and wrong in the other, for one model.

    Questions are matched by ``id``. Close-ended right = score 1; open-ended right = judge
    score >= ``open_threshold`` (1.0: fully correct; 0.5 counts partial credit as right).
    Open-ended answers without a verdict (judge failures, unreadable verdicts) and questions present
    in only one run are left out (counted: ``open_failed``, ``only_close``, ``only_open``).

    ``open_right_close_wrong`` is the paper's "option anchoring bias" share;
    ``close_right_open_wrong`` the reverse ("options as a hint", App. D.1.2). Both are
    fractions of the matched questions, overall and per task.
    """
    close = {str(r["id"]): r for r in close_records if r.get("id") is not None}
    opened = {str(r["id"]): r for r in open_records if r.get("id") is not None}
    common = sorted(set(close) & set(opened))
    matched = [q for q in common if not opened[q].get("failed") and opened[q].get("score") is not None]

    def shares(ids: Sequence[str]) -> dict[str, Any]:
        oc = cc = both = neither = 0
        for q in ids:
            c_right = float(close[q]["score"]) >= 1.0
            o_right = float(opened[q]["score"]) >= open_threshold
            oc += o_right and not c_right
            cc += c_right and not o_right
            both += c_right and o_right
            neither += not c_right and not o_right
        n = len(ids)
        frac = (lambda k: k / n) if n else (lambda k: math.nan)
        return {
            "n": n,
            "open_right_close_wrong": frac(oc),
            "close_right_open_wrong": frac(cc),
            "both_right": frac(both),
            "both_wrong": frac(neither),
        }

    result = shares(matched)
    result["per_task"] = {}
    for task in TASKS:
        ids = [q for q in matched if close[q].get("task") == task]
        if ids:
            result["per_task"][task] = shares(ids)
    result["only_close"] = len(set(close) - set(opened))
    result["only_open"] = len(set(opened) - set(close))
    result["open_failed"] = len(common) - len(matched)
    result["open_threshold"] = open_threshold
    return result


def _samples_files(path: Path, setting: str) -> list[Path]:
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such samples file or folder")
    files = sorted(path.rglob(f"*_samples_odi_bench_{setting}_*.jsonl"))
    if not files:
        raise FileNotFoundError(f"{path}: no *_samples_odi_bench_{setting}_*.jsonl files")
    return files


def read_records(paths: Iterable[Path | str], metric: str) -> list[dict[str, Any]]:
    """The ``metric`` record of every sample in lmms-eval samples files (``accuracy`` / ``judge_score``)."""
    records: list[dict[str, Any]] = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)[metric]
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise ValueError(f"{path}:{line_no}: no {metric!r} record in this sample ({exc})") from exc
                if not isinstance(record, dict):
                    raise ValueError(f"{path}:{line_no}: {metric!r} is not a score record")
                records.append(record)
    return records


def anchoring_from_runs(close_run: Path | str, open_run: Path | str, open_threshold: float = 1.0) -> dict[str, Any]:
    """:func:`option_anchoring` from samples files (or run folders) of a close and an open run."""
    close = read_records(_samples_files(Path(close_run), "close"), "accuracy")
    opened = read_records(_samples_files(Path(open_run), "open"), "judge_score")
    return option_anchoring(close, opened, open_threshold=open_threshold)


def format_anchoring(result: Mapping[str, Any]) -> str:
    lines = [
        f"{'task':<30} {'n':>5} {'open right, close wrong':>24} {'close right, open wrong':>24}",
    ]

    def row(name: str, r: Mapping[str, Any]) -> str:
        oc, co = r["open_right_close_wrong"] * 100, r["close_right_open_wrong"] * 100
        return f"{name:<30} {r['n']:>5} {oc:>23.2f}% {co:>23.2f}%"

    for task, r in result["per_task"].items():
        lines.append(row(task, r))
    lines.append(row("all", result))
    lines.append(
        f"(open right = judge score >= {result['open_threshold']:g}; left out: {result['open_failed']} without a "
        f"verdict, {result['only_close']} only close-ended, {result['only_open']} only open-ended)"
    )
    return "\n".join(lines)
