"""``lmms-spatial bench --runners``: our ``fast_vlm`` against lmms-eval's ``qwen2_5_vl`` on the same documents.

Issue 18 asks how far each runner is from the machine's limit, not only which is faster. So, on
a random-weight checkpoint built here at the real architecture (nothing to download), for the
same tasks, batch size and ``--limit``:

- the steady-state wall per document of each runner (``--limit 2L`` against ``--limit L``, so
  start-up and model load cancel; :func:`lmms_spatial.bench.steady_state`);
- the compute floor per document from the documents' own prompt tokens and image patches, counted
  through lmms-eval's preprocessing (chat template, ``qwen_vl_utils``, the processor), and each
  runner's ratio to it;
- the preprocessing cost per document on this host (decode, resize, processor with the pil and the
  torchvision backends), and, from ``fast_vlm``'s own counters, what its GPU thread spent not
  generating (waiting for a batch, copies, decoding answers: our share of the critical path), the
  workers' preparation time and ``generate``'s.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time
from pathlib import Path
from typing import Any

from lmms_spatial.bench.floor import (
    DEFAULT_PEAK_TFLOPS,
    LMMS_EVAL_MAX_PIXELS,
    LMMS_EVAL_MIN_PIXELS,
    ParamSplit,
    mean_floor,
    split_parameters,
)

REFERENCE_RUNNER = "qwen2_5_vl"
OUR_RUNNER = "fast_vlm"
# Issue 18's targets on one H100: steady wall <= 2.5x the floor, >= 3x lmms-eval's qwen2_5_vl.
FLOOR_RATIO_TARGET = 2.5
SPEEDUP_TARGET = 3.0


def ensure_checkpoint(folder: Path, arch: str, device: str, dtype: str, seed: int = 0) -> Path:
    """Build the random-weight checkpoint once per (arch, dtype, seed); a marker file says it is complete."""
    from lmms_spatial.bench.checkpoints import build_random_qwen2_5_vl

    marker = folder / "lmms_spatial_checkpoint.json"
    wanted = {"arch": arch, "dtype": dtype, "seed": seed}
    if marker.is_file() and json.loads(marker.read_text()) == wanted:
        return folder
    build_random_qwen2_5_vl(folder, arch=arch, seed=seed, device=device, dtype=dtype)
    marker.write_text(json.dumps(wanted))
    return folder


def parameter_split(checkpoint: Path) -> ParamSplit:
    """LLM and vision parameter counts of ``checkpoint``'s architecture, from its config (no weights loaded)."""
    import torch
    from transformers import AutoConfig, Qwen2_5_VLForConditionalGeneration

    config = AutoConfig.from_pretrained(checkpoint)
    with torch.device("meta"):
        model = Qwen2_5_VLForConditionalGeneration(config)
    return split_parameters(model.named_parameters())


