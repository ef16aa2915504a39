"""``lmms-spatial``: helper commands around lmms-eval.

- ``lmms-spatial tasks-dir``: the folder to pass to ``lmms-eval --include_path``.
- ``lmms-spatial demo``: build the embedded demo datasets, run every demo task (or ``--tasks``) through
  ``lmms-eval`` with the seeded ``random_choice`` model (offline, CPU, seconds) and print
  the results with unparsed rate and chance level.
- ``lmms-spatial dori-report RUN [RUN ...]``: DORI's Table 2 layout, soft accuracy, error
  patterns and compound-rotation decomposition from finished runs' samples files (several
  runs = one per option seed: mean and std/sqrt(n)).
- ``lmms-spatial report RESULTS [...]``: each paper's tables for the runs found (results folders or
  ``*_results.json``), next to the published rows, with bootstrap CIs, chance level, unparsed
  rate, analyses from the samples files and plots (markdown, CSV, LaTeX, PNG).
- ``lmms-spatial view RESULTS [...] --out site/``: one static folder (open ``index.html`` from disk) with the report's
  tables and every sample: images, prompt, reply, parsed answer, truth, score, judge verdict, filters, figures.
- ``lmms-spatial bench``: per-task CPU ms/doc of our code, ODI decode, OSR scoring at full size,
  OSR calls per image and (``--model``) end-to-end docs/s; JSON for comparing runs.
- ``lmms-spatial convert BENCHMARK RELEASE OUT``: a local copy of a release -> the normalised layout
  (``--map FIELD=COLUMN,...`` for renamed columns).
- ``lmms-spatial export BENCHMARK OUT``: a normalised copy as a folder to upload to the Hub (viewer-ready).
- ``lmms-spatial prepare [BENCHMARK ...]``: download and prepare the Hub releases now (what the
  tasks do on first use), e.g. on a login node before an offline run.
- ``lmms-spatial fixture KEY [...] --out DIR``: a benchmark's synthetic fixture in a folder, and the
  ``export`` lines to run the real ``lmms-eval`` CLI on it.
- ``lmms-spatial card [KEY ...] [--check]``: write each benchmark's ``features()`` into its hub card's
  ``dataset_info`` (``--check``: only compare).
- ``lmms-spatial doctor [--model X] [--cuda] [--flash-attn]``: the environment checked before a long run, each
  line ok or the fix (exit 1 when something must be fixed).
- ``lmms-spatial tested-set --write FILE | --diff FILE``: pin the installed versions as the tested set (after a
  green run), or list the packages whose versions differ from it.
- ``lmms-spatial new-task NAME``: scaffold a new benchmark (task folder, metrics, hub card,
  converter, fixture builder, tests) that passes the contract tests as generated.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from lmms_spatial import __version__


def _cmd_tasks_dir(_args: argparse.Namespace) -> int:
    from lmms_spatial.paths import tasks_dir

    print(tasks_dir())
    return 0


def newest_results_file(output_path: Path) -> Path | None:
    files = sorted(Path(output_path).rglob("*_results.json"), key=lambda p: p.stat().st_mtime)
    return files[-1] if files else None


# chance_level is a uniform guess's accuracy on one answer: the chance of these metrics only (a circular accuracy,
# a robustness, a count or a judge's score has another, or none); the report's tables say the same per column
CHANCE_OF = ("accuracy", "vanilla_accuracy")
HEADLINES = ("accuracy", "circular_accuracy", "vanilla_accuracy")
COLUMNS = ("unparsed_rate", "chance_level")  # the table's own columns, not rows


def _chance_applies(metric: str) -> bool:
    return metric in CHANCE_OF or metric.startswith("variant_")  # MMPerspective's accuracy on one image variant


def format_results(results: dict) -> str:
    """A plain table: a task's headline metrics (else every metric), its unparsed rate, and the chance level
    where it is that metric's chance ("-" where it is not)."""
    rows = []
    from lmms_spatial.conditions import evaluated

    for task, metrics in sorted(results.get("results", {}).items()):
        values = {k.split(",")[0]: v for k, v in metrics.items() if "," in k and "_stderr" not in k}
        headline = [k for k in HEADLINES if k in values]
        counts = results.get("n-samples", {}).get(task, {})
        n = evaluated(counts, (results.get("config") or {}).get("offset")) if counts else ""
        unparsed, chance = values.get("unparsed_rate", math.nan), values.get("chance_level", math.nan)
        for metric in headline or sorted(set(values) - set(COLUMNS)) or sorted(values):
            rows.append((task, metric, values[metric], unparsed, chance if _chance_applies(metric) else None, n))
    width = max([16, *(len(row[0]) for row in rows)])
    metric_width = max([20, *(len(row[1]) for row in rows)])
    lines = [f"{'task':<{width}} {'metric':<{metric_width}} {'value':>7}  {'unparsed':>8}  {'chance':>7}  n"]
    for task, metric, value, unparsed, chance, n in rows:
        chance_cell = f"{'-':>7}" if chance is None else f"{chance:7.3f}"
        lines.append(f"{task:<{width}} {metric:<{metric_width}} {value:7.3f}  {unparsed:8.3f}  {chance_cell}  {n}")
    return "\n".join(lines)


