"""lmms_spatial.tasks.osr_bench.convert, edge rows (issue 42): each config read from its own file, every reject
message, the grid and pool parsers on their boundaries, the image cell (bytes or the release path), shards.

Fast: hand-made 16x8 images and CSVs of a few rows; the expected values are written here."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from PIL import Image

import lmms_spatial.tasks.osr_bench.convert as conv
from lmms_spatial.data.column_map import parse as parse_map

FIELDS = ["image_id", "turn_id", "question", "answer", "skills_tested"]
POOL_PROMPT = "We provide the categories to care about in this scene: {sofa, door}. Focus ONLY ..."


def _grid(cell_00: list[str]) -> list:
    grid = [[[] for _ in range(10)] for _ in range(10)]
    grid[0][0] = cell_00
    return grid


def _csv(path: Path, rows: list[dict], fields: list[str] = FIELDS) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _row(scene: str, turn, question: str, answer: str, skill: str) -> dict:
    return {"image_id": f"data/{scene}/rgb.png", "turn_id": turn, "question": question, "answer": answer,
            "skills_tested": skill}  # fmt: skip


def _release(tmp_path: Path, standard: list[dict], negative: list[dict], scenes=("s1", "s2")) -> Path:
    src = tmp_path / "OSR"
    for n, scene in enumerate(scenes):
        (src / "data" / scene).mkdir(parents=True)
        Image.new("RGB", (16, 8), (10 * n, 0, 0)).save(src / "data" / scene / "rgb.png")
    _csv(src / "qa.csv", standard)
    _csv(src / "qa_with_negative.csv", negative)
    return src


def _map(scene: str, cell: str = "sofa") -> dict:
    return _row(scene, 0, POOL_PROMPT, json.dumps(_grid([cell])), "cognitive_map")


def _read(folder: Path) -> list[dict]:
    ds = datasets.load_dataset("parquet", data_files=str(folder / "*.parquet"))["train"]
    return [{k: r[k] for k in ("id", "turn_id", "skill", "answer", "question")} for r in ds]


# --- each config from its own file ----------------------------------------------------------------


def test_the_standard_and_negative_configs_are_read_from_their_own_files(tmp_path):
    standard = [_map("s1"), _row("s1", 1, "How many sofa(s)?", "1", "object_counting")]
    negative = [_map("s1"), _row("s1", 1, "How many tv(s)?", "0", "object_counting"),
                _row("s1", 2, "Which is closest?", "door", "relative_distance")]  # fmt: skip
    src = _release(tmp_path, standard, negative, scenes=("s1",))
    report = conv.convert(src, tmp_path / "out")
    assert report.rows == {"standard": 1, "negative": 2} and report.written == {"standard": 1, "negative": 2}
    assert _read(tmp_path / "out" / "standard") == [
        {"id": "s1:1", "turn_id": 1, "skill": "object_counting", "answer": "1", "question": "How many sofa(s)?"}
    ]
    assert [r["answer"] for r in _read(tmp_path / "out" / "negative")] == ["0", "door"]


def test_each_question_gets_the_map_and_image_of_its_own_scene(tmp_path):
    rows = [_map("s1", "sofa"), _map("s2", "door"), _row("s2", 1, "q", "1", "object_counting"),
            _row("s1", 1, "q", "2", "object_counting")]  # fmt: skip
    src = _release(tmp_path, rows, rows)
    conv.convert(src, tmp_path / "out")
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "out" / "standard" / "*.parquet"))["train"]
    assert [(r["id"], r["scene_id"], json.loads(r["cogmap"])[0][0]) for r in ds] == [
        ("s2:1", "s2", ["door"]),
        ("s1:1", "s1", ["sofa"]),
    ]
    # s1's image is black (0, 0, 0), s2's is (10, 0, 0)
    assert [r["image"].getpixel((0, 0)) for r in ds] == [(10, 0, 0), (0, 0, 0)]


def test_without_embedding_each_row_points_at_its_image_in_the_release(tmp_path):
    rows = [_map("s1"), _row("s1", 1, "q", "1", "object_counting")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    conv.convert(src, tmp_path / "out", embed_images=False)
    (image,) = pq.read_table(tmp_path / "out" / "standard" / "test-00000.parquet").column("image").to_pylist()
    assert image == {"bytes": None, "path": str(src.absolute() / "data" / "s1" / "rgb.png")}


def test_embedded_images_are_the_files_bytes(tmp_path):
    rows = [_map("s1"), _row("s1", 1, "q", "1", "object_counting")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    conv.convert(src, tmp_path / "out")
    (image,) = pq.read_table(tmp_path / "out" / "negative" / "test-00000.parquet").column("image").to_pylist()
    assert image == {"bytes": (src / "data" / "s1" / "rgb.png").read_bytes(), "path": None}


def test_shards_hold_shard_size_questions_and_are_numbered_from_zero(tmp_path):
    rows = [_map("s1")] + [_row("s1", t, f"q{t}", str(t), "object_counting") for t in (1, 2, 3)]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    conv.convert(src, tmp_path / "out", shard_size=2)
    shards = sorted((tmp_path / "out" / "standard").glob("*.parquet"))
    assert [p.name for p in shards] == ["test-00000.parquet", "test-00001.parquet"]
    assert [pq.read_table(p).column("id").to_pylist() for p in shards] == [["s1:1", "s1:2"], ["s1:3"]]


# --- rejects ----------------------------------------------------------------------------------------


def test_a_turn_that_is_not_an_integer_is_rejected_naming_it(tmp_path):
    rows = [_map("s1"), _row("s1", "one", "q", "1", "object_counting"), _row("s1", 2, "q", "1", "object_counting")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    report = conv.convert(src, tmp_path / "out", skip_bad=True)
    assert report.rejects == [
        "standard data/s1/rgb.png:one: turn_id 'one' is not an integer",
        "negative data/s1/rgb.png:one: turn_id 'one' is not an integer",
    ]
    assert report.written == {"standard": 1, "negative": 1}  # turn 2 kept


def test_a_map_question_without_a_pool_is_rejected_and_so_are_its_questions(tmp_path):
    no_pool = {**_map("s1"), "question": "Draw the map of the room."}
    rows = [no_pool, _row("s1", 1, "q", "1", "object_counting")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    report = conv.convert(src, tmp_path / "out")
    assert report.rejects[:2] == [
        "standard data/s1/rgb.png:0: turn-0 question has no '{...}' object pool",
        "standard data/s1/rgb.png:1: no valid turn-0 cognitive map for this image",
    ]
    assert report.written == {} and not (tmp_path / "out").exists()


def test_with_skip_bad_the_good_rows_of_a_config_with_rejects_are_written(tmp_path):
    rows = [_map("s1"), _row("s1", 1, "q", "1", "object_counting"), _row("s1", 2, "q", "x", "relative_height")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    report = conv.convert(src, tmp_path / "out", skip_bad=True)
    assert report.written == {"standard": 1, "negative": 1} and len(report.rejects) == 2
    assert [r["id"] for r in _read(tmp_path / "out" / "standard")] == ["s1:1"]


def test_a_missing_config_file_stops_naming_it(tmp_path):
    rows = [_map("s1"), _row("s1", 1, "q", "1", "object_counting")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    (src / "qa_with_negative.csv").unlink()
    with pytest.raises(SystemExit, match=r"qa_with_negative.csv not found \(expected qa_with_negative.csv in "):
        conv.convert(src, tmp_path / "out")


def test_a_column_map_reads_a_renamed_column(tmp_path):
    fields = ["img", "turn_id", "question", "answer", "skills_tested"]
    rows = [{("img" if k == "image_id" else k): v for k, v in r.items()}
            for r in (_map("s1"), _row("s1", 1, "q", "1", "object_counting"))]  # fmt: skip
    src = _release(tmp_path, [], [], scenes=("s1",))
    _csv(src / "qa.csv", rows, fields)
    _csv(src / "qa_with_negative.csv", rows, fields)
    report = conv.convert(src, tmp_path / "out", column_map=parse_map("osr_bench", "image=img"))
    assert report.rejects == [] and report.written == {"standard": 1, "negative": 1}


# --- the grid and the pool --------------------------------------------------------------------------


def test_a_grid_in_python_literal_text_is_read():
    assert conv.parse_grid(repr(_grid(["sofa", "tv"])))[0][0] == ["sofa", "tv"]


def test_a_grid_that_is_neither_json_nor_a_literal_names_both():
    with pytest.raises(conv.RowError, match=r"^cognitive map is neither JSON nor a Python literal \("):
        conv.parse_grid("[[sofa]]")


@pytest.mark.parametrize(
    "grid",
    [
        [[[] for _ in range(10)] for _ in range(11)],  # 11 rows
        [[[] for _ in range(9)] for _ in range(10)],  # rows of 9
        [[[] for _ in range(10)] for _ in range(9)] + ["x"],  # a row that is no list
        {"0": []},  # no list at all
    ],
)
def test_only_a_10_by_10_grid_is_a_map(grid):
    with pytest.raises(conv.RowError, match=r"^cognitive map is not a 10x10 grid$"):
        conv.parse_grid(json.dumps(grid))


@pytest.mark.parametrize("cell", ["sofa", [""], [1], ["sofa", None]])
def test_a_cell_holds_a_list_of_non_empty_class_names(cell):
    grid = _grid([])
    grid[9][9] = cell
    with pytest.raises(conv.RowError, match=r"^cognitive map cell is not a list of class names$"):
        conv.parse_grid(json.dumps(grid))


def test_the_last_cell_of_the_last_row_is_checked_too():
    grid = _grid([])
    grid[9][9] = ["door"]
    assert conv.parse_grid(json.dumps(grid))[9][9] == ["door"]


def test_the_pool_is_the_braced_list_with_blank_names_dropped():
    question = "... categories to care about in this scene:  { sofa ,door,, tv }. Focus ..."
    assert conv.parse_pool(question) == ["sofa", "door", "tv"]


def test_a_question_without_the_pool_sentence_has_no_pool():
    with pytest.raises(conv.RowError, match=r"^turn-0 question has no '\{\.\.\.\}' object pool$"):
        conv.parse_pool("objects: {sofa, door}")


# --- reading the CSV, writing the folders --------------------------------------------------------------


def test_the_csv_is_read_as_utf_8_with_its_line_breaks_whatever_the_locale(tmp_path, monkeypatch):
    """A question with a non-ASCII name and a quoted CRLF line break comes out exactly as written, also where the
    locale's default encoding is Latin-1 (simulated: an ``open`` without an encoding gets Latin-1)."""
    question = "Wie viele Stühle?\r\nZähle sie."
    rows = [_map("s1"), _row("s1", 1, question, "2", "object_counting")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    real_open = open

    def latin1_locale_open(path, *args, **kwargs):
        kwargs["encoding"] = kwargs.get("encoding") or "latin-1"
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(conv, "open", latin1_locale_open, raising=False)
    conv.convert(src, tmp_path / "out")
    assert [r["question"] for r in _read(tmp_path / "out" / "standard")] == [question]


def test_converting_again_into_the_same_folder_replaces_the_shards(tmp_path):
    rows = [_map("s1"), _row("s1", 1, "q", "1", "object_counting")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    conv.convert(src, tmp_path / "out")
    report = conv.convert(src, tmp_path / "out")
    assert report.written == {"standard": 1, "negative": 1}
    assert [p.name for p in (tmp_path / "out" / "standard").iterdir()] == ["test-00000.parquet"]


def test_one_config_converted_alone_embeds_its_images_by_default(tmp_path):
    rows = [_map("s1"), _row("s1", 1, "q", "1", "object_counting")]
    src = _release(tmp_path, rows, rows, scenes=("s1",))
    report = conv.Report()
    conv.convert_config(src, "negative", tmp_path / "out", report, skip_bad=False, shard_size=10)
    (image,) = pq.read_table(tmp_path / "out" / "negative" / "test-00000.parquet").column("image").to_pylist()
    assert image == {"bytes": (src / "data" / "s1" / "rgb.png").read_bytes(), "path": None}
    assert report.written == {"negative": 1} and report.rows == {"negative": 1}


def test_an_image_cell_holds_the_bytes_or_the_release_path_never_both(tmp_path):
    image = tmp_path / "rgb.png"
    Image.new("RGB", (4, 4), "red").save(image)
    assert conv._image_cell(str(image), "/release/data/s1/rgb.png", True) == {"bytes": image.read_bytes(), "path": None}
    assert conv._image_cell(str(image), "/release/data/s1/rgb.png", False) == {
        "bytes": None,
        "path": "/release/data/s1/rgb.png",
    }


def test_by_default_a_shard_holds_2000_questions(tmp_path):
    # the documented default (--shard-size 2000): 2001 questions make a shard of 2000 and one of 1
    rows = [_map("s1")] + [_row("s1", t, "q", "1", "object_counting") for t in range(1, 2002)]
    src = _release(tmp_path, rows, [_map("s1")], scenes=("s1",))
    conv.convert(src, tmp_path / "out", embed_images=False)
    shards = sorted((tmp_path / "out" / "standard").glob("*.parquet"))
    assert [pq.read_metadata(p).num_rows for p in shards] == [2000, 1]


def test_the_bar_counts_rows(tmp_path, progress_bars):
    rows = [_map("s1"), _row("s1", 1, "q", "1", "object_counting")]
    conv.convert(_release(tmp_path, rows, rows, scenes=("s1",)), tmp_path / "out")
    assert [b.unit for b in progress_bars] == ["row", "row"]
