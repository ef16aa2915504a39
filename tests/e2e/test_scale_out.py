"""Scale-out correctness: two data-parallel processes give exactly the metrics of one process.

One task of every benchmark, the tiny random Qwen2.5-VL (tests/tiny_models.py) through lmms-eval's
own chat ``qwen2_5_vl`` class, on CPU. Run once in one process, once under
``accelerate launch --multi_gpu --num_processes 2`` with ``ACCELERATE_USE_CPU=true`` (gloo); every
metric of every task must be identical, and the samples must hold every ``doc_id`` exactly once
with the same response (no document lost, none scored twice).

Two facts of the installed stack shape the command (both checked in this environment):

* ``accelerate launch --cpu --num_processes 2`` starts **one** process (accelerate 1.x sends
  ``--cpu`` to its simple launcher; multi-CPU needs ``--multi_gpu`` plus ``ACCELERATE_USE_CPU``,
  which gives ``DistributedType.MULTI_CPU`` with two ranks).
* lmms-eval 0.7.3's ``qwen2_5_vl`` class, under more than one process, moves the model to
  ``cuda:<rank>`` and asserts ``MULTI_GPU``/``FSDP``. :class:`CpuDataParallelQwen` (built lazily
  below) runs that class's unmodified ``__init__`` as a single process would and then takes rank and
  world size from the real accelerator; generation, batching and scoring are lmms-eval's and ours.

The two-process run is also the test that ``accelerate launch`` finds our tasks with no
``--include_path``: the startup hook runs in every rank's interpreter.

``batch_size=1`` and one thread per process: with left padding, a document's greedy answer could
depend on which documents share its batch, and those differ between one and two processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

# one cheap task of every benchmark
TASKS = [
    "mmsi_vanilla",
    "dori_view_parallelism_coarse",
    "mmperspective_vpp",
    "odi_bench_close_counting",
    "osr_qa_standard_vanilla",
]
LIMIT = 4
MODEL_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=12544"


def _build_cpu_data_parallel_qwen() -> type:
    import lmms_eval.models.simple.qwen2_5_vl as simple
    from accelerate import Accelerator
    from lmms_eval.models.chat.qwen2_5_vl import Qwen2_5_VL

    class _OneProcessView:
        """The real accelerator, seen as one process by the model's constructor."""

        num_processes = 1

        def __init__(self, real: Accelerator) -> None:
            self._real = real

        def __getattr__(self, name):
            return getattr(self._real, name)

    class CpuDataParallelQwen(Qwen2_5_VL):
        def __init__(self, **kwargs) -> None:
            real = Accelerator()
            original = simple.Accelerator
            simple.Accelerator = lambda *a, **k: _OneProcessView(real)
            try:
                super().__init__(**kwargs)
            finally:
                simple.Accelerator = original
            self.accelerator = real
            self._rank = real.process_index
            self._world_size = real.num_processes

        def generate_until(self, requests):
            log = os.environ.get("SCALE_OUT_LOG")
            if log:  # which rank answered which documents: proves the work was really split
                with open(log, "a") as fh:
                    for r in requests:
                        fh.write(f"{self._rank}/{self._world_size} {r.args[4]} {r.args[3]}\n")
            return super().generate_until(requests)

    return CpuDataParallelQwen


def __getattr__(name: str):  # PEP 562: build the class only when a subprocess asks for it
    if name == "CpuDataParallelQwen":
        cls = _build_cpu_data_parallel_qwen()
        globals()[name] = cls
        return cls
    raise AttributeError(name)


def _run(cmd_prefix: list[str], env: dict[str, str], out: Path, checkpoint: Path):
    """``python -m lmms_eval`` with the tiny checkpoint, behind ``cmd_prefix`` (``accelerate launch ...``; none: one
    process)."""
    args = [
        # lmms-eval's --model takes registered ids only; `staged` (which passes plain requests
        # straight through) loads a class by path
        "--model", "staged",
        "--model_args", f"base=test_scale_out.CpuDataParallelQwen,pretrained={checkpoint},{MODEL_ARGS}",
        "--tasks", ",".join(TASKS),
        "--limit", str(LIMIT),
        "--batch_size", "1",
        "--gen_kwargs", "max_new_tokens=8",
        "--output_path", str(out),
        "--log_samples",
        "--verbosity", "WARNING",
    ]  # fmt: skip
    if not cmd_prefix:  # one process: a fork of the worker's pre-warmed interpreter (tests/forkserver.py)
        import forkserver

        return forkserver.run_module("lmms_eval", args, env, cwd=out.parent, timeout=600)
    command = [*cmd_prefix, "-m", "lmms_eval", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, cwd=out.parent)


def _load(out: Path, proc) -> tuple[dict, dict[str, list[dict]]]:
    import json

    results_files = sorted(out.rglob("*_results.json"))
    assert results_files, f"no results (rc={proc.returncode}):\n{proc.stderr[-6000:]}"
    results = json.loads(results_files[-1].read_text())
    samples = {}
    for f in out.rglob("*_samples_*.jsonl"):
        task = f.name.split("_samples_", 1)[1][: -len(".jsonl")]
        samples[task] = [json.loads(line) for line in f.read_text().splitlines()]
    return results, samples


