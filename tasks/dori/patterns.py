"""``lmms-spatial dori-report RUN [RUN ...]``: DORI's paper tables from finished runs' samples files.

Everything is recomputed from the per-document records lmms-eval logged (``--log_samples``),
so a run is never repeated to get a new view of it:

- Table 2 layout: accuracy per question type (C/G), the Avg. columns, per dimension, with the
  unparsed rate and the chance level of the actual option counts under each cell;
- soft accuracy of the granular types (App. L);
- systematic confusions (> 5% of a question type's errors) labelled with Table 10's patterns;
- compound-rotation component decomposition (Table 11);
- with several runs (one per option seed, App. K): mean and std/sqrt(n) per question type.

Structured and unstructured-prompt runs (Table 7) are reported separately.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lmms_spatial.metrics.dori import (
    DIMENSIONS,
    GRANULARITIES,
    TASKS,
    compound_decomposition,
    confusion_patterns,
    question_type,
    seed_summary,
    table2,
)

SHORT_LABELS = {  # Table 2 headers cut to the 11 characters of a C/G column pair
    "view_parallelism": "View Par.",
    "directional_facing": "Dir. Facing",
    "single_axis_rotation": "Single-axis",
    "compound_rotation": "Compound",
    "inter_object_direction": "Inter-Obj.",
    "viewer_scene_direction": "Viewer-Scn.",
    "canonical_orientation": "Canonical",
}


def load_records(run: Path | str) -> list[dict[str, Any]]:
    """DORI score records of one run (newest samples file per task under ``run``)."""
    from lmms_spatial.models.replay import sources  # imports lmms-eval: only when files are searched

    if not Path(run).exists():
        raise FileNotFoundError(f"{run}: no such file or folder")
    # only the DORI runs under it are compared: a folder of runs also holds other benchmarks', of other models
    found = sources(str(run), keep=lambda task: task.startswith("dori_"), given="{spec}",
                    fix="Give each run as an argument of its own (e.g. {example}): one per option seed")  # fmt: skip
    records = []
    for task, logged in sorted(found.items()):
        path = logged.tasks[task]
        with open(path, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                record = json.loads(line).get("accuracy")
                if not isinstance(record, dict) or "task" not in record:
                    raise ValueError(f"{path}:{line_no}: no DORI 'accuracy' record (was it logged by a dori task?)")
                records.append(record)
    if not records:
        raise FileNotFoundError(f"no DORI samples files (*_samples_dori_*.jsonl) under {run}")
    return records


def _pct(value: float | None) -> str:
    return "  -  " if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:5.1f}"


def _row(label: str, cells: Iterable[str]) -> str:
    return f"{label:<14}" + " ".join(f"{c:>5}" for c in cells)


def render_table2(table: dict[str, Any]) -> str:
    header1 = _row("", [f"{SHORT_LABELS[t]:>11}" for t in TASKS] + ["  Avg."])
    header2 = _row("", [g[0].upper() for _ in TASKS for g in GRANULARITIES] + ["C", "G"])
    acc = table["accuracy"]

    def cells(values: dict[str, float], averages: dict[str, float] | None = None) -> list[str]:
        out = [_pct(values.get(question_type(t, g))) for t in TASKS for g in GRANULARITIES]
        return out + ([_pct(averages.get(g)) for g in GRANULARITIES] if averages is not None else ["", ""])

    accuracy = {question_type(t, g): v for t, gs in acc.items() for g, v in gs.items()}
    soft = {question_type(t, "granular"): v for t, v in table["soft"].items()}
    lines = [
        header1,
        header2,
        _row("accuracy", cells(accuracy, table["average"])),
        _row("soft acc.", cells(soft, {"granular": table["soft_average"]})),
        _row("unparsed", cells(table["unparsed_rate"])),
        _row("chance", cells(table["chance_level"], table["chance_average"])),
        _row("n", [str(table["n"].get(question_type(t, g), "-")) for t in TASKS for g in GRANULARITIES]),
        "",
        "per dimension (unweighted mean of its question types):",
    ]
    for dim in DIMENSIONS:
        values = table["dimension"][dim]
        lines.append(f"  {dim:<28} C {_pct(values['coarse'])}   G {_pct(values['granular'])}")
    return "\n".join(lines)


def render_patterns(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no confusion above 5% of a question type's errors"
    lines = [f"{'question type':<32} {'truth -> predicted':<72} {'% err':>6}  pattern"]
    for r in rows:
        pair = f"{r['truth']} -> {r['predicted']}"
        lines.append(f"{r['question_type']:<32} {pair[:72]:<72} {100 * r['share_of_errors']:6.1f}  {r['pattern']}")
    return "\n".join(lines)


def build_report(runs: list[Path | str]) -> dict[str, Any]:
    """{prompt: {table2, patterns, compound, seeds}} from one or more runs."""
    return report_from_records(runs, [load_records(run) for run in runs])


def report_from_records(runs: Sequence[Path | str], per_run: Sequence[list[dict[str, Any]]]) -> dict[str, Any]:
    """:func:`build_report` from score records already read (one list per run, ``runs`` naming them)."""
    report: dict[str, Any] = {}
    for prompt in sorted({r.get("prompt", "structured") for records in per_run for r in records}):
        selected = [[r for r in records if r.get("prompt", "structured") == prompt] for records in per_run]
        pooled = [r for records in selected for r in records]
        entry: dict[str, Any] = {
            "runs": [str(run) for run in runs],
            "seeds": [sorted({str(r.get("option_seed")) for r in records}) for records in selected],
            "table2": table2(pooled),
            "patterns": confusion_patterns(pooled),
            "compound": compound_decomposition(pooled),
        }
        if len(runs) > 1:
            by_run = {}
            for run, records in zip(runs, selected, strict=True):
                t = table2(records)
                by_run[str(run)] = {
                    question_type(task, g): v for task, gs in t["accuracy"].items() for g, v in gs.items()
                }
                by_run[str(run)].update({f"avg_{g}": v for g, v in t["average"].items()})
            entry["seed_summary"] = seed_summary(by_run)
        report[prompt] = entry
    return report


def render_report(report: dict[str, Any]) -> str:
    out = []
    for prompt, entry in report.items():
        out.append(f"== DORI, {prompt} prompt ({len(entry['runs'])} run(s); option seeds {entry['seeds']}) ==")
        out.append("Table 2 layout (%, records pooled over runs):")
        out.append(render_table2(entry["table2"]))
        out.append("")
        out.append("Systematic confusions (App. L, Table 10):")
        out.append(render_patterns(entry["patterns"]))
        c = entry["compound"]
        out.append("")
        parts = [
            f"order swap {_pct(c['order_swap'] / 100)}%",
            f"horizontal acc. {_pct(c['horizontal_accuracy'] / 100)}%",
            f"vertical acc. {_pct(c['vertical_accuracy'] / 100)}%",
            f"both wrong {_pct(c['both_wrong'] / 100)}%",
        ]
        out.append(f"Compound rotation decomposition (Table 11, n={c['n']}): " + "  ".join(parts))
        if "seed_summary" in entry:
            out.append("")
            out.append("Across runs (App. K): mean ± std/sqrt(n), %")
            for qt, s in entry["seed_summary"].items():
                out.append(f"  {qt:<36} {100 * s['mean']:5.1f} ± {100 * s['error']:4.1f}  (n={s['seeds']})")
        out.append("")
    return "\n".join(out)
