"""Synthetic DORI items (normalised schema) whose answers follow from the drawn geometry.

Scenes are drawn from above (a bird's-eye view) with the camera drawn at the bottom edge,
looking up the image: an object's front is a thick coloured edge with an arrow. Its
heading ``c`` is the clockwise turn (seen from above) that would make it face the camera,
so its front points along ``(sin c, cos c)`` in image coordinates (y down): ``c = 0``
faces the camera, 90 faces the camera's right, 180 faces away. Every answer below is
computed from ``c`` (and from a tilt drawn in a side-view inset for compound rotations, and
from known flips/rotations of an asymmetric house picture for canonical orientation).
Each of the 14 question types gets two items; option texts follow the paper's App. I.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from PIL import Image, ImageDraw

from lmms_spatial.data.demo.drawing import canvas, png_bytes
from lmms_spatial.metrics.dori import GRANULARITIES, TASKS
from lmms_spatial.metrics.extraction import LETTERS

# every leaf task, both prompts: 7 question types x 2 granularities x (structured, unstructured)
DEMO_TASKS = [f"{p}_{t}_{g}" for p in ("dori", "dori_unstructured") for g in GRANULARITIES for t in TASKS]

SIZE = 160
CBD = "Cannot be determined"

COMMON_STEPS_ONE = [
    "Identify Object A and establish its front-facing surface",
    "Determine its orientation relative to the camera",
    "Compare with the provided options",
    "Select the most appropriate answer",
    "Explain your reasoning with specific visual evidence",
]
COMMON_STEPS_TWO = [
    "Identify the object in both images and establish its key features",
    "Compare the object's orientation in both images",
    "Compare with the provided options",
    "Select the most appropriate answer",
    "Explain your reasoning with specific visual evidence",
]
BIRDS_EYE = (
    "Object A is marked with a red bounding box. The scene is seen from above; the camera is drawn at the "
    "bottom edge, looking up the image. The object's front is its thick coloured edge, marked by an arrow."
)


def facing(c: float) -> tuple[float, float]:
    r = math.radians(c)
    return math.sin(r), math.cos(r)


def _camera(draw: ImageDraw.ImageDraw) -> None:
    cx, y = SIZE / 2, SIZE - 14
    draw.polygon([(cx - 10, y + 10), (cx + 10, y + 10), (cx + 5, y), (cx - 5, y)], fill=(60, 60, 60))
    draw.text((cx + 14, y), "camera", fill=(60, 60, 60))


def _object(draw: ImageDraw.ImageDraw, cx: float, cy: float, c: float | None, colour, label: str, half: float = 18):
    """A square body; when ``c`` is given its front edge is thick and an arrow points along it."""
    if c is None:  # no front: a plain disc (orientation cannot be determined)
        draw.ellipse((cx - half, cy - half, cx + half, cy + half), fill=colour)
    else:
        fx, fy = facing(c)
        sx, sy = -fy, fx  # side direction
        corners = [
            (cx + half * (a * fx + b * sx), cy + half * (a * fy + b * sy))
            for a, b in ((1, 1), (1, -1), (-1, -1), (-1, 1))
        ]
        draw.polygon(corners, fill=(200, 200, 200), outline=(90, 90, 90))
        draw.line([corners[0], corners[1]], fill=colour, width=6)
        tip = (cx + 2.2 * half * fx, cy + 2.2 * half * fy)
        draw.line([(cx, cy), tip], fill=colour, width=3)
        draw.ellipse((tip[0] - 4, tip[1] - 4, tip[0] + 4, tip[1] + 4), fill=colour)
    box = (cx - half * 1.6, cy - half * 1.6, cx + half * 1.6, cy + half * 1.6)
    draw.rectangle(box, outline=(220, 30, 30), width=2)
    draw.text((box[0] + 3, box[1] + 2), label, fill=(220, 30, 30))


def scene(headings: list[tuple[float | None, str]], tilt: float | None = None) -> Image.Image:
    """Bird's-eye scene with one or two objects; ``tilt`` adds a side-view inset (degrees)."""
    image, draw = canvas(SIZE, SIZE)
    _camera(draw)
    xs = [SIZE / 2] if len(headings) == 1 else [SIZE * 0.3, SIZE * 0.7]
    for x, (c, label) in zip(xs, headings, strict=True):
        _object(draw, x, SIZE * 0.42, c, (40, 80, 220) if label == "A" else (40, 170, 70), label)
    if tilt is not None:
        ox, oy, r = 24, 22, 14
        draw.rectangle((2, 2, 48, 44), outline=(90, 90, 90))
        draw.text((4, 32), "side", fill=(90, 90, 90))
        t = math.radians(tilt)
        draw.line(
            [(ox - r * math.cos(t), oy + r * math.sin(t)), (ox + r * math.cos(t), oy - r * math.sin(t))],
            fill=(40, 80, 220),
            width=4,
        )
        draw.ellipse(
            (ox + r * math.cos(t) - 3, oy - r * math.sin(t) - 3, ox + r * math.cos(t) + 3, oy - r * math.sin(t) + 3),
            fill=(220, 30, 30),
        )
    return image


