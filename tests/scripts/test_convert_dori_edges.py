"""lmms_spatial.tasks.dori.convert, edge rows (issue 42): which image file a row is given, how options and answers
are read in each spelling, the task and granularity names, and each reject with its field.

Fast: 8x8 images of distinct colours and hand-written rows; the expected values are written here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

import lmms_spatial.tasks.dori.convert as conv
from lmms_spatial.tasks.dori.convert import RowError

RED, BLUE, GREEN = (255, 0, 0), (0, 0, 255), (0, 128, 0)


def _png(path: Path, colour) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), colour).save(path)
    return path


def _row(**changes) -> dict:
    row = {"id": "r1", "task": "Q1", "granularity": "coarse", "question": "Which way?", "options": ["a", "b", "c"],
           "answer": "A", "image": "a.png"}  # fmt: skip
    row.update(changes)
    return {k: v for k, v in row.items() if v is not ...}


def _pixels(images: list[dict]) -> list:
    import io

    return [Image.open(io.BytesIO(i["bytes"])).getpixel((0, 0)) for i in images]


# --- which image file --------------------------------------------------------------------------------


def test_an_image_path_is_read_beside_the_question_file_before_the_release_root(tmp_path):
    src = tmp_path / "DORI"
    _png(src / "a.png", RED)  # a file of the same name at the release root
    _png(src / "jta" / "a.png", BLUE)  # beside jta/questions.jsonl: the one the row means
    (src / "jta" / "questions.jsonl").write_text(json.dumps(_row()) + "\n")
    conv.convert(src, tmp_path / "out")
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "out" / "test.parquet"))["train"]
    assert [im.getpixel((0, 0)) for im in ds[0]["images"]] == [BLUE]


def test_an_image_only_at_the_release_root_is_found_there(tmp_path):
    _png(tmp_path / "a.png", GREEN)
    row = conv.convert_row(_row(), base_dirs=[tmp_path / "sub", tmp_path], default_id="f:0")
    assert _pixels(row["images"]) == [GREEN]


def test_two_images_keep_their_order_from_either_spelling(tmp_path):
    _png(tmp_path / "a.png", RED), _png(tmp_path / "b.png", BLUE)
    pair = conv.convert_row(_row(image=..., image_1="b.png", image_2="a.png"), base_dirs=[tmp_path], default_id="x")
    assert _pixels(pair["images"]) == [BLUE, RED]
    listed = conv.convert_row(_row(image=..., images='["a.png", "b.png"]'), base_dirs=[tmp_path], default_id="x")
    assert _pixels(listed["images"]) == [RED, BLUE]
    one = conv.convert_row(_row(image=..., image_paths="b.png"), base_dirs=[tmp_path], default_id="x")
    assert _pixels(one["images"]) == [BLUE]


def test_embedded_bytes_are_kept_and_without_embedding_the_path_in_the_release_is(tmp_path):
    data = _png(tmp_path / "a.png", RED).read_bytes()
    assert conv._image({"bytes": data, "path": "x.png"}, [tmp_path]) == {"bytes": data, "path": None}
    assert conv._image(bytearray(data), [tmp_path]) == {"bytes": data, "path": None}
    assert conv._image({"bytes": None, "path": "a.png"}, [tmp_path]) == {"bytes": data, "path": None}
    assert conv._image("a.png", [tmp_path / "none", tmp_path], embed=False) == {
        "bytes": None,
        "path": str(tmp_path.absolute() / "a.png"),
    }


def test_image_refusals_name_the_field(tmp_path):
    with pytest.raises(RowError, match=r"^field 'images': unsupported image value '12'$"):
        conv._image(12, [tmp_path])
    with pytest.raises(RowError, match=r"^field 'images': image file 'z.png' not found under \["):
        conv._image("z.png", [tmp_path])
    with pytest.raises(RowError, match=r"^field 'images': 3 images; DORI questions have 1 or 2$"):
        conv._images({"images": ["a", "b", "c"]}, [tmp_path])
    with pytest.raises(RowError, match=r"^field 'images': no image column \(images / image_paths / image_list / imag"):
        conv._images({"question": "q"}, [tmp_path])


# --- options ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "options"),
    [
        ({"B": " y ", "a": "x"}, ["x", "y"]),
        ([" x", "y "], ["x", "y"]),
        (np.array(["x", "y"]), ["x", "y"]),
        ('{"A": "x", "B": "y"}', ["x", "y"]),
        ("{'B': 'y' 'A': 'x'}", ["x", "y"]),  # the release's text without commas
        ("['x', 'y']", ["x", "y"]),
        ("A. x B. y C. z", ["x", "y", "z"]),
        ("A) x  B: y", ["x", "y"]),
    ],
)
def test_options_in_each_spelling_come_out_in_letter_order(value, options):
    assert conv.parse_options(value) == options


def test_options_text_whose_letters_are_out_of_order_is_refused():
    with pytest.raises(RowError, match=r"^field 'options': cannot read options from 'B\. x A\. y'$"):
        conv.parse_options("B. x A. y")


def test_fewer_than_two_options_are_refused():
    with pytest.raises(RowError, match=r"^field 'options': 1 options; expected 3 to 16$"):
        conv.convert_row(_row(options=["only"]), base_dirs=[], default_id="x")


# --- answers ------------------------------------------------------------------------------------------


def test_a_single_character_is_a_letter_even_when_an_option_reads_the_same():
    assert conv.parse_answer("b", ["x", "b", "a"]) == "B"  # the letter b, not option C's text "a"...
    assert conv.parse_answer("a", ["x", "b", "a"]) == "A"  # ...and "a" is the letter A


def test_an_answer_that_is_an_options_text_is_its_letter_whatever_the_case():
    assert conv.parse_answer("  Facing Away ", ["facing toward", "facing away"]) == "B"


@pytest.mark.parametrize(("value", "letter"), [(1, "B"), (2.0, "C"), ("0", "A"), ("(c)", "C"), ("B - y", "B")])
def test_indices_and_letters(value, letter):
    assert conv.parse_answer(value, ["x", "y", "z"]) == letter


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "index -1 is outside the 3 options"),
        (3, "index 3 is outside the 3 options"),
        (1.5, "'1.5' is not a letter, 0-based index or option text of this question"),
        ("D", "'D' is not a letter"),
        ("3", "'3' is not a letter"),
    ],
)
def test_answers_outside_the_options_are_refused(value, message):
    with pytest.raises(RowError, match=re.escape(message)):
        conv.parse_answer(value, ["x", "y", "z"])


# --- task, granularity, text fields ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "task"),
    [
        ("View Parallelism", "view_parallelism"),
        ("q3", "single_axis_rotation"),
        ("Inter-Object Directional Relationships", "inter_object_direction"),
        ("  canonical orientation reasoning  ", "canonical_orientation"),
    ],
)
def test_task_spellings(value, task):
    assert conv.normalise_task(value) == task


@pytest.mark.parametrize(("value", "level"), [("Fine-Grained", "granular"), ("fine", "granular"), ("COARSE", "coarse")])
def test_granularity_spellings(value, level):
    assert conv.normalise_granularity(value) == level


def test_an_unknown_granularity_is_refused():
    with pytest.raises(RowError, match=r"^field 'granularity': 'medium' is not coarse or granular$"):
        conv.normalise_granularity("medium")


def test_blank_or_nan_values_are_skipped_for_the_next_spelling_and_zero_is_kept():
    assert conv._first({"answer": " ", "gt": float("nan"), "label": 0}, "answer", "gt", "label") == 0
    assert conv._first({"answer": None}, "answer") is None


@pytest.mark.parametrize(
    ("value", "items"),
    [(None, []), ("1. look 2. decide", ["look", "decide"]), ('["a", "b"]', ["a", "b"]), ("[not json", ["[not json"]),
     ("a\nb", ["a", "b"]), (("x", 2), ["x", "2"])],
)  # fmt: skip
def test_text_lists(value, items):
    assert conv._text_list(value) == items


def test_a_row_copies_its_own_fields_and_defaults_the_rest(tmp_path):
    _png(tmp_path / "a.png", RED)
    row = conv.convert_row(
        _row(id=..., context=" ctx ", instructions="1. a 2. b", source="JTA", category="car"),
        base_dirs=[tmp_path],
        default_id="q.jsonl:4",
    )
    assert {
        k: row[k]
        for k in (
            "id",
            "task",
            "granularity",
            "context",
            "instructions",
            "examples",
            "answer",
            "source",
            "category",
            "data_type",
        )
    } == {  # fmt: skip
        "id": "q.jsonl:4",
        "task": "view_parallelism",
        "granularity": "coarse",
        "context": "ctx",
        "instructions": ["a", "b"],
        "examples": [],
        "answer": "A",
        "source": "JTA",
        "category": "car",
        "data_type": "",
    }


def test_a_missing_field_names_its_spellings(tmp_path):
    with pytest.raises(RowError, match=r"^field 'answer': missing \(answer / gt / ground_truth / correct_answer / la"):
        conv.convert_row(_row(answer=...), base_dirs=[tmp_path], default_id="x")
    with pytest.raises(RowError, match=r"^field 'granularity': missing \(granularity / level / question_level / gra"):
        conv.convert_row(_row(granularity=...), base_dirs=[tmp_path], default_id="x")


def test_a_structured_prompt_needs_a_task_and_options_section():
    with pytest.raises(RowError, match=r"^field 'prompt': no 'TASK:' section$"):
        conv.split_structured_prompt("CONTEXT: x OPTIONS: A. a B. b")
    with pytest.raises(RowError, match=r"^field 'prompt': no 'OPTIONS:' section$"):
        conv.split_structured_prompt("TASK: x CONTEXT: y")
    parts = conv.split_structured_prompt("TASK: x MULTIPLE-CHOICE OPTIONS: A. a B. b")
    assert (parts["question"], parts["options"], parts["context"]) == ("x", "A. a B. b", "")


# --- files --------------------------------------------------------------------------------------------


def test_question_files_are_the_known_suffixes_not_hidden_ones(tmp_path):
    for name in ("b.json", "a.csv", "sub/c.parquet", "d.jsonl", ".hidden.json", "notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("[]")
    assert [p.relative_to(tmp_path).as_posix() for p in conv.question_files(tmp_path)] == [
        "a.csv", "b.json", "d.jsonl", "sub/c.parquet"]  # fmt: skip


def test_a_json_file_holds_a_list_or_data_or_questions(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"questions": [{"id": 1}, "not a row", {"id": 2}]}))
    assert list(conv._read_rows(tmp_path / "a.json")) == [{"id": 1}, {"id": 2}]


def test_a_repeated_id_is_rejected_and_the_first_row_kept(tmp_path):
    _png(tmp_path / "a.png", RED)
    (tmp_path / "q.jsonl").write_text(json.dumps(_row()) + "\n" + json.dumps(_row(answer="B")) + "\n")
    report = conv.convert(tmp_path, tmp_path / "out", skip_bad=True)
    assert report.rejects == ["q.jsonl row 1: field 'id': duplicate id 'r1'"]
    assert (report.rows, report.written, report.files) == (2, 1, ["q.jsonl"])


def test_no_question_file_or_no_converted_row_stops_naming_it(tmp_path):
    with pytest.raises(SystemExit, match=r"^convert_dori: no question files \(\*\.json, "):
        conv.convert(tmp_path, tmp_path / "out")
    (tmp_path / "q.jsonl").write_text(json.dumps(_row(task="tilt")) + "\n")
    with pytest.raises(SystemExit, match=r"^convert_dori: no row converted$"):
        conv.convert(tmp_path, tmp_path / "out", skip_bad=True)


# --- question files of each kind, and the whole conversion --------------------------------------------


def test_a_json_file_under_data_is_read_and_one_that_is_not_json_names_itself(tmp_path):
    _png(tmp_path / "a.png", RED)
    (tmp_path / "q.json").write_text(json.dumps({"data": [_row()]}))
    assert [r["id"] for r in conv._read_rows(tmp_path / "q.json")] == ["r1"]
    (tmp_path / "q.json").write_text("{not json")
    with pytest.raises(SystemExit, match=rf"^convert_dori: {re.escape(str(tmp_path / 'q.json'))}: not valid JSON"):
        list(conv._read_rows(tmp_path / "q.json"))


def test_a_csv_that_cannot_be_parsed_names_itself(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('id,question\nr1,"' + "x" * 200_000 + '"\n')  # a field past the csv module's 131,072 limit
    with pytest.raises(SystemExit, match=rf"^convert_dori: {re.escape(str(path))}: not valid CSV \(field larger"):
        list(conv._read_rows(path))


def test_a_parquet_question_file_is_read(tmp_path):
    import pyarrow as pa

    _png(tmp_path / "a.png", RED)
    row = _row(options=None, options_text="A. x B. y")
    row["options"] = row.pop("options_text")
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "q.parquet")
    report = conv.convert(tmp_path, tmp_path / "out")
    assert (report.files, report.written, report.rejects) == (["q.parquet"], 1, [])


def _written_images(out: Path) -> list:
    return pq.read_table(out / "test.parquet").column("images").to_pylist()


def test_a_conversion_embeds_the_images_unless_told_not_to_and_names_rows_without_an_id(tmp_path):
    image = _png(tmp_path / "src" / "a.png", RED)
    (tmp_path / "src" / "q.jsonl").write_text(json.dumps(_row(id=...)) + "\n")
    report = conv.convert(tmp_path / "src", tmp_path / "out" / "dori")  # a folder whose parent does not exist yet
    assert _written_images(tmp_path / "out" / "dori") == [[{"bytes": image.read_bytes(), "path": None}]]
    assert pq.read_table(tmp_path / "out" / "dori" / "test.parquet").column("id").to_pylist() == ["q.jsonl:0"]
    assert report.written == 1
    conv.convert(tmp_path / "src", tmp_path / "out" / "dori", embed_images=False)  # again, into the same folder
    assert _written_images(tmp_path / "out" / "dori") == [[{"bytes": None, "path": str(image.absolute())}]]


def test_a_column_map_is_applied_to_each_row(tmp_path):
    from lmms_spatial.data.column_map import parse as parse_map

    _png(tmp_path / "a.png", RED)
    row = _row()
    row["truth"] = row.pop("answer")
    (tmp_path / "q.jsonl").write_text(json.dumps({**row, "truth": "C"}) + "\n")
    conv.convert(tmp_path, tmp_path / "out", column_map=parse_map("dori", "answer=truth"))
    assert pq.read_table(tmp_path / "out" / "test.parquet").column("answer").to_pylist() == ["C"]


def test_a_row_with_its_own_question_ignores_a_free_text_prompt(tmp_path):
    _png(tmp_path / "a.png", RED)
    row = conv.convert_row(_row(prompt="no sections here"), base_dirs=[tmp_path], default_id="x")
    assert (row["question"], row["options"]) == ("Which way?", ["a", "b", "c"])


def test_without_context_instructions_or_examples_they_are_empty(tmp_path):
    _png(tmp_path / "a.png", RED)
    row = conv.convert_row(_row(), base_dirs=[tmp_path], default_id="x")
    assert (row["context"], row["instructions"], row["examples"]) == ("", [], [])


def test_a_rows_own_examples_are_kept(tmp_path):
    _png(tmp_path / "a.png", RED)
    row = conv.convert_row(_row(examples='["a car facing left"]'), base_dirs=[tmp_path], default_id="x")
    assert row["examples"] == ["a car facing left"]


def test_sixteen_options_are_accepted(tmp_path):
    _png(tmp_path / "a.png", RED)
    options = [f"o{i}" for i in range(16)]
    row = conv.convert_row(_row(options=options, answer="P"), base_dirs=[tmp_path], default_id="x")
    assert (len(row["options"]), row["answer"]) == (16, "P")


def test_a_row_converted_without_embedding_points_at_its_image(tmp_path):
    image = _png(tmp_path / "a.png", RED)
    row = conv.convert_row(_row(), base_dirs=[tmp_path], default_id="x", embed_images=False)
    assert row["images"] == [{"bytes": None, "path": str(image.absolute())}]


def test_a_row_error_carries_its_field():
    assert conv.RowError("answer", "x").field == "answer"


def test_without_source_category_or_data_type_they_are_empty(tmp_path):
    _png(tmp_path / "a.png", RED)
    row = conv.convert_row(_row(), base_dirs=[tmp_path], default_id="x")
    assert (row["source"], row["category"], row["data_type"]) == ("", "", "")


def test_an_image_list_is_read_in_order_and_embedded_by_default(tmp_path):
    _png(tmp_path / "a.png", RED), _png(tmp_path / "b.png", BLUE)
    images = conv._images({"images": ["b.png", "a.png"]}, [tmp_path])
    assert _pixels(images) == [BLUE, RED] and [i["path"] for i in images] == [None, None]


def test_a_letter_answer_followed_by_lines_of_text_is_the_letter():
    assert conv.parse_answer("B: Leftward\nbecause the car faces left", ["x", "y", "z"]) == "B"


def test_options_text_with_one_option_is_read_then_refused_for_its_count(tmp_path):
    assert conv.parse_options("A. only") == ["only"]
    with pytest.raises(RowError, match=r"^field 'options': 1 options; expected 3 to 16$"):
        conv.convert_row(_row(options="A. only"), base_dirs=[tmp_path], default_id="x")


def test_a_task_name_in_brackets_or_dashes_is_read():
    assert conv.normalise_task("(View Parallelism)") == "view_parallelism"
    assert conv.normalise_task("--q2--") == "directional_facing"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "field 'answer': True is not a letter, index or option text"),
        (7, "field 'answer': index 7 is outside the 3 options"),
        ("w" * 100, f"field 'answer': {'w' * 60!r} is not a letter, 0-based index or option text of this question"),
    ],
)
def test_an_answer_refusal_names_the_answer_field_and_at_most_60_characters(value, message):
    with pytest.raises(RowError) as raised:
        conv.parse_answer(value, ["x", "y", "z"])
    assert str(raised.value) == message


def test_options_text_that_cannot_be_read_is_named_in_80_characters():
    with pytest.raises(RowError) as raised:
        conv.parse_options("q" * 100)
    assert str(raised.value) == f"field 'options': cannot read options from {'q' * 80!r}"


def test_options_from_a_numpy_array_are_its_items():
    assert conv.parse_options(np.array(["left ", " right"])) == ["left", "right"]


def test_image_refusals_name_the_value_in_60_characters_and_every_folder_searched(tmp_path):
    with pytest.raises(RowError) as raised:
        conv._image(["x"] * 40, [tmp_path])
    assert str(raised.value) == f"field 'images': unsupported image value {str(['x'] * 40)[:60]!r}"
    with pytest.raises(RowError) as raised:
        conv._image("z.png", [tmp_path / "sub", tmp_path])
    assert str(raised.value) == (
        f"field 'images': image file 'z.png' not found under {[str(tmp_path / 'sub'), str(tmp_path)]}"
    )


def test_options_text_in_json_is_read_as_json_with_its_escapes():
    # a JSON writer that escapes "/" (PHP's json_encode): JSON reads "up\/down" as "up/down", a Python literal would not
    assert conv.parse_options('["up\\/down", "left"]') == ["up/down", "left"]