def _cmd_demo(args: argparse.Namespace) -> int:
    from lmms_spatial.data.demo import benchmark_of_task, build_demo_data, demo_tasks
    from lmms_spatial.paths import tasks_dir

    work = Path(args.out or tempfile.mkdtemp(prefix="lmms_spatial_demo_"))
    # only the benchmarks of the tasks asked for (all of them when a task is no benchmark's demo task)
    keys = sorted({benchmark_of_task(t) for t in args.tasks}) if args.tasks else None
    env = {**os.environ, **build_demo_data(work / "data", keys=None if keys is None or None in keys else keys)}
    # judged tasks (ODI-Bench open-ended, OSR-Bench negative sampling) use the rule-based
    # fallbacks unless a judge is configured: the demo never needs a key or the network
    env.setdefault("LMMS_SPATIAL_JUDGE", "none")
    output = work / "results"
    cmd = [
        sys.executable, "-m", "lmms_eval",
        "--model", args.model,
        "--model_args", args.model_args,
        "--tasks", ",".join(args.tasks or demo_tasks()),
        "--include_path", tasks_dir(),
        "--output_path", str(output),
        "--log_samples",
        "--verbosity", "WARNING",
    ]  # fmt: skip
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, env=env, capture_output=not args.verbose, text=True)
    results_file = newest_results_file(output)
    # lmms-eval exits 0 even when a task fails: the results file is the only proof.
    if results_file is None:
        if proc.stderr:
            print(proc.stderr[-4000:], file=sys.stderr)
        print(f"demo failed: lmms-eval wrote no results under {output}", file=sys.stderr)
        return 1
    results = json.loads(results_file.read_text())
    missing = sorted(set(args.tasks or demo_tasks()) - set(results.get("results", {})))
    print(format_results(results))
    print(f"\nresults: {results_file}\nsamples: {results_file.parent}")
    if missing:
        print(f"demo failed: no results for {missing}", file=sys.stderr)
        return 1
    status, written = _report(argparse.Namespace(results=[str(results_file)], format="md,csv,latex",
                                                 out=str(work / "report"), labels=None, seed=0, no_plots=False,
                                                 quiet=True, judge_analyses=False))  # fmt: skip
    if status:
        return status
    from lmms_spatial.data.registry import BENCHMARKS

    data = [f"{key}={env[b.env_var]}" for key, b in BENCHMARKS.items() if env.get(b.env_var)]
    # the view shows the report's plots: the same runs, labels and seed draw the same PNGs (~8 CPU s for the 12)
    drawn = [p for p in written if p.suffix == ".png"]
    return _cmd_view(argparse.Namespace(results=[str(results_file)], out=str(work / "view"), labels=None, data=data,
                                        seed=0, no_plots=False, chunk=None), drawn=drawn)  # fmt: skip


def _cmd_view(args: argparse.Namespace, drawn: list[Path] | None = None) -> int:
    """``lmms-spatial view``; ``drawn``: the plots already drawn for these same runs, labels and seed (the demo's
    report), copied instead of drawn again."""
    from lmms_spatial.view.build import CHUNK, build, summary_lines

    data = {}
    for item in args.data or []:
        key, sep, path = item.partition("=")
        if not sep or not key or not Path(path).exists():
            print(f"view: --data {item!r}: expected KEY=PATH of an existing folder or file", file=sys.stderr)
            return 1
        data[key] = path
    labels = args.labels.split(",") if args.labels else None
    try:
        result = build(args.results, Path(args.out), labels=labels, data=data, seed=args.seed,
                       plots=not args.no_plots, chunk=args.chunk or CHUNK, drawn=drawn)  # fmt: skip
    except (FileNotFoundError, ValueError) as exc:
        print(f"view: {exc}", file=sys.stderr)
        return 1
    print("\n".join(summary_lines(result)))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    return _report(args)[0]


