"""Tables as markdown, CSV (long format: one line per cell) and LaTeX (booktabs)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

from lmms_spatial.reports import reproduction
from lmms_spatial.reports.tables import Cell, Table


def _num(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def _digits(table: Table) -> int:
    """The decimals the paper prints (ODI-Bench 2, OSR-Bench 3, the others 1)."""
    return table.digits


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def footnotes(table: Table) -> dict[str, int]:
    """{reason: number} of the table's empty cells that say why, numbered in reading order."""
    numbers: dict[str, int] = {}
    for row in table.rows:
        for cell in row.cells:
            if cell.value is None and cell.note and cell.note not in numbers:
                numbers[cell.note] = len(numbers) + 1
    return numbers


def delta_words(cell: Cell, easi: bool = True) -> str:
    """What a Δ cell says besides Δ: ``in CI`` / ``outside CI`` (the paper's value against the run's 95% interval)
    and EASI's mark with its grade (``✅ ≤2.5``: the grade reads where no emoji font draws the mark; with
    ``easi=False`` the grade alone, ``EASI ≤2.5``, for formats without emoji)."""
    words = [] if cell.inside is None else ["in CI" if cell.inside else "outside CI"]
    if cell.grade is not None:
        words.append(f"{reproduction.easi_mark(cell.grade)} {cell.grade}" if easi else f"EASI {cell.grade}")
    return ", ".join(words)


def cell_text(cell: Cell, digits: int, ci: bool = True, mark: int | None = None) -> str:
    if cell.value is None or math.isnan(cell.value):
        return "-" + (str(mark).translate(_SUPERSCRIPT) if mark else "")
    if cell.inside is not None or cell.grade is not None:  # a Δ cell
        words = delta_words(cell)
        return f"{cell.value:+.{digits}f}" + (f" ({words})" if words else "")
    text = _num(cell.value, digits)
    if cell.err is not None:
        return f"{text} ± {_num(cell.err, digits)}"
    if ci and cell.lo is not None and cell.hi is not None:
        return f"{text} [{_num(cell.lo, digits)}, {_num(cell.hi, digits)}]"
    return text


# CommonMark lets any ASCII punctuation be backslash-escaped; these would end the cell (|), start
# emphasis, code, links or HTML, GitHub's strikethrough (~) or GitHub's math ($)
_MARKDOWN_SPECIAL = set("\\`*_|<>[]~$")


def _md(text: str) -> str:
    """Text for a Markdown table cell: characters that would end the cell or start markup escaped.

    By hand rather than through a table library: pytablewriter escapes only ``|`` and pandas'
    ``to_markdown`` nothing, and our rows need bold/italic labels and CI cells anyway.
    """
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIAL else ch for ch in " ".join(str(text).split()))


def _label(row_label: str, kind: str) -> str:
    return f"{row_label} (published)" if kind == "reference" else row_label


def markdown(table: Table, ci: bool = True) -> str:
    digits = _digits(table)
    lines = [f"### {table.title}", "", f"Source: {table.source}", ""]
    lines.append("| Model | " + " | ".join(_md(h) for h in table.headers) + " |")
    lines.append("|---|" + "---:|" * len(table.headers))
    marks = footnotes(table)
    for row in table.rows:
        label = _md(_label(row.label, row.kind))
        if row.kind in ("model", "unparsed", "chance", "delta"):
            label = f"**{label}**" if row.kind == "model" else f"*{label}*"
        texts = [cell_text(c, digits, ci, marks.get(c.note) if c.note else None) for c in row.cells]
        lines.append(f"| {label} | " + " | ".join(texts) + " |")
    lines.append("")
    if ci:
        lines.append("Model cells: value [bootstrap 95% CI] (per-document resampling); value ± std/sqrt(n) over seeds.")
    if any(row.kind == "delta" for row in table.rows):
        lines.append(DELTA_LEGEND)
    lines.extend(f"- {str(n).translate(_SUPERSCRIPT)} {reason}" for reason, n in marks.items())
    lines.extend(f"- {n}" for n in table.notes)
    return "\n".join(lines) + "\n"


DELTA_LEGEND = (
    "Δ rows: run − published row of the same model; in CI / outside CI: the published value against the run's 95% "
    "interval (bootstrap; mean ± 1.96·std/√n over seeds); EASI's marks by |Δ| in points: ✅ ≤ 2.5, ☑️ ≤ 5, ❌ > 5."
)


DELTA_LEGEND_TEXT = (  # for formats without emoji (LaTeX)
    "Δ rows: run − published row of the same model; in CI / outside CI: the published value against the run's 95% "
    "interval (bootstrap; mean ± 1.96·std/√n over seeds); EASI's grade of |Δ| in points: ≤2.5, ≤5, >5."
)


