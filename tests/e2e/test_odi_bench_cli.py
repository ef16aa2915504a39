"""ODI-Bench end to end through the lmms-eval CLI on the fixture ERP images (no network, no GPU).

Two lmms-eval runs: replayed hand-written answers in both settings with the loopback judge,
and the seeded random model with an unreachable judge.
"""

from __future__ import annotations

import json
import math
import random
import socket

import datasets
import pytest

from lmms_spatial.data.answer_space import answer_space
from lmms_spatial.metrics import odi_bench as odi
from tools.fake_judge import FakeJudgeServer, last_user_content

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def docs_by_task(fixture_datasets) -> dict[str, list[dict]]:
    """{task: its fixture docs in doc_id order} (the order process_docs keeps)."""
    rows = datasets.load_dataset("parquet", data_files=str(fixture_datasets["odi_bench"] / "test.parquet"))["train"]
    rows = rows.remove_columns("image")
    return {t: [r for r in rows if r["task"] == t] for t in odi.TASKS}


def _write(folder, task, responses):
    path = folder / f"20260101_000000_samples_{task}.jsonl"
    path.write_text("".join(json.dumps({"doc_id": i, "resps": [[r]]}) + "\n" for i, r in enumerate(responses)))


def _wrong(doc):
    if not doc["options"]:
        return "No" if doc["answer"] == "Yes" else "Yes"
    return "ABCD"[("ABCD".index(doc["answer"]) + 1) % len(doc["options"])]


def _judge(request) -> str:
    """Loopback judge: 1.0 when the prediction equals the ground truth, 0.5 for "partially",
    an unparseable reply for "garble", else 0.0."""
    first_user = {"messages": request["messages"][:1]}  # re-asks append messages after the table prompt
    row = last_user_content(first_user).splitlines()[-1]
    _question, truth, prediction, _ = (cell.strip() for cell in row.split(" | "))
    if prediction == "garble":
        return "I would rather not say."
    if prediction == "partially":
        return "0.5"
    return "1.0" if prediction.lower() == truth.lower() else "0.0"