@pytest.mark.slow
def test_two_processes_give_exactly_the_metrics_of_one(offline_env, tiny_qwen2_5_vl, tmp_path):
    checkpoint = tiny_qwen2_5_vl
    env = {
        **offline_env,
        "CUDA_VISIBLE_DEVICES": "",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(HERE), str(TESTS_DIR), offline_env.get("PYTHONPATH", "")]),
    }
    one_out, two_out = tmp_path / "one", tmp_path / "two"
    one = _run([], {**env, "SCALE_OUT_LOG": str(tmp_path / "one.log")}, one_out, checkpoint)
    # `accelerate launch` as its module: the `accelerate` command runs the same launch_command after importing
    # every other subcommand of its CLI (9 CPU s more on 2 cores, nothing of the run)
    two = _run(
        [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
         "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "29571"],
        {**env, "ACCELERATE_USE_CPU": "true", "SCALE_OUT_LOG": str(tmp_path / "two.log")},
        two_out,
        checkpoint,
    )  # fmt: skip
    results_one, samples_one = _load(one_out, one)
    results_two, samples_two = _load(two_out, two)
    log = two.stderr[-6000:]

    # one process answered everything; two processes split the documents between them
    answered_one = [line.split() for line in (tmp_path / "one.log").read_text().splitlines()]
    answered_two = [line.split() for line in (tmp_path / "two.log").read_text().splitlines()]
    assert {rank for rank, _task, _doc in answered_one} == {"0/1"}
    ranks: dict[str, set] = {}
    for rank, task, doc_id in answered_two:
        ranks.setdefault(rank, set()).add((task, doc_id))
    assert sorted(ranks) == ["0/2", "1/2"], (sorted(ranks), log)
    assert ranks["0/2"] | ranks["1/2"] == {(task, doc_id) for _rank, task, doc_id in answered_one}
    # lmms-eval pads the shorter shard with a repeat of a request (its answer is dropped): at most one a task
    assert len(answered_one) <= len(answered_two) <= len(answered_one) + len(TASKS)

    assert set(results_one["results"]) >= set(TASKS), sorted(results_one["results"])
    assert set(results_two["results"]) >= set(TASKS), (sorted(results_two["results"]), log)  # found by every rank
    for task in TASKS:
        n = results_one["n-samples"][task]["effective"]
        assert n == min(LIMIT, results_one["n-samples"][task]["original"]) and n >= 2, task
        assert results_two["n-samples"][task] == results_one["n-samples"][task], task
        assert results_two["results"][task] == results_one["results"][task], (task, log)
        ids_two = sorted(s["doc_id"] for s in samples_two[task])
        assert ids_two == list(range(n)), (task, ids_two)  # none lost, none scored twice
        by_id_one = {s["doc_id"]: s["filtered_resps"] for s in samples_one[task]}
        by_id_two = {s["doc_id"]: s["filtered_resps"] for s in samples_two[task]}
        assert by_id_two == by_id_one, task


REFUSED = {
    "--cpu": "lmms-spatial: accelerate launch --cpu --num_processes 2 starts one process, not 2 (accelerate sends "
    "--cpu to its single-process launcher): drop --num_processes to run on CPU in one process, or run accelerate "
    "launch --multi_gpu --num_processes 2 without --cpu (GPUs, or CPU processes over gloo where there is none)",
    "no --multi_gpu": "lmms-spatial: accelerate launch --num_processes 2 started 1 process(es), not 2 (without "
    "--multi_gpu, accelerate starts one where it finds no GPU): add --multi_gpu (data parallel over 2 GPUs, or 2 "
    "CPU processes over gloo), or drop --num_processes",
}


@pytest.mark.slow
@pytest.mark.parametrize("given", sorted(REFUSED))
def test_accelerate_launch_that_starts_fewer_processes_than_asked_stops_in_one_line(given, offline_env, tmp_path):
    out = tmp_path / "out"
    cpu = ["--cpu"] if given == "--cpu" else []
    launch = [sys.executable, "-m", "accelerate.commands.launch", *cpu, "--num_processes", "2", "--num_machines",
              "1", "--mixed_precision", "no", "--dynamo_backend", "no"]  # fmt: skip
    proc = subprocess.run([*launch, "-m", "lmms_eval", "--model", "random_choice", "--tasks", "mmsi_vanilla",
                           "--output_path", str(out), "--log_samples"], env={**offline_env, "CUDA_VISIBLE_DEVICES": ""},
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert REFUSED[given] in proc.stderr.splitlines()  # the launched process's last line (accelerate's traceback after)
    assert proc.stderr.count("Traceback") == 1  # accelerate's alone: the launched lmms-eval ended in its line
    assert not out.exists()  # stopped before the model loaded: nothing evaluated, nothing written