def csv_text(tables: Sequence[Table]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table", "row", "kind", "column", "value", "ci_low", "ci_high", "seed_error", "n_runs", "note"])
    for t in tables:
        for row in t.rows:
            for header, c in zip(t.headers, row.cells, strict=True):
                if c.value is None and not c.note:
                    continue
                note = delta_words(c, easi=False) if row.kind == "delta" else c.note or ""
                w.writerow([t.key, row.label, row.kind, header, _fmt(c.value), _fmt(c.lo), _fmt(c.hi), _fmt(c.err),
                            c.n if c.value is not None else "", note])  # fmt: skip
    return buf.getvalue()


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"


_LATEX_ESCAPES = {
    "&": r"\&",
    "%": r"\%",
    "_": r"\_",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    # in LaTeX's default OT1 font encoding these print as an em dash, ¡ and ¿
    "|": r"\textbar{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "–": "--",
    # what our notes and labels hold beyond ASCII, as pdflatex's default (OT1, utf8 input) can set them
    "—": "---",
    "“": "``",
    "”": "''",
    "‘": "`",
    "’": "'",
    "±": r"$\pm$",
    "×": r"$\times$",
    "√": r"$\surd$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "→": r"$\rightarrow$",
    "−": r"$-$",
    "Δ": r"$\Delta$",
    "·": r"$\cdot$",
    "…": r"\ldots{}",
    "°": r"\textdegree{}",
    "§": r"\S{}",
    "•": r"\textbullet{}",
    **{sup: f"\\textsuperscript{{{digit}}}" for digit, sup in zip("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹", strict=True)},
}


def _tex_char(ch: str) -> str:
    found = _LATEX_ESCAPES.get(ch)
    if found is not None:
        return found
    # Latin letters with accents are set by pdflatex's utf8 input; anything else (CJK, full-width forms) would
    # stop the compile ("Unicode character not set up for use with LaTeX"): a question mark shows it was there
    return ch if ord(ch) < 0x250 else "?"


def _tex(text: str) -> str:
    """Text for a LaTeX cell: the ten special characters (pandas' ``to_latex`` set) and ``| < >`` as text
    commands, the symbols our notes use as math or text commands; whitespace collapsed, since a blank line inside
    a ``tabular`` cell is an error."""
    return "".join(_tex_char(ch) for ch in " ".join(str(text).split()))


# What a document needs to \input report.tex: booktabs for the rules, graphicx to fit a wide or long table to the
# page. report_standalone.tex is such a document.
LATEX_PACKAGES = ("booktabs", "graphicx")
# a table wider than the text is scaled to its width, one taller than this share of the page to this height
MAX_HEIGHT = "0.75\\textheight"


def latex_header() -> str:
    """The comment at the top of report.tex: what it needs to compile inside your document."""
    return (
        "% lmms-spatial report: one table environment per paper table, to \\input into a LaTeX document.\n"
        f"% Needs in the preamble: \\usepackage{{{','.join(LATEX_PACKAGES)}}} (report_standalone.tex compiles as is).\n"
        "% Wide or long tables are scaled to fit the text width and 3/4 of the text height.\n"
    )


def latex_document(body_file: str) -> str:
    """A whole document around ``\\input{body_file}``: compiles with pdflatex as written."""
    return (
        "\\documentclass{article}\n"
        f"\\usepackage{{{','.join(LATEX_PACKAGES)}}}\n"
        "\\begin{document}\n"
        f"\\input{{{body_file}}}\n"
        "\\end{document}\n"
    )


def latex(table: Table, ci: bool = True) -> str:
    digits = _digits(table)

    marks = footnotes(table)

    def cell(c: Cell) -> str:
        if c.value is None:
            return "--" + (f"\\textsuperscript{{{marks[c.note]}}}" if c.note in marks else "")
        if c.inside is not None or c.grade is not None:  # a Δ cell: the words under it, as a CI is
            words, head = _tex(delta_words(c, easi=False)), f"{c.value:+.{digits}f}"
            if not words:
                return head
            return f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{head}\\\\{{\\scriptsize {words}}}\\end{{tabular}}"
        text = _num(c.value, digits)
        if c.err is not None:
            return f"{text}$\\pm${_num(c.err, digits)}"
        if ci and c.lo is not None:  # the interval under the value, smaller: half the width of one line
            interval = f"{{\\scriptsize[{_num(c.lo, digits)}, {_num(c.hi, digits)}]}}"
            return f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{text}\\\\{interval}\\end{{tabular}}"
        return text

    lines = [
        f"% {_tex(table.title)} -- source: {' '.join(table.source.split())}",  # one line: a comment
        "\\begin{table}[htbp]",
        "\\centering",
        f"\\caption{{{_tex(table.title)}}}",
        f"\\label{{tab:{table.key}}}",
        # the natural size unless wider than the text or taller than MAX_HEIGHT: then scaled to fit (graphicx)
        f"\\resizebox*{{!}}{{\\ifdim\\totalheight>{MAX_HEIGHT}{MAX_HEIGHT}\\else\\totalheight\\fi}}{{%",
        "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%",
        "\\begin{tabular}{l" + "r" * len(table.headers) + "}",
        "\\toprule",
        "Model & " + " & ".join(_tex(h) for h in table.headers) + " \\\\",
        "\\midrule",
    ]
    previous = None
    for row in table.rows:
        if previous is not None and (row.kind == "reference") != (previous == "reference"):
            lines.append("\\midrule")
        label = _tex(row.label)
        label = f"\\textit{{{label}}}" if row.kind in ("chance", "unparsed", "delta") else label
        lines.append(label + " & " + " & ".join(cell(c) for c in row.cells) + " \\\\")
        previous = row.kind
    lines += ["\\bottomrule", "\\end{tabular}}}"]
    # under the table, as in the markdown: what the cells hold, what each empty cell's mark means, the notes
    legend = []
    if ci:
        legend.append("Model cells: value, under it [bootstrap 95\\% CI] (per-document resampling); value $\\pm$ "
                      "std/$\\sqrt{n}$ over seeds.")  # fmt: skip
    if any(row.kind == "delta" for row in table.rows):
        legend.append(_tex(DELTA_LEGEND_TEXT))
    legend += [f"\\textsuperscript{{{n}}}~{_tex(reason)}" for reason, n in marks.items()]
    legend += [_tex(note) for note in table.notes]
    if legend:
        lines.append("\\par\\smallskip{\\footnotesize\\raggedright")
        lines.append("\\\\\n".join(legend) + "\\par}")
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"
