"""MMPerspective adapter, scoring glue (issue 37): whole records, robust metrics, aggregations, hand-worked."""

from __future__ import annotations

import math

import datasets
import pytest

from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.tasks.mmperspective import adapter, features

OPTIONS = ["top-left", "top-right", "bottom-left", "bottom-right"]
DOC = {"id": "vpp-1", "task": " vpp ", "question": "Where is the vanishing point?", "options": OPTIONS, "answer": " b "}
ROBUST = {**DOC, "robust_group": " seed-1 ", "perturbation": "Flip", "robust_variants": ["original", "flip"]}


@pytest.fixture
def warnings(logged):
    return logged("WARNING")


def test_an_accuracy_record_holds_exactly_these_fields():
    metrics = adapter.process_results(DOC, ["B"])
    record = {"id": "vpp-1", "task": "VPP", "answer": "B", "parsed": "B", "reason": "letter_only", "score": 1.0}
    record["n_options"] = 4
    assert metrics == {"accuracy": record, "unparsed_rate": 0.0, "chance_level": 0.25}


def test_the_cot_variant_reads_the_last_line_first():
    record = adapter.process_results_cot(DOC, ["A is tempting, but the lines converge right.\nAnswer: B"])["accuracy"]
    assert (record["parsed"], record["reason"], record["score"]) == ("B", "last_line:declared", 1.0)


def test_the_direct_variant_reads_option_text_against_the_documents_options():
    record = adapter.process_results(DOC, ["bottom-right"])["accuracy"]
    assert (record["parsed"], record["reason"], record["score"]) == ("D", "option_text_exact", 0.0)


def test_no_result_at_all_is_an_empty_reply_unparsed():
    for process in (adapter.process_results, adapter.process_results_cot):
        metrics = process(DOC, [])
        assert (metrics["accuracy"]["parsed"], metrics["accuracy"]["reason"]) == (None, "unparsed:empty")
        assert metrics["unparsed_rate"] == 1.0


def test_a_robust_row_reports_the_group_metrics_and_one_metric_per_variant():
    metrics = adapter.process_results_robust(ROBUST, ["B"])
    record = metrics["binary_robustness"]
    assert record == {
        "id": "vpp-1",
        "task": "VPP",
        "answer": "B",
        "parsed": "B",
        "reason": "letter_only",
        "score": 1.0,
        "n_options": 4,
        "robust_group": "seed-1",
        "perturbation": "flip",
        "robust_variants": ["original", "flip"],
    }
    names = ["binary_robustness", "graded_robustness", "complete_robust_groups", "incomplete_robust_groups"]
    names += ["variant_original", "variant_crop", "variant_flip", "variant_mask", "variant_rotate"]
    assert metrics == {**{name: record for name in names}, "unparsed_rate": 0.0, "chance_level": 0.25}


def test_a_robust_row_unparsed_counts_in_the_unparsed_rate_and_three_options_give_chance_one_third():
    metrics = adapter.process_results_robust({**ROBUST, "options": OPTIONS[:3], "answer": "A"}, ["I am not sure"])
    assert metrics["unparsed_rate"] == 1.0 and metrics["chance_level"] == pytest.approx(1 / 3)
    assert metrics["graded_robustness"]["score"] == 0.0


def test_a_robust_row_without_a_perturbation_is_the_original():
    record = adapter.process_results_robust({**ROBUST, "perturbation": None}, ["B"])["graded_robustness"]
    assert record["perturbation"] == "original"


def test_the_robust_cot_variant_reads_the_last_line_first():
    metrics = adapter.process_results_robust_cot(ROBUST, ["Maybe A.\nAnswer: C"])
    record = metrics["graded_robustness"]
    assert (record["parsed"], record["reason"], record["score"]) == ("C", "last_line:declared", 0.0)
    assert record["robust_group"] == "seed-1" and metrics["unparsed_rate"] == 0.0
    assert adapter.process_results_robust_cot(ROBUST, [])["graded_robustness"]["reason"] == "unparsed:empty"


def test_two_options_are_enough_and_one_is_not():
    assert adapter.options_of({**DOC, "options": ("yes", "no")}) == ["yes", "no"]
    with pytest.raises(BadDocumentError, match=r"document 'vpp-1', field 'options': expected a list of option texts"):
        adapter.options_of({**DOC, "options": ["only"]})


@pytest.mark.parametrize("options", ["ABCD", None, 4])
def test_options_that_are_not_a_list_are_refused_naming_document_and_field(options):
    with pytest.raises(BadDocumentError, match=r"document 'vpp-1', field 'options'"):
        adapter.options_of({**DOC, "options": options})


def _robust_records():
    # group a: original, flip both right (complete, graded 1); group b: original right, flip wrong (graded 0.5);
    # group c: declares flip, only the original answered (incomplete)
    rows = [
        ("a", "original", 1.0),
        ("a", "flip", 1.0),
        ("b", "original", 1.0),
        ("b", "flip", 0.0),
        ("c", "original", 0),
    ]
    return [
        {"robust_group": g, "perturbation": v, "robust_variants": ["original", "flip"], "score": s} for g, v, s in rows
    ]


