"""Peak memory of loading one 12,000 × 6,000 ERP image through the ODI-Bench task's doc_to_visual.

    python -m tools.bench_odi_image_memory [--width 12000] [--height 6000] [--format JPEG]

Builds a one-row dataset in the normalised layout with a synthetic ERP of that size, then, in a
fresh Python process per setting, loads the task ``odi_bench_close_object_attribute`` through
lmms-eval's TaskManager (``LMMS_SPATIAL_ODI_PATH`` pointing at the dataset), reads the row and
calls the task's ``doc_to_visual`` once. Reported per setting: RSS before the call, peak RSS of
the process (``ru_maxrss``) after it, the difference, and the size of the image handed to the
model. Settings: full resolution, ``max_pixels`` = 1024 × 512, ``resize`` = 512x1024 (Table 11).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, resource, sys, os
def rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
from lmms_eval.tasks import TaskManager, get_task_dict
from lmms_spatial.paths import tasks_dir
tm = TaskManager(include_defaults=False, include_path=tasks_dir())
task = get_task_dict(["odi_bench_close_object_attribute"], tm)["odi_bench_close_object_attribute"]
doc = task.dataset["test"][0]
before_rss = rss_mb()
before_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
images = task.doc_to_visual(doc)
after_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rss_before_mb": round(before_rss, 1), "peak_before_mb": round(before_peak, 1),
                  "peak_after_mb": round(after_peak, 1), "image_size": list(images[0].size),
                  "stored_bytes_mb": round(len(doc["image"]["bytes"]) / 2**20, 2)}))
"""


def build(out_dir: Path, width: int, height: int, fmt: str) -> Path:
    import io

    import datasets

    from lmms_spatial.data.demo.erp import draw_object, draw_sign, erp_canvas
    from lmms_spatial.tasks.odi_bench import features

    image, draw = erp_canvas(width, height)
    size = height / 14
    for k, yaw in enumerate(range(-180, 180, 30)):
        draw_object(draw, ("square", "circle", "triangle")[k % 3], "red", yaw, -8, size, width, height)
    draw_sign(draw, "EXIT", 0.0, width, height)
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    del image, draw
    row = {
        "id": ["big_0"],
        "image": [{"bytes": buffer.getvalue(), "path": f"big.{fmt.lower()}"}],
        "task": ["object_attribute"],
        "question": ["What color is the square in front of me?"],
        "options": [["red", "blue", "green", "yellow"]],
        "answer": ["A"],
        "answer_text": ["red"],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "test.parquet"
    datasets.Dataset.from_dict(row, features=features()).to_parquet(str(path))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=12000)
    parser.add_argument("--height", type=int, default=6000)
    parser.add_argument("--format", default="JPEG", choices=["JPEG", "PNG"])
    args = parser.parse_args(argv)
    settings = {
        "full resolution": {},
        "max_pixels=524288 (1024x512)": {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"},
        "resize=512x1024 (Table 11)": {"LMMS_SPATIAL_ODI_RESIZE": "512x1024"},
    }
    with tempfile.TemporaryDirectory() as tmp:
        data = build(Path(tmp) / "data", args.width, args.height, args.format)
        print(
            f"{args.width}x{args.height} {args.format}, stored {data.stat().st_size / 2**20:.1f} MB parquet; "
            f"decoded RGB = {args.width * args.height * 3 / 2**20:.0f} MB"
        )
        print(f"{'setting':<32} {'RSS before':>11} {'peak after':>11} {'delta':>8}  image to model")
        for name, extra in settings.items():
            env = {k: v for k, v in os.environ.items() if not k.startswith("LMMS_SPATIAL_")}
            env.update(
                extra,
                LMMS_SPATIAL_ODI_PATH=str(data.parent),
                HF_HOME=str(Path(tmp) / "hf"),
                HF_DATASETS_OFFLINE="1",
                HF_HUB_OFFLINE="1",
            )
            proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                return 1
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            delta = r["peak_after_mb"] - r["rss_before_mb"]
            print(
                f"{name:<32} {r['rss_before_mb']:>9.0f}MB {r['peak_after_mb']:>9.0f}MB {delta:>6.0f}MB  "
                f"{r['image_size'][0]}x{r['image_size'][1]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
