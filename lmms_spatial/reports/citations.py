"""How a benchmark's paper is cited in reports: :class:`Citation`.

Each benchmark declares its own (``CITATION`` in ``lmms_spatial/reports/layouts/<key>.py``); the
shipped ones were checked against the arXiv listings (titles, identifiers, authors) on 2026-11-22.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


def __getattr__(name: str) -> Any:
    """``CITATIONS``: {benchmark key: its citation}, as each benchmark's report module declares it
    (``CITATION`` in ``lmms_spatial/reports/layouts/<key>.py``); computed on use, never listed here."""
    if name == "CITATIONS":
        from lmms_spatial.reports.layouts import citations

        return citations()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