def house() -> Image.Image:
    """An asymmetric upright picture: ground at the bottom, sun top-left, chimney on the right."""
    image, draw = canvas(SIZE, SIZE, background=(200, 225, 250))
    draw.rectangle((0, 120, SIZE, SIZE), fill=(90, 160, 70))
    draw.rectangle((50, 75, 110, 120), fill=(200, 120, 80))
    draw.polygon([(42, 75), (80, 45), (118, 75)], fill=(150, 50, 40))
    draw.rectangle((96, 48, 106, 66), fill=(110, 110, 110))
    draw.rectangle((72, 95, 88, 120), fill=(90, 60, 30))
    draw.ellipse((12, 12, 36, 36), fill=(250, 210, 40))
    return image


# --- question builders: each returns (images, question, context, steps, examples, options, correct) ---


def _vp_coarse(c):
    options = ["Directly facing the camera", "Facing away from the camera", "Perpendicular to the camera", CBD]
    correct = CBD if c is None else {0: options[0], 180: options[1], 90: options[2], 270: options[2]}[c]
    return (
        [scene([(c, "A")])],
        "Determine which way Object A's front is facing relative to the camera.",
        BIRDS_EYE + " An object is considered 'front facing' when its front surface is visible from the camera.",
        COMMON_STEPS_ONE,
        ["An object whose front points at the camera is 'Directly facing the camera'"],
        options,
        correct,
    )


def _vp_granular(c):
    options = ["0 degrees to 15 degrees", "65 degrees to 95 degrees", "135 degrees to 180 degrees", CBD]
    deviation = min(c % 360, 360 - c % 360)
    correct = options[0] if deviation <= 15 else options[1] if 65 <= deviation <= 95 else options[2]
    return (
        [scene([(c, "A")])],
        "Determine how much Object A's front surface deviates from being parallel to the camera plane.",
        BIRDS_EYE + " You'll be assessing the angle between Object A's front surface and the camera plane.",
        [
            "Identify Object A and establish its front-facing surface",
            "Estimate the angular deviation between this surface and the camera plane",
            *COMMON_STEPS_ONE[2:],
        ],
        [
            "An object looking directly at the camera: 0-15 degrees",
            "An object perpendicular to the camera: 65-95 degrees",
        ],
        options,
        correct,
    )


def _df_coarse(c):
    options = [
        "Toward the camera",
        "Away from the camera",
        "Leftward relative to the camera plane",
        "Rightward relative to the camera plane",
        CBD,
    ]
    correct = {0: options[0], 180: options[1], 270: options[2], 90: options[3]}[c]
    return (
        [scene([(c, "A")])],
        "Determine which direction Object A's front-facing surface is oriented from the camera's viewpoint.",
        BIRDS_EYE,
        COMMON_STEPS_ONE,
        ['If the front points at the camera, select "Toward the camera"'],
        options,
        correct,
    )


