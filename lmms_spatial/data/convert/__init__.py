"""Converters from each benchmark's published release to the normalised layout the tasks read.

One module per benchmark (its ``convert`` part, ``tasks/<key>/convert.py``), each with ``convert(...)`` (the library
call) and ``main(argv)`` (the ``lmms-spatial convert <benchmark> ...`` command). :func:`convert_release` is what
automatic preparation calls (``lmms_spatial.data.prepare``): it runs a converter on a downloaded release strictly
(no row skipped) and turns every way a release can disagree with the converter into :class:`ReleaseMismatch`, whose
message says what was found and what was expected.

Every benchmark whose ``BENCHMARK`` names a ``convert`` part is registered under its key (``lmms-spatial
new-task`` writes one), so adding one edits no shared file; it states what it expects of a release in
``EXPECTED``.
"""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lmms_spatial.benchmark import Benchmark
    from lmms_spatial.data.column_map import ColumnMap


def discovered(benchmarks: Mapping[str, Benchmark] | None = None) -> dict[str, str]:
    """{benchmark key: module name} for every benchmark whose ``BENCHMARK`` names a ``convert`` part (default: the
    registry's). Nothing is imported until a converter is used."""
    if benchmarks is None:
        from lmms_spatial.data.registry import BENCHMARKS as benchmarks
    return {key: bench.module_name("convert") for key, bench in benchmarks.items() if bench.convert}


# benchmark key -> converter module
CONVERTERS: dict[str, str] = discovered()


class ReleaseMismatch(RuntimeError):
    """A release the converter cannot read as published; the message is one paragraph."""


def module(key: str) -> ModuleType:
    if key not in CONVERTERS:
        raise KeyError(f"no converter for {key!r}; known: {', '.join(CONVERTERS)}")
    return importlib.import_module(CONVERTERS[key])


def describe_release(root: Path, limit: int = 8) -> str:
    """What a release folder holds, in one sentence: top-level entries, file kinds, first table's columns."""
    root = Path(root)
    if not root.is_dir():
        return f"{root} does not exist"
    top = sorted(p.name + ("/" if p.is_dir() else "") for p in root.iterdir() if not p.name.startswith("."))
    files = [p for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")]
    kinds = Counter(p.suffix.lower() or "(no suffix)" for p in files)
    shown = ", ".join(top[:limit]) + (f" and {len(top) - limit} more" if len(top) > limit else "")
    counted = ", ".join(f"{n} {k}" for k, n in kinds.most_common(6)) or "none"
    text = f"{len(files)} files ({counted}); top level: {shown or 'empty'}"
    tables = sorted(p for p in files if p.suffix.lower() in {".csv", ".jsonl", ".json", ".parquet"})
    if tables:
        text += f"; {tables[0].relative_to(root)} has {_columns(tables[0])}"
    return text


def _columns(path: Path) -> str:
    """The first row's keys (or the parquet schema's names), read without loading the file."""
    try:
        names = table_columns(path, strict=True)
    except Exception as exc:  # describing must never hide the real problem
        return f"an unreadable first row ({type(exc).__name__})"
    if isinstance(names, str):
        return f"a first row of type {names}"
    return f"{'columns' if path.suffix.lower() in {'.csv', '.parquet'} else 'keys'} {names}"


def table_columns(path: Path, strict: bool = False) -> list[str] | str:
    """A table's column names: the CSV header, the parquet schema, or the first JSON row's keys (sorted).

    Only the start of the file is read. Unreadable: ``[]`` (``strict``: the exception); a first JSON row
    that is no object: ``[]`` (``strict``: its type's name).
    """
    import json

    try:
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(path).names)
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(65536)
        if suffix == ".csv":
            return head.splitlines()[0].split(",") if head else []
        first = head.lstrip()
        if suffix == ".jsonl" or not first.startswith("["):
            row = json.loads(first.splitlines()[0]) if first else {}
        else:  # a JSON list: the first object's keys, found without parsing the whole file
            decoder = json.JSONDecoder()
            row, _ = decoder.raw_decode(first[1:].lstrip())
    except Exception:
        if strict:
            raise
        return []
    if isinstance(row, dict):
        return sorted(row)
    return type(row).__name__ if strict else []


def print_rejects(rejects: Sequence[str], limit: int = 50) -> None:
    """The command-line converters' list of rejected rows, on stderr, at most ``limit`` of them."""
    for line in rejects[:limit]:
        print(f"REJECT {line}", file=sys.stderr)
    if len(rejects) > limit:
        print(f"... and {len(rejects) - limit} more rejects", file=sys.stderr)


def convert_release(key: str, src: Path, out: Path, column_map: ColumnMap | None = None) -> None:
    """Convert a downloaded release strictly; any disagreement becomes :class:`ReleaseMismatch`.

    ``column_map`` (a user's ``LMMS_SPATIAL_<NAME>_MAP``) is handed to the converter when not empty.
    """
    mod = module(key)
    mapped = {"column_map": column_map} if column_map else {}
    try:
        result = mod.convert(Path(src), Path(out), embed_images=False, **mapped)  # point at the download, never copy it
        rejects: Sequence[object] = getattr(result, "rejects", None) or getattr(result, "problems", None) or []
    except SystemExit as exc:  # the command-line converters exit with their message
        rejects = [exc.code if isinstance(exc.code, str) else f"exit status {exc.code}"]
    except Exception as exc:  # noqa: BLE001 - every failure is reported with the release's contents
        rejects = [f"{type(exc).__name__}: {exc}"]
    if rejects:
        first = str(rejects[0]).splitlines()
        detail = " ".join(line.strip() for line in first[:3])[:400]
        expected = getattr(mod, "EXPECTED", f"the layout {mod.__name__} describes")
        raise ReleaseMismatch(
            f"{len(rejects)} problem(s), first: {detail}. Found: {describe_release(src)}. Expected: {expected}."
        )
