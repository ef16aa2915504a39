"""``lmms-spatial report RESULTS [...]``: the papers' tables for your runs, next to the published rows.

For every benchmark found in the results: the paper's table layouts, the runs' rows with
bootstrap 95% CIs (several seeds of one model: mean ± std/sqrt(n)), unparsed rate and chance
level, then the published rows (``tasks/<key>/published.json``). Plus each benchmark's analyses
from the samples files (those that ask the LLM judge only when the user allows it) and PNG plots.

What each benchmark contributes (tables, citation, analyses, plots) is declared by its own module,
``tasks/<key>/report.py``; a benchmark without one gets a table per task from its
YAML's ``metric_list`` (:mod:`lmms_spatial.reports.layouts`). This module only assembles them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lmms_spatial import environment
from lmms_spatial.progress import progress
from lmms_spatial.reports import render
from lmms_spatial.reports.layouts import all_layouts, benchmark_reports, citations
from lmms_spatial.reports.runs import Run, count_of, distinct_runs, load_runs, skipped_warnings
from lmms_spatial.reports.tables import SEED, Layout, Table, build_table

FORMATS = ("md", "csv", "latex")


def layouts() -> list[Layout]:
    """Every benchmark's tables, as its own module declares them (:mod:`lmms_spatial.reports.layouts`)."""
    return all_layouts()


def build_tables(runs: Sequence[Run], *, seed: int = SEED, ci: bool = True) -> list[Table]:
    """Every paper table some run has tasks for (bootstrap CIs over the samples lines: the slow part), each citing
    its benchmark's paper."""
    candidates = layouts()
    cited = citations()
    bar = progress(candidates, total=len(candidates), desc="report: tables", unit="table")
    return [
        t
        for layout in bar
        if (t := build_table(layout, runs, seed=seed, ci=ci, citation=cited.get(layout.benchmark))) is not None
    ]


def analyses(runs: Sequence[Run], judge_analyses: bool = False) -> list[str]:
    """Each run's analyses from its samples files, as the benchmarks' report modules write them
    (``judge_analyses``: analyses that ask the LLM judge may run)."""
    writers = [r.analysis for r in benchmark_reports().values() if r.analysis is not None]
    out = []
    for run in progress(runs, total=len(runs), desc="report: analyses", unit="run"):
        found = [text for write in writers if (text := write(run, judge_analyses))]
        if found:
            out.append(f"#### {run.label} ({run.results_file.name})\n\n" + "\n\n".join(found))
    return out


def build(
    paths: Sequence[Path | str], labels: list[str] | None = None, seed: int = SEED, judge_analyses: bool = False
) -> dict[str, Any]:
    """Every run read once (results, samples, conditions), runs given twice counted once, then the tables
    and analyses from those values."""
    runs, warnings = distinct_runs(load_runs(paths, labels))
    tables = build_tables(runs, seed=seed)
    warnings += list(dict.fromkeys(w for t in tables for w in t.warnings))
    warnings += skipped_warnings(runs)
    skipped = skipped_rows(tables)  # each also a note of its table
    return {
        "runs": runs,
        "tables": tables,
        "analyses": analyses(runs, judge_analyses),
        "judge_analyses": judge_analyses,
        "warnings": warnings,
        "skipped": skipped,
    }


def skipped_rows(tables: Sequence[Table]) -> list[tuple[str, str, int, str]]:
    """(table, row, count, note) of each model row whose runs' samples files of the table's tasks held lines that
    are not samples; the note is added to the table's notes (report.md, report.tex, the view), the rows to
    report.csv (kind ``skipped_lines``, the count as its value)."""
    found = []
    for table in tables:
        tasks = set().union(*(c.spec.tasks() for c in table.columns if c.spec is not None))
        seen = set()
        for row in table.rows:
            who = tuple(id(r) for r in row.runs)
            if row.kind != "model" or not row.runs or who in seen:
                continue
            seen.add(who)
            n = sum(len(r.skipped_in(tasks)) for r in row.runs)
            if n:
                note = (f"{row.label}: {count_of(n, 'line')} of its samples files skipped, not samples (named in "
                        "the warnings): its CIs and the values read from samples lines leave them out")  # fmt: skip
                table.notes.append(note)
                found.append((table.key, row.label, n, note))
    return found


