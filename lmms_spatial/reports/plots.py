"""PNG plots of the report tables (matplotlib, Agg backend, no display needed), made to be pasted.

- Every score is plotted in % (OSR-Bench's tables print fractions, as its paper; its plots do not).
- Rows keep the tables' labels: the model's short label and its marks (``3/12`` partial, ``rule-based
  judge``), wrapped to fit; legends sit below the axes and the figure grows with them, so nothing is cut.
- A bar chart per table: grouped bars per column while the bars stay readable (few models); with many
  models, the table's headline column as one horizontal bar per row (sorted), and every column as an
  annotated heatmap (``<key>_heatmap.png``).
- Scatter plots place each label where it overlaps no other label (a leader line when it had to move).
- A model without a value is never dropped silently: the figure lists it, with the cell's reason.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lmms_spatial.reports.tables import Row, Table

MAX_REFERENCES = 4  # reference rows in a bar chart: the best ones by the headline column, plus Random
MAX_GROUPED_SERIES = 9  # rows in grouped bars; with more, headline bars (one per row) and a heatmap
HATCHES = ("//", "\\\\", "xx", "..", "--", "++")  # published rows, one pattern each
LABEL_WIDTH = 28  # characters per line of a label in a legend or on an axis
DPI = 150


@dataclass(frozen=True)
class Scatter:
    """One column against another (rows present in both tables), as a benchmark's report module declares it."""

    name: str  # the PNG's file name, without .png
    x: tuple[str, str]  # (table key, column key)
    y: tuple[str, str]
    title: str
    xlabel: str
    ylabel: str
    diagonal: bool = False  # draw y = x


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _wrap(text: str, width: int = LABEL_WIDTH) -> str:
    return "\n".join(textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=True)) or text


def _colours(n: int) -> list:
    """``n`` distinguishable colours (tab10, then tab20 and tab20b for more series)."""
    import matplotlib

    names = ["tab10"] if n <= 10 else ["tab20", "tab20b", "tab20c"]
    pool = [c for name in names for c in matplotlib.colormaps[name].colors]
    return [pool[i % len(pool)] for i in range(n)]


def _dark(colour) -> tuple[float, float, float]:
    """``colour`` darkened enough to read as text on white (tab20's pale shades are not)."""
    r, g, b = colour[:3]
    factor = min(1.0, 0.55 / max(0.299 * r + 0.587 * g + 0.114 * b, 1e-6))
    return (r * factor, g * factor, b * factor)


def percent(table: Table, i: int, value: float | None) -> float | None:
    """A cell of column ``i`` in % (a scaled column's value is ``score * table.scale``)."""
    if value is None or not table.columns[i].scaled:
        return value
    return value * 100.0 / table.scale


def _pick_references(table: Table, headline: int) -> list[Row]:
    refs = [r for r in table.rows if r.kind == "reference" and r.cells[headline].value is not None]
    random = [r for r in refs if r.label.lower().startswith("random")]
    best = sorted((r for r in refs if r not in random), key=lambda r: -r.cells[headline].value)[:MAX_REFERENCES]
    return best + random


def _label(row: Row) -> str:
    return row.label + (" (published)" if row.kind == "reference" else "")


def _missing(table: Table, rows: Sequence[Row], columns: Sequence[int]) -> list[str]:
    """One line per model row with an empty cell among ``columns``: its label, then each reason after the
    columns it empties (``a, b (no map stage); c (no such question)``)."""
    out = []
    for row in rows:
        empty = [i for i in columns if row.cells[i].value is None]
        if not empty:
            continue
        by_reason: dict[str | None, list[str]] = {}
        for i in empty:
            by_reason.setdefault(row.cells[i].note or None, []).append(table.headers[i])
        if len(empty) == len(columns) > 1 and len(by_reason) == 1:
            by_reason = {reason: ["every column"] for reason in by_reason}
        parts = [", ".join(cols) + (f" ({reason})" if reason else "") for reason, cols in by_reason.items()]
        out.append(f"{row.label}: no value for " + "; ".join(parts))
    return out