def document_shapes(tasks: list[str], limit: int, checkpoint: Path, min_pixels: int, max_pixels: int
                    ) -> dict[str, Any]:  # fmt: skip
    """Each of the first ``limit`` documents of every task, through lmms-eval's ``qwen2_5_vl`` preprocessing.

    Returns the (prompt tokens, image patches) pairs the floor needs, and the host's preprocessing
    cost per document: decode (our ``doc_to_messages``), chat template + ``qwen_vl_utils`` resize,
    and the processor with the pil (lmms-eval's default) and torchvision backends.
    """
    from lmms_eval.protocol import ChatMessages
    from lmms_eval.tasks import TaskManager, get_task_dict
    from qwen_vl_utils import process_vision_info
    from transformers import AutoProcessor

    from lmms_spatial.bench.measure import quiet_logs
    from lmms_spatial.bench.tasks import _load_pixels, to_messages
    from lmms_spatial.paths import tasks_dir

    quiet_logs()
    processors = {
        backend: AutoProcessor.from_pretrained(
            checkpoint, min_pixels=min_pixels, max_pixels=max_pixels, use_fast=backend == "torchvision"
        )  # fmt: skip
        for backend in ("pil", "torchvision")
    }
    manager = TaskManager(include_defaults=False, include_path=tasks_dir(), verbosity="ERROR")
    shapes: list[tuple[int, int]] = []
    spent = {"decode": 0.0, "template_resize": 0.0, "processor_pil": 0.0, "processor_torchvision": 0.0}
    for name in tasks:
        task = get_task_dict([name], manager)[name]
        docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
        for i in range(min(limit, len(docs))):
            t0 = time.perf_counter()
            messages = to_messages(task, docs[i])
            _load_pixels(messages)
            t1 = time.perf_counter()
            hf = ChatMessages(messages=messages).to_hf_messages(
                video_kwargs={"min_pixels": min_pixels, "max_pixels": max_pixels}
            )
            text = processors["pil"].apply_chat_template([hf], tokenize=False, add_generation_prompt=True)
            images, _videos = process_vision_info([hf])
            t2 = time.perf_counter()
            spent["decode"] += t1 - t0
            spent["template_resize"] += t2 - t1
            for backend, processor in processors.items():
                t3 = time.perf_counter()
                inputs = processor(text=text, images=images, return_tensors="pt")
                spent[f"processor_{backend}"] += time.perf_counter() - t3
            grid = inputs.get("image_grid_thw")
            patches = int(grid.prod(dim=-1).sum()) if grid is not None else 0
            shapes.append((int(inputs["input_ids"].shape[-1]), patches))
    n = max(1, len(shapes))
    return {"shapes": shapes, "preprocess_ms_per_doc": {k: round(1000 * v / n, 2) for k, v in spent.items()}}


