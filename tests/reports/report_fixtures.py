"""Small hand-made lmms-eval outputs (results + samples files) for the report tests."""

from __future__ import annotations

import json
from pathlib import Path

from lmms_spatial.metrics.mmsi import CATEGORIES
from lmms_spatial.metrics.odi_bench import TASKS as ODI_TASKS


def _metric(values: dict[str, float]) -> dict[str, float]:
    return {f"{k},none": v for k, v in values.items()}


def write_run(folder: Path, stamp: str, model_args: str, odi_scores: dict[str, list[float]],
              mmsi_scores: list[float], odi_options: dict[str, str] | None = None) -> Path:  # fmt: skip
    """An ODI-Bench close-ended run (per-task scores) and an mmsi_vanilla run (one question per category);
    ``odi_options``: the run options the ODI records carry (none recorded when None)."""
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
        n_samples[name] = {"original": len(scores), "effective": len(scores)}
    lines = []
    for i, (cat, s) in enumerate(zip(CATEGORIES, mmsi_scores, strict=True)):
        rec = {"id": i, "category": cat, "score": s, "parsed": "A", "n_options": 4}
        lines.append({"doc_id": i, "accuracy": rec, cat: rec})
    (folder / f"{stamp}_samples_mmsi_vanilla.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    values = {"accuracy": sum(mmsi_scores) / len(mmsi_scores), "unparsed_rate": 0.0, "chance_level": 0.25}
    values.update({c: s for c, s in zip(CATEGORIES, mmsi_scores, strict=True)})
    results["mmsi_vanilla"] = _metric(values)
    n_samples["mmsi_vanilla"] = {"original": len(mmsi_scores), "effective": len(mmsi_scores)}
    data = {"results": results, "n-samples": n_samples, "config": {"model": "replay", "model_args": model_args}}
    path = folder / f"{stamp}_results.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def odi_scores(shift: int) -> dict[str, list[float]]:
    """Deterministic 0/1 scores, 4 questions per task; ``shift`` changes which are right."""
    return {t: [float((i + j + shift) % 3 == 0) for i in range(4)] for j, t in enumerate(ODI_TASKS)}


def mmsi_scores(shift: int) -> list[float]:
    return [float((i + shift) % 2 == 0) for i in range(len(CATEGORIES))]
