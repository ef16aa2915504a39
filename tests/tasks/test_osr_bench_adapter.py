"""OSR-Bench adapter: the official prompts, one map per image, the map stage, negative-sampling judging."""

from __future__ import annotations

import io

import datasets
import pytest
from PIL import Image

from lmms_spatial.models import stages
from lmms_spatial.tasks.osr_bench import adapter

DOC = {
    "id": "s1:3",
    "scene_id": "s1",
    "skill": "relative_direction",
    "question": "If I am standing by the tv and facing the closest sofa, is the closest lamp to my front, ...?",
    "answer": "Front Left",
    "object_pool": ["tv", "sofa", "lamp"],
    "cogmap": "[]",
}


def test_map_prompt_lists_the_object_pool_in_braces():
    text = adapter.cogmap_prompt(DOC)
    assert "We provide the categories to care about in this scene: {tv, sofa, lamp}. Focus ONLY" in text
    assert text.startswith("[Task] This PANORAMA captures an indoor scene.")
    assert text.endswith('{"category name": [[x_1, y_1], ...], ...}')


def test_question_without_map_is_pre_prompt_question_post_prompt_as_the_official_runner():
    text = adapter.question_prompt(DOC, "vanilla", with_map=False)
    assert text == f"{adapter.PRE_PROMPT} {DOC['question']} {adapter.POST_PROMPTS['vanilla']}"
    assert adapter.POST_PROMPTS["vanilla"].startswith("\n    Please answer the question with a brief response")
    assert "Do not include explanations or additional text in your answer. \n    " in adapter.POST_PROMPTS["vanilla"]


def test_question_after_the_map_has_no_pre_prompt():
    assert adapter.question_prompt(DOC, "think", with_map=True) == f"{DOC['question']} {adapter.POST_PROMPTS['think']}"


def test_map_protocol_messages_put_a_stage_turn_between_map_prompt_and_question(monkeypatch):
    monkeypatch.setattr(adapter, "doc_to_visual", lambda doc: ["<image>"])
    messages = adapter.doc_to_messages(DOC, {"protocol": "qa_cogmap", "mode": "vanilla", "config": "negative"})
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"][1]["text"] == adapter.cogmap_prompt(DOC)
    assert stages.placeholder_of(messages[1]) == {"stage": "osr_cogmap", "key": "negative:s1"}
    assert messages[2]["content"] == [{"type": "text", "text": adapter.question_prompt(DOC, "vanilla", with_map=True)}]


def _rows(scene_ids: list[str], **columns) -> dict[str, list]:
    """Valid question rows for ``scene_ids`` (ids ``<scene>:<n>``, direction questions)."""
    n = len(scene_ids)
    return {
        "id": [f"{scene}:{i}" for i, scene in enumerate(scene_ids)],
        "scene_id": scene_ids,
        "skill": ["relative_direction"] * n,
        "question": ["q"] * n,
        "answer": ["Left"] * n,
        **columns,
    }


def test_map_tasks_keep_the_first_row_of_every_scene():
    ds = datasets.Dataset.from_dict(_rows(["a", "a", "b", "a", "c", "b"], turn_id=[1, 2, 1, 3, 1, 2]))
    kept = adapter.one_per_image(ds)
    assert kept["scene_id"] == ["a", "b", "c"] and kept["turn_id"] == [1, 1, 1]


def test_map_protocol_text_is_the_user_turns_so_questions_of_one_image_sort_together():
    text = adapter.doc_to_text(DOC, {"protocol": "qa_cogmap", "mode": "vanilla"})
    assert text == f"{adapter.cogmap_prompt(DOC)}\n\n{adapter.question_prompt(DOC, 'vanilla', with_map=True)}"


def test_rows_reach_the_task_undecoded_and_the_panorama_is_decoded_per_image():
    buf = io.BytesIO()
    Image.new("RGB", (16, 8), (200, 10, 10)).save(buf, "PNG")
    rows = _rows(["a", "a"], image=[{"bytes": buf.getvalue(), "path": None}] * 2)
    features = datasets.Features({name: datasets.Value("string") for name in rows if name != "image"})
    ds = datasets.Dataset.from_dict(rows, features=datasets.Features({**features, "image": datasets.Image()}))
    docs = adapter.undecoded_images(ds)
    assert isinstance(docs[0]["image"], dict) and adapter.one_per_image(ds)[0]["image"]["bytes"] == buf.getvalue()
    misses = adapter.PANORAMAS.misses
    first, second = (adapter.doc_to_visual(doc)[0] for doc in docs)
    assert adapter.PANORAMAS.misses == misses + 1  # the second question's panorama came from the cache
    assert first.getpixel((3, 3)) == second.getpixel((3, 3)) == (200, 10, 10) and first is not second


def test_unknown_protocol_is_refused():
    with pytest.raises(ValueError, match="protocol"):
        adapter.doc_to_text(DOC, {"protocol": "video"})


def test_direction_answer_is_scored_with_chance_one_in_eight():
    out = adapter.PROCESSORS["qa_standard_vanilla"](DOC, ["front-left"])
    assert out["accuracy"]["score"] == 1.0 and out["relative_direction"] == 1.0 and out["chance_level"] == 1 / 8


def test_counting_has_no_chance_level():
    out = adapter.PROCESSORS["qa_standard_vanilla"]({**DOC, "skill": "object_counting", "answer": "2"}, ["3"])
    assert "chance_level" not in out and out["object_counting"] == pytest.approx(1 - 1 / 3)


