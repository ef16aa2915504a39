"""Perspective scenes with known geometry, drawn with PIL through a pinhole camera.

World axes: X right, Y up, Z forward (ground plane Y = 0). A :class:`Camera` has a position,
a yaw (degrees, positive turns right), a pitch (degrees, positive looks up), no roll, a focal
length and a principal point in pixels. The vanishing point of a 3D direction D is the
projection of the point at infinity along D: with D in camera coordinates (x, y, z),
``(cx + f x / z, cy - f y / z)``, at infinity when z = 0 (D parallel to the image plane).

The perspective *type* of a box-world scene is the number of its three axis directions
with a finite vanishing point (1, 2 or 3 point perspective); every answer in the synthetic
MMPerspective data is computed from these quantities, never typed by hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw

Vec = tuple[float, float, float]
Point = tuple[float, float]

AXES: dict[str, Vec] = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
EPS = 1e-9
NEAR = 0.2

SKY = (206, 222, 236)
GROUND = (196, 186, 160)
GRID = (150, 140, 118)
EDGE = (40, 40, 48)


def _dot(a: Vec, b: Vec) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _sub(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def _norm(a: Vec) -> float:
    return math.sqrt(_dot(a, a))


@dataclass(frozen=True)
class Camera:
    width: int
    height: int
    focal: float
    cx: float
    cy: float
    position: Vec = (0.0, 0.0, 0.0)
    yaw: float = 0.0
    pitch: float = 0.0

    def axes(self) -> tuple[Vec, Vec, Vec]:
        """(right, up, forward) unit vectors in world coordinates."""
        yaw, pitch = math.radians(self.yaw), math.radians(self.pitch)
        forward = (math.sin(yaw) * math.cos(pitch), math.sin(pitch), math.cos(yaw) * math.cos(pitch))
        right = (math.cos(yaw), 0.0, -math.sin(yaw))
        return right, _cross(forward, right), forward

    def to_camera(self, point: Vec) -> Vec:
        right, up, forward = self.axes()
        d = _sub(point, self.position)
        return _dot(d, right), _dot(d, up), _dot(d, forward)

    def _pixel(self, c: Vec) -> Point:
        return self.cx + self.focal * c[0] / c[2], self.cy - self.focal * c[1] / c[2]

    def project(self, point: Vec) -> Point:
        c = self.to_camera(point)
        if c[2] < NEAR:
            raise ValueError(f"point {point} is behind the camera")
        return self._pixel(c)

    def vanishing_point(self, direction: Vec) -> Point | None:
        """Image point where lines along ``direction`` converge; None if at infinity."""
        right, up, forward = self.axes()
        c = (_dot(direction, right), _dot(direction, up), _dot(direction, forward))
        if abs(c[2]) < 1e-6 * _norm(direction):
            return None
        return self._pixel(c)

    def horizon_v(self) -> float:
        """Image row of the horizon (no roll: a horizontal line through every horizontal VP)."""
        return self.cy + self.focal * math.tan(math.radians(self.pitch))

    def finite_vanishing_points(self) -> dict[str, Point]:
        return {name: vp for name, d in AXES.items() if (vp := self.vanishing_point(d)) is not None}

    def perspective_type(self) -> int:
        """1, 2 or 3: how many axis directions of a box world have a finite vanishing point."""
        return len(self.finite_vanishing_points())

    def in_frame(self, point: Point, margin: float = 0.0) -> bool:
        return margin <= point[0] <= self.width - margin and margin <= point[1] <= self.height - margin


class Painter:
    """Draws 3D segments and polygons through a camera (segments clipped at the near plane)."""

    def __init__(self, camera: Camera, background=SKY):
        self.camera = camera
        self.image = Image.new("RGB", (camera.width, camera.height), background)
        self.draw = ImageDraw.Draw(self.image)

    def segment(self, a: Vec, b: Vec, fill=EDGE, width: int = 1) -> None:
        ca, cb = self.camera.to_camera(a), self.camera.to_camera(b)
        if ca[2] < NEAR and cb[2] < NEAR:
            return
        if ca[2] < NEAR or cb[2] < NEAR:
            t = (NEAR - ca[2]) / (cb[2] - ca[2])
            clipped = tuple(ca[i] + t * (cb[i] - ca[i]) for i in range(3))
            ca, cb = (clipped, cb) if ca[2] < NEAR else (ca, clipped)
        self.draw.line([self.camera._pixel(ca), self.camera._pixel(cb)], fill=fill, width=width)

    def polygon(self, points: Sequence[Vec], fill, outline=None) -> None:
        self.draw.polygon([self.camera.project(p) for p in points], fill=fill, outline=outline)


# ---------------------------------------------------------------------------------------
# scenes
# ---------------------------------------------------------------------------------------


def corridor(width: int, height: int, vp: Point, focal: float = 90.0) -> tuple[Image.Image, Camera]:
    """One-point perspective: a straight corridor whose axis converges to ``vp``.

    The camera looks straight down the corridor (yaw = pitch = 0), so X and Y lines stay
    parallel to the image axes and every Z line meets at the principal point = ``vp``
    (which may lie outside the frame: a shifted-lens view).
    """
    cam = Camera(width, height, focal, vp[0], vp[1])
    p = Painter(cam)
    near, far = 0.25, 14.0
    x0, x1, y0, y1 = -1.2, 1.2, -1.0, 1.4
    p.polygon([(x0, y0, near), (x1, y0, near), (x1, y0, far), (x0, y0, far)], fill=(176, 150, 120))  # floor
    p.polygon([(x0, y1, near), (x1, y1, near), (x1, y1, far), (x0, y1, far)], fill=(236, 236, 230))  # ceiling
    p.polygon([(x0, y0, near), (x0, y1, near), (x0, y1, far), (x0, y0, far)], fill=(150, 170, 196))  # left wall
    p.polygon([(x1, y0, near), (x1, y1, near), (x1, y1, far), (x1, y0, far)], fill=(128, 150, 180))  # right wall
    p.polygon([(x0, y0, far), (x1, y0, far), (x1, y1, far), (x0, y1, far)], fill=(90, 90, 100))  # far end
    for x in (-0.6, 0.0, 0.6):  # floor boards along the corridor
        p.segment((x, y0, near), (x, y0, far), fill=(120, 96, 70))
    for z in (0.5, 0.9, 1.5, 2.5, 4.0, 6.5, 10.0):  # door frames: frontal rectangles
        p.segment((x0, y0, z), (x1, y0, z), fill=(70, 60, 50))
        p.segment((x0, y0, z), (x0, y1, z), fill=(70, 60, 50))
        p.segment((x1, y0, z), (x1, y1, z), fill=(70, 60, 50))
        p.segment((x0, y1, z), (x1, y1, z), fill=(70, 60, 50))
    for x in (x0, x1):
        for y in (y0, y1):
            p.segment((x, y, near), (x, y, far), width=2)
    return p.image, cam


@dataclass(frozen=True)
class Box:
    x0: float
    x1: float
    z0: float
    z1: float
    height: float

    def corner(self, x: int, y: int, z: int) -> Vec:
        return ((self.x0, self.x1)[x], (0.0, self.height)[y], (self.z0, self.z1)[z])


def box_scene(camera: Camera, box: Box, colour=(196, 120, 96), highlights=()) -> Image.Image:
    """A box building on a tiled ground plane; the tiles converge to the X and Z vanishing points.

    ``highlights``: ``((a, b), rgb)`` 3D segments drawn thick on top (e.g. LRR's two lines).
    """
    p = Painter(camera)
    horizon = camera.horizon_v()
    p.draw.rectangle((0, max(-1.0, horizon), camera.width, camera.height), fill=GROUND)
    for z in (1.0, 2.0, 3.5, 5.5, 8.0, 12.0, 20.0, 40.0):
        p.segment((-40.0, 0.0, z), (40.0, 0.0, z), fill=GRID)
    for x in range(-12, 13, 2):
        p.segment((float(x), 0.0, 0.5), (float(x), 0.0, 60.0), fill=GRID)
    eye = camera.position
    faces = [  # (outward normal, corner indices, shade)
        ((-1.0, 0.0, 0.0), [(0, 0, 0), (0, 1, 0), (0, 1, 1), (0, 0, 1)], 0.80),
        ((1.0, 0.0, 0.0), [(1, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0, 1)], 0.80),
        ((0.0, 0.0, -1.0), [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)], 1.00),
        ((0.0, 0.0, 1.0), [(0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)], 1.00),
        ((0.0, 1.0, 0.0), [(0, 1, 0), (1, 1, 0), (1, 1, 1), (0, 1, 1)], 1.15),
    ]
    for normal, corners, shade in faces:
        points = [box.corner(*c) for c in corners]
        if _dot(_sub(eye, points[0]), normal) <= 0:  # back face
            continue
        fill = tuple(min(255, int(c * shade)) for c in colour)
        p.polygon(points, fill=fill, outline=EDGE)
        for i in range(4):
            p.segment(points[i], points[(i + 1) % 4], width=1)
    for (a, b), rgb in highlights:
        p.segment(a, b, fill=rgb, width=3)
    return p.image


def line_relation(a: tuple[Vec, Vec], b: tuple[Vec, Vec]) -> str:
    """parallel / perpendicular (intersecting at 90 degrees) / oblique / skew, for 3D lines."""
    da, db = _sub(a[1], a[0]), _sub(b[1], b[0])
    cross = _cross(da, db)
    if _norm(cross) < 1e-9 * _norm(da) * _norm(db):
        return "parallel"
    if abs(_dot(_sub(b[0], a[0]), cross)) > 1e-9:  # not coplanar
        return "skew"
    cosine = abs(_dot(da, db)) / (_norm(da) * _norm(db))
    return "perpendicular" if cosine < 1e-9 else "oblique"


def lens_panels(width: int, height: int, coefficients: Sequence[float]) -> Image.Image:
    """2x2 panels of a square grid; panel i is radially distorted with ``k = coefficients[i]``.

    A grid point at normalised radius r moves to r * (1 + k r^2): k = 0 keeps every line
    straight, k < 0 bends them into barrel (fisheye-like) curves, k > 0 into pincushion.
    """
    image = Image.new("RGB", (width, height), (245, 245, 240))
    draw = ImageDraw.Draw(image)
    pw, ph = width // 2, height // 2
    for index, k in enumerate(coefficients):
        ox, oy = (index % 2) * pw, (index // 2) * ph
        cx, cy, scale = ox + pw / 2, oy + ph / 2, min(pw, ph) / 2 - 4

        def warp(x: float, y: float, k=k, cx=cx, cy=cy, scale=scale) -> Point:
            r2 = x * x + y * y
            return cx + scale * x * (1 + k * r2), cy + scale * y * (1 + k * r2)

        ticks = [-1.0 + 0.4 * i for i in range(6)]
        samples = [-1.0 + 0.1 * i for i in range(21)]
        for t in ticks:
            draw.line([warp(t, s) for s in samples], fill=(30, 60, 120), width=1)
            draw.line([warp(s, t) for s in samples], fill=(30, 60, 120), width=1)
        draw.rectangle((ox, oy, ox + pw - 1, oy + ph - 1), outline=(0, 0, 0))
    return image


# ---------------------------------------------------------------------------------------
# perspective-invariant image operations (robustness variants), applied to images and points
# ---------------------------------------------------------------------------------------


def flip(image: Image.Image, points: Sequence[Point]) -> tuple[Image.Image, list[Point]]:
    w = image.width
    return image.transpose(Image.Transpose.FLIP_LEFT_RIGHT), [(w - x, y) for x, y in points]


def crop(image: Image.Image, points: Sequence[Point], box: tuple[int, int, int, int]):
    x0, y0, _, _ = box
    return image.crop(box), [(x - x0, y - y0) for x, y in points]


def mask(image: Image.Image, points: Sequence[Point], box: tuple[int, int, int, int]):
    out = image.copy()
    ImageDraw.Draw(out).rectangle(box, fill=(128, 128, 128))
    return out, list(points)


def rotate(image: Image.Image, points: Sequence[Point]) -> tuple[Image.Image, list[Point]]:
    """90 degrees counter-clockwise: (x, y) in a W x H image goes to (y, W - x) in H x W."""
    w = image.width
    return image.transpose(Image.Transpose.ROTATE_90), [(y, w - x) for x, y in points]