def runner_stats(path: Path) -> list[dict[str, float]]:
    """The lines ``fast_vlm`` appended to the stats file, one per ``generate_until`` call (in order)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def marginal_counters(first: dict[str, float], second: dict[str, float]) -> dict[str, float | None]:
    """Per-document counters of the extra documents of a 2L run over an L run (ms per doc).

    ``first`` / ``second``: totals of the L and 2L runs (``docs`` and ``*_ms`` keys). As with the
    wall time, fixed costs (first-batch warm-up, thread start) cancel.
    """
    added = second.get("docs", 0) - first.get("docs", 0)
    keys = sorted(k for k in second if k.endswith("_ms"))
    if added <= 0:
        return {k: None for k in keys}
    return {k: round((second[k] - first.get(k, 0.0)) / added, 3) for k in keys}


def _totals(lines: list[dict[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for line in lines:
        for key, value in line.items():
            if isinstance(value, (int, float)):
                total[key] = total.get(key, 0) + value
    return total


def compare_runners(args: argparse.Namespace, tasks: list[str], env: dict[str, str], work: Path,
                    cpu_rows: dict[str, dict]) -> dict[str, Any]:  # fmt: skip
    """Build the checkpoint, count the documents, run both runners in steady state; one report dict."""
    from lmms_spatial.bench.end_to_end import bench_end_to_end
    from lmms_spatial.models.fast_vlm import STATS_ENV  # fast_vlm appends one line of counters per call

    if not args.limit:
        return {"error": "--runners needs --limit L (the steady state compares --limit 2L with --limit L)"}
    started = time.perf_counter()
    checkpoint = ensure_checkpoint(work / f"qwen2_5_vl_{args.arch}_random", args.arch, args.device, args.dtype)
    build_s = time.perf_counter() - started
    min_pixels, max_pixels = args.min_pixels, args.max_pixels
    shapes = document_shapes(tasks, 2 * args.limit, checkpoint, min_pixels, max_pixels)
    params = parameter_split(checkpoint)
    floor = mean_floor(params, shapes["shapes"], args.peak_tflops)

    common = (f"pretrained={checkpoint},attn_implementation={args.attn_implementation},"
              f"min_pixels={min_pixels},max_pixels={max_pixels}")  # fmt: skip
    if args.device != "cpu":
        common += f",device={args.device}"
    else:
        common += ",device=cpu,device_map=cpu"
    runs: dict[str, Any] = {}
    for runner in (REFERENCE_RUNNER, OUR_RUNNER):
        ns = copy.copy(args)
        ns.model, ns.model_args, ns.steady = runner, common + (f",{args.runner_args}" if args.runner_args else ""), True
        if runner == REFERENCE_RUNNER and args.reference_args:
            ns.model_args += f",{args.reference_args}"
        stats = work / runner / "runner_stats.jsonl"
        stats.parent.mkdir(parents=True, exist_ok=True)
        stats.unlink(missing_ok=True)
        run_env = {**env, STATS_ENV: str(stats)}
        result = bench_end_to_end(ns, tasks, run_env, work / runner, cpu_rows)
        lines = runner_stats(stats)
        # one line per generate_until call: cold run, then --limit 2L, then --limit L (see _steady_runs)
        if len(lines) >= 3:
            result["counters_ms_per_marginal_doc"] = marginal_counters(_totals(lines[-1:]), _totals(lines[-2:-1]))
        runs[runner] = result
    return runner_table(runs, floor, shapes["preprocess_ms_per_doc"], params, build_s, args)


def runner_table(runs: dict[str, Any], floor, preprocess: dict[str, float], params: ParamSplit, build_s: float,
                 args: argparse.Namespace) -> dict[str, Any]:  # fmt: skip
    """The comparison: per runner, steady ms/doc, its ratio to the floor, our critical-path share; the speedup."""
    rows: dict[str, dict[str, Any]] = {}
    for runner, run in runs.items():
        steady = run.get("marginal_ms_per_doc")
        counters = run.get("counters_ms_per_marginal_doc") or {}
        rows[runner] = {
            "steady_ms_per_doc": steady,
            "floor_ratio": round(steady / floor.ms, 2) if steady and floor.ms else None,
            # lmms-eval's class: our doc_to_messages runs inside its batch loop (in-process CPU figure);
            # fast_vlm: what its GPU thread spent not generating (waiting for a batch, copies, decoding)
            "ours_on_critical_path_ms_per_doc": counters.get("critical_path_ms")
            if runner == OUR_RUNNER
            else run.get("our_cpu_ms_per_marginal_doc"),
            "prep_ms_per_doc": counters.get("prep_ms"),
            "generate_ms_per_doc": counters.get("generate_ms"),
            "steady_reason": run.get("steady_reason"),
            "error": run.get("error"),
        }
    ref, ours = rows.get(REFERENCE_RUNNER, {}), rows.get(OUR_RUNNER, {})
    speedup = (
        round(ref["steady_ms_per_doc"] / ours["steady_ms_per_doc"], 2)
        if ref.get("steady_ms_per_doc") and ours.get("steady_ms_per_doc")
        else None
    )
    ratio = ours.get("floor_ratio")
    return {
        "arch": args.arch,
        "device": args.device,
        "dtype": args.dtype,
        "attn_implementation": args.attn_implementation,
        "batch_size": args.batch_size,
        "limit": args.limit,
        "checkpoint_build_s": round(build_s, 1),
        "params": {"llm": params.llm, "vision": params.vision},
        "floor": floor.as_dict(),
        "preprocess_ms_per_doc_host": preprocess,
        "runners": rows,
        "speedup": speedup,
        "targets": {
            "floor_ratio_max": FLOOR_RATIO_TARGET,
            "speedup_min": SPEEDUP_TARGET,
            "floor_ratio_ok": None if ratio is None else ratio <= FLOOR_RATIO_TARGET,
            "speedup_ok": None if speedup is None else speedup >= SPEEDUP_TARGET,
            "note": "targets are for the 7B architecture on one H100; elsewhere informative only",
        },
        "runs": runs,
    }


def format_runner_table(report: dict[str, Any]) -> str:
    """The comparison as a Markdown table plus the floor's inputs."""
    f = report["floor"]
    lines = [
        f"## Runners: Qwen2.5-VL {report['arch']} (random weights), {report['dtype']} on {report['device']}, "
        f"attn {report['attn_implementation']}, batch {report['batch_size']}, --limit {report['limit']} vs "
        f"{2 * report['limit']}",
        "",
        f"Compute floor: {f['tflop']:g} TFLOP/doc = {f['ms']:g} ms at {f['peak_tflops']:g} TFLOP/s "
        f"(LLM {report['params']['llm'] / 1e9:.2f} B x {f['tokens']:.0f} tokens + vision "
        f"{report['params']['vision'] / 1e9:.2f} B x {f['patches']:.0f} patches)",
        "",
        "| runner | steady ms/doc | x floor | ours on critical path ms/doc | prep ms/doc (workers) | generate ms/doc |",
        "|---|---|---|---|---|---|",
    ]
    for runner, row in report["runners"].items():
        cells = [row["steady_ms_per_doc"], row["floor_ratio"], row["ours_on_critical_path_ms_per_doc"],
                 row["prep_ms_per_doc"], row["generate_ms_per_doc"]]  # fmt: skip
        text = " | ".join("n/a" if c is None else f"{c:g}" for c in cells)
        reason = (row.get("error") or row.get("steady_reason") or "").strip().splitlines()
        why = f" ({reason[-1][:300]})" if reason and row["steady_ms_per_doc"] is None else ""
        lines.append(f"| {runner} | {text} |{why}")
    p = report["preprocess_ms_per_doc_host"]
    lines += [
        "",
        f"Speedup {OUR_RUNNER} over {REFERENCE_RUNNER}: {report['speedup'] if report['speedup'] else 'n/a'}"
        f" (target >= {SPEEDUP_TARGET:g}x; floor ratio target <= {FLOOR_RATIO_TARGET:g}x: "
        f"{report['targets']['note']})",
        f"Preprocessing on this host, ms/doc: decode {p['decode']}, template + resize {p['template_resize']}, "
        f"processor pil {p['processor_pil']}, torchvision {p['processor_torchvision']}",
    ]
    return "\n".join(lines)


