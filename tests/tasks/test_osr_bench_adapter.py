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


# The official prompts, quoted from UUUserna/OSR-Bench-code (commit 0be3fda):
# - the map prompt (App. C.1) is the turn-0 question of the official data, e.g.
#   example/ReplicaPano-frl_apartment_2_000-Scene_Info-00001/..._qa.json, here with the pool {tv, sofa, lamp};
# - evaluation/model_run/open_model_run.py, run_vqa_test: pre_prompt, and post_prompt_vanilla /
#   post_prompt_think as triple-quoted blocks (a leading newline, every line indented by 4 spaces, the
#   closing quotes indented too: the prompt ends in 4 spaces; two lines end in a space);
#   query = f"{question} {selected_prompt}", and without the map turn full_query = f"{pre_prompt} {query}".
OFFICIAL_MAP_PROMPT = (
    "[Task] This PANORAMA captures an indoor scene. Your objective is to identify specific objects within the "
    "panorama, understand the spatial arrangement of the scene, and estimate the center point of each object, "
    "assuming the entire scene is represented by a 10x10 grid. [Rule] 1. We provide the categories to care about in "
    "this scene: {tv, sofa, lamp}. Focus ONLY on these categories. 2. Estimate the center location of each instance "
    "within the provided categories, assuming the entire scene is represented by a 10x10 grid. 3. If a category "
    "contains multiple instances, include all of them. 4. Each object\u2019s estimated location should accurately "
    "reflect its real position in the scene, preserving the relative spatial relationships among all objects. 5. "
    "Consider object distance from camera when positioning them. Closer objects should be placed near the center of "
    "the grid, while distant objects should be placed toward the edges. 6. If an object is partially visible or "
    "occluded, estimate its full position based on the visible parts. [Output] Present the estimated center locations "
    "for each object as a list within a dictionary. STRICTLY follow this JSON format And use INTEGERS with 10 to "
    'represent the coordinates: {"category name": [[x_1, y_1], ...], ...}'
)
OFFICIAL_PRE_PROMPT = (
    "According to the PANORAMA and the predicted objects' center locations, answer the following question:"
)
OFFICIAL_POST_VANILLA = (
    "\n"
    "    Please answer the question with a brief response following these guidelines:\n"
    "    - For counting questions: Respond with only an integer (including 0 if none are present).\n"
    "    - For closest object questions: Respond with just the name of the closest object, or the exact error "
    "message if applicable.\n"
    "    - For directional questions: Respond with only the direction (front, back, left, right, front-left, "
    "front-right, back-left, or back-right), capitalized correctly, or the exact error message if applicable.\n"
    "    Do not include explanations or additional text in your answer. \n"
    "    "
)
OFFICIAL_POST_THINK = (
    "\n"
    "    Please think step by step and enclose your complete reasoning process in <think> </think> tags. \n"
    "    Within your thinking process:\n"
    "    - For counting questions: Identify all instances of the queried object(s) one by one.\n"
    "    - For closest object questions: Identify the positioning object and all candidate objects, then compare "
    "their relative distances.\n"
    "    - For directional questions: Locate the referenced objects and determine spatial relationships carefully.\n"
    "    After your thinking, provide ONLY your final answer within <answer> </answer> tags using:\n"
    "    - For counting questions: Just an integer (including 0 if none are present).\n"
    "    - For closest object questions: Only the name of the closest object, or the exact error message if "
    "applicable.\n"
    "    - For directional questions: Only the direction (Front, Back, Left, Right, Front-Left, Front-Right, "
    "Back-Left, or Back-Right) with correct capitalization, or the exact error message if applicable.\n"
    "    "
)


def test_map_prompt_is_the_official_one_with_the_object_pool_in_braces():
    assert adapter.cogmap_prompt(DOC) == OFFICIAL_MAP_PROMPT


@pytest.mark.parametrize(("mode", "post"), [("vanilla", OFFICIAL_POST_VANILLA), ("think", OFFICIAL_POST_THINK)])
def test_question_without_map_is_pre_prompt_question_post_prompt_as_the_official_runner(mode, post):
    text = adapter.question_prompt(DOC, mode, with_map=False)
    assert text == f"{OFFICIAL_PRE_PROMPT} {DOC['question']} {post}"


@pytest.mark.parametrize(("mode", "post"), [("vanilla", OFFICIAL_POST_VANILLA), ("think", OFFICIAL_POST_THINK)])
def test_question_after_the_map_has_no_pre_prompt(mode, post):
    assert adapter.question_prompt(DOC, mode, with_map=True) == f"{DOC['question']} {post}"


def test_map_protocol_messages_put_a_stage_turn_between_map_prompt_and_question(monkeypatch):
    monkeypatch.setattr(adapter, "doc_to_visual", lambda doc: ["<image>"])
    messages = adapter.doc_to_messages(DOC, {"protocol": "qa_cogmap", "mode": "vanilla", "config": "negative"})
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"] == [
        {"type": "image", "url": "<image>"},
        {"type": "text", "text": OFFICIAL_MAP_PROMPT},
    ]
    assert stages.placeholder_of(messages[1]) == {"stage": "osr_cogmap", "key": "negative:s1"}
    assert messages[2]["content"] == [{"type": "text", "text": f"{DOC['question']} {OFFICIAL_POST_VANILLA}"}]


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
    assert text == f"{OFFICIAL_MAP_PROMPT}\n\n{DOC['question']} {OFFICIAL_POST_VANILLA}"


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
