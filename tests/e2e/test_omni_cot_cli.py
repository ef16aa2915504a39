"""Omni-CoT end to end through the lmms-eval CLI: ``--model omni_cot`` over a scripted chat model
(tests/omni_cot_fakes.py) on the ODI-Bench fixture, then ``--model replay`` of its samples files.

Two lmms-eval runs. Checks the exact prompt of every stage, one base-model call per round for all
documents of both tasks, the artefacts in the samples files, the Table 10 report, and that replay
logs the same artefacts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from lmms_spatial.models.omni_cot_prompts import PROMPT_VERSION
from lmms_spatial.tasks.odi_bench.adapter import build_prompt

pytestmark = pytest.mark.slow

TESTS_DIR = Path(__file__).resolve().parents[1]
TASKS = ["odi_bench_close_egocentric_view_orientation", "odi_bench_close_existence"]
CAPTIONS = (
    "The panorama seen from the camera position, described view by view (front is the centre of the "
    "ERP-formatted image, right is three quarters across it, back is at its left and right edges, left is "
    "one quarter across it):\n"
    "Front view: front caption\nRight view: right caption\nBack view: back caption\n"
    "Left view: left caption\nTop view: top caption\nBottom view: bottom caption"
)


@pytest.fixture(scope="module")
def docs(fixture_datasets) -> dict[str, list[dict]]:
    rows = datasets.load_dataset("parquet", data_files=str(fixture_datasets["odi_bench"] / "test.parquet"))["train"]
    rows = rows.remove_columns("image")
    return {t: [r for r in rows if f"odi_bench_close_{r['task']}" == t] for t in TASKS}


def test_omni_cot_cli_prompts_artifacts_report_and_replay(lmms_eval, docs, tmp_path):
    transcript = tmp_path / "transcript.jsonl"
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")])),
        "OMNI_COT_TRANSCRIPT": str(transcript),
    }
    model_args = "base=omni_cot_fakes.ScriptedChat,view_size=32,crop_size=32,margin=10"
    run = lmms_eval("--model", "omni_cot", "--model_args", model_args, "--tasks", ",".join(TASKS), env=env)

    # the scripted first answers are wrong, the refined ones right: the refinement is what is scored
    for task in TASKS:
        assert run.metric(task, "accuracy") == 1.0
    entries = [json.loads(line) for line in transcript.read_text().splitlines()]
    by_call: dict[int, list[dict]] = {}
    for e in entries:
        by_call.setdefault(e["call"], []).append(e)
    n = sum(len(d) for d in docs.values())
    assert n == 5  # 2 EVO + 3 existence questions
    # three base-model calls for the whole run: captions+grounding, first answers+relevance, refinements
    assert {c: len(v) for c, v in by_call.items()} == {1: 7 * n, 2: n + 2 * n, 3: n}

    evo = docs[TASKS[0]][0]
    task_text = build_prompt(evo, "close")
    assert task_text.startswith("Answer the question based on the provided ERP-formatted image.\nQuestion: ")
    mine = [e for e in entries if e["task"] == TASKS[0] and e["doc_id"] == 0]
    captions, grounding = mine[:6], mine[6]
    assert captions[3]["texts"] == [
        "This image is the left view (90° field of view) of a 360-degree panoramic image, seen from the camera "
        "position. Describe in two or three sentences the objects, people and text visible in this view and "
        "where they are in it."
    ]
    assert all(e["images"] == [[32, 32]] for e in captions)
    assert grounding["images"] == [[256, 128]]
    assert grounding["texts"][0].startswith(
        f"Here is an ERP-formatted 360-degree panoramic image and a question about it.\nQuestion: {evo['question']}\n"
    )
    first, right, top = mine[7], mine[8], mine[9]
    assert first["texts"] == [f"{CAPTIONS}\n\n{task_text}"]
    assert right["texts"] == [
        "This image is a crop of a 360-degree panoramic image, looking right (yaw 90°, pitch 0°, field of view "
        f"46°).\nQuestion: {evo['question']}\nIs this crop relevant to answering the question? Answer ONLY with "
        "yes or no."
    ]
    assert top["texts"][0].startswith("This image is a crop of a 360-degree panoramic image, looking top (yaw -126°")
    refine = mine[10]
    assert refine["images"] == [[256, 128], [32, 32]]
    wrong = "ABCD"[("ABCD".index(evo["answer"]) + 1) % 4]
    assert refine["texts"] == [
        f"{CAPTIONS}\n\n"
        "Crops of the panorama that may help, in the order of the images after the ERP-formatted image:\n"
        "Crop 1: looking right (yaw 90°, pitch 0°, field of view 46°)\n\n"
        f"Your previous answer was: {wrong}\nRethink your answer using the crops and the view descriptions.\n\n"
        f"{task_text}"
    ]

    # every intermediate step is in the samples file
    art = run.samples[TASKS[0]][0]["accuracy"]["omni_cot"]
    assert art["key"] == f"close:{evo['id']}" and art["prompt_version"] == PROMPT_VERSION
    assert art["captions"]["front"] == "front caption"
    assert art["boxes_raw"] == [[0.7, 0.4, 0.8, 0.6], [0.1, 0.0, 0.2, 0.3]] and art["box_format"] == "normalized"
    assert [(c["theta"], c["phi"], c["fov"], c["direction"], c["kept"]) for c in art["crops"]] == [
        (90.0, 0.0, 46.0, "right", True),
        (-126.0, 63.0, 64.0, "top", False),
    ]
    assert (art["first_answer"], art["final_answer"]) == (wrong, evo["answer"])
    assert run.samples[TASKS[1]][0]["accuracy"]["omni_cot"]["box_format"] == "thousand"

    # Table 10: crop filter ratio per task, from the samples files
    report = subprocess.run(
        [sys.executable, "-m", "lmms_spatial.tasks.odi_bench.omni_cot_table", "report", str(run.out)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "| odi_bench_close_existence | 3 | 6 | 3 | 3 | 50.00% | 3 | 3 |" in report.stdout
    assert "| all | 5 | 10 | 5 | 5 | 50.00% | 5 | 5 |" in report.stdout

    replayed = lmms_eval("--model", "replay", "--model_args", f"samples={run.out}", "--tasks", ",".join(TASKS))
    for task in TASKS:
        for before, after in zip(run.samples[task], replayed.samples[task], strict=True):
            assert after["accuracy"]["omni_cot"] == before["accuracy"]["omni_cot"]
            assert after["accuracy"]["score"] == before["accuracy"]["score"] == 1.0
