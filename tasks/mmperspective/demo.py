"""Synthetic MMPerspective items (normalised layout) whose answers follow from the geometry.

Every image is drawn through a pinhole camera (:mod:`perspective_scenes`), and every answer
is computed from that camera: vanishing points are projections of the points at infinity of
the scene's axis directions, the horizon is the image row of every horizontal vanishing point,
the perspective type is the number of finite axis vanishing points, a line relationship comes
from the 3D segments, a lens panel is straight exactly when its distortion coefficient is 0.

- VPP: a one-point corridor, its vanishing point in one quarter of the image.
- CLP: a two-point building with four coloured horizontal lines; one lies on the horizon.
- VAP: a building seen looking up (verticals meet above), down (below) or level (parallel).
- LDP: four grid panels, three radially distorted.
- PTR: a corridor (one-point), a building turned (two-point) or turned and tilted (three-point).
- LRR: two highlighted edges/diagonals of a building: parallel, perpendicular or oblique.
- OVR: a corridor whose vanishing point lies outside the frame, in one quadrant.
- PTS: the same building from two cameras; the perspective type changes (or not).
- VPC: how many axis vanishing points lie inside the frame (0-2).

Robustness groups (VPP, PTR and OVR seeds) add crop / flip / mask / rotate (90 degrees
counter-clockwise) variants: the same transform is applied to the image and to the key
points, and the answer is recomputed (a flip mirrors left and right, a rotation turns the
quarters, the perspective type never changes). Options are shuffled by a seeded RNG once
per question (once per group for robustness: the same option order on every variant).
"""

from __future__ import annotations

import random
from pathlib import Path

from PIL import ImageDraw

from lmms_spatial.data.demo.drawing import COLOURS, png_bytes
from lmms_spatial.metrics.mmperspective import TASKS
from lmms_spatial.tasks.mmperspective.scenes import (
    Box,
    Camera,
    box_scene,
    corridor,
    crop,
    flip,
    lens_panels,
    line_relation,
    mask,
    rotate,
)

W, H = 160, 120
# every leaf task (the demo and the contract test run them all): 9 accuracy tasks + robust, direct and CoT
DEMO_TASKS = [
    f"{prefix}_{t}" for prefix in ("mmperspective", "mmperspective_cot") for t in [*map(str.lower, TASKS), "robust"]
]
PERSPECTIVE_TYPES = {1: "one-point perspective", 2: "two-point perspective", 3: "three-point perspective"}
QUARTERS = {(0, 0): "top-left", (1, 0): "top-right", (0, 1): "bottom-left", (1, 1): "bottom-right"}
MARGIN = 8.0  # a key point is never closer than this (pixels) to a boundary that decides its answer


def _quarter(point, size, outside: bool = False) -> str:
    """Quarter of the image (relative to its centre) holding ``point``; checks it is unambiguous."""
    (x, y), (w, h) = point, size
    if min(abs(x - w / 2), abs(y - h / 2)) < MARGIN:
        raise AssertionError(f"point {point} too close to the centre lines of a {size} image")
    inside = -MARGIN <= x <= w + MARGIN and -MARGIN <= y <= h + MARGIN
    strictly_inside = MARGIN <= x <= w - MARGIN and MARGIN <= y <= h - MARGIN
    if (outside and inside) or (not outside and not strictly_inside):
        raise AssertionError(f"point {point} is not clearly {'outside' if outside else 'inside'} a {size} image")
    return QUARTERS[(int(x > w / 2), int(y > h / 2))]


def _mcq(rng: random.Random, correct: str, distractors: list[str]) -> tuple[list[str], str]:
    options = list(dict.fromkeys([correct] + distractors))
    rng.shuffle(options)
    return options, "ABCDEFGH"[options.index(correct)]


def _row(rid, task, images, question, options, correct, group=None, perturbation="original"):
    return {
        "id": rid,
        "images": [{"bytes": png_bytes(im)} for im in images],
        "task": task,
        "question": question,
        "options": options,
        "answer": "ABCDEFGH"[options.index(correct)],
        "robust_group": group,
        "perturbation": perturbation,
    }


# --- scene parameters ----------------------------------------------------------------------

