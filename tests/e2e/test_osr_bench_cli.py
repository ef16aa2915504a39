"""OSR-Bench end to end through the lmms-eval CLI on the fixture panoramas (no network, no GPU)."""

from __future__ import annotations

import json
import math
import random
import sqlite3
from pathlib import Path

import datasets
import pytest

from lmms_spatial.metrics.osr_bench import grid_positions
from tools.fake_judge import FakeJudgeServer, osr_reply

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def osr_docs(fixture_datasets):
    def load(config):
        files = str(fixture_datasets["osr_bench"] / config / "test.parquet")
        return datasets.load_dataset("parquet", data_files=files)["train"].remove_columns("image").to_list()

    return {config: load(config) for config in ("standard", "negative")}


def _write_samples(folder: Path, task: str, responses: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"doc_id": i, "resps": [[r]]}) + "\n" for i, r in enumerate(responses))
    (folder / f"20260101_000000_samples_{task}.jsonl").write_text(lines)


def _perfect_map(doc) -> str:
    positions = grid_positions(doc["cogmap"])
    return json.dumps({name: [[col, row] for row, col in cells] for name, cells in positions.items()})


def test_replayed_answers_score_maps_questions_and_negative_sampling_exactly(lmms_eval, osr_docs, tmp_path):
    standard, negative = osr_docs["standard"], osr_docs["negative"]
    samples = tmp_path / "samples"
    # maps: one document per scene, in order of first appearance: scene-a exact, scene-b not JSON
    _write_samples(samples, "osr_cogmap_standard", [f"```json\n{_perfect_map(standard[0])}\n```", "no idea"])
    # QA: scene-a all right; scene-b: count 2 for 1 (half credit), "three" (digits only: unparsed), wrong names
    wrong_b = {"object_counting": ["2", "three"], "relative_distance": ["rug"], "relative_direction": ["front-right"]}
    answers = []
    for doc in standard:
        answers.append(doc["answer"] if doc["scene_id"] == "scene-a" else wrong_b[doc["skill"]].pop(0))
    _write_samples(samples, "osr_qa_standard_vanilla", answers)
    # negative, think mode: every answer right, inside the answer tag
    _write_samples(
        samples, "osr_qa_negative_think", [f"<think>look</think><answer>{d['answer']}</answer>" for d in negative]
    )

    tasks = "osr_cogmap_standard,osr_qa_standard_vanilla,osr_qa_negative_think"
    rules = {"LMMS_SPATIAL_JUDGE": "none"}  # negative sampling scored by the App. C.3 evaluator's documented rules
    run = lmms_eval("--model", "replay", "--model_args", f"samples={samples},prompt_check=warn", "--tasks", tasks,
                    env=rules)  # fmt: skip

    assert run.metric("osr_cogmap_standard", "cogmap_f1") == 0.5
    assert run.metric("osr_cogmap_standard", "format_success_rate") == 0.5
    assert run.metric("osr_cogmap_standard", "avg_distance") == (0.0 + 15.0) / 2
    assert run.metric("osr_cogmap_standard", "chair_i") == 0.0
    assert run.samples["osr_cogmap_standard"][1]["cogmap_f1"]["reason"] == "unparsed:no_json_object"

    assert run.metric("osr_qa_standard_vanilla", "accuracy") == pytest.approx(4.5 / 8)
    assert run.metric("osr_qa_standard_vanilla", "overall") == pytest.approx((2.5 / 4 + 0.5 + 0.5) / 3)  # per skill
    assert run.metric("osr_qa_standard_vanilla", "object_counting") == pytest.approx(2.5 / 4)
    assert run.metric("osr_qa_standard_vanilla", "relative_distance") == 0.5
    assert run.metric("osr_qa_standard_vanilla", "relative_direction") == 0.5
    assert run.metric("osr_qa_standard_vanilla", "unparsed_rate") == pytest.approx(1 / 8)
    n_candidates = 4
    assert run.metric("osr_qa_standard_vanilla", "chance_level") == pytest.approx((1 / 8 + 1 / n_candidates) / 2)

    assert run.metric("osr_qa_negative_think", "accuracy") == 1.0
    assert run.metric("osr_qa_negative_think", "llm_accuracy") == 1.0  # LMMS_SPATIAL_JUDGE=none: the rules
    assert run.metric("osr_qa_negative_think", "judge_failures") == 0
    record = run.samples["osr_qa_negative_think"][-1]["accuracy"]
    assert record["reason"] == "exact_match:answer_tag" and record["judge"]["judge"] == "none (rule-based fallback)"


