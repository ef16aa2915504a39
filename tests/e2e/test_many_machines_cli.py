"""Two machines of one process each, with no shared disk, keep and count every answer as one process does.

Through the real ``accelerate launch`` on CPU (gloo): two launches on this machine play two machines
(``--num_machines 2 --machine_rank 0|1 --main_process_ip 127.0.0.1``, two ranks in all: several processes on one
machine are tests/e2e/test_scale_out.py's), each in a folder of
its own, so each "machine" has its own ``--output_path`` and answer store, as two nodes without a shared file
system have. ``--model random_choice`` (its guess depends only on seed, task and document: the same on any rank).

1. The first run writes the one-process run's results, and its results count every rank's answers (8 asked, not
   rank 0's 4); every answer is in the main machine's store, merged;
2. the same commands again: every rank's answers come from the store (the second machine's from the main one's),
   and the run that gave them is named by its own run id (accelerate's ``TORCHELASTIC_RUN_ID=none`` named every
   data-parallel run ``none`` before).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

# one worker runs both tests (the module's runs are made once, not once per xdist worker at the same time)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("many_machines")]

LIMIT = 8
TASK = "mmsi_vanilla"
TIMEOUT = int(os.environ.get("MANY_MACHINES_TIMEOUT", "600"))  # seconds for both machines


def _free_port() -> int:
    """A port no process listens on now: the main machine's rendezvous (a fixed one collides with any other run)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launch_two_machines(env: dict[str, str], root: Path) -> list[subprocess.CompletedProcess]:
    """Both "machines" at once (each waits for the other at the rendezvous); their outputs in root/A, root/B."""
    port = _free_port()
    procs = []
    for rank, folder in enumerate(("A", "B")):
        (root / folder).mkdir(exist_ok=True)
        command = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_machines", "2",
                   "--machine_rank", str(rank), "--main_process_ip", "127.0.0.1", "--main_process_port", str(port),
                   "--num_processes", "2", "--mixed_precision", "no", "--dynamo_backend", "no",
                   "-m", "lmms_eval", "--model", "random_choice", "--tasks", TASK, "--limit", str(LIMIT),
                   "--output_path", "out", "--log_samples"]  # fmt: skip
        procs.append(subprocess.Popen(command, env={**env, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"},
                                      cwd=root / folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))  # fmt: skip
    done = []
    try:
        for proc in procs:
            stdout, stderr = proc.communicate(timeout=TIMEOUT)
            done.append(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr))
    except subprocess.TimeoutExpired:
        for proc in procs:
            proc.kill()
        tails = [f"machine {rank}:\n{proc.communicate()[1][-3000:]}" for rank, proc in enumerate(procs)]
        pytest.fail(f"the two machines did not finish in {TIMEOUT} s:\n" + "\n".join(tails))
    return done


def _newest(out: Path, procs: list[subprocess.CompletedProcess]) -> tuple[dict, list[dict]]:
    found = sorted(out.glob("*_results.json"))
    assert found, "no results on the main machine:\n" + "\n".join(p.stderr[-3000:] for p in procs)
    results = found[-1]
    stamp = results.name[: -len("_results.json")]
    lines = (out / f"{stamp}_samples_{TASK}.jsonl").read_text().splitlines()
    return json.loads(results.read_text()), sorted((json.loads(x) for x in lines), key=lambda s: s["doc_id"])


@pytest.fixture(scope="module")
def runs(offline_env, lmms_eval_into, tmp_path_factory):
    root = tmp_path_factory.mktemp("two_machines")
    one = lmms_eval_into(root / "one", "--model", "random_choice", "--tasks", TASK, "--limit", str(LIMIT))
    first = _launch_two_machines(offline_env, root)
    first_results = _newest(root / "A" / "out", first)
    again = _launch_two_machines(offline_env, root)
    return root, one, (first, first_results), (again, _newest(root / "A" / "out", again))


def test_the_first_run_gives_the_one_process_results_and_counts_every_ranks_answers(runs):
    root, one, (procs, (results, samples)), _ = runs
    for proc in procs:
        assert proc.returncode == 0, proc.stderr[-4000:]
    assert not list((root / "B" / "out").glob("*_results.json"))  # the main machine writes the results
    assert results["results"][TASK] == one.results["results"][TASK]
    assert [s["filtered_resps"] for s in samples] == [s["filtered_resps"] for s in one.samples[TASK]]
    assert [s["doc_id"] for s in samples] == list(range(LIMIT))
    record = results["lmms_spatial"]
    assert record["store"] == {"root": str(root / "A" / "out" / "cache"), "answers": 0, "asked": LIMIT, "from": []}
    assert record["tasks"][TASK]["answers_from_store"] == 0
    # every rank's answers are in the main machine's merged store, the other machine's sent there
    with sqlite3.connect(root / "A" / "out" / "cache" / "cache.db") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == LIMIT
    said = [line for line in procs[0].stderr.splitlines() if "not share this machine" in line]
    assert said == [f"lmms-spatial: rank 1 does not share this machine's disk ({root / 'A' / 'out' / 'cache'}): this "
                    "machine's kept answers are sent to it now, and its answers to this machine's store before it is "
                    "merged"]  # fmt: skip


def test_the_same_commands_again_take_every_ranks_answers_from_the_store_and_name_the_run(runs):
    root, _, (_, (first, first_samples)), (procs, (results, samples)) = runs
    for proc in procs:
        assert proc.returncode == 0, proc.stderr[-4000:]
        assert "damaged" not in proc.stderr
        assert "interrupted runs" not in proc.stderr  # the second machine's answers were merged on the first
    assert results["results"][TASK] == first["results"][TASK]
    assert [s["filtered_resps"] for s in samples] == [s["filtered_resps"] for s in first_samples]
    store = results["lmms_spatial"]["store"]
    assert (store["answers"], store["asked"], len(store["from"])) == (LIMIT, LIMIT, 1)
    source = store["from"][0]["run"]
    assert source.startswith("the run of ") and " into out (run id " in source
    assert "(run id none)" not in source and "did not record itself" not in source
    runs_folder = root / "A" / "out" / "cache" / "runs"
    assert len([d for d in runs_folder.iterdir() if d.is_dir()]) == 2  # one folder per run, not runs/none twice
