"""OSR-Bench adapter, scoring glue (issue 37): whole QA and map records, chance levels, the map stage, the judge.

Values worked by hand from the official rules (``metrics/osr_bench.py``): exact match after lower-casing and the
"front left" -> "front-left" map; map F1 over the best of four rotations.
"""

from __future__ import annotations

import json
import math

import pytest

from lmms_spatial import run_state
from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.models import stages
from lmms_spatial.tasks.osr_bench import adapter

DIRECTION = {
    "id": "s1:3",
    "scene_id": "s1",
    "skill": "relative_direction",
    "question": "If I am standing by the tv and facing the closest sofa, is the closest lamp to my front, ...?",
    "answer": "Front Left",
    "object_pool": ["tv", "sofa", "lamp"],
    "cogmap": "[]",
}
DISTANCE = {
    **DIRECTION,
    "id": "s1:4",
    "skill": "relative_distance",
    "question": "Measuring from the closest point of each object, which of these objects (chair, table, sofa) "
    "is the closest to the bed in this PANORAMA?",
    "answer": "table",
}


def grid(cells: dict[tuple[int, int], list[str]]) -> str:
    return json.dumps([[cells.get((r, c), []) for c in range(10)] for r in range(10)])


@pytest.fixture
def warnings(logged):
    return logged("WARNING")


@pytest.fixture
def no_stages():
    stages.clear()
    yield
    stages.clear()


def test_a_direction_record_and_its_metrics_hold_exactly_these_values():
    out = adapter.PROCESSORS["qa_standard_vanilla"](DIRECTION, ["front left"])
    record = {
        "score": 1.0,  # "front left" -> "front-left" == "front left" -> "front-left"
        "parsed": "front-left",
        "reason": "exact_match:reply",
        "id": "s1:3",
        "scene_id": "s1",
        "skill": "relative_direction",
        "answer": "Front Left",
        "lenient_score": 1.0,
    }
    assert out == {
        "accuracy": record,
        "overall": record,
        "relative_direction": 1.0,
        "unparsed_rate": 0.0,
        "relative_direction_lenient": 1.0,
        "chance_level": 1 / 8,
    }


def test_think_mode_reads_the_answer_tag_for_the_rule_and_for_the_lenient_reading():
    reply = "<think>it is ahead of me</think><answer>front_left</answer>"
    think = adapter.PROCESSORS["qa_standard_think"](DIRECTION, [reply])
    vanilla = adapter.PROCESSORS["qa_standard_vanilla"](DIRECTION, [reply])
    # think: "front_left" is not the official "front left" (0), but leniently it is front-left (1)
    assert (think["accuracy"]["reason"], think["relative_direction"], think["relative_direction_lenient"]) == (
        "exact_match:answer_tag",
        0.0,
        1.0,
    )
    # vanilla: the whole reply, tags and all, is the answer: wrong both ways
    assert (vanilla["accuracy"]["reason"], vanilla["relative_direction_lenient"]) == ("exact_match:reply", 0.0)


def test_no_result_is_an_empty_reply_unparsed():
    out = adapter.PROCESSORS["qa_standard_vanilla"](DIRECTION, [])
    assert (out["accuracy"]["parsed"], out["accuracy"]["reason"]) == (None, "unparsed:empty:reply")
    assert out["unparsed_rate"] == 1.0


def test_closest_object_chance_is_one_over_the_candidates_in_the_parentheses():
    out = adapter.PROCESSORS["qa_standard_vanilla"](DISTANCE, ["Table"])
    assert out["chance_level"] == pytest.approx(1 / 3)  # chair, table, sofa
    assert out["relative_distance"] == 1.0 and "relative_direction_lenient" not in out


@pytest.mark.parametrize(
    "question",
    ["Which object is the closest to the bed?", "Which of these objects () is the closest to the bed?"],
)
def test_a_closest_object_question_without_candidates_has_no_chance_level(question):
    assert "chance_level" not in adapter.PROCESSORS["qa_standard_vanilla"]({**DISTANCE, "question": question}, ["x"])


def test_one_candidate_gives_chance_one():
    doc = {**DISTANCE, "question": "Which of these objects (chair) is the closest to the bed?"}
    assert adapter.PROCESSORS["qa_standard_vanilla"](doc, ["chair"])["chance_level"] == 1.0