def test_replay_in_both_settings_gives_the_table_2_and_3_layout(lmms_eval, docs_by_task, tmp_path):
    samples = tmp_path / "samples"
    samples.mkdir()
    for task, docs in docs_by_task.items():
        close = [d["answer"] if i == 0 else _wrong(d) for i, d in enumerate(docs)]
        opened = [d["answer_text"] if i == 0 else "no idea" for i, d in enumerate(docs)]
        if task == "object_attribute":
            close[2], opened[1] = "I cannot tell.", "partially"  # unparsed close; half credit open
        if task == "counting":
            opened[1] = "garble"  # judge reply unparseable -> judge_unparsed, left out of judge_score
        if task == "egocentric_view_orientation":  # anchoring both ways
            close = [_wrong(docs[0]), docs[1]["answer"]]
            opened = [docs[0]["answer_text"], "no idea"]
        _write(samples, f"odi_bench_close_{task}", close)
        _write(samples, f"odi_bench_open_{task}", opened)

    with FakeJudgeServer(_judge) as server:
        judge_env = {
            "LMMS_SPATIAL_JUDGE": "fake-judge",
            "LMMS_SPATIAL_JUDGE_BASE_URL": server.base_url,
            "LMMS_SPATIAL_JUDGE_API_KEY": "test",
            "LMMS_SPATIAL_JUDGE_CACHE": str(tmp_path / "judge-cache"),
        }
        run = lmms_eval(
            "--model",
            "replay",
            "--model_args",
            f"samples={samples},prompt_check=warn",
            "--tasks",
            "odi_bench",
            env=judge_env,
        )

    sizes = {t: len(d) for t, d in docs_by_task.items()}
    assert sizes["object_attribute"] == 3 and sizes["ocr"] == 2 and sum(sizes.values()) == 23
    # close-ended: one right per task -> 1/3 for the 3-question tasks, 1/2 for the others
    for task in odi.TASKS:
        assert run.metric(f"odi_bench_close_{task}", "accuracy") == pytest.approx(1 / sizes[task])
    # General and Spatial are means over questions, as the paper's: 13 general questions with one
    # right in each of the 5 tasks (5/13, not the task mean 0.4), 10 spatial questions with 5 right
    assert sum(sizes[t] for t in odi.GENERAL_TASKS) == 13
    assert run.metric("odi_bench_close_general", "accuracy") == pytest.approx(5 / 13)
    assert run.metric("odi_bench_close_spatial", "accuracy") == pytest.approx(5 / 10)
    assert run.metric("odi_bench_close", "accuracy") == pytest.approx(10 / 23)  # over questions, not 0.45
    assert run.metric("odi_bench_close_object_attribute", "unparsed_rate") == pytest.approx(1 / 3)
    assert run.metric("odi_bench_close", "unparsed_rate") == pytest.approx(1 / 23)
    assert run.metric("odi_bench_close", "chance_level") == pytest.approx((3 * 0.5 + 20 * 0.25) / 23)
    n_exist = sizes["existence"]  # yes/no: chance 1/2; every other task has 4 options
    assert run.metric("odi_bench_close_general", "chance_level") == pytest.approx(
        (n_exist * 0.5 + (13 - n_exist) * 0.25) / 13
    )

    # open-ended: judge 1.0 on each task's first answer; OA also 0.5; counting: the judge's unreadable verdict on
    # the second answer is a fault of the judge, left out: 1.0 over the one readable verdict, not (1 + 0) / 2
    assert run.metric("odi_bench_open_object_attribute", "judge_score") == pytest.approx(0.5)
    assert run.metric("odi_bench_open_human_attribute", "judge_score") == pytest.approx(1 / 3)
    assert run.metric("odi_bench_open_counting", "judge_score") == 1.0
    assert run.metric("odi_bench_open_counting", "judge_unparsed") == 1
    general = sum(run.metric(f"odi_bench_open_{t}", "judge_score") * sizes[t] for t in odi.GENERAL_TASKS) / 13
    assert run.metric("odi_bench_open_general", "judge_score") == pytest.approx(general)  # over questions
    assert general == pytest.approx((0.5 * 3 + 1 / 3 * 3 + 1 + 1.0 * 2 + 0.5 * 2) / 13)  # by hand, 6.5 / 13
    assert run.metric("odi_bench_open_spatial", "judge_score") == pytest.approx(0.5)
    assert run.metric("odi_bench_open", "judge_score") == pytest.approx(11.5 / 23)
    assert run.metric("odi_bench_open", "judge_unparsed") == 1
    assert run.metric("odi_bench_open", "judge_failures") == 0
    assert run.metric("odi_bench_open", "judge_fallback_share") == 0.0
    record = run.samples["odi_bench_open_counting"][1]["judge_score"]
    assert (record["judge"], record["rubric"], record["reason"]) == ("fake-judge", "odi_open", "judge_unparsed")
    assert "score" not in record and record["judge_reply"] == "I would rather not say."
    assert "could not be read" not in run.stderr  # 1 of 23 verdicts (4%) is not "more than a few percent"

    # option anchoring from the samples files of the two settings, without re-running the model
    anchoring = odi.anchoring_from_runs(run.out, run.out)
    assert anchoring["n"] == 22 and anchoring["open_failed"] == 1  # the unreadable verdict is left out, counted
    assert anchoring["open_right_close_wrong"] == pytest.approx(1 / 22)  # EVO doc 0
    assert anchoring["close_right_open_wrong"] == pytest.approx(1 / 22)  # EVO doc 1
    assert anchoring["per_task"]["egocentric_view_orientation"]["open_right_close_wrong"] == 0.5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_random_choice_with_an_unreachable_judge_scores_close_and_records_judge_failures(lmms_eval, docs_by_task):
    judge_env = {
        "LMMS_SPATIAL_JUDGE": "fake-judge",
        "LMMS_SPATIAL_JUDGE_BASE_URL": f"http://127.0.0.1:{_free_port()}/v1",
        "LMMS_SPATIAL_JUDGE_MAX_RETRIES": "0",
        "LMMS_SPATIAL_JUDGE_CACHE": "off",
    }
    tasks = "odi_bench_close,odi_bench_cot_existence,odi_bench_open_counting"
    run = lmms_eval("--model", "random_choice", "--model_args", "seed=5", "--tasks", tasks, env=judge_env)

    right = 0
    for task, docs in docs_by_task.items():
        name = f"odi_bench_close_{task}"
        guesses = [random.Random(f"5:{name}:{i}").choice(answer_space(d)) for i, d in enumerate(docs)]
        hits = sum(g == d["answer"] for g, d in zip(guesses, docs, strict=True))
        right += hits
        assert run.metric(name, "accuracy") == pytest.approx(hits / len(docs))
    assert run.metric("odi_bench_close", "accuracy") == pytest.approx(right / 23)
    assert run.metric("odi_bench_close", "unparsed_rate") == 0.0
    assert "odi_bench_cot_existence" in run.results["results"]
    # the judge cannot be reached: nothing scored, every item counted as a failure, no crash
    assert run.metric("odi_bench_open_counting", "judge_failures") == 2
    assert math.isnan(run.metric("odi_bench_open_counting", "judge_score"))
    record = run.samples["odi_bench_open_counting"][0]["judge_score"]
    assert record["failed"] and record["reason"].startswith("judge_failed:JudgeUnavailableError")
