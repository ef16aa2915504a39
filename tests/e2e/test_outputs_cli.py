"""A run's files through the real CLI: two runs started in one second into one ``--output_path`` keep their own
results and samples and the report reads each; a folder that cannot be written fails the run (exit 1, one line
naming it) after the answers are safe, and the same command then asks the model for none of them; a merge lock
its dead owner left in the answer store is taken over at once (lmms_spatial.plugin.outputs, .owners)."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import forkserver  # tests/forkserver.py: CLI runs as forks of a pre-warmed process
import pytest

pytestmark = pytest.mark.slow

PLUGIN = Path(__file__).parent / "plugin"
SECOND = "20260101_000000"
# lmms-eval's CLI with its clock stopped at one second (`python -m stopped_clock ARGS`, a module written into the
# runs' folder): the two runs certainly start "in the same second"
STOPPED_CLOCK = (
    f"import lmms_eval.utils as u\nu.get_datetime_str = lambda timezone=None: {SECOND!r}\n"
    "from lmms_eval.__main__ import cli_evaluate\ncli_evaluate()\n"
)


def test_two_runs_started_in_one_second_keep_their_own_files_and_the_report_reads_each(offline_env, tmp_path):
    out = tmp_path / "runs"
    (tmp_path / "stopped_clock.py").write_text(STOPPED_CLOCK)
    # both running at once, each a fork of the suite's pre-warmed process where a new one would be the same run
    procs = [
        forkserver.start("stopped_clock", ["--model", "random_choice", "--model_args", f"seed={seed}", "--tasks",
                                           "mmsi_vanilla", "--output_path", str(out), "--log_samples"],
                         offline_env, cwd=tmp_path)
        for seed in (0, 1)
    ]  # fmt: skip
    for proc in procs:
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-3000:]
    assert sorted(p.name for p in out.glob(f"{SECOND}*")) == [
        f"{SECOND}_results.json", f"{SECOND}_samples_mmsi_vanilla.jsonl", f"{SECOND}_take002_results.json",
        f"{SECOND}_take002_samples_mmsi_vanilla.jsonl",
    ]  # fmt: skip
    seeds = []
    for stamp in (SECOND, f"{SECOND}_take002"):
        results = json.loads((out / f"{stamp}_results.json").read_text())
        seed = int(results["config"]["model_args"].removeprefix("seed="))
        lines = [json.loads(line) for line in (out / f"{stamp}_samples_mmsi_vanilla.jsonl").read_text().splitlines()]
        assert len(lines) == results["n-samples"]["mmsi_vanilla"]["effective"] == 12  # not 24: one run's lines
        for line in lines:  # random_choice guesses Random(f"{seed}:{task}:{doc_id}").choice(the letters): this seed's
            letters = [chr(ord("A") + i) for i in range(line["accuracy"]["n_options"])]
            assert line["filtered_resps"] == random.Random(f"{seed}:mmsi_vanilla:{line['doc_id']}").choice(letters)
        seeds.append((stamp, seed))
    assert sorted(seed for _, seed in seeds) == [0, 1]
    report = forkserver.run_module("lmms_spatial.cli", ["report", str(out), "--out", str(tmp_path / "report"),
                                                        "--quiet", "--no-plots"], offline_env, timeout=600)  # fmt: skip
    assert report.returncode == 0, report.stderr[-3000:]
    notes = (tmp_path / "report" / "report.md").read_text()
    for stamp, seed in seeds:  # each results file is its own run, with its own 12 documents
        run_line = next(line for line in notes.splitlines() if f"`{out / stamp}_results.json`" in line)
        assert run_line.startswith(f"- random_choice: random_choice, 12/12 documents, seed={seed}, lmms-spatial ")
    # pooled as two seeds, in the order of their file names (which run took "_take002" is the race's)
    pooled = next(line for line in notes.splitlines() if "random_choice: mean ± std/sqrt(n) over 2 runs (" in line)
    assert sorted(pooled.split("(")[-1].rstrip(")").split(", ")) == ["seed=0", "seed=1"]


def _without_dac_override() -> list[str]:
    """A prefix that makes a read-only folder read-only for this user too (root writes anywhere otherwise)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner"]


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, timeout=120).stdout)  # fmt: skip


def test_a_read_only_output_folder_fails_the_run_naming_it_and_the_same_command_then_asks_for_nothing(
    offline_env, tmp_path
):
    out, answers = tmp_path / "readonly", tmp_path / "answers"
    out.mkdir()
    out.chmod(0o555)
    lock = answers / "runs" / ".merge.lock"  # left by a run that died while merging
    lock.mkdir(parents=True)
    dead = _dead_pid()
    (lock / "owner.json").write_text(json.dumps({"pid": dead, "hostname": socket.gethostname(), "created_at": 0}))
    path = os.pathsep.join(p for p in (str(PLUGIN), offline_env.get("PYTHONPATH", "")) if p)
    env = {**offline_env, "PYTHONPATH": path, "LMMS_EVAL_PLUGINS": "lmms_spatial_test_models"}
    args = ["--model", "slow_guess", "--tasks", "mmsi_vanilla", "--output_path", str(out), "--use_cache", str(answers),
            "--log_samples"]  # fmt: skip
    command = [sys.executable, "-m", "lmms_eval", *args]

    first = subprocess.run(_without_dac_override() + command, env={**env, "SLOW_GUESS_LOG": str(tmp_path / "1.log")},
                           cwd=tmp_path, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert first.returncode == 1, first.stderr[-3000:]
    assert first.stderr.splitlines()[-1] == (
        f"lmms-spatial: the results file and its samples files could not be written into {out} (Permission denied): "
        "free space there or make it writable (or give another --output_path), then run the same command; the "
        f"answers are kept in {answers}, so the same command run again asks the model for none of them"
    )
    assert list(out.iterdir()) == []
    assert len((tmp_path / "1.log").read_text().splitlines()) == 12  # the fixture's 12 MMSI questions, asked once
    assert (f"lmms-spatial: the answer store's merge lock {lock} was left by process {dead} on "
            f"{socket.gethostname()}, which is no longer running: taken over") in first.stderr  # fmt: skip
    assert (answers / "cache.db").exists() and not lock.exists()  # merged at once, not after lmms-eval's 60 s

    out.chmod(0o755)
    # the same command (a fork of the suite's pre-warmed process where a new one would be the same run)
    again = forkserver.run_module("lmms_eval", args, {**env, "SLOW_GUESS_LOG": str(tmp_path / "2.log")},
                                  cwd=tmp_path, timeout=900)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert not (tmp_path / "2.log").exists() or (tmp_path / "2.log").read_text() == ""  # no question asked again
    results = json.loads(next(out.glob("*_results.json")).read_text())
    assert results["n-samples"]["mmsi_vanilla"]["effective"] == 12
