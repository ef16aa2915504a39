"""Equirectangular (ERP) images up to 18.7K wide: decode once, optionally at a capped resolution.

ODI-Bench images are up to 12,000 × 6,000 pixels (216 MB as decoded RGB). The tasks keep the
image column undecoded (``datasets.Image(decode=False)``, see :func:`undecoded`), so a dataset
row holds only the compressed bytes, and :func:`decode_erp` turns those bytes into the one
RGB image the model receives:

* **one decode per request**: the bytes are parsed once; no decoded copy is cached between
  documents, so at most the images of the batch being built are in memory at full size;
* **resolution cap** (:class:`ResolutionCap`): ``max_pixels`` (keep the aspect ratio, at most
  that many pixels) or an exact ``size`` (``"512x1024"`` = height × width, the paper's notation;
  Table 11's resize baseline). For JPEG the cap is applied *while decoding* (``Image.draft``:
  libjpeg's DCT scaling decodes at 1/2, 1/4 or 1/8 scale, never below the target), then a
  ``reduce``-then-resample step (``reducing_gap``) brings it to the exact size; for other
  formats the full image is decoded once and downsized. The stored data are never changed.

Users set the cap per task through ``lmms_eval_specific_kwargs`` (``max_pixels`` / ``resize``)
or for a whole run through the environment (:data:`ENV_MAX_PIXELS`, :data:`ENV_RESIZE`; the
environment wins over the YAML). Everything here is reusable by other ERP methods (Omni-CoT's
perspective views and crops start from :func:`decode_erp`).
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from PIL import Image

from lmms_spatial.data.images import BadDocumentError, load_strictly, rebound

ENV_MAX_PIXELS = "LMMS_SPATIAL_ODI_MAX_PIXELS"
ENV_RESIZE = "LMMS_SPATIAL_ODI_RESIZE"

# Table 11's "simple resizing" baseline: 512 x 1024 (height x width).
TABLE11_RESIZE = "512x1024"

_SIZE = re.compile(r"^\s*(\d+)\s*[x×*,]\s*(\d+)\s*$", re.IGNORECASE)


def parse_size(value: Any) -> tuple[int, int]:
    """``"512x1024"`` / ``[512, 1024]`` (height, width) -> ``(width, height)`` for PIL."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        height, width = (int(v) for v in value)
    else:
        match = _SIZE.match(str(value))
        if not match:
            raise ValueError(f"resize must be HEIGHTxWIDTH such as {TABLE11_RESIZE!r}, got {value!r}")
        height, width = int(match.group(1)), int(match.group(2))
    if height <= 0 or width <= 0:
        raise ValueError(f"resize must be positive, got {value!r}")
    return width, height


def _parse_pixels(value: Any) -> int | None:
    if value is None or str(value).strip().lower() in {"", "none", "0", "off", "full"}:
        return None
    text = str(value).strip().lower().replace("_", "")
    if "x" in text or "*" in text:  # "1024*512" / "1024x512": a product
        a, b = re.split(r"[x*]", text, maxsplit=1)
        pixels = int(a) * int(b)
    else:
        pixels = int(float(text))
    if pixels <= 0:
        raise ValueError(f"max_pixels must be positive, got {value!r}")
    return pixels


