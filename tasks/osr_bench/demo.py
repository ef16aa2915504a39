"""Synthetic OSR-Bench panoramas with objects at known cells of the 10x10 cognitive map.

The map is a top-down view with the camera at its centre (between cells 4 and 5); row 0 is
"north", column 9 "east". An object at cell (row, col) is drawn in the equirectangular
panorama at the azimuth of its direction from the camera (north = the image's centre column,
east = three quarters across), lower and larger when it is closer, with its class name
written on it. The ground-truth map, counts, closest objects and directions below are
computed from the same cells, so every answer is exact by construction.

Questions follow the templates of App. A.1 (Algorithm 2); the negative config adds absent
classes to the object pool (App. A.2) and asks about them, with the fixed "not found" answers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from PIL import ImageDraw

from lmms_spatial.data.demo.drawing import canvas, png_bytes
from lmms_spatial.metrics.osr_bench import NOT_FOUND_ANSWERS, relative_direction

WIDTH, HEIGHT = 256, 128
CENTRE = 4.5
COLOURS = [(200, 60, 50), (50, 110, 200), (60, 160, 80), (200, 160, 40), (150, 70, 170), (40, 160, 170)]

# scene id -> {class: [(row, col), ...]}
SCENES = {
    "scene-a": {"chair": [(2, 3), (7, 6)], "table": [(4, 7)], "sofa": [(8, 2)], "tv": [(1, 8)], "lamp": [(6, 0)]},
    "scene-b": {"bed": [(1, 4)], "lamp": [(2, 1), (2, 8)], "door": [(8, 5)], "window": [(4, 9)], "rug": [(6, 3)]},
}
DISTRACTORS = {"scene-a": ["bed", "fridge"], "scene-b": ["sofa", "sink"]}


def grid(objects: dict[str, list[tuple[int, int]]]) -> list[list[list[str]]]:
    cells: list[list[list[str]]] = [[[] for _ in range(10)] for _ in range(10)]
    for name in sorted(objects):
        for r, c in objects[name]:
            cells[r][c].append(name)
    return cells


def render(objects: dict[str, list[tuple[int, int]]]) -> bytes:
    image, draw = canvas(WIDTH, HEIGHT, background=(225, 222, 210))
    draw.rectangle((0, HEIGHT // 2, WIDTH, HEIGHT), fill=(170, 150, 120))  # floor below the horizon
    for i, name in enumerate(sorted(objects)):
        for r, c in objects[name]:
            _draw_object(draw, name, r, c, COLOURS[i % len(COLOURS)])
    return png_bytes(image)


def _draw_object(draw: ImageDraw.ImageDraw, name: str, row: int, col: int, colour) -> None:
    dx, dy = col - CENTRE, row - CENTRE
    azimuth = math.degrees(math.atan2(dx, -dy))  # 0 = north, 90 = east
    distance = math.hypot(dx, dy)
    u = (0.5 + azimuth / 360.0) * WIDTH
    v = HEIGHT / 2 + 40 / max(distance, 1.0)
    half = 4 + 18 / max(distance, 1.0)
    draw.rectangle((u - half, v - half, u + half, v + half), fill=colour, outline=(30, 30, 30))
    draw.text((u - half, v - half - 10), name, fill=(20, 20, 20))


def _closest(objects, source: tuple[int, int], name: str) -> float:
    return min(math.dist(source, p) for p in objects[name])


def _questions(objects, pool: list[str], negative: bool) -> list[tuple[str, str, str]]:
    """(skill, question, answer) rows: 2 counting, 1 distance, 1 direction (+ negatives)."""
    names = sorted(objects)
    unique = [n for n in names if len(objects[n]) == 1]
    out = []
    for name in names[:2]:
        out.append(("object_counting", f"How many {name}(s) are in this room?", str(len(objects[name]))))
    positioning = unique[0]
    candidates = [n for n in names if n != positioning][:4]
    p = objects[positioning][0]
    closest = min(candidates, key=lambda n: _closest(objects, p, n))
    out.append(
        (
            "relative_distance",
            f"Measuring from the closest point of each object, which of these objects ({', '.join(candidates)}) "
            f"is the closest to the {positioning} in this PANORAMA?",
            closest,
        )
    )
    orienting, querying = [n for n in names if n != positioning][:2]
    o = min(objects[orienting], key=lambda q: math.dist(p, q))
    q = min(objects[querying], key=lambda x: math.dist(p, x))
    out.append(
        (
            "relative_direction",
            f"If I am standing by the {positioning} and facing the closest {orienting}, is the closest {querying} to "
            "my front, back, left, right, front-left, front-right, back-left, or back-right in this PANORAMA?",
            relative_direction(p, o, q),
        )
    )
    if negative:
        absent = [n for n in pool if n not in objects]
        out.append(("object_counting", f"How many {absent[0]}(s) are in this room?", "0"))
        out.append(
            (
                "relative_direction",
                f"If I am standing by the {positioning} and facing the closest {absent[1]}, is the closest "
                f"{querying} to my front, back, left, right, front-left, front-right, back-left, or back-right "
                "in this PANORAMA?",
                NOT_FOUND_ANSWERS[3],
            )
        )
    return out


def build(out_dir: Path, n: int = 2) -> Path:
    """Write ``standard/test.parquet`` and ``negative/test.parquet`` for ``n`` (at most 2) scenes."""
    import datasets

    from lmms_spatial.tasks.osr_bench import features

    out_dir = Path(out_dir)
    for config in ("standard", "negative"):
        rows = []
        for scene_id, objects in list(SCENES.items())[:n]:
            pool = sorted(objects) + (DISTRACTORS[scene_id] if config == "negative" else [])
            image = {"bytes": render(objects), "path": None}
            cogmap = json.dumps(grid(objects))
            for turn, (skill, question, answer) in enumerate(_questions(objects, pool, config == "negative"), 1):
                rows.append(
                    {
                        "id": f"{scene_id}:{turn}",
                        "image": image,
                        "scene_id": scene_id,
                        "turn_id": turn,
                        "skill": skill,
                        "question": question,
                        "answer": answer,
                        "object_pool": pool,
                        "cogmap": cogmap,
                    }
                )
        folder = out_dir / config
        folder.mkdir(parents=True, exist_ok=True)
        datasets.Dataset.from_list(rows, features=features()).to_parquet(str(folder / "test.parquet"))
    return out_dir


DEMO_TASKS = [
    f"osr_{protocol}_{config}{suffix}"
    for config in ("standard", "negative")
    for protocol, suffix in (
        ("cogmap", ""),
        ("qa", "_vanilla"),
        ("qa", "_think"),
        ("qa_cogmap", "_vanilla"),
        ("qa_cogmap", "_think"),
    )
]
