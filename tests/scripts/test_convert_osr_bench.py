"""lmms_spatial.tasks.osr_bench.convert: the official CSV layout in, validated normalised rows out."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import datasets
import pytest
from PIL import Image

from lmms_spatial.tasks.osr_bench import features

REPO = Path(__file__).resolve().parents[2]
import lmms_spatial.tasks.osr_bench.convert as convert_osr  # noqa: E402

MAP_PROMPT = "[Task] ... We provide the categories to care about in this scene: {sofa, door, tv}. Focus ONLY ..."
GRID = [[[] for _ in range(10)] for _ in range(10)]
GRID[0][2] = ["sofa"]
GRID[9][9] = ["door", "sofa"]


def _csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["image_id", "turn_id", "question", "answer", "skills_tested"])
        writer.writeheader()
        writer.writerows(rows)


def _scene_rows(scene: str, grid_text: str) -> list[dict]:
    image = f"data/{scene}/rgb.png"
    turns = [
        (0, MAP_PROMPT, grid_text, "cognitive_map"),
        (1, "How many sofa(s) are in this room?", "2", "object_counting"),
        (2, "... closest ...?", "door", "relative_distance"),
    ]
    keys = ("turn_id", "question", "answer", "skills_tested")
    return [{"image_id": image, **dict(zip(keys, turn, strict=True))} for turn in turns]


@pytest.fixture
def release(tmp_path) -> Path:
    src = tmp_path / "OSR-Bench"
    for scene in ("scene-1", "scene-2"):
        (src / "data" / scene).mkdir(parents=True)
        Image.new("RGB", (16, 8), "gray").save(src / "data" / scene / "rgb.png")
    rows = _scene_rows("scene-1", json.dumps(GRID)) + _scene_rows("scene-2", repr(GRID))  # JSON and Python literal
    _csv(src / "qa.csv", rows)
    _csv(src / "qa_with_negative.csv", rows)
    return src


def test_questions_become_rows_with_their_image_map_and_pool(release, tmp_path):
    report = convert_osr.convert(release, tmp_path / "out")
    assert report.rejects == [] and report.written == {"standard": 4, "negative": 4}
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "out" / "standard" / "*.parquet"))["train"]
    assert ds.features == features()
    row = ds[0]
    assert (row["id"], row["scene_id"], row["turn_id"], row["skill"], row["answer"]) == (
        "scene-1:1",
        "scene-1",
        1,
        "object_counting",
        "2",
    )
    assert row["object_pool"] == ["sofa", "door", "tv"]
    assert json.loads(row["cogmap"]) == GRID
    assert json.loads(ds[2]["cogmap"]) == GRID  # the Python-literal grid of scene-2 too


def test_bad_rows_are_reported_by_image_and_turn_and_nothing_is_written(release, tmp_path):
    bad_grid = [[[]] * 10] * 9  # 9 rows
    rows = _scene_rows("scene-3", json.dumps(bad_grid))
    rows[2]["skills_tested"] = "relative_height"
    with open(release / "qa.csv", "a", newline="", encoding="utf-8") as fh:
        csv.DictWriter(fh, fieldnames=list(rows[0])).writerows(rows)
    report = convert_osr.convert(release, tmp_path / "out")
    assert report.rejects == [
        "standard data/scene-3/rgb.png:0: cognitive map is not a 10x10 grid",
        "standard data/scene-3/rgb.png:1: no valid turn-0 cognitive map for this image",
        "standard data/scene-3/rgb.png:2: unknown skill 'relative_height' (known: "
        "('object_counting', 'relative_distance', 'relative_direction'))",
    ]
    assert not (tmp_path / "out" / "standard").exists()


def test_a_missing_image_is_rejected_by_id(release, tmp_path):
    (release / "data" / "scene-2" / "rgb.png").unlink()
    report = convert_osr.convert(release, tmp_path / "out", skip_bad=True)
    assert "standard data/scene-2/rgb.png:1: image data/scene-2/rgb.png not found" in report.rejects
    assert report.written == {"standard": 2, "negative": 2}


def test_missing_csv_columns_stop_the_conversion_naming_them(release, tmp_path):
    (release / "qa.csv").write_text("image_id,question\nx,y\n")
    with pytest.raises(SystemExit, match=r"lacks columns \['turn_id', 'answer', 'skills_tested'\]"):
        convert_osr.convert(release, tmp_path / "out")


def test_an_image_id_leaving_the_release_folder_is_rejected_not_read(release, tmp_path):
    outside = tmp_path / "outside" / "scene-9"
    outside.mkdir(parents=True)
    Image.new("RGB", (16, 8), "red").save(outside / "rgb.png")
    rows = _scene_rows("scene-1", json.dumps(GRID))
    for row in rows:
        row["image_id"] = "../outside/scene-9/rgb.png"
    _csv(release / "qa.csv", rows)
    report = convert_osr.convert(release, tmp_path / "out")
    assert any("points outside the input folder" in r for r in report.rejects), report.rejects
    assert not (tmp_path / "out" / "standard").exists()


def test_conversion_shows_a_bar_per_config_over_its_question_rows(release, tmp_path, progress_bars):
    convert_osr.convert(release, tmp_path / "out")
    # 2 scenes x 2 questions (turn 0 is the map) in each config
    assert [(b.desc, b.total, b.n) for b in progress_bars] == [
        ("convert osr_bench standard", 4, 4),
        ("convert osr_bench negative", 4, 4),
    ]
