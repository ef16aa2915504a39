"""ODI-Bench task adapter: decoded prompts, close/open/CoT scoring, judge failures, image path."""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor

import datasets
import pytest
from PIL import Image

from lmms_spatial.judge import JudgeConfig, get_judge, reset_judges
from lmms_spatial.judge.errors import JudgeUnavailableError
from lmms_spatial.tasks.odi_bench import adapter
from lmms_spatial.tasks.odi_bench.demo import build as build_odi_bench

MCQ = {
    "id": "q1",
    "task": "relative_direction",
    "question": "Where is the red chair relative to me?",
    "options": ["Front-left", "Back-right", "Front-right", "Back-left"],
    "answer": "C",
    "answer_text": "front-right",
}
YES_NO = {"id": "q2", "task": "existence", "question": "Is there a dog?", "options": [], "answer": "Yes",
          "answer_text": "Yes"}  # fmt: skip
ERP = "Answer the question based on the provided ERP-formatted image."


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith(("LMMS_SPATIAL_", "OPENAI_")):
            monkeypatch.delenv(name)
    yield
    reset_judges()


# -- prompts ------------------------------------------------------------------------------


def test_close_multiple_choice_prompt_is_the_decoded_figure_12_text():
    assert adapter.doc_to_text(MCQ) == (
        f"{ERP}\nQuestion: Where is the red chair relative to me?\nOptions:\n"
        "A. Front-left\nB. Back-right\nC. Front-right\nD. Back-left\n"
        "Answer ONLY with the option letter (e.g., A, B, C, or D)."
    )


def test_close_yes_no_prompt_asks_for_yes_or_no():
    assert adapter.doc_to_text(YES_NO) == f"{ERP}\nQuestion: Is there a dog?\nAnswer ONLY with Yes or No."


def test_open_prompt_of_an_orientation_task_asks_for_the_orientation_word():
    text = adapter.doc_to_text(MCQ, {"setting": "open"})
    question = "Question: Where is the red chair relative to me?"
    assert text == f"{ERP}\n{question}\nYour answer should contain the [orientation word]."


def test_open_prompt_of_other_tasks_is_prefix_and_question_only():
    assert adapter.doc_to_text(YES_NO, {"setting": "open"}) == f"{ERP}\nQuestion: Is there a dog?"


@pytest.mark.parametrize(
    ("variant", "prefix"),
    [("panorama", "This is a 360-degree panoramic image."),
     ("panorama_erp", "This is a 360-degree panoramic image, the image is ERP-formatted."),
     ("Look around.", "Look around.")],
)  # fmt: skip
def test_table_13_prompt_variants_replace_the_prefix(variant, prefix):
    assert adapter.doc_to_text(YES_NO, {"prompt": variant}).startswith(prefix + "\nQuestion:")


