"""DORI adapter, scoring glue (issue 37): every field of a record, both prompts, the aggregations, hand-worked."""

from __future__ import annotations

import math
import os

import pytest

from lmms_spatial.metrics import dori as dori_metrics
from lmms_spatial.tasks.dori import adapter

# single-axis rotation, granular: truth D (180), a 45-degree step on the same (back) side is C (135)
DOC = {
    "id": "q7",
    "task": "single_axis_rotation",
    "granularity": "granular",
    "question": "Determine the closest clockwise rotation needed for Object A to face the camera.",
    "options": ["0 degrees", "45 degrees", "135 degrees", "180 degrees"],
    "answer": "D",
    "option_seed": "42",
}
OPTIONS = ["0 degrees", "45 degrees", "135 degrees", "180 degrees"]


@pytest.fixture(autouse=True)
def _no_product_settings(monkeypatch):
    for name in list(os.environ):
        if name.startswith("LMMS_SPATIAL_"):
            monkeypatch.delenv(name)


def test_a_structured_record_holds_exactly_these_fields():
    metrics = adapter.process_results(DOC, ['{"answer": "C", "reasoning": "it faces away, a little turned"}'])
    record = metrics["accuracy"]
    assert record == {
        "id": "q7",
        "task": "single_axis_rotation",
        "granularity": "granular",
        "options": OPTIONS,
        "answer": "D",
        "parsed": "C",
        "reason": "json_answer",
        "score": 0.0,
        "option_seed": "42",
        "prompt": "structured",
        "run_options": {},
        # 135 for 180: one 45-degree step, both in the back half (cos < 0): App. L partial credit
        "soft_score": 0.5,
        "soft_reason": "partial:single_axis_rotation",
    }
    assert metrics == {"accuracy": record, "soft_accuracy": record, "unparsed_rate": 0.0, "chance_level": 0.25}


def test_an_unstructured_record_is_read_by_the_robust_rules_and_says_so():
    metrics = adapter.process_results_unstructured(DOC, ["The answer is D."])
    record = metrics["accuracy"]
    assert (record["parsed"], record["reason"], record["score"], record["prompt"]) == (
        "D",
        "declared",
        1.0,
        "unstructured",
    )
    assert (record["soft_score"], record["soft_reason"]) == (1.0, "exact")
    assert metrics["unparsed_rate"] == 0.0 and metrics["chance_level"] == 0.25


def test_the_structured_prompt_reads_the_json_field_first_and_the_unstructured_one_the_last_final_form():
    reply = '{"answer": "D"}\nOn reflection, final answer: B'
    structured = adapter.score_record(DOC, reply, "structured")
    unstructured = adapter.score_record(DOC, reply, "unstructured")
    assert (structured["parsed"], structured["reason"]) == ("D", "json_answer")
    # robust: JSON, boxed and "final answer" are one tier read by position; the later "final answer: B" wins
    assert (unstructured["parsed"], unstructured["reason"]) == ("B", "final_answer")


def test_score_record_uses_the_structured_prompt_unless_told():
    assert adapter.score_record(DOC, '"answer": "A"')["prompt"] == "structured"


def test_an_answer_given_as_option_text_is_matched_against_the_documents_options():
    record = adapter.score_record(DOC, "180 degrees", "unstructured")
    assert (record["parsed"], record["reason"], record["score"]) == ("D", "option_text_exact", 1.0)


def test_an_empty_result_list_is_an_empty_reply_unparsed():
    for process in (adapter.process_results, adapter.process_results_unstructured):
        metrics = process(DOC, [])
        assert (metrics["accuracy"]["parsed"], metrics["accuracy"]["reason"]) == (None, "unparsed:empty")
        assert metrics["unparsed_rate"] == 1.0 and metrics["accuracy"]["soft_score"] == 0.0


def test_a_coarse_record_has_no_soft_score_and_no_soft_accuracy_metric():
    metrics = adapter.process_results({**DOC, "granularity": "coarse"}, ['"answer": "D"'])
    assert "soft_score" not in metrics["accuracy"] and "soft_accuracy" not in metrics
    assert metrics["accuracy"]["score"] == 1.0


def test_a_record_without_an_id_or_seed_says_none_and_original():
    doc = {k: v for k, v in DOC.items() if k not in ("id", "option_seed")}
    record = adapter.score_record(doc, '"answer": "D"')
    assert record["id"] is None and record["option_seed"] == "original"


def test_a_soft_score_against_a_wrong_letter_names_the_rule_that_refused_credit():
    # 0 for 180: not adjacent (180 degrees apart)
    record = adapter.score_record(DOC, '"answer": "A"')
    assert (record["soft_score"], record["soft_reason"]) == (0.0, "no_partial_credit")


