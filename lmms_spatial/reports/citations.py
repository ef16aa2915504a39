"""How a benchmark's paper is cited in reports: :class:`Citation`.

Each benchmark declares its own (``CITATION`` in its report part, its BibTeX read from the file its
``BENCHMARK.citation`` names, ``tasks/<key>/CITATION.bib``, the one copy: the task README and hub card repeat it,
and a test keeps them equal; :func:`lmms_spatial.reports.layouts.citations` collects them); the shipped ones were
checked against the arXiv listings (titles, identifiers, authors).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def read_bibtex(module_file: str) -> str:
    """The BibTeX of the benchmark whose report module is ``module_file`` (``read_bibtex(__file__)``): the file its
    ``BENCHMARK.citation`` names in its folder, written once and read wherever it is shown."""
    from lmms_spatial.data.registry import BENCHMARKS

    folder = Path(module_file).parent
    bench = BENCHMARKS.get(folder.name)
    return (folder / (bench.citation if bench else "CITATION.bib")).read_text(encoding="utf-8").strip()


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
