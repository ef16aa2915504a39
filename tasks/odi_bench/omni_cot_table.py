"""Omni-CoT's crop filter ratio per task (ODI-Bench paper, Table 10), from the samples files of a run.

The answer path is the model's (``--model omni_cot``, :mod:`lmms_spatial.models.omni_cot`), which records each
document's steps as the ``omni_cot`` artefact; this table reads them back::

    python -m lmms_spatial.tasks.odi_bench.omni_cot_table report RUN_DIR...
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lmms_spatial.models.omni_cot import ARTIFACT


def artifacts_in_samples(paths: Iterable[Path | str]) -> dict[str, list[dict[str, Any]]]:
    """{task: Omni-CoT artefacts} from lmms-eval samples files (or folders searched for them)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for root in map(Path, paths):
        files = [root] if root.is_file() else sorted(root.rglob("*_samples_*.jsonl"))
        for f in files:
            task = f.name.split("_samples_", 1)[1][: -len(".jsonl")]
            for line in f.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                sample = json.loads(line)
                found = next(
                    (v[ARTIFACT] for v in sample.values() if isinstance(v, dict) and isinstance(v.get(ARTIFACT), dict)),
                    None,
                )
                if found is not None:
                    out.setdefault(task, []).append(found)
    return out


def filter_ratio(artifacts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Crops grounded, kept and dropped by the relevance filter; ``filter_ratio`` = dropped / grounded."""
    arts = list(artifacts)
    grounded = sum(len(a.get("crops") or []) for a in arts)
    dropped = sum(int(a.get("crops_dropped") or 0) for a in arts)
    return {
        "documents": len(arts),
        "crops": grounded,
        "kept": grounded - dropped,
        "dropped": dropped,
        "filter_ratio": dropped / grounded if grounded else float("nan"),
        "refined": sum(1 for a in arts if a.get("refined")),
        "changed": sum(1 for a in arts if a.get("first_answer") != a.get("final_answer")),
    }


def format_report(by_task: Mapping[str, Iterable[Mapping[str, Any]]]) -> str:
    rows = ["| task | docs | crops | kept | dropped | filter ratio | refined | answer changed |", "|---" * 8 + "|"]
    everything: list[Mapping[str, Any]] = []
    for task in sorted(by_task):
        arts = list(by_task[task])
        everything += arts
        r = filter_ratio(arts)
        rows.append(
            f"| {task} | {r['documents']} | {r['crops']} | {r['kept']} | {r['dropped']} | "
            f"{100 * r['filter_ratio']:.2f}% | {r['refined']} | {r['changed']} |"
        )
    r = filter_ratio(everything)
    rows.append(
        f"| all | {r['documents']} | {r['crops']} | {r['kept']} | {r['dropped']} | "
        f"{100 * r['filter_ratio']:.2f}% | {r['refined']} | {r['changed']} |"
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lmms_spatial.tasks.odi_bench.omni_cot_table")
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="crop filter ratio per task (Table 10) from samples files")
    report.add_argument("paths", nargs="+", help="samples .jsonl files or run folders")
    args = parser.parse_args(argv)
    found = artifacts_in_samples(args.paths)
    if not found:
        print("no Omni-CoT artefacts found (run with --model omni_cot --log_samples)", file=sys.stderr)
        return 1
    print(format_report(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
