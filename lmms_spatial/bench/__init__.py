"""``lmms-spatial bench``: what our code costs per document, next to what the model costs.

One run, one machine, one JSON file (``--json``), so runs can be compared (``--compare A B``):

* **tasks**: for every task (default: every demo task, on the embedded fixture data; or the data the
  ``LMMS_SPATIAL_*_PATH`` variables name with ``--use-env-data``), in-process through lmms-eval's
  ``TaskManager``: dataset load (``get_task_dict``), then per document ``doc_to_visual`` (image decode
  / resize / projection), ``doc_to_text`` (prompt), ``doc_to_messages`` (what a chat model calls:
  prompt + images) and ``process_results`` on the target as reply (scoring), plus the task's
  aggregations. CPU seconds (``time.process_time``) and wall seconds; peak RSS (``ru_maxrss``).
  ``our_cpu_ms_per_doc`` = messages + scoring + aggregation/doc: what a chat-model run pays us per doc.
  Judged tasks use ``LMMS_SPATIAL_JUDGE=none`` (rule-based fallback) unless the variable is set; the
  judge's own cost is ``scripts/bench_judge.py``.
* **odi_decode**: a 12,000 × 6,000 JPEG ERP brought to the model's pixel budget: naive
  (``Image.open().convert("RGB").resize(BICUBIC)``) vs ours (:func:`lmms_spatial.data.erp_image.decode_erp`:
  JPEG draft-mode reduced decode, then ``reducing_gap`` resize); speed-up and image difference.
* **osr_scoring**: all metrics of the full OSR-Bench size (4,100 maps, 153,312 QAs) from a samples
  file (written, read back, ``process_results`` + every aggregation of ``osr_cogmap_standard`` and
  ``osr_qa_standard_vanilla``), single process.
* **osr_calls**: ``--model staged`` over an instant counting model on ``osr_qa_cogmap_standard_vanilla``:
  base-model calls per image (should be 1 map + questions, not 2 × questions).
* **end_to_end** (``--model``): lmms-eval as a subprocess on the tasks with ``--limit L``; wall
  seconds, docs/s, the child's peak RSS and our CPU ms/doc as a share of the model's ms/doc
  (``our_share_of_wall``: an upper bound, the wall time includes process start and model load).
  **Steady state** (``--steady``, on by default; needs ``--limit L``): two more runs, ``--limit 2L``
  and ``--limit L`` again (the first run warms the page cache, the datasets cache and the like, so
  both runs of the pair start warm); the marginal time per document
  ``marginal_ms_per_doc = (wall(2L) - wall(L)) / (docs(2L) - docs(L))`` (docs from
  ``n-samples.<task>.effective``) cancels start-up and model load; ``our_share_of_steady`` = our CPU
  ms/doc (weighted by each task's marginal documents) / ``marginal_ms_per_doc``, checked against
  5% in the summary. That budget is meant for a 7B model on one GPU: on CPU with a tiny model the
  flag is informative only. When every task has at most L documents (docs(2L) == docs(L)) or the
  wall time did not grow, the marginal is None and ``steady_reason`` says why. ``--no-steady``: the
  single run only.

``--image-size real``: before the phases, the demo data is copied with every image re-encoded at a
realistic size in its own format (OSR-Bench 1024 × 512, MMSI-Bench / DORI / MMPerspective
1280 × 960, ODI-Bench kept; :data:`lmms_spatial.bench.real_images.REAL_IMAGE_SIZES`, with mild
seeded noise so files and decode costs are photo-like) for every benchmark the run reads (the tasks'
benchmarks, and OSR-Bench for ``osr_calls`` / ``osr_scoring``), and every phase runs on that copy. The
JSON report's ``image_sizes`` says, per benchmark, the sizes, formats, mean file size and decode cost of
the images used (``--image-size demo``, the default: the embedded images, listed the same way).

``--tiny``: a few documents per task, small ODI image, 1/100 of OSR size: for CI (not timed).
"""

from __future__ import annotations