def _df_granular(c):
    options = [
        "0 degrees (facing the camera)",
        "30 degrees left",
        "30 degrees right",
        "90 degrees left",
        "90 degrees right",
        "180 degrees (facing away)",
        CBD,
    ]
    correct = {0: options[0], 330: options[1], 30: options[2], 270: options[3], 90: options[4], 180: options[5]}[c]
    return (
        [scene([(c, "A")])],
        "Identify the precise orientation of Object A's front-facing surface from the camera's viewpoint.",
        BIRDS_EYE + " Left and right are the camera's left and right.",
        COMMON_STEPS_ONE,
        ['A front turned slightly toward the camera\'s left is "30 degrees left"'],
        options,
        correct,
    )


def _sa_coarse(c):
    options = ["Clockwise", "Counterclockwise", "No rotation needed", CBD]
    correct = options[2] if c == 0 else options[0] if 0 < c < 180 else options[1]
    return (
        [scene([(c, "A")])],
        "Determine the shortest direction of rotation for Object A to face the camera.",
        BIRDS_EYE + " Objects rotate around a vertical axis; clockwise is as seen from above (as drawn).",
        COMMON_STEPS_ONE,
        ["If the front points to the camera's right, a clockwise turn is shortest"],
        options,
        correct,
    )


def _sa_granular(c):
    options = ["0 degrees", "45 degrees", "90 degrees", "135 degrees", "180 degrees", CBD]
    return (
        [scene([(c, "A")])],
        "Determine the closest clockwise rotation needed for Object A to face the camera.",
        BIRDS_EYE
        + " Objects can rotate clockwise or counterclockwise around a vertical axis (seen from above as drawn).",
        COMMON_STEPS_ONE,
        [
            "If the object's front is facing to your right, "
            'a "90 degrees" clockwise rotation would make it face the camera'
        ],
        options,
        f"{c} degrees",
    )


_COMPOUND_CONTEXT = (
    "Two images of the same object, seen from above, each with a side-view inset. Rotation around the vertical axis "
    "turns the arrow in the top view; rotation around the horizontal axis tilts the bar in the side view."
)


def _cr_coarse(change):
    h, v = change
    options = ["Only Vertical", "Only Horizontal", "Both Horizontal and Vertical", "No Change", CBD]
    correct = options[3] if not h and not v else options[2] if h and v else options[1] if h else options[0]
    return (
        [scene([(0, "A")], tilt=0), scene([(v, "A")], tilt=h)],
        "Determine what type of rotation the object has undergone between the two images.",
        _COMPOUND_CONTEXT,
        COMMON_STEPS_TWO,
        ['If the object turned to face left or right between images, select "Only Vertical"'],
        options,
        correct,
    )


def _cr_granular(change):
    h, v = change
    pairs = [(0, 90), (90, 90), (90, 180), (180, 0)]
    options = [f"{a} degrees Horizontal then {b} degrees Vertical" for a, b in pairs] + [CBD]
    return (
        [scene([(0, "A")], tilt=0), scene([(v, "A")], tilt=h)],
        "Determine the exact rotation angles the object has undergone between the two images.",
        _COMPOUND_CONTEXT,
        COMMON_STEPS_TWO,
        [
            "An upright bar that ends up flat with no turn in the top view might be "
            '"90 degrees Horizontal then 0 degrees Vertical"'
        ],
        options,
        f"{h} degrees Horizontal then {v} degrees Vertical",
    )


def _io_coarse(pair):
    ca, cb = pair
    options = [
        "They are facing the same direction",
        "They are facing opposite directions",
        "They are facing perpendicular to each other",
        CBD,
    ]
    d = (ca - cb) % 360
    correct = options[0] if d == 0 else options[1] if d == 180 else options[2]
    return (
        [scene([(ca, "A"), (cb, "B")])],
        "Determine if objects A and B are facing each other from their own perspectives.",
        "Objects A and B are marked with boxes in a scene seen from above. "
        "Analyse their relationship from the objects' perspectives.",
        [
            "Identify objects A and B and establish their front-facing surfaces",
            "Mentally position yourself at each object's location",
            *COMMON_STEPS_ONE[2:],
        ],
        ['Two objects whose fronts point toward each other are "facing opposite directions"'],
        options,
        correct,
    )


