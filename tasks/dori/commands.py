"""DORI's own ``lmms-spatial`` command, ``lmms-spatial dori-report RUN [RUN ...]``: DORI's Table 2 layout, soft
accuracy, error patterns and compound-rotation decomposition from finished runs' samples files (several runs = one
per option seed: mean and std/sqrt(n)). ``lmms_spatial.cli`` finds this module by its file name in the benchmark's
folder and calls :func:`add_commands`; the analysis is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_commands(sub: argparse._SubParsersAction) -> None:
    dori = sub.add_parser("dori-report", help="DORI tables, soft accuracy and error analysis from samples files")
    dori.add_argument("runs", nargs="+", help="output folders (or samples files) of finished dori runs")
    dori.add_argument("--json", help="also write the report as JSON here")
    dori.set_defaults(func=_cmd_dori_report)


def _cmd_dori_report(args: argparse.Namespace) -> int:
    from lmms_spatial.tasks.dori.patterns import build_report, render_report

    try:
        report = build_report(args.runs)
    except (FileNotFoundError, ValueError) as exc:
        print(f"dori-report: {exc}", file=sys.stderr)
        return 1
    print(render_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, sort_keys=True))
        print(f"written: {args.json}")
    return 0
