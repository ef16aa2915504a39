"""Small hand-made lmms-eval outputs (results + samples files) for the report tests."""

from __future__ import annotations

import json
import math
from pathlib import Path

from lmms_spatial.metrics.mmsi import CATEGORIES
from lmms_spatial.metrics.odi_bench import TASKS as ODI_TASKS

FALLBACK = "none (rule-based fallback)"  # the judge name of the rule-based fallback's verdicts


def _metric(values: dict[str, float]) -> dict[str, float]:
    return {f"{k},none": v for k, v in values.items()}


def _verdict(task: str, i: int, score: float | str | None, judge: str) -> dict:
    """An odi_bench_open score record: a verdict of ``judge``, ``None`` a judge failure, ``"unparsed"`` a
    verdict the judge wrote outside the rubric (scored 0, as runs before issue 33 did)."""
    rec = {"id": f"{task}-{i}", "task": task, "answer_text": "x"}
    if score is None:
        return {**rec, "failed": True, "reason": "judge_failed:JudgeNotConfiguredError: no judge", "judge": None}
    unparsed = score == "unparsed"
    return {**rec, "failed": False, "score": 0.0 if unparsed else float(score),
            "reason": "judge_unparsed" if unparsed else "verdict", "judge": judge, "rubric": "odi_open",
            "rubric_version": "1.0", "fallback": judge == FALLBACK}  # fmt: skip


