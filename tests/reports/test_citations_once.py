"""Each benchmark's BibTeX is written once, in ``tasks/<key>/CITATION.bib``; the report, the task README (where
there is one) and the hub card show that text, character for character (issue 43: it was written four times).
One case per benchmark key (``pytest -k <key>``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_spatial.data.registry import BENCHMARKS
from lmms_spatial.reports.citations import read_bibtex
from lmms_spatial.reports.layouts import benchmark_reports

REPO = Path(__file__).resolve().parents[2]
# the benchmarks whose folder holds the BibTeX file their BENCHMARK.citation names
CITED = [key for key, b in BENCHMARKS.items() if b.citation and (REPO / "tasks" / key / b.citation).is_file()]


def _bibtex_block(markdown: Path) -> str:
    """The text of the one ```bibtex block of a Markdown file."""
    text = markdown.read_text(encoding="utf-8")
    assert text.count("```bibtex") == 1, f"{markdown}: one ```bibtex block"
    return text.split("```bibtex", 1)[1].split("```", 1)[0].strip()


def test_the_shipped_five_keep_their_bibtex_in_their_folder():
    assert {"dori", "mmperspective", "mmsi", "odi_bench", "osr_bench"} <= set(CITED)


@pytest.mark.parametrize("key", list(BENCHMARKS))
def test_a_benchmark_citing_its_paper_keeps_the_bibtex_in_its_folder_and_one_with_the_file_cites(key):
    declared = benchmark_reports()[key].citation is not None
    where = f"tasks/{key}/{BENCHMARKS[key].citation or 'CITATION.bib'}"
    assert declared == (key in CITED), (
        f"write the BibTeX once, in {where} (BENCHMARK.citation names it), and cite it in tasks/{key}/report.py as "
        "CITATION = Citation(short, title, arxiv id, read_bibtex(__file__))"
    )


@pytest.mark.parametrize("key", CITED)
def test_the_report_the_task_readme_and_the_hub_card_show_the_one_bibtex(key):
    bib = (REPO / "tasks" / key / BENCHMARKS[key].citation).read_text(encoding="utf-8").strip()
    assert bib.startswith("@") and bib.endswith("}")
    assert benchmark_reports()[key].citation.bibtex == bib
    if (REPO / "tasks" / key / "README.md").is_file():  # a task README is optional (the scaffold writes none)
        assert _bibtex_block(REPO / "tasks" / key / "README.md") == bib, f"copy tasks/{key}/CITATION.bib into it"
    assert _bibtex_block(REPO / "hub_cards" / key / "README.md") == bib, f"copy tasks/{key}/CITATION.bib into its card"


def test_a_changed_copy_is_caught(tmp_path):
    """The comparison is exact: one changed year in a README's copy makes it differ from the file."""
    (tmp_path / "CITATION.bib").write_text("@article{x,\n  year = {2025}\n}\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("# X\n\n```bibtex\n@article{x,\n  year = {2026}\n}\n```\n", encoding="utf-8")
    assert read_bibtex(str(tmp_path / "report.py")) == "@article{x,\n  year = {2025}\n}"
    assert _bibtex_block(tmp_path / "README.md") != read_bibtex(str(tmp_path / "report.py"))