@dataclass(frozen=True)
class ResolutionCap:
    """How large the image sent to the model may be; all ``None`` = full resolution.

    ``size`` (width, height) resizes to exactly that size; otherwise the image is scaled down
    (never up), keeping its aspect ratio, until it has at most ``max_pixels`` pixels, a long
    side of at most ``max_side`` and a short side of at most ``max_short_side`` (the limits an
    API provider applies, :mod:`lmms_spatial.data.api_images`).
    """

    max_pixels: int | None = None
    size: tuple[int, int] | None = None
    max_side: int | None = None
    max_short_side: int | None = None

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
        *,
        env_max_pixels: str = ENV_MAX_PIXELS,
        env_resize: str = ENV_RESIZE,
    ) -> ResolutionCap:
        """From task options (``max_pixels``, ``resize``), overridden by the environment variables."""
        options = dict(options or {})
        env = os.environ if env is None else env
        resize = env.get(env_resize, "").strip() or options.get("resize")
        max_pixels = env.get(env_max_pixels, "").strip() or options.get("max_pixels")
        size = None
        if resize is not None and str(resize).strip().lower() not in {"", "none", "off", "full"}:
            size = parse_size(resize)
        return cls(max_pixels=_parse_pixels(max_pixels), size=size)

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.size, self.max_pixels, self.max_side, self.max_short_side))

    def _fits(self, long: int, short: int) -> bool:
        return (
            (self.max_pixels is None or long * short <= self.max_pixels)
            and (self.max_side is None or long <= self.max_side)
            and (self.max_short_side is None or short <= self.max_short_side)
        )

    def target_size(self, width: int, height: int) -> tuple[int, int] | None:
        """The output size for a ``width`` × ``height`` image, or None to keep it.

        The short side is scaled and the long side derived from it, so a 2:1 panorama stays
        exactly 2:1 (12000 × 6000 at 1024 × 512 pixels: 1024 × 512).
        """
        if self.size is not None:
            return None if self.size == (width, height) else self.size
        long, short = max(width, height), min(width, height)
        if self._fits(long, short):
            return None
        scales = [1.0]
        if self.max_pixels is not None:
            scales.append(math.sqrt(self.max_pixels / (long * short)))
        if self.max_side is not None:
            scales.append(self.max_side / long)
        if self.max_short_side is not None:
            scales.append(self.max_short_side / short)
        new_short = max(1, int(short * min(scales) + 1e-6))
        new_long = max(1, min(long, round(new_short * long / short)))
        while new_short > 1 and not self._fits(new_long, new_short):  # rounding; floating-point safety
            new_short -= 1
            new_long = max(1, min(long, round(new_short * long / short)))
        return (new_long, new_short) if width >= height else (new_short, new_long)


FULL_RESOLUTION = ResolutionCap()


# ODI-Bench's panoramas reach 18.7K x 9.35K = 175 MP: over Pillow's decompression-bomb warning
# (89.5 MP) and just under its error (179 MP). Panoramas are large by design and decoded
# deliberately (reduced while decoding when capped), so opening one never warns or fails on
# size alone below this bound; every other image, and every other thread, keeps Pillow's limit.
ERP_MAX_PIXELS = 1_000_000_000
# Pillow errors at twice its limit and warns above it: the limit is half our bound
_open = rebound(
    Image.open,
    _decompression_bomb_check=rebound(Image._decompression_bomb_check, MAX_IMAGE_PIXELS=ERP_MAX_PIXELS // 2),
)


def open_erp(value: Any, *, doc_id: Any = "<no id>", field: str = "image") -> Image.Image:
    """A lazily opened image (header parsed, pixels not decoded) from bytes, a dict, a path or a PIL image."""
    try:
        if isinstance(value, Image.Image):
            return value
        if isinstance(value, (bytes, bytearray, memoryview)):
            return _open(io.BytesIO(bytes(value)))
        if isinstance(value, Mapping):
            if value.get("bytes"):
                return _open(io.BytesIO(value["bytes"]))
            if value.get("path"):
                return _open(value["path"])
            raise ValueError("image dict has neither bytes nor path")
        if isinstance(value, str):
            return _open(value)
        raise TypeError(f"unsupported image value of type {type(value).__name__}")
    except Exception as exc:
        raise BadDocumentError(doc_id, field, f"cannot open image ({exc})") from exc


def decode_erp(
    value: Any, cap: ResolutionCap = FULL_RESOLUTION, *, doc_id: Any = "<no id>", field: str = "image"
) -> Image.Image:
    """Decode one ERP image once, at most at the capped resolution, as RGB.

    Raises :class:`~lmms_spatial.data.images.BadDocumentError` (naming document and field)
    when the value is not a readable image.
    """
    image = open_erp(value, doc_id=doc_id, field=field)
    try:
        target = cap.target_size(*image.size)
        if target is not None and image.format == "JPEG":
            # DCT-domain downscale during decoding: the full-size raster is never built.
            image.draft("RGB", target)
        load_strictly(image)  # a truncated file fails here, whatever lmms-eval's global flag says
        if target is not None and image.size != target:
            image = image.resize(target, Image.Resampling.BICUBIC, reducing_gap=2.0)
        return image if image.mode == "RGB" else image.convert("RGB")
    except Exception as exc:
        raise BadDocumentError(doc_id, field, f"cannot decode image ({exc})") from exc
