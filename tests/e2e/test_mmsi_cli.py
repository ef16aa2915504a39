"""MMSI-Bench end to end through the lmms-eval CLI, on the fixture data (no network, no GPU)."""

from __future__ import annotations

import json
import random

import datasets
import pytest

from lmms_spatial.metrics.mmsi import normalise_category, rotate

# the module's tests share one seeded random run: one xdist worker runs them all
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mmsi_cli")]


@pytest.fixture(scope="module")
def mmsi_docs(fixture_datasets):
    return list(datasets.load_dataset("parquet", data_files=str(fixture_datasets["mmsi"] / "test.parquet"))["train"])


def _samples_file(path, task, responses):
    f = path / f"20260101_000000_samples_{task}.jsonl"
    f.write_text("".join(json.dumps({"doc_id": i, "resps": [[r]]}) + "\n" for i, r in enumerate(responses)))
    return f


@pytest.fixture(scope="module")
def random_run(lmms_eval_into, tmp_path_factory):
    """``--model random_choice --model_args seed=7 --tasks mmsi`` (the group: vanilla, circular, CoT), run once."""
    out = tmp_path_factory.mktemp("mmsi_random") / "run"
    return lmms_eval_into(out, "--model", "random_choice", "--model_args", "seed=7", "--tasks", "mmsi")


def test_random_choice_reproduces_its_seeded_guesses_on_every_mmsi_task(random_run, mmsi_docs):
    run = random_run
    assert set(run.results["results"]) >= {"mmsi_vanilla", "mmsi_circular", "mmsi_cot"}
    guesses = [random.Random(f"7:mmsi_vanilla:{i}").choice("ABCD") for i in range(len(mmsi_docs))]
    expected = sum(g == d["answer"] for g, d in zip(guesses, mmsi_docs, strict=True)) / len(mmsi_docs)
    assert run.metric("mmsi_vanilla", "accuracy") == pytest.approx(expected)
    assert run.metric("mmsi_vanilla", "unparsed_rate") == 0.0
    assert run.metric("mmsi_vanilla", "chance_level") == 0.25
    # circular: 4 rows per question, each question complete
    assert len(run.samples["mmsi_circular"]) == 4 * len(mmsi_docs)
    assert run.metric("mmsi_circular", "incomplete_questions") == 0
    # every sample says what was parsed and why
    record = run.samples["mmsi_vanilla"][0]["accuracy"]
    assert record["parsed"] in "ABCD" and record["reason"].startswith("official:")


def test_replay_rescores_hand_written_responses_exactly(lmms_eval, mmsi_docs, tmp_path):
    # doc i: correct when i % 3 == 0, a wrong letter when i % 3 == 1, unparseable when i % 3 == 2
    vanilla = []
    for i, doc in enumerate(mmsi_docs):
        wrong = "ABCD"[("ABCD".index(doc["answer"]) + 1) % 4]
        vanilla.append([f"``{doc['answer']}``", f"``{wrong}``", "I cannot tell."][i % 3])
    # circular: the first half right in all four orders, the second half wrong in rotation 2
    circular = []
    for q, doc in enumerate(mmsi_docs):
        for r in range(4):
            _, answer = rotate(doc["question"], doc["answer"], r)
            wrong = "ABCD"[("ABCD".index(answer) + 1) % 4]
            circular.append(answer if (q < len(mmsi_docs) // 2 or r != 2) else wrong)
    samples = tmp_path / "samples"
    samples.mkdir()
    _samples_file(samples, "mmsi_vanilla", vanilla)
    _samples_file(samples, "mmsi_circular", circular)

    run = lmms_eval(
        "--model",
        "replay",
        "--model_args",
        f"samples={samples},prompt_check=warn",
        "--tasks",
        "mmsi_vanilla,mmsi_circular",
    )

    n = len(mmsi_docs)
    assert run.metric("mmsi_vanilla", "accuracy") == pytest.approx(len(range(0, n, 3)) / n)
    assert run.metric("mmsi_vanilla", "unparsed_rate") == pytest.approx(len(range(2, n, 3)) / n)
    # category of docs 0 and 11 (12 docs cycle over 11 categories): doc 0 right, doc 11 unparsed
    cam_cam = normalise_category(mmsi_docs[0]["question_type"])
    assert normalise_category(mmsi_docs[11]["question_type"]) == cam_cam
    assert run.metric("mmsi_vanilla", cam_cam) == 0.5
    unparsed = run.samples["mmsi_vanilla"][2]["accuracy"]
    assert unparsed["parsed"] is None and unparsed["reason"] == "unparsed:official:no_letter"
    assert run.metric("mmsi_circular", "circular_accuracy") == pytest.approx((n // 2) / n)
    assert run.metric("mmsi_circular", "vanilla_accuracy") == 1.0


def test_replay_of_a_random_run_gives_identical_metrics(lmms_eval, random_run):
    tasks = "mmsi_vanilla,mmsi_cot"
    first = random_run
    replayed = lmms_eval("--model", "replay", "--model_args", f"samples={first.out}", "--tasks", tasks)
    for task in ("mmsi_vanilla", "mmsi_cot"):  # every metric and stderr; the alias shows the group it ran in
        metrics = {k: v for k, v in first.results["results"][task].items() if k != "alias"}
        assert {k: v for k, v in replayed.results["results"][task].items() if k != "alias"} == metrics


def test_replay_fails_loudly_naming_missing_responses(lmms_eval, tmp_path):
    samples = tmp_path / "partial"
    samples.mkdir()
    _samples_file(samples, "mmsi_vanilla", ["A", "B"])  # 2 of 12 docs
    run = lmms_eval(
        "--model",
        "replay",
        "--model_args",
        f"samples={samples},prompt_check=warn",
        "--tasks",
        "mmsi_vanilla",
        expect_results=False,
    )
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("lmms-spatial: replay: no logged response for 10 requests")
    assert "mmsi_vanilla: 10 docs, e.g. doc_id [2, 3, 4" in last
    assert "Traceback" not in run.stderr


def test_dummy_model_answering_a_scores_the_share_of_a_answers(lmms_eval, mmsi_docs):
    run = lmms_eval("--model", "dummy", "--model_args", "response=A", "--tasks", "mmsi_vanilla")
    expected = sum(d["answer"] == "A" for d in mmsi_docs) / len(mmsi_docs)
    assert run.metric("mmsi_vanilla", "accuracy") == pytest.approx(expected)
