"""``lmms-spatial demo`` ends with the report (one small lmms-eval run)."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def test_demo_ends_with_the_report(offline_env, tmp_path):
    out = tmp_path / "demo"
    cmd = [sys.executable, "-m", "lmms_spatial.cli", "demo", "--out", str(out), "--tasks", "mmsi_vanilla,mmsi_circular"]
    proc = subprocess.run(cmd, env=offline_env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "report written:" in proc.stdout
    md = (out / "report" / "report.md").read_text()
    assert "MMSI-Bench: overall, per category, circular" in md and "GPT-5 (published)" in md
    assert (out / "report" / "report.csv").exists() and (out / "report" / "report.tex").exists()
    assert (out / "report" / "plots" / "mmsi_bars.png").read_bytes()[:4] == b"\x89PNG"
