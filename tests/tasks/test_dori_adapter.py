"""DORI adapter: structured / unstructured prompts, parsing, option seeds, bad data."""

from __future__ import annotations

import datasets
import pytest

from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.tasks.dori import adapter
from lmms_spatial.tasks.dori.demo import io_rotation_label

DOC = {
    "id": "q1",
    "images": ["<img>"],
    "task": "single_axis_rotation",
    "granularity": "granular",
    "question": "Determine the closest clockwise rotation needed for Object A to face the camera.",
    "context": "Object A is marked with a bounding box in the image.",
    "instructions": ["1. Identify Object A", "2. Compare with the provided options"],
    "examples": ['If the object is already facing the camera, the answer is "0 degrees"'],
    "options": ["0 degrees", "90 degrees", "180 degrees", "Cannot be determined"],
    "answer": "C",
    "option_seed": "original",
}

STRUCTURED = """TASK: Determine the closest clockwise rotation needed for Object A to face the camera.
CONTEXT: Object A is marked with a bounding box in the image.
Please analyze this image using these steps:
1. Identify Object A
2. Compare with the provided options
OPTIONS:
A. 0 degrees
B. 90 degrees
C. 180 degrees
D. Cannot be determined
FORMAT YOUR RESPONSE AS:
"answer": "Letter/number of chosen option",
"reasoning": "Step-by-step explanation citing specific visual evidence"
EXAMPLES:
- If the object is already facing the camera, the answer is "0 degrees\""""


def test_structured_prompt_has_the_five_parts_of_figure_2_in_order():
    assert adapter.doc_to_text(DOC) == STRUCTURED


def test_structured_prompt_says_these_images_for_an_image_pair():
    assert "Please analyze these images using these steps:" in adapter.doc_to_text({**DOC, "images": [1, 2]})


def test_unstructured_prompt_is_the_task_line_and_options_only():
    text = adapter.doc_to_text(DOC, {"prompt": "unstructured"})
    assert text == (
        "Determine the closest clockwise rotation needed for Object A to face the camera.\n"
        "A. 0 degrees\nB. 90 degrees\nC. 180 degrees\nD. Cannot be determined\n"
        "Answer with the letter of the correct option."
    )


def test_unknown_prompt_variant_is_refused():
    with pytest.raises(ValueError, match="prompt"):
        adapter.doc_to_text(DOC, {"prompt": "fancy"})


def test_answer_is_read_from_the_json_answer_field_first():
    out = adapter.process_results(DOC, ['"answer": "C", "reasoning": "Option A is wrong because B..."'])
    record = out["accuracy"]
    assert (record["parsed"], record["score"], record["reason"]) == ("C", 1.0, "json_answer")


def test_answer_falls_back_to_the_robust_extractor():
    record = adapter.process_results(DOC, ["The object faces away, so the answer is B."])["accuracy"]
    assert record["parsed"] == "B" and record["score"] == 0.0


def test_unparseable_answer_scores_zero_with_a_reason_and_counts_as_unparsed():
    out = adapter.process_results(DOC, ["I am not sure."])
    assert out["accuracy"]["parsed"] is None and out["accuracy"]["reason"].startswith("unparsed")
    assert out["unparsed_rate"] == 1.0 and out["soft_accuracy"]["soft_score"] == 0.0


def test_granular_record_carries_soft_score_and_coarse_record_does_not():
    granular = adapter.process_results(DOC, ['"answer": "B"'])  # 90 for 180: two steps away
    assert granular["soft_accuracy"]["soft_score"] == 0.0
    coarse = adapter.process_results({**DOC, "granularity": "coarse"}, ['"answer": "B"'])
    assert "soft_accuracy" not in coarse and "soft_score" not in coarse["accuracy"]


def test_chance_level_comes_from_the_questions_own_option_count():
    assert adapter.process_results(DOC, ["A"])["chance_level"] == 0.25


def test_record_carries_options_so_error_analysis_needs_no_rerun():
    record = adapter.process_results(DOC, ['"answer": "A"'])["accuracy"]
    assert record["options"] == DOC["options"] and record["task"] == "single_axis_rotation"


# --- option seeds (App. K) -------------------------------------------------------------


# The documented rule (adapter docstring, App. K seeds): options are shuffled with
# random.Random(f"{seed}:{id}").shuffle. The orders below were derived outside the adapter with that
# rule alone (Python's Mersenne Twister, stable across versions for a str seed):
#   x = ["0 degrees", "90 degrees", "180 degrees", "Cannot be determined"]; random.Random("42:q1").shuffle(x)
SHUFFLED_Q1 = {
    "42": (["180 degrees", "0 degrees", "Cannot be determined", "90 degrees"], "A"),
    "1998": (["Cannot be determined", "0 degrees", "180 degrees", "90 degrees"], "C"),
    "107983": (["0 degrees", "90 degrees", "Cannot be determined", "180 degrees"], "D"),
}