def io_rotation_label(ca: float, cb: float) -> str:
    """How B must turn to match A's direction, as an App. I option text."""
    r = (cb - ca) % 360  # clockwise turn of B that gives A's heading
    if r == 0:
        return "No rotation"
    if r == 180:
        return "180 degrees in either direction"
    sense, magnitude = ("clockwise", r) if r < 180 else ("counterclockwise", 360 - r)
    for lo, hi in ((0, 45), (46, 90), (91, 135)):
        if magnitude <= hi:
            return f"{lo} to {hi} degrees {sense}"
    raise ValueError(f"no option for a {magnitude} degree turn")


def _io_granular(pair):
    ca, cb = pair
    options = ["No rotation", "180 degrees in either direction", CBD] + [
        f"{lo} to {hi} degrees {s}"
        for lo, hi in ((0, 45), (46, 90), (91, 135))
        for s in ("clockwise", "counterclockwise")
    ]
    return (
        [scene([(ca, "A"), (cb, "B")])],
        "Determine how much Object B would need to rotate to face the same direction as Object A.",
        "Objects A and B are marked with boxes in a scene seen from above; clockwise is as seen from above (as drawn).",
        [
            "Identify objects A and B and establish their front-facing surfaces",
            "Determine how much and in which direction Object B would need to rotate",
            *COMMON_STEPS_ONE[2:],
        ],
        ['If Object B needs to turn slightly right to match Object A\'s direction, select "0 to 45 degrees clockwise"'],
        options,
        io_rotation_label(ca, cb),
    )


def _vs_coarse(pair):
    c1, c2 = pair
    options = ["Yes", "No", CBD]
    return (
        [scene([(c1, "A")]), scene([(c2, "A")])],
        "Determine if the object has rotated between the two images.",
        "Two images of the same object seen from above. Assume the camera remains stationary.",
        COMMON_STEPS_TWO,
        ['Objects that are symmetrical like a ball would be considered "Cannot be determined"'],
        options,
        "No" if c1 == c2 else "Yes",
    )


def _vs_granular(pair):
    c1, c2 = pair
    options = ["0 degrees", "90 degrees", "180 degrees", "270 degrees", CBD]
    return (
        [scene([(c1, "A")]), scene([(c2, "A")])],
        "Determine how many degrees clockwise the object has rotated between the two images.",
        "Two images of the same object seen from above. "
        "Assume the camera remains stationary and the object rotates around a vertical axis.",
        COMMON_STEPS_TWO,
        ['Objects that are symmetrical like a ball would be considered "Cannot be determined"'],
        options,
        f"{int((c1 - c2) % 360)} degrees",
    )


_CANONICAL_CONTEXT = (
    "The image may be flipped or rotated or both. Canonical orientation refers to the standard way objects are "
    "typically viewed (e.g., houses upright with the ground at the bottom)."
)
RESTORE = {  # restoring operation -> how the displayed image was made from the upright one
    "No change needed": lambda im: im,
    "Rotate 180 degrees": lambda im: im.transpose(Image.Transpose.ROTATE_180),
    "Flip vertically": lambda im: im.transpose(Image.Transpose.FLIP_TOP_BOTTOM),
    # restore = flip_h(rotate_90_cw(shown))  =>  shown = rotate_90_ccw(flip_h(upright))
    "Rotate 90 degrees clockwise then flip horizontally": lambda im: im.transpose(
        Image.Transpose.FLIP_LEFT_RIGHT
    ).transpose(Image.Transpose.ROTATE_90),
    # restore = rotate_90_cw(flip_h(shown))  =>  shown = flip_h(rotate_90_ccw(upright))
    "Flip horizontally then rotate 90 degrees clockwise": lambda im: im.transpose(Image.Transpose.ROTATE_90).transpose(
        Image.Transpose.FLIP_LEFT_RIGHT
    ),
}


