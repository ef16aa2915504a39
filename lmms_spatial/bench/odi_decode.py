"""ODI decode (``odi`` section): a 12,000 x 6,000 JPEG ERP brought to the model's pixel budget.

Naive (``Image.open().convert("RGB").resize(BICUBIC)``) vs ours
(:func:`lmms_spatial.data.erp_image.decode_erp`: JPEG draft-mode reduced decode, then a
``reducing_gap`` resize): the speed-up and how far the two images differ.
"""

from __future__ import annotations

import io
import statistics
import time
from typing import Any

ODI_MIN_SPEEDUP = 3.0
# ODI decode tolerance: the reduced decode must match the naive output to within these
ODI_MAX_MEAN_ABS_DIFF = 2.0  # grey levels (0-255), mean over all pixels and channels
ODI_MIN_PSNR_DB = 30.0
QWEN_MAX_PIXELS = 1605632  # Qwen2.5-VL's default max_pixels in lmms-eval (2048 merged tokens)


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