class _Verdict:
    def __init__(self, score):
        self.score = score

    def as_dict(self):
        return {"score": self.score, "reason": "judge_score_1", "judge": "fake"}


class _Judge:
    def __init__(self, fail=None):
        self.items, self.fail = [], fail

    def score(self, item):
        self.items.append(item)
        if self.fail:
            raise self.fail
        return _Verdict(1.0)


def test_the_negative_config_asks_the_judge_with_the_questions_fields_and_records_its_verdict(monkeypatch):
    import lmms_spatial.judge

    judge = _Judge()
    monkeypatch.setattr(lmms_spatial.judge, "get_judge", lambda rubric: judge if rubric == "osr_negative" else None)
    out = adapter.PROCESSORS["qa_negative_vanilla"](DIRECTION, ["front left"])
    assert judge.items == [
        {
            "skill": "relative_direction",
            "question": DIRECTION["question"],
            "answer": "Front Left",
            "response": "front left",
        }
    ]
    verdict = {"failed": False, "score": 1.0, "reason": "judge_score_1", "judge": "fake"}
    assert out["llm_accuracy"] == verdict and out["judge_failures"] == verdict and out["accuracy"]["judge"] == verdict
    assert out["judge_unparsed"] == verdict
    assert "llm_accuracy" not in adapter.PROCESSORS["qa_standard_vanilla"](DIRECTION, ["front left"])


def test_a_failing_judge_is_one_warning_and_a_failed_record_of_at_most_500_characters(monkeypatch, warnings):
    import lmms_spatial.judge

    judge = _Judge(fail=RuntimeError("x" * 600))
    monkeypatch.setattr(lmms_spatial.judge, "get_judge", lambda rubric: judge)
    monkeypatch.setattr(run_state.STATE, "warned", set())  # a process that has warned of nothing yet
    first = adapter.PROCESSORS["qa_negative_vanilla"](DIRECTION, ["front left"])["llm_accuracy"]
    adapter.PROCESSORS["qa_negative_vanilla"](DIRECTION, ["left"])
    assert first["failed"] is True and "score" not in first
    assert first["reason"] == ("judge_failed:RuntimeError: " + "x" * 600)[:500] and len(first["reason"]) == 500
    assert warnings == [
        f"OSR-Bench LLM evaluator failed (RuntimeError: {'x' * 600}); llm_accuracy leaves such items out"
    ]
    assert run_state.STATE.warned == {adapter.JUDGE_WARNING}  # said for the process, under its own name


def test_each_warning_is_said_once_per_process_under_its_own_name(no_stages, warnings, monkeypatch):
    """A process that has said one of the two warnings still says the other (and not the one it said)."""
    import lmms_spatial.judge

    monkeypatch.setattr(lmms_spatial.judge, "get_judge", lambda rubric: _Judge(fail=RuntimeError("down")))
    monkeypatch.setattr(run_state.STATE, "warned", {adapter.NO_MAP_WARNING})
    adapter.PROCESSORS["qa_cogmap_standard_vanilla"](DISTANCE, ["table"])
    assert warnings == []
    adapter.PROCESSORS["qa_negative_vanilla"](DIRECTION, ["left"])
    assert warnings == ["OSR-Bench LLM evaluator failed (RuntimeError: down); llm_accuracy leaves such items out"]
    monkeypatch.setattr(run_state.STATE, "warned", {adapter.JUDGE_WARNING})
    adapter.PROCESSORS["qa_negative_vanilla"](DIRECTION, ["left"])
    adapter.PROCESSORS["qa_cogmap_standard_vanilla"](DISTANCE, ["table"])
    assert warnings[1:] == [f"osr_qa_cogmap: {NO_MAP}; the with-map tasks are left unscored"]