def _co_coarse(restore):
    options = [
        "Yes, the image is in the canonical orientation",
        "No, the image is not in the canonical orientation",
        CBD,
    ]
    return (
        [RESTORE[restore](house())],
        "Determine if the image is in its canonical orientation.",
        _CANONICAL_CONTEXT,
        [
            "Identify the main objects in the image",
            "Determine their expected canonical orientation",
            "Compare with their current orientation in the image",
            *COMMON_STEPS_ONE[2:],
        ],
        ["A house with its roof at the bottom is not in its canonical orientation"],
        options,
        options[0] if restore == "No change needed" else options[1],
    )


def _co_granular(restore):
    options = [*RESTORE, CBD]
    return (
        [RESTORE[restore](house())],
        "Determine how the image can be restored to its canonical orientation.",
        _CANONICAL_CONTEXT + " Operations are applied in the order given.",
        [
            "Identify the main objects in the image",
            "Determine which rotation and/or flip restores them",
            *COMMON_STEPS_ONE[2:],
        ],
        ['An upside-down house whose chimney stays on the right needs "Rotate 180 degrees"'],
        options,
        restore,
    )


# question type -> (builder, the two parameters of its items)
ITEMS = {
    ("view_parallelism", "coarse"): (_vp_coarse, [90, None]),
    ("view_parallelism", "granular"): (_vp_granular, [0, 180]),
    ("directional_facing", "coarse"): (_df_coarse, [270, 180]),
    ("directional_facing", "granular"): (_df_granular, [330, 90]),
    ("single_axis_rotation", "coarse"): (_sa_coarse, [90, 270]),
    ("single_axis_rotation", "granular"): (_sa_granular, [135, 90]),
    ("compound_rotation", "coarse"): (_cr_coarse, [(90, 0), (90, 90)]),
    ("compound_rotation", "granular"): (_cr_granular, [(90, 180), (180, 0)]),
    ("inter_object_direction", "coarse"): (_io_coarse, [(0, 180), (90, 0)]),
    ("inter_object_direction", "granular"): (_io_granular, [(0, 60), (0, 330)]),
    ("viewer_scene_direction", "coarse"): (_vs_coarse, [(90, 0), (180, 180)]),
    ("viewer_scene_direction", "granular"): (_vs_granular, [(90, 0), (0, 90)]),
    ("canonical_orientation", "coarse"): (_co_coarse, ["No change needed", "Rotate 180 degrees"]),
    ("canonical_orientation", "granular"): (
        _co_granular,
        ["Rotate 90 degrees clockwise then flip horizontally", "Flip vertically"],
    ),
}


def build(out_dir: Path, n: int = 2) -> Path:
    """Write ``test.parquet``: ``n`` (at most 2) items per question type, options shuffled by seed."""
    import datasets

    from lmms_spatial.tasks.dori import features

    rows = []
    rng = random.Random(1)
    for (task, granularity), (builder, params) in ITEMS.items():
        for k, param in enumerate(params[:n]):
            images, question, context, steps, examples, options, correct = builder(param)
            if correct not in options:
                raise AssertionError(f"{task}/{granularity}: {correct!r} is not an option")
            options = list(options)
            rng.shuffle(options)
            rows.append(
                {
                    "id": f"dori-{task}-{granularity}-{k}",
                    "images": [{"bytes": png_bytes(im), "path": None} for im in images],
                    "task": task,
                    "granularity": granularity,
                    "question": question,
                    "context": context,
                    "instructions": steps,
                    "examples": examples,
                    "options": options,
                    "answer": LETTERS[options.index(correct)],
                    "source": "synthetic",
                    "category": "box" if task != "canonical_orientation" else "house",
                    "data_type": "simulated",
                }
            )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "test.parquet"
    datasets.Dataset.from_list(rows, features=features()).to_parquet(str(path))
    return path
