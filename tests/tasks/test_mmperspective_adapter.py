"""MMPerspective task adapter: prompts, image order, score records, row checks, data location."""

import io

import datasets
import pytest
from PIL import Image

from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.tasks.mmperspective import features
from lmms_spatial.tasks.mmperspective.adapter import (
    doc_to_messages,
    doc_to_text,
    doc_to_visual,
    process_docs_pts,
    process_docs_robust,
    process_docs_vpp,
    process_results,
    process_results_cot,
    process_results_robust,
)


def _png(colour=(200, 10, 10)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), colour).save(buffer, format="PNG")
    return buffer.getvalue()


OPTIONS = ["top-left", "top-right", "bottom-left", "bottom-right"]
DOC = {"id": "vpp-1", "images": [_png()], "task": "VPP", "question": "Where is the vanishing point in this image?"}
DOC.update(options=OPTIONS, answer="B", robust_group=None, perturbation="original")


def test_prompt_is_question_then_lettered_options_then_instruction():
    assert doc_to_text(DOC) == (
        "Where is the vanishing point in this image?\n"
        "A. top-left\nB. top-right\nC. bottom-left\nD. bottom-right\n"
        "Answer with the option's letter from the given choices directly."
    )


# MMPerspective publishes no prompt or code (SPEC 3.3): the direct prompt is the LLaVA-style instruction
# above, the CoT one is ours (Table 2 gives no text); both pinned here so that a change is a visible one.
def test_cot_prompt_asks_for_reasoning_and_an_answer_line():
    assert doc_to_text(DOC, {"variant": "cot"}) == (
        "Where is the vanishing point in this image?\n"
        "A. top-left\nB. top-right\nC. bottom-left\nD. bottom-right\n"
        "Think step by step about the perspective geometry in the image (vanishing points, horizon line, "
        "converging lines, line of sight). Then, on the last line, give the final answer as "
        '"Answer: X", where X is the option\'s letter.'
    )


def test_pts_messages_put_both_images_in_order_before_the_text():
    doc = {**DOC, "id": "pts-0", "task": "PTS", "images": [_png((1, 2, 3)), _png((200, 100, 50))]}
    (message,) = doc_to_messages(doc)
    assert [c["type"] for c in message["content"]] == ["image", "image", "text"]
    assert [c["url"].getpixel((0, 0)) for c in message["content"][:2]] == [(1, 2, 3), (200, 100, 50)]


def test_a_pts_question_with_one_image_fails_naming_document_and_field():
    with pytest.raises(BadDocumentError, match=r"document 'pts-9', field 'images': a PTS question needs 2"):
        doc_to_visual({**DOC, "id": "pts-9", "task": "PTS"})


def test_a_corrupt_image_fails_naming_document_and_field():
    with pytest.raises(BadDocumentError, match=r"document 'vpp-1', field 'images\[0\]'"):
        doc_to_visual({**DOC, "images": [b"not a png"]})


def test_record_says_what_was_parsed_and_why():
    metrics = process_results(DOC, ["The answer is B."])
    record = metrics["accuracy"]
    assert (record["parsed"], record["reason"], record["score"]) == ("B", "declared", 1.0)
    assert metrics["unparsed_rate"] == 0.0 and metrics["chance_level"] == 0.25


def test_option_text_is_accepted_as_an_answer():
    assert process_results(DOC, ["top-right"])["accuracy"]["parsed"] == "B"


@pytest.mark.parametrize("response", ["", None, "I cannot tell.", "?!", ["x" * 10_000], 42])
def test_malformed_output_scores_zero_as_unparsed_and_never_raises(response):
    metrics = process_results(DOC, [response])
    assert metrics["accuracy"]["score"] == 0.0 and metrics["unparsed_rate"] == 1.0
    assert metrics["accuracy"]["reason"].startswith("unparsed:")


def test_cot_reads_the_final_answer_not_letters_in_the_reasoning():
    reply = "Option A would need the lines to meet on the left.\nThey meet on the right, so not A.\nAnswer: B"
    assert process_results_cot(DOC, [reply])["accuracy"]["parsed"] == "B"