import argparse
import inspect
import io
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NON_ODI_BUDGET_MS = 20.0
ODI_MIN_SPEEDUP = 3.0
OSR_BUDGET_S = 60.0
# ODI decode tolerance: the reduced decode must match the naive output to within these
ODI_MAX_MEAN_ABS_DIFF = 2.0  # grey levels (0-255), mean over all pixels and channels
ODI_MIN_PSNR_DB = 30.0
QWEN_MAX_PIXELS = 1605632  # Qwen2.5-VL's default max_pixels in lmms-eval (2048 merged tokens)
STEADY_SHARE_BUDGET = 0.05  # our CPU per doc / the model's steady-state time per doc (7B model, one H100)
STEADY_NOTE = "budget for a 7B model on one GPU; with a tiny model or on CPU the flag is informative only"


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _Timer:
    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    def __enter__(self):
        self._c, self._w = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *_exc) -> None:
        self.cpu += time.process_time() - self._c
        self.wall += time.perf_counter() - self._w


# --- per-task CPU cost ---------------------------------------------------------------------


def _quiet_logs() -> None:
    try:
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level="ERROR")
    except ImportError:  # pragma: no cover
        pass


def bench_tasks(tasks: list[str], docs_per_task: int) -> dict[str, dict[str, Any]]:
    """Per task: load seconds, per-doc CPU/wall ms of each phase, peak RSS growth."""
    from lmms_eval.tasks import TaskManager, get_task_dict

    from lmms_spatial.paths import tasks_dir

    _quiet_logs()
    manager = TaskManager(include_defaults=False, include_path=tasks_dir(), verbosity="ERROR")
    out: dict[str, dict[str, Any]] = {}
    for name in tasks:
        rss0 = _peak_rss_mb()
        load = _Timer()
        with load:
            task = get_task_dict([name], manager)[name]
            docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
            n_docs = len(docs)
        phases = {p: _Timer() for p in ("row", "visual", "prompt", "messages", "score")}
        per_metric: dict[str, list] = {}
        n = max(1, docs_per_task)
        for i in range(n):
            with phases["row"]:  # datasets decodes Image() columns on row access, as the model's lookup does
                doc = docs[i % n_docs]
            with phases["visual"]:
                _load_pixels(task.doc_to_visual(doc))
            with phases["prompt"]:
                task.doc_to_text(doc)
            with phases["messages"]:  # pixels forced: lazily opened images would otherwise decode in the model
                _load_pixels(to_messages(task, doc))
            target = task.doc_to_target(doc)
            reply = target if isinstance(target, str) else json.dumps(target)
            with phases["score"]:
                scored = task.process_results(doc, [reply])
            if i < n_docs:  # aggregations see each document once (cycling would duplicate groups)
                for metric, value in scored.items():
                    per_metric.setdefault(metric, []).append(value)
        aggregate = _Timer()
        with aggregate:
            functions = task.aggregation()
            for metric, values in per_metric.items():
                if metric in functions:
                    functions[metric](values)
        row = {
            "benchmark": _benchmark_of(name),
            "n_docs_in_dataset": n_docs,
            "docs_measured": n,
            "load_s": round(load.wall, 4),
            "load_cpu_s": round(load.cpu, 4),
            **{f"{p}_cpu_ms_per_doc": round(1000 * t.cpu / n, 3) for p, t in phases.items()},
            **{f"{p}_wall_ms_per_doc": round(1000 * t.wall / n, 3) for p, t in phases.items()},
            "aggregate_cpu_ms_per_doc": round(1000 * aggregate.cpu / min(n, n_docs), 3),
        }
        row["our_cpu_ms_per_doc"] = round(
            row["row_cpu_ms_per_doc"]
            + row["messages_cpu_ms_per_doc"]
            + row["score_cpu_ms_per_doc"]
            + row["aggregate_cpu_ms_per_doc"],
            3,
        )
        row["our_wall_ms_per_doc"] = round(
            row["row_wall_ms_per_doc"]
            + row["messages_wall_ms_per_doc"]
            + row["score_wall_ms_per_doc"]
            + 1000 * aggregate.wall / min(n, n_docs),
            3,
        )
        row["peak_rss_mb"] = round(_peak_rss_mb(), 1)
        row["peak_rss_growth_mb"] = round(_peak_rss_mb() - rss0, 1)
        out[name] = row
    return out


