"""Synthetic MMSI-Bench items (official parquet schema) with answers that follow from the images.

Each item shows one table-top scene of coloured shapes from two camera positions. The
second camera is shifted sideways, so every object moves the other way in image 2:
questions ask which object is left of another, which way the camera moved, and which
object is largest. Options are shuffled by a seeded RNG; the answer letter is exact.
"""

from __future__ import annotations

import random
from pathlib import Path

from lmms_spatial.data.demo.drawing import canvas, draw_shape, png_bytes
from lmms_spatial.metrics.mmsi import CATEGORIES

# the tasks the demo (and the per-benchmark contract test) runs on this fixture
DEMO_TASKS = ["mmsi_vanilla", "mmsi_circular", "mmsi_cot"]

WIDTH, HEIGHT = 192, 128
SHAPES = [("red", "square"), ("blue", "circle"), ("green", "triangle"), ("yellow", "square")]


def _scene(rng: random.Random):
    xs = rng.sample([28, 72, 116, 160], k=3)
    sizes = rng.sample([8, 11, 14, 17], k=3)
    objects = rng.sample(SHAPES, k=3)
    return [{"colour": c, "shape": s, "x": x, "size": z} for (c, s), x, z in zip(objects, xs, sizes, strict=True)]


def _render(objects, shift: int) -> bytes:
    image, draw = canvas(WIDTH, HEIGHT)
    draw.rectangle((0, 96, WIDTH, HEIGHT), fill=(160, 120, 80))  # table edge
    for o in objects:
        draw_shape(draw, o["shape"], o["x"] + shift, 70, o["size"], o["colour"])
    return png_bytes(image)


def _name(o) -> str:
    return f"the {o['colour']} {o['shape']}"


def _question(kind: str, objects, camera_moves_right: bool, rng: random.Random):
    if kind == "left_of":
        target = max(objects, key=lambda o: o["x"])
        left = [o for o in objects if o["x"] < target["x"]]
        correct = _name(min(left, key=lambda o: o["x"]))
        stem = f"Both images show the same table. Which object is furthest to the left of {_name(target)}?"
        distractors = [_name(o) for o in objects if _name(o) != correct] + ["none of them"]
    elif kind == "camera_motion":
        correct = "right" if camera_moves_right else "left"
        stem = "The camera moved sideways between image 1 and image 2. In which direction did the camera move?"
        distractors = ["left" if camera_moves_right else "right", "up", "it did not move"]
    else:
        correct = _name(max(objects, key=lambda o: o["size"]))
        stem = "Considering both images, which object on the table is the largest?"
        distractors = [_name(o) for o in objects if _name(o) != correct] + ["they are all the same size"]
    options = [correct] + distractors[:3]
    rng.shuffle(options)
    letter = "ABCD"[options.index(correct)]
    text = f"{stem}\nOptions: " + ", ".join(f"{k}: {v}" for k, v in zip("ABCD", options, strict=True))
    return text, letter, f"{correct} follows from the object positions in both images."


def build(out_dir: Path, n: int = 12, seed: int = 0) -> Path:
    """Write ``test.parquet`` with ``n`` items (categories cycled) into ``out_dir``."""
    import datasets

    from lmms_spatial.tasks.mmsi import features

    rng = random.Random(seed)
    kinds = ["left_of", "camera_motion", "largest"]
    rows = {"id": [], "images": [], "question_type": [], "question": [], "answer": [], "thought": []}
    rows |= {"mean_normed_duration_seconds": [], "difficulty": []}
    for i in range(n):
        objects = _scene(rng)
        moves_right = rng.random() < 0.5
        shift = -14 if moves_right else 14
        question, answer, thought = _question(kinds[i % len(kinds)], objects, moves_right, rng)
        category = CATEGORIES[i % len(CATEGORIES)]
        if i % 2:  # some copies of the data spell the dash as a hyphen
            category = category.replace("–", "-")
        rows["id"].append(i)
        rows["images"].append([{"bytes": _render(objects, 0)}, {"bytes": _render(objects, shift)}])
        rows["question_type"].append(category)
        rows["question"].append(question)
        rows["answer"].append(answer)
        rows["thought"].append(thought)
        # the release's two descriptive columns, filled without touching the rng (answers unchanged)
        rows["mean_normed_duration_seconds"].append((i % 5 - 2) * 0.5)
        rows["difficulty"].append(("easy", "medium", "hard")[i % 3])
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "test.parquet"
    datasets.Dataset.from_dict(rows, features=features()).to_parquet(str(path))
    return path