def write_run(folder: Path, stamp: str, model_args: str, odi_scores: dict[str, list[float]],
              mmsi_scores: list[float] | None, odi_options: dict[str, str] | None = None, *, model: str = "replay",
              of: int | None = None, limit: int | None = None, open_scores: dict[str, list] | None = None,
              judge: str = "gpt-4o-judge", config: dict | None = None) -> Path:  # fmt: skip
    """An ODI-Bench close-ended run (per-task scores) and an mmsi_vanilla run (one question per category);
    ``odi_options``: the run options the ODI records carry (none recorded when None); ``of``: documents in
    each ODI task's split (a partial run when more than its scores; default: as many as the scores);
    ``open_scores``: odi_bench_open per-task verdicts by ``judge`` (see :func:`_verdict`)."""
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    n_samples: dict[str, dict] = {}
    for task, scores in odi_scores.items():
        name = f"odi_bench_close_{task}"
        n_options = 2 if task == "existence" else 4
        lines = []
        for i, s in enumerate(scores):
            rec = {"id": f"{task}-{i}", "task": task, "score": s, "parsed": None if i == 0 and s == 0 else "A",
                   "n_options": n_options}  # fmt: skip
            if odi_options is not None:
                rec["run_options"] = odi_options
            lines.append({"doc_id": i, "accuracy": rec, "unparsed_rate": rec, "chance_level": rec})
        (folder / f"{stamp}_samples_{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        unparsed = sum(1 for x in lines if x["accuracy"]["parsed"] is None) / len(lines)
        results[name] = _metric({"accuracy": sum(scores) / len(scores), "unparsed_rate": unparsed,
                                 "chance_level": 1 / n_options})  # fmt: skip
        n_samples[name] = {"original": of or len(scores), "effective": len(scores)}
    for task, verdicts in (open_scores or {}).items():
        name = f"odi_bench_open_{task}"
        records = [_verdict(task, i, v, judge) for i, v in enumerate(verdicts)]
        lines = [
            {"doc_id": i, "judge_score": r, "judge_failures": r, "judge_unparsed": r} for i, r in enumerate(records)
        ]
        (folder / f"{stamp}_samples_{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        scored = [r for r in records if not r["failed"]]
        results[name] = _metric({
            "judge_score": sum(r["score"] for r in scored) / len(scored) if scored else math.nan,
            "judge_failures": len(records) - len(scored),
            "judge_unparsed": sum(r["reason"] == "judge_unparsed" for r in scored),
            "judge_fallback_share": sum(r["fallback"] for r in scored) / len(scored) if scored else math.nan,
        })  # fmt: skip
        n_samples[name] = {"original": of or len(verdicts), "effective": len(verdicts)}
    if mmsi_scores is not None:
        lines = []
        for i, (cat, s) in enumerate(zip(CATEGORIES, mmsi_scores, strict=True)):
            rec = {"id": i, "category": cat, "score": s, "parsed": "A", "n_options": 4}
            lines.append({"doc_id": i, "accuracy": rec, cat: rec})
        (folder / f"{stamp}_samples_mmsi_vanilla.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        values = {"accuracy": sum(mmsi_scores) / len(mmsi_scores), "unparsed_rate": 0.0, "chance_level": 0.25}
        values.update({c: s for c, s in zip(CATEGORIES, mmsi_scores, strict=True)})
        results["mmsi_vanilla"] = _metric(values)
        n_samples["mmsi_vanilla"] = {"original": len(mmsi_scores), "effective": len(mmsi_scores)}
    data = {"results": results, "n-samples": n_samples,
            "config": {"model": model, "model_args": model_args, "limit": limit, **(config or {})}}  # fmt: skip
    path = folder / f"{stamp}_results.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def odi_scores(shift: int) -> dict[str, list[float]]:
    """Deterministic 0/1 scores, 4 questions per task; ``shift`` changes which are right."""
    return {t: [float((i + j + shift) % 3 == 0) for i in range(4)] for j, t in enumerate(ODI_TASKS)}


def mmsi_scores(shift: int) -> list[float]:
    return [float((i + shift) % 2 == 0) for i in range(len(CATEGORIES))]


def open_verdicts(shift: int) -> dict[str, list[float]]:
    """Judge scores 0 / 0.5 / 1, 4 answers per ODI task; ``shift`` changes them."""
    return {t: [((i + j + shift) % 3) / 2 for i in range(4)] for j, t in enumerate(ODI_TASKS)}


def _qa_line(i: int, skill: str, score: float, parsed: object, with_map: bool) -> dict:
    """An osr_qa_* samples line as the adapter logs it: the record under accuracy, per-line rates beside it."""
    rec = {"score": score, "parsed": parsed, "id": f"s:{i}", "skill": skill}
    if with_map:
        rec["stage_outputs"] = {"osr_cogmap": None}  # no map stage ran: the question was asked without a map
    line = {"doc_id": i, "accuracy": rec, "overall": rec, skill: score, "unparsed_rate": float(parsed is None)}
    if skill != "object_counting":
        line["chance_level"] = 0.25 if skill == "relative_distance" else 0.125
    return line


# (skill, score, parsed): counting 0.5; distance right; direction wrong and unparsed; direction right
OSR_QA = [("object_counting", 0.5, 3), ("relative_distance", 1.0, "sofa"), ("relative_direction", 0.0, None),
          ("relative_direction", 1.0, "left")]  # fmt: skip


def write_osr_run(folder: Path, stamp: str, model_args: str, *, model: str = "qwen2_5_vl") -> Path:
    """OSR-Bench QA with and without the map (the model drew no map: ``stage_outputs`` null) and negative
    sampling: two maps, the first unparsed (CHAIR_S 0 by the official rule), the second CHAIR_S 0.5."""
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    n_samples: dict[str, dict] = {}
    for task, with_map in (("osr_qa_cogmap_standard_vanilla", True), ("osr_qa_standard_vanilla", False),
                           ("osr_qa_negative_vanilla", False)):  # fmt: skip
        lines = [_qa_line(i, *qa, with_map) for i, qa in enumerate(OSR_QA)]
        (folder / f"{stamp}_samples_{task}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        values = {"accuracy": 2.5 / 4, "object_counting": 0.5, "relative_distance": 1.0, "relative_direction": 0.5}
        results[task] = _metric({**values, "unparsed_rate": 0.25, "chance_level": 0.5 / 3})
        n_samples[task] = {"original": 4, "effective": 4}
    maps = [{"format_ok": False, "chair_s": 0.0, "score": 0.0, "reason": "unparsed:no_json_object", "parsed": None},
            {"format_ok": True, "chair_s": 0.5, "score": 0.6, "reason": "json_object", "parsed": "map"}]  # fmt: skip
    lines = [{"doc_id": i, "cogmap_f1": m, "chair_s": m["chair_s"], "unparsed_rate": float(not m["format_ok"])}
             for i, m in enumerate(maps)]  # fmt: skip
    (folder / f"{stamp}_samples_osr_cogmap_negative.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    results["osr_cogmap_negative"] = _metric({"cogmap_f1": 0.3, "chair_s": 0.25, "unparsed_rate": 0.5,
                                              "format_success_rate": 0.5})  # fmt: skip
    n_samples["osr_cogmap_negative"] = {"original": 2, "effective": 2}
    data = {"results": results, "n-samples": n_samples, "config": {"model": model, "model_args": model_args}}
    path = folder / f"{stamp}_results.json"
    path.write_text(json.dumps(data, indent=1))
    return path
