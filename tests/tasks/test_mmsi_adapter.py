"""MMSI-Bench task adapter: exact prompts, score records, circular expansion."""

import io

import datasets
import pytest
from PIL import Image

from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.tasks.mmsi.adapter import (
    doc_to_messages,
    doc_to_text,
    process_docs,
    process_docs_circular,
    process_results,
    process_results_circular,
    process_results_cot,
)

QUESTION = "Which object is closer to the camera?\nOptions: A: chair, B: table, C: lamp, D: sofa"


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


DOC = {"id": 5, "images": [_png(), _png()], "question": QUESTION, "answer": "B", "question_type": "MSR"}


def test_vanilla_prompt_is_the_official_text():
    # InternRobotics/MMSI-Bench (commit 5de2f3d), vlmeval/dataset/mmsi_bench.py, build_prompt:
    #   post_prompt = ("Answer with the option's letter from the given choices directly. "
    #                  "Enclose the option's letter within ``.")
    #   prompt = f'{question}\n{post_prompt}'
    expected = (
        QUESTION + "\nAnswer with the option's letter from the given choices directly. "
        "Enclose the option's letter within ``."
    )
    assert doc_to_text(DOC) == expected


def test_cot_prompt_is_ours_and_asks_for_the_letter_in_backticks_on_the_last_line():
    # MMSI-Bench has no official CoT prompt (docs/faithfulness.md): ours, pinned so a change is a visible one
    assert doc_to_text(DOC, {"variant": "cot"}) == (
        QUESTION + "\nThink step by step about the spatial relations across the images. "
        "Then, on the last line, give the final answer as the option's letter enclosed within ``."
    )


def test_messages_put_every_image_before_the_text():
    (message,) = doc_to_messages(DOC)
    assert [c["type"] for c in message["content"]] == ["image", "image", "text"]
    assert message["content"][-1]["text"] == doc_to_text(DOC)


def test_record_says_what_was_parsed_and_why():
    metrics = process_results(DOC, ["The answer is ``B``."])
    assert metrics["accuracy"]["parsed"] == "B" and metrics["accuracy"]["reason"] == "official:double_backticks"
    assert metrics["accuracy"]["score"] == 1.0
    assert metrics["MSR"] == 1.0 and metrics["unparsed_rate"] == 0.0 and metrics["chance_level"] == 0.25


def test_unparsed_answer_scores_zero_and_counts_as_unparsed():
    metrics = process_results(DOC, ["the table"])
    assert metrics["accuracy"]["score"] == 0.0 and metrics["unparsed_rate"] == 1.0


def test_cot_reads_the_final_line_not_letters_in_the_reasoning():
    reply = "Option `A` is far away, and `C` is behind it.\nSo the closest object is the table.\n``B``"
    assert process_results_cot(DOC, [reply])["accuracy"]["parsed"] == "B"


def test_circular_expansion_gives_four_relettered_rows_per_question():
    ds = datasets.Dataset.from_dict(
        {
            "id": [5, 6],
            "images": [[_png()], [_png()]],
            "question": [QUESTION, "A question whose options were lost"],
            "answer": ["B", "A"],
            "question_type": ["MSR", "MSR"],
        }
    )
    rows = list(process_docs_circular(ds))
    assert [r["circular_rotation"] for r in rows] == [0, 1, 2, 3, -1]
    assert [r["answer"] for r in rows[:4]] == ["B", "A", "D", "C"]  # "table" under ABCD/BCDA/CDAB/DABC
    assert rows[1]["question"].endswith("Options: A: table, B: lamp, C: sofa, D: chair")
    assert rows[4]["circular_question_id"] == "6"
    assert set(process_results_circular(rows[4], ["A"])) == {"unrotatable_questions"}


def _dataset(**overrides) -> datasets.Dataset:
    rows = {"id": [1, 2], "images": [[_png()], [_png()]], "question": [QUESTION, QUESTION], "answer": ["A", "D"],
            "question_type": ["MSR", "MSR"], **overrides}  # fmt: skip
    return datasets.Dataset.from_dict(rows)


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ([None, "D"], "document 1, field 'answer': None is not one of the option letters"),
        (["E", "D"], "document 1, field 'answer': 'E' is not one of the option letters"),
        (["e", "D"], "document 1, field 'answer': 'e' is not one of the option letters"),
        (["AB", "D"], "document 1, field 'answer': 'AB' is not one of the option letters"),
        ([2, 3], "document 1, field 'answer': 2 is not one of the option letters"),
    ],
)
def test_an_answer_that_is_not_an_option_letter_fails_naming_the_document(answers, message):
    with pytest.raises(BadDocumentError, match=message):
        process_docs(_dataset(answer=answers))


def test_a_lower_case_gold_letter_is_read_as_its_option_and_said_once(caplog):
    from loguru import logger

    handler = logger.add(caplog.handler, level="WARNING", format="{message}")
    try:
        docs = process_docs(_dataset(answer=[" b", "D"]))
    finally:
        logger.remove(handler)
    assert docs["answer"] == ["B", "D"]
    assert process_results(docs[0], ["``B``"])["accuracy"]["score"] == 1.0
    assert [r.getMessage() for r in caplog.records] == [
        "MMSI-Bench: 1 gold answer(s) written as a lower-case letter, read as the upper-case option letter: ids 1"
    ]


def test_scoring_reads_a_lower_case_gold_letter_as_its_option_even_without_process_docs():
    doc = {**DOC, "answer": "c"}
    assert process_results(doc, ["``C``"])["accuracy"]["score"] == 1.0
    assert process_results(doc, ["``A``"])["accuracy"]["score"] == 0.0


def test_duplicate_ids_fail_instead_of_merging_two_questions():
    with pytest.raises(BadDocumentError, match="document 7, field 'id': duplicate id"):
        process_docs_circular(_dataset(id=[7, 7]))


def test_a_missing_answer_column_fails_naming_the_field_not_a_bare_key_error():
    rows = _dataset().remove_columns("answer")
    with pytest.raises(BadDocumentError, match="field 'answer': missing column"):
        process_docs(rows)


def test_a_correct_d_counts_whatever_the_style_of_the_options_as_the_official_code():
    doc = {**DOC, "question": "Where is the lamp?\nOptions: A: left, B: right, C: front, D) back", "answer": "D"}
    metrics = process_results(doc, ["``D``"])
    assert metrics["accuracy"]["score"] == 1.0 and metrics["chance_level"] == 0.25


def test_the_mmsi_tasks_score_the_raw_reply_as_the_official_evaluation():
    from pathlib import Path

    import lmms_spatial.tasks.mmsi as package

    assert "\nreasoning_tags: none\n" in (Path(package.__file__).parent / "_default.yaml").read_text()
