"""Prefetching changes nothing but speed: lmms-eval's real ``qwen2_5_vl`` chat class, tiny random model, on CPU.

Two runs of the same command, ``LMMS_SPATIAL_PREFETCH=0`` and the default, over tasks of four
benchmarks (two-image MMSI and MMPerspective PTS documents, an ODI-Bench ERP decoded at a pixel cap,
OSR-Bench panoramas through the shared decoded-image cache). Greedy decoding on CPU is deterministic,
so every generated answer, every score record and every metric must be the same; the prefetching run
must also say that it built documents ahead, and the other run must not prefetch at all.
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow

TASKS = ["mmsi_vanilla", "mmperspective_pts", "odi_bench_close_existence", "osr_qa_standard_vanilla"]
LIMIT = 3
MODEL_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=12544"  # as tests/e2e/test_tiny_qwen.py


def _answers(run) -> dict:
    out = {}
    for task, samples in run.samples.items():
        for s in samples:
            record = {k: v for k, v in s.items() if k in ("doc_id", "target", "resps", "filtered_resps")}
            record["scores"] = {k: v for k, v in s.items() if isinstance(v, dict) and "score" in v}
            out[(task, s["doc_id"])] = record
    return out


def test_prefetching_on_and_off_give_identical_answers_samples_and_metrics(lmms_eval, tiny_qwen2_5_vl, tmp_path):
    checkpoint = tiny_qwen2_5_vl  # built once per test run (tests/conftest.py)
    args = (
        "--model", "qwen2_5_vl", "--model_args", f"pretrained={checkpoint},{MODEL_ARGS}",
        "--tasks", ",".join(TASKS), "--limit", str(LIMIT), "--batch_size", "2", "--gen_kwargs", "max_new_tokens=6",
    )  # fmt: skip
    common = {"CUDA_VISIBLE_DEVICES": "", "LMMS_SPATIAL_ODI_MAX_PIXELS": "8192"}
    off = lmms_eval(*args, env={**common, "LMMS_SPATIAL_PREFETCH": "0"})
    on = lmms_eval(*args, env={**common, "LMMS_SPATIAL_PREFETCH_THREADS": "3", "LMMS_SPATIAL_PREFETCH_DOCS": "3"})

    assert sorted(on.samples) == sorted(off.samples) == sorted(TASKS)
    n = len(_answers(off))  # up to LIMIT per task (a fixture task may hold fewer documents)
    assert n > len(TASKS)
    assert _answers(on) == _answers(off)
    for task in TASKS:
        assert on.results["results"][task] == off.results["results"][task]

    log = on.stdout + on.stderr  # lmms-eval logs to stdout
    said = re.findall(r"lmms-spatial prefetch: (\d+) documents, (\d+) built ahead, (\d+) built on", log)
    assert len(said) == 1, log[-4000:]
    documents, ahead, on_thread = map(int, said[0])
    # (a document whose worker had not started when the model asked is built on the model's thread)
    assert documents == ahead + on_thread == n and ahead > 0
    assert "lmms-spatial prefetch" not in off.stdout + off.stderr