def test_robust_aggregations_are_the_summary_over_complete_groups(warnings):
    records = _robust_records()
    assert adapter.aggregate_binary(records) == 0.5  # a right everywhere, b not: 1/2
    assert adapter.aggregate_graded(records) == 0.75  # (1 + 0.5) / 2
    assert adapter.aggregate_complete(records) == 2
    assert adapter.aggregate_incomplete(records) == 1
    assert warnings == [
        "MMPerspective robustness: 1 incomplete group(s) not scored (a variant was not answered, e.g. --limit): ['c']"
    ]
    assert adapter.aggregate_variant_original(records) == 1.0  # a, b right
    assert adapter.aggregate_variant_flip(records) == 0.5  # a right, b wrong
    assert math.isnan(adapter.aggregate_variant_mask(records))  # no complete group has a mask variant


def test_more_than_ten_incomplete_groups_are_listed_ten_and_an_ellipsis(warnings):
    records = [
        {"robust_group": f"g{i:02d}", "perturbation": "original", "robust_variants": ["original", "flip"], "score": 1}
        for i in range(11)
    ]
    assert adapter.aggregate_incomplete(records) == 11
    ten = [f"g{i:02d}" for i in range(10)]
    assert warnings == [
        f"MMPerspective robustness: 11 incomplete group(s) not scored (a variant was not answered, e.g. --limit): "
        f"{ten} ..."
    ]
    warnings.clear()
    assert adapter.aggregate_incomplete(records[:10]) == 10 and warnings[0].endswith(f"{ten}")


def test_no_incomplete_group_says_nothing(warnings):
    assert adapter.aggregate_incomplete(_robust_records()[:4]) == 0 and warnings == []


def test_variant_aggregators_are_named_for_lmms_eval():
    assert adapter.aggregate_variant_rotate.__name__ == "aggregate_variant_rotate"
    assert adapter._variant_aggregator("crop").__name__ == "aggregate_variant_crop"


def test_accuracy_and_mean_aggregations():
    assert adapter.aggregate_accuracy([{"score": 1.0}, {"score": 0.0}, {"score": 0.0}, {"score": 1.0}]) == 0.5
    assert adapter.aggregate_mean([1.0, 0.0, 0.0]) == pytest.approx(1 / 3)


def test_the_target_is_the_answer_letter_upper_cased():
    assert adapter.doc_to_target(DOC) == "B"
    assert adapter.doc_to_target({}) == ""


def _dataset(rows):
    base = {"images": [], "question": "q?", "options": OPTIONS, "answer": "A", "robust_group": None}
    full = [{**base, "perturbation": "original", **row} for row in rows]
    return datasets.Dataset.from_dict({c: [r[c] for r in full] for c in features()}, features=features())


def test_a_tasks_document_filter_keeps_its_own_accuracy_rows_and_is_named_for_it():
    rows = [{"id": "p1", "task": "PTR"}, {"id": "v1", "task": "VPP"}, {"id": "p2", "task": "ptr"}]
    rows.append({"id": "p3", "task": "PTR", "robust_group": "g"})  # a robust row: not an accuracy row
    process = adapter._docs_of_task("PTR")
    assert process(_dataset(rows))["id"] == ["p1", "p2"]
    assert process.__name__ == "process_docs_ptr"


def test_a_task_with_no_accuracy_row_fails_naming_it():
    with pytest.raises(
        ValueError, match=r"MMPerspective data has no OVR accuracy rows \(task='OVR', robust_group null\)"
    ):
        adapter._docs_of_task("OVR")(_dataset([{"id": "v1", "task": "VPP"}]))


def test_a_task_with_exactly_one_accuracy_row_keeps_it():
    assert adapter._docs_of_task("VPC")(_dataset([{"id": "c1", "task": "VPC"}]))["id"] == ["c1"]


def test_variant_aggregators_read_their_own_variant():
    assert adapter._variant_aggregator("flip")(_robust_records()) == 0.5  # a right, b wrong
    assert adapter._variant_aggregator("original")(_robust_records()) == 1.0


def test_a_tasks_documents_keep_their_images_undecoded_and_the_placeholder_loads_mmperspective(monkeypatch):
    import io

    from PIL import Image

    from lmms_spatial.data import loading

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (1, 2, 3)).save(buffer, format="PNG")
    real = _dataset([{"id": "v1", "task": "VPP", "images": [{"bytes": buffer.getvalue(), "path": None}]}])
    asked = []
    monkeypatch.setattr(loading, "_load", lambda key, config: asked.append((key, config)) or real)
    placeholder = datasets.Dataset.from_dict({loading.PLACEHOLDER_COLUMN: ["x"]})
    (doc,) = adapter._docs_of_task("VPP")(placeholder)
    assert asked == [("mmperspective", None)]
    assert doc["images"] == [{"bytes": buffer.getvalue(), "path": None}]
