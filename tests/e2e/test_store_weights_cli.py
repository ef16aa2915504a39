"""The answer store knows what answered: a checkpoint rebuilt at one path never gets the old weights' answers.

Through the real CLI, with lmms-eval's unmodified ``qwen2_5_vl`` class and the tiny random-weight Qwen2.5-VL
(tests/tiny_models.py) built at *one* path, three runs into *one* ``--output_path`` (so one answer store,
``<output_path>/cache``), with the same command:

1. weights of seed 0: every answer from the model;
2. the folder rebuilt with weights of seed 1 (same architecture: same file names, sizes and safetensors
   header, other weight bytes): no answer from the store, every one asked of the new weights;
3. the folder rebuilt with seed 0 again (new files, new modification times, the first run's bytes): every
   answer from the store, the first run's, and the run names the run that gave them.
"""

from __future__ import annotations

import shutil

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("store_weights")]  # the three runs are made once

LIMIT = 2  # MMSI fixture documents: 2 requests per run
MODEL_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=12544"  # as tests/e2e/test_tiny_qwen.py


@pytest.fixture(scope="module")
def three_runs(lmms_eval_into, tmp_path_factory):
    from tiny_models import build_tiny_qwen2_5_vl

    root = tmp_path_factory.mktemp("rebuilt_checkpoint")
    checkpoint, out = root / "checkpoints" / "latest", root / "out"
    runs = []
    for seed in (0, 1, 0):
        shutil.rmtree(checkpoint, ignore_errors=True)
        build_tiny_qwen2_5_vl(checkpoint, seed=seed)
        run = lmms_eval_into(
            out,
            "--model", "qwen2_5_vl",
            "--model_args", f"pretrained={checkpoint},{MODEL_ARGS}",
            "--tasks", "mmsi_vanilla",
            "--limit", str(LIMIT),
            "--gen_kwargs", "max_new_tokens=8",
            env={"CUDA_VISIBLE_DEVICES": ""},
        )  # fmt: skip
        runs.append((run, run.results, run.samples["mmsi_vanilla"]))  # the files this run wrote
    return out, runs


def test_a_checkpoint_rebuilt_with_other_weights_gets_none_of_the_old_answers(three_runs):
    out, [(_, first, _), (run, second, _), _] = three_runs
    assert run.returncode == 0, run.stderr[-3000:]
    fingerprint = [r["lmms_spatial"]["model"]["fingerprint"] for r in (first, second)]
    assert fingerprint[0].startswith("local:") and fingerprint[1].startswith("local:")
    assert fingerprint[0] != fingerprint[1]
    assert first["lmms_spatial"]["tasks"]["mmsi_vanilla"]["answers_from_store"] == 0
    assert second["lmms_spatial"]["tasks"]["mmsi_vanilla"]["answers_from_store"] == 0
    assert second["lmms_spatial"]["store"] == {"root": str(out / "cache"), "answers": 0, "asked": LIMIT, "from": []}
    assert "came from the answer store" not in run.stderr


def test_the_same_weights_rebuilt_again_get_the_first_runs_answers_and_the_run_says_whose(three_runs):
    out, [(_, first, first_samples), _, (run, third, third_samples)] = three_runs
    assert run.returncode == 0, run.stderr[-3000:]
    assert third["lmms_spatial"]["model"]["fingerprint"] == first["lmms_spatial"]["model"]["fingerprint"]
    assert third["lmms_spatial"]["tasks"]["mmsi_vanilla"]["answers_from_store"] == LIMIT
    assert [s["filtered_resps"] for s in third_samples] == [s["filtered_resps"] for s in first_samples]
    store = third["lmms_spatial"]["store"]
    assert (store["answers"], store["asked"], len(store["from"])) == (LIMIT, LIMIT, 1)
    source = store["from"][0]["run"]
    assert source.startswith("the run of ") and f" into {out} (run id " in source  # the first run, not the second
    line = next(x for x in run.stderr.splitlines() if "came from the answer store" in x)
    assert line == (f"lmms-spatial: {LIMIT} of {LIMIT} answers came from the answer store in {out / 'cache'}: "
                    f"{LIMIT} from {source}; 0 asked of the model")  # fmt: skip
