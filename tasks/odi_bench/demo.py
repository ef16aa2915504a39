"""Synthetic ODI-Bench items (normalised schema) whose answers follow from the drawn ERP image.

Each item is a small equirectangular panorama (256 × 128 JPEG, :mod:`.erp`) with coloured
shapes, stick-figure people, signs or bars placed at known yaw. Items cycle over the 10 tasks
(item ``i`` has task ``TASKS[i % 10]``), existence alternates Yes / No, every other task is
4-option multiple choice with options shuffled by a seeded RNG, and every item has an
open-ended ground truth (``answer_text``). Bytes are identical on every build.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

from lmms_spatial.data.demo.erp import (
    DIRECTION_YAW,
    draw_bar,
    draw_object,
    draw_person,
    draw_sign,
    erp_canvas,
    yaw_to_direction,
)
from lmms_spatial.metrics.odi_bench import TASKS

WIDTH, HEIGHT = 256, 128
COLOURS = ["red", "blue", "green", "yellow", "purple"]
SHAPES = ["square", "circle", "triangle"]
WORDS = ["EXIT", "CAFE", "HOTEL", "PARK", "STOP"]
FOUR = ["front", "right", "back", "left"]
PHRASE = {"front": "in front of me", "right": "on my right", "back": "behind me", "left": "on my left"}
SIZE = 9


def _jpeg(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def _mcq(correct: str, distractors: list[str], rng: random.Random) -> tuple[list[str], str]:
    options = [correct, *distractors[:3]]
    rng.shuffle(options)
    return options, "ABCD"[options.index(correct)]


def _objects(rng: random.Random, directions: list[str]) -> list[dict]:
    colours = rng.sample(COLOURS, k=len(directions))
    shapes = rng.sample(SHAPES, k=len(directions)) if len(directions) <= len(SHAPES) else None
    return [
        {"colour": c, "shape": shapes[k] if shapes else SHAPES[k % 3], "direction": d}
        for k, (c, d) in enumerate(zip(colours, directions, strict=True))
    ]


def _draw_objects(draw, objects) -> None:
    for o in objects:
        draw_object(draw, o["shape"], o["colour"], DIRECTION_YAW[o["direction"]], -8.0, SIZE, WIDTH, HEIGHT)


def _directions(correct: str) -> list[str]:
    return [d.capitalize() for d in FOUR if d != correct]


def _item(task: str, variant: int, rng: random.Random):
    """(image, question, options, answer, answer_text) for one item of ``task``."""
    image, draw = erp_canvas(WIDTH, HEIGHT)
    if task == "object_attribute":
        objects = _objects(rng, rng.sample(FOUR, k=3))
        _draw_objects(draw, objects)
        t = objects[0]
        question = f"What color is the {t['shape']} {PHRASE[t['direction']]}?"
        options, answer = _mcq(t["colour"], [c for c in COLOURS if c != t["colour"]][:3], rng)
        return image, question, options, answer, t["colour"]
    if task == "human_attribute":
        direction = rng.choice(FOUR)
        shirt = rng.choice(COLOURS)
        draw_person(draw, shirt, DIRECTION_YAW[direction], WIDTH, HEIGHT)
        question = f"What color is the shirt of the person {PHRASE[direction]}?"
        options, answer = _mcq(shirt, [c for c in COLOURS if c != shirt][:3], rng)
        return image, question, options, answer, shirt
    if task == "existence":
        objects = _objects(rng, rng.sample(FOUR, k=2))
        _draw_objects(draw, objects)
        present = variant % 2 == 0
        if present:
            asked = objects[0]
        else:
            drawn = {(o["colour"], o["shape"]) for o in objects}
            colour, shape = next((c, s) for c in COLOURS for s in SHAPES if (c, s) not in drawn)
            asked = {"colour": colour, "shape": shape}
        answer = "Yes" if present else "No"
        return image, f"Is there a {asked['colour']} {asked['shape']} around me?", [], answer, answer
    if task == "counting":
        colour = rng.choice(COLOURS)
        count = rng.randint(1, 4)
        for yaw in rng.sample([-150.0, -90.0, -30.0, 30.0, 90.0, 150.0], k=count):
            draw_object(draw, "circle", colour, yaw, -8.0, SIZE, WIDTH, HEIGHT)
        other = next(c for c in COLOURS if c != colour)
        draw_object(draw, "square", other, 0.0, 30.0, SIZE, WIDTH, HEIGHT)
        options, answer = _mcq(str(count), [str(k) for k in range(1, 6) if k != count], rng)
        return image, f"How many {colour} circles are there around me?", options, answer, str(count)
    if task == "ocr":
        direction = rng.choice(["front", "right", "left"])  # not behind: the border would split the word
        word = rng.choice(WORDS)
        draw_sign(draw, word, DIRECTION_YAW[direction], WIDTH, HEIGHT)
        options, answer = _mcq(word, [w for w in WORDS if w != word], rng)
        return image, f"What is written on the sign {PHRASE[direction]}?", options, answer, word
    if task == "egocentric_view_orientation":
        (t,) = _objects(rng, [rng.choice(FOUR)])
        _draw_objects(draw, [t])
        question = f"In which direction is the {t['colour']} {t['shape']} from my viewpoint?"
        options, answer = _mcq(t["direction"].capitalize(), _directions(t["direction"]), rng)
        return image, question, options, answer, t["direction"]
    if task == "allocentric_view_orientation":
        shirt = rng.choice(COLOURS)
        draw_person(draw, shirt, 0.0, WIDTH, HEIGHT)
        (t,) = _objects(rng, [rng.choice(["right", "back", "left"])])
        _draw_objects(draw, [t])
        # the person stands in front of me facing me: my right is their left, behind me is their front
        theirs = {"right": "left", "left": "right", "back": "front"}[t["direction"]]
        question = (
            f"The person in front of me is facing me. From the person's perspective, where is the "
            f"{t['colour']} {t['shape']}?"
        )
        options, answer = _mcq(theirs.capitalize(), _directions(theirs), rng)
        return image, question, options, answer, theirs
    if task == "scene_simulation":
        a, b = _objects(rng, rng.sample(FOUR, k=2))
        _draw_objects(draw, [a, b])
        relative = yaw_to_direction(DIRECTION_YAW[b["direction"]] - DIRECTION_YAW[a["direction"]])
        question = (
            f"Imagine I turn to face the {a['colour']} {a['shape']}. "
            f"Where is the {b['colour']} {b['shape']} relative to me then?"
        )
        options, answer = _mcq(relative.capitalize(), _directions(relative), rng)
        return image, question, options, answer, relative
    if task == "relative_direction":
        direction = rng.choice([d for d in DIRECTION_YAW if "-" in d])
        (t,) = _objects(rng, [direction])
        _draw_objects(draw, [t])
        yaw = DIRECTION_YAW[direction]
        # distractors orthogonal to the truth (+-90 and 180 degrees), as the paper's
        others = [yaw_to_direction(yaw + d, eight=True) for d in (90.0, 180.0, -90.0)]
        question = f"Where is the {t['colour']} {t['shape']} relative to me?"
        options, answer = _mcq(direction.capitalize(), [o.capitalize() for o in others], rng)
        return image, question, options, answer, direction
    if task == "odi_reasoning":
        draw_bar(draw, "green", 180.0, 6.0, WIDTH, HEIGHT)  # one bar behind me, split by the ERP border
        bars = 1 + variant % 2
        if bars == 2:
            draw_bar(draw, "green", 0.0, 6.0, WIDTH, HEIGHT)
        question = (
            "A green bar appears at both the left and the right edge of the image. "
            "How many green bars are there around me?"
        )
        options, answer = _mcq(str(bars), [str(k) for k in range(1, 5) if k != bars], rng)
        return image, question, options, answer, str(bars)
    raise ValueError(f"unknown ODI-Bench task {task!r}")


def build(out_dir: Path, n: int = 23, seed: int = 0) -> Path:
    """Write ``test.parquet`` with ``n`` items into ``out_dir``.

    Tasks are cycled, so n >= 10 covers all 10; the default 23 gives the first three tasks 3 items
    and the others 2, so question-weighted and task-averaged means differ (as in the real data).
    """
    import datasets

    from lmms_spatial.tasks.odi_bench import features

    rows: dict[str, list] = {k: [] for k in ("id", "image", "task", "question", "options", "answer", "answer_text")}
    for i in range(n):
        task = TASKS[i % len(TASKS)]
        rng = random.Random(f"{seed}:{i}")
        image, question, options, answer, answer_text = _item(task, i // len(TASKS), rng)
        rows["id"].append(f"odi_{i:04d}")
        rows["image"].append({"bytes": _jpeg(image), "path": f"odi_{i:04d}.jpg"})
        rows["task"].append(task)
        rows["question"].append(question)
        rows["options"].append(options)
        rows["answer"].append(answer)
        rows["answer_text"].append(answer_text)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "test.parquet"
    datasets.Dataset.from_dict(rows, features=features()).to_parquet(str(path))
    return path


# every leaf task: 3 settings x 10 ODI tasks
DEMO_TASKS = [f"odi_bench_{setting}_{task}" for setting in ("close", "open", "cot") for task in TASKS]