def test_robust_results_carry_group_variant_and_expected_variants():
    doc = {**DOC, "robust_group": "seed-1", "perturbation": "flip", "robust_variants": ["original", "flip"]}
    metrics = process_results_robust(doc, ["B"])
    record = metrics["graded_robustness"]
    assert (record["robust_group"], record["perturbation"], record["robust_variants"]) == (
        "seed-1",
        "flip",
        doc["robust_variants"],
    )
    assert not any("accuracy" in name for name in metrics)  # the parent group averages every *accuracy* metric


def _dataset(rows):
    columns = {c: [r[c] for r in rows] for c in features()}
    return datasets.Dataset.from_dict(columns, features=features())


def _row(rid, task="VPP", group=None, perturbation="original", images=1):
    return {
        **DOC,
        "id": rid,
        "task": task,
        "images": [_png()] * images,
        "robust_group": group,
        "perturbation": perturbation,
    }


ROWS = [
    _row("v1"),
    _row("v2", task="vpp"),
    _row("p1", task="PTS", images=2),
    _row("g1-o", group="g1"),
    _row("g1-f", group="g1", perturbation="flip"),
    _row("g2-o", group="g2", task="PTR"),
    _row("g2-c", group="g2", task="PTR", perturbation="crop"),
    _row("g2-m", group="g2", task="PTR", perturbation="mask"),
]


def test_a_task_gets_its_accuracy_rows_only():
    assert process_docs_vpp(_dataset(ROWS))["id"] == ["v1", "v2"]
    assert process_docs_pts(_dataset(ROWS))["id"] == ["p1"]


def test_robust_rows_learn_the_variants_their_group_must_have():
    docs = process_docs_robust(_dataset(ROWS))
    assert docs["id"] == ["g1-o", "g1-f", "g2-o", "g2-c", "g2-m"]
    assert docs["robust_variants"] == [["original", "flip"]] * 2 + [["original", "crop", "mask"]] * 3


def test_a_group_without_its_original_still_expects_the_original():
    docs = process_docs_robust(_dataset([_row("v1"), _row("g-f", group="g", perturbation="flip")]))
    assert docs["robust_variants"] == [["original", "flip"]]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (_row("x1", task="VPX"), r"document 'x1', field 'task'"),
        ({**_row("x2"), "answer": "E"}, r"document 'x2', field 'answer'"),
        (_row("x3", perturbation="blur", group="g9"), r"document 'x3', field 'perturbation'"),
        (_row("x4", perturbation="flip"), r"document 'x4', field 'robust_group'"),
        (_row("g1-f2", group="g1", perturbation="flip"), r"document 'g1-f2', field 'perturbation': robust group 'g1'"),
        (_row("v1"), r"document 'v1', field 'id': duplicate"),
        ({**_row("x5"), "question": ""}, r"document 'x5', field 'question': missing"),
    ],
)
def test_bad_rows_stop_loading_naming_document_and_field(bad, message):
    with pytest.raises(BadDocumentError, match=message):
        process_docs_vpp(_dataset([*ROWS, bad]))


def test_a_missing_column_fails_naming_it():
    dataset = _dataset(ROWS).remove_columns("perturbation")
    with pytest.raises(BadDocumentError, match=r"field 'perturbation': column missing"):
        process_docs_robust(dataset)


def test_without_a_local_copy_the_error_says_how_to_get_one(monkeypatch):
    from lmms_spatial.data.sources import DataUnavailable, dataset_source

    monkeypatch.delenv("LMMS_SPATIAL_MMPERSPECTIVE_PATH", raising=False)
    with pytest.raises(
        DataUnavailable,
        match="no public release.*lmms-spatial convert mmperspective.*LMMS_SPATIAL_MMPERSPECTIVE_PATH",
    ):
        dataset_source("mmperspective")


def test_a_local_folder_is_used_when_set(monkeypatch, tmp_path):
    from lmms_spatial.data.sources import dataset_source

    (tmp_path / "test.parquet").write_bytes(b"")  # a folder must hold data files to be used
    monkeypatch.setenv("LMMS_SPATIAL_MMPERSPECTIVE_PATH", str(tmp_path))
    assert dataset_source("mmperspective").path == str(tmp_path.resolve())
