"""What produced a run's numbers, through the real lmms-eval CLI on the demo data.

- every result carries its conditions (``results["lmms_spatial"]``): the model's short label, documents
  evaluated of the split's, the judge, the map source, the run options, the seed;
- an unreadable judge verdict is a fault of the judge: ODI-Bench leaves it out (NaN when all are), OSR-Bench
  scores it 0 as its official evaluator does; both count it, and the run's last lines say so with an example;
- never a with-map number without a map: a chat model draws its own map, once per image, kept with the
  answers, so a resumed run's answers still show it.
"""

from __future__ import annotations

import json
import math

import pytest

from tools.fake_judge import FakeJudgeServer

pytestmark = pytest.mark.slow

UNREADABLE = "I think the answer looks fine."


@pytest.fixture(scope="module")
def unreadable_judge_run(lmms_eval_into, tmp_path_factory):
    """random_choice on OSR-Bench and ODI-Bench's open-ended tasks, 3 documents each, with a judge whose every
    verdict is unreadable."""
    out = tmp_path_factory.mktemp("unreadable_judge")
    with FakeJudgeServer(lambda request: UNREADABLE) as server:
        env = {"LMMS_SPATIAL_JUDGE": "fake-judge", "LMMS_SPATIAL_JUDGE_BASE_URL": server.base_url,
               "LMMS_SPATIAL_JUDGE_API_KEY": "test", "LMMS_SPATIAL_JUDGE_CACHE": str(out / "judge-cache")}  # fmt: skip
        return lmms_eval_into(out / "run", "--model", "random_choice", "--model_args", "seed=4",
                              "--tasks", "osr_bench,odi_bench_open", "--limit", "3", env=env)  # fmt: skip


def test_an_all_unreadable_judge_gives_odi_nan_not_0_and_counts_every_verdict(unreadable_judge_run):
    run = unreadable_judge_run
    assert run.returncode == 0, run.stderr[-3000:]
    for task in ("odi_bench_open_counting", "odi_bench_open_ocr", "odi_bench_open"):
        assert math.isnan(run.metric(task, "judge_score")), task
        assert run.metric(task, "judge_failures") == 0
    assert run.metric("odi_bench_open_counting", "judge_unparsed") == 2  # the demo's 2 counting questions
    assert run.metric("odi_bench_open", "judge_unparsed") == 3 + 3 + 3 + 2 * 7  # --limit 3: 3 tasks of 3, 7 of 2
    record = run.samples["odi_bench_open_counting"][0]["judge_score"]
    assert "score" not in record and record["reason"] == "judge_unparsed" and record["judge_reply"] == UNREADABLE
    judge = run.results["lmms_spatial"]["tasks"]["odi_bench_open_counting"]["judge"]
    assert judge == {"kind": "llm", "model": "fake-judge", "rubric": "odi_open", "rubric_version": "1.0",
                     "scored": 0, "failures": 0, "unparsed": 2}  # fmt: skip


def test_an_unreadable_osr_verdict_scores_0_as_the_official_evaluator_and_is_counted(unreadable_judge_run):
    run = unreadable_judge_run
    assert run.metric("osr_qa_negative_vanilla", "llm_accuracy") == 0.0  # official llm_evaluator.py: 0
    assert run.metric("osr_qa_negative_vanilla", "judge_unparsed") == 3
    judge = run.results["lmms_spatial"]["tasks"]["osr_qa_negative_vanilla"]["judge"]
    assert (judge["scored"], judge["unparsed"], judge["failures"]) == (3, 3, 0)


def test_the_last_lines_say_how_many_verdicts_could_not_be_read_with_one_example(unreadable_judge_run):
    maps, odi, osr = unreadable_judge_run.stderr.strip().splitlines()[-3:]
    assert maps.startswith("lmms-spatial: osr_qa_cogmap_negative_think, ") and "not scored (NaN)" in maps
    assert odi.startswith(
        "lmms-spatial: 23 of 23 verdicts of the judge fake-judge (rubric odi_open) could not be read (100%): "
        f"left out of judge_score, counted in judge_unparsed; e.g. {UNREADABLE!r}"
    )
    # OSR negative: 3 + 3 questions asked without a map (qa_negative_vanilla, _think); the with-map ones: no map
    assert osr.startswith(
        "lmms-spatial: 6 of 6 verdicts of the judge fake-judge (rubric osr_negative) could not be read (100%): "
        "scored 0 in llm_accuracy, as the official OSR-Bench evaluator scores them"
    )


def test_every_result_says_what_produced_it(unreadable_judge_run, fixture_datasets):
    conditions = unreadable_judge_run.results["lmms_spatial"]
    assert conditions["schema"] == 1 and conditions["lmms_spatial_version"]
    assert conditions["model"] == {"label": "random_choice", "name": "random_choice", "args": "seed=4", "seed": 4,
                                   "sampling_seed": None, "fingerprint": None}  # fmt: skip
    task = conditions["tasks"]["osr_qa_standard_vanilla"]
    assert (task["documents"], task["of"], task["limit"], task["seed"]) == (3, 8, 3, 4)  # 3 of the demo's 8
    assert task["judge"] is None and task["map_source"] is None and task["run_options"] == {}
    assert conditions["tasks"]["osr_qa_cogmap_negative_think"]["map_source"] == "none"  # random_choice: no map
    assert conditions["tasks"]["osr_cogmap_standard"]["of"] == 2  # one map document per image
    # the data each number came from: OSR-Bench's two configs and ODI-Bench, local copies by their absolute path
    assert sorted(conditions["data"]) == ["odi_bench", "osr_bench/negative", "osr_bench/standard"]
    osr = conditions["data"]["osr_bench/standard"]
    assert (osr["source"], osr["local"], osr["revision"]) == (str(fixture_datasets["osr_bench"].resolve()), True, None)
    assert conditions["data"]["osr_bench/negative"]["fingerprint"] != osr["fingerprint"]  # different rows


