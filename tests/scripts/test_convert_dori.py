"""lmms_spatial.tasks.dori.convert: plausible release spellings in, the normalised layout out, clear rejects."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import datasets
import pytest
from PIL import Image

from lmms_spatial.tasks.dori import features

REPO = Path(__file__).resolve().parents[2]
import lmms_spatial.tasks.dori.convert as convert_dori  # noqa: E402

PROMPT = (
    "TASK: Determine which way Object A's front is facing relative to the camera. "
    "CONTEXT: Object A is marked with a bounding box in the image. Please analyze this image using these steps: "
    "1. Identify Object A and its key structural features 2. Determine the orientation of its front surface "
    "OPTIONS: A. Not visible enough to determine B. Directly facing the camera C. Facing away from the camera "
    'FORMAT YOUR RESPONSE AS: "answer": "Letter/number of chosen option" '
    'EXAMPLES: - A person whose body is directed towards the camera would be "facing toward the camera"'
)


@pytest.fixture
def release(tmp_path) -> Path:
    src = tmp_path / "DORI-Benchmark"
    (src / "images").mkdir(parents=True)
    for name, colour in (("a.png", "red"), ("b.png", "blue")):
        Image.new("RGB", (8, 8), colour).save(src / "images" / name)
    rows = [
        {  # options as a mapping, answer as "letter: text", task spelled as in the paper
            "question_id": "vp-1",
            "question_type": "View Parallelism",
            "level": "fine-grained",
            "question": "Determine how much Object A's front surface deviates from being parallel to the camera plane.",
            "options": {"A": "135 degrees to 180 degrees", "B": "0 degrees to 15 degrees", "C": "Cannot be determined"},
            "answer": "A: 135 degrees to 180 degrees",
            "image_path": "images/a.png",
            "source": "JTA",
        },
        {  # two images, options as text, answer as a 0-based index, Q-number task
            "id": "vs-1",
            "task": "Q6",
            "granularity": "granular",
            "question": "Determine how many degrees clockwise the object has rotated between the two images.",
            "options": "A. Cannot be determined B. 180 degrees C. 90 degrees",
            "answer": 2,
            "images": ["images/a.png", "images/b.png"],
        },
    ]
    (src / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with open(src / "coarse.csv", "w", newline="") as fh:  # one full structured prompt, answer as option text
        writer = csv.DictWriter(fh, fieldnames=["id", "type", "level", "prompt", "answer", "image"])
        writer.writeheader()
        writer.writerow(
            {
                "id": "vp-c",
                "type": "view_parallelism",
                "level": "coarse",
                "prompt": PROMPT,
                "answer": "Facing away from the camera",
                "image": "images/b.png",
            }
        )
    return src


def test_release_rows_convert_to_the_normalised_schema(release, tmp_path):
    report = convert_dori.convert(release, tmp_path / "out")
    assert (report.rows, report.written, report.rejects) == (3, 3, [])
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "out" / "test.parquet"))["train"]
    assert ds.features == features()
    rows = {r["id"]: r for r in ds}
    vp = rows["vp-1"]
    assert (vp["task"], vp["granularity"], vp["answer"], vp["source"]) == ("view_parallelism", "granular", "A", "JTA")
    assert vp["options"] == ["135 degrees to 180 degrees", "0 degrees to 15 degrees", "Cannot be determined"]
    vs = rows["vs-1"]
    assert (vs["task"], vs["answer"], len(vs["images"])) == ("viewer_scene_direction", "C", 2)
    assert vs["options"] == ["Cannot be determined", "180 degrees", "90 degrees"]


def test_a_full_structured_prompt_is_split_into_its_parts(release, tmp_path):
    convert_dori.convert(release, tmp_path / "out")
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "out" / "test.parquet"))["train"]
    row = next(r for r in ds if r["id"] == "vp-c")
    assert row["question"] == "Determine which way Object A's front is facing relative to the camera."
    assert row["context"] == "Object A is marked with a bounding box in the image."
    assert row["instructions"] == [
        "Identify Object A and its key structural features",
        "Determine the orientation of its front surface",
    ]
    assert row["options"] == [
        "Not visible enough to determine",
        "Directly facing the camera",
        "Facing away from the camera",
    ]
    assert row["answer"] == "C"
    assert row["examples"] == ['A person whose body is directed towards the camera would be "facing toward the camera"']


def test_bad_rows_are_reported_by_file_row_and_field_and_nothing_is_written(release, tmp_path):
    bad = {
        "id": "x",
        "task": "view_parallelism",
        "granularity": "coarse",
        "question": "q",
        "options": ["a", "b"],
        "answer": "Q",
        "image": "images/a.png",
    }
    unknown_task = {**bad, "id": "y", "task": "tilt", "answer": "A"}
    (release / "zz_bad.jsonl").write_text(json.dumps(bad) + "\n" + json.dumps(unknown_task) + "\n")
    report = convert_dori.convert(release, tmp_path / "out")
    assert report.rejects == [
        "zz_bad.jsonl row 0: field 'answer': 'Q' is not a letter, 0-based index or option text of this question",
        f"zz_bad.jsonl row 1: field 'task': 'tilt' is not one of the 7 DORI tasks {convert_dori.TASKS}",
    ]
    assert not (tmp_path / "out" / "test.parquet").exists()


def test_skip_bad_writes_the_good_rows(release, tmp_path):
    (release / "zz_bad.jsonl").write_text(json.dumps({"id": "x", "question": "q"}) + "\n")
    report = convert_dori.convert(release, tmp_path / "out", skip_bad=True)
    assert report.written == 3 and report.rejects == [
        "zz_bad.jsonl row 0: field 'options': missing (options / choices / option / prompt / full_prompt)"
    ]


def test_a_missing_image_file_is_named(release, tmp_path):
    row = {
        "id": "z",
        "task": "Q1",
        "granularity": "coarse",
        "question": "q",
        "options": ["a", "b", "c"],
        "answer": "A",
        "image": "images/nope.png",
    }
    (release / "zz.jsonl").write_text(json.dumps(row) + "\n")
    (reject,) = convert_dori.convert(release, tmp_path / "out").rejects
    assert reject.startswith("zz.jsonl row 0: field 'images': image file 'images/nope.png' not found")


def test_an_image_path_leaving_the_release_folder_is_refused_not_embedded(release, tmp_path):
    (tmp_path / "secret.txt").write_text("do not embed me")
    row = {"id": "z", "task": "Q1", "granularity": "coarse", "question": "q", "options": ["a", "b", "c"],
           "answer": "A", "image": "../secret.txt"}  # fmt: skip
    (release / "zz.jsonl").write_text(json.dumps(row) + "\n")
    (reject,) = convert_dori.convert(release, tmp_path / "out").rejects
    assert reject.startswith("zz.jsonl row 0: field 'images': '../secret.txt' points outside the input folder")


def test_a_question_file_that_is_not_json_stops_with_one_line(release, tmp_path):
    (release / "zz.jsonl").write_text('{"id": "z", "task": ')
    with pytest.raises(SystemExit, match=r"convert_dori: .*zz.jsonl:1: not valid JSON"):
        convert_dori.convert(release, tmp_path / "out")


def test_conversion_shows_a_bar_over_every_question_row(release, tmp_path, progress_bars):
    convert_dori.convert(release, tmp_path / "out")
    (bar,) = progress_bars
    assert (bar.desc, bar.total, bar.n, bar.unit) == ("convert dori", 3, 3, "row")  # 2 JSONL rows + 1 CSV row


def test_each_answer_form_of_the_release_is_read_as_its_option_letter():
    """Letters, 0-based indices as numbers or digit strings, option text; what is none of them is refused."""
    from lmms_spatial.tasks.dori.convert import RowError, parse_answer

    options = ["front", "back", "left", "right", "up"]
    assert [parse_answer(v, options) for v in ("C", "(b)", "d. right", 0, 4.0, "3", "Left", " UP ")] == [
        "C", "B", "D", "A", "E", "D", "C", "E"]  # fmt: skip
    assert parse_answer("12", [f"o{i}" for i in range(16)]) == "M"  # two digits: DORI has up to 16 options
    for bad, why in ((True, "is not a letter, index or option text"), (5, "index 5 is outside the 5 options"),
                     ("5", "'5' is not a letter, 0-based index or option text"), ("F", "'F' is not a letter"),
                     ("-1", "'-1' is not a letter")):  # fmt: skip
        with pytest.raises(RowError, match=re.escape(why)):
            parse_answer(bad, options)
