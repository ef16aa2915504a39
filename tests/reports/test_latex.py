"""The report's LaTeX pastes into a paper: it says what it needs, a standalone file compiles with pdflatex as
written, every table fits the text width, and the notes the markdown has are under each table
(lmms_spatial.reports.render ``latex``, ``latex_header``, ``latex_document``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from report_fixtures import FALLBACK, mmsi_scores, odi_scores, open_verdicts, write_run

from lmms_spatial.cli import main as lmms_spatial
from lmms_spatial.reports import render

STAMP = "20260101_000000"
PDFLATEX = shutil.which("pdflatex")
needs_pdflatex = pytest.mark.skipif(
    PDFLATEX is None,
    reason="pdflatex is not installed (apt-get install texlive-latex-base texlive-latex-recommended; .ci/run does)",
)


def compile_tex(folder: Path, name: str = "report_standalone.tex") -> str:
    """pdflatex ``name`` in ``folder`` (twice, for the labels); its log. Fails the test on a LaTeX error."""
    for _ in range(2):
        proc = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", name], cwd=folder,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-3000:]
    return (folder / name.replace(".tex", ".log")).read_text(errors="replace")


def test_special_characters_of_our_notes_are_set_as_latex_can():
    assert render._tex("mean ± std/√n, ≥ 5%") == r"mean $\pm$ std/$\surd$n, $\geq$ 5\%"
    assert render._tex("-¹ “quoted” — ‘a’") == r"-\textsuperscript{1} ``quoted'' --- `a'"
    assert render._tex("Ｃ：é") == "??é"  # what pdflatex cannot set shows as ?, accented Latin stays


def test_report_tex_says_which_packages_it_needs(tmp_path, capsys):
    write_run(tmp_path / "a", STAMP, "samples=a", odi_scores(0), mmsi_scores(0))
    assert lmms_spatial(["report", str(tmp_path / "a"), "--out", str(tmp_path / "out"), "--no-plots", "--quiet",
                         "--format", "latex"]) == 0  # fmt: skip
    tex = (tmp_path / "out" / "report.tex").read_text()
    assert tex.startswith("% lmms-spatial report: one table environment per paper table")
    assert "% Needs in the preamble: \\usepackage{booktabs,graphicx}" in tex
    assert (tmp_path / "out" / "report_standalone.tex").read_text() == (
        "\\documentclass{article}\n\\usepackage{booktabs,graphicx}\n\\begin{document}\n\\input{report.tex}\n"
        "\\end{document}\n"
    )


@needs_pdflatex
def test_a_report_of_partial_pooled_and_rule_judged_runs_compiles_within_the_page_with_its_notes(tmp_path, capsys):
    """Two models, a --limit run of one, three seeds of another, a rule-judged open-ended run: every note the
    markdown has (what the cells hold, pooling warnings, the judge) is under the LaTeX table too."""
    write_run(tmp_path / "a", STAMP, "samples=a", odi_scores(0), mmsi_scores(0))
    write_run(tmp_path / "lim", STAMP, "samples=a", {t: s[:2] for t, s in odi_scores(0).items()}, None, of=4, limit=2)
    for seed in range(3):
        write_run(tmp_path / f"s{seed}", STAMP, f"samples=x,seed={seed}", odi_scores(seed), mmsi_scores(seed))
    write_run(tmp_path / "rule", STAMP, "samples=r", odi_scores(2), None, open_scores=open_verdicts(0), judge=FALLBACK)
    out = tmp_path / "out"
    assert lmms_spatial(["report", str(tmp_path), "--out", str(out), "--no-plots", "--quiet"]) == 0
    md, tex = (out / "report.md").read_text(), (out / "report.tex").read_text()
    log = compile_tex(out)
    assert "Overfull \\hbox" not in log and "Overfull \\vbox" not in log  # within the text width and height
    assert "Model cells: value, under it [bootstrap 95\\% CI]" in tex
    for line in md.splitlines():
        if line.startswith("- WARNING:") or "not pooled" in line:
            assert render._tex(line[2:]) in tex, line
    assert tex.count("\\begin{table}") == tex.count("\\end{table}") == md.count("\n### ")


def test_a_ci_cell_stacks_the_interval_under_the_value():
    from lmms_spatial.reports.tables import Cell, Column, Leaf, Row, Table

    table = Table("t", "T", "src", ["Acc"], rows=[Row("m", "model", [Cell(50.0, lo=25.0, hi=75.0)], model="m")],
                  columns=[Column("acc", "Acc", Leaf("t", "accuracy"))])  # fmt: skip
    row = "m & \\begin{tabular}[t]{@{}r@{}}50.0\\\\{\\scriptsize[25.0, 75.0]}\\end{tabular} \\\\"
    assert row in render.latex(table)


@needs_pdflatex
def test_a_report_with_a_delta_row_compiles(tmp_path, capsys):
    qwen = "pretrained=Qwen/Qwen2.5-VL-72B-Instruct"  # a model with published rows: a Δ row under its own
    write_run(tmp_path / "q", STAMP, qwen, odi_scores(0), mmsi_scores(0), model="qwen2_5_vl")
    out = tmp_path / "out"
    assert lmms_spatial(["report", str(tmp_path / "q"), "--out", str(out), "--no-plots", "--quiet"]) == 0
    assert "$\\Delta$ vs Qwen2.5-VL-72B" in (out / "report.tex").read_text()
    compile_tex(out)
