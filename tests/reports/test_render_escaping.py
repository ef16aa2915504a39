"""Model names and headers with markup characters render as text in Markdown, CSV and LaTeX."""

from __future__ import annotations

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


def test_every_declared_citation_has_an_arxiv_id_and_bibtex_and_the_shipped_five_are_cited():
    cited = citations()
    assert {"mmsi", "dori", "mmperspective", "odi_bench", "osr_bench"} <= set(cited)
    for citation in cited.values():
        # an arXiv preprint (@article, journal "arXiv preprint arXiv:ID") or a venue paper with its eprint
        assert citation.bibtex.startswith(("@article{", "@inproceedings{"))
        assert f"arXiv:{citation.arxiv}" in citation.bibtex or f"eprint    = {{{citation.arxiv}}}" in citation.bibtex
        assert citation.text().endswith(f"arXiv:{citation.arxiv}")


def test_the_reference_files_cite_the_paper_their_benchmark_module_declares():
    from lmms_spatial.reports import references

    declared = citations()
    for key in ("mmsi", "dori", "mmperspective", "odi_bench", "osr_bench"):
        cited = references.load(key)["citation"]
        assert (cited["text"], cited["arxiv"], cited["title"]) == (
            declared[key].text(),
            declared[key].arxiv,
            declared[key].title,
        ), key
