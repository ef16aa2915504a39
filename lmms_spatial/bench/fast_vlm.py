"""``fast_vlm`` against lmms-eval's ``qwen2_5_vl`` on the same MMSI documents at real image size (CPU, tiny model).

Informative only: on CPU with the tiny random checkpoint (lmms_spatial.bench.checkpoints) the "GPU" work is a
CPU forward pass that competes with the preparing threads for the same cores, so this measures the
plumbing, not the speed-up a GPU run would see. What it prints:

1. the pixel difference between the processor's torchvision and PIL backends on the documents'
   1280x960 images at lmms-eval's default pixel bounds (200,704..1,605,632) and at max_pixels
   401,408, and whether the token ids agree;
2. documents per second of both classes on the same documents (``--docs``, MMSI's demo rows repeated,
   each with two 1280x960 PNG images), batch ``--batch-size``, ``max_new_tokens=4``, after a warm-up
   batch, and fast_vlm's prep / wait / host / generate split.

    python -m lmms_spatial.bench.fast_vlm --docs 32 --batch-size 8 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def _docs(work: Path, n: int) -> list[dict]:
    import datasets

    from lmms_spatial.bench.real_images import real_size_data
    from lmms_spatial.data.demo import build_demo_data
    from lmms_spatial.data.sources import BENCHMARKS
    from lmms_spatial.tasks.mmsi.adapter import process_docs

    env = build_demo_data(work / "demo")
    var = BENCHMARKS["mmsi"].env_var
    real_env, _report = real_size_data({var: env[var]}, work / "real")
    files = sorted(str(p) for p in Path(real_env[var]).rglob("*.parquet"))
    rows = process_docs(datasets.load_dataset("parquet", data_files=files)["train"])
    return [rows[i % len(rows)] for i in range(n)]


def _requests(n: int, max_new_tokens: int):
    from lmms_eval.api.instance import Instance

    from lmms_spatial.tasks.mmsi.adapter import doc_to_messages

    return [
        Instance("generate_until", (f"ctx {i}", doc_to_messages, {"max_new_tokens": max_new_tokens}, i, "mmsi", "test"),
                 0, {"task": "mmsi", "doc_id": i, "repeats": 1})
        for i in range(n)
    ]  # fmt: skip


def pixel_difference(checkpoint: Path, docs: list[dict], max_pixels: int = 1605632) -> dict:
    """Max/mean abs difference of pixel_values, torchvision vs PIL backend, per document's two images."""
    import torch
    from transformers import AutoImageProcessor, AutoProcessor

    from lmms_spatial.models.fast_inputs import DocPreparer

    bounds = {"min_pixels": 256 * 28 * 28, "max_pixels": max_pixels}
    tv = AutoProcessor.from_pretrained(str(checkpoint), **bounds)
    pil = AutoProcessor.from_pretrained(str(checkpoint), **bounds)
    pil.image_processor = AutoImageProcessor.from_pretrained(str(checkpoint), backend="pil", **bounds)
    task_dict = {"mmsi": {"test": docs}}
    requests = _requests(len(docs), 4)
    worst, total, count, same_ids = 0.0, 0.0, 0, True
    for i in range(min(len(docs), 8)):
        a = DocPreparer([tv], task_dict, qwen_resize=True)(i, requests[i].args)
        b = DocPreparer([pil], task_dict, qwen_resize=True)(i, requests[i].args)
        same_ids &= torch.equal(a.tensors["input_ids"], b.tensors["input_ids"])
        diff = (a.tensors["pixel_values"] - b.tensors["pixel_values"]).abs()
        worst = max(worst, float(diff.max()))
        total += float(diff.sum())
        count += diff.numel()
        grid = a.tensors["image_grid_thw"].tolist()
    return {
        "max_pixels": max_pixels, "max_abs": worst, "mean_abs": total / count, "same_input_ids": same_ids,
        "grid_thw": grid,
    }  # fmt: skip


def throughput(checkpoint: Path, docs: list[dict], batch_size: int, workers: int) -> dict:
    from lmms_eval.models.chat.qwen2_5_vl import Qwen2_5_VL

    from lmms_spatial.models.fast_vlm import FastVLM

    common = {"pretrained": str(checkpoint), "device": "cpu", "device_map": "cpu", "batch_size": batch_size}
    task_dict = {"mmsi": {"test": docs}}
    out = {}
    for name, model in (
        ("qwen2_5_vl", Qwen2_5_VL(attn_implementation="sdpa", **common)),
        ("fast_vlm", FastVLM(attn_implementation="sdpa", vision_attention="stock", workers=workers, **common)),
    ):
        model.task_dict = task_dict
        model.generate_until(_requests(batch_size, 4))  # warm-up batch
        start = time.perf_counter()
        model.generate_until(_requests(len(docs), 4))
        seconds = time.perf_counter() - start
        out[name] = {"seconds": seconds, "docs_per_s": len(docs) / seconds}
        if name == "fast_vlm":
            out[name]["timing"] = model.timing.as_dict()
            out[name]["summary"] = model.timing.summary()
    out["speedup"] = out["fast_vlm"]["docs_per_s"] / out["qwen2_5_vl"]["docs_per_s"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import torch

    from lmms_spatial.bench.checkpoints import build_random_qwen2_5_vl

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        checkpoint = build_random_qwen2_5_vl(work / "tiny", arch="tiny")
        docs = _docs(work, args.docs)
        report = {
            "torch_threads": torch.get_num_threads(),
            # lmms-eval's default bounds: qwen-vl-utils already made 1288x952, the processor does not resize;
            # 401,408 (512 tokens, a common setting): the processor resizes, each backend its own way
            "pixels": [pixel_difference(checkpoint, docs, m) for m in (1605632, 401408)],
            "throughput": throughput(checkpoint, docs, args.batch_size, args.workers),
        }
    t = report["throughput"]
    for p in report["pixels"]:
        print(f"pixel_values torchvision vs pil, max_pixels {p['max_pixels']}: max abs {p['max_abs']:.4f}, "
              f"mean abs {p['mean_abs']:.5f}, same input_ids: {p['same_input_ids']}, grid {p['grid_thw']}")  # fmt: skip
    ours, theirs = t["fast_vlm"], t["qwen2_5_vl"]
    print(f"qwen2_5_vl: {theirs['docs_per_s']:.2f} docs/s; fast_vlm: {ours['docs_per_s']:.2f} docs/s "
          f"({t['speedup']:.2f}x); {ours['summary']} (torch threads {report['torch_threads']})")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
