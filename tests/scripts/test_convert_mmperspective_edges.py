"""lmms_spatial.tasks.mmperspective.convert, edge records (issue 42): how an answer becomes a letter, which image
field wins, what is stripped and normalised, and every refusal with the record it names.

Fast: two 8x6 images and a few hand-written records; the expected values are written here."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import datasets
import pytest
from PIL import Image

import lmms_spatial.tasks.mmperspective.convert as conv
from lmms_spatial.data.column_map import parse as parse_map

RED, BLUE = (255, 0, 0), (0, 0, 255)


@pytest.fixture
def images(tmp_path) -> Path:
    folder = tmp_path / "images"
    folder.mkdir()
    Image.new("RGB", (8, 6), RED).save(folder / "a.png")
    Image.new("RGB", (8, 6), BLUE).save(folder / "b.png")
    return folder


def _record(**changes) -> dict:
    record = {"id": "q1", "image": "a.png", "task": "VPP", "question": "Where?", "options": ["left", "right"],
              "answer": "B"}  # fmt: skip
    record.update(changes)
    return {k: v for k, v in record.items() if v is not ...}


def _normalise(folder: Path, **changes) -> dict:
    return conv.normalise_record(_record(**changes), 0, folder)


# --- the answer letter ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "letter"),
    [("B", "B"), ("b", "B"), (" a ", "A"), ("right", "B"), ("left", "A")],
)
def test_an_answer_is_a_letter_of_the_options_or_the_text_of_one(images, answer, letter):
    assert _normalise(images, answer=answer)["answer"] == letter


def test_a_two_letter_option_text_is_read_as_that_option_not_as_letters(images):
    # "ab".upper() == "AB" is a prefix of LETTERS, but only a single letter is a letter answer: "ab" is option B
    assert _normalise(images, options=["x", "ab"], answer="ab")["answer"] == "B"


def test_a_letter_past_the_options_is_kept_as_written_for_the_row_check_to_refuse(images):
    assert _normalise(images, answer="c")["answer"] == "c"


def test_an_answer_that_is_a_letter_of_a_longer_option_list_is_that_letter(images):
    assert _normalise(images, options=["p", "q", "r"], answer="c")["answer"] == "C"


# --- fields -----------------------------------------------------------------------------------------


def test_fields_are_stripped_the_task_upper_cased_the_perturbation_lower_cased(images):
    row = _normalise(images, id=" q7 ", task=" vpp ", question="  Where?  ", robust_group=" g1 ", perturbation=" Flip ")
    assert {k: row[k] for k in ("id", "task", "question", "robust_group", "perturbation")} == {
        "id": "q7",
        "task": "VPP",
        "question": "Where?",
        "robust_group": "g1",
        "perturbation": "flip",
    }


def test_without_a_group_or_perturbation_the_row_is_an_original_outside_any_group(images):
    row = _normalise(images, robust_group="  ", perturbation="")
    assert (row["robust_group"], row["perturbation"]) == (None, "original")


def test_the_images_list_wins_over_a_single_image_and_keeps_its_order(images):
    row = _normalise(images, images=["b.png", "a.png"], image="a.png")
    assert [Image.open(io.BytesIO(i["bytes"])).getpixel((0, 0)) for i in row["images"]] == [BLUE, RED]
    assert [i["path"] for i in row["images"]] == [None, None]


def test_an_empty_images_list_falls_back_to_the_single_image(images):
    row = _normalise(images, images=[], image="b.png")
    assert len(row["images"]) == 1 and row["images"][0]["bytes"] == (images / "b.png").read_bytes()


def test_options_text_is_a_json_list_or_pipe_joined_with_blanks_dropped(images):
    assert _normalise(images, options='["left", "right"]')["options"] == ["left", "right"]
    assert _normalise(images, options=" left | | right |")["options"] == ["left", "right"]
    assert _normalise(images, options=("up", 3))["options"] == ["up", "3"]


def test_options_text_that_starts_like_json_but_is_not_is_refused_naming_the_field(images):
    with pytest.raises(conv.ConversionError, match=r"^record 1 \(id 'q1'\): field 'options' is not a list \("):
        _normalise(images, options="[left, right")


@pytest.mark.parametrize("field", ["id", "task", "question", "options", "answer"])
def test_each_required_field_blank_is_named(images, field):
    empty = {"options": [], "id": ""}.get(field, "  ")  # a blank id names the record by its position only
    where = "record 1" if field == "id" else "record 1 (id 'q1')"
    with pytest.raises(conv.ConversionError, match=rf"^{re.escape(where)}: missing field '{field}'$"):
        _normalise(images, **{field: empty})


def test_a_record_without_any_image_field_is_named(images):
    with pytest.raises(conv.ConversionError, match=r"^record 1 \(id 'q1'\): missing field 'images' \(or 'image'\)$"):
        _normalise(images, image=...)


def test_a_record_is_named_by_its_position_counted_from_one(images):
    with pytest.raises(conv.ConversionError, match=r"^record 3 \(id 'q1'\): missing field 'task'$"):
        conv.normalise_record(_record(task=None), 2, images)


# --- question files and the whole conversion --------------------------------------------------------


def test_a_json_object_holding_questions_is_read_as_its_list(images, tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"questions": [_record(id="x1"), _record(id="x2", image="b.png")]}))
    assert [r["id"] for r in conv.read_records(path)] == ["x1", "x2"]


def test_a_json_object_without_questions_is_refused(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"data": []}))
    with pytest.raises(conv.ConversionError, match=r"q.json: expected a list of question objects$"):
        conv.read_records(path)


def test_jsonl_blank_lines_are_skipped(tmp_path):
    path = tmp_path / "q.JSONL"
    path.write_text(json.dumps(_record(id="x1")) + "\n\n  \n" + json.dumps(_record(id="x2")) + "\n")
    assert [r["id"] for r in conv.read_records(path)] == ["x1", "x2"]


def test_another_suffix_is_refused_naming_it(tmp_path):
    path = tmp_path / "q.yaml"
    path.write_text("- id: q1\n")
    with pytest.raises(conv.ConversionError, match=r"unsupported question file type '.yaml' \(use .json, .jsonl or"):
        conv.read_records(path)


def test_a_missing_question_file_or_image_folder_is_named(images, tmp_path):
    with pytest.raises(conv.ConversionError, match=r"^question file '.*none.json' does not exist$"):
        conv.read_records(tmp_path / "none.json")
    with pytest.raises(conv.ConversionError, match=r"^image folder '.*nowhere' does not exist$"):
        conv.convert(tmp_path / "nowhere", tmp_path / "none.json", tmp_path / "out")


def test_an_empty_question_file_is_refused(images, tmp_path):
    path = tmp_path / "q.json"
    path.write_text("[]")
    with pytest.raises(conv.ConversionError, match=r"q.json: no questions$"):
        conv.convert(images, path, tmp_path / "out")


def test_a_pts_question_needs_two_images_and_others_one(images, tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([_record(task="PTS")]))
    with pytest.raises(
        conv.ConversionError, match=r"q.json: document 'q1', field 'images': a PTS question needs 2 image\(s\), got 1$"
    ):
        conv.convert(images, path, tmp_path / "out")
    path.write_text(json.dumps([_record(images=["a.png", "b.png"])]))
    with pytest.raises(conv.ConversionError, match=r"a VPP question needs 1 image\(s\), got 2$"):
        conv.convert(images, path, tmp_path / "out")


def test_the_written_file_is_test_parquet_in_the_out_folder_with_each_record(images, tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([_record(), _record(id="q2", image="b.png", answer="left")]))
    written = conv.convert(images, path, tmp_path / "out" / "mmp")
    assert written == tmp_path / "out" / "mmp" / "test.parquet"
    ds = datasets.load_dataset("parquet", data_files=str(written))["train"]
    assert (ds["id"], ds["answer"]) == (["q1", "q2"], ["B", "A"])
    assert [row["images"][0].getpixel((0, 0)) for row in ds] == [RED, BLUE]


def test_a_column_map_reads_renamed_fields(images, tmp_path):
    path = tmp_path / "q.json"
    record = _record()
    record["gold"] = record.pop("answer")
    path.write_text(json.dumps([record]))
    written = conv.convert(images, path, tmp_path / "out", parse_map("mmperspective", "answer=gold"))
    assert datasets.load_dataset("parquet", data_files=str(written))["train"]["answer"] == ["B"]


def test_a_csv_that_cannot_be_parsed_is_one_line_naming_the_file(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('id,question\nq1,"' + "x" * 200_000 + '"\n')  # a field past the csv module's 131,072 limit
    with pytest.raises(conv.ConversionError, match=rf"^{re.escape(str(path))}: not valid CSV \(field larger than"):
        conv.read_records(path)


def test_converting_again_into_the_same_folder_replaces_the_file(images, tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([_record()]))
    conv.convert(images, path, tmp_path / "out")
    path.write_text(json.dumps([_record(answer="A")]))
    written = conv.convert(images, path, tmp_path / "out")
    assert datasets.load_dataset("parquet", data_files=str(written))["train"]["answer"] == ["A"]


def test_the_bar_counts_rows(images, tmp_path, progress_bars):
    path = tmp_path / "q.json"
    path.write_text(json.dumps([_record()]))
    conv.convert(images, path, tmp_path / "out")
    assert [(b.unit, b.total) for b in progress_bars] == [("row", 1)]
