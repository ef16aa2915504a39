"""Which runs ``lmms-spatial dori-report RUN`` reads under a folder (``tasks/dori/patterns.py``, ``load_records``):
the DORI runs alone, as one model's; a folder of runs also holds other benchmarks' runs, of other models."""

from __future__ import annotations

import json

import pytest

from lmms_spatial.models.replay import MixedRunsError
from lmms_spatial.tasks.dori.patterns import load_records

RECORD = {"task": "view_parallelism", "granularity": "coarse", "answer": "A", "parsed": "A", "score": 1.0}


def _run(folder, stamp, tasks, model="random_choice", model_args="seed=0"):
    """A run as lmms-eval writes it: ``<stamp>_results.json`` and one samples file per task."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {"model": model, "model_args": model_args, "gen_kwargs": "", "random_seed": 0}
    (folder / f"{stamp}_results.json").write_text(json.dumps({"config": config}))
    for task, record in tasks.items():
        sample = {"doc_id": 0, "resps": [["A"]], "accuracy": record}
        (folder / f"{stamp}_samples_{task}.jsonl").write_text(json.dumps(sample) + "\n")
    return folder / f"{stamp}_results.json"


def test_a_folder_holding_another_benchmarks_run_of_another_model_gives_its_dori_records(tmp_path):
    _run(tmp_path / "dori", "20260101_000000", {"dori_view_parallelism_coarse": RECORD})
    _run(tmp_path / "mmsi", "20260102_000000", {"mmsi_vanilla": {"score": 0.0}}, model="slow_guess")
    assert load_records(tmp_path) == [RECORD]


def test_two_dori_runs_of_different_settings_under_one_folder_are_refused_saying_to_give_each_its_own(tmp_path):
    first = _run(tmp_path / "a", "20260101_000000", {"dori_view_parallelism_coarse": RECORD})
    second = _run(tmp_path / "b", "20260102_000000", {"dori_view_parallelism_coarse": RECORD}, model_args="seed=1")
    with pytest.raises(MixedRunsError) as refused:
        load_records(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path} holds 2 runs of different models or settings (model_args), which would be scored as one model: "
        f"random_choice (random_choice seed=0): {first}, tasks dori_view_parallelism_coarse; random_choice "
        f"(random_choice seed=1): {second}, tasks dori_view_parallelism_coarse. Give each run as an argument of its "
        f"own (e.g. {second}): one per option seed"
    )
    assert [r["score"] for r in load_records(first)] == [1.0]  # that run alone, named by its results file


def test_a_path_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nowhere: no such file or folder$"):
        load_records(tmp_path / "nowhere")