def _note(fig, ax, blocks: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Titled blocks of lines just under the axes and their labels (inside the saved figure: it is saved
    with a tight bounding box)."""
    text = "\n\n".join(f"{title}\n" + "\n".join(_wrap(line, 110) for line in lines) for title, lines in blocks if lines)
    if not text:
        return
    renderer = fig.canvas.get_renderer()
    bottom = ax.get_tightbbox(renderer).transformed(fig.transFigure.inverted()).y0
    fig.text(0.02, bottom - 0.01, text, ha="left", va="top", fontsize=7, color="dimgrey")


def _save(fig, plt, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return path


def bar_chart(table: Table, path: Path) -> Path | None:
    """User models (with CI / seed error bars) against published rows, in %."""
    models = [r for r in table.rows if r.kind == "model"]
    columns = [i for i, c in enumerate(table.columns) if c.scaled]
    if not models or not columns:
        return None
    refs = _pick_references(table, columns[0])
    if len(models) + len(refs) <= MAX_GROUPED_SERIES:
        return _grouped_bars(table, path, models, refs, columns)
    return _headline_bars(table, path, models, refs, columns[0])


def _chance(table: Table) -> Row | None:
    return next((r for r in table.rows if r.kind == "chance"), None)


def _errors(table: Table, row: Row, columns: Sequence[int]) -> list[list[float]]:
    lo, hi = [], []
    for i in columns:
        c, v = row.cells[i], percent(table, i, row.cells[i].value)
        if v is None:
            lo.append(0.0), hi.append(0.0)
        elif c.err is not None:
            e = percent(table, i, c.err)
            lo.append(e), hi.append(e)
        elif c.lo is not None and c.hi is not None:
            lo.append(v - percent(table, i, c.lo)), hi.append(percent(table, i, c.hi) - v)
        else:
            lo.append(0.0), hi.append(0.0)
    return [lo, hi]


ZERO_LABEL = "0"


def _mark_zero(ax, at: float, width: float, colour, *, vertical: bool) -> None:
    """A score of exactly 0 draws a bar of no height, which looks like a model that did not run (a missing value
    draws nothing and is listed under the plot): a thick stroke at the axis in the bar's colour, labelled 0."""
    if vertical:
        ax.plot([at - width / 2, at + width / 2], [0, 0], color=colour, linewidth=3, solid_capstyle="butt",
                 clip_on=False, zorder=3)  # fmt: skip
        ax.annotate(ZERO_LABEL, (at, 0), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                    fontsize=6)  # fmt: skip
    else:
        ax.plot([0, 0], [at - width / 2, at + width / 2], color=colour, linewidth=3, solid_capstyle="butt",
                clip_on=False, zorder=3)  # fmt: skip
        ax.annotate(ZERO_LABEL, (0, at), xytext=(3, 0), textcoords="offset points", ha="left", va="center",
                    fontsize=6)  # fmt: skip


def _grouped_bars(table: Table, path: Path, models: list[Row], refs: list[Row], columns: list[int]) -> Path:
    plt = _plt()
    series = models + refs
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(min(18.0, max(7.0, 0.16 * len(columns) * len(series) + 2.5)), 4.6))
    colours = _colours(len(models))
    for k, row in enumerate(series):
        xs = [j + (k - (len(series) - 1) / 2) * width for j in range(len(columns))]
        ys = [percent(table, i, row.cells[i].value) for i in columns]
        ys = [float("nan") if y is None else y for y in ys]  # no bar, never a bar of 0
        ours = row.kind == "model"
        ax.bar(xs, ys, width, yerr=_errors(table, row, columns) if ours else None, capsize=2, label=_wrap(_label(row)),
               color=colours[k] if ours else "whitesmoke", edgecolor="dimgrey" if not ours else None,
               hatch=None if ours else HATCHES[(k - len(models)) % len(HATCHES)], linewidth=0.5)  # fmt: skip
        for x, y in zip(xs, ys, strict=True):
            if y == 0:
                _mark_zero(ax, x, width, colours[k] if ours else "dimgrey", vertical=True)
    chance = _chance(table)
    if chance is not None:
        for j, i in enumerate(columns):
            v = percent(table, i, chance.cells[i].value)
            if v is not None:
                ax.hlines(v, j - 0.45, j + 0.45, colors="black", linestyles="dotted", linewidth=1)
        ax.plot([], [], "k:", label="chance level")
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels([_wrap(table.headers[i], 20) for i in columns], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("score (%)")
    ax.set_ylim(0, max(100.0, ax.get_ylim()[1]))
    ax.set_title(_wrap(table.title, 90), fontsize=10)
    ax.grid(axis="y", linewidth=0.3, alpha=0.6)
    ncol = max(1, min(4, int(fig.get_figwidth() // 2.6)))
    ax.legend(fontsize=7, ncol=ncol, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    _note(fig, ax, [("Not plotted:", _missing(table, models, columns))])
    return _save(fig, plt, path)


def _headline_bars(table: Table, path: Path, models: list[Row], refs: list[Row], i: int) -> Path:
    """One horizontal bar per row for the table's headline column, best first."""
    plt = _plt()
    shown = [r for r in models + refs if r.cells[i].value is not None]
    shown.sort(key=lambda r: percent(table, i, r.cells[i].value))
    fig, ax = plt.subplots(figsize=(8.0, max(3.0, 0.32 * len(shown) + 1.6)))
    colours = dict(zip([id(r) for r in models], _colours(len(models)), strict=True))
    ys = range(len(shown))
    values = [percent(table, i, r.cells[i].value) for r in shown]
    ax.barh(list(ys), values, height=0.7, color=[colours.get(id(r), "whitesmoke") for r in shown],
            edgecolor=["none" if r.kind == "model" else "dimgrey" for r in shown], linewidth=0.5)  # fmt: skip
    for bar, row in zip(list(ax.patches), shown, strict=True):
        if row.kind == "reference":
            bar.set_hatch("//")
    for y, (value, row) in enumerate(zip(values, shown, strict=True)):
        if value == 0:
            _mark_zero(ax, y, 0.7, colours.get(id(row), "dimgrey"), vertical=False)
    ours = [k for k, r in enumerate(shown) if r.kind == "model"]
    if ours:  # CI / seed error bars, on our rows only
        errors = _errors_rows(table, [shown[k] for k in ours], i)
        ax.errorbar([values[k] for k in ours], ours, xerr=errors, fmt="none", ecolor="black", capsize=2, linewidth=1)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([_wrap(_label(r), 40) for r in shown], fontsize=7)
    ax.set_ylabel("model")
    ax.set_xlabel(f"{table.headers[i]} (%)")
    ax.set_xlim(0, max(100.0, ax.get_xlim()[1]))
    chance = _chance(table)
    if chance is not None and chance.cells[i].value is not None:
        ax.axvline(percent(table, i, chance.cells[i].value), color="black", linestyle="dotted", linewidth=1,
                   label="chance level")  # fmt: skip
        ax.legend(fontsize=7, loc="lower right")
    ax.set_title(_wrap(f"{table.title}: {table.headers[i]} (every column: {table.key}_heatmap.png)", 90), fontsize=10)
    ax.grid(axis="x", linewidth=0.3, alpha=0.6)
    _note(fig, ax, [("Not plotted:", _missing(table, models, [i]))])
    return _save(fig, plt, path)


def _errors_rows(table: Table, rows: Sequence[Row], i: int) -> list[list[float]]:
    pairs = [_errors(table, r, [i]) if r.kind == "model" else [[0.0], [0.0]] for r in rows]
    return [[p[0][0] for p in pairs], [p[1][0] for p in pairs]]


def heatmap(table: Table, path: Path) -> Path | None:
    """Every scaled column of every model row (and the published rows), values written in the cells, in %."""
    columns = [i for i, c in enumerate(table.columns) if c.scaled]
    rows = [r for r in table.rows if r.kind in ("model", "reference", "chance")]
    if not columns or not any(r.kind == "model" for r in rows):
        return None
    import numpy as np

    plt = _plt()
    data = np.array([[percent(table, i, r.cells[i].value) if r.cells[i].value is not None else np.nan
                      for i in columns] for r in rows], dtype=float)  # fmt: skip
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * len(columns) + 3.5), max(3.0, 0.3 * len(rows) + 1.8)))
    image = ax.imshow(np.ma.masked_invalid(data), aspect="auto", cmap="viridis", vmin=0, vmax=100)
    for y in range(len(rows)):
        for x in range(len(columns)):
            v = data[y, x]
            text = "–" if np.isnan(v) else f"{v:.1f}"
            colour = "black" if np.isnan(v) or v > 60 else "white"
            ax.text(x, y, text, ha="center", va="center", fontsize=6, color=colour)
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels([_wrap(table.headers[i], 14) for i in columns], rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([_wrap(_label(r), 40) for r in rows], fontsize=7)
    for tick, row in zip(ax.get_yticklabels(), rows, strict=True):
        tick.set_color("black" if row.kind == "model" else "dimgrey")
    ax.set_title(_wrap(f"{table.title} (%, – no value)", 90), fontsize=10)
    fig.colorbar(image, ax=ax, label="score (%)", fraction=0.04, pad=0.02)
    _note(fig, ax, [("No value (–):", _missing(table, [r for r in rows if r.kind == "model"], columns))])
    return _save(fig, plt, path)


def _place_labels(ax, fig, points: Sequence[tuple[float, float]], labels: Sequence[str], styles: Sequence[dict]):
    """Each label next to its point where it overlaps no label placed before and no point (greedy, in
    display coordinates); a leader line when it had to move away. Labels that find no free place get
    numbers, listed under the plot; returns those lines."""
    renderer = fig.canvas.get_renderer()
    xy_display = ax.transData.transform(points) if len(points) else []
    point_boxes = [(x - 4, y - 4, x + 4, y + 4) for x, y in xy_display]
    placed: list[tuple[float, float, float, float]] = []
    offsets = [(5, 4), (5, -12), (-5, 4), (-5, -12), (0, 10), (0, -16)]
    offsets += [
        (dx * r, dy * r) for r in (2, 3, 4, 6) for dx, dy in ((6, 4), (6, -8), (-6, 4), (-6, -8), (0, 8), (0, -10))
    ]
    numbered = []
    for (x, y), label, style in zip(points, labels, styles, strict=True):
        for dx, dy in offsets:
            ha = "left" if dx > 0 else "right" if dx < 0 else "center"
            text = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va="bottom", **style)
            box = text.get_window_extent(renderer)
            rect = (box.x0, box.y0, box.x1, box.y1)
            inside = ax.get_window_extent(renderer)
            fits = inside.x0 <= rect[0] and rect[2] <= inside.x1 and inside.y0 <= rect[1] and rect[3] <= inside.y1
            if fits and not any(_overlap(rect, other) for other in placed + point_boxes):
                placed.append(rect)
                if abs(dx) > 6 or abs(dy) > 16:  # moved away: a leader line from the label to its point
                    ax.annotate("", (x, y), xytext=(dx, dy), textcoords="offset points",
                                arrowprops={"arrowstyle": "-", "color": "grey", "linewidth": 0.5})  # fmt: skip
                break
            text.remove()
        else:
            number = str(len(numbered) + 1)
            ax.annotate(number, (x, y), xytext=(3, 3), textcoords="offset points", **style)
            numbered.append(f"{number}: {label}")
    return numbered


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def scatter(
    points: Sequence[tuple[str, str, float, float]], path: Path, title: str, xlabel: str, ylabel: str, diagonal: bool,
    missing: Sequence[str] = (),
) -> Path | None:  # fmt: skip
    """``points``: (label, kind, x, y) in %; user models in colour, published rows in grey; ``missing``:
    the models left out (no value on an axis), listed under the plot."""
    if not points and not missing:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.0, 7.0))
    models = [p for p in points if p[1] == "model"]
    colours = _colours(len(models))
    for (_, _, x, y), colour in zip(models, colours, strict=True):
        ax.scatter([x], [y], s=70, marker="*", color=colour, zorder=3)
    refs = [p for p in points if p[1] != "model"]
    if refs:
        ax.scatter([p[2] for p in refs], [p[3] for p in refs], s=18, color="grey", alpha=0.7, zorder=2)
    values = [v for p in points for v in (p[2], p[3])]
    lo, hi = (min(values), max(values)) if values else (0.0, 100.0)
    pad = max(2.0, 0.08 * (hi - lo))
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    if diagonal:
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k--", linewidth=0.8, label="y = x", zorder=1)
        ax.legend(fontsize=7, loc="lower right")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(_wrap(title, 80), fontsize=10)
    ax.grid(linewidth=0.3, alpha=0.6)
    styles = [{"fontsize": 7, "color": _dark(c), "fontweight": "bold"} for c in colours]
    styles += [{"fontsize": 6, "color": "dimgrey"} for _ in refs]
    numbered = _place_labels(ax, fig, [(p[2], p[3]) for p in models + refs],
                             [_wrap(p[0], 32) + (" (published)" if p[1] != "model" else "") for p in models + refs],
                             styles)  # fmt: skip
    _note(fig, ax, [("Numbered points:", numbered), ("Not plotted:", list(missing))])
    return _save(fig, plt, path)


