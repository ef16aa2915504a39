"""How a benchmark's paper is cited in reports: :class:`Citation`.

Each benchmark declares its own (``CITATION`` in ``tasks/<key>/report.py``;
:func:`lmms_spatial.reports.layouts.citations` collects them); the shipped ones were checked against the
arXiv listings (titles, identifiers, authors) on 2026-11-22.
"""

from __future__ import annotations

from dataclasses import dataclass


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
