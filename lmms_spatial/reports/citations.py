"""How a benchmark's paper is cited in reports: :class:`Citation`.

Each benchmark declares its own (``CITATION`` in ``tasks/<key>/report.py``, its BibTeX read from
``tasks/<key>/CITATION.bib``, the one copy: the task README and hub card repeat it, and a test keeps them equal;
:func:`lmms_spatial.reports.layouts.citations` collects them); the shipped ones were checked against the
arXiv listings (titles, identifiers, authors) on 2026-11-22.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def read_bibtex(module_file: str) -> str:
    """The BibTeX in ``CITATION.bib`` beside a benchmark's report module (``read_bibtex(__file__)``): written once,
    in the benchmark's folder, and read wherever it is shown."""
    return (Path(module_file).parent / "CITATION.bib").read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class Citation:
    short: str  # "Yang et al., 2025"
    title: str
    arxiv: str
    bibtex: str

    @property
    def url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv}"

    def text(self) -> str:
        """One line for a report: authors, year, title, arXiv id."""
        return f"{self.short}, \u201c{self.title}\u201d, arXiv:{self.arxiv}"
