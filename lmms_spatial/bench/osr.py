"""OSR-Bench at full size: scoring from samples files (``osr_scoring``) and base-model calls per image (``osr_calls``).

* scoring: every metric of ``osr_cogmap_standard`` and ``osr_qa_standard_vanilla`` for 4,100 maps and
  153,312 QAs (the release's size), from a samples file written and read back, in one process;
* calls: ``--model staged`` over an instant counting model on ``osr_qa_cogmap_standard_vanilla``:
  one map per image plus the questions, not two calls per question.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from lmms_spatial.bench.lmms_eval_process import run_lmms_eval
from lmms_spatial.bench.measure import Timer, quiet_logs

OSR_BUDGET_S = 60.0  # seconds for every OSR metric at full size

_CLASSES = [f"class_{i}" for i in range(30)]


def _osr_map_case(rng: random.Random) -> tuple[list, str]:
    """A 10x10 ground-truth map (6-12 classes, 1-3 instances) and a noisy reply (5% prose).

    The reply moves 80% of the instances by up to 2 cells and adds 2 hallucinated classes."""
    grid = [[[] for _ in range(10)] for _ in range(10)]
    pred: dict[str, list[list[int]]] = {}
    for name in rng.sample(_CLASSES, rng.randint(6, 12)):
        for _ in range(rng.randint(1, 3)):
            r, c = rng.randrange(10), rng.randrange(10)
            grid[r][c].append(name)
            if rng.random() < 0.8:
                pred.setdefault(name, []).append(
                    [min(9, max(0, c + rng.randint(-2, 2))), min(9, max(0, r + rng.randint(-2, 2)))]
                )
    for name in rng.sample(_CLASSES, 2):
        pred.setdefault(name, []).append([rng.randrange(10), rng.randrange(10)])
    reply = "I cannot tell." if rng.random() < 0.05 else f"Here you go:\n```json\n{json.dumps(pred)}\n```"
    return grid, reply


def bench_osr_scoring(n_maps: int, n_questions: int, work: Path) -> dict[str, Any]:
    """Every metric of osr_cogmap_standard and osr_qa_standard_vanilla at the given size, from samples files."""
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_spatial.paths import tasks_dir

    quiet_logs()
    manager = TaskManager(include_defaults=False, include_path=tasks_dir(), verbosity="ERROR")
    names = ["osr_cogmap_standard", "osr_qa_standard_vanilla"]
    tasks = get_task_dict(names, manager)
    rng = random.Random(0)
    # documents: the fixture's rows as templates (real fields), maps replaced by synthetic 10x10 grids
    map_templates = [dict(d) for d in tasks[names[0]].test_docs().remove_columns("image")]
    qa_templates = [dict(d) for d in tasks[names[1]].test_docs().remove_columns("image")]
    map_docs, map_replies = [], []
    for i in range(n_maps):
        grid, reply = _osr_map_case(rng)
        map_docs.append({**map_templates[i % len(map_templates)], "id": f"map{i}", "cogmap": json.dumps(grid)})
        map_replies.append(reply)
    qa_docs, qa_replies = [], []
    for i in range(n_questions):
        doc = qa_templates[i % len(qa_templates)]
        qa_docs.append(doc)
        qa_replies.append(str(doc["answer"]) if i % 2 else "chair")
    files = {}
    for name, replies in ((names[0], map_replies), (names[1], qa_replies)):
        files[name] = work / f"samples_{name}.jsonl"
        with open(files[name], "w") as fh:
            for i, reply in enumerate(replies):
                fh.write(json.dumps({"doc_id": i, "resps": [[reply]]}) + "\n")
    result: dict[str, Any] = {"maps": n_maps, "questions": n_questions, "metrics": {}}
    total = 0.0
    for name, docs in ((names[0], map_docs), (names[1], qa_docs)):
        task = tasks[name]
        timer = Timer()
        with timer:
            with open(files[name]) as fh:
                replies = [json.loads(line)["resps"][0][0] for line in fh]
            per_metric: dict[str, list] = {}
            for doc, reply in zip(docs, replies, strict=True):
                for metric, value in task.process_results(doc, [reply]).items():
                    per_metric.setdefault(metric, []).append(value)
            functions = task.aggregation()
            metrics = {m: functions[m](v) for m, v in per_metric.items() if m in functions}
        result[f"{name}_s"] = round(timer.wall, 3)
        result[f"{name}_cpu_s"] = round(timer.cpu, 3)
        result["metrics"][name] = {k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()}
        total += timer.wall
    result["total_s"] = round(total, 3)
    return result


def bench_osr_calls(env: dict[str, str], work: Path) -> dict[str, Any]:
    import datasets

    task = "osr_qa_cogmap_standard_vanilla"
    log = work / "osr_calls.jsonl"
    log.unlink(missing_ok=True)
    results, wall, _rss, stderr = run_lmms_eval(
        ["--model", "staged", "--model_args", f"base=lmms_spatial.bench.counting.CountingChat,log={log}",
         "--tasks", task],
        env, work / "osr_calls",
    )  # fmt: skip
    if results is None:
        return {"error": f"lmms-eval wrote no results: {stderr}"}
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    folder = Path(env["LMMS_SPATIAL_OSR_PATH"]) / "standard"
    scenes = datasets.load_dataset("parquet", data_files=str(folder / "test.parquet"))["train"]["scene_id"]
    n_images, n_questions = len(set(scenes)), len(scenes)
    return {
        "task": task,
        "images": n_images,
        "questions": n_questions,
        "base_model_calls": len(calls),
        "calls_per_image": round(len(calls) / n_images, 3),
        "expected_calls_per_image": round(1 + n_questions / n_images, 3),
        "naive_calls_per_image": round(2 * n_questions / n_images, 3),
        "ok": len(calls) == n_images + n_questions,
        "wall_s": round(wall, 2),
    }
