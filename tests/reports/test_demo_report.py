"""``lmms-spatial demo`` ends with the report (the MMSI-Bench demo run the contract test shares)."""

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("demo")]


def test_demo_ends_with_the_report(demo_run):
    run = demo_run("mmsi")  # lmms-spatial demo --tasks mmsi_vanilla,mmsi_circular,mmsi_cot
    assert run.returncode == 0, run.stderr[-4000:]
    assert "report written:" in run.stdout
    md = (run.out / "report" / "report.md").read_text()
    assert "MMSI-Bench: overall, per category, circular" in md and "GPT-5 (published)" in md
    assert (run.out / "report" / "report.csv").exists() and (run.out / "report" / "report.tex").exists()
    assert (run.out / "report" / "plots" / "mmsi_bars.png").read_bytes()[:4] == b"\x89PNG"