def _column(table: Table, key: str) -> int:
    return next(i for i, c in enumerate(table.columns) if c.key == key)


def _keys(table: Table) -> dict[int, tuple]:
    """{id(row): what the row is, the same in any table}: a run's row by the runs behind it (their results files)
    and its extra row's mark after the main row's model (" soft acc."); a published row by its label. Two rows of
    one model from different runs (a partial run and a whole one) are two rows, never one."""
    keys: dict[int, tuple] = {}
    mains: dict[tuple[str, ...], str] = {}  # runs -> the model of their first (main) row
    for row in table.rows:
        if not row.runs:
            keys[id(row)] = (row.model or row.label, row.kind)
            continue
        runs = tuple(sorted(str(run.results_file) for run in row.runs))
        main = mains.setdefault(runs, row.model)
        keys[id(row)] = (runs, row.kind, row.model[len(main) :] if row.model.startswith(main) else row.model)
    return keys


def xy_points(tx: Table, kx: str, ty: Table, ky: str) -> tuple[list[tuple[str, str, float, float]], list[str]]:
    """Rows present in both tables (the same runs, or the same published label) with both values, in %; and one
    line per model row left out, naming the missing value and why."""
    ix, iy = _column(tx, kx), _column(ty, ky)
    kx_of, ky_of = _keys(tx), _keys(ty)
    ys = {ky_of[id(r)]: r for r in ty.rows if r.kind in ("model", "reference")}
    out, missing = [], []
    for r in tx.rows:
        if r.kind not in ("model", "reference"):
            continue
        other = ys.get(kx_of[id(r)])
        x = percent(tx, ix, r.cells[ix].value)
        y = percent(ty, iy, other.cells[iy].value) if other is not None else None
        label = max((r.label, other.label if other is not None else ""), key=len)
        if x is not None and y is not None:
            out.append((label, r.kind, x, y))
        elif r.kind == "model":
            gaps = []
            if x is None:
                gaps.append(f"{tx.headers[ix]} of {tx.key}" + (f" ({r.cells[ix].note})" if r.cells[ix].note else ""))
            if y is None:
                note = other.cells[iy].note if other is not None else f"not in {ty.key}"
                gaps.append(f"{ty.headers[iy]} of {ty.key}" + (f" ({note})" if note else ""))
            missing.append(f"{label}: no {' and no '.join(gaps)}")
    known = set(kx_of.values())
    missing += [f"{r.label}: not in {tx.key}" for r in ty.rows if r.kind == "model" and ky_of[id(r)] not in known]
    return out, missing


def make_plots(tables: Sequence[Table], out: Path, scatters: Sequence[Scatter] = ()) -> list[Path]:
    """A bar chart per table with published rows (and a heatmap when it has many rows), and each of
    ``scatters`` whose tables are there, written under ``out``; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    by_key = {t.key: t for t in tables}
    written = []
    for t in tables:
        if any(r.kind == "reference" for r in t.rows):
            written.append(bar_chart(t, out / f"{t.key}_bars.png"))
            columns = [i for i, c in enumerate(t.columns) if c.scaled]
            series = [r for r in t.rows if r.kind == "model"] + _pick_references(t, columns[0]) if columns else []
            if len(series) > MAX_GROUPED_SERIES:
                written.append(heatmap(t, out / f"{t.key}_heatmap.png"))
    for plot in scatters:
        if plot.x[0] in by_key and plot.y[0] in by_key:
            pts, missing = xy_points(by_key[plot.x[0]], plot.x[1], by_key[plot.y[0]], plot.y[1])
            written.append(scatter(pts, out / f"{plot.name}.png", plot.title, plot.xlabel, plot.ylabel, plot.diagonal,
                                   missing))  # fmt: skip
    return [p for p in written if p is not None]
