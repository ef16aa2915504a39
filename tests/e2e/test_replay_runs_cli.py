"""``--model replay`` never scores answers of two models as one (lmms_spatial.models.replay.check_one_model):
a folder holding runs of different models or settings is refused before any scoring, naming each run and how to
pick one; runs of one model with the same settings are replayed together, each task naming the run it came from.
The same runs pin each sample's ``doc_hash`` (lmms_spatial.plugin.samples.hash_documents)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

MMSI, ODI = "mmsi_vanilla", "odi_bench_close_existence"


@pytest.fixture(scope="module")
def runs(lmms_eval_into, tmp_path_factory):
    """Three runs under one folder: random_choice seed=0 on MMSI (a) and on ODI (b), random_choice seed=1 on
    MMSI (c)."""
    root = tmp_path_factory.mktemp("replay_runs") / "runs"
    root.mkdir()
    made = {
        "a": lmms_eval_into(root / "a", "--model", "random_choice", "--model_args", "seed=0", "--tasks", MMSI),
        "b": lmms_eval_into(root / "b", "--model", "random_choice", "--model_args", "seed=0", "--tasks", ODI),
        "c": lmms_eval_into(root / "c", "--model", "random_choice", "--model_args", "seed=1", "--tasks", MMSI),
    }
    return root, made


def _results_file(run) -> str:
    return str(next(run.out.glob("*_results.json")))


def test_a_folder_of_runs_of_different_settings_is_refused_before_scoring_naming_each_run(runs, lmms_eval):
    root, made = runs
    replay = lmms_eval("--model", "replay", "--model_args", f"samples={root}", "--tasks", f"{MMSI},{ODI}",
                       expect_results=False)  # fmt: skip
    assert replay.returncode == 1
    a, b, c = (_results_file(made[k]) for k in "abc")
    from importlib.metadata import version

    on = ", ".join(f"{name} {version(name)}" for name in ("lmms-eval", "transformers", "torch"))  # each run's software
    assert replay.stderr.strip().splitlines()[-1] == (
        f"lmms-spatial: replay: samples={root} holds 3 runs of different models or settings (model_args), which "
        f"would be scored as one model: random_choice (random_choice seed=0 on {on}): {a}, tasks {MMSI}; "
        f"random_choice (random_choice seed=0 on {on}): {b}, tasks {ODI}; random_choice (random_choice seed=1 on "
        f"{on}): {c}, tasks {MMSI}. Point samples= at one run: its folder, its _results.json or its samples files "
        f"(e.g. samples={c})"
    )
    assert "Traceback" not in replay.stderr


def test_runs_of_one_model_with_the_same_settings_replay_together_each_task_naming_its_run(runs, lmms_eval):
    root, made = runs
    replay = lmms_eval("--model", "replay", "--model_args", f"samples={root / 'a'}:{root / 'b'}",
                       "--tasks", f"{MMSI},{ODI}")  # fmt: skip
    assert replay.returncode == 0
    assert replay.metric(MMSI, "accuracy") == made["a"].metric(MMSI, "accuracy")
    assert replay.metric(ODI, "accuracy") == made["b"].metric(ODI, "accuracy")
    recorded = replay.results["lmms_spatial"]
    assert recorded["model"]["label"] == "random_choice"
    assert "replayed_from" not in recorded["model"]  # no one run holds both tasks
    assert recorded["tasks"][MMSI]["replayed_from"] == _results_file(made["a"])
    assert recorded["tasks"][ODI]["replayed_from"] == _results_file(made["b"])


def test_a_results_file_picks_its_run_out_of_the_folder(runs, lmms_eval):
    root, made = runs
    picked = _results_file(made["c"])
    replay = lmms_eval("--model", "replay", "--model_args", f"samples={picked}", "--tasks", MMSI)
    assert replay.returncode == 0
    assert replay.metric(MMSI, "accuracy") == made["c"].metric(MMSI, "accuracy")
    assert replay.results["lmms_spatial"]["model"]["replayed_from"] == picked
    assert [s["filtered_resps"] for s in replay.samples[MMSI]] == [s["filtered_resps"] for s in made["c"].samples[MMSI]]
    assert [s["doc_hash"] for s in replay.samples[MMSI]] == [s["doc_hash"] for s in made["c"].samples[MMSI]]


def test_each_sample_carries_its_own_documents_hash_the_same_in_every_run(runs):
    _root, made = runs
    first, second = made["a"].samples[MMSI][:2]  # two documents of one run (seed 0)
    again = made["c"].samples[MMSI][0]  # the first document, in another run (seed 1)
    null = "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"  # sha256 of "null": lmms-eval's hash
    assert first["doc_hash"] != null and second["doc_hash"] != null
    assert first["doc_hash"] != second["doc_hash"]
    assert again["doc_hash"] == first["doc_hash"]