VP_SPOTS = [(44, 34), (118, 86), (112, 30), (40, 90)]  # one per quarter
OUT_SPOTS = [(-24, -18), (186, 140), (182, -20), (-26, 138)]  # outside the frame, one per quadrant


def _building(yaw: float, pitch: float = 0.0, height: float = 1.6, focal: float = 100.0, cy: float = H / 2):
    camera = Camera(W, H, focal, W / 2, cy, position=(0.0, height, 0.0), yaw=yaw, pitch=pitch)
    _, _, forward = camera.axes()
    fx, fz = forward[0], forward[2]
    scale = 9.0 / max(1e-6, (fx * fx + fz * fz) ** 0.5)
    cx_, cz_ = fx * scale, fz * scale
    box = Box(cx_ - 1.6, cx_ + 1.6, cz_ - 1.6, cz_ + 1.6, 4.5 if pitch >= 0 else 3.0)
    return camera, box


# --- tasks ---------------------------------------------------------------------------------


def _vpp(i, rng):
    vp = VP_SPOTS[i % 4]
    image, _ = corridor(W, H, vp)
    options, _ = _mcq(rng, _quarter(vp, (W, H)), list(QUARTERS.values()))
    correct = _quarter(vp, (W, H))
    return [_row(f"vpp-{i}", "VPP", [image], "Where is the vanishing point in this image?", options, correct)]


def _clp(i, rng):
    camera, box = _building(yaw=[32.0, -38.0][i % 2], cy=[52.0, 70.0][i % 2])
    image = box_scene(camera, box)
    horizon = camera.horizon_v()
    for vp in camera.finite_vanishing_points().values():  # the horizon passes through both VPs
        assert abs(vp[1] - horizon) < 1e-6
    colours = ["red", "blue", "green", "purple"]
    rng.shuffle(colours)
    rows = [horizon, horizon - 30, horizon + 24, horizon + 44 if horizon < 60 else horizon - 52]
    draw = ImageDraw.Draw(image)
    for colour, v in zip(colours, rows, strict=True):
        assert 4 <= v <= H - 4, v
        draw.line([(0, v), (W, v)], fill=COLOURS[colour], width=2)
    correct = f"the {colours[0]} line"
    options, _ = _mcq(rng, correct, [f"the {c} line" for c in colours])
    question = "Which line highlighted in the image is the Horizon Line?"
    return [_row(f"clp-{i}", "CLP", [image], question, options, correct)]


def _view_direction(camera: Camera) -> str:
    vertical = camera.vanishing_point((0.0, 1.0, 0.0))
    if vertical is None:
        return "horizontal (parallel to the ground)"
    return "upward" if vertical[1] < camera.cy else "downward"  # verticals meet above: looking up


def _vap(i, rng):
    pitch, height = [(24.0, 1.2), (-28.0, 9.0), (0.0, 1.6)][i % 3]
    camera, box = _building(yaw=[30.0, -34.0, 36.0][i % 3], pitch=pitch, height=height)
    if pitch > 0:
        box = Box(box.x0, box.x1, box.z0, box.z1, 11.0)
    image = box_scene(camera, box)
    correct = _view_direction(camera)
    choices = ["upward", "downward", "horizontal (parallel to the ground)"]
    options, _ = _mcq(rng, correct, choices)
    return [_row(f"vap-{i}", "VAP", [image], "What direction is the Line of Sight in this image?", options, correct)]


def _ldp(i, rng):
    straight = (i * 3 + 1) % 4
    bends = [-0.28, 0.18, -0.2]
    coefficients = [0.0 if p == straight else bends[(p + i) % 3] for p in range(4)]
    image = lens_panels(W, H, coefficients)
    names = [f"the {q} panel" for q in QUARTERS.values()]
    correct = names[coefficients.index(0.0)]
    options, _ = _mcq(rng, correct, names)
    return [_row(f"ldp-{i}", "LDP", [image], "Which region shows no curved-line distortion?", options, correct)]


def _ptr_scene(i):
    kind = i % 3
    if kind == 0:
        image, camera = corridor(W, H, VP_SPOTS[(i + 1) % 4])
    else:
        camera, box = _building(yaw=[33.0, -36.0][i % 2], pitch=0.0 if kind == 1 else 26.0, height=1.2)
        if kind == 2:
            box = Box(box.x0, box.x1, box.z0, box.z1, 11.0)
        image = box_scene(camera, box)
    return image, PERSPECTIVE_TYPES[camera.perspective_type()]


