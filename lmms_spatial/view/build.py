"""Write the viewer's folder: the report's tables (the same :class:`~lmms_spatial.reports.tables.Table` values,
rendered by the report's own cell text), each cell's conditions, the plots, and every samples line in chunks.

Layout of ``OUT``::

    index.html app.js app.css          the page (ours; no CDN, no request outside the folder)
    data/manifest.js                   runs, tables, plots, and per (run, task) its counts and chunk list
    data/l<N>.js                       list rows of a chunk (CHUNK samples): what the list, filters and sort read
    data/d<N>.js                       the same samples' details: prompt (or its chat turns), reply, token counts,
                                       score record, evidence blocks
    thumbs/<hash>.jpg large/<hash>.js  each distinct image once (:mod:`lmms_spatial.view.images`)
    plots/*.png                        the report's plots

The page loads ``manifest.js`` first, then list chunks as the filters need them and a detail chunk when a sample
is opened: the first page shows before a large run is loaded. A prompt is stored less the text every prompt of
its task shares at its start and end (a benchmark's template: most of an OSR-Bench prompt), kept once per task.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from lmms_spatial.paths import task_benchmarks
from lmms_spatial.reports.runs import Run, SkippedLine, count_of, name_skipped, read_samples
from lmms_spatial.reports.tables import SEED, Table
from lmms_spatial.view import evidence
from lmms_spatial.view.images import DataIndex, ImageStore, data_roots, image_bytes, recorded_roots

CHUNK = 1000  # samples per chunk
SNIPPET = 160  # characters of the question and reply in a list row
SHORT = 80  # characters of the parsed answer and truth in a list row
PREVIEW = 4000  # characters of a prompt, reply or parsed answer a sample's page shows before its "show all"
ASSETS = ("index.html", "app.js", "app.css")


def _js(kind: str, payload: Any) -> str:
    """A data file: JSON handed to the page by a script call (``file://`` pages cannot fetch() JSON)."""
    return f"LMMSView.{kind}({json.dumps(payload, ensure_ascii=False, separators=(',', ':'), allow_nan=False)});\n"


def _write_js(path: Path, kind: str, payload: Any) -> None:
    """:func:`_js` to ``path`` in UTF-8; a lone surrogate (a samples line may hold ``"\\ud800"``, valid JSON that
    UTF-8 cannot write) is written as its JSON escape, which the page reads back as the same string."""
    path.write_text(_js(kind, payload), encoding="utf-8", errors="backslashreplace")


def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become None (the page shows "-"), like the report's empty cells."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------
# tables
# ---------------------------------------------------------------------------------------


def cell_conditions(runs: Sequence[Run], tasks: set[str]) -> list[list[str]]:
    """What produced a cell, one ``[name, value]`` list per run: model, n/N, judge, map, seed, software, file."""
    from lmms_spatial.reports.report import _software

    out: list[list[str]] = []
    for run in runs:
        c = run.conditions
        mine = sorted(tasks & set(c.tasks))
        tcs = [c.task(t) for t in mine if not c.task(t).empty]
        docs, of = [t.documents for t in tcs], [t.of for t in tcs]
        judges = sorted({f"{t}: {c.task(t).judge.describe()}" + (f" ({c.task(t).judge.counts()})"
                                                                  if c.task(t).judge.counts() else "")
                         for t in mine if c.task(t).judge is not None})  # fmt: skip
        maps = sorted({str(c.task(t).map_source) for t in mine if c.task(t).map_source is not None})
        args = c.model.args_without_seed()
        rows = [
            ["run", run.label],
            ["model", f"{c.model.name}" + (f" ({args})" if args else "")],
            ["n/N", f"{sum(docs)}/{sum(of)}" if tcs and None not in docs and None not in of else "not recorded"],
        ]
        if judges:
            shown = "; ".join(judges) if len(judges) <= 3 else f"{judges[0]}; and {len(judges) - 1} more"
            rows.append(["judge", shown])
        if maps:
            rows.append(["map source", ", ".join(maps)])
        rows += [["seed", c.describe_seed(mine)], ["environment", _software(c.environment)],
                 ["results file", str(run.results_file)]]  # fmt: skip
        out.extend(rows + [["", ""]] if len(runs) > 1 else rows)
    return out


def table_json(table: Table) -> dict[str, Any]:
    """The table as the page shows it: each cell's text exactly as report.md prints it, and its conditions."""
    from lmms_spatial.reports import render

    marks = render.footnotes(table)
    digits = table.digits
    rows = []
    for row in table.rows:
        cells = []
        for column, cell in zip(table.columns, row.cells, strict=True):
            mark = marks.get(cell.note) if cell.note else None
            entry: dict[str, Any] = {"t": render.cell_text(cell, digits, True, mark)}
            if cell.value is not None:
                entry["v"] = cell.value
            if cell.note:
                entry["note"] = cell.note
            if row.runs and column.spec is not None:
                entry["cond"] = cell_conditions(row.runs, column.spec.tasks())
            cells.append(entry)
        rows.append({"label": render._label(row.label, row.kind), "kind": row.kind, "note": row.note, "cells": cells})
    notes = ["Model cells: value [bootstrap 95% CI] (per-document resampling); value ± std/sqrt(n) over seeds."]
    if any(row.kind == "delta" for row in table.rows):
        notes.append(render.DELTA_LEGEND)
    notes += [f"{str(n).translate(render._SUPERSCRIPT)} {reason}" for reason, n in marks.items()]
    notes += list(table.notes)
    return {"key": table.key, "title": table.title, "source": table.source, "headers": list(table.headers),
            "rows": rows, "notes": notes}  # fmt: skip


# ---------------------------------------------------------------------------------------
# samples
# ---------------------------------------------------------------------------------------


def samples_files(run: Run) -> dict[str, Path]:
    """{task: samples file} written beside the run's results file (the files :func:`load_run` read)."""
    stamp = run.results_file.name[: -len("_results.json")]
    prefix = f"{stamp}_samples_"
    return {f.name[len(prefix) : -len(".jsonl")]: f for f in sorted(run.results_file.parent.glob(f"{prefix}*.jsonl"))}


def _common_ends(texts: Sequence[str]) -> tuple[int, int]:
    """Lengths of the start and end every text shares, never overlapping in the shortest text. The start ends at a
    line break or after a label's ``": "`` (``Question: ``), the end starts at a line break: a template is cut
    where the question begins, never inside a word of it."""
    if len(texts) < 2:
        return 0, 0

    def shared(a: str, b: str) -> int:
        return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))

    first, shortest = texts[0], min(len(t) for t in texts)
    pre = shared(min(texts), max(texts))  # the common prefix of all is that of the extremes
    if pre == shortest == len(max(texts, key=len)):
        return pre, 0  # all equal: the whole text is the template
    pre = max(first[:pre].rfind("\n") + 1, first[:pre].rfind(": ") + 2 if ": " in first[:pre] else 0)
    backwards = sorted(t[::-1] for t in texts)
    tail = first[len(first) - shared(backwards[0], backwards[-1]) :]
    suf = len(tail) - tail.find("\n") if "\n" in tail else 0
    return pre, max(0, min(suf, shortest - pre))


