"""The report's bootstrap 95% CIs against an exact computation on cases small enough to work by hand.

A cell's CI resamples the task's documents with replacement (500 draws) and takes the 2.5 / 97.5
percentiles of the resampled means. With five 0/1 scores the resampled mean is k/5, k ~ Binomial(5, p),
p the share of right answers, so where the percentiles must fall is exact arithmetic. Checked on the
``lmms-spatial report`` CSV (public output), whatever the generator or its seed rule.
"""

from __future__ import annotations

import csv
import json
from math import comb
from pathlib import Path

import pytest

from lmms_spatial.cli import main as lmms_spatial


def _mmsi_run(folder: Path, name: str, scores: list[float]) -> None:
    """An mmsi_vanilla run of len(scores) MSR questions with these 0/1 scores."""
    folder.mkdir(parents=True)
    lines = [
        {"doc_id": i, "accuracy": {"id": i, "category": "MSR", "score": s, "parsed": "A", "n_options": 4}}
        for i, s in enumerate(scores)
    ]
    (folder / "20260101_000000_samples_mmsi_vanilla.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    value = sum(scores) / len(scores)
    results = {"accuracy,none": value, "MSR,none": value, "unparsed_rate,none": 0.0, "chance_level,none": 0.25}
    data = {
        "results": {"mmsi_vanilla": results},
        "n-samples": {"mmsi_vanilla": {"original": len(scores), "effective": len(scores)}},
        "config": {"model": "replay", "model_args": f"samples={name}"},
    }
    (folder / "20260101_000000_results.json").write_text(json.dumps(data))


def _binomial_mean_distribution(n: int, right: int) -> dict[float, float]:
    """P(resampled mean = k/n) for n documents of which ``right`` score 1."""
    p = right / n
    return {k / n: comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)}


def test_the_distribution_the_bounds_below_are_read_from():
    # by hand, four of five right (p = 0.8): P(mean <= 0.2) = 0.2^5 + 5 * 0.8 * 0.2^4 = 0.00032 + 0.0064
    dist = _binomial_mean_distribution(5, 4)
    assert dist[0.0] + dist[0.2] == pytest.approx(0.00672)
    # P(mean <= 0.4) adds 10 * 0.8^2 * 0.2^3 = 0.0512: 0.05792, past 2.5%; P(mean = 1) = 0.8^5 = 0.32768
    assert dist[0.0] + dist[0.2] + dist[0.4] == pytest.approx(0.05792) and dist[1.0] == pytest.approx(0.32768)


@pytest.fixture(scope="module")
def report_rows(tmp_path_factory) -> dict[tuple[str, str], dict[str, str]]:
    root = tmp_path_factory.mktemp("ci")
    _mmsi_run(root / "runs" / "a", "a", [1.0, 1.0, 1.0, 1.0, 0.0])  # 80%
    _mmsi_run(root / "runs" / "b", "b", [1.0, 0.0, 0.0, 0.0, 0.0])  # 20%
    assert lmms_spatial(["report", str(root / "runs"), "--out", str(root / "report"), "--quiet"]) == 0
    with open(root / "report" / "report.csv", newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["table"] == "mmsi" and r["kind"] == "model"]
    return {(r["row"], r["column"]): r for r in rows}


@pytest.mark.parametrize("column", ["Avg.", "MSR"])  # two cells, two independent sets of draws
def test_four_of_five_right_has_the_ci_40_to_100(report_rows, column):
    # Of 500 resampled means, the lower bound is the mean at rank 12.475: it is 0.4 when fewer than 13
    # draws are <= 0.2 (expected 500 * 0.00672 = 3.4) and at least 14 are <= 0.4 (expected 29.0);
    # the upper bound is 1.0 when at least 14 draws are 1.0 (expected 164). The chance that 500 draws
    # break one of these is 6e-4, whatever the generator.
    row = report_rows[("replay (samples=a)", column)]
    assert (float(row["value"]), float(row["ci_low"]), float(row["ci_high"])) == (80.0, 40.0, 100.0)


@pytest.mark.parametrize("column", ["Avg.", "MSR"])
def test_one_of_five_right_has_the_ci_0_to_60(report_rows, column):
    # the mirror case: P(mean >= 0.8) = 0.00672 < 2.5% <= P(mean >= 0.6) = 0.05792; P(mean = 0) = 0.32768
    row = report_rows[("replay (samples=b)", column)]
    assert (float(row["value"]), float(row["ci_low"]), float(row["ci_high"])) == (20.0, 0.0, 60.0)
