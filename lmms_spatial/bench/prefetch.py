"""How long lmms-eval's model thread spends in our code per document, with and without prefetching.

The CPU analogue of the GPU setting of issue 18: MMSI-shaped documents with two 1280x960 PNG
photos each, read undecoded as our ``mmsi_vanilla`` task reads them, requests built as lmms-eval
builds chat requests, and a fake chat model whose ``generate_until`` does exactly what lmms-eval's
``qwen2_5_vl`` chat class does with them (``utils.Collator`` by context, grouped by generation
kwargs, batches of ``batch_size``, ``doc_to_messages(task_dict[task][split][doc_id])`` per request)
and then sleeps ``step_ms`` per document in place of the GPU. The time spent in the model's thread
inside ``doc_to_messages`` is what our code costs the critical path. Run::

    python -m lmms_spatial.bench.prefetch --docs 48 --batch-size 8 --step-ms 604

The model's outputs (a digest of every image it was handed, per document) must be the same in both
modes; the script fails otherwise.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import json
import os
import statistics
import time
from typing import Any

PHOTO_SIZE = (1280, 960)
DISTINCT_IMAGES = 16
TASK, SPLIT = "mmsi_vanilla", "test"


def photo_png(seed: int, size: tuple[int, int] = PHOTO_SIZE) -> bytes:
    """A photo-like PNG (smooth colour field plus sensor-like noise), as /work/shared/reference/gpu/gen_mmsi.py."""
    import numpy as np
    from PIL import Image

    w, h = size
    rng = np.random.default_rng(seed)
    low = rng.random((h // 32 + 2, w // 32 + 2, 3)) * 255
    image = Image.fromarray(low.astype(np.uint8)).resize((w, h), Image.BICUBIC)
    pixels = np.asarray(image).astype(np.int16) + rng.normal(0, 6, (h, w, 3)).astype(np.int16)
    buffer = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def mmsi_documents(n: int):
    """``n`` MMSI-shaped rows, two images each, read undecoded (as the task's ``process_docs`` leaves them)."""
    import datasets

    from lmms_spatial.data.images import undecoded

    pool = [photo_png(seed) for seed in range(DISTINCT_IMAGES)]
    rows: dict[str, list[Any]] = {"id": [], "images": [], "question_type": [], "question": [], "answer": []}
    for i in range(n):
        rows["id"].append(i)
        rows["images"].append([{"bytes": pool[(2 * i + k) % DISTINCT_IMAGES], "path": None} for k in (0, 1)])
        rows["question_type"].append("MSR")
        rows["question"].append(f"Where is object {(i * 7919) % n} relative to the camera?\nOptions: A: left, B: right")
        rows["answer"].append("AB"[i % 2])
    features = datasets.Features(
        {
            "id": datasets.Value("int64"),
            "images": datasets.Sequence(datasets.Image()),
            "question_type": datasets.Value("string"),
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
        }
    )
    return undecoded(datasets.Dataset.from_dict(rows, features=features), "images")


class FakeChatModel:
    """lmms-eval's ``qwen2_5_vl`` chat ``generate_until`` loop, with ``time.sleep`` for the GPU."""

    def __init__(self, task_dict: dict, batch_size: int, step_ms: float) -> None:
        self.task_dict, self.batch_size, self.step_s = task_dict, batch_size, step_ms / 1000
        self.in_our_code: list[float] = []  # seconds in doc_to_messages, per document, in model order
        self.seen: dict[int, list[int]] = {}  # doc_id -> id() of each image handed over (digested later)
        self.images: dict[int, list[Any]] = {}

    def generate_until(self, requests: list) -> list[str]:
        from lmms_eval import utils

        collator = utils.Collator(
            [r.args for r in requests], lambda x: (x[0], x[0]), group_fn=lambda x: x[2], grouping=True
        )
        answers = []
        for chunk in collator.get_batched(n=self.batch_size, batch_fn=None):
            _ctx, doc_to_messages, _gen, doc_ids, tasks, splits = zip(*chunk, strict=True)
            for fn, doc_id, task, split in zip(doc_to_messages, doc_ids, tasks, splits, strict=True):
                doc = self.task_dict[task][split][doc_id]  # lmms-eval's read, not ours: outside the clock
                start = time.perf_counter()
                messages = fn(doc)
                self.in_our_code.append(time.perf_counter() - start)
                self.images[doc_id] = [c["url"] for m in messages for c in m["content"] if c["type"] == "image"]
            time.sleep(self.step_s * len(chunk))  # the GPU
            answers += ["A"] * len(chunk)
        return collator.get_original(answers)


def requests_for(docs) -> list:
    from lmms_eval.api.instance import Instance

    from lmms_spatial.tasks.mmsi import adapter

    kwargs = {"pre_prompt": "", "variant": "vanilla"}
    doc_to_messages = functools.partial(adapter.doc_to_messages, lmms_eval_specific_kwargs=kwargs)
    gen = {"max_new_tokens": 4, "until": ["\n\n"]}
    out = []
    for doc_id in range(len(docs)):
        ctx = adapter.doc_to_text(docs[doc_id], kwargs)
        args = (ctx, doc_to_messages, dict(gen), doc_id, TASK, SPLIT)
        out.append(Instance("generate_until", args, idx=0, metadata={"task": TASK, "doc_id": doc_id, "repeats": 1}))
    return out


def run_once(docs, *, prefetch: bool, batch_size: int, step_ms: float) -> dict[str, Any]:
    from lmms_spatial import prefetch as pf

    model = FakeChatModel({TASK: {SPLIT: docs}}, batch_size, step_ms)
    requests = requests_for(docs)
    previous = os.environ.get(pf.ENV_SWITCH)
    os.environ[pf.ENV_SWITCH] = "1" if prefetch else "0"
    try:
        start = time.perf_counter()
        pf.prefetching(model, model.generate_until, requests)
        wall = time.perf_counter() - start
    finally:
        if previous is None:
            os.environ.pop(pf.ENV_SWITCH, None)
        else:
            os.environ[pf.ENV_SWITCH] = previous
    digests = {
        doc_id: [hashlib.blake2b(im.tobytes(), digest_size=8).hexdigest() for im in images]
        for doc_id, images in sorted(model.images.items())
    }
    per_doc = [s * 1000 for s in model.in_our_code]
    steady = per_doc[batch_size:]  # after the first batch: what a long run pays per document
    stats = pf.last_stats() if prefetch else None
    return {
        "prefetch": prefetch,
        "docs": len(per_doc),
        "ours_ms_per_doc_all": round(statistics.fmean(per_doc), 2),
        "ours_ms_per_doc_steady": round(statistics.fmean(steady), 2) if steady else None,
        "ours_ms_steady_median": round(statistics.median(steady), 2) if steady else None,
        "ours_ms_steady_max": round(max(steady), 2) if steady else None,
        "share_of_step_steady": round(statistics.fmean(steady) / step_ms, 4) if steady else None,
        "wall_ms_per_doc": round(wall * 1000 / len(per_doc), 1),
        "stats": None if stats is None else vars(stats),
        "_digests": digests,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--step-ms", type=float, default=604.0, help="simulated GPU time per document")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)
    import lmms_eval.utils  # noqa: F401  (imported once here: its import time is not the model's)

    docs = mmsi_documents(args.docs)
    results = [run_once(docs, prefetch=p, batch_size=args.batch_size, step_ms=args.step_ms) for p in (False, True)]
    same = results[0].pop("_digests") == results[1].pop("_digests")
    report = {
        "setting": f"{args.docs} MMSI-shaped docs, 2 x {PHOTO_SIZE[0]}x{PHOTO_SIZE[1]} PNG, batch {args.batch_size}, "
        f"simulated step {args.step_ms} ms/doc, {os.cpu_count()} CPUs (CPU analogue: sleep in place of the GPU)",
        "off": results[0],
        "on": results[1],
        "identical_images": same,
    }
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