def test_negative_sampling_is_judged_by_the_llm_evaluator_next_to_the_rules(lmms_eval, osr_docs, tmp_path):
    negative = osr_docs["negative"]
    answers = [d["answer"] for d in negative]
    answers[0] = f"{negative[0]['answer']} chairs"  # rules: first digits are right; the judge wants it exact
    not_found = next(i for i, d in enumerate(negative) if d["answer"].endswith("not found in the picture."))
    answers[not_found] = "Not found."  # neither the rules nor this judge accept the paraphrase
    _write_samples(tmp_path / "samples", "osr_qa_negative_vanilla", answers)
    with FakeJudgeServer(osr_reply) as server:  # score 1 iff the answer equals the ground truth
        run = lmms_eval(
            "--model", "replay", "--model_args", f"samples={tmp_path / 'samples'},prompt_check=warn",
            "--tasks", "osr_qa_negative_vanilla",
            env={
                "LMMS_SPATIAL_JUDGE": "fake-judge",
                "LMMS_SPATIAL_JUDGE_BASE_URL": server.base_url,
                "LMMS_SPATIAL_JUDGE_API_KEY": "test",
                "LMMS_SPATIAL_JUDGE_CACHE": str(tmp_path / "judge-cache"),
            },
        )  # fmt: skip
        assert server.request_count == len(negative)
    n = len(negative)
    assert run.metric("osr_qa_negative_vanilla", "accuracy") == pytest.approx((n - 1) / n)
    assert run.metric("osr_qa_negative_vanilla", "llm_accuracy") == pytest.approx((n - 2) / n)
    assert run.metric("osr_qa_negative_vanilla", "judge_failures") == 0
    judged = run.samples["osr_qa_negative_vanilla"][0]["accuracy"]["judge"]
    assert (judged["judge"], judged["rubric"], judged["score"]) == ("fake-judge", "osr_negative", 0.0)


# What random_choice may answer per skill (lmms_spatial/data/answer_space.py), in its order: the 8
# directions of the official prompt, the candidates in the question's parentheses, or a count 0-9.
RANDOM_DIRECTIONS = ["Front", "Front Left", "Left", "Back Left", "Back", "Back Right", "Right", "Front Right"]
# the official evaluation_re spelling map: only exactly "front left" (etc.) becomes "front-left"
OFFICIAL_SPELLING = {f"{a} {b}": f"{a}-{b}" for a in ("front", "back") for b in ("left", "right")}


def _random_space(doc) -> list[str]:
    if doc["skill"] == "relative_direction":
        return RANDOM_DIRECTIONS
    if doc["skill"] == "relative_distance":
        inside = doc["question"].split("(", 1)[1].split(")", 1)[0]
        return [c.strip() for c in inside.split(",")]
    return [str(i) for i in range(10)]


def _official_score(skill: str, truth: str, reply: str) -> float:
    """The paper's QA rules for a bare reply: counting partial credit, exact names, mapped directions."""
    pred, gt = reply.strip().lower(), truth.strip().lower()
    if skill == "object_counting":
        p, t = int(pred), int(gt)
        return 1.0 if p == t else max(0.0, 1 - abs(p - t) / max(p, t))
    if skill == "relative_direction":
        pred, gt = OFFICIAL_SPELLING.get(pred, pred), OFFICIAL_SPELLING.get(gt, gt)
    return float(pred == gt)


