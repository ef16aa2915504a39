"""Seconds per document of Omni-CoT's CPU preprocessing on large ERP images (a benchmark, not a test).

One document = decode the ERP JPEG, then render six 512² 90° views (step 1) and three 512² crops of
30°, 60° and 120° (step 2), as ``--model omni_cot`` does. Compared:

* ``py360convert``: the straightforward way, one decode per stage (views, then crops) and
  ``py360convert.e2p`` per image on the full-resolution array;
* ``py360convert, one decode``: the same with a single decode;
* ``pipeline``: one decode and :class:`lmms_spatial.data.projection.ErpProjector` (levels, one
  pad per level, all channels in one remap).

    python -m tools.bench_omni_cot_preprocessing [--sizes 6000x3000,12000x6000] [--repeats 3]

Synthetic JPEGs (smooth gradients + noise, quality 90) are written to a temporary folder first.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import numpy as np
from PIL import Image

from lmms_spatial.data import projection as proj
from lmms_spatial.data.erp_image import decode_erp

VIEWS = proj.views(proj.SIX_VIEWS, 90, 512)
CROPS = [
    proj.View(f"crop{fov}", yaw, pitch, fov, (512, 512))
    for yaw, pitch, fov in [(30, 10, 30), (-100, -20, 60), (150, 40, 120)]
]


def synthetic_jpeg(width: int, height: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 255, width, dtype=np.float32)[None, :]
    y = np.linspace(0, 255, height, dtype=np.float32)[:, None]
    base = np.stack([x + 0 * y, y + 0 * x, (x + y) / 2], axis=-1)
    noise = rng.integers(0, 40, (height, width, 1), dtype=np.uint8)
    array = np.clip(base + noise, 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def baseline(data: bytes, decode_per_stage: bool) -> None:
    image = decode_erp(data)
    proj.project_e2p(image, VIEWS)
    if decode_per_stage:
        image = decode_erp(data)
    proj.project_e2p(image, CROPS)


def pipeline(data: bytes) -> None:
    projector = proj.ErpProjector(decode_erp(data))
    projector.project(VIEWS)
    projector.project(CROPS)


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="6000x3000,12000x6000", help="WIDTHxHEIGHT, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"per document: decode + {len(VIEWS)} views (512², 90°) + {len(CROPS)} crops (512², 30/60/120°)")
    print("| ERP | decode only | py360convert (decode per stage) | py360convert (one decode) | pipeline | speed-up |")
    print("|---|---|---|---|---|---|")
    for size in args.sizes.split(","):
        width, height = (int(v) for v in size.lower().split("x"))
        data = synthetic_jpeg(width, height)
        decode = timed(lambda d=data: decode_erp(d), args.repeats)
        naive = timed(lambda d=data: baseline(d, True), args.repeats)
        once = timed(lambda d=data: baseline(d, False), args.repeats)
        ours = timed(lambda d=data: pipeline(d), args.repeats)
        print(
            f"| {width}×{height} ({len(data) / 1e6:.1f} MB JPEG) | {decode:.2f} s | {naive:.2f} s | {once:.2f} s | "
            f"{ours:.2f} s | {once / ours:.1f}× (vs one decode), {naive / ours:.1f}× (vs per stage) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