def describe_run(run: Run) -> str:
    """One line: the label, the model and its arguments, documents, judge and map, the file."""
    c = run.conditions
    tasks = [t for t in c.tasks.values() if not t.empty]
    args = c.model.args_without_seed()
    parts = [f"{c.model.name}" + (f" ({args})" if args else "")]
    n, of = [t.documents for t in tasks], [t.of for t in tasks]
    if tasks and None not in n and None not in of:
        partial = [t for t in tasks if t.partial]
        parts.append(f"{sum(n)}/{sum(of)} documents" + (f" ({len(partial)} of {len(tasks)} tasks partial)"
                                                       if partial else ""))  # fmt: skip
    judges = sorted({t.judge.short() for t in tasks if t.judge is not None})
    if judges:
        parts.append("judge: " + "; ".join(judges))
    maps = sorted({t.map_source for t in tasks if t.map_source is not None})
    if maps:
        parts.append("map: " + ", ".join(maps))
    seed = c.describe_seed(c.tasks)
    if seed != "seed unknown":
        parts.append(seed)
    parts.append(_software(c.environment))
    source = "" if c.recorded else " (conditions derived from an older results file)"
    return f"- {run.label}: {', '.join(parts)}; `{run.results_file}`{source}"


def _software(recorded: Mapping[str, Any] | None) -> str:
    """``lmms-spatial 0.1.0 @1145c25, lmms-eval 0.7.3, transformers 5.24.0, torch 2.14.1``."""
    if not recorded:
        return environment.describe(None)
    own = recorded.get(environment.OWN) or {}
    commit = f" @{str(own['commit'])[:7]}{'+' if own.get('dirty') else ''}" if own.get("commit") else ""
    return f"lmms-spatial {own.get('version') or '?'}{commit}, {environment.describe(recorded)}"


def markdown_report(report: dict[str, Any], plots: Sequence[Path] = ()) -> str:
    runs: list[Run] = report["runs"]
    lines = ["# lmms-spatial report", "", "Runs:", ""]
    lines += [describe_run(r) for r in runs]
    lines.append("")
    if report.get("warnings"):
        lines += ["Warnings:", ""] + [f"- {w}" for w in report["warnings"]] + [""]
    lines += [render.markdown(t) for t in report["tables"]]
    if report["analyses"]:
        lines += ["## Analyses (from samples files)", ""] + report["analyses"] + [""]
    for part in benchmark_reports().values():
        line = part.hint(runs, bool(report.get("judge_analyses"))) if part.hint is not None else None
        if line:
            lines += [line, ""]
    if plots:
        lines += ["## Plots", ""] + [f"- `{p}`" for p in plots] + [""]
    return "\n".join(lines)


def _skipped_csv(rows: Sequence[tuple[str, str, int, str]]) -> str:
    """report.csv's rows of :func:`skipped_rows`, in its columns."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for key, label, n, note in rows:
        writer.writerow([key, label, "skipped_lines", "", n, "", "", "", "", note])
    return buf.getvalue()


def write(report: dict[str, Any], out: Path, formats: Sequence[str] = FORMATS, plots: bool = True) -> list[Path]:
    """report.md / report.csv / report.tex (+ report_standalone.tex, a document around it) and plots/*.png under
    ``out``; the files written."""
    out.mkdir(parents=True, exist_ok=True)
    tables: list[Table] = report["tables"]
    written: list[Path] = []
    pngs: list[Path] = []
    if plots:
        from lmms_spatial.reports.plots import make_plots

        scatters = [s for part in benchmark_reports().values() for s in part.scatters]
        pngs = make_plots(tables, out / "plots", scatters)
    if "md" in formats:
        (out / "report.md").write_text(markdown_report(report, pngs), encoding="utf-8")
        written.append(out / "report.md")
    if "csv" in formats:
        text = render.csv_text(tables) + _skipped_csv(report.get("skipped", []))
        (out / "report.csv").write_text(text, encoding="utf-8")
        written.append(out / "report.csv")
    if "latex" in formats:
        body = render.latex_header() + "\n".join(render.latex(t) for t in tables)
        (out / "report.tex").write_text(body, encoding="utf-8")
        (out / "report_standalone.tex").write_text(render.latex_document("report.tex"), encoding="utf-8")
        written += [out / "report.tex", out / "report_standalone.tex"]
    return written + pngs