def test_a_map_question_carries_the_map_it_was_given_and_its_f1(no_stages, warnings):
    doc = {**DIRECTION, "cogmap": grid({(1, 1): ["tv"], (5, 5): ["sofa"]})}
    stages.record("osr_cogmap", "standard:s1", '{"tv": [[1, 1]], "sofa": [[5, 5]]}')
    record = adapter.PROCESSORS["qa_cogmap_standard_vanilla"](doc, ["front left"])["accuracy"]
    assert record["map_key"] == "standard:s1" and record["map_f1"] == 1.0  # both objects exactly placed
    assert record["stage_outputs"] == {
        "osr_cogmap": {"key": "standard:s1", "output": '{"tv": [[1, 1]], "sofa": [[5, 5]]}'}
    }
    assert warnings == []  # a map was recorded: nothing to warn about
    negative = adapter.PROCESSORS["qa_cogmap_negative_vanilla"](doc, ["front left"])["accuracy"]
    assert negative["stage_outputs"] == {"osr_cogmap": None}  # the negative pool's map is another stage key


NO_MAP = "no_map: no map of this image was in the conversation (the model draws none: not a chat model)"


def test_an_answer_without_a_map_is_kept_unscored_and_said_once(no_stages, warnings, monkeypatch):
    monkeypatch.setattr(run_state.STATE, "warned", set())  # a process that has warned of nothing yet
    for _ in range(2):
        out = adapter.PROCESSORS["qa_cogmap_standard_vanilla"](DISTANCE, ["table"])
    record = out["accuracy"]
    assert record == {
        "parsed": "table",
        "id": "s1:4",
        "scene_id": "s1",
        "skill": "relative_distance",
        "answer": "table",
        "stage_outputs": {"osr_cogmap": None},
        "rule_reason": "exact_match:reply",
        "reason": NO_MAP,
    }  # no score: the rule's 1 is not a with-map number
    assert math.isnan(out["relative_distance"]) and math.isnan(out["unparsed_rate"])
    assert out["chance_level"] == pytest.approx(1 / 3) and out["answers_without_map"] == 1.0
    assert out["overall"] is record and "llm_accuracy" not in out
    assert warnings == [f"osr_qa_cogmap: {NO_MAP}; the with-map tasks are left unscored"]
    assert run_state.STATE.warned == {adapter.NO_MAP_WARNING}  # said for the process, under its own name


def test_a_direction_answer_without_a_map_on_the_negative_config_is_not_judged(no_stages, monkeypatch):
    import lmms_spatial.judge

    monkeypatch.setattr(lmms_spatial.judge, "get_judge", lambda rubric: pytest.fail("the judge was asked"))
    out = adapter.PROCESSORS["qa_cogmap_negative_vanilla"](DIRECTION, ["front left"])
    unjudged = {"failed": False, "reason": NO_MAP}
    assert out["llm_accuracy"] == unjudged and out["judge_failures"] == unjudged and out["judge_unparsed"] == unjudged
    assert out["accuracy"]["judge"] == unjudged and math.isnan(out["relative_direction_lenient"])
    assert out["chance_level"] == 1 / 8


def test_a_with_map_answer_reports_no_answer_without_a_map(no_stages):
    stages.record("osr_cogmap", "standard:s1", "{}")
    assert adapter.PROCESSORS["qa_cogmap_standard_vanilla"](DIRECTION, ["front left"])["answers_without_map"] == 0.0
    assert "answers_without_map" not in adapter.PROCESSORS["qa_standard_vanilla"](DIRECTION, ["front left"])


def test_processors_pass_their_mode_config_and_map_setting_and_are_named_for_them():
    process = adapter.PROCESSORS["qa_cogmap_negative_think"]
    assert process.__name__ == "process_results_qa_cogmap_negative_think"
    assert adapter.PROCESSORS["qa_standard_vanilla"].__name__ == "process_results_qa_standard_vanilla"
    # what a run records about the task's judge and map: the benchmark's TASK_NEEDS (its BENCHMARK.needs), by
    # scorer name
    needs = adapter.TASK_NEEDS
    assert (needs.judge.get(process.__name__), needs.maps.get(process.__name__)) == ("osr_negative", "osr_cogmap")
    plain = adapter.PROCESSORS["qa_standard_vanilla"]
    assert (needs.judge.get(plain.__name__), needs.maps.get(plain.__name__)) == (None, None)
    # negative sampling is judged with or without a map; a standard with-map question has a map and no judge
    assert sorted(needs.judge) == sorted(f"process_results_{p}_negative_{m}" for p in ("qa", "qa_cogmap")
                                         for m in ("think", "vanilla"))  # fmt: skip
    assert sorted(needs.maps) == sorted(f"process_results_qa_cogmap_{c}_{m}" for c in ("negative", "standard")
                                        for m in ("think", "vanilla"))  # fmt: skip
    assert sorted(adapter.PROCESSORS) == sorted(
        f"{p}_{c}_{m}" for p in ("qa", "qa_cogmap") for c in ("standard", "negative") for m in ("vanilla", "think")
    )
    out = adapter.PROCESSORS["qa_standard_think"](DIRECTION, ["<answer>front left</answer>"])
    assert out["accuracy"]["reason"] == "exact_match:answer_tag" and "llm_accuracy" not in out