def test_a_judge_failure_is_recorded_and_left_out_not_raised(monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "")
    from lmms_spatial.judge import reset_judges

    reset_judges()
    out = adapter.PROCESSORS["qa_negative_vanilla"](DOC, ["Front Left"])
    assert out["accuracy"]["score"] == 1.0  # the rule score stands
    assert out["llm_accuracy"]["failed"] and out["llm_accuracy"]["reason"].startswith("judge_failed:JudgeNotConfigured")
    assert adapter.aggregate_judged([out["llm_accuracy"], {"failed": False, "score": 1.0}]) == 1.0
    assert adapter.aggregate_failures([out["judge_failures"]]) == 1
    reset_judges()


def test_an_answer_given_without_a_map_is_kept_and_not_scored_as_one_given_with_it():
    stages.clear()
    out = adapter.PROCESSORS["qa_cogmap_standard_vanilla"](DOC, ["Front Left"])  # right, but no map was drawn
    record = out["accuracy"]
    assert record["stage_outputs"] == {"osr_cogmap": None} and "score" not in record
    assert record["reason"] == adapter.NO_MAP_REASON and record["rule_reason"] == "exact_match:reply"
    assert out["relative_direction"] != out["relative_direction"] and out["unparsed_rate"] != out["unparsed_rate"]
    assert out["answers_without_map"] == 1.0 and out["chance_level"] == 1 / 8  # chance is the question's
    assert adapter.aggregate_score([record]) != adapter.aggregate_score([record])  # NaN, not 0 and not 1
    assert adapter.aggregate_overall([record]) != adapter.aggregate_overall([record])

    stages.record("osr_cogmap", "standard:s1", '{"tv": [[1, 1]]}')
    out = adapter.PROCESSORS["qa_cogmap_standard_vanilla"](DOC, ["Front Left"])
    assert out["accuracy"]["stage_outputs"]["osr_cogmap"] == {"key": "standard:s1", "output": '{"tv": [[1, 1]]}'}
    assert out["accuracy"]["score"] == 1.0 and out["answers_without_map"] == 0.0
    assert adapter.aggregate_sum([0.0, 1.0, 1.0]) == 2
    stages.clear()


def test_without_a_map_the_llm_evaluator_is_not_asked(monkeypatch):
    def no_judge(*args, **kwargs):
        raise AssertionError("the judge was asked about an answer given without a map")

    monkeypatch.setattr("lmms_spatial.judge.get_judge", no_judge)
    stages.clear()
    out = adapter.PROCESSORS["qa_cogmap_negative_think"](DOC, ["<answer>Front Left</answer>"])
    assert out["llm_accuracy"] == {"failed": False, "reason": adapter.NO_MAP_REASON}
    assert (
        adapter.aggregate_failures([out["judge_failures"]]) == 0
        and adapter.aggregate_unparsed([out["judge_unparsed"]]) == 0
    )
    assert adapter.aggregate_judged([out["llm_accuracy"]]) != adapter.aggregate_judged([out["llm_accuracy"]])  # NaN


def test_an_unreadable_verdict_of_the_osr_evaluator_scores_0_as_officially_and_is_counted():
    # official evaluation/llm_evaluator.py: json.loads fails or "score" is missing -> score 0
    unreadable = {"failed": False, "score": 0.0, "reason": "judge_unparsed"}
    judged = [unreadable, {"failed": False, "score": 1.0, "reason": "judge_score_1"}, {"failed": True, "reason": "x"}]
    assert adapter.aggregate_judged(judged) == 0.5  # (0 + 1) / 2: the failure left out, the unreadable verdict a 0
    assert adapter.aggregate_unparsed(judged) == 1


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("answer", ["banana", "Left"], "document 'a:0', field 'answer': 'banana' is not a count"),
        ("answer", ["", "Left"], "document 'a:0', field 'answer': empty"),
        ("skill", ["object_count", "relative_direction"], "document 'a:0', field 'skill': 'object_count' is not one"),
        ("id", ["x", "x"], "document 'x', field 'id': duplicate id"),
    ],
)
def test_rows_no_rule_can_score_fail_naming_the_document_and_field(column, value, message):
    rows = _rows(["a", "a"])
    rows["skill"], rows["answer"] = ["object_counting", "relative_direction"], ["2", "Left"]
    rows[column] = value
    with pytest.raises(adapter.BadDocumentError, match=message):
        adapter.undecoded_images(datasets.Dataset.from_dict(rows))


def test_a_missing_column_fails_naming_it():
    rows = _rows(["a"])
    del rows["answer"]
    with pytest.raises(adapter.BadDocumentError, match="field 'answer': missing column"):
        adapter.one_per_image(datasets.Dataset.from_dict(rows))


def test_direction_questions_also_report_the_opt_in_lenient_reading():
    out = adapter.PROCESSORS["qa_standard_vanilla"](DOC, ["front_left"])
    assert out["relative_direction"] == 0.0 and out["relative_direction_lenient"] == 1.0
    counting = adapter.PROCESSORS["qa_standard_vanilla"]({**DOC, "skill": "object_counting", "answer": "2"}, ["2"])
    assert "relative_direction_lenient" not in counting


def test_every_osr_task_scores_the_raw_reply():
    import yaml

    default = yaml.safe_load((adapter_dir() / "_default.yaml").read_text().replace("!function", ""))
    assert default["reasoning_tags"] == "none"


def adapter_dir():
    from pathlib import Path

    return Path(adapter.__file__).parent
