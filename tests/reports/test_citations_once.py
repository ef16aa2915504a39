"""Each benchmark's BibTeX is written once, in ``tasks/<key>/CITATION.bib``; the report, the task README and the
hub card show that text, character for character (issue 43: it was written four times)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lmms_spatial.paths import benchmark_keys
from lmms_spatial.reports.citations import read_bibtex
from lmms_spatial.reports.layouts import benchmark_reports

REPO = Path(__file__).resolve().parents[2]
CITED = [key for key in benchmark_keys() if (REPO / "tasks" / key / "CITATION.bib").is_file()]


def _bibtex_block(markdown: Path) -> str:
    """The text of the one ```bibtex block of a Markdown file."""
    text = markdown.read_text(encoding="utf-8")
    assert text.count("```bibtex") == 1, f"{markdown}: one ```bibtex block"
    return text.split("```bibtex", 1)[1].split("```", 1)[0].strip()


def test_the_shipped_five_keep_their_bibtex_in_their_folder():
    assert CITED == ["dori", "mmperspective", "mmsi", "odi_bench", "osr_bench"]


@pytest.mark.parametrize("key", CITED)
def test_the_report_the_task_readme_and_the_hub_card_show_the_one_bibtex(key):
    bib = (REPO / "tasks" / key / "CITATION.bib").read_text(encoding="utf-8").strip()
    assert bib.startswith("@") and bib.endswith("}")
    assert benchmark_reports()[key].citation.bibtex == bib
    assert _bibtex_block(REPO / "tasks" / key / "README.md") == bib, f"copy tasks/{key}/CITATION.bib into its README"
    assert _bibtex_block(REPO / "hub_cards" / key / "README.md") == bib, f"copy tasks/{key}/CITATION.bib into its card"


def test_a_changed_copy_is_caught(tmp_path):
    """The comparison is exact: one changed year in a README's copy makes it differ from the file."""
    (tmp_path / "CITATION.bib").write_text("@article{x,\n  year = {2025}\n}\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("# X\n\n```bibtex\n@article{x,\n  year = {2026}\n}\n```\n", encoding="utf-8")
    assert read_bibtex(str(tmp_path / "report.py")) == "@article{x,\n  year = {2025}\n}"
    assert _bibtex_block(tmp_path / "README.md") != read_bibtex(str(tmp_path / "report.py"))
