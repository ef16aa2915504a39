"""``lmms-spatial bench``: what our code costs per document, next to what the model costs.

The arguments, the run (demo data, then each section in turn, one report) and ``main``; the sections
live in modules named by what they measure (see :mod:`lmms_spatial.bench`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lmms_spatial.bench.end_to_end import bench_end_to_end
from lmms_spatial.bench.measure import peak_rss_mb
from lmms_spatial.bench.odi_decode import QWEN_MAX_PIXELS, bench_odi_decode
from lmms_spatial.bench.osr import bench_osr_calls, bench_osr_scoring
from lmms_spatial.bench.report import compare, format_report, summary
from lmms_spatial.bench.runners import add_runner_arguments, compare_runners, resolve_runner_defaults
from lmms_spatial.bench.tasks import bench_tasks, benchmark_of


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.work or tempfile.mkdtemp(prefix="lmms_spatial_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("LMMS_SPATIAL_JUDGE", "none")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from lmms_spatial.data.demo import build_demo_data, demo_tasks

    tasks = args.tasks or demo_tasks()
    sections = set(args.only.split(",")) if args.only else {"tasks", "odi", "osr_scoring", "osr_calls", "e2e"}
    if getattr(args, "runners", False):
        sections.add("runners")
    image_sizes = None
    if not args.use_env_data:
        from lmms_spatial.bench.real_images import inventory, real_size_data

        data_env = build_demo_data(work / "data")
        if getattr(args, "image_size", "demo") == "real":
            # only the benchmarks something here reads (OSR-Bench for osr_calls / osr_scoring)
            used = {benchmark_of(t) for t in tasks}
            if sections & {"osr_calls", "osr_scoring"}:
                used.add("osr_bench")
            data_env, image_sizes = real_size_data(data_env, work / "data_real", only=used)
        else:
            image_sizes = inventory(data_env)
        os.environ.update(data_env)
    env = dict(os.environ)
    report: dict[str, Any] = {
        "meta": {
            "command": " ".join(["lmms-spatial", "bench", *(args.argv or [])]),
            "tiny": args.tiny,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "data": "env" if args.use_env_data else "demo fixtures",
            "image_size": "env" if args.use_env_data else getattr(args, "image_size", "demo"),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
    }
    if image_sizes is not None:
        report["image_sizes"] = image_sizes
    try:
        import lmms_eval
        import PIL

        report["meta"]["versions"] = {"lmms_eval": getattr(lmms_eval, "__version__", "?"), "pillow": PIL.__version__}
    except ImportError:  # pragma: no cover
        pass
    if "tasks" in sections:
        report["tasks"] = bench_tasks(tasks, args.docs)
    if "odi" in sections:
        w, h = (2400, 1200) if args.tiny else (args.odi_width, args.odi_width // 2)
        budget = 262144 if args.tiny else args.odi_max_pixels
        report["odi_decode"] = bench_odi_decode(w, h, budget, 1 if args.tiny else args.repeats)
    if "osr_scoring" in sections:
        maps, questions = (41, 1533) if args.tiny else (4100, 153312)
        report["osr_scoring"] = bench_osr_scoring(maps, questions, work)
    if "osr_calls" in sections and not args.use_env_data:
        report["osr_calls"] = bench_osr_calls(env, work)
    if "e2e" in sections and args.model:
        report["end_to_end"] = bench_end_to_end(args, tasks, env, work, report.get("tasks", {}))
    if "runners" in sections:
        resolve_runner_defaults(args)
        report["runners"] = compare_runners(args, tasks, env, work / "runners", report.get("tasks", {}))
    report["meta"]["peak_rss_mb"] = round(peak_rss_mb(), 1)
    report["summary"] = summary(report)
    return report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", type=lambda s: s.split(","), default=None, help="default: every demo task")
    parser.add_argument("--docs", type=int, default=20, help="documents measured per task (cycled; default 20)")
    parser.add_argument("--tiny", action="store_true", help="CI mode: 2 docs/task, small ODI image, OSR/100")
    parser.add_argument("--only", help="comma-separated sections: tasks,odi,osr_scoring,osr_calls,e2e,runners")
    parser.add_argument(
        "--use-env-data",
        action="store_true",
        help="use the datasets the LMMS_SPATIAL_*_PATH variables (or the Hub) give, not the fixtures",
    )
    parser.add_argument("--odi-width", type=int, default=12000, help="ERP width (height = width/2)")
    parser.add_argument("--odi-max-pixels", type=int, default=QWEN_MAX_PIXELS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", help="also run lmms-eval end to end with this model")
    parser.add_argument("--model_args", default="")
    parser.add_argument("--batch_size", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None, help="documents per task for the end-to-end run")
    parser.add_argument(
        "--steady",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with --model and --limit L: also run --limit 2L and --limit L again and report the marginal "
        "(steady-state) model ms/doc and our share of it, against a 5%% budget meant for a 7B model on a GPU "
        "(default: on)",
    )
    parser.add_argument(
        "--image-size",
        choices=("demo", "real"),
        default="demo",
        help="demo: the embedded fixture images (tiny); real: a copy of the fixtures with every image "
        "re-encoded at a realistic size in its own format (OSR-Bench 1024x512, MMSI-Bench/DORI/MMPerspective "
        "1280x960, ODI-Bench kept) for every phase (default: demo)",
    )
    parser.add_argument("--gen_kwargs", default="")
    parser.add_argument("--work", help="working folder (default: a new temporary folder)")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="compare two JSON reports and exit")
    add_runner_arguments(parser)


def main_args(args: argparse.Namespace) -> int:
    if args.compare:
        old, new = (json.loads(Path(p).read_text()) for p in args.compare)
        print(compare(old, new))
        return 0
    if args.tiny:
        args.docs = min(args.docs, 2)
    if getattr(args, "image_size", "demo") == "real" and args.use_env_data:
        print("bench: --image-size real re-encodes the demo fixtures; with --use-env-data the data's own "
              "images are measured (drop one of the two)", file=sys.stderr)  # fmt: skip
        return 2
    report = run(args)
    print(format_report(report))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
        print(f"\nwritten: {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lmms-spatial bench", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    return main_args(args)


if __name__ == "__main__":
    sys.exit(main())