def _report(args: argparse.Namespace) -> tuple[int, list[Path]]:
    """``lmms-spatial report``: its exit status and the files it wrote."""
    from lmms_spatial.reports.report import FORMATS, build, markdown_report, write

    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        print(f"report: unknown format(s) {unknown}; choose from {','.join(FORMATS)}", file=sys.stderr)
        return 1, []
    labels = args.labels.split(",") if args.labels else None
    try:
        analyses = getattr(args, "judge_analyses", False)  # a benchmark's judge_analyses_flag (--diagnose-mmsi)
        report = build(args.results, labels=labels, seed=args.seed, judge_analyses=analyses)
    except (FileNotFoundError, ValueError) as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 1, []
    if not report["tables"]:
        print("report: no benchmark of this package found in the results", file=sys.stderr)
        return 1, []
    for warning in report.get("warnings", []):
        print(f"report: {warning}", file=sys.stderr)
    written: list[Path] = []
    if args.out:
        written = write(report, Path(args.out), formats, plots=not args.no_plots)
        if not args.quiet:
            print(markdown_report(report))
        print("\nreport written:\n" + "\n".join(f"  {p}" for p in written))
    else:
        print(markdown_report(report))
    return 0, written


def _cmd_fixture(args: argparse.Namespace) -> int:
    from lmms_spatial.data.demo import DEMO_BENCHMARKS, build_demo_data, demo_tasks

    unknown = sorted(set(args.benchmarks) - set(DEMO_BENCHMARKS))
    if unknown:
        print(f"fixture: no fixture builder for {unknown}; known: {', '.join(DEMO_BENCHMARKS)}", file=sys.stderr)
        return 1
    out = Path(args.out).resolve()
    env = build_demo_data(out, args.n, keys=args.benchmarks)
    print(f"built {', '.join(args.benchmarks)} under {out}; to run the real CLI on it:\n")
    print("\n".join(f"export {var}={folder}" for var, folder in env.items()))
    print(f"lmms-eval --model random_choice --model_args seed=0 --tasks {','.join(demo_tasks(args.benchmarks))} "
          "--output_path runs/fixture --log_samples")  # fmt: skip
    return 0


def _cmd_card(args: argparse.Namespace) -> int:
    from lmms_spatial.data.cards import CardError, card_path, sync_card
    from lmms_spatial.data.registry import BENCHMARKS

    status = 0
    for key in args.benchmarks or list(BENCHMARKS):
        try:
            differed = sync_card(key, args.repo, check=args.check)
        except (CardError, KeyError, TypeError) as exc:
            print(f"card: {exc}", file=sys.stderr)
            status = 1
            continue
        where = card_path(key, args.repo)
        if args.check and differed:
            print(f"card: {where} does not declare the features of {key}'s features(); run `lmms-spatial card {key}`",
                  file=sys.stderr)  # fmt: skip
            status = 1
        else:
            print(f"{where}: {'features written from features()' if differed else 'features match features()'}")
    return status


