"""Sampled answers are kept with their seed and resumed; the seeds a run records are those that reached it.

Through the real CLI (``--model random_choice``, MMSI-Bench fixture): three sampled runs
(``--gen_kwargs do_sample=True,temperature=0.9``) into one ``--output_path``, hence one answer store. lmms-eval keeps
no sampled answer (its cache skips them); ours are kept under a key holding the seed that reaches sampling
(``--seed``'s torch value) and the draw, so the same command serves them all again and another seed none.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sampled_answers")]  # the three runs are made once

LIMIT = 3
SAMPLED = ["--model", "random_choice", "--tasks", "mmsi_vanilla", "--limit", str(LIMIT),
           "--gen_kwargs", "do_sample=True,temperature=0.9"]  # fmt: skip


@pytest.fixture(scope="module")
def sampled_runs(lmms_eval_into, tmp_path_factory):
    out = tmp_path_factory.mktemp("sampled") / "out"
    return out, [lmms_eval_into(out, *SAMPLED, "--seed", seed) for seed in ("5", "5", "6")]


def test_sampled_answers_are_kept_under_their_seed_and_the_same_command_serves_them(sampled_runs):
    out, (first, again, other) = sampled_runs
    assert [r.results["lmms_spatial"]["store"]["answers"] for r in (first, again, other)] == [0, LIMIT, 0]
    assert [r.results["lmms_spatial"]["store"]["asked"] for r in (first, again, other)] == [LIMIT] * 3
    assert again.samples["mmsi_vanilla"] == first.samples["mmsi_vanilla"]
    line = next(x for x in again.stderr.splitlines() if "came from the answer store" in x)
    assert line.startswith(f"lmms-spatial: {LIMIT} of {LIMIT} answers came from the answer store")
    with sqlite3.connect(out / "cache" / "cache.db") as db:
        kept = [json.loads(g)["lmms_spatial_sample"] for (g,) in db.execute("SELECT gen_kwargs FROM responses")]
    assert sorted(k["seed"] for k in kept) == ["torch=5"] * LIMIT + ["torch=6"] * LIMIT
    assert {k["draw"] for k in kept} == {0}


def test_a_seed_lmms_eval_gives_is_recorded_only_where_it_reaches_the_answers(sampled_runs):
    _, (first, _, other) = sampled_runs
    # random_choice draws from its own seed= (default 0), never from --seed, sampling or not
    for run in (first, other):
        model = run.results["lmms_spatial"]["model"]
        assert (model["seed"], model["sampling_seed"]) == (0, None)
        assert run.results["lmms_spatial"]["tasks"]["mmsi_vanilla"]["seed"] == 0


def test_a_seed_of_three_values_is_refused_in_one_line(lmms_eval):
    """lmms-eval takes three values (the fourth from its defaults, with a warning); two or five it refuses itself."""
    seed = "1,2,3"
    run = lmms_eval("--model", "random_choice", "--tasks", "mmsi_vanilla", "--limit", "2", "--seed", seed,
                    expect_results=False)  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.splitlines()[-1] == (
        f"lmms-spatial: --seed {seed} gives 3 values: give one integer for all four seeds (--seed 42) or four, "
        "for python's random, numpy, torch and few-shot sampling (--seed 0,1234,1234,1234; None leaves one unset)"
    )
    assert "Traceback" not in run.stderr