@pytest.fixture(scope="module")
def own_map_runs(lmms_eval_into, tiny_qwen2_5_vl, tmp_path_factory):
    """lmms-eval's own qwen2_5_vl chat model (not --model staged) on a with-map task, then the same command again."""
    out = tmp_path_factory.mktemp("own_maps")
    args = ("--model", "qwen2_5_vl", "--model_args",
            f"pretrained={tiny_qwen2_5_vl},device=cpu,device_map=cpu,min_pixels=3136,max_pixels=12544",
            "--tasks", "osr_qa_cogmap_standard_vanilla", "--limit", "6", "--batch_size", "2",
            "--gen_kwargs", "max_new_tokens=6")  # fmt: skip
    env = {"CUDA_VISIBLE_DEVICES": ""}
    first = lmms_eval_into(out / "run", *args, env=env)
    again = lmms_eval_into(out / "run", *args, env=env)  # same output path: every answer from the kept ones
    newest = sorted((out / "run").rglob("*_samples_osr_qa_cogmap_standard_vanilla.jsonl"))[-1]  # the second run's
    again.samples["osr_qa_cogmap_standard_vanilla"] = [json.loads(line) for line in newest.read_text().splitlines()]
    return first, again, out / "run"


def test_a_chat_model_draws_its_own_map_once_per_image_and_its_answers_are_scored(own_map_runs):
    first, _again, out = own_map_runs
    assert first.returncode == 0, first.stderr[-3000:]
    samples = first.samples["osr_qa_cogmap_standard_vanilla"]
    keys = [s["accuracy"]["stage_outputs"]["osr_cogmap"]["key"] for s in samples]
    assert keys == ["standard:scene-a"] * 4 + ["standard:scene-b"] * 2  # the demo's first 6 questions, 2 images
    assert all("score" in s["accuracy"] for s in samples)
    assert first.metric("osr_qa_cogmap_standard_vanilla", "answers_without_map") == 0
    assert isinstance(first.metric("osr_qa_cogmap_standard_vanilla", "accuracy"), float)
    assert "staged: {'stage': 2, 'final': 6" in first.stdout  # 2 maps, not 6 (lmms-eval logs to stdout)
    conditions = first.results["lmms_spatial"]
    assert conditions["model"]["label"] == "tiny-qwen2.5-vl"  # the checkpoint's folder, not the model_args
    assert conditions["tasks"]["osr_qa_cogmap_standard_vanilla"]["map_source"] == "own_map"
    assert (out / "cache" / "lmms_spatial_stages.sqlite").is_file()  # kept with the answers
    assert "not scored (NaN)" not in first.stderr


def test_a_resumed_run_takes_the_answers_from_the_cache_and_still_records_their_maps(own_map_runs):
    first, again, _out = own_map_runs
    assert again.returncode == 0, again.stderr[-3000:]
    assert "staged: {" not in again.stdout  # the model was not asked for anything, maps included
    before = [s["accuracy"] for s in first.samples["osr_qa_cogmap_standard_vanilla"]]
    after = [s["accuracy"] for s in again.samples["osr_qa_cogmap_standard_vanilla"]]
    assert [r["stage_outputs"] for r in after] == [r["stage_outputs"] for r in before]
    assert [r["score"] for r in after] == [r["score"] for r in before]
    assert json.dumps(again.results["results"]["osr_qa_cogmap_standard_vanilla"], sort_keys=True) == json.dumps(
        first.results["results"]["osr_qa_cogmap_standard_vanilla"], sort_keys=True
    )


def test_gen_kwargs_and_each_tasks_generation_settings_in_effect_are_conditions(lmms_eval):
    """``--gen_kwargs max_new_tokens=16`` cuts mmsi_cot's 2048-token budget (tasks/mmsi/mmsi_cot.yaml): recorded,
    with the task's own settings (the protocol) beside what the model was sent."""
    run = lmms_eval("--model", "random_choice", "--model_args", "seed=0", "--tasks", "mmsi_cot,mmsi_vanilla",
                    "--limit", "2", "--gen_kwargs", "max_new_tokens=16")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    conditions = run.results["lmms_spatial"]
    protocol = {"do_sample": False, "max_new_tokens": 2048, "temperature": 0.0, "until": []}  # the whole reply
    assert conditions["tasks"]["mmsi_cot"]["generation"] == {
        "protocol": protocol,
        "in_effect": {**protocol, "max_new_tokens": 16},
        "overrides": {"max_new_tokens": 16},
    }
    vanilla = conditions["tasks"]["mmsi_vanilla"]["generation"]  # tasks/mmsi/_default.yaml: 1024
    assert (vanilla["protocol"]["max_new_tokens"], vanilla["in_effect"]["max_new_tokens"]) == (1024, 16)
    # random_choice names no weights; its answers are kept (a fresh --output_path: none came from the store)
    assert conditions["model"]["fingerprint"] is None
    assert conditions["store"] == {"root": str(run.out / "cache"), "answers": 0, "asked": 4, "from": []}
    assert conditions["tasks"]["mmsi_cot"]["answers_from_store"] == 0
