"""ERP panoramas -> perspective images: Omni-CoT's views and crops, the multi-view and video baselines.

Conventions are py360convert 1.0.4's (``e2p(e_img, fov_deg, u_deg, v_deg, out_hw)``, pinned by
``tests/data/test_projection.py``): yaw ``u = 0`` looks at the centre column of the ERP, ``u = +90``
to the right (column 3W/4), ``u = ±180`` behind (the left/right border); pitch ``v > 0`` looks up,
``v = +90`` at the top row. These are the conventions of :mod:`lmms_spatial.data.demo.erp` and of
ODI-Bench's Omni-CoT formulas (paper eq. 1-3), so a box's centre maps straight onto ``e2p``::

    θ = −180° + cx · 360°      φ = 90° − cy · 180°             (cx, cy normalised to [0, 1])
    fov = clip(max((x2 − x1) · 360°, (y2 − y1) · 180°) + margin, 30°, 120°)

Speed (one document = one ERP, many views): :class:`ErpProjector` takes the image decoded once
and renders every view and crop of the document together:

* the ERP is converted to an array once per resolution level, padded once (py360convert pads the
  whole ERP again for every view and channel: 3 × 216 MB of copies per view on a 12K image);
* each view samples the coarsest 2ⁿ-reduced copy of the ERP (PIL ``reduce``: a box filter, so
  also less aliasing) that still has at least ``oversample`` ERP pixels per view pixel at the
  view's centre; a 512² 90° view of a 12K ERP samples a 3K copy, a 512² 30° crop the full image;
* the sampling grids are py360convert's own (``EquirecSampler.from_perspective``, LRU-cached per
  geometry), and all channels are remapped in one ``cv2.remap`` call when OpenCV is present. With
  ``oversample=None`` (always level 0) the output equals ``py360convert.e2p`` bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

# --- view lists ---------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """A perspective view: ``name``, centre ``yaw`` / ``pitch`` (degrees), ``fov`` (degrees), size."""

    name: str
    yaw: float
    pitch: float
    fov: float = 90.0
    out_hw: tuple[int, int] = (512, 512)

    def with_(self, **changes: Any) -> View:
        return View(**{**self.__dict__, **changes})


# Omni-CoT step 1 (sec. 5.1.1): six 90° views.
SIX_VIEWS: tuple[tuple[str, float, float], ...] = (
    ("front", 0.0, 0.0),
    ("right", 90.0, 0.0),
    ("back", 180.0, 0.0),
    ("left", -90.0, 0.0),
    ("top", 0.0, 90.0),
    ("bottom", 0.0, -90.0),
)

# Table 7's multi-view baseline (sec. 5.2.3), in the paper's order. The paper gives names only;
# "top-*" / "bottom-*" are read as pitch ±45° towards the front (yaw 0) or the back (yaw 180).
TWELVE_VIEWS: tuple[tuple[str, float, float], ...] = (
    ("front", 0.0, 0.0),
    ("front-right", 45.0, 0.0),
    ("right", 90.0, 0.0),
    ("right-back", 135.0, 0.0),
    ("back", 180.0, 0.0),
    ("left-back", -135.0, 0.0),
    ("left", -90.0, 0.0),
    ("left-front", -45.0, 0.0),
    ("top-front", 0.0, 45.0),
    ("top-back", 180.0, 45.0),
    ("bottom-front", 0.0, -45.0),
    ("bottom-back", 180.0, -45.0),
)


def views(spec: Sequence[tuple[str, float, float]], fov: float = 90.0, size: int = 512) -> list[View]:
    return [View(name, yaw, pitch, float(fov), (int(size), int(size))) for name, yaw, pitch in spec]


# --- Omni-CoT's box -> NFoV crop (eq. 1-3) ------------------------------------------------


@dataclass(frozen=True)
class Crop:
    """The NFoV crop of one grounding box: centre (θ, φ) and field of view, in degrees."""

    theta: float
    phi: float
    fov: float
    fov_w: float
    fov_h: float


def box_to_crop(box: Sequence[float], margin: float = 10.0, min_fov: float = 30.0, max_fov: float = 120.0) -> Crop:
    """Eq. 1-3 for a box ``(x1, y1, x2, y2)`` normalised to [0, 1] (``cx / W`` = the normalised centre)."""
    x1, y1, x2, y2 = (float(v) for v in box)
    cx, cy = (x1 + x2) / 2.0, (y1 + y2) / 2.0
    theta = -180.0 + cx * 360.0
    phi = 90.0 - cy * 180.0
    fov_w, fov_h = (x2 - x1) * 360.0, (y2 - y1) * 180.0
    fov = min(max(max(fov_w, fov_h) + float(margin), float(min_fov)), float(max_fov))
    return Crop(theta, phi, fov, fov_w, fov_h)


def box_to_crop_pixels(
    box: Sequence[float], width: int, height: int, margin: float = 10.0, min_fov: float = 30.0, max_fov: float = 120.0
) -> Crop:
    """Eq. 1-3 literally, for a box in ERP pixels: ``θ = −180 + cx/W·360``, ``fov_w = (x2−x1)/W·360``."""
    x1, y1, x2, y2 = (float(v) for v in box)
    return box_to_crop((x1 / width, y1 / height, x2 / width, y2 / height), margin, min_fov, max_fov)


HORIZONTAL_WORDS = ("front", "front-right", "right", "back-right", "back", "back-left", "left", "front-left")


def direction_words(theta: float, phi: float) -> str:
    """Words for a direction on the sphere: the nearest of 8 yaw names, qualified by the pitch.

    ``|φ| >= 60``: "top" / "bottom"; ``30 <= |φ| < 60``: "upper <yaw>" / "lower <yaw>"; else the yaw name.
    """
    if phi >= 60.0:
        return "top"
    if phi <= -60.0:
        return "bottom"
    yaw = (theta + 180.0) % 360.0 - 180.0
    index = int(math.floor((yaw % 360.0) / 45.0 + 0.5)) % 8
    name = HORIZONTAL_WORDS[index]
    if phi >= 30.0:
        return f"upper {name}"
    if phi <= -30.0:
        return f"lower {name}"
    return name


# --- the rotating-video baseline (Table 7) --------------------------------------------------


def rotation_schedule(duration_s: float = 12.0, fps: float = 60.0) -> list[tuple[float, float, float]]:
    """``(t, yaw, pitch)`` per frame of the rotating video: front → right → back → left → front, then top, bottom.

    One constant angular speed over the whole path (360° of yaw at pitch 0, then pitch 0 → +90 →
    −90 at yaw 0: 630° in ``duration_s``; 52.5°/s for the paper's 12 s); frame ``i`` at ``t = i / fps``.
    """
    n = max(1, int(round(duration_s * fps)))
    total = 360.0 + 90.0 + 180.0
    out = []
    for i in range(n):
        t = i / fps
        a = total * i / n
        if a < 360.0:
            yaw, pitch = a, 0.0
        elif a < 450.0:
            yaw, pitch = 0.0, a - 360.0
        else:
            yaw, pitch = 0.0, 90.0 - (a - 450.0)
        yaw = (yaw + 180.0) % 360.0 - 180.0
        out.append((round(t, 6), yaw, pitch))
    return out


# --- projection ---------------------------------------------------------------------------


def _pad(array: np.ndarray) -> np.ndarray:
    """py360convert's 1-pixel wrap padding (``EquirecSampler._pad``), for all channels at once."""
    w = array.shape[1]
    padded = np.empty((array.shape[0] + 2, w + 2, *array.shape[2:]), dtype=array.dtype)
    padded[1:-1, 1:-1] = array
    padded[0, 1:-1] = np.roll(array[0], w // 2, axis=0)
    padded[-1, 1:-1] = np.roll(array[-1], w // 2, axis=0)
    padded[:, 0] = padded[:, -2]
    padded[:, -1] = padded[:, 1]
    return padded


def _focal_px_per_degree(view: View) -> float:
    """View pixels per degree at the view's centre (pinhole: f = (w/2) / tan(fov/2) per radian)."""
    return (view.out_hw[1] / 2.0) / math.tan(math.radians(view.fov) / 2.0) * math.pi / 180.0


def choose_level(width: int, height: int, view: View, oversample: float | None = 1.0) -> int:
    """The coarsest 2ⁿ reduction of a ``width`` × ``height`` ERP that keeps ``oversample`` ERP pixels per
    view pixel at the view's centre (ERP width >= oversample · 360° · view px/°); ``None`` -> 0."""
    if oversample is None:
        return 0
    need = oversample * _focal_px_per_degree(view) * 360.0  # ERP width needed
    level = 0
    while width // 2 >= need and height // 2 >= 2:
        width, height, level = width // 2, height // 2, level + 1
    return level


class ErpProjector:
    """All perspective images of one decoded ERP image, rendered together (see the module docstring).

    ``oversample``: ERP pixels per view pixel the chosen resolution level must keep (default 1.0);
    ``None`` always samples the full-resolution ERP (identical to ``py360convert.e2p``).
    """

    def __init__(self, image: Image.Image | np.ndarray, oversample: float | None = 1.0) -> None:
        if isinstance(image, np.ndarray):
            image = Image.fromarray(image)
        self.image = image if image.mode == "RGB" else image.convert("RGB")
        self.oversample = oversample
        self._levels: dict[int, Image.Image] = {0: self.image}
        self._padded: dict[int, np.ndarray] = {}
        self.levels_used: set[int] = set()

    @property
    def size(self) -> tuple[int, int]:
        return self.image.size

    def level_for(self, view: View) -> int:
        return choose_level(*self.size, view, self.oversample)

    def _level(self, level: int) -> Image.Image:
        if level not in self._levels:
            self._levels[level] = self._level(level - 1).reduce(2)
        return self._levels[level]

    def padded(self, level: int) -> np.ndarray:
        if level not in self._padded:
            self._padded[level] = _pad(np.asarray(self._level(level)))
        return self._padded[level]

    def project(self, views_: Sequence[View]) -> list[Image.Image]:
        """Every view, in order; each ERP level is converted and padded once for all of them."""
        from py360convert.utils import EquirecSampler, mode_to_order

        out = []
        for view in views_:
            level = self.level_for(view)
            self.levels_used.add(level)
            padded = self.padded(level)
            h, w = padded.shape[0] - 2, padded.shape[1] - 2
            # exactly the arguments py360convert.e2p passes (u is negated there too)
            sampler = EquirecSampler.from_perspective(
                float(np.deg2rad(view.fov)),
                float(np.deg2rad(view.fov)),
                -float(np.deg2rad(view.yaw)),
                float(np.deg2rad(view.pitch)),
                0.0,
                h,
                w,
                int(view.out_hw[0]),
                int(view.out_hw[1]),
                mode_to_order("bilinear"),
            )
            out.append(Image.fromarray(_remap(sampler, padded)))
        return out


def _remap(sampler: Any, padded: np.ndarray) -> np.ndarray:
    """Sample all channels of a padded ERP with one py360convert sampler's grid."""
    if getattr(sampler, "_use_cv2", False):
        import cv2

        return cv2.remap(padded, sampler._coor_x, sampler._coor_y, interpolation=sampler._order)
    from scipy.ndimage import map_coordinates

    return np.stack(
        [
            map_coordinates(padded[..., c], (sampler._coor_y, sampler._coor_x), order=sampler._order)[..., 0]
            for c in range(padded.shape[2])
        ],
        axis=-1,
    )


def project_e2p(image: Image.Image | np.ndarray, views_: Sequence[View]) -> list[Image.Image]:
    """Reference implementation: ``py360convert.e2p`` once per view on the full-resolution array."""
    import py360convert

    array = np.asarray(image)
    return [
        Image.fromarray(py360convert.e2p(array, v.fov, v.yaw, v.pitch, tuple(v.out_hw), mode="bilinear"))
        for v in views_
    ]


def resized(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``image`` at exactly ``size`` (width, height) (Table 11's resize baseline: (1024, 512))."""
    if image.size == tuple(size):
        return image
    return image.resize(tuple(size), Image.Resampling.BICUBIC, reducing_gap=2.0)
