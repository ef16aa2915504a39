"""``lmms-spatial demo`` ends with the report (the MMSI-Bench demo run the contract test shares)."""

import shutil
import subprocess

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


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (apt-get install "
                    "texlive-latex-base texlive-latex-recommended; .ci/run does)")  # fmt: skip
def test_the_whole_demo_reports_latex_compiles_within_the_page(full_demo, tmp_path):
    """Every benchmark's tables of the demo (five benchmarks, 12 tables) in one document, as written."""
    folder = shutil.copytree(full_demo.out / "report", tmp_path / "report", ignore=shutil.ignore_patterns("plots"))
    proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report_standalone.tex"],
                          cwd=folder, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:]
    log = (folder / "report_standalone.log").read_text(errors="replace")
    assert "Overfull \\hbox" not in log and "Overfull \\vbox" not in log