def test_prompt_variant_from_the_environment_wins_over_the_yaml(monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_ODI_PROMPT", "panorama")
    assert adapter.doc_to_text(YES_NO, {"prompt": "erp"}).startswith("This is a 360-degree panoramic image.\n")


# The paper's zero-shot CoT prompt (Fig. 11) did not survive text extraction: App. D.2 says it follows
# Kojima et al. ("Let's think step by step") with DeepSeek-R1's <think>/<answer> response format. These
# are our wording of that (not yet listed in docs/faithfulness.md), pinned so that a change is a visible one.
def test_cot_prompt_asks_for_reasoning_then_the_letter_in_answer_tags():
    assert adapter.doc_to_text(MCQ, {"setting": "cot"}) == (
        f"{ERP}\nQuestion: Where is the red chair relative to me?\nOptions:\n"
        "A. Front-left\nB. Back-right\nC. Front-right\nD. Back-left\n"
        "Let's think step by step. First write your reasoning within <think> </think> tags, then give the final "
        "answer, ONLY the option letter, within <answer> </answer> tags."
    )


def test_cot_prompt_of_a_yes_no_question_asks_for_yes_or_no_in_answer_tags():
    assert adapter.doc_to_text(YES_NO, {"setting": "cot"}) == (
        f"{ERP}\nQuestion: Is there a dog?\n"
        "Let's think step by step. First write your reasoning within <think> </think> tags, then give the final "
        "answer, ONLY Yes or No, within <answer> </answer> tags."
    )


def test_messages_put_the_image_before_the_text(tmp_path):
    doc = _fixture_docs(tmp_path)[0]
    (message,) = adapter.doc_to_messages(doc)
    assert [c["type"] for c in message["content"]] == ["image", "text"]


# -- close-ended scoring ------------------------------------------------------------------


def test_close_record_says_what_was_parsed_and_why():
    metrics = adapter.process_results(MCQ, ["The answer is C."])
    record = metrics["accuracy"]
    assert (record["parsed"], record["reason"], record["score"]) == ("C", "declared", 1.0)
    assert record["task"] == "relative_direction" and record["id"] == "q1"
    assert metrics["unparsed_rate"] == 0.0 and metrics["chance_level"] == 0.25


def test_records_carry_the_run_options_in_effect(monkeypatch):
    assert adapter.process_results(MCQ, ["C"])["accuracy"]["run_options"] == {}
    monkeypatch.setenv("LMMS_SPATIAL_ODI_MAX_PIXELS", "524288")
    monkeypatch.setenv("LMMS_SPATIAL_ODI_PROMPT", "panorama")
    for record in (adapter.process_results(MCQ, ["C"])["accuracy"], adapter.process_results_cot(MCQ, ["C"])["accuracy"],
                   adapter.process_results_open(MCQ, ["front-right"])["judge_score"]):  # fmt: skip
        assert record["run_options"] == {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288", "LMMS_SPATIAL_ODI_PROMPT": "panorama"}


def test_close_answer_given_as_option_text_is_matched_to_its_letter():
    assert adapter.process_results(MCQ, ["Front-right"])["accuracy"]["parsed"] == "C"


def test_unparseable_close_answer_scores_zero_and_counts_as_unparsed():
    metrics = adapter.process_results(MCQ, ["I am not sure."])
    assert metrics["accuracy"]["score"] == 0.0 and metrics["unparsed_rate"] == 1.0


def test_yes_no_answer_is_scored_with_chance_one_half():
    metrics = adapter.process_results(YES_NO, ["yes, there is a dog."])
    assert metrics["accuracy"]["parsed"] == "Yes" and metrics["accuracy"]["score"] == 1.0
    assert metrics["chance_level"] == 0.5


def test_cot_answer_is_taken_from_the_final_answer_not_the_reasoning():
    reply = "<think>A is front-left, B is back-right, so not A or B.</think>\n<answer>C</answer>"
    assert adapter.process_results_cot(MCQ, [reply])["accuracy"]["parsed"] == "C"
    assert (
        adapter.process_results_cot(YES_NO, ["No dog at first glance... but yes.\nFinal answer: Yes"])["accuracy"][
            "parsed"
        ]
        == "Yes"
    )


def test_empty_or_none_model_output_never_raises():
    assert adapter.process_results(MCQ, [None])["unparsed_rate"] == 1.0
    assert adapter.process_results(MCQ, [])["accuracy"]["reason"] == "unparsed:empty"


# -- open-ended scoring -------------------------------------------------------------------


def test_open_answer_is_scored_by_the_shared_judge_with_the_odi_rubric(monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")
    metrics = adapter.process_results_open(MCQ, ["It is in front of me."])  # 45 degrees off front-right
    record = metrics["judge_score"]
    assert record["score"] == 0.5 and record["reason"] == "fallback_direction_within_45"
    assert record["judge"] == "none (rule-based fallback)" and record["fallback"] is True
    assert (record["rubric"], record["rubric_version"]) == ("odi_open", "1.0")
    assert set(metrics) == {
        "judge_score",
        "judge_failures",
        "judge_unparsed",
        "judge_cache_hits",
        "judge_fallback_share",
    }


def test_unconfigured_judge_gives_a_failed_record_not_a_crash():
    record = adapter.process_results_open(YES_NO, ["Yes"])["judge_score"]
    assert record["failed"] is True and "score" not in record
    assert record["reason"].startswith("judge_failed:JudgeNotConfiguredError")


class _DownJudge:
    def score(self, item):
        raise JudgeUnavailableError("judge unavailable: connection refused", base_url="http://x", model="m")


def test_unreachable_judge_is_recorded_with_its_reason():
    record = adapter.score_open(YES_NO, "Yes", judge=_DownJudge())
    assert record["failed"] and "connection refused" in record["reason"]
    assert adapter.aggregate_failures([record]) == 1


def test_open_aggregations_count_failures_unparsed_and_cache_hits():
    records = [
        {"score": 1.0, "cached": True, "fallback": False, "reason": "judge_score_1"},
        {"score": 0.5, "cached": False, "fallback": False, "reason": "judge_score_0.5"},
        {"failed": False, "cached": True, "fallback": False, "reason": "judge_unparsed"},  # no score: left out
        {"failed": True, "reason": "judge_failed:X"},
    ]
    assert adapter.aggregate_judge_score(records) == 0.75  # (1 + 0.5) / 2: neither the failure nor the unreadable
    assert adapter.aggregate_failures(records) == 1
    assert adapter.aggregate_unparsed(records) == 1
    assert adapter.aggregate_cache_hits(records) == 2
    assert adapter.aggregate_fallback_share(records) == 0.0


class _Unreadable:
    """A judge whose verdict no rule could read (what the judge layer returns after its re-asks)."""

    def score(self, item):
        from lmms_spatial.judge import Verdict

        return Verdict(0.0, "judge_unparsed", "I would rather not say.", "fake-judge", "odi_open", "1.0", False)


def test_an_unreadable_verdict_is_a_fault_of_the_judge_not_a_0_of_the_model():
    record = adapter.score_open(YES_NO, "Yes", judge=_Unreadable())
    assert "score" not in record and record["failed"] is False
    assert (record["reason"], record["judge_reply"]) == ("judge_unparsed", "I would rather not say.")
    records = [record, dict(record)]
    assert adapter.aggregate_unparsed(records) == 2 and adapter.aggregate_failures(records) == 0
    assert adapter.aggregate_judge_score(records) != adapter.aggregate_judge_score(records)  # NaN, never 0


def test_the_open_ended_log_line_counts_unreadable_verdicts_apart_from_scored_ones():
    from loguru import logger

    lines: list[str] = []
    sink = logger.add(lines.append, format="{message}", level="INFO")
    try:
        adapter.aggregate_judge_score([adapter.score_open(YES_NO, "Yes", judge=_Unreadable()) for _ in range(3)])
    finally:
        logger.remove(sink)
    (line,) = [line for line in lines if line.startswith("ODI-Bench open-ended")]
    assert line.strip().endswith("0 scored, 0 judge failures, 3 verdicts unreadable")


def test_open_scoring_from_four_threads_uses_one_judge_and_gives_per_item_results(monkeypatch, tmp_path):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")
    docs = [dict(MCQ, id=f"q{i}") for i in range(40)]
    answers = ["front-right" if i % 2 else "back-left" for i in range(40)]
    with ThreadPoolExecutor(4) as pool:
        records = list(
            pool.map(
                lambda da: adapter.process_results_open(*da)["judge_score"],
                zip(docs, [[a] for a in answers], strict=True),
            )
        )
    assert [r["score"] for r in records] == [1.0 if i % 2 else 0.0 for i in range(40)]
    assert get_judge("odi_open", JudgeConfig.from_env()).stats.items == 40


def test_group_sum_adds_subtask_counts():
    assert adapter.group_sum([1, 2, 0], [5, 5, 5], False) == 3.0


# -- documents and images -----------------------------------------------------------------


def _fixture_docs(tmp_path, task="object_attribute"):
    path = build_odi_bench(tmp_path / "data")
    dataset = datasets.load_dataset("parquet", data_files=str(path))["train"]
    return adapter.process_docs_for(task)(dataset)


def test_process_docs_keeps_the_tasks_rows_with_the_image_undecoded(tmp_path):
    docs = _fixture_docs(tmp_path, "existence")
    assert len(docs) == 3 and set(docs["task"]) == {"existence"}
    assert docs.features["image"].decode is False
    assert isinstance(docs[0]["image"]["bytes"], bytes)


def test_doc_to_visual_decodes_the_erp_once_at_full_resolution_by_default(tmp_path):
    (image,) = adapter.doc_to_visual(_fixture_docs(tmp_path)[0])
    assert image.size == (256, 128) and image.mode == "RGB"


def test_resize_option_sends_the_exact_height_by_width(tmp_path):
    (image,) = adapter.doc_to_visual(_fixture_docs(tmp_path)[0], {"resize": "64x128"})
    assert image.size == (128, 64)


def test_max_pixels_from_the_environment_caps_the_image(tmp_path, monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_ODI_MAX_PIXELS", "2048")
    (image,) = adapter.doc_to_visual(_fixture_docs(tmp_path)[0], {"max_pixels": None})
    assert image.size == (64, 32)


def test_bad_image_bytes_name_the_document_and_field():
    doc = dict(YES_NO, image={"bytes": b"not an image", "path": None})
    with pytest.raises(ValueError, match="document 'q2', field 'image'"):
        adapter.doc_to_visual(doc)


def test_fixture_erp_puts_the_object_at_its_yaw(tmp_path):
    # odi_0000: "What color is the square in front of me?" -> the centre column holds that colour
    doc = _fixture_docs(tmp_path)[0]
    (image,) = adapter.doc_to_visual(doc)
    colour = doc["options"]["ABCD".index(doc["answer"])]
    pixel = image.getpixel((128, int((90 + 8) / 180 * 128)))
    expected = {"red": (220, 40, 40), "blue": (40, 80, 220), "green": (40, 170, 70), "yellow": (230, 200, 30),
                "purple": (140, 60, 180)}[colour]  # fmt: skip
    assert max(abs(a - b) for a, b in zip(pixel, expected, strict=True)) < 40


def test_fixture_bytes_are_identical_on_every_build(tmp_path):
    a = build_odi_bench(tmp_path / "a").read_bytes()
    b = build_odi_bench(tmp_path / "b").read_bytes()
    assert a == b


def test_png_images_are_decoded_too():
    buffer = io.BytesIO()
    Image.new("RGBA", (40, 20), (1, 2, 3, 255)).save(buffer, format="PNG")
    (image,) = adapter.doc_to_visual(
        dict(YES_NO, image={"bytes": buffer.getvalue(), "path": None}), {"resize": "10x20"}
    )
    assert image.size == (20, 10) and image.mode == "RGB"


def _rows_dataset(*rows):
    keys = ("id", "task", "question", "options", "answer", "answer_text")
    table = {k: [r[k] for r in rows] for k in keys}
    table["image"] = [b"not decoded here"] * len(rows)
    return datasets.Dataset.from_dict(table)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"options": "A. left B. right"}, r"document 'q1', field 'options': expected a list of option texts, got str"),
        ({"answer": "E"}, r"document 'q1', field 'answer': 'E' is not one of \['A', 'B', 'C', 'D'\]"),
        ({"task": "object attributes"}, r"document 'q1', field 'task': unknown ODI-Bench task"),
        ({"answer_text": " "}, r"document 'q1', field 'answer_text': empty"),
    ],
)
def test_odi_rows_that_would_score_silently_wrong_fail_naming_the_document(row, message):
    with pytest.raises(adapter.BadDocumentError, match=message):
        adapter.process_docs_for("relative_direction")(_rows_dataset({**MCQ, **row}))


def test_an_integer_answer_fails_too():
    table = {k: [v] for k, v in MCQ.items()} | {"answer": [3], "image": [b""]}
    with pytest.raises(adapter.BadDocumentError, match=r"field 'answer': 3 is not one of"):
        adapter.process_docs_for("relative_direction")(datasets.Dataset.from_dict(table))


def test_a_yes_no_answer_needs_a_question_without_options():
    with pytest.raises(adapter.BadDocumentError, match=r"document 'q2', field 'answer': 'Maybe'"):
        adapter.process_docs_for("existence")(_rows_dataset(MCQ, {**YES_NO, "answer": "Maybe"}))