def _load_pixels(value: Any) -> None:
    """Decode every PIL image inside ``value`` (lists, dicts, messages)."""
    if hasattr(value, "load") and hasattr(value, "size"):
        value.load()
    elif isinstance(value, dict):
        for v in value.values():
            _load_pixels(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _load_pixels(v)


def to_messages(task, doc: dict) -> Any:
    """The chat messages a chat model gets (``ConfigurableMessagesTask.doc_to_messages``), from any task object."""
    fn = getattr(task.config, "doc_to_messages", None)
    if not callable(fn):  # no messages function: the model builds them from doc_to_visual + doc_to_text
        return [task.doc_to_visual(doc), task.doc_to_text(doc)]
    kwargs = getattr(task, "lmms_eval_specific_kwargs", None)
    params = inspect.signature(fn).parameters
    if kwargs is not None and ("lmms_eval_specific_kwargs" in params or len(params) == 2):
        return fn(doc, lmms_eval_specific_kwargs=kwargs)
    return fn(doc)


def _benchmark_of(task: str) -> str:
    for prefix, key in (("mmsi", "mmsi"), ("dori", "dori"), ("mmperspective", "mmperspective"),
                        ("odi_bench", "odi_bench"), ("osr_", "osr_bench")):  # fmt: skip
        if task.startswith(prefix):
            return key
    return task.split("_")[0]


# --- ODI decode ----------------------------------------------------------------------------


def _erp_jpeg(width: int, height: int) -> bytes:
    """A synthetic ERP with shapes, a sign, a smooth sky/floor gradient and mild sensor noise."""
    import numpy as np
    from PIL import Image

    from lmms_spatial.data.demo.erp import draw_object, draw_sign, erp_canvas

    image, draw = erp_canvas(width, height)
    size = height / 14
    for k, yaw in enumerate(range(-180, 180, 30)):
        draw_object(draw, ("square", "circle", "triangle")[k % 3], ("red", "blue", "green")[k % 3], yaw, -8, size,
                    width, height)  # fmt: skip
    draw_sign(draw, "EXIT", 0.0, width, height)
    rng = np.random.default_rng(0)
    pixels = np.asarray(image, dtype=np.int16)
    noise = rng.integers(-6, 7, size=(height, width, 1), dtype=np.int16)
    image = Image.fromarray(np.clip(pixels + noise, 0, 255).astype(np.uint8))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def bench_odi_decode(width: int, height: int, max_pixels: int, repeats: int) -> dict[str, Any]:
    import numpy as np
    from PIL import Image

    from lmms_spatial.data.erp_image import ResolutionCap, decode_erp

    data = _erp_jpeg(width, height)
    cap = ResolutionCap(max_pixels=max_pixels)
    target = cap.target_size(width, height) or (width, height)

    def naive() -> Image.Image:
        return Image.open(io.BytesIO(data)).convert("RGB").resize(target, Image.Resampling.BICUBIC)

    def ours() -> Image.Image:
        return decode_erp(data, cap)

    times: dict[str, list[float]] = {"naive": [], "ours": []}
    images = {}
    for _ in range(repeats):
        for name, fn in (("naive", naive), ("ours", ours)):
            start = time.process_time()
            images[name] = fn()
            times[name].append(time.process_time() - start)
    a = np.asarray(images["naive"], dtype=np.float64)
    b = np.asarray(images["ours"], dtype=np.float64)
    diff = np.abs(a - b)
    mse = float((diff**2).mean())
    psnr = float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)
    naive_s, ours_s = statistics.median(times["naive"]), statistics.median(times["ours"])
    return {
        "image": f"{width}x{height} JPEG q90",
        "jpeg_mb": round(len(data) / 2**20, 2),
        "max_pixels": max_pixels,
        "output_size": list(images["ours"].size),
        "same_size": images["ours"].size == images["naive"].size,
        "naive_cpu_s": round(naive_s, 4),
        "ours_cpu_s": round(ours_s, 4),
        "speedup": round(naive_s / ours_s, 2) if ours_s else None,
        "mean_abs_diff": round(float(diff.mean()), 3),
        "max_abs_diff": int(diff.max()),
        "psnr_db": round(psnr, 2),
        "tolerance": {"mean_abs_diff_max": ODI_MAX_MEAN_ABS_DIFF, "psnr_db_min": ODI_MIN_PSNR_DB},
        "within_tolerance": bool(diff.mean() <= ODI_MAX_MEAN_ABS_DIFF and psnr >= ODI_MIN_PSNR_DB),
        "repeats": repeats,
    }


# --- OSR scoring at full size --------------------------------------------------------------

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

    _quiet_logs()
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
        timer = _Timer()
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


# --- OSR calls per image -------------------------------------------------------------------


