"""A benchmark sharded over a job array (``--offset``/``--limit``) and joined through ``--model replay`` is the
whole run, and shards of different settings are refused (docs/running.md, "Many machines").

Through the real CLI, ``--model random_choice`` on MMSI-Bench's 12 fixture documents: two shards of 6
(``--offset 0`` and ``--offset 6``, each into its own folder, as two array jobs write), then one replay over both.
"""

from __future__ import annotations

import shutil

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sharded_jobs")]  # the shards are made once

TASK = ["--tasks", "mmsi_vanilla"]


@pytest.fixture(scope="module")
def shards(lmms_eval_into, tmp_path_factory):
    root = tmp_path_factory.mktemp("shards")
    (root / "shards").mkdir()
    for k in (0, 1):
        lmms_eval_into(root / "shards" / str(k), "--model", "random_choice", *TASK, "--offset", str(6 * k),
                       "--limit", "6")  # fmt: skip
    whole = lmms_eval_into(root / "whole", "--model", "random_choice", *TASK)
    return root, whole


def test_two_shards_joined_by_replay_are_the_whole_run(shards, lmms_eval_into):
    root, whole = shards
    joined = lmms_eval_into(root / "joined", "--model", "replay", "--model_args", f"samples={root / 'shards'}", *TASK)
    assert joined.returncode == 0, joined.stderr[-3000:]
    assert joined.results["n-samples"]["mmsi_vanilla"] == {"original": 12, "effective": 12}
    assert joined.results["results"]["mmsi_vanilla"] == whole.results["results"]["mmsi_vanilla"]
    assert [s["filtered_resps"] for s in joined.samples["mmsi_vanilla"]] == [
        s["filtered_resps"] for s in whole.samples["mmsi_vanilla"]
    ]
    model = joined.results["lmms_spatial"]["model"]
    assert model["label"] == "random_choice" and "replayed_from" not in model  # two runs gave the answers
    assert "same model and settings" not in joined.stderr  # shards, not one run twice


def test_a_shard_of_other_settings_is_refused_in_one_line(shards, lmms_eval_into, lmms_eval_with_env, offline_env):
    root, _ = shards
    other = root / "other_seed"
    other.mkdir()
    lmms_eval_into(other / "2", "--model", "random_choice", "--model_args", "seed=1", *TASK, "--offset", "6",
                   "--limit", "6")  # fmt: skip
    shutil.copytree(root / "shards" / "0", other / "0")  # shard 0 of seed 0 beside a shard of seed 1
    run = lmms_eval_with_env(offline_env, root / "mixed", "--model", "replay", "--model_args", f"samples={other}",
                             *TASK, expect_results=False)  # fmt: skip
    assert run.returncode == 1
    last = run.stderr.splitlines()[-1]
    assert last.startswith(f"lmms-spatial: replay: samples={other} holds 2 runs of different models or settings "
                           "(model_args)")  # fmt: skip
    assert "Traceback" not in run.stderr
