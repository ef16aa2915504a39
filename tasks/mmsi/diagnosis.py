"""MMSI-Bench error diagnosis from a finished run: failure modes and "reasoning accuracy".

The paper's automated pipeline gives an LLM judge the question, the right answer, the human
reference reasoning (the dataset's ``thought``) and the model's reply, and labels the reply's
reasoning as correct or as one of four failure modes (rubric ``mmsi_diagnosis`` of the judge
layer). Nothing is re-generated: replies come from the run's samples files, questions and
reasoning chains from the dataset (``$LMMS_SPATIAL_MMSI_PATH`` or the Hub), matched by doc_id.

Reported: option accuracy (the run's own scores), reasoning accuracy (share of *diagnosed*
replies whose reasoning the judge calls correct; the paper finds it below option accuracy), the
share of each failure mode among diagnosed errors, and how many replies were not diagnosed
(``LMMS_SPATIAL_JUDGE=none`` diagnoses nothing: the rubric's fallback is ``undiagnosed``). With no judge
configured, or one that cannot be reached, the analysis still comes out: every reply the judge did not
diagnose is counted in ``judge_failures`` and reasoning accuracy is NaN, never 0.
Judge calls are cached by the judge layer, so re-running the analysis is free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lmms_spatial.metrics import aggregation as agg
from lmms_spatial.metrics.rubrics.mmsi_diagnosis import CORRECT, ERROR_TYPES, UNDIAGNOSED
from lmms_spatial.models.replay import _first_text

DIAGNOSED_TASKS = ("mmsi_vanilla", "mmsi_cot")


def reply_of(sample: Mapping[str, Any]) -> str:
    text = _first_text(sample["resps"]) if "resps" in sample else None
    return text if text is not None else (_first_text(sample.get("filtered_resps")) or "")


def diagnosis_items(samples: Sequence[Mapping[str, Any]], docs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Judge items (question, answer, thought, response) for the samples, docs indexed by doc_id."""
    items = []
    for sample in samples:
        doc = docs[int(sample["doc_id"])]
        items.append(
            {
                "question": doc["question"],
                "answer": doc["answer"],
                "thought": doc.get("thought") or "",
                "response": reply_of(sample),
            }
        )
    return items


def summarise(samples: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> dict[str, Any]:
    """Option accuracy, reasoning accuracy and failure-mode shares from per-sample diagnosis labels."""
    diagnosed = [label for label in labels if label != UNDIAGNOSED]
    errors = [label for label in diagnosed if label != CORRECT]
    return {
        "n": len(labels),
        "diagnosed": len(diagnosed),
        "undiagnosed": len(labels) - len(diagnosed),
        "option_accuracy": agg.mean(s["accuracy"]["score"] for s in samples),
        "reasoning_accuracy": agg.mean(1.0 if label == CORRECT else 0.0 for label in diagnosed),
        "failure_modes": {mode: (errors.count(mode) / len(errors) if errors else float("nan")) for mode in ERROR_TYPES},
        "errors": len(errors),
    }


def load_mmsi_docs():
    """The MMSI-Bench test split without images (question, answer, thought), as the tasks load it."""
    import datasets

    from lmms_spatial.data.sources import dataset_source

    source = dataset_source("mmsi")
    split = datasets.load_dataset(source.path, **source.kwargs)["test"]
    return split.select_columns([c for c in ("question", "answer", "thought") if c in split.column_names])


def diagnose(samples: Sequence[Mapping[str, Any]], docs: Sequence[Mapping[str, Any]], judge: Any = None) -> dict:
    """Diagnose every sample with the ``mmsi_diagnosis`` judge and summarise."""
    if judge is None:
        from lmms_spatial.judge import get_judge

        judge = get_judge("mmsi_diagnosis")
    from lmms_spatial.judge import JudgeError

    items = diagnosis_items(samples, docs)
    try:
        verdicts = judge.score_many(items, desc="MMSI error diagnosis")
    except JudgeError:  # not configured, or unreachable mid-way: item by item (cached verdicts still count)
        verdicts = []
        for item in items:
            try:
                verdicts.append(judge.score(item))
            except JudgeError:
                verdicts.append(None)
    summary = summarise(samples, [(v.label if v is not None else None) or UNDIAGNOSED for v in verdicts])
    summary["judge"] = sorted({v.judge for v in verdicts if v is not None})
    summary["judge_failures"] = sum(v is None for v in verdicts)
    return summary


def format_diagnosis(task: str, summary: Mapping[str, Any]) -> str:
    def pct(x: float) -> str:
        return "  -  " if x != x else f"{100 * x:5.1f}%"

    lines = [
        f"MMSI-Bench error diagnosis, {task} (judge: {', '.join(summary['judge']) or 'none'}): "
        f"{summary['diagnosed']} of {summary['n']} replies diagnosed"
        + (f", {summary['judge_failures']} judge failures" if summary.get("judge_failures") else ""),
        f"  option accuracy    {pct(summary['option_accuracy'])}",
        f"  reasoning accuracy {pct(summary['reasoning_accuracy'])}",
        f"  failure modes among {summary['errors']} diagnosed errors:",
    ]
    lines += [f"    {mode:<40} {pct(share)}" for mode, share in summary["failure_modes"].items()]
    return "\n".join(lines)
