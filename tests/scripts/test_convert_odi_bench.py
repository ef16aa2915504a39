"""convert_odi_bench: an image folder + QAs/<task>.jsonl with key variants -> the normalised parquet."""

from __future__ import annotations

import io
import json
from pathlib import Path

import datasets
import pytest
import yaml
from PIL import Image

import lmms_spatial.tasks.odi_bench.convert as conv
from lmms_spatial.data.cards import card_text


def _image(path: Path, colour) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    Image.new("RGB", (64, 32), colour).save(buffer, format="JPEG")
    path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def release(tmp_path) -> Path:
    root = tmp_path / "ODI-Bench"
    _image(root / "images" / "0001.jpg", (200, 0, 0))
    _image(root / "images" / "0002.jpg", (0, 200, 0))
    _jsonl(root / "QAs" / "object_attribute.jsonl", [
        # letter answer, list options with prefixes, explicit open answer
        {"id": 1, "image": "images/0001.jpg", "question": "What color is the sofa on my left?",
         "options": ["A. red", "B. blue", "C. green", "D. white"], "answer": "A", "answer_text": "dark red"},
        # 0-based index answer, dict options, image by file name
        {"qid": 2, "image_path": "0002.jpg", "question": "What is the table made of?",
         "choices": {"A": "wood", "B": "glass", "C": "metal", "D": "stone"}, "gt": 2},
    ])  # fmt: skip
    _jsonl(root / "QAs" / "Existence.jsonl", [
        {"question_id": "e1", "img": "0001", "question": "Is there a dog?", "answer": "yes"},
        {"question_id": "e2", "img": "0002", "query": "Is there a cat?", "answer": False},
    ])  # fmt: skip
    _jsonl(root / "QAs" / "EVO.jsonl", [
        # option text as the answer, separate A-D keys
        {"id": "v1", "image": "images/0002.jpg", "question": "Where is the door?", "A": "Front", "B": "Back",
         "C": "Left", "D": "Right", "answer": "left", "open_answer": "on my left"},
    ])  # fmt: skip
    return root


def test_release_with_key_variants_converts_to_the_normalised_rows(release, tmp_path):
    result = conv.convert(release, tmp_path / "out")
    rows = {r["id"]: r for r in result.rows}
    assert rows["1"]["answer"] == "A" and rows["1"]["options"] == ["red", "blue", "green", "white"]
    assert rows["1"]["answer_text"] == "dark red"
    assert rows["2"]["answer"] == "C" and rows["2"]["answer_text"] == "metal"  # derived from the option
    assert (rows["e1"]["answer"], rows["e2"]["answer"], rows["e2"]["options"]) == ("Yes", "No", [])
    assert rows["e2"]["question"] == "Is there a cat?"
    assert rows["v1"]["task"] == "egocentric_view_orientation" and rows["v1"]["answer"] == "C"
    assert rows["v1"]["answer_text"] == "on my left"
    assert result.derived_answer_text == 3  # qid 2, e1, e2


def test_written_parquet_has_the_hub_card_features_and_the_original_image_bytes(release, tmp_path):
    conv.convert(release, tmp_path / "out")
    (shard,) = sorted((tmp_path / "out").glob("test-*.parquet"))
    assert shard.name == "test-00000-of-00001.parquet"
    ds = datasets.load_dataset(str(tmp_path / "out"))["test"]
    card = card_text("odi_bench")  # the card shipped with the package (the mutation check runs a staged copy)
    front = yaml.safe_load(card.split("---")[1])
    assert ds.features == datasets.Features._from_yaml_list(front["dataset_info"]["features"])
    assert [r for r in ds["task"]] == ["object_attribute", "object_attribute", "existence", "existence",
                                       "egocentric_view_orientation"]  # fmt: skip
    raw = ds.cast_column("image", datasets.Image(decode=False))[0]["image"]["bytes"]
    assert raw == (release / "images" / "0001.jpg").read_bytes()


def test_one_based_indices_are_detected_per_file(tmp_path):
    root = tmp_path / "r"
    _image(root / "a.jpg", (1, 1, 1))
    opts = ["w", "x", "y", "z"]
    _jsonl(root / "QAs" / "counting.jsonl", [
        {"id": 1, "image": "a.jpg", "question": "q", "options": opts, "answer": 4},
        {"id": 2, "image": "a.jpg", "question": "q", "options": opts, "answer": 1},
    ])  # fmt: skip
    rows = conv.collect(root).rows
    assert [r["answer"] for r in rows] == ["D", "A"]


def test_bad_answer_fails_naming_the_file_line_and_field(release, tmp_path):
    _jsonl(release / "QAs" / "ocr.jsonl", [
        {"id": "o1", "image": "0001.jpg", "question": "What is written?", "options": ["EXIT", "STOP", "PARK", "CAFE"],
         "answer": "HOTEL"},
    ])  # fmt: skip
    with pytest.raises(conv.ConversionError) as err:
        conv.convert(release, tmp_path / "out")
    assert f"{release / 'QAs' / 'ocr.jsonl'}:1: field 'answer': answer 'HOTEL' is neither a letter" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_missing_image_and_unknown_task_are_reported_with_file_and_field(release, tmp_path):
    _jsonl(release / "QAs" / "misc.jsonl", [
        {"id": "m1", "image": "nope.jpg", "task": "counting", "question": "How many?", "options": ["1", "2"],
         "answer": "A"},
        {"id": "m2", "image": "0001.jpg", "question": "?", "answer": "yes"},
    ])  # fmt: skip
    with pytest.raises(conv.ConversionError) as err:
        conv.convert(release, tmp_path / "out")
    message = str(err.value)
    assert "misc.jsonl:1: field 'image': no image file 'nope.jpg'" in message
    assert "misc.jsonl:2: field 'task': no task field and the file name 'misc.jsonl' names no ODI-Bench task" in message


