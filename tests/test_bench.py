"""``lmms-spatial bench --tiny``: the harness runs end to end and writes a complete report (not timed)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lmms_spatial.cli import build_parser
from lmms_spatial.data.demo import demo_tasks

ROW_KEYS = ("load_s", "row_cpu_ms_per_doc", "visual_cpu_ms_per_doc", "prompt_cpu_ms_per_doc",
            "messages_cpu_ms_per_doc", "score_cpu_ms_per_doc", "our_cpu_ms_per_doc", "peak_rss_mb")  # fmt: skip


def test_bench_is_a_subcommand_and_the_other_subcommands_stay():
    parser = build_parser()
    args = parser.parse_args(["bench", "--tiny", "--json", "x.json"])
    assert args.tiny and args.json == "x.json" and args.func.__name__ == "_cmd_bench"
    assert parser.parse_args(["demo"]).func.__name__ == "_cmd_demo"


@pytest.mark.slow  # ~45 s: builds every demo dataset and runs the harness
def test_tiny_bench_reports_every_demo_task_and_every_section(offline_env, tmp_path):
    out = tmp_path / "bench.json"
    cmd = [sys.executable, "-m", "lmms_spatial.cli", "bench", "--tiny", "--work", str(tmp_path / "work"),
           "--json", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, env=offline_env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(out.read_text())

    assert set(report["tasks"]) == set(demo_tasks())
    for task, row in report["tasks"].items():
        for key in ROW_KEYS:
            assert isinstance(row[key], (int, float)) and row[key] >= 0, (task, key)
        assert row["docs_measured"] == 2 and row["n_docs_in_dataset"] >= 1

    odi = report["odi_decode"]
    assert odi["same_size"] and odi["within_tolerance"], odi
    osr = report["osr_scoring"]
    assert {"cogmap_f1", "avg_distance", "chair_i"} <= set(osr["metrics"]["osr_cogmap_standard"])
    assert {"accuracy", "overall", "unparsed_rate"} <= set(osr["metrics"]["osr_qa_standard_vanilla"])
    calls = report["osr_calls"]
    assert (
        calls["ok"] and calls["calls_per_image"] == calls["expected_calls_per_image"] < calls["naive_calls_per_image"]
    )
    assert report["summary"]["osr_calls"]["ok"] and "non_odi_max_cpu_ms_per_doc" in report["summary"]
    assert "per benchmark, our CPU ms/doc" in proc.stdout

    # two reports compare
    proc = subprocess.run([sys.executable, "-m", "lmms_spatial.cli", "bench", "--compare", str(out), str(out)],
                          env=offline_env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0 and "mmsi_vanilla" in proc.stdout and " 1.00" in proc.stdout, proc.stderr
