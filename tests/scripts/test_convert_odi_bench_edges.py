"""lmms_spatial.tasks.odi_bench.convert, edge rows (issue 42): which image file a row is given (path, file name,
stem; ambiguous names refused), how options and answers are read in each spelling, 1-based files, the task a file
name names, ids made unique, and the shards written.

Fast: small JPEGs of distinct colours and hand-written QA rows; the expected values are written here."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

import lmms_spatial.tasks.odi_bench.convert as conv
from lmms_spatial.tasks.odi_bench.convert import _RowError


def _jpg(path: Path, colour) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 8), colour).save(path, format="JPEG")
    return path


def _jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _row(**changes) -> dict:
    row = {"id": "r1", "image": "p.jpg", "question": "Is there a dog?", "answer": "yes"}
    row.update(changes)
    return {k: v for k, v in row.items() if v is not ...}


# --- which image file ---------------------------------------------------------------------------------


def test_a_path_relative_to_the_release_wins_over_one_relative_to_the_qa_file(tmp_path):
    root_image = _jpg(tmp_path / "img" / "p.jpg", (200, 0, 0))
    _jpg(tmp_path / "QAs" / "img" / "p.jpg", (0, 0, 200))
    index = conv.ImageIndex(tmp_path)
    assert index.resolve("img/p.jpg", tmp_path / "QAs" / "existence.jsonl") == root_image


def test_a_path_relative_to_the_qa_file_is_found_there(tmp_path):
    _jpg(tmp_path / "QAs" / "pics" / "p.jpg", (0, 0, 200))
    index = conv.ImageIndex(tmp_path)
    assert index.resolve("pics\\p.jpg", tmp_path / "QAs" / "x.jsonl") == tmp_path / "QAs" / "pics" / "p.jpg"


def test_a_file_name_or_stem_finds_the_one_image_of_that_name(tmp_path):
    image = _jpg(tmp_path / "images_final" / "Indoor_1.JPG", (0, 200, 0))
    index = conv.ImageIndex(tmp_path)
    qa = tmp_path / "QAs" / "x.jsonl"
    assert index.resolve("other/indoor_1.jpg", qa) == image  # by file name, case-insensitive
    assert index.resolve(" indoor_1 ", qa) == image  # by stem
    assert index.resolve("indoor_1.png", qa) == image  # by the stem of the name given


def test_a_name_two_images_share_is_refused_naming_how_many(tmp_path):
    _jpg(tmp_path / "a" / "p.jpg", (1, 1, 1)), _jpg(tmp_path / "b" / "p.jpg", (2, 2, 2))
    with pytest.raises(_RowError, match=r"^'p' matches 2 files, e\.g\. .*a/p\.jpg and .*b/p\.jpg$"):
        conv.ImageIndex(tmp_path).resolve("p", tmp_path / "QAs" / "x.jsonl")


def test_an_image_nowhere_or_outside_or_empty_is_refused(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    index, qa = conv.ImageIndex(tmp_path), tmp_path / "QAs" / "x.jsonl"
    with pytest.raises(_RowError, match=r"^no image file 'q\.jpg' under "):
        index.resolve("q.jpg", qa)
    with pytest.raises(_RowError, match=r"^'\.\./p\.jpg' points outside the input folder "):
        index.resolve("../p.jpg", qa)
    with pytest.raises(_RowError, match=r"^empty$"):
        index.resolve("  ", qa)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("  ", "empty"),
        ("../p.jpg", "'../p.jpg' points outside the input folder {root!r}"),
        ("q.jpg", "no image file 'q.jpg' under {root}"),
        ("p.jpg/../../x.jpg", "'p.jpg/../../x.jpg' points outside the input folder {root!r}"),
    ],
)
def test_a_refused_image_is_a_problem_of_the_image_field_naming_the_folder(tmp_path, value, problem):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    with pytest.raises(_RowError) as caught:
        conv.ImageIndex(tmp_path).resolve(value, tmp_path / "QAs" / "x.jsonl")
    assert (caught.value.field, caught.value.problem) == ("image", problem.format(root=str(tmp_path)))


def test_files_that_are_not_images_are_not_indexed(tmp_path):
    (tmp_path / "p.txt").write_text("x")
    _jpg(tmp_path / "p.jpeg", (1, 1, 1))
    index = conv.ImageIndex(tmp_path)
    assert index.by_stem == {"p": [tmp_path / "p.jpeg"]} and list(index.by_name) == ["p.jpeg"]


# --- options and answers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "found"),
    [
        ({"options": ["(A) red", "(B) blue"]}, ("options", ["red", "blue"])),
        ({"options": ["A. red", "C. blue"]}, ("options", ["A. red", "C. blue"])),  # letters not in order: kept
        ({"choices": {"b": "blue", "a": "red"}}, ("choices", ["red", "blue"])),
        ({"candidates": "A. red\nB. blue; C. green"}, ("candidates", ["red", "blue", "green"])),
        ({"option_A": "red", "option_b": "blue", "answer": "A"}, ("A..", ["red", "blue"])),
        ({"A": "red", "B": "blue", "C": ""}, ("A..", ["red", "blue"])),
        ({"a": "red", "b": "blue"}, (None, [])),  # lower-case bare keys are not options
        ({"question": "Is it?"}, (None, [])),
    ],
)
def test_options_in_each_spelling(row, found):
    assert conv.parse_options(row) == found


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"A": "red", "C": "blue"}, r"^separate option keys \['A', 'C'\] are not A, B, C, \.\.\. in order$"),
        ({"options": {"A": "x", "C": "y"}}, r"^option keys \['A', 'C'\] are not A, B, C, \.\.\. in order$"),
        ({"options": [["x"], "y"]}, r"^options must be strings, got "),
        ({"options": "red or blue"}, r"^cannot split options text 'red or blue' into A\., B\., \.\.\.$"),
        ({"options": 3}, r"^unsupported options value of type int$"),
    ],
)
def test_options_that_cannot_be_read_are_refused(row, message):
    with pytest.raises(_RowError, match=message):
        conv.parse_options(row)


LONG_LIST = [["x"] * 60]  # not strings; its repr is 2 + 60 * 3 + 59 * 2 + 2 = 302 characters


@pytest.mark.parametrize(
    ("row", "field", "problem"),
    [
        ({"A": "red", "C": "blue"}, "options", "separate option keys ['A', 'C'] are not A, B, C, ... in order"),
        ({"choices": {"A": "x", "C": "y"}}, "choices", "option keys ['A', 'C'] are not A, B, C, ... in order"),
        # the message is cut at 200 characters, the text quoted in it at 120
        ({"options": LONG_LIST}, "options", f"options must be strings, got {LONG_LIST!r}"[:200]),
        ({"options": "r" * 130}, "options", f"cannot split options text {'r' * 120!r} into A., B., ..."),
        ({"candidates": 3}, "candidates", "unsupported options value of type int"),
    ],
)
def test_refused_options_name_the_key_they_came_from(row, field, problem):
    with pytest.raises(_RowError) as caught:
        conv.parse_options(row)
    assert (caught.value.field, caught.value.problem) == (field, problem)
    assert len(f"options must be strings, got {LONG_LIST!r}") == 29 + 302  # so the cut at 200 shows


def test_options_text_with_two_options_and_doubled_separators():
    # two options are enough; a separator doubled before the next letter (";;", ",,") or left at the end is dropped
    assert conv.parse_options({"options": "A. yes\nB. no"}) == ("options", ["yes", "no"])
    assert conv.parse_options({"options": "A. red;; B. blue,, C. green;"}) == ("options", ["red", "blue", "green"])
    # only separators are dropped from an option's end: "iPhone X" keeps its X
    assert conv.parse_options({"options": "A. iPhone X;; B. Pixel 8"}) == ("options", ["iPhone X", "Pixel 8"])


OPTIONS = ["red", "blue", "green"]


@pytest.mark.parametrize(
    ("value", "one_based", "letter"),
    [
        ("B", False, "B"),
        ("(C)", False, "C"),
        ("Option B", False, "B"),
        ("B. blue", False, "B"),
        ("b", False, "B"),
        (1, False, "B"),
        (1, True, "A"),
        ("3", True, "C"),
        (2.0, False, "C"),
        ("Green", False, "C"),
        ("C) green", False, "C"),
    ],
)
def test_an_answer_in_each_spelling_is_its_letter(value, one_based, letter):
    assert conv.resolve_answer(value, OPTIONS, one_based, "answer") == letter


@pytest.mark.parametrize(
    ("value", "one_based", "message"),
    [
        (True, False, "boolean answer True for a multiple-choice question"),
        (4, True, "answer index 4 out of range for 3 options"),
        ("E", False, "answer letter 'E' out of range for 3 options"),
        ("x" * 100, False, f"answer {'x' * 80!r} is neither a letter, an index nor the text of one of 3 options"),
    ],
)
def test_a_refused_answer_names_the_key_it_came_from_and_at_most_80_characters_of_it(value, one_based, message):
    with pytest.raises(_RowError) as caught:
        conv.resolve_answer(value, OPTIONS, one_based, "gt")
    assert (caught.value.field, caught.value.problem) == ("gt", message)


def test_a_letter_whose_text_names_another_option_is_read_as_that_text():
    # "A. blue": the letter says A, the text says B; the text of an option decides only when it matches one
    with pytest.raises(_RowError, match=r"^answer 'A\. blue' is neither a letter, an index nor the text of one of 3"):
        conv.resolve_answer("A. blue", OPTIONS, False, "answer")


def test_a_long_lower_case_letter_reading_is_not_a_letter():
    # "b: blue" (lower case, longer than 3) is not taken as a letter... but its text is not an option either
    with pytest.raises(_RowError, match=r"^answer 'b: blue' is neither"):
        conv.resolve_answer("b: blue", OPTIONS, False, "gt")


def test_a_lower_case_letter_counts_as_a_letter_up_to_three_characters():
    # "(b)" is 3 characters: the letter B; "b)up" is 4: lower case and longer than 3, so not read as a letter even
    # though "up" is option B's text, and "b up" (its normalised text) is no option's
    assert conv.resolve_answer("(b)", OPTIONS, False, "answer") == "B"
    with pytest.raises(_RowError, match=r"^answer 'b\)up' is neither a letter, an index nor the text of one of 3"):
        conv.resolve_answer("b)up", ["red", "up", "green"], False, "answer")


@pytest.mark.parametrize(
    ("value", "one_based", "message"),
    [
        (True, False, r"^boolean answer True for a multiple-choice question$"),
        (3, False, r"^answer index 3 out of range for 3 options$"),
        (0, True, r"^answer index 0 out of range for 3 options$"),
        ("D", False, r"^answer letter 'D' out of range for 3 options$"),
        ("purple", False, r"^answer 'purple' is neither a letter, an index nor the text of one of 3 options$"),
    ],
)
def test_answers_outside_the_options_are_refused(value, one_based, message):
    with pytest.raises(_RowError, match=message):
        conv.resolve_answer(value, OPTIONS, one_based, "answer")


@pytest.mark.parametrize(("value", "word"), [("Yes.", "Yes"), (" y", "Yes"), ("TRUE", "Yes"), ("1", "Yes"),
                                             ("no", "No"), ("0", "No"), (False, "No"), (True, "Yes")])  # fmt: skip
def test_yes_no_answers(value, word):
    assert conv._yes_no(value, "answer") == word


def test_a_file_is_one_based_when_no_index_is_zero_and_one_reaches_the_option_count():
    rows = [(1, {"options": ["a", "b"], "answer": 2}), (2, {"options": ["a", "b", "c"], "answer": "1"})]
    assert conv._one_based(rows) is True
    assert conv._one_based(rows + [(3, {"options": ["a", "b"], "answer": 0})]) is False  # a 0 occurs
    assert conv._one_based([(1, {"options": ["a", "b", "c"], "answer": 2})]) is False  # never reaches 3
    assert conv._one_based([(1, {"answer": "B"}), (2, "not a row"), (3, {"answer": True})]) is False  # no index


def test_rows_that_give_no_index_are_skipped_not_the_end_of_the_file_s_indices():
    index_row = (9, {"options": ["a", "b"], "answer": 2})  # 1-based on its own: no 0, reaches 2 options
    assert conv._one_based([(1, "not a row"), index_row]) is True
    assert conv._one_based([(1, {"options": ["a", "b"], "answer": "B"}), index_row]) is True  # a letter
    assert conv._one_based([(1, {"options": {"A": "x", "C": "y"}, "answer": 1}), index_row]) is True  # bad options
    assert conv._one_based([(1, {"options": ["only"], "answer": 1})]) is True  # one option, index 1: its count


def test_a_one_based_file_reads_its_indices_from_one(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    rows = [{"id": "a", "image": "p.jpg", "question": "q", "options": ["x", "y"], "answer": 2},
            {"id": "b", "image": "p.jpg", "question": "q", "options": ["x", "y"], "answer": 1}]  # fmt: skip
    _jsonl(tmp_path / "QAs" / "counting.jsonl", rows)
    assert [r["answer"] for r in conv.collect(tmp_path).rows] == ["B", "A"]


# --- files, tasks and ids -----------------------------------------------------------------------------


def test_the_task_a_file_name_names():
    stems = {"view_orientation", "allocentric"}
    assert conv._file_task(Path("QAs/OA.jsonl"), stems) == "object_attribute"
    assert conv._file_task(Path("QAs/relative.jsonl"), stems) == "relative_direction"
    assert conv._file_task(Path("QAs/allocentric.jsonl"), stems) == "allocentric_view_orientation"
    assert conv._file_task(Path("QAs/View_Orientation.jsonl"), stems) == "egocentric_view_orientation"
    assert conv._file_task(Path("QAs/view_orientation.jsonl"), {"view_orientation"}) is None
    assert conv._file_task(Path("QAs/misc.jsonl"), stems) is None


def test_an_allocentric_file_in_another_folder_does_not_make_view_orientation_egocentric(tmp_path):
    # QAs/set1/view_orientation.jsonl has no allocentric file beside it (only in QAs/set2/): it may hold both view
    # orientation tasks, so its task-less row is refused; the allocentric file's row is allocentric
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "set1" / "view_orientation.jsonl", [_row(id="v1")])
    _jsonl(tmp_path / "QAs" / "set2" / "allocentric.jsonl", [_row(id="a1")])
    result = conv.collect(tmp_path)
    assert [(r["id"], r["task"]) for r in result.rows] == [("a1", "allocentric_view_orientation")]
    assert [(p.line, p.field) for p in result.problems] == [(1, "task")]
    assert "view_orientation.jsonl" in result.problems[0].file


def test_a_qa_file_saved_with_a_byte_order_mark_reads_from_its_first_line(tmp_path):
    # Windows editors write UTF-8 with a BOM (EF BB BF): the first row must still parse
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    path = tmp_path / "QAs" / "existence.jsonl"
    _jsonl(path, [_row(id="b1"), _row(id="b2", answer="no")])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [(r["id"], r["answer"]) for r in conv.collect(tmp_path).rows] == [("b1", "Yes"), ("b2", "No")]
    listed = tmp_path / "list.json"
    listed.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"a": 1}]).encode())
    assert list(conv.read_qa_file(listed)) == [(1, {"a": 1})]


def test_an_empty_field_gives_way_to_the_next_spelling(tmp_path):
    # "" counts as absent: the answer comes from "gt", the image from "image_path", the question from "query",
    # the id from "qid"
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    row = {"id": "", "qid": "q9", "image": "", "image_path": "p.jpg", "question": "", "query": "Is it?",
           "answer": "", "gt": "no"}  # fmt: skip
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [row])
    (converted,) = conv.collect(tmp_path).rows
    assert (converted["id"], converted["question"], converted["answer"]) == ("q9", "Is it?", "No")
    assert conv._first({"answer": "", "gt": 0}, conv.ANSWER_KEYS) == ("gt", 0)  # 0 is a value, not absent
    assert conv._first({"answer": None, "gt": ""}, conv.ANSWER_KEYS) == (None, None)


def test_a_row_task_field_wins_over_the_file_name(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(task="counting", answer="yes")])
    assert [r["task"] for r in conv.collect(tmp_path).rows] == ["counting"]


def test_ids_shared_by_two_files_are_prefixed_with_their_task(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(id=1)])
    _jsonl(tmp_path / "QAs" / "counting.jsonl", [_row(id=1, answer="no"), _row(id=..., answer="no")])
    rows = conv.collect(tmp_path).rows
    # TASKS order: existence before counting; an id-less row is <task>_<line>
    assert [(r["id"], r["answer"]) for r in rows] == [
        ("existence_1", "Yes"), ("counting_1", "No"), ("counting_counting_2", "No")]  # fmt: skip


def test_at_most_ten_repeated_ids_are_named(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(id=f"d{i:02d}") for i in range(12)] * 2)
    with pytest.raises(conv.ConversionError) as caught:
        conv.collect(tmp_path)
    named = [f"existence_d{i:02d}" for i in range(10)]  # 12 repeated, sorted, the first 10 named
    assert str(caught.value) == f"duplicate question ids within a task: {named}"


def test_an_id_repeated_within_one_task_is_refused(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(id=7), _row(id=7)])
    with pytest.raises(conv.ConversionError, match=r"^duplicate question ids within a task: \['existence_7'\]$"):
        conv.collect(tmp_path)


def test_the_qa_folder_is_found_by_its_usual_names_or_below(tmp_path):
    (tmp_path / "data" / "qa").mkdir(parents=True)
    assert conv.find_qa_dir(tmp_path) == tmp_path / "data" / "qa"
    (tmp_path / "QAs").mkdir()
    assert conv.find_qa_dir(tmp_path) == tmp_path / "QAs"
    with pytest.raises(FileNotFoundError, match=r"no QAs/ folder; pass --qa-dir$"):
        conv.find_qa_dir(tmp_path / "data" / "qa")


@pytest.mark.parametrize("name", ["QAs", "qas", "QA", "qa"])
def test_a_qa_folder_of_a_usual_name_at_the_top_wins_over_one_deeper_that_sorts_first(tmp_path, name):
    # "A/qa" sorts before every top-level name ("A" < "Q" < "q"): only the top-level check finds the top folder
    (tmp_path / "A" / "qa").mkdir(parents=True)
    (tmp_path / name).mkdir()
    assert conv.find_qa_dir(tmp_path) == tmp_path / name


def test_a_qa_folder_below_the_top_is_found_whatever_its_case(tmp_path):
    (tmp_path / "release" / "QAs").mkdir(parents=True)
    assert conv.find_qa_dir(tmp_path) == tmp_path / "release" / "QAs"


def test_a_json_qa_file_holds_a_list_or_one_under_a_known_key(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"meta": 1, "items": [{"a": 1}, {"a": 2}]}))
    assert list(conv.read_qa_file(path)) == [(1, {"a": 1}), (2, {"a": 2})]
    path.write_text(json.dumps({"data": "none"}))
    with pytest.raises(conv.ConversionError, match=r"x\.json: expected a list of QA rows"):
        list(conv.read_qa_file(path))
    jsonl = tmp_path / "y.jsonl"
    jsonl.write_text('{"a": 1}\n\n{"a": 2}\n')
    assert list(conv.read_qa_file(jsonl)) == [(1, {"a": 1}), (3, {"a": 2})]


@pytest.mark.parametrize("key", ["data", "questions", "qas", "items"])
def test_a_json_qa_file_may_hold_its_rows_under_each_known_key(tmp_path, key):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"meta": [0], key: [{"a": 1}]}))
    assert list(conv.read_qa_file(path)) == [(1, {"a": 1})]


def test_a_qa_file_that_is_not_json_is_named_with_its_line(tmp_path):
    jsonl = tmp_path / "y.jsonl"
    jsonl.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(conv.ConversionError, match=rf"^{re.escape(str(jsonl))}:2: not valid JSON \(Expecting value"):
        list(conv.read_qa_file(jsonl))
    listed = tmp_path / "z.json"
    listed.write_text("[1,")
    with pytest.raises(conv.ConversionError, match=rf"^{re.escape(str(listed))}: not valid JSON \(Expecting value"):
        list(conv.read_qa_file(listed))


def test_a_row_without_a_question_image_or_answer_names_what_was_looked_for(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(question=...), _row(image=...), _row(answer=...), [1]])
    problems = [str(p).split("existence.jsonl:")[1] for p in conv.collect(tmp_path).problems]
    assert problems == [
        "1: field 'question': missing (looked for question, Question, query, prompt)",
        "2: field 'image': missing (looked for image, image_path, img, img_path, image_name, imagename, image_file, "
        "file_name, filename, image_id)",
        "3: field 'answer': missing (looked for answer, Answer, gt, label, correct_answer, ground_truth, answer_close, "
        "close_answer, gt_answer, mc_answer, correct)",
        "4: field '<row>': expected a JSON object, got list",
    ]


def test_more_options_than_letters_are_refused(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "counting.jsonl", [_row(options=[str(i) for i in range(17)], answer="A")])
    (problem,) = conv.collect(tmp_path).problems
    assert (problem.field, problem.problem) == ("options", "17 options; at most 16 supported")


def test_sixteen_options_one_per_letter_are_read(tmp_path):
    # LETTERS holds 16 letters (A..P): a question with 16 options is read; answer index 15 (0-based: the file's
    # only index is not the option count) is its last option, P
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "counting.jsonl", [_row(options=[f"n{i}" for i in range(16)], answer=15)])
    (row,) = conv.collect(tmp_path).rows
    assert (len(row["options"]), row["answer"], row["answer_text"]) == (16, "P", "n15")


def test_a_yes_no_row_without_an_open_answer_has_its_yes_or_no_as_the_answer_text(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(id="y", answer="true"), _row(id="n", answer="0")])
    result = conv.collect(tmp_path)
    assert [(r["id"], r["answer"], r["answer_text"]) for r in result.rows] == [("y", "Yes", "Yes"), ("n", "No", "No")]
    assert result.derived_answer_text == 2


def test_only_json_and_jsonl_files_are_read_as_question_files(tmp_path):
    # a README and a folder named like a QA file are not question files; a .JSON file is one
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    (tmp_path / "QAs" / "old.jsonl").mkdir(parents=True)
    (tmp_path / "QAs" / "README.md").write_text("not JSON")
    (tmp_path / "QAs" / "counting.JSON").write_text(json.dumps([_row(id="c1", answer="no")]))
    assert [(r["id"], r["task"]) for r in conv.collect(tmp_path).rows] == [("c1", "counting")]


def test_a_qa_folder_without_question_files_is_named(tmp_path):
    (tmp_path / "QAs").mkdir()
    (tmp_path / "QAs" / "notes.txt").write_text("x")
    with pytest.raises(FileNotFoundError) as caught:
        conv.collect(tmp_path)
    assert str(caught.value) == f"{tmp_path / 'QAs'}: no .jsonl / .json QA files"


# --- writing ------------------------------------------------------------------------------------------


def test_shards_are_numbered_of_their_count_and_embed_each_rows_own_image(tmp_path):
    red, blue = _jpg(tmp_path / "r.jpg", (200, 0, 0)), _jpg(tmp_path / "b.jpg", (0, 0, 200))
    rows = [{"id": str(i), "task": "existence", "question": "q", "options": [], "answer": "Yes", "answer_text": "Yes",
             "_image_path": image} for i, image in enumerate([red, blue, red])]  # fmt: skip
    written = conv.write_parquet(rows, tmp_path / "out", rows_per_shard=2, row_group=1)
    assert [p.name for p in written] == ["test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
    images = [cell for p in written for cell in pq.read_table(p).column("image").to_pylist()]
    assert [cell["path"] for cell in images] == ["r.jpg", "b.jpg", "r.jpg"]
    assert [Image.open(io.BytesIO(c["bytes"])).getpixel((0, 0))[2] > 100 for c in images] == [False, True, False]
    assert [pq.read_table(p).column("id").to_pylist() for p in written] == [["0", "1"], ["2"]]


def test_without_embedding_a_shard_points_at_each_panorama(tmp_path):
    image = _jpg(tmp_path / "r.jpg", (200, 0, 0))
    row = {"id": "0", "task": "existence", "question": "q", "options": [], "answer": "Yes", "answer_text": "Yes",
           "_image_path": image}  # fmt: skip
    (path,) = conv.write_parquet([row], tmp_path / "out", embed_images=False)
    assert pq.read_table(path).column("image").to_pylist() == [{"bytes": None, "path": str(image.absolute())}]


def test_a_release_with_bad_rows_is_refused_listing_them_and_one_without_rows_too(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(answer="maybe")])
    with pytest.raises(conv.ConversionError, match=r"^1 QA rows cannot be converted:\n  .*existence\.jsonl:1: field"):
        conv.convert(tmp_path, tmp_path / "out")
    with pytest.raises(conv.ConversionError, match=r"^no QA rows converted$"):
        conv.convert(tmp_path, tmp_path / "out", skip_bad=True)


def test_an_answer_matches_an_option_text_up_to_punctuation_case_and_spacing():
    assert conv.resolve_answer("Light  Blue.", ["red", "light blue"], False, "answer") == "B"
    assert conv.resolve_answer("B. light-blue!", ["red", "light-blue"], False, "answer") == "B"


def test_more_than_30_bad_rows_are_listed_30_then_counted(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(id=i, answer="maybe") for i in range(31)])
    with pytest.raises(conv.ConversionError) as raised:
        conv.convert(tmp_path, tmp_path / "out")
    lines = str(raised.value).split("\n")
    assert lines[0] == "31 QA rows cannot be converted:"
    assert len(lines) == 1 + 30 + 1 and all(line.startswith("  ") for line in lines[1:])
    assert lines[30].startswith(f"  {tmp_path / 'QAs' / 'existence.jsonl'}:30: field 'answer'")
    assert lines[31] == "  ... and 1 more"


def test_thirty_bad_rows_are_all_listed_with_nothing_more(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(id=i, answer="maybe") for i in range(30)])
    with pytest.raises(conv.ConversionError) as raised:
        conv.convert(tmp_path, tmp_path / "out")
    lines = str(raised.value).split("\n")
    assert len(lines) == 31 and lines[-1].endswith(":30: field 'answer': a question without options needs a yes/no "
                                                   "answer, got 'maybe'")  # fmt: skip


def test_a_conversion_reads_the_qa_folder_and_column_map_it_is_given(tmp_path):
    from lmms_spatial.data.column_map import parse as parse_map

    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(answer="no")])  # the default folder: not this one
    row = _row()
    row["truth"] = row.pop("answer")
    _jsonl(tmp_path / "mine" / "counting.jsonl", [row])
    result = conv.convert(tmp_path, tmp_path / "out", qa_dir=tmp_path / "mine", column_map=parse_map("odi_bench",
                          "answer=truth"))  # fmt: skip
    assert [(r["task"], r["answer"]) for r in result.rows] == [("counting", "Yes")]


def _rows(n: int, image: Path) -> list[dict]:
    return [{"id": str(i), "task": "existence", "question": "q", "options": [], "answer": "Yes", "answer_text": "Yes",
             "_image_path": image} for i in range(n)]  # fmt: skip


def test_by_default_a_shard_holds_400_rows_in_groups_of_16(tmp_path):
    image = _jpg(tmp_path / "r.jpg", (200, 0, 0))
    written = conv.write_parquet(_rows(401, image), tmp_path / "out" / "odi")  # a folder whose parent is new
    assert [pq.read_metadata(p).num_rows for p in written] == [400, 1]
    # 400 rows in groups of 16: 25 row groups
    assert pq.read_metadata(written[0]).num_row_groups == 25
    again = conv.write_parquet(_rows(17, image), tmp_path / "out" / "odi")  # again, into the same folder
    assert [pq.read_metadata(p).num_row_groups for p in again] == [2]  # 16 + 1


def test_the_bar_counts_rows(tmp_path, progress_bars):
    conv.write_parquet(_rows(1, _jpg(tmp_path / "r.jpg", (200, 0, 0))), tmp_path / "out")
    assert [(b.unit, b.total) for b in progress_bars] == [("row", 1)]


def test_a_conversion_passes_its_shard_size_on(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(id=1), _row(id=2)])
    conv.convert(tmp_path, tmp_path / "out", rows_per_shard=1)
    assert sorted(p.name for p in (tmp_path / "out").glob("*.parquet")) == [
        "test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]  # fmt: skip


def test_an_unknown_task_is_named_under_the_key_it_came_from(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "existence.jsonl", [_row(type="tilt")])
    (problem,) = conv.collect(tmp_path).problems
    known = ", ".join(conv.TASKS)
    assert (problem.field, problem.problem) == ("type", f"unknown ODI-Bench task 'tilt'; known: {known}")


def test_a_view_orientation_row_without_a_task_says_why_it_needs_one(tmp_path):
    _jpg(tmp_path / "p.jpg", (1, 1, 1))
    _jsonl(tmp_path / "QAs" / "view_orientation.jsonl", [_row()])
    (problem,) = conv.collect(tmp_path).problems
    assert (problem.field, problem.problem) == (
        "task",
        "no task field, and 'view_orientation.jsonl' may hold both view orientation tasks (egocentric, allocentric) "
        "as no allocentric file sits beside it",
    )


def test_a_long_answer_that_is_not_yes_or_no_is_named_in_200_characters():
    with pytest.raises(_RowError) as raised:
        conv._yes_no("z" * 300, "answer")
    assert raised.value.problem == f"a question without options needs a yes/no answer, got '{'z' * 300}'"[:200]
    assert len(raised.value.problem) == 200