PTR_CHOICES = list(PERSPECTIVE_TYPES.values()) + ["curvilinear (fisheye) perspective"]


def _ptr(i, rng):
    image, correct = _ptr_scene(i + 1)  # items 0, 1: two-point, three-point (the corridor seeds robustness)
    options, _ = _mcq(rng, correct, PTR_CHOICES)
    return [_row(f"ptr-{i}", "PTR", [image], "What is the perspective type of this image?", options, correct)]


def _lrr(i, rng):
    camera, box = _building(yaw=[34.0, -34.0, 30.0][i % 3])
    near_x = 0 if camera.yaw > 0 else 1  # the face toward the camera
    c = box.corner
    top_x = (c(0, 1, 0), c(1, 1, 0))
    pairs = [
        (top_x, (c(0, 0, 0), c(1, 0, 0))),  # top and bottom edge of the front face
        (top_x, (c(near_x, 1, 0), c(near_x, 1, 1))),  # two edges meeting at the top corner
        ((c(0, 0, 0), c(1, 0, 0)), (c(0, 0, 0), c(1, 1, 0))),  # bottom edge and the face diagonal
    ]
    red, blue = pairs[i % 3]
    image = box_scene(camera, box, highlights=[(red, COLOURS["red"]), (blue, COLOURS["blue"])])
    relation = line_relation(red, blue)
    names = {
        "parallel": "parallel",
        "perpendicular": "perpendicular",
        "oblique": "intersecting at an angle other than 90 degrees",
        "skew": "skew (neither parallel nor intersecting)",
    }
    correct = names[relation]
    options, _ = _mcq(rng, correct, list(names.values()))
    question = "What is the relationship between the red line and the blue line in the 3D space?"
    return [_row(f"lrr-{i}", "LRR", [image], question, options, correct)]


OVR_FOCAL = 50.0  # wide angle: more of the corridor converges toward the out-of-view point
OVR_CHOICES = [f"{q}, outside the image" for q in QUARTERS.values()]


def _ovr(i, rng):
    vp = OUT_SPOTS[(i + 1) % 4]
    image, _ = corridor(W, H, vp, focal=OVR_FOCAL)
    correct = f"{_quarter(vp, (W, H), outside=True)}, outside the image"
    options, _ = _mcq(rng, correct, OVR_CHOICES)
    return [
        _row(f"ovr-{i}", "OVR", [image], "In which quadrant might the vanishing point be located?", options, correct)
    ]


PTS_PAIRS = [
    ((0.0, 0.0), (35.0, 0.0)),
    ((34.0, 0.0), (34.0, 26.0)),
    ((36.0, 0.0), (0.0, 0.0)),
    ((20.0, 0.0), (40.0, 0.0)),
]


def _pts_image(yaw, pitch, box):
    camera = Camera(W, H, 100.0, W / 2, H / 2, position=(0.0, 1.2, 0.0), yaw=yaw, pitch=pitch)
    return box_scene(camera, box), camera.perspective_type()


def _pts(i, rng):
    (yaw1, pitch1), (yaw2, pitch2) = PTS_PAIRS[i % len(PTS_PAIRS)]
    box = Box(1.0, 4.0, 8.0, 11.0, 7.0)  # right of the axis: its left face recedes at yaw 0
    first, t1 = _pts_image(yaw1, pitch1, box)
    second, t2 = _pts_image(yaw2, pitch2, box)
    words = {1: "one-point", 2: "two-point", 3: "three-point"}

    def change(a, b):
        return "no change in perspective type" if a == b else f"{words[a]} to {words[b]} perspective"

    correct = change(t1, t2)
    pool = list(dict.fromkeys(change(a, b) for a in (1, 2, 3) for b in (1, 2, 3)))
    distractors = [p for p in pool if p != correct]
    rng.shuffle(distractors)
    options, _ = _mcq(rng, correct, distractors[:3])
    question = (
        "Both images show the same building from two camera positions. "
        "What changes occur in the perspective type from the first image to the second image?"
    )
    return [_row(f"pts-{i}", "PTS", [first, second], question, options, correct)]