MAP_DOC = {"id": "m1", "scene_id": "s9", "cogmap": grid({(1, 1): ["tv"], (5, 5): ["sofa"]})}


def test_a_map_record_and_its_metrics_hold_exactly_these_values():
    out = adapter.process_results_cogmap(MAP_DOC, ['{"tv": [[1, 1]], "lamp": [[8, 8]]}'])
    # rotation 0: tv exact (TP), lamp hallucinated (FP), sofa missed (FN): P = R = 1/2, F1 1/2; the other
    # rotations move tv (1,1) 7 cells or more away: no TP; ties keep the smaller rotation
    record = {
        "precision": 0.5,
        "recall": 0.5,
        "f1": 0.5,
        "avg_distance": 0.0,
        "tp": 1,
        "fp": 1,
        "fn": 1,
        "chair_s": 1.0,
        "chair_i": 0.5,  # lamp of {tv, lamp}
        "chair_instance": 0.5,  # 1 of 2 predicted instances
        "hallucinated_classes": ["lamp"],
        "rotation": 0,
        "format_ok": True,
        "dropped_points": 0,
        "reason": "json_object:rotation_0",
        "id": "m1",
        "scene_id": "s9",
        "score": 0.5,
        "parsed": "map",
    }
    assert out == {
        "cogmap_f1": record,
        "cogmap_precision": 0.5,
        "cogmap_recall": 0.5,
        "avg_distance": 0.0,
        "chair_s": 1.0,
        "chair_i": 0.5,
        "chair_instance": 0.5,
        "format_success_rate": 1.0,
        "unparsed_rate": 0.0,
    }


def test_a_map_that_cannot_be_read_is_unparsed_with_the_lowest_scores():
    out = adapter.process_results_cogmap(MAP_DOC, [])
    assert (out["cogmap_f1"]["parsed"], out["cogmap_f1"]["reason"]) == (None, "unparsed:no_json_object")
    assert (out["format_success_rate"], out["unparsed_rate"], out["avg_distance"]) == (0.0, 1.0, 15.0)


def test_a_ground_truth_map_that_is_not_json_names_the_document_and_field():
    with pytest.raises(BadDocumentError, match=r"document 'm1', field 'cogmap': not a JSON grid"):
        adapter.process_results_cogmap({**MAP_DOC, "cogmap": "[[["}, ['{"tv": [[1, 1]]}'])


def test_the_qa_aggregations():
    records = [
        {"skill": "object_counting", "score": 0.5},
        {"skill": "object_counting", "score": 1.0},
        {"skill": "relative_direction", "score": 0.0},
    ]
    assert adapter.aggregate_score(records) == 0.5  # (0.5 + 1 + 0) / 3 questions
    assert adapter.aggregate_overall(records) == 0.375  # (mean 0.75 counting + 0 direction) / 2 skills
    assert adapter.aggregate_mean([0.0, 0.5]) == 0.25
    judged = [{"failed": False, "score": 1.0}, {"failed": True}, {"failed": False, "score": 0.0}]
    assert adapter.aggregate_judged(judged) == 0.5 and adapter.aggregate_failures(judged) == 1


def test_the_target_is_the_answer_text():
    assert adapter.doc_to_target(DIRECTION) == "Front Left" and adapter.doc_to_target({}) == ""