@pytest.mark.parametrize("seed", sorted(SHUFFLED_Q1))
def test_each_paper_seed_gives_its_pinned_order_and_the_answer_follows_its_option(seed):
    # the answer C is "180 degrees"; after the shuffle its letter is wherever "180 degrees" went
    assert adapter.shuffle_options(DOC["options"], "C", seed, "q1") == SHUFFLED_Q1[seed]


def test_the_order_depends_on_the_document_id_too():
    # same seed, another document: random.Random("42:q2") gives another order
    assert adapter.shuffle_options(DOC["options"], "C", "42", "q2") == (
        ["Cannot be determined", "0 degrees", "180 degrees", "90 degrees"],
        "C",
    )


def test_without_a_seed_options_keep_their_stored_order(monkeypatch):
    monkeypatch.delenv(adapter.SEED_ENV, raising=False)
    assert adapter.option_seed() == "original"
    assert adapter.shuffle_options(DOC["options"], "C", "original", "q1") == (DOC["options"], "C")


def test_records_carry_the_seed_as_a_run_option_for_replay(monkeypatch):
    monkeypatch.setenv(adapter.SEED_ENV, "1998")
    assert adapter.process_results(DOC, ["A"])["accuracy"]["run_options"] == {"LMMS_SPATIAL_DORI_SEED": "1998"}


def test_a_non_integer_seed_is_refused(monkeypatch):
    monkeypatch.setenv(adapter.SEED_ENV, "forty-two")
    with pytest.raises(ValueError, match=adapter.SEED_ENV):
        adapter.option_seed()


def _dataset(rows):
    keys = ["id", "task", "granularity", "question", "options", "answer"]
    return datasets.Dataset.from_list([{k: r[k] for k in keys} for r in rows])


def test_process_docs_keeps_its_question_type_and_applies_the_seed(monkeypatch):
    monkeypatch.setenv(adapter.SEED_ENV, "42")
    rows = [DOC, {**DOC, "id": "q2", "granularity": "coarse"}, {**DOC, "id": "q3", "task": "compound_rotation"}]
    docs = adapter.docs_for("single_axis_rotation", "granular")(_dataset(rows))
    assert docs["id"] == ["q1"]
    (doc,) = docs
    options, answer = SHUFFLED_Q1["42"]
    assert (doc["options"], doc["answer"], doc["option_seed"]) == (options, answer, "42")


def test_process_docs_fails_loudly_naming_the_document_with_an_impossible_answer(monkeypatch):
    monkeypatch.delenv(adapter.SEED_ENV, raising=False)
    with pytest.raises(BadDocumentError, match=r"'q9'.*'answer'"):
        adapter.docs_for("single_axis_rotation", "granular")(_dataset([{**DOC, "id": "q9", "answer": "F"}]))


def test_process_docs_names_missing_columns_and_the_converter():
    ds = datasets.Dataset.from_list([{"id": "x", "question": "q"}])
    with pytest.raises(BadDocumentError, match="lmms-spatial convert dori"):
        adapter.docs_for("view_parallelism", "coarse")(ds)


# --- demo geometry ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "label"),
    [
        (0, 60, "46 to 90 degrees clockwise"),  # B faces 60 deg clockwise of A: turn it back 60 deg
        (0, 330, "0 to 45 degrees counterclockwise"),
        (90, 90, "No rotation"),
        (0, 180, "180 degrees in either direction"),
        (0, 225, "91 to 135 degrees counterclockwise"),
    ],
)
def test_demo_inter_object_answer_follows_from_the_two_headings(a, b, label):
    assert io_rotation_label(a, b) == label


def test_demo_dataset_has_two_items_for_each_of_the_14_question_types(fixture_datasets):
    ds = datasets.load_dataset("parquet", data_files=str(fixture_datasets["dori"] / "test.parquet"))["train"]
    counts = {}
    for task, gran in zip(ds["task"], ds["granularity"], strict=True):
        counts[(task, gran)] = counts.get((task, gran), 0) + 1
    assert len(counts) == 14 and set(counts.values()) == {2}
    assert all("Cannot be determined" in options for options in ds["options"])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"task": "VIEW_PARALLELISM "}, r"document 'q5', field 'task': 'VIEW_PARALLELISM ' is not one of"),
        ({"granularity": "fine"}, r"document 'q5', field 'granularity': 'fine' is not one of"),
    ],
)
def test_a_row_of_no_question_type_fails_instead_of_vanishing(row, message, monkeypatch):
    monkeypatch.delenv(adapter.SEED_ENV, raising=False)
    rows = [DOC, {**DOC, "id": "q5", **row}]
    with pytest.raises(BadDocumentError, match=message):
        adapter.docs_for("single_axis_rotation", "granular")(_dataset(rows))


def test_duplicate_dori_ids_fail(monkeypatch):
    monkeypatch.delenv(adapter.SEED_ENV, raising=False)
    with pytest.raises(BadDocumentError, match=r"document 'q1', field 'id': duplicate id"):
        adapter.docs_for("single_axis_rotation", "granular")(_dataset([DOC, DOC]))