def test_accuracy_and_soft_accuracy_average_their_own_fields():
    records = [{"score": 1.0, "soft_score": 1.0}, {"score": 0.0, "soft_score": 0.5}, {"score": 0.0, "soft_score": 0.0}]
    assert adapter.aggregate_accuracy(records) == pytest.approx(1 / 3)  # 1 of 3 exact
    assert adapter.aggregate_soft_accuracy(records) == 0.5  # (1 + 0.5 + 0) / 3
    assert adapter.aggregate_mean([0.0, 1.0, 1.0]) == pytest.approx(2 / 3)
    assert math.isnan(adapter.aggregate_accuracy([]))


def test_the_target_is_the_answer_letter_or_nothing():
    assert adapter.doc_to_target(DOC) == "D"
    assert adapter.doc_to_target({}) == ""


@pytest.mark.parametrize("value", ["None", "ORIGINAL", " original ", ""])
def test_the_stored_order_is_kept_for_none_original_or_nothing(monkeypatch, value):
    monkeypatch.setenv(adapter.SEED_ENV, value)
    assert adapter.option_seed() == "original"


def test_a_prepared_batch_upper_cases_the_answer_letter_and_records_the_seed():
    batch = adapter._prepare_batch(["q1"], [["a", "b", "c"]], [" b "], "original")
    assert batch == {"options": [["a", "b", "c"]], "answer": ["B"], "option_seed": ["original"]}


def test_sixteen_options_are_lettered_and_seventeen_are_refused():
    sixteen = [f"o{i}" for i in range(16)]
    assert adapter._prepare_batch(["q"], [sixteen], ["P"], "original")["answer"] == ["P"]
    with pytest.raises(adapter.BadDocumentError, match=r"^document 'q', field 'options': 17 options; at most 16"):
        adapter._prepare_batch(["q"], [[*sixteen, "o16"]], ["A"], "original")


@pytest.mark.parametrize("options", [[], None, "A. x B. y"])
def test_missing_or_unlisted_options_are_refused(options):
    with pytest.raises(adapter.BadDocumentError, match=r"^document 'q', field 'options': missing or empty$"):
        adapter._prepare_batch(["q"], [options], ["A"], "original")


def test_an_answer_outside_the_letters_names_them():
    with pytest.raises(adapter.BadDocumentError, match=r"^document 'q', field 'answer': 'C' is not one of the 2 "):
        adapter._prepare_batch(["q"], [["a", "b"]], ["c"], "original")


@pytest.mark.parametrize(("task", "granularity"), [("view_parallelism", "fine"), ("parallelism", "coarse")])
def test_an_unknown_question_type_is_refused_naming_it(task, granularity):
    with pytest.raises(ValueError, match=rf"^unknown DORI question type {task}/{granularity}$"):
        adapter.docs_for(task, granularity)


def test_documents_keep_their_images_undecoded():
    import io

    import datasets
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (1, 2, 3)).save(buffer, format="PNG")
    row = {**DOC, "images": [{"bytes": buffer.getvalue(), "path": None}]}
    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "task": datasets.Value("string"),
            "granularity": datasets.Value("string"),
            "question": datasets.Value("string"),
            "options": datasets.Sequence(datasets.Value("string")),
            "answer": datasets.Value("string"),
            "images": datasets.Sequence(datasets.Image()),
        }
    )
    dataset = datasets.Dataset.from_list([{k: row[k] for k in features}], features=features)
    (doc,) = adapter.docs_for("single_axis_rotation", "granular")(dataset)
    assert doc["images"] == [{"bytes": buffer.getvalue(), "path": None}]  # bytes, not a decoded image
    assert doc["options"] == OPTIONS and doc["answer"] == "D"


def test_the_placeholder_dataset_loads_doris_own_data(monkeypatch):
    import datasets

    from lmms_spatial.data import loading

    asked = []
    real = datasets.Dataset.from_list([{k: v for k, v in DOC.items()} | {"images": []}])

    def fake_load(key, config):
        asked.append((key, config))
        return real

    monkeypatch.setattr(loading, "_load", fake_load)
    placeholder = datasets.Dataset.from_dict({loading.PLACEHOLDER_COLUMN: ["x"]})
    docs = adapter.docs_for("single_axis_rotation", "granular")(placeholder)
    assert asked == [("dori", None)] and docs["id"] == ["q7"]


QUESTION_TYPES = [(t, g) for t in dori_metrics.TASKS for g in dori_metrics.GRANULARITIES]


@pytest.mark.parametrize(("task", "granularity"), QUESTION_TYPES)
def test_each_question_type_s_process_docs_keeps_its_own_task_and_granularity(monkeypatch, task, granularity):
    """The YAML of ``dori_<task>_<granularity>`` names ``utils.docs_<task>_<granularity>``: a plain function that
    keeps that question type's rows (``docs_for`` of exactly that pair) of the dataset it is given."""
    monkeypatch.setattr(adapter, "docs_for", lambda t, g: lambda dataset: (t, g, dataset))
    dataset = object()
    assert getattr(adapter, f"docs_{task}_{granularity}")(dataset) == (task, granularity, dataset)