def add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("runners (--runners)")
    group.add_argument("--runners", action="store_true",
                       help="compare fast_vlm with lmms-eval's qwen2_5_vl on a random-weight checkpoint built here "
                       "(needs --limit; uses --tasks, --batch_size, --gen_kwargs)")  # fmt: skip
    group.add_argument("--arch", choices=("tiny", "7b"), default="7b", help="checkpoint architecture (default 7b)")
    group.add_argument("--device", default="auto", help="cuda when available, else cpu (default auto)")
    group.add_argument("--dtype", default=None, help="default: bfloat16 on CUDA, float32 on CPU")
    group.add_argument("--attn-implementation", dest="attn_implementation", default="sdpa")
    group.add_argument("--min-pixels", dest="min_pixels", type=int, default=LMMS_EVAL_MIN_PIXELS,
                       help="both runners' min_pixels (lmms-eval's qwen2_5_vl default)")  # fmt: skip
    group.add_argument("--max-pixels", dest="max_pixels", type=int, default=LMMS_EVAL_MAX_PIXELS,
                       help="both runners' max_pixels (lmms-eval's qwen2_5_vl default)")  # fmt: skip
    group.add_argument("--peak-tflops", dest="peak_tflops", type=float, default=DEFAULT_PEAK_TFLOPS,
                       help=f"matrix rate for the compute floor (default {DEFAULT_PEAK_TFLOPS:g}, bf16)")  # fmt: skip
    group.add_argument("--runner-args", dest="runner_args", default="", help="extra model_args for both runners")
    group.add_argument("--reference-args", dest="reference_args", default="", help="extra model_args for qwen2_5_vl")


def resolve_runner_defaults(args: argparse.Namespace) -> None:
    if args.device == "auto":
        args.device = "cuda" if _has_cuda() else "cpu"
    if args.dtype is None:
        args.dtype = "float32" if args.device == "cpu" else "bfloat16"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover
        return False