def _short(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class SampleWriter:
    """Every samples line of every run, as list and detail chunks; thumbnails through :class:`ImageStore`."""

    def __init__(self, out: Path, data: DataIndex, chunk: int = CHUNK):
        self.out, self.data, self.chunk = out, data, chunk
        self.images = ImageStore(out)
        self.next_id = 0
        self.entries: list[dict[str, Any]] = []
        self.samples = 0
        self.benchmarks = task_benchmarks()  # lmms_spatial.paths: {task: benchmark key}
        self.skipped: list[SkippedLine] = []  # lines of the samples files that are not samples
        self.texts: dict[str, int] = {}  # long texts written whole (data/t<N>.js), by content hash

    def add_run(self, index: int, run: Run) -> None:
        for task, path in samples_files(run).items():
            lines, skipped = read_samples(path, ("doc",))
            self.skipped += skipped
            self.add_task(index, task, lines, len(skipped))

    def cut(self, text: str) -> tuple[str, list[int] | None]:
        """(what a sample's page shows of ``text``, None) for a text of at most :data:`PREVIEW` characters; for a
        longer one its first :data:`PREVIEW` characters and ``[N, length]``: the whole text is ``data/t<N>.js``,
        loaded only when "show all" is clicked (each distinct text written once)."""
        if len(text) <= PREVIEW:
            return text, None
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        if digest not in self.texts:
            self.texts[digest] = len(self.texts)
            _write_js(self.out / "data" / f"t{self.texts[digest]}.js", "text", [self.texts[digest], text])
        return text[:PREVIEW], [self.texts[digest], len(text)]

    def add_task(self, run: int, task: str, lines: list[dict[str, Any]], skipped: int = 0) -> None:
        benchmark = self.benchmarks.get(task)
        prompts = [evidence.prompt_text(line) for line in lines]
        pre, suf = _common_ends(prompts)
        columns, config = evidence.data_columns(benchmark), evidence.data_config(benchmark, task)
        counts = dict.fromkeys(evidence.OUTCOMES, 0)
        categories: set[str] = set()
        chunks = []
        order = sorted(range(len(lines)), key=lambda i: (_doc_key(lines[i].get("doc_id")), i))
        for start in range(0, len(order), self.chunk):
            rows, details = [], []
            for i in order[start : start + self.chunk]:
                line, prompt = lines[i], prompts[i]
                metric, record = evidence.score_record(line)
                outcome = evidence.outcome(line, record)
                counts[outcome] += 1
                cat = evidence.category(record)
                categories.add(cat)
                doc_row = self.data.row(benchmark, config, columns, record.get("id"))
                images = [e["id"] for b in image_bytes(doc_row) if (e := self.images.add(b))]
                middle = prompt[pre : len(prompt) - suf]
                reply = evidence.reply_text(line)
                score = evidence.number(record.get("score"))
                parsed = record.get("parsed") if "parsed" in record else reply  # a judge reads the whole reply
                shown = {
                    "prompt": self.cut(middle),
                    "reply": self.cut(reply),
                    "parsed": self.cut(evidence.text(parsed)) if parsed is not None else (None, None),
                }
                long = {field: where for field, (_, where) in shown.items() if where}  # cut: [text file, length]
                turns = evidence.conversation(line)
                for turn in turns or ():
                    for part in turn["parts"]:
                        if "text" in part:
                            part["text"], where = self.cut(part["text"])
                            if where:
                                part["long"] = where
                rows.append([line.get("doc_id"), evidence.OUTCOMES.index(outcome),
                             None if score is None else round(score, 4), _short(evidence.text(parsed), SHORT),
                             _short(evidence.truth(line, record, benchmark), SHORT), cat, _short(middle, SNIPPET),
                             _short(reply, SNIPPET), images[0] if images else ""])  # fmt: skip
                details.append(_clean({
                    "prompt": shown["prompt"][0],
                    "reply": shown["reply"][0],
                    "parsed": shown["parsed"][0],
                    **({"long": long} if long else {}),
                    **({"turns": turns} if turns is not None else {}),
                    **({"tokens": tokens} if (tokens := evidence.token_counts(line)) is not None else {}),
                    "judged_whole": "parsed" not in record,
                    "why": record.get("reason") or record.get("rule_reason"),
                    "rule": record.get("rule_reason") if record.get("reason") else None,
                    "truth": evidence.truth(line, record, benchmark),
                    "metric": metric,
                    "record": record,
                    "images": images,
                    "doc_hash": line.get("doc_hash"),
                    "blocks": evidence.blocks(benchmark, line, record, doc_row),
                }))  # fmt: skip
            cid = self.next_id
            self.next_id += 1
            _write_js(self.out / "data" / f"l{cid}.js", "list", [cid, rows])
            _write_js(self.out / "data" / f"d{cid}.js", "detail", [cid, details])
            chunks.append({"id": cid, "n": len(rows), "first": rows[0][0], "last": rows[-1][0]})
        self.samples += len(lines)
        self.entries.append({
            "run": run, "task": task, "benchmark": benchmark or "", "n": len(lines), "skipped": skipped,
            "counts": counts,
            "prefix": prompts[0][:pre] if prompts else "",
            "suffix": prompts[0][len(prompts[0]) - suf:] if prompts else "",
            "categories": sorted(categories), "chunks": chunks,
            "data": self.data.where(benchmark) if benchmark in self.data.roots else None,
        })  # fmt: skip


def _doc_key(doc: Any) -> tuple[int, Any]:
    return (0, doc) if isinstance(doc, (int, float)) and not isinstance(doc, bool) else (1, str(doc))


# ---------------------------------------------------------------------------------------
# the folder
# ---------------------------------------------------------------------------------------


def folder_size(out: Path) -> int:
    return sum(f.stat().st_size for f in out.rglob("*") if f.is_file())


def build(paths: Sequence[Path | str], out: Path | str, labels: list[str] | None = None,
          data: Mapping[str, str] | None = None, seed: int = SEED, plots: bool = True,
          chunk: int = CHUNK, drawn: Sequence[Path] | None = None) -> dict[str, Any]:  # fmt: skip
    """Write the page for the runs under ``paths`` into ``out`` (emptied of an earlier page first); a summary.

    ``drawn``: the PNG plots :func:`lmms_spatial.reports.plots.make_plots` already drew for these same runs, labels
    and seed (``lmms-spatial demo``'s report), in its order: copied instead of drawn again (the same bytes)."""
    from lmms_spatial.reports.report import build as build_report
    from lmms_spatial.reports.report import describe_run

    out = Path(out)
    report = build_report(paths, labels=labels, seed=seed)
    for sub in ("data", "thumbs", "large", "plots"):
        shutil.rmtree(out / sub, ignore_errors=True)
    (out / "data").mkdir(parents=True, exist_ok=True)
    runs: list[Run] = report["runs"]
    tables: list[Table] = report["tables"]
    recorded, refused = recorded_roots((run.results_file, run.data) for run in runs)
    index = DataIndex(data_roots(data, recorded))
    writer = SampleWriter(out, index, chunk)
    for i, run in enumerate(runs):
        writer.add_run(i, run)
    pngs: list[str] = []
    if plots and tables:
        if drawn is None:
            from lmms_spatial.reports.layouts import benchmark_reports
            from lmms_spatial.reports.plots import make_plots

            scatters = [s for part in benchmark_reports().values() for s in part.scatters]
            written = make_plots(tables, out / "plots", scatters)
        else:
            (out / "plots").mkdir()
            written = [Path(shutil.copyfile(p, out / "plots" / Path(p).name)) for p in drawn]
        pngs = [p.relative_to(out).as_posix() for p in written]
    manifest = {
        "schema": 1,
        "runs": [
            {
                "label": r.label,
                "model": r.conditions.model.name,
                "file": str(r.results_file),
                "describe": describe_run(r).removeprefix("- "),
            }
            for r in runs
        ],  # fmt: skip
        "warnings": report["warnings"],
        "tables": [table_json(t) for t in tables],
        "plots": pngs,
        "outcomes": list(evidence.OUTCOMES),
        "tasks": writer.entries,
        "samples": writer.samples,
        "skipped": len(writer.skipped),
        "preview": PREVIEW,
        "missing_data": sorted({e["benchmark"] for e in writer.entries if e["benchmark"] and e["data"] is None}),
        "data_notes": [note for key, note in sorted(refused.items()) if key not in (data or {})],
    }
    _write_js(out / "data" / "manifest.js", "manifest", _clean(manifest))
    assets = resources.files("lmms_spatial.view") / "assets"
    for name in ASSETS:
        (out / name).write_bytes((assets / name).read_bytes())
    return {
        "out": out,
        "index": out / "index.html",
        "runs": len(runs),
        "tables": len(tables),
        "samples": writer.samples,
        "images": len([e for e in writer.images.seen.values() if e]),
        "thumb_bytes": writer.images.thumb_bytes,
        "bytes": folder_size(out),
        "missing_data": manifest["missing_data"],
        "skipped": writer.skipped,
        "data_notes": manifest["data_notes"],
    }


def summary_lines(result: Mapping[str, Any]) -> list[str]:
    """What the command prints: where the page is, what it holds, and the folder's size."""
    n = result["samples"]
    per = f", {result['thumb_bytes'] / n:.0f} bytes of thumbnails per sample" if n else ""
    lines = [
        f"view: {result['runs']} runs, {result['tables']} tables, {n} samples, {result['images']} distinct images{per}",
    ]
    skipped: list[SkippedLine] = result.get("skipped", [])
    if skipped:
        lines.append(f"view: {count_of(len(skipped), 'line')} of the samples files skipped, not samples "
                     "(the page counts them and names them in its warnings):")  # fmt: skip
        lines += [f"view:   {line}" for line in name_skipped(skipped)]
    lines += [f"view: {note}" for note in result.get("data_notes", [])]
    if result["missing_data"]:
        lines.append("view: no images for " + ", ".join(result["missing_data"]) + " (no local data: pass --data "
                     "KEY=PATH or set its LMMS_SPATIAL_<NAME>_PATH)")  # fmt: skip
    lines.append(f"view written: {Path(result['index']).resolve()} (folder {_size(result['bytes'])}); open it in a "
                 "browser, no server needed")  # fmt: skip
    return lines


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n}"