def _vpc(i, rng):
    kind = i % 3
    if kind == 0:
        image, camera = corridor(W, H, VP_SPOTS[(i + 2) % 4])
    else:
        focal, yaw = [(None, None), (52.0, 45.0), (88.0, 35.0)][kind]
        camera, box = _building(yaw=yaw, focal=focal)
        image = box_scene(camera, box)
    vps = camera.finite_vanishing_points().values()
    for vp in vps:  # none ambiguous: clearly inside or clearly outside
        assert camera.in_frame(vp, MARGIN) or not camera.in_frame(vp, -MARGIN), vp
    count = sum(camera.in_frame(vp) for vp in vps)
    options, _ = _mcq(rng, str(count), ["0", "1", "2", "3"])
    question = "How many vanishing points can you identify within the image?"
    return [_row(f"vpc-{i}", "VPC", [image], question, options, str(count))]


BUILDERS = {"VPP": _vpp, "CLP": _clp, "VAP": _vap, "LDP": _ldp, "PTR": _ptr, "LRR": _lrr, "OVR": _ovr, "PTS": _pts}
BUILDERS["VPC"] = _vpc


# --- robustness groups ---------------------------------------------------------------------


def _variants(image, points):
    """(perturbation, image, points) for the original and its four perspective-invariant edits."""
    w, h = image.size
    cw, ch = int(w * 0.75), int(h * 0.75)
    anchor = points[0]
    # keep the key point's side: crop toward it, so an inside point stays inside
    x0 = 0 if anchor[0] < w / 2 else w - cw
    y0 = 0 if anchor[1] < h / 2 else h - ch
    mx = w - 52 if anchor[0] < w / 2 else 4
    my = h - 40 if anchor[1] < h / 2 else 4
    return [
        ("original", image, list(points)),
        ("crop", *crop(image, points, (x0, y0, x0 + cw, y0 + ch))),
        ("flip", *flip(image, points)),
        ("mask", *mask(image, points, (mx, my, mx + 46, my + 34))),
        ("rotate", *rotate(image, points)),
    ]


def _robust_group(g: int, rng: random.Random) -> list[dict]:
    kind = g % 3
    gid = f"robust-{g}"
    if kind == 0:  # VPP seed: the quarter of the vanishing point moves with flips and rotations
        vp = VP_SPOTS[(g + 2) % 4]
        image, _ = corridor(W, H, vp)
        task, question = "VPP", "Where is the vanishing point in this image?"
        choices = list(QUARTERS.values())

        def answer(points, size):
            return _quarter(points[0], size)

        points = [vp]
    elif kind == 1:  # PTR seed: the perspective type is invariant
        image, ptype = _ptr_scene(2)
        task, question = "PTR", "What is the perspective type of this image?"
        choices = PTR_CHOICES

        def answer(points, size, ptype=ptype):
            return ptype

        points = [(0.0, 0.0)]
    else:  # OVR seed: the out-of-view vanishing point's quadrant moves with flips and rotations
        vp = OUT_SPOTS[g % 4]
        image, _ = corridor(W, H, vp, focal=OVR_FOCAL)
        task, question = "OVR", "In which quadrant might the vanishing point be located?"
        choices = OVR_CHOICES

        def answer(points, size):
            return f"{_quarter(points[0], size, outside=True)}, outside the image"

        points = [vp]
    options = list(choices)
    rng.shuffle(options)
    rows = []
    for perturbation, variant, moved in _variants(image, points):
        correct = answer(moved, variant.size)
        rows.append(_row(f"{gid}-{perturbation}", task, [variant], question, options, correct, gid, perturbation))
    return rows


def build_rows(n: int = 2, robust_groups: int = 3, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = [row for task, build in BUILDERS.items() for i in range(n) for row in build(i, rng)]
    rows += [row for g in range(robust_groups) for row in _robust_group(g, rng)]
    return rows


def build(out_dir: Path, n: int = 2, robust_groups: int = 3, seed: int = 0) -> Path:
    """Write ``test.parquet``: ``n`` items per task, then ``robust_groups`` groups of 5 variants."""
    import datasets

    from lmms_spatial.tasks.mmperspective import features

    rows = build_rows(n, robust_groups, seed)
    columns = {c: [r[c] for r in rows] for c in features()}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "test.parquet"
    datasets.Dataset.from_dict(columns, features=features()).to_parquet(str(path))
    return path
