"""lmms_spatial.tasks.mmperspective.convert: images + JSON/CSV questions in, the normalised layout out, clear
rejects."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import datasets
import pytest
from PIL import Image

from lmms_spatial.tasks.mmperspective import features

REPO = Path(__file__).resolve().parents[2]
import lmms_spatial.tasks.mmperspective.convert as convert_mmperspective  # noqa: E402

QUESTIONS = [
    {"id": "q1", "image": "a.png", "task": "vpp", "question": "Where is the vanishing point?", "answer": "B"},
    {"id": "q2", "images": ["a.png", "b.png"], "task": "PTS", "question": "What changes?", "answer": "no change"},
    {"id": "q3", "image": "b.png", "task": "PTR", "question": "Type?", "answer": "A", "robust_group": "s1"},
    {"id": "q4", "image": "b.png", "task": "PTR", "question": "Type?", "answer": "A", "robust_group": "s1"},
]
QUESTIONS[0]["options"] = ["top-left", "top-right"]
QUESTIONS[1]["options"] = ["one-point to two-point perspective", "no change"]
QUESTIONS[2]["options"] = QUESTIONS[3]["options"] = ["two-point perspective", "one-point perspective"]
QUESTIONS[2]["perturbation"], QUESTIONS[3]["perturbation"] = "original", "Flip"


@pytest.fixture
def images(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    Image.new("RGB", (8, 6), (255, 0, 0)).save(folder / "a.png")
    Image.new("RGB", (8, 6), (0, 0, 255)).save(folder / "b.png")
    return folder


def _load(path):
    return datasets.load_dataset("parquet", data_files=str(path))["train"]


def _check(ds):
    assert ds.features == features()
    assert ds["id"] == ["q1", "q2", "q3", "q4"]
    assert ds["task"] == ["VPP", "PTS", "PTR", "PTR"]
    assert ds["answer"] == ["B", "B", "A", "A"]  # "no change" is option B
    assert ds["robust_group"] == [None, None, "s1", "s1"] and ds["perturbation"][3] == "flip"
    pair = ds[1]["images"]
    assert [im.getpixel((0, 0)) for im in pair] == [(255, 0, 0), (0, 0, 255)]  # PTS images in order


def test_json_questions_become_the_layout(images, tmp_path):
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps(QUESTIONS))
    _check(_load(convert_mmperspective.convert(images, questions, tmp_path / "out")))


def test_csv_questions_with_pipe_joined_lists_become_the_same_layout(images, tmp_path):
    questions = tmp_path / "q.csv"
    fields = ["id", "images", "task", "question", "options", "answer", "robust_group", "perturbation"]
    with open(questions, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        for q in QUESTIONS:
            paths = q.get("images") or [q["image"]]
            options = json.dumps(q["options"]) if q["id"] == "q1" else "|".join(q["options"])  # both spellings
            row = {**{k: q.get(k, "") for k in fields}, "images": "|".join(paths), "options": options}
            writer.writerow(row)
    _check(_load(convert_mmperspective.convert(images, questions, tmp_path / "out")))


def test_a_missing_field_is_named_with_its_record(images, tmp_path):
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{k: v for k, v in QUESTIONS[0].items() if k != "answer"}]))
    with pytest.raises(convert_mmperspective.ConversionError, match=r"record 1 \(id 'q1'\): missing field 'answer'"):
        convert_mmperspective.convert(images, questions, tmp_path / "out")


def test_a_missing_image_file_is_named(images, tmp_path):
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{**QUESTIONS[0], "image": "nope.png"}]))
    with pytest.raises(
        convert_mmperspective.ConversionError, match=r"id 'q1'\): field 'images': image file .*nope.png"
    ):
        convert_mmperspective.convert(images, questions, tmp_path / "out")


def test_an_answer_outside_the_options_is_rejected_naming_the_document(images, tmp_path):
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{**QUESTIONS[0], "answer": "D"}]))
    with pytest.raises(convert_mmperspective.ConversionError, match=r"document 'q1', field 'answer'"):
        convert_mmperspective.convert(images, questions, tmp_path / "out")


def test_the_command_line_reports_errors_without_a_traceback(images, tmp_path, capsys):
    rc = convert_mmperspective.main(["--images", str(images), "--questions", str(tmp_path / "none.json"), "--out", "x"])
    assert rc == 1 and "question file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("../../outside/secret.txt", "points outside the input folder"),
        ("/etc/hostname", "is an absolute path"),
        ("notes.txt", "is not a readable image"),
    ],
)
def test_image_paths_outside_the_folder_or_non_images_are_refused(images, tmp_path, image, message):
    outside = tmp_path.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("do not embed me")
    (images / "notes.txt").write_text("not an image")
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{**QUESTIONS[0], "image": image}]))
    with pytest.raises(convert_mmperspective.ConversionError, match=f"record 1 .*field 'images': .*{message}"):
        convert_mmperspective.convert(images, questions, tmp_path / "out")
    assert not (tmp_path / "out" / "test.parquet").exists()


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("q.json", b'[{"id": "q1",', r"q.json: not valid JSON \(Expecting"),
        ("q.jsonl", b'{"id": "q1"}\n{"id": ', r"q.jsonl:2: not valid JSON"),
        ("q.csv", b"id,question\n\xff\xfe,q\n", r"q.csv: not UTF-8 text \(byte 12"),
    ],
)
def test_a_malformed_question_file_is_one_line_naming_it(images, tmp_path, name, content, message):
    questions = tmp_path / name
    questions.write_bytes(content)
    with pytest.raises(convert_mmperspective.ConversionError, match=message):
        convert_mmperspective.convert(images, questions, tmp_path / "out")


def test_conversion_shows_a_bar_over_every_question(images, tmp_path, progress_bars):
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps(QUESTIONS))
    convert_mmperspective.convert(images, questions, tmp_path / "out")
    (bar,) = progress_bars
    assert (bar.desc, bar.total, bar.n) == ("convert mmperspective", 4, 4)
