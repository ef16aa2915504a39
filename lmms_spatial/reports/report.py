"""``lmms-spatial report RESULTS [...]``: the papers' tables for your runs, next to the published rows.

For every benchmark found in the results: the paper's table layout (ODI-Bench Tables 2/3 per
setting, DORI Table 2 with soft accuracy, MMPerspective Table 1, OSR-Bench Tables 2-5,
MMSI-Bench overall + categories + circular), the runs' rows with bootstrap 95% CIs (several
seeds of one model: mean ± std/sqrt(n)), unparsed rate and chance level, then the published
rows (``references/*.json``). Plus analyses from the samples files (DORI error patterns and
compound decomposition, ODI-Bench option anchoring; with ``--diagnose-mmsi`` the MMSI-Bench
error diagnosis by failure mode and reasoning accuracy, via the judge) and PNG plots.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lmms_spatial.progress import progress
from lmms_spatial.reports import render
from lmms_spatial.reports.runs import Run, load_runs
from lmms_spatial.reports.tables import SEED, Table, build_tables

FORMATS = ("md", "csv", "latex")


def _dori_analysis(run: Run) -> str | None:
    from lmms_spatial.reports.dori import build_report, render_patterns

    if not any(t.startswith("dori_") for t in run.results):
        return None
    try:
        report = build_report([run.results_file.parent])  # newest samples per task there
    except (FileNotFoundError, ValueError):
        return None
    parts = []
    for prompt, entry in report.items():
        c = entry["compound"]
        patterns = render_patterns(entry["patterns"])
        parts.append(f"DORI error patterns, {prompt} prompt (App. L, Table 10):\n\n```\n{patterns}\n```")
        parts.append(
            f"Compound rotation decomposition (Table 11, n={c['n']}): order swap {c['order_swap']:.1f}%, "
            f"horizontal acc. {c['horizontal_accuracy']:.1f}%, vertical acc. {c['vertical_accuracy']:.1f}%, "
            f"both wrong {c['both_wrong']:.1f}%"
        )
    return "\n\n".join(parts)


def _odi_anchoring(run: Run) -> str | None:
    from lmms_spatial.metrics.odi_bench import format_anchoring, option_anchoring

    close, opened = [], []
    for task in sorted(run.results):
        lines = run.samples(task) if task.startswith("odi_bench_") else None
        if not lines:
            continue
        if task.startswith("odi_bench_close_"):
            close += [s["accuracy"] for s in lines if isinstance(s.get("accuracy"), dict)]
        elif task.startswith("odi_bench_open_"):
            opened += [s["judge_score"] for s in lines if isinstance(s.get("judge_score"), dict)]
    if not close or not opened:
        return None
    result = option_anchoring(close, opened)
    return f"ODI-Bench option anchoring (App. D.1.3):\n\n```\n{format_anchoring(result)}\n```"


def _mmsi_diagnosis(run: Run) -> str | None:
    from lmms_spatial.reports.mmsi_diagnosis import DIAGNOSED_TASKS, diagnose, format_diagnosis, load_mmsi_docs

    parts, docs = [], None
    for task in DIAGNOSED_TASKS:
        samples = run.samples(task) if run.has(task) else None
        if not samples:
            continue
        docs = docs if docs is not None else load_mmsi_docs()
        parts.append(f"```\n{format_diagnosis(task, diagnose(samples, docs))}\n```")
    return "\n\n".join(parts) or None


def analyses(runs: Sequence[Run], diagnose_mmsi: bool = False) -> list[str]:
    out = []
    for run in progress(runs, total=len(runs), desc="report: analyses", unit="run"):
        candidates = (_dori_analysis(run), _odi_anchoring(run), _mmsi_diagnosis(run) if diagnose_mmsi else None)
        found = [a for a in candidates if a]
        if found:
            out.append(f"#### {run.label} ({run.results_file.name})\n\n" + "\n\n".join(found))
    return out


def build(
    paths: Sequence[Path | str], labels: list[str] | None = None, seed: int = SEED, diagnose_mmsi: bool = False
) -> dict[str, Any]:
    runs = load_runs(paths, labels)
    return {
        "runs": runs,
        "tables": build_tables(runs, seed=seed),
        "analyses": analyses(runs, diagnose_mmsi),
        "diagnosed_mmsi": diagnose_mmsi,
    }


def markdown_report(report: dict[str, Any], plots: Sequence[Path] = ()) -> str:
    runs: list[Run] = report["runs"]
    lines = ["# lmms-spatial report", "", "Runs:", ""]
    lines += [f"- {r.label}: `{r.results_file}`" for r in runs]
    lines.append("")
    lines += [render.markdown(t) for t in report["tables"]]
    if report["analyses"]:
        lines += ["## Analyses (from samples files)", ""] + report["analyses"] + [""]
    if not report.get("diagnosed_mmsi") and any(r.has(t) for r in runs for t in ("mmsi_vanilla", "mmsi_cot")):
        lines.append(
            "MMSI-Bench error diagnosis by failure mode and reasoning accuracy: add `--diagnose-mmsi` "
            "(asks the configured LLM judge about every reply; verdicts are cached)."
        )
        lines.append("")
    if plots:
        lines += ["## Plots", ""] + [f"- `{p}`" for p in plots] + [""]
    return "\n".join(lines)


def write(report: dict[str, Any], out: Path, formats: Sequence[str] = FORMATS, plots: bool = True) -> list[Path]:
    """report.md / report.csv / report.tex and plots/*.png under ``out``; the files written."""
    out.mkdir(parents=True, exist_ok=True)
    tables: list[Table] = report["tables"]
    written: list[Path] = []
    pngs: list[Path] = []
    if plots:
        from lmms_spatial.reports.plots import make_plots

        pngs = make_plots(tables, out / "plots")
    if "md" in formats:
        (out / "report.md").write_text(markdown_report(report, pngs), encoding="utf-8")
        written.append(out / "report.md")
    if "csv" in formats:
        (out / "report.csv").write_text(render.csv_text(tables), encoding="utf-8")
        written.append(out / "report.csv")
    if "latex" in formats:
        (out / "report.tex").write_text("\n".join(render.latex(t) for t in tables), encoding="utf-8")
        written.append(out / "report.tex")
    return written + pngs