def test_every_osr_task_scores_exactly_the_seeded_random_guesses_and_no_with_map_number_without_a_map(
    lmms_eval, osr_docs
):
    run = lmms_eval("--model", "random_choice", "--model_args", "seed=1", "--tasks", "osr_bench")
    assert run.returncode == 0, run.stderr[-3000:]
    results, conditions = run.results["results"], run.results["lmms_spatial"]["tasks"]
    for config in ("standard", "negative"):
        assert results[f"osr_cogmap_{config}"]["format_success_rate,none"] == 0.0  # a guess is not a map
        for mode in ("vanilla", "think"):
            task = f"osr_qa_{config}_{mode}"
            scores = []
            for i, doc in enumerate(osr_docs[config]):
                # random_choice's documented rule: random.Random(f"{seed}:{task}:{doc_id}").choice(space)
                guess = random.Random(f"1:{task}:{i}").choice(_random_space(doc))
                assert run.samples[task][i]["filtered_resps"] == guess, (task, i)
                # think mode reads the whole reply when it has no <answer> tag: the same score
                scores.append(_official_score(doc["skill"], doc["answer"], guess))
            assert results[task]["accuracy,none"] == pytest.approx(sum(scores) / len(scores)), task
            assert results[task]["unparsed_rate,none"] == 0.0, task  # every guess is a count or a name
            # random_choice is not a chat model: no map was drawn, so nothing is scored "with the map"
            with_map = f"osr_qa_cogmap_{config}_{mode}"
            n = len(run.samples[with_map])
            assert math.isnan(results[with_map]["accuracy,none"]) and math.isnan(results[with_map]["overall,none"])
            assert results[with_map]["answers_without_map,none"] == n == (8 if config == "standard" else 12)
            assert results[with_map]["not_scored,none"] == "no map"
            assert conditions[with_map]["map_source"] == "none" and conditions[task]["map_source"] is None
    record = run.samples["osr_qa_cogmap_standard_vanilla"][0]["accuracy"]
    assert record["stage_outputs"] == {"osr_cogmap": None} and "score" not in record  # the answer is kept, unscored
    assert record["reason"].startswith("no_map:")
    last = run.stderr.strip().splitlines()[-1]
    with_map = "osr_qa_cogmap_negative_think, osr_qa_cogmap_negative_vanilla, osr_qa_cogmap_standard_think, "
    assert last.startswith(f"lmms-spatial: {with_map}osr_qa_cogmap_standard_vanilla: not scored (NaN)")
    assert last.endswith("--tasks osr_qa_cogmap_negative_think,osr_qa_cogmap_negative_vanilla,"
                         "osr_qa_cogmap_standard_think,osr_qa_cogmap_standard_vanilla")  # fmt: skip


def test_staged_qwen_makes_one_map_per_image_and_reuses_it_for_every_question(lmms_eval, tiny_qwen2_5_vl, tmp_path):
    checkpoint = tiny_qwen2_5_vl
    cache = tmp_path / "stages"
    model_args = (
        f"base=qwen2_5_vl,pretrained={checkpoint},device=cpu,device_map=cpu,min_pixels=3136,max_pixels=12544,"
        f"stage_cache={cache}"
    )
    run = lmms_eval(
        "--model", "staged", "--model_args", model_args, "--tasks", "osr_qa_cogmap_standard_vanilla",
        "--limit", "4", "--batch_size", "2", "--gen_kwargs", "max_new_tokens=6",
        env={"CUDA_VISIBLE_DEVICES": ""},
    )  # fmt: skip
    samples = run.samples["osr_qa_cogmap_standard_vanilla"]
    assert len(samples) == 4  # the first 4 questions are all about scene-a
    maps = {json.dumps(s["accuracy"]["stage_outputs"]["osr_cogmap"]) for s in samples}
    assert len(maps) == 1 and json.loads(maps.pop())["key"] == "standard:scene-a"
    with sqlite3.connect(cache / "stages.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM stages").fetchone()[0] == 1  # one map generated, not four

    replayed = lmms_eval(
        "--model", "replay", "--model_args", f"samples={run.out}", "--tasks", "osr_qa_cogmap_standard_vanilla",
        "--limit", "4",
    )  # fmt: skip
    for before, after in zip(samples, replayed.samples["osr_qa_cogmap_standard_vanilla"], strict=True):
        assert after["accuracy"]["stage_outputs"] == before["accuracy"]["stage_outputs"]
        assert after["accuracy"]["score"] == before["accuracy"]["score"]
