"""ODI-Bench's analyses from the command line: option anchoring (App. D.1.3) and a Table 2/3 row from a run.

The rules are the pure scorer's (:mod:`lmms_spatial.metrics.odi_bench`: :func:`option_anchoring`, :func:`summarise`);
this is the benchmark's command around them::

    python -m lmms_spatial.tasks.odi_bench.anchoring anchoring CLOSE_RUN OPEN_RUN [--open-threshold 1] [--json a.json]
    python -m lmms_spatial.tasks.odi_bench.anchoring table RUN [--setting close|open]

where each RUN is a samples ``.jsonl`` file or a folder searched for ``*_samples_odi_bench_*``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lmms_spatial.metrics import odi_bench as odi


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_spatial.tasks.odi_bench.anchoring", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    anchoring = sub.add_parser("anchoring", help="option anchoring shares from a close and an open run")
    anchoring.add_argument("close_run", help="samples file or output folder of the close-ended run")
    anchoring.add_argument("open_run", help="samples file or output folder of the open-ended run")
    anchoring.add_argument("--open-threshold", type=float, default=1.0, help="judge score that counts as right")
    anchoring.add_argument("--json", help="also write the result as JSON here")
    table = sub.add_parser("table", help="Table 2/3 row (Overall, General, Spatial, tasks) from a run's samples")
    table.add_argument("run", help="output folder of a run")
    table.add_argument("--setting", choices=odi.SETTINGS, default="close")
    args = parser.parse_args(argv)
    try:
        if args.command == "anchoring":
            result = odi.anchoring_from_runs(args.close_run, args.open_run, args.open_threshold)
            print(odi.format_anchoring(result))
            if args.json:
                Path(args.json).write_text(json.dumps(result, indent=2, sort_keys=True))
            return 0
        metric = "judge_score" if args.setting == "open" else "accuracy"
        records = odi.read_records(odi._samples_files(Path(args.run), args.setting), metric)
        print(odi.format_table(odi.summarise(records), label=f"{Path(args.run).name} ({args.setting})"))
        return 0
    except (FileNotFoundError, ValueError) as exc:
        print(f"odi_bench: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