def _cmd_new_task(args: argparse.Namespace) -> int:
    from lmms_spatial.scaffold import ScaffoldError, next_steps, scaffold, tree

    repo = Path(args.repo).resolve()
    try:
        written = scaffold(args.name, repo, title=args.title, hub_id=args.hub_id)
    except ScaffoldError as exc:
        print(f"new-task: {exc}", file=sys.stderr)
        return 1
    print(f"created {len(written)} files in {repo}:\n{tree(written, repo)}\n\n{next_steps(args.name)}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from lmms_spatial.bench import main_args

    args.argv = sys.argv[2:]
    return main_args(args)


def _cmd_convert(args: argparse.Namespace) -> int:
    from lmms_spatial.data.column_map import run_converter

    return run_converter(args.benchmark, args.args)


def _cmd_export(args: argparse.Namespace) -> int:
    from lmms_spatial.data.export import main_args

    return main_args(args)


def _cmd_prepare(args: argparse.Namespace) -> int:
    from lmms_spatial.data.prepare import fetch_release, revision_of
    from lmms_spatial.data.published import published_benchmark
    from lmms_spatial.data.sources import BENCHMARKS, DataUnavailable, dataset_source

    status = 0
    for key in args.benchmarks or [k for k, b in BENCHMARKS.items() if b.hub_id]:
        try:
            source = dataset_source(key)
            if not source.local:  # read as published (MMSI-Bench, a published copy): the snapshot, in the cache now
                bench = published_benchmark(BENCHMARKS[key]) or BENCHMARKS[key]
                source = type(source)(str(fetch_release(bench, revision_of(bench))))
        except DataUnavailable as exc:
            print(f"lmms-spatial prepare: {exc}", file=sys.stderr)
            status = 1
            continue
        print(f"{key}: {source.path}" + (f" {source.kwargs}" if source.kwargs else ""))
    return status


def _cmd_doctor(args: argparse.Namespace) -> int:
    from lmms_spatial.doctor import main as doctor

    return doctor(args.model, args.cuda, args.flash_attn, judge=not args.no_judge)


def _cmd_tested_set(args: argparse.Namespace) -> int:
    from lmms_spatial import environment

    now = environment.installed()
    if args.write:
        snapshot = environment.snapshot()
        header = [
            f"The tested set: exact versions of the last fully green resolution, written by `lmms-spatial "
            f"tested-set --write {args.write}` ({snapshot['platform']}, Python "
            f"{snapshot['python']}).",
            f"Install exactly it: {environment.INSTALL_TESTED}",
        ]
        Path(args.write).parent.mkdir(parents=True, exist_ok=True)
        Path(args.write).write_text(environment.freeze(now, header), encoding="utf-8")
        print(f"{len(now)} packages pinned in {args.write}")
        return 0
    path = Path(args.diff)
    if not path.is_file():
        print(
            f"lmms-spatial: {path}: no such file (write it with lmms-spatial tested-set --write {path})",
            file=sys.stderr,
        )
        return 2
    rows = environment.drift(environment.read_constraints(path.read_text(encoding="utf-8")), now)
    print("\n".join(environment.drift_lines(rows, str(path))))
    return 1 if rows and args.strict else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lmms-spatial", description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="version", version=f"lmms-spatial {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tasks-dir", help="print the task folder for --include_path").set_defaults(func=_cmd_tasks_dir)
    demo = sub.add_parser("demo", help="run every benchmark on the embedded demo data")
    demo.add_argument("--out", help="working folder (default: a new temporary folder)")
    demo.add_argument("--model", default="random_choice")
    demo.add_argument("--model_args", default="seed=0")
    demo.add_argument("--tasks", type=lambda s: s.split(","), default=None)
    demo.add_argument("--verbose", action="store_true", help="show lmms-eval's own output")
    demo.set_defaults(func=_cmd_demo)
    fixture = sub.add_parser(
        "fixture",
        help="build benchmarks' synthetic fixture data in a folder and print the export lines for the real CLI",
    )
    fixture.add_argument("benchmarks", nargs="+", help="benchmark keys (tasks/<key>/demo.py)")
    fixture.add_argument("--out", default="fixtures", help="folder to build into, one subfolder per benchmark")
    fixture.add_argument("-n", type=int, default=None, help="items per builder (default: the builder's own)")
    fixture.set_defaults(func=_cmd_fixture)
    card = sub.add_parser(
        "card", help="write each benchmark's features() into its hub card's dataset_info (the one schema source)"
    )
    card.add_argument("benchmarks", nargs="*", help="benchmark keys (default: every registered one)")
    card.add_argument("--check", action="store_true", help="only compare; exit 1 when a card differs")
    card.add_argument(
        "--repo", default=None,
        help="repository root holding hub_cards/ (default: the current folder's hub_cards/ if it has one, "
        "else the installed package's cards)",
    )  # fmt: skip
    card.set_defaults(func=_cmd_card)
    # a benchmark's own commands (its BENCHMARK's commands part: add_commands(sub))
    from lmms_spatial.data.registry import BENCHMARKS, with_part

    for bench in with_part("commands").values():
        bench.load("commands").add_commands(sub)
    rep = sub.add_parser("report", help="the papers' tables (with published rows), CIs, analyses and plots")
    rep.add_argument("results", nargs="+", help="output folders or *_results.json files of finished runs")
    rep.add_argument("--format", default="md,csv,latex", help="comma-separated: md, csv, latex (default: all)")
    rep.add_argument("--out", help="write report.md/.csv/.tex and plots/*.png here (default: print markdown only)")
    rep.add_argument("--labels", help="comma-separated model names, one per results file in the order found")
    rep.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    rep.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    rep.add_argument("--quiet", action="store_true", help="with --out: list the files only")
    # a benchmark whose analyses may ask the LLM judge names the flag that lets them (its judge_analyses_flag)
    for bench in BENCHMARKS.values():
        if bench.judge_analyses_flag:
            flag, text = bench.judge_analyses_flag
            rep.add_argument(flag, dest="judge_analyses", action="store_true", help=text)
    rep.set_defaults(func=_cmd_report)
    view = sub.add_parser("view", help="a static results page (tables, every sample, figures) that opens from disk")
    view.add_argument("results", nargs="+", help="output folders or *_results.json files of finished runs")
    view.add_argument("--out", default="site", help="folder to write the page into (default: site/)")
    view.add_argument("--labels", help="comma-separated model names, one per results file in the order found")
    view.add_argument(
        "--data",
        action="append",
        metavar="KEY=PATH",
        help="a benchmark's local data for the images (default: its LMMS_SPATIAL_<NAME>_PATH)",
    )
    view.add_argument("--seed", type=int, default=0, help="bootstrap seed of the tables (default 0, as report)")
    view.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    view.add_argument("--chunk", type=int, default=None, help="samples per data file (default 1000)")
    view.set_defaults(func=_cmd_view)
    bench = sub.add_parser("bench", help="measure our per-document CPU cost, ODI decode, OSR scoring and calls")
    from lmms_spatial.bench import add_arguments as _bench_arguments

    _bench_arguments(bench)
    bench.set_defaults(func=_cmd_bench)
    from lmms_spatial.data.convert import CONVERTERS

    conv = sub.add_parser(
        "convert",
        help="convert a local copy of a release into the layout the tasks read",
        description="lmms-spatial convert BENCHMARK --help shows the converter's own arguments.",
    )
    conv.add_argument("benchmark", choices=sorted(CONVERTERS))
    conv.add_argument("args", nargs=argparse.REMAINDER, help="the converter's arguments (e.g. RELEASE OUT)")
    conv.set_defaults(func=_cmd_convert)
    exp = sub.add_parser(
        "export",
        help="write a normalised copy as a folder for the Hub and its viewer (README card + parquet, images embedded)",
        description="Then: hf upload <org>/<name> OUT --repo-type dataset, and LMMS_SPATIAL_<NAME>_REPO=<org>/<name>.",
    )
    from lmms_spatial.data.export import add_arguments as _export_arguments

    _export_arguments(exp)
    exp.set_defaults(func=_cmd_export)
    prep = sub.add_parser(
        "prepare", help="download and prepare releases now (as the tasks would), e.g. before going offline"
    )
    prep.add_argument("benchmarks", nargs="*", help="benchmark keys (default: every one with a Hub release)")
    prep.set_defaults(func=_cmd_prepare)
    doc = sub.add_parser("doctor", help="check the environment before a long run: each line ok or the fix")
    doc.add_argument("--model", help="also import lmms-eval's model class for this --model (and what it imports)")
    doc.add_argument("--cuda", action="store_true", help="also check that torch sees a GPU")
    doc.add_argument("--flash-attn", action="store_true", help="also check flash attention (and CUDA)")
    doc.add_argument("--no-judge", action="store_true", help="skip the call to the configured LLM judge")
    doc.set_defaults(func=_cmd_doctor)
    tested = sub.add_parser("tested-set", help="pin the installed versions (after a green run), or list the drift")
    which = tested.add_mutually_exclusive_group(required=True)
    which.add_argument("--write", metavar="FILE", help="write every installed version as pip constraints")
    which.add_argument("--diff", metavar="FILE", help="list the packages whose versions differ from FILE")
    tested.add_argument("--strict", action="store_true", help="with --diff: exit 1 when a package differs")
    tested.set_defaults(func=_cmd_tested_set)
    new = sub.add_parser("new-task", help="scaffold a new benchmark from the template (see CONTRIBUTING.md)")
    new.add_argument("name", help="benchmark key, lower-case snake_case (e.g. orient_bench)")
    new.add_argument("--title", help="display name (default: from the key)")
    new.add_argument("--hub-id", default="", help="Hub dataset id of the normalised layout, if there is one")
    new.add_argument("--repo", default=".", help="repository root to write into (default: current folder)")
    new.set_defaults(func=_cmd_new_task)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
