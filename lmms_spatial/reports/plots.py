"""PNG plots of the report tables (matplotlib, Agg backend, no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lmms_spatial.reports.tables import Row, Table

MAX_REFERENCES = 4  # reference rows in a bar chart: the best ones by the headline column, plus Random


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


def _pick_references(table: Table, headline: int) -> list[Row]:
    refs = [r for r in table.rows if r.kind == "reference" and r.cells[headline].value is not None]
    random = [r for r in refs if r.label.lower().startswith("random")]
    best = sorted((r for r in refs if r not in random), key=lambda r: -r.cells[headline].value)[:MAX_REFERENCES]
    return best + random


def bar_chart(table: Table, path: Path) -> Path | None:
    """User models (with CI / seed error bars) against published rows, per column of the table."""
    models = [r for r in table.rows if r.kind == "model"]
    if not models:
        return None
    columns = [i for i, c in enumerate(table.columns) if c.scaled]
    if not columns:
        return None
    headline = columns[0]
    refs = _pick_references(table, headline)
    chance = next((r for r in table.rows if r.kind == "chance"), None)
    plt = _plt()
    series = models + refs
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(min(13.0, max(7.0, 0.12 * len(columns) * len(series) + 3.0)), 4.2))
    for k, row in enumerate(series):
        xs = [j + (k - (len(series) - 1) / 2) * width for j in range(len(columns))]
        ys = [row.cells[i].value if row.cells[i].value is not None else 0.0 for i in columns]
        err = None
        if row.kind == "model":
            lo = [_lower(row, i) for i in columns]
            hi = [_upper(row, i) for i in columns]
            err = [lo, hi]
        hatch = None if row.kind == "model" else "//"
        label = row.label + (" (published)" if row.kind == "reference" else "")
        alpha = 1.0 if row.kind == "model" else 0.55
        ax.bar(xs, ys, width, yerr=err, capsize=2, label=label, hatch=hatch, alpha=alpha)
    if chance is not None:
        for j, i in enumerate(columns):
            v = chance.cells[i].value
            if v is not None:
                ax.hlines(v, j - 0.45, j + 0.45, colors="black", linestyles="dotted", linewidth=1)
        ax.plot([], [], "k:", label="chance level")
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels([table.headers[i] for i in columns], rotation=45, ha="right", fontsize=8)
    ax.set_title(table.title, fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _lower(row: Row, i: int) -> float:
    c = row.cells[i]
    if c.value is None:
        return 0.0
    if c.err is not None:
        return c.err
    return c.value - c.lo if c.lo is not None else 0.0


def _upper(row: Row, i: int) -> float:
    c = row.cells[i]
    if c.value is None:
        return 0.0
    if c.err is not None:
        return c.err
    return c.hi - c.value if c.hi is not None else 0.0


def scatter(
    points: Sequence[tuple[str, str, float, float]], path: Path, title: str, xlabel: str, ylabel: str, diagonal: bool
) -> Path | None:
    """``points``: (label, kind, x, y); user models in colour and labelled, published rows in grey."""
    if not points:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.0, 5.0))
    for label, kind, x, y in points:
        if kind == "model":
            ax.scatter([x], [y], s=60, marker="*", zorder=3)
            ax.annotate(label, (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
        else:
            ax.scatter([x], [y], s=18, color="grey", alpha=0.7)
            ax.annotate(label, (x, y), fontsize=5.5, color="dimgrey", xytext=(2, -6), textcoords="offset points")
    if diagonal:
        lo = min(min(p[2] for p in points), min(p[3] for p in points))
        hi = max(max(p[2] for p in points), max(p[3] for p in points))
        ax.plot([lo, hi], [lo, hi], "k--", linewidth=0.8, label="y = x")
        ax.legend(fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _column(table: Table, key: str) -> int:
    return next(i for i, c in enumerate(table.columns) if c.key == key)


def xy_points(tx: Table, kx: str, ty: Table, ky: str) -> list[tuple[str, str, float, float]]:
    """Rows present in both tables (same label and kind) with both values."""
    ix, iy = _column(tx, kx), _column(ty, ky)
    ys = {(r.label, r.kind): r.cells[iy].value for r in ty.rows if r.kind in ("model", "reference")}
    out = []
    for r in tx.rows:
        y = ys.get((r.label, r.kind))
        if r.kind in ("model", "reference") and r.cells[ix].value is not None and y is not None:
            out.append((r.label, r.kind, r.cells[ix].value, y))
    return out


def make_plots(tables: Sequence[Table], out: Path, scatters: Sequence[Scatter] = ()) -> list[Path]:
    """A bar chart per table with published rows, and each of ``scatters`` whose tables are there,
    written under ``out``; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    by_key = {t.key: t for t in tables}
    written = []
    for t in tables:
        if any(r.kind == "reference" for r in t.rows):
            written.append(bar_chart(t, out / f"{t.key}_bars.png"))
    for plot in scatters:
        if plot.x[0] in by_key and plot.y[0] in by_key:
            pts = xy_points(by_key[plot.x[0]], plot.x[1], by_key[plot.y[0]], plot.y[1])
            written.append(scatter(pts, out / f"{plot.name}.png", plot.title, plot.xlabel, plot.ylabel, plot.diagonal))
    return [p for p in written if p is not None]
