"""Fake Hub releases, in their published layout, placed in a Hugging Face cache the way
``huggingface_hub`` leaves them: ``datasets--<owner>--<name>/{blobs,refs/<revision>,snapshots/<commit>}``,
the snapshot's files being links into ``blobs/``. Tests then run with ``HF_HUB_OFFLINE=1``.

Layouts (what was verified and what is assumed is in each hub card):
- OSR-Bench: ``qa.csv``, ``qa_with_negative.csv`` (image_id, turn_id, question, answer,
  skills_tested), ``data/<scene>/rgb.png``; turn 0 of a scene is its cognitive map.
- ODI-Bench: ``images_final/`` plus ``QAs/<task>.jsonl`` as a third-party loader reads them (keys not
  published: the spellings that loader tries first).
- DORI: question files with images beside them (layout not published: the converter's spellings).
- MMSI-Bench: one ``MMSI_Bench.parquet`` at the top (several independent loaders read that file)
  and a card whose ``configs`` make it split ``test`` (assumed: the tasks read ``test`` online).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

from PIL import Image

GRID_SIZE = 10


def place_in_hub_cache(
    hub_cache: Path, repo_id: str, files: dict[str, bytes], revision: str = "main", commit: str | None = None
) -> Path:
    """Write ``files`` as a cached snapshot of dataset ``repo_id``; returns the snapshot folder.

    The snapshot is named ``commit`` (a pinned release's commit), else a hash of the files.
    """
    repo = Path(hub_cache) / f"datasets--{repo_id.replace('/', '--')}"
    if commit is None:
        digests = sorted((k, hashlib.sha1(v).hexdigest()) for k, v in files.items())
        commit = hashlib.sha1(repr(digests).encode()).hexdigest()
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(Path(*[".."] * (len(Path(name).parts) + 1), "blobs", blob.name))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / revision).write_text(commit)
    return snapshot


def png(colour, size=(32, 16)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def jpeg(colour, size=(64, 32)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="JPEG")
    return buffer.getvalue()


def _csv(rows: list[dict]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["image_id", "turn_id", "question", "answer", "skills_tested"])
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode()


def osr_release(scenes=("scene-1", "scene-2")) -> dict[str, bytes]:
    """Two scenes, a map and three questions each (one per skill); the negative file adds one question per scene
    about an absent chair."""
    grid = [[[] for _ in range(GRID_SIZE)] for _ in range(GRID_SIZE)]
    grid[0][2], grid[9][9] = ["sofa"], ["door"]
    pool = "We provide the categories to care about in this scene: {sofa, door}. Focus ONLY on these."
    rows = []
    for scene in scenes:
        image = f"data/{scene}/rgb.png"
        rows += [
            {"image_id": image, "turn_id": 0, "question": pool, "answer": json.dumps(grid),
             "skills_tested": "cognitive_map"},
            {"image_id": image, "turn_id": 1, "question": "How many sofa(s) are in this room?", "answer": "1",
             "skills_tested": "object_counting"},
            {"image_id": image, "turn_id": 2, "question": "Which is closer to the sofa, the door or the sofa?",
             "answer": "door", "skills_tested": "relative_distance"},
            {"image_id": image, "turn_id": 3, "question": "If I stand by the sofa facing the door, where is the door?",
             "answer": "front", "skills_tested": "relative_direction"},
        ]  # fmt: skip
    # negative sampling adds a question about an object that is not in the room (the two files must differ, so a
    # converter that reads one file for both configs is caught)
    negative = rows + [
        {"image_id": f"data/{scene}/rgb.png", "turn_id": 4, "question": "How many chair(s) are in this room?",
         "answer": "0", "skills_tested": "object_counting"} for scene in scenes
    ]  # fmt: skip
    files = {"README.md": b"---\nlicense: mit\n---\n", "qa.csv": _csv(rows), "qa_with_negative.csv": _csv(negative)}
    files.update({f"data/{scene}/rgb.png": png((40 * i, 90, 160)) for i, scene in enumerate(scenes)})
    # files the tasks do not read (the release ships them per scene): never downloaded
    files.update({f"data/{scene}/cognitive_map.json": b"{}" for scene in scenes})
    return files


def odi_release() -> dict[str, bytes]:
    """Two panoramas and four of the QA files a third-party loader reads from the release.

    Folders and file names as that loader reads them (``images_final/``, ``QAs/<file>.jsonl``,
    image ids such as ``indoor_...``); the keys are not published: the spellings it tries first,
    multiple choice as ``options`` + ``correct``, and no question id.
    """
    qa = [
        {"image": "indoor_0001.jpg", "question": "What color is the sofa?",
         "options": ["A. red", "B. blue", "C. green", "D. white"], "correct": "A"},
        {"image": "outdoor_0002.jpg", "question": "What is the table made of?",
         "options": ["A. wood", "B. glass", "C. metal", "D. stone"], "correct": "B"},
    ]  # fmt: skip
    existence = [
        {"image": "indoor_0001.jpg", "question": "Is there a dog?", "answer": "yes"},
        {"image": "outdoor_0002.jpg", "question": "Is there a cat?", "answer": "no"},
    ]
    ego = [{"image": "indoor_0001.jpg", "question": "Where is the door?", "options": ["front", "back", "left", "right"],
            "correct": "C"}]  # fmt: skip
    allo = [{"image": "outdoor_0002.jpg", "question": "Facing the tree, where is the car?",
             "options": ["front", "back", "left", "right"], "correct": "D"}]  # fmt: skip

    def jsonl(rows: list[dict]) -> bytes:
        return "".join(json.dumps(r) + "\n" for r in rows).encode()

    return {
        "README.md": b"",
        "images_final/indoor_0001.jpg": jpeg((200, 0, 0)),
        "images_final/outdoor_0002.jpg": jpeg((0, 200, 0)),
        "QAs/object_attribute.jsonl": jsonl(qa),
        "QAs/existence.jsonl": jsonl(existence),
        "QAs/view_orientation.jsonl": jsonl(ego),
        "QAs/allocentric.jsonl": jsonl(allo),
    }


def dori_release() -> dict[str, bytes]:
    """Two coarse view-parallelism questions with their images."""
    rows = [
        {"id": f"vp-{i}", "task": "view_parallelism", "granularity": "coarse",
         "question": "Determine which way Object A's front is facing relative to the camera.",
         "options": ["Directly facing the camera", "Facing away from the camera", "Cannot be determined"],
         "answer": "AB"[i], "image": f"images/{i}.png", "source": "JTA"}
        for i in range(2)
    ]  # fmt: skip
    files = {f"images/{i}.png": png((90 * i, 30, 30)) for i in range(2)}
    files["questions.jsonl"] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    return files


MMSI_CARD = b"""---
configs:
- config_name: default
  data_files:
  - split: test
    path: MMSI_Bench.parquet
---
"""


def mmsi_release(parquet: bytes) -> dict[str, bytes]:
    return {"README.md": MMSI_CARD, "MMSI_Bench.parquet": parquet}
