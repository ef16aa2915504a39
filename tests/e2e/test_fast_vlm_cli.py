"""``--model fast_vlm`` through the lmms-eval CLI gives lmms-eval's ``qwen2_5_vl`` answers, sample by sample.

The tiny random Qwen2.5-VL (tests/tiny_models.py) on CPU, MMSI-Bench's fixture, the same model
arguments for both runs. At ``batch_size 1`` every document is its own batch in both classes, so
the greedy answers must be identical; at ``batch_size 2`` each class batches differently (lmms-eval
sorts by prompt text, fast_vlm by token count), which with random weights may or may not change an
answer, so that run is checked for completeness and for the timing line only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# one worker: its runs share a pre-warmed process of their own (CUDA_VISIBLE_DEVICES picks it) and the stock run
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("fast_vlm_cli")]

LIMIT = 4
MODEL_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=12544,attn_implementation=sdpa"


@pytest.fixture(scope="module")
def checkpoint(tiny_qwen2_5_vl) -> Path:
    return tiny_qwen2_5_vl  # built once per test run (tests/conftest.py)


def _args(model: str, checkpoint: Path, batch_size: int, extra: str = "") -> list[str]:
    return [
        "--model", model,
        "--model_args", f"pretrained={checkpoint},{MODEL_ARGS}{extra}",
        "--tasks", "mmsi_vanilla",
        "--limit", str(LIMIT),
        "--batch_size", str(batch_size),
        "--gen_kwargs", "max_new_tokens=8",
    ]  # fmt: skip


ENV = {"CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}


def _run(lmms_eval, model: str, checkpoint: Path, batch_size: int, extra: str = ""):
    return lmms_eval(*_args(model, checkpoint, batch_size, extra), env=ENV)


@pytest.fixture(scope="module")
def fast_stock(lmms_eval_into, checkpoint, tmp_path_factory):
    """fast_vlm at ``batch_size 1`` with stock vision attention: compared with lmms-eval's class and with two
    processes (one run, read by both tests)."""
    return lmms_eval_into(tmp_path_factory.mktemp("fast_stock") / "run",
                          *_args("fast_vlm", checkpoint, 1, ",vision_attention=stock"), env=ENV)  # fmt: skip


def _responses(run) -> dict[int, str]:
    out = {}
    for sample in run.samples["mmsi_vanilla"]:
        response = sample["filtered_resps"]
        out[sample["doc_id"]] = response[0] if isinstance(response, list) else response
    return out


def test_fast_vlm_answers_every_mmsi_sample_as_lmms_eval_qwen2_5_vl_does(lmms_eval, checkpoint, fast_stock):
    reference = _run(lmms_eval, "qwen2_5_vl", checkpoint, 1)
    fast = fast_stock
    log = fast.stderr[-6000:]

    assert fast.results["config"]["model_backend"] == "lmms_spatial.models.fast_vlm.FastVLM (chat)", log
    assert sorted(_responses(fast)) == list(range(LIMIT)), log
    assert _responses(fast) == _responses(reference)
    assert fast.results["results"]["mmsi_vanilla"] == reference.results["results"]["mmsi_vanilla"]
    assert fast.stdout.count("fast_vlm: 4 docs in 4 batches, prep") == 1, (
        log
    )  # the timing line (lmms-eval logs to stdout)


def test_fast_vlm_batched_answers_every_sample_and_logs_its_choices(lmms_eval, checkpoint):
    fast = _run(lmms_eval, "fast_vlm", checkpoint, 2)
    log = fast.stderr[-6000:]
    assert sorted(_responses(fast)) == list(range(LIMIT)), log
    assert all(isinstance(r, str) for r in _responses(fast).values())
    assert "attn_implementation=sdpa" in fast.stdout and "vision attention: " in fast.stdout, fast.stdout[-4000:]
    assert "fast_vlm: 4 docs in 2 batches" in fast.stdout, fast.stdout[-4000:]


def _run_two_processes(offline_env: dict, checkpoint: Path, out: Path):
    """``accelerate launch --multi_gpu --num_processes 2`` on CPU (gloo), as tests/e2e/test_scale_out.py."""
    import json
    import subprocess
    from types import SimpleNamespace

    cmd = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29573",
        "-m", "lmms_eval", "--model", "fast_vlm",
        "--model_args", f"pretrained={checkpoint},{MODEL_ARGS},vision_attention=stock",
        "--tasks", "mmsi_vanilla", "--limit", str(LIMIT), "--batch_size", "1",
        "--gen_kwargs", "max_new_tokens=8", "--output_path", str(out), "--log_samples",
    ]  # fmt: skip
    env = {**offline_env, **ENV, "ACCELERATE_USE_CPU": "true"}
    out.mkdir(parents=True)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=out)
    results_files = sorted(out.rglob("*_results.json"))
    assert results_files, f"no results (rc={proc.returncode}):\n{proc.stderr[-6000:]}"
    samples = [
        json.loads(line) for f in out.rglob("*_samples_mmsi_vanilla.jsonl") for line in f.read_text().splitlines()
    ]
    results = json.loads(results_files[-1].read_text())
    return SimpleNamespace(results=results, samples={"mmsi_vanilla": samples}, stdout=proc.stdout, stderr=proc.stderr)


def test_two_cpu_processes_under_accelerate_answer_each_document_once_as_one_process(
    checkpoint, fast_stock, offline_env, tmp_path
):
    """Data parallel as lmms-eval splits it (each rank takes its share by rank and world size)."""
    one = fast_stock
    two = _run_two_processes(offline_env, checkpoint, tmp_path / "two")
    log = two.stdout[-3000:] + two.stderr[-3000:]
    assert sorted(_responses(two)) == list(range(LIMIT)), log  # none lost, none answered twice
    assert _responses(two) == _responses(one)
    assert two.results["results"]["mmsi_vanilla"] == one.results["results"]["mmsi_vanilla"]
    # each process logged its own share: two timing lines of 2 documents
    assert two.stdout.count("fast_vlm: 2 docs in 2 batches") == 2, log


@pytest.mark.parametrize(
    "model, extra, task",
    [
        ("staged", "", "osr_qa_cogmap_standard_vanilla"),  # the map, then each question after it
        ("omni_cot", ",view_size=32,crop_size=32", "odi_bench_close_existence"),  # captions, grounding, answer
    ],
)
def test_staged_and_omni_cot_run_over_fast_vlm(lmms_eval, checkpoint, model, extra, task):
    run = lmms_eval(
        "--model", model,
        "--model_args", f"base=fast_vlm,pretrained={checkpoint},{MODEL_ARGS}{extra}",
        "--tasks", task, "--limit", "2", "--batch_size", "2",
        "--gen_kwargs", "max_new_tokens=8",
        env=ENV,
    )  # fmt: skip
    log = run.stdout[-4000:] + run.stderr[-4000:]
    samples = run.samples[task]
    assert sorted(s["doc_id"] for s in samples) == [0, 1], log
    assert all(isinstance(s["filtered_resps"], (str, list)) for s in samples)
    # every round of the wrapper went through fast_vlm's pipeline: one timing line per generate_until call
    assert run.stdout.count("fast_vlm: ") >= 3, log