def test_an_image_named_by_a_file_name_two_panoramas_share_is_refused_naming_both(release, tmp_path):
    """``0001.jpg`` under images/ and under extra/: which panorama the question is about cannot be known, so the row
    is refused (a guess would pair a question with another scene's image); a row naming it by its path resolves."""
    _image(release / "extra" / "0001.jpg", (0, 0, 200))
    _jsonl(release / "QAs" / "counting.jsonl", [
        {"id": "c1", "image": "0001.jpg", "question": "How many chairs?", "options": ["1", "2"], "answer": "A"},
        {"id": "c2", "image": "images/0001.jpg", "question": "How many lamps?", "options": ["1", "2"], "answer": "B"},
    ])  # fmt: skip
    with pytest.raises(conv.ConversionError) as err:
        conv.convert(release, tmp_path / "out")
    message = str(err.value)
    assert (f"counting.jsonl:1: field 'image': '0001.jpg' matches 2 files, e.g. {release / 'extra' / '0001.jpg'} "
            f"and {release / 'images' / '0001.jpg'}") in message  # fmt: skip
    assert "counting.jsonl:2" not in message  # a path inside the release is not ambiguous
    # the fixture's existence row names the image by its stem, "0001": ambiguous too; nothing else is refused
    assert message.startswith("2 QA rows cannot be converted:")
    assert f"{release / 'QAs' / 'Existence.jsonl'}:1: field 'image': '0001' matches 2 files" in message


def test_yes_no_question_with_a_non_yes_no_answer_is_rejected(release, tmp_path):
    _jsonl(release / "QAs" / "existence.jsonl", [{"id": "x", "image": "0001.jpg", "question": "?", "answer": "maybe"}])
    with pytest.raises(conv.ConversionError, match="existence.jsonl:1: field 'answer': a question without options"):
        conv.convert(release, tmp_path / "out")


def test_skip_bad_writes_the_good_rows_and_the_cli_lists_the_rest(release, tmp_path, capsys):
    _jsonl(release / "QAs" / "ocr.jsonl", [{"id": "o1", "image": "0001.jpg", "question": "q", "options": ["a", "b"],
                                             "answer": "E"}])  # fmt: skip
    assert conv.main([str(release), str(tmp_path / "out"), "--skip-bad"]) == 0
    captured = capsys.readouterr()
    assert "wrote 5 questions" in captured.out
    assert "ocr.jsonl:1: field 'answer': answer letter 'E' out of range for 2 options" in captured.err


def test_writing_shows_a_bar_over_every_row(release, tmp_path, progress_bars):
    conv.convert(release, tmp_path / "out", rows_per_shard=3, row_group=2)  # shards of 3 + 2, groups of 2 + 1
    (bar,) = progress_bars
    assert (bar.desc, bar.total, bar.n) == ("convert odi_bench", 5, 5)


def test_view_orientation_is_egocentric_when_an_allocentric_file_sits_beside_it(release, tmp_path):
    _jsonl(release / "QAs" / "view_orientation.jsonl", [
        {"imagename": "indoor_7", "question": "Where is the door?", "options": ["front", "back", "left", "right"],
         "correct": "D"},
    ])  # fmt: skip
    _jsonl(release / "QAs" / "allocentric.jsonl", [
        {"imagename": "0001.jpg", "question": "Facing the tree, where is the car?", "options": ["left", "right"],
         "correct": 0},
    ])  # fmt: skip
    _image(release / "images_final" / "indoor_7.jpg", (0, 0, 200))
    rows = {r["task"]: r for r in conv.convert(release, tmp_path / "out").rows if "view" in r["task"]}
    ego, allo = rows["egocentric_view_orientation"], rows["allocentric_view_orientation"]
    assert (ego["id"], ego["answer"], ego["answer_text"]) == ("egocentric_view_orientation_1", "D", "right")
    assert (allo["answer"], allo["answer_text"]) == ("A", "left")  # "correct": a 0-based index


def test_view_orientation_alone_needs_a_task_field_as_it_may_hold_both_orientation_tasks(release, tmp_path):
    _jsonl(release / "QAs" / "view_orientation.jsonl", [
        {"image": "0001.jpg", "question": "Where is the door?", "options": ["left", "right"], "correct": "A"},
        {"image": "0001.jpg", "task": "AVO", "question": "Facing the sofa?", "options": ["left", "right"],
         "correct": "B"},
    ])  # fmt: skip
    with pytest.raises(conv.ConversionError) as err:
        conv.convert(release, tmp_path / "out")
    message = str(err.value)
    assert message.startswith("1 QA rows cannot be converted")
    assert (
        "view_orientation.jsonl:1: field 'task': no task field, and 'view_orientation.jsonl' may hold both" in message
    )