def test_closest_object_candidates_may_be_several_words():
    doc = {**DISTANCE, "question": "Which of these objects (dining table, sofa) is the closest to the bed?"}
    assert adapter.PROCESSORS["qa_standard_vanilla"](doc, ["sofa"])["chance_level"] == 0.5


def test_processors_pass_the_config_and_the_map_setting_through(no_stages, monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")
    from lmms_spatial.judge import reset_judges

    reset_judges()
    negative = adapter.PROCESSORS["qa_negative_vanilla"](DIRECTION, ["front left"])
    assert negative["llm_accuracy"]["failed"] is False  # the negative config asks the judge
    stages.record("osr_cogmap", "negative:s1", "{}")
    with_map = adapter.PROCESSORS["qa_cogmap_negative_vanilla"](DIRECTION, ["front left"])["accuracy"]
    assert with_map["stage_outputs"] == {"osr_cogmap": {"key": "negative:s1", "output": "{}"}}
    reset_judges()


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("qa_standard_vanilla", ("vanilla", "standard", False)),
        ("qa_standard_think", ("think", "standard", False)),
        ("qa_negative_vanilla", ("vanilla", "negative", False)),
        ("qa_negative_think", ("think", "negative", False)),
        ("qa_cogmap_standard_vanilla", ("vanilla", "standard", True)),
        ("qa_cogmap_standard_think", ("think", "standard", True)),
        ("qa_cogmap_negative_vanilla", ("vanilla", "negative", True)),
        ("qa_cogmap_negative_think", ("think", "negative", True)),
    ],
)
def test_each_task_s_scorer_asks_its_own_mode_config_and_map_setting(monkeypatch, task, expected):
    """The YAML of ``osr_<task>`` names ``utils.process_results_<task>``: a plain function passing the post-prompt
    mode, the data config and whether a map came first, as its name says."""
    seen = []
    monkeypatch.setattr(adapter, "_qa", lambda doc, results, mode, config, with_map: seen.append(
        (doc, results, mode, config, with_map)) or "scored")  # fmt: skip
    scorer = adapter.PROCESSORS[task]
    assert scorer.__name__ == f"process_results_{task}" and scorer is getattr(adapter, scorer.__name__)
    assert scorer(DIRECTION, ["front left"]) == "scored"
    assert seen == [(DIRECTION, ["front left"], *expected)]


def test_map_tasks_keep_the_panorama_undecoded():
    import io

    import datasets
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 2), (1, 2, 3)).save(buffer, format="PNG")
    rows = {"id": ["a:0", "a:1"], "scene_id": ["a", "a"], "skill": ["relative_direction"] * 2}
    rows |= {
        "answer": ["Left", "Right"],
        "question": ["q", "q"],
        "image": [{"bytes": buffer.getvalue(), "path": None}] * 2,
    }
    features = datasets.Features(
        {k: datasets.Value("string") for k in rows if k != "image"} | {"image": datasets.Image()}
    )
    (doc,) = adapter.one_per_image(datasets.Dataset.from_dict(rows, features=features))
    assert doc["id"] == "a:0" and doc["image"] == {"bytes": buffer.getvalue(), "path": None}


def test_aggregations_leave_out_answers_without_a_map_and_count_unreadable_verdicts():
    records = [
        {"skill": "object_counting", "score": 1.0},
        {"skill": "relative_direction", "score": 0.0},
        {"skill": "relative_direction", "reason": NO_MAP},  # no score: left out
    ]
    assert adapter.aggregate_score(records) == 0.5  # (1 + 0) / 2 scored answers, not / 3
    assert adapter.aggregate_overall(records) == 0.5  # (counting 1 + direction 0) / 2 skills
    verdicts = [
        {"failed": False, "score": 1.0, "reason": "judge_score_1"},
        {"failed": False, "score": 0.0, "reason": "judge_unparsed"},  # the official evaluator's 0
        {"failed": False, "reason": NO_MAP},  # not asked
        {"failed": True, "reason": "judge_unparsed"},
    ]
    assert adapter.aggregate_judged(verdicts) == 0.5  # (1 + 0) / 2
    assert adapter.aggregate_unparsed(verdicts) == 1 and adapter.aggregate_failures(verdicts) == 1
    assert adapter.aggregate_sum([1.0, 0.0, 1.0]) == 2