def _lmms_eval(args: list[str], env: dict[str, str], out: Path) -> tuple[dict | None, float, float, str]:
    """Run lmms-eval; returns (results or None, wall s, child's peak RSS MB, stderr tail)."""
    cmd = [sys.executable, "-m", "lmms_eval", *args, "--output_path", str(out), "--log_samples",
           "--verbosity", "WARNING"]  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "stdout.txt", "w") as so, open(out / "stderr.txt", "w") as se:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=so, stderr=se, cwd=out)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not all children's
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    files = sorted(out.rglob("*_results.json"))
    stderr = (out / "stderr.txt").read_text()[-4000:]
    return (json.loads(files[-1].read_text()) if files else None), wall, usage.ru_maxrss / 1024, stderr


def bench_osr_calls(env: dict[str, str], work: Path) -> dict[str, Any]:
    import datasets

    task = "osr_qa_cogmap_standard_vanilla"
    log = work / "osr_calls.jsonl"
    log.unlink(missing_ok=True)
    results, wall, _rss, stderr = _lmms_eval(
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


# --- end to end ----------------------------------------------------------------------------


def steady_state(wall_l: float, docs_l: dict[str, int], wall_2l: float, docs_2l: dict[str, int],
                 ours_ms: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    """The marginal time per document from two runs with ``--limit L`` and ``--limit 2L``.

    ``marginal_ms_per_doc`` = 1000 (wall(2L) - wall(L)) / (docs(2L) - docs(L)): start-up and model load
    cancel. Our CPU ms/doc is weighted by each task's marginal documents (a task capped by its dataset
    size adds none), so it describes the same documents; ``our_share_of_steady`` is its ratio to the
    marginal. Both are None, with ``steady_reason``, when no document was added, when the wall time did
    not grow, or when a task that added documents has no CPU figure (``ours_ms``: task -> ms/doc).
    """
    marginal_docs = {t: docs_2l.get(t, 0) - docs_l.get(t, 0) for t in sorted(set(docs_l) | set(docs_2l))}
    added = sum(marginal_docs.values())
    out: dict[str, Any] = {
        "docs_2l": sum(docs_2l.values()),
        "marginal_docs": added,
        "marginal_wall_s": round(wall_2l - wall_l, 3),
        "marginal_ms_per_doc": None,
        "our_cpu_ms_per_marginal_doc": None,
        "our_share_of_steady": None,
        "steady_reason": None,
    }
    if added <= 0:
        out["steady_reason"] = (f"docs(2L) == docs(L) = {sum(docs_l.values())}: every task has at most L documents; "
                                "use a smaller --limit")  # fmt: skip
        return out
    if wall_2l <= wall_l:
        out["steady_reason"] = ("wall(2L) <= wall(L): run-to-run variation exceeds the extra documents' cost; "
                                "use a larger --limit")  # fmt: skip
        return out
    marginal = 1000 * (wall_2l - wall_l) / added
    out["marginal_ms_per_doc"] = round(marginal, 3)
    missing = sorted(t for t, n in marginal_docs.items() if n > 0 and t not in ours_ms)
    if missing:
        out["steady_reason"] = f"no CPU figure (tasks section) for {', '.join(missing)}"
        return out
    ours = sum(ours_ms[t] * n for t, n in marginal_docs.items() if n > 0) / added
    out["our_cpu_ms_per_marginal_doc"] = round(ours, 3)
    out["our_share_of_steady"] = round(ours / marginal, 5)
    return out


def _effective_docs(results: dict, tasks: list[str]) -> dict[str, int]:
    return {t: int(results.get("n-samples", {}).get(t, {}).get("effective", 0)) for t in tasks}


def bench_end_to_end(args: argparse.Namespace, tasks: list[str], env: dict[str, str], work: Path,
                     cpu_rows: dict[str, dict]) -> dict[str, Any]:  # fmt: skip
    from lmms_spatial.paths import tasks_dir

    cmd = ["--model", args.model, "--model_args", args.model_args, "--tasks", ",".join(tasks),
           "--include_path", tasks_dir(), "--batch_size", str(args.batch_size)]  # fmt: skip
    if args.gen_kwargs:
        cmd += ["--gen_kwargs", args.gen_kwargs]
    limit = ["--limit", str(args.limit)] if args.limit else []
    results, wall, rss, stderr = _lmms_eval(cmd + limit, env, work / "end_to_end")
    if results is None:
        return {"error": f"lmms-eval wrote no results: {stderr}"}
    n_docs = _effective_docs(results, tasks)
    total = sum(n_docs.values())
    model_ms = 1000 * wall / total if total else None
    ours_ms = sum(cpu_rows[t]["our_cpu_ms_per_doc"] * n for t, n in n_docs.items() if t in cpu_rows) / max(total, 1)
    out = {
        "model": args.model,
        "model_args": args.model_args,
        "batch_size": args.batch_size,
        "limit": args.limit,
        "docs": total,
        "wall_s": round(wall, 2),
        "docs_per_s": round(total / wall, 3) if wall else None,
        "wall_ms_per_doc": round(model_ms, 2) if model_ms else None,
        "our_cpu_ms_per_doc": round(ours_ms, 3),
        # upper bound of our share: the wall time includes process start and model load
        "our_share_of_wall": round(ours_ms / model_ms, 4) if model_ms else None,
        "child_peak_rss_mb": round(rss, 1),
        "evaluation_time_s": results.get("total_evaluation_time_seconds"),
    }
    if getattr(args, "steady", True):
        out.update(_steady_runs(args, cmd, env, work, n_docs, cpu_rows))
    return out


def _steady_runs(args: argparse.Namespace, cmd: list[str], env: dict[str, str], work: Path,
                 docs_first: dict[str, int], cpu_rows: dict[str, dict]) -> dict[str, Any]:  # fmt: skip
    """``--limit 2L``, then ``--limit L`` again (both after the first, cache-warming run): the steady state."""
    out: dict[str, Any] = {"steady": True, "marginal_ms_per_doc": None, "our_share_of_steady": None}
    limit = args.limit
    if not limit:
        out["steady_reason"] = "needs --limit L (runs --limit 2L and --limit L)"
        return out
    if all(n < limit for n in docs_first.values()):  # every task already ran out of documents: 2L adds none
        state = steady_state(0.0, docs_first, 0.0, docs_first, {})
        state["steady_reason"] += " (every task ran out of documents at L: the 2L runs were skipped)"
        state["marginal_wall_s"] = None
        return {"steady": True, **state}
    runs = {}
    for name, n in (("2l", 2 * limit), ("l", limit)):
        results, wall, rss, stderr = _lmms_eval([*cmd, "--limit", str(n)], env, work / f"end_to_end_steady_{name}")
        if results is None:
            out["steady_reason"] = f"the --limit {n} run wrote no results: {stderr[-1000:]}"
            return out
        runs[name] = (wall, _effective_docs(results, list(docs_first)), rss)
    (wall_2l, docs_2l, rss_2l), (wall_l, docs_l, _rss) = runs["2l"], runs["l"]
    ours = {t: r["our_cpu_ms_per_doc"] for t, r in cpu_rows.items()}
    state = steady_state(wall_l, docs_l, wall_2l, docs_2l, ours)
    return {
        **out,
        "limit_2l": 2 * limit,
        "wall_s_l_warm": round(wall_l, 2),
        "wall_s_2l": round(wall_2l, 2),
        "docs_l_warm": sum(docs_l.values()),
        **state,
        "child_peak_rss_mb_2l": round(rss_2l, 1),
    }


# --- the run -------------------------------------------------------------------------------


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    rows = report.get("tasks", {})
    non_odi = {t: r["our_cpu_ms_per_doc"] for t, r in rows.items() if r["benchmark"] != "odi_bench"}
    summary: dict[str, Any] = {}
    if non_odi:
        worst = max(non_odi, key=non_odi.get)
        summary["non_odi_max_cpu_ms_per_doc"] = {"task": worst, "ms": non_odi[worst], "budget_ms": NON_ODI_BUDGET_MS,
                                                 "ok": non_odi[worst] <= NON_ODI_BUDGET_MS}  # fmt: skip
    if "odi_decode" in report:
        d = report["odi_decode"]
        summary["odi_decode"] = {"speedup": d["speedup"], "min": ODI_MIN_SPEEDUP,
                                 "ok": (d["speedup"] or 0) >= ODI_MIN_SPEEDUP and d["within_tolerance"]}  # fmt: skip
    if "osr_scoring" in report:
        s = report["osr_scoring"]
        summary["osr_scoring"] = {"total_s": s["total_s"], "budget_s": OSR_BUDGET_S, "ok": s["total_s"] < OSR_BUDGET_S}
    if "osr_calls" in report and "ok" in report["osr_calls"]:
        summary["osr_calls"] = {"calls_per_image": report["osr_calls"]["calls_per_image"],
                                "ok": report["osr_calls"]["ok"]}  # fmt: skip
    e2e = report.get("end_to_end", {})
    if e2e.get("steady"):
        share = e2e.get("our_share_of_steady")
        summary["end_to_end_steady"] = {
            "our_share_of_steady": share,
            "marginal_ms_per_doc": e2e.get("marginal_ms_per_doc"),
            "budget": STEADY_SHARE_BUDGET,
            "ok": None if share is None else share <= STEADY_SHARE_BUDGET,
            "note": STEADY_NOTE if share is not None else e2e.get("steady_reason"),
        }
    return summary


def format_report(report: dict[str, Any]) -> str:
    lines = []
    rows = report.get("tasks", {})
    sizes = report.get("image_sizes")
    if sizes:
        mode = report["meta"].get("image_size", "demo")
        lines.append(f"images ({mode}): " + "; ".join(f"{key} {_sizes_text(info)}" for key, info in sizes.items()))
    if rows:
        width = max(len(t) for t in rows)
        lines.append(f"{'task':<{width}} {'docs':>5} {'load s':>7} {'row':>6} {'visual':>8} {'prompt':>7} "
                     f"{'messages':>9} {'score':>7} {'ours/doc':>9}  (CPU ms per doc)")  # fmt: skip
        for task, r in rows.items():
            lines.append(
                f"{task:<{width}} {r['n_docs_in_dataset']:>5} {r['load_s']:>7.3f} {r['row_cpu_ms_per_doc']:>6.2f} "
                f"{r['visual_cpu_ms_per_doc']:>8.2f} "
                f"{r['prompt_cpu_ms_per_doc']:>7.3f} {r['messages_cpu_ms_per_doc']:>9.2f} "
                f"{r['score_cpu_ms_per_doc']:>7.3f} {r['our_cpu_ms_per_doc']:>9.2f}"
            )
        by_bench: dict[str, list[float]] = {}
        for r in rows.values():
            by_bench.setdefault(r["benchmark"], []).append(r["our_cpu_ms_per_doc"])
        lines.append("")
        lines.append("per benchmark, our CPU ms/doc (median / max over tasks):")
        for bench, values in sorted(by_bench.items()):
            lines.append(f"  {bench:<14} {statistics.median(values):7.2f} / {max(values):7.2f}  ({len(values)} tasks)")
    if "odi_decode" in report:
        d = report["odi_decode"]
        lines.append(
            f"\nODI decode {d['image']} -> {d['output_size'][0]}x{d['output_size'][1]} (max_pixels {d['max_pixels']}): "
            f"naive {d['naive_cpu_s']:.3f} s, ours {d['ours_cpu_s']:.3f} s, speed-up {d['speedup']}x; "
            f"mean |diff| {d['mean_abs_diff']}, max |diff| {d['max_abs_diff']}, PSNR {d['psnr_db']} dB "
            f"(tolerance: mean <= {ODI_MAX_MEAN_ABS_DIFF}, PSNR >= {ODI_MIN_PSNR_DB}: "
            f"{'ok' if d['within_tolerance'] else 'FAIL'})"
        )
    if "osr_scoring" in report:
        s = report["osr_scoring"]
        lines.append(
            f"OSR scoring from samples files: {s['maps']} maps in {s['osr_cogmap_standard_s']} s, "
            f"{s['questions']} QAs in {s['osr_qa_standard_vanilla_s']} s, total {s['total_s']} s"
        )
    if "osr_calls" in report:
        c = report["osr_calls"]
        if "error" in c:
            lines.append(f"OSR calls per image: error {c['error'][-300:]}")
        else:
            lines.append(
                f"OSR {c['task']}: {c['base_model_calls']} base-model calls for {c['images']} images / "
                f"{c['questions']} questions = {c['calls_per_image']} per image "
                f"(1 + questions = {c['expected_calls_per_image']}; naive 2x = {c['naive_calls_per_image']})"
            )
    if "end_to_end" in report:
        e = report["end_to_end"]
        if "error" in e:
            lines.append(f"end to end: error {e['error'][-300:]}")
        else:
            lines.append(
                f"end to end ({e['model']}, batch {e['batch_size']}): {e['docs']} docs in {e['wall_s']} s = "
                f"{e['docs_per_s']} docs/s; our CPU {e['our_cpu_ms_per_doc']} ms/doc = "
                f"{100 * (e['our_share_of_wall'] or 0):.2f}% of wall/doc; child peak RSS {e['child_peak_rss_mb']} MB"
            )
            if e.get("steady"):
                lines.append(_steady_text(e))
    lines.append(f"\npeak RSS of the harness: {report['meta']['peak_rss_mb']} MB")
    for key, value in report.get("summary", {}).items():
        lines.append(f"check {key}: {value}")
    return "\n".join(lines)


def _sizes_text(info: dict[str, Any]) -> str:
    """``1024x512 PNG 810 KB`` (the sizes written, or found when the images were kept)."""
    sizes = ", ".join(info.get("sizes", {})) or "?"
    formats = "/".join(info.get("formats", {}))
    kept = " (kept)" if info.get("kept") else ""
    kb = info.get("mean_image_kb")
    size = "" if kb is None else f" {kb:.0f} KB" if kb >= 10 else f" {kb:.1f} KB"
    return f"{sizes} {formats}{size}{kept}".strip()


def _steady_text(e: dict[str, Any]) -> str:
    if e.get("marginal_ms_per_doc") is None or e.get("our_share_of_steady") is None:
        marginal = e.get("marginal_ms_per_doc")
        got = f"marginal {marginal} ms/doc; " if marginal is not None else ""
        return f"  steady state (--limit {e.get('limit')} vs 2x): {got}no share: {e.get('steady_reason')}"
    share = e["our_share_of_steady"]
    verdict = "ok" if share <= STEADY_SHARE_BUDGET else "OVER"
    return (
        f"  steady state (--limit {e['limit']}: {e['docs_l_warm']} docs in {e['wall_s_l_warm']} s; "
        f"--limit {e['limit_2l']}: {e['docs_2l']} docs in {e['wall_s_2l']} s): marginal "
        f"{e['marginal_ms_per_doc']} ms/doc over {e['marginal_docs']} docs; our CPU {e['our_cpu_ms_per_marginal_doc']} "
        f"ms/doc = {100 * share:.3f}% of it (budget {100 * STEADY_SHARE_BUDGET:.0f}%: {verdict}; {STEADY_NOTE})"
    )


def compare(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Per task, our CPU ms/doc of two runs and the ratio new/old."""
    lines = []
    for label, report in (("old", old), ("new", new)):
        meta = report.get("meta", {})
        lines.append(f"{label}: {meta.get('command', '?')} (images: {meta.get('image_size', 'demo')})")
    lines.append(f"{'task':<50} {'old':>8} {'new':>8} {'new/old':>8}")
    for task in sorted(set(old.get("tasks", {})) & set(new.get("tasks", {}))):
        a, b = old["tasks"][task]["our_cpu_ms_per_doc"], new["tasks"][task]["our_cpu_ms_per_doc"]
        lines.append(f"{task:<50} {a:8.2f} {b:8.2f} {(b / a if a else float('nan')):8.2f}")
    for section, key in (("odi_decode", "ours_cpu_s"), ("osr_scoring", "total_s"),
                         ("end_to_end", "marginal_ms_per_doc"), ("end_to_end", "our_share_of_steady")):  # fmt: skip
        a, b = old.get(section, {}).get(key), new.get(section, {}).get(key)
        if a is not None and b is not None:
            lines.append(f"{section + '.' + key:<50} {a:8.3f} {b:8.3f} {(b / a if a else float('nan')):8.2f}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work or tempfile.mkdtemp(prefix="lmms_spatial_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("LMMS_SPATIAL_JUDGE", "none")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from lmms_spatial.data.demo import build_demo_data, demo_tasks

    tasks = args.tasks or demo_tasks()
    sections = set(args.only.split(",")) if args.only else {"tasks", "odi", "osr_scoring", "osr_calls", "e2e"}
    image_sizes = None
    if not args.use_env_data:
        from lmms_spatial.bench.real_images import inventory, real_size_data

        data_env = build_demo_data(work / "data")
        if getattr(args, "image_size", "demo") == "real":
            # only the benchmarks something here reads (OSR-Bench for osr_calls / osr_scoring)
            used = {_benchmark_of(t) for t in tasks}
            if sections & {"osr_calls", "osr_scoring"}:
                used.add("osr_bench")
            data_env, image_sizes = real_size_data(data_env, work / "data_real", only=used)
        else:
            image_sizes = inventory(data_env)
        os.environ.update(data_env)
    env = dict(os.environ)
    report: dict[str, Any] = {
        "meta": {
            "command": " ".join(["lmms-spatial", "bench", *(args.argv or [])]),
            "tiny": args.tiny,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "data": "env" if args.use_env_data else "demo fixtures",
            "image_size": "env" if args.use_env_data else getattr(args, "image_size", "demo"),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
    }
    if image_sizes is not None:
        report["image_sizes"] = image_sizes
    try:
        import lmms_eval
        import PIL

        report["meta"]["versions"] = {"lmms_eval": getattr(lmms_eval, "__version__", "?"), "pillow": PIL.__version__}
    except ImportError:  # pragma: no cover
        pass
    if "tasks" in sections:
        report["tasks"] = bench_tasks(tasks, args.docs)
    if "odi" in sections:
        w, h = (2400, 1200) if args.tiny else (args.odi_width, args.odi_width // 2)
        budget = 262144 if args.tiny else args.odi_max_pixels
        report["odi_decode"] = bench_odi_decode(w, h, budget, 1 if args.tiny else args.repeats)
    if "osr_scoring" in sections:
        maps, questions = (41, 1533) if args.tiny else (4100, 153312)
        report["osr_scoring"] = bench_osr_scoring(maps, questions, work)
    if "osr_calls" in sections and not args.use_env_data:
        report["osr_calls"] = bench_osr_calls(env, work)
    if "e2e" in sections and args.model:
        report["end_to_end"] = bench_end_to_end(args, tasks, env, work, report.get("tasks", {}))
    report["meta"]["peak_rss_mb"] = round(_peak_rss_mb(), 1)
    report["summary"] = _summary(report)
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=lambda s: s.split(","), default=None, help="default: every demo task")
    parser.add_argument("--docs", type=int, default=20, help="documents measured per task (cycled; default 20)")
    parser.add_argument("--tiny", action="store_true", help="CI mode: 2 docs/task, small ODI image, OSR/100")
    parser.add_argument("--only", help="comma-separated sections: tasks,odi,osr_scoring,osr_calls,e2e")
    parser.add_argument(
        "--use-env-data",
        action="store_true",
        help="use the datasets the LMMS_SPATIAL_*_PATH variables (or the Hub) give, not the fixtures",
    )
    parser.add_argument("--odi-width", type=int, default=12000, help="ERP width (height = width/2)")
    parser.add_argument("--odi-max-pixels", type=int, default=QWEN_MAX_PIXELS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", help="also run lmms-eval end to end with this model")
    parser.add_argument("--model_args", default="")
    parser.add_argument("--batch_size", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="documents per task for the end-to-end run")
    parser.add_argument(
        "--steady",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --model and --limit L: also run --limit 2L and --limit L again and report the marginal "
        "(steady-state) model ms/doc and our share of it, against a 5%% budget meant for a 7B model on a GPU "
        "(default: on)",
    )
    parser.add_argument(
        "--image-size",
        choices=("demo", "real"),
        default="demo",
        help="demo: the embedded fixture images (tiny); real: a copy of the fixtures with every image "
        "re-encoded at a realistic size in its own format (OSR-Bench 1024x512, MMSI-Bench/DORI/MMPerspective "
        "1280x960, ODI-Bench kept) for every phase (default: demo)",
    )
    parser.add_argument("--gen_kwargs", default="")
    parser.add_argument("--work", help="working folder (default: a new temporary folder)")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="compare two JSON reports and exit")


def main_args(args: argparse.Namespace) -> int:
    if args.compare:
        old, new = (json.loads(Path(p).read_text()) for p in args.compare)
        print(compare(old, new))
        return 0
    if args.tiny:
        args.docs = min(args.docs, 2)
    if getattr(args, "image_size", "demo") == "real" and args.use_env_data:
        print("bench: --image-size real re-encodes the demo fixtures; with --use-env-data the data's own "
              "images are measured (drop one of the two)", file=sys.stderr)  # fmt: skip
        return 2
    report = run(args)
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"\nwritten: {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lmms-spatial bench", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return main_args(args)


if __name__ == "__main__":
    sys.exit(main())
