"""Model names and headers with markup characters render as text in Markdown, CSV and LaTeX; each benchmark's
citation (``pytest -k <key>``) is one BibTeX entry whose title and arXiv id are its ``Citation``'s."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lmms_spatial.data.registry import BENCHMARKS
from lmms_spatial.paths import tasks_dir
from lmms_spatial.reports import render
from lmms_spatial.reports.layouts import citations
from lmms_spatial.reports.tables import Cell, Row, Table

NAME = "a_b~c^d\\e|f*g"


def _table() -> Table:
    return Table("t", "T", "src", ["Acc_1"], rows=[Row(NAME, "model", [Cell(0.5)])])


def test_markdown_escapes_what_would_split_the_cell_or_start_markup():
    text = render.markdown(_table(), ci=False)
    assert "| **a\\_b\\~c^d\\\\e\\|f\\*g** | 0.5 |" in text
    assert "| Model | Acc\\_1 |" in text


def test_latex_escapes_tilde_caret_backslash_and_bar():
    text = render.latex(_table(), ci=False)
    assert "a\\_b\\textasciitilde{}c\\textasciicircum{}d\\textbackslash{}e\\textbar{}f*g & 0.5 \\\\" in text
    assert "Model & Acc\\_1 \\\\" in text


def _row_text(render_table, name: str) -> str:
    table = Table("t", "T", "src", ["Acc"], rows=[Row(name, "model", [Cell(0.5)])])
    return next(line for line in render_table(table, ci=False).splitlines() if "0.5" in line)


def test_latex_escapes_every_special_character_and_keeps_a_cell_on_one_line():
    line = _row_text(render.latex, "&%$#_{}<>\n\nx")
    assert line == "\\&\\%\\$\\#\\_\\{\\}\\textless{}\\textgreater{} x & 0.5 \\\\"


def test_markdown_escapes_math_dollars_brackets_and_html():
    assert _row_text(render.markdown, "$x$ [a](b) <i>`c`") == "| **\\$x\\$ \\[a\\](b) \\<i\\>\\`c\\`** | 0.5 |"


def test_csv_keeps_the_name_as_it_is():
    assert f"t,{NAME},model,Acc_1,0.5" in render.csv_text([_table()]).splitlines()[1]


# ---------------------------------------------------------------------------------------------
# each benchmark's citation: one BibTeX entry of any type, whatever its field order and spacing
# ---------------------------------------------------------------------------------------------

ENTRY_TYPES = {
    "article", "book", "booklet", "conference", "inbook", "incollection", "inproceedings", "manual",
    "mastersthesis", "misc", "phdthesis", "proceedings", "techreport", "unpublished",  # BibTeX's
    "online", "report", "thesis", "software", "dataset",  # biblatex's, read by most tools
}  # fmt: skip
_ENTRY = re.compile(r"@\s*(\w+)\s*\{\s*([^,\s{}]+)\s*,")
_FIELD = re.compile(r"\s*([A-Za-z][\w-]*)\s*=\s*")


def _closing(text: str, start: int) -> int:
    """The index after the ``}`` closing the ``{`` at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    raise ValueError(f"unbalanced braces from {text[start : start + 30]!r}")


def _value(text: str, at: int) -> tuple[str, int]:
    """The field value at ``at`` (``{...}``, ``"..."`` or a bare word/number) and the index after it."""
    if text.startswith("{", at):
        end = _closing(text, at)
        return text[at + 1 : end - 1], end
    if text.startswith('"', at):
        end = text.index('"', at + 1) + 1
        return text[at + 1 : end - 1], end
    bare = re.match(r"[\w.:/-]+", text[at:])
    if not bare:
        raise ValueError(f"no value at {text[at : at + 30]!r}")
    return bare.group(), at + bare.end()


def bibtex_entries(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """(type, key, {field name in lower case: value without braces, spaces collapsed}) of each entry of
    ``text``; raises ValueError on a malformed one."""
    entries = []
    for match in _ENTRY.finditer(text):
        end = _closing(text, text.index("{", match.start()))
        body, at, fields = text[: end - 1], match.end(), {}
        while at < len(body) and body[at:].strip(" \t\n,"):
            field = _FIELD.match(body, at)
            if not field:
                raise ValueError(f"entry {match.group(2)}: expected 'name = value' at {body[at : at + 30]!r}")
            value, at = _value(body, field.end())
            fields[field.group(1).lower()] = " ".join(value.replace("{", "").replace("}", "").split())
            at = re.match(r"\s*,?", body[at:]).end() + at
        entries.append((match.group(1).lower(), match.group(2), fields))
    return entries


def test_the_bibtex_reader_takes_any_entry_type_field_order_and_spacing():
    text = '@misc{ zed2026,\n eprint={2601.00001},title = "{Zed}: a {B}ench",\n  year=2026 }'
    assert bibtex_entries(text) == [
        ("misc", "zed2026", {"eprint": "2601.00001", "title": "Zed: a Bench", "year": "2026"})
    ]
    with pytest.raises(ValueError, match="unbalanced"):
        bibtex_entries("@article{x, title = {Zed}")


def test_the_shipped_five_are_cited():
    assert {"mmsi", "dori", "mmperspective", "odi_bench", "osr_bench"} <= set(citations())


@pytest.mark.parametrize("key", [pytest.param(key, id=key) for key in citations()])
def test_the_citation_is_one_bibtex_entry_with_its_title_and_arxiv_id(key):
    citation = citations()[key]
    entries = bibtex_entries(citation.bibtex)
    assert len(entries) == 1, f"tasks/{key}: the BibTeX holds one entry, not {len(entries)}"
    kind, cite_key, fields = entries[0]
    assert kind in ENTRY_TYPES and cite_key, f"@{kind}{{{cite_key},: a BibTeX entry type and a citation key"
    assert fields.get("title") == " ".join(citation.title.split()), "the BibTeX's title is the Citation's"
    if citation.arxiv:  # in eprint, journal ("arXiv preprint arXiv:ID"), note or url: any field
        assert any(citation.arxiv in value for value in fields.values()), f"no field names arXiv:{citation.arxiv}"
        assert citation.text().endswith(f"arXiv:{citation.arxiv}")


@pytest.mark.parametrize("key", [k for k, b in BENCHMARKS.items() if (Path(tasks_dir()) / k / b.published).is_file()])
def test_the_published_rows_cite_the_paper_the_report_declares(key):
    from lmms_spatial.reports import references

    declared = citations().get(key)
    assert declared is not None, f"tasks/{key}/report.py: CITATION, the paper its published rows come from"
    cited = references.load(key)["citation"]
    assert (cited["text"], cited["arxiv"], cited["title"]) == (declared.text(), declared.arxiv, declared.title)
