"""A column/key mapping for a release whose names changed: the user finishes the conversion, not us.

Some releases' file lists and record keys could not be verified, so a release may name a
column otherwise than any spelling its converter accepts. Instead of waiting for a new version,
the user says which release column holds which field of the normalised layout::

    lmms-spatial convert <key> RELEASE/ out/ --map question=query,answer=correct_option
    export LMMS_SPATIAL_<NAME>_MAP=question=query,answer=correct_option   # automatic preparation

``FIELD`` is a column of the benchmark's normalised layout (its hub card) that the converter
reads from the release (the converter's ``SPELLINGS``); ``COLUMN`` is the name in the release.
Each row then carries the column's value under the converter's own name for the field, before
the converter reads it: everything else (parsing, checks, rejects) is unchanged. The prepared
copy records the mapping in its marker and is remade when it changes.

When a release does not fit, :func:`map_hint` reads the column names of its tables, and where
every missing field has exactly one likely column (a shared word: ``query`` for ``question``,
``correct_option`` for ``answer``, ...), ends the found-versus-expected paragraph with the
exact mapping to try.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmms_spatial.benchmark import Benchmark


class MappingError(ValueError):
    """A mapping that does not fit the benchmark's layout; the message is one line."""


@dataclass(frozen=True)
class ColumnMap:
    key: str = ""
    # (layout field, release column), as the user gave them
    pairs: tuple[tuple[str, str], ...] = ()
    # (release column, the name the converter reads for that field)
    renames: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pairs)

    @property
    def text(self) -> str:
        """The mapping as written on the command line (``question=query,answer=gt``); ``""`` when empty."""
        return ",".join(f"{field}={column}" for field, column in self.pairs)

    def apply(self, row: Any) -> Any:
        """``row`` with each mapped column's value also under the converter's name (non-mappings unchanged)."""
        if not self.renames or not isinstance(row, Mapping):
            return row
        out = dict(row)
        for column, name in self.renames:
            if column in row:
                out[name] = row[column]
        return out

    def columns(self, names: Iterable[str]) -> list[str]:
        """A table's column names as the converter sees them after mapping."""
        names = list(names)
        return names + [name for column, name in self.renames if column in names and name not in names]


def spellings(key: str) -> dict[str, tuple[str, ...]]:
    """{layout field: the release names its converter reads for it, its own name first}."""
    from lmms_spatial.data.convert import CONVERTERS, module

    return dict(getattr(module(key), "SPELLINGS", {})) if key in CONVERTERS else {}


def parse(key: str, text: str, where: str = "--map") -> ColumnMap:
    """``FIELD=COLUMN[,FIELD=COLUMN...]`` checked against ``key``'s layout; :class:`MappingError` otherwise."""
    from lmms_spatial.data.cards import layout_columns

    pairs: list[tuple[str, str]] = []
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    if not items:
        return ColumnMap(key)
    known = spellings(key)
    if not known:
        raise MappingError(f"{where}: {key} has no converter that takes a column mapping")
    mappable = ", ".join(known)
    layout = layout_columns(key)
    for item in items:
        field, sep, column = (part.strip() for part in item.partition("="))
        if not (sep and field and column):
            raise MappingError(f"{where}: {item!r} is not FIELD=COLUMN (e.g. question=query); mappable: {mappable}")
        if field not in layout:
            raise MappingError(f"{where}: {field!r} is not a column of {key}'s normalised layout; mappable: {mappable}")
        if field not in known:
            raise MappingError(
                f"{where}: {field!r} is made by the {key} converter, not read from one release column; "
                f"mappable: {mappable}"
            )
        if field in dict(pairs):
            raise MappingError(f"{where}: {field!r} is mapped twice")
        pairs.append((field, column))
    return ColumnMap(key, tuple(pairs), tuple((column, known[field][0]) for field, column in pairs))


def from_env(bench: Benchmark) -> ColumnMap:
    """The mapping in ``LMMS_SPATIAL_<NAME>_MAP`` (empty when unset)."""
    return parse(bench.converter or bench.key, os.environ.get(bench.map_var, ""), where=bench.map_var)


def add_map_argument(parser: argparse.ArgumentParser, key: str) -> None:
    """``--map FIELD=COLUMN,...`` for a converter's command line (``args.map``: a :class:`ColumnMap`)."""

    def parsed(text: str) -> ColumnMap:
        try:
            return parse(key, text)
        except MappingError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("--map: ")) from None  # argparse names --map

    parser.add_argument(
        "--map",
        type=parsed,
        default=ColumnMap(key),
        metavar="FIELD=COLUMN,...",
        help=f"release columns named otherwise, e.g. question=query,answer=gt (fields: {', '.join(spellings(key))})",
    )


# ---------------------------------------------------------------------------------------
# suggesting a mapping from the names a release uses
# ---------------------------------------------------------------------------------------

# words that name a field in releases (a column sharing one with a missing field is a likely match)
SYNONYMS: dict[str, set[str]] = {
    "id": {"id", "qid", "uid", "idx", "index"},
    "image": {"image", "images", "img", "picture", "photo", "pano", "panorama", "erp", "file", "filename"},
    "images": {"image", "images", "img", "imgs", "picture", "pictures", "photo", "photos", "file", "files"},
    "task": {"task", "subtask", "type"},
    "granularity": {"granularity", "granular", "level", "grain", "fine", "coarse"},
    "question": {"question", "query", "prompt", "q", "instruction"},
    "options": {"options", "option", "choices", "choice", "candidates", "candidate", "alternatives"},
    "answer": {"answer", "gt", "label", "correct", "truth", "solution", "target"},
    "answer_text": {"open", "free", "reference"},
    "turn_id": {"turn", "round"},
    "skill": {"skill", "skills", "ability", "capability"},
    "robust_group": {"group", "seed"},
    "perturbation": {"perturbation", "variant", "augmentation"},
}
_TABLES = {".csv", ".jsonl", ".json", ".parquet"}


def _words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return {w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w}


def _likely(field: str, column: str) -> bool:
    if _words(column) & SYNONYMS.get(field, {field}):
        return True
    return difflib.SequenceMatcher(None, field, column.lower()).ratio() >= 0.8


def release_columns(release: Path, limit: int = 50) -> list[str]:
    """The column names (first rows' keys) of the release's tables, in file order, without repeats."""
    from lmms_spatial.data.convert import table_columns

    root = Path(release)
    if not root.is_dir():
        return []
    tables = sorted(
        p for p in root.rglob("*") if p.suffix.lower() in _TABLES and p.is_file() and not p.name.startswith(".")
    )
    found: dict[str, None] = {}
    for path in tables[:limit]:
        found.update(dict.fromkeys(table_columns(path)))
    return list(found)


def suggest(key: str, found: Sequence[str], current: ColumnMap | None = None) -> ColumnMap | None:
    """The mapping (``current`` plus new pairs) that gives every missing field one likely column, if any."""
    from lmms_spatial.data.convert import module

    mod = module(key)
    known = spellings(key)
    kept = [(field, column) for field, column in (current.pairs if current else ()) if column in found]
    current = parse(key, ",".join(f"{f}={c}" for f, c in kept))  # a mapped column the release lacks: dropped
    alternatives: dict[str, tuple[str, ...]] = getattr(mod, "ALTERNATIVES", {})
    seen = set(current.columns(found))
    claimed = {name for names in known.values() for name in names} | {column for _f, column in current.pairs}
    claimed |= {name for names in alternatives.values() for name in names}
    missing = [
        field
        for field in getattr(mod, "REQUIRED", ())
        if field not in dict(current.pairs) and not (set(known[field]) | set(alternatives.get(field, ()))) & seen
    ]
    free = [column for column in found if column not in claimed]
    picks: dict[str, str] = {}
    for field in missing:
        candidates = [column for column in free if _likely(field, column)]
        if len(candidates) != 1:
            return None
        picks[field] = candidates[0]
    if not picks or len(set(picks.values())) != len(picks):
        return None
    return parse(key, ",".join([current.text, *(f"{f}={c}" for f, c in picks.items())]))


def map_hint(bench: Benchmark, release: Path, current: ColumnMap | None = None) -> str:
    """The sentence(s) ending a found-versus-expected paragraph: unknown mapped columns, and a likely mapping."""
    key = bench.converter or bench.key
    if not spellings(key):
        return ""
    found = release_columns(release)
    current = current or ColumnMap(key)
    text = ""
    absent = [column for _field, column in current.pairs if column not in found]
    if absent and found:
        text += f" {bench.map_var} names column(s) {absent} that no table of the release has."
    suggestion = suggest(key, found, current)
    if suggestion is not None:
        text += (
            f" The names found make a mapping likely: set {bench.map_var}={suggestion.text} "
            f"(or `lmms-spatial convert {key} RELEASE OUT --map {suggestion.text}`)."
        )
    return text


def run_converter(key: str, argv: list[str]) -> int:
    """``lmms-spatial convert KEY ...``: the converter's ``main``, then, when it failed, a likely ``--map``."""
    from lmms_spatial.data.convert import module

    try:
        status = module(key).main(argv)
    except SystemExit as exc:  # argparse (--help: 0) or a converter's own message
        if not exc.code:
            raise
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        status = exc.code if isinstance(exc.code, int) else 1
    if status:
        hint = _command_line_hint(key, argv)
        if hint:
            print(hint, file=sys.stderr)
    return status


def _command_line_hint(key: str, argv: list[str]) -> str:
    release = next((Path(a) for a in argv if not a.startswith("-") and Path(a).is_dir()), None)
    if release is None or not spellings(key):
        return ""
    given = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--map"] + [
        a.removeprefix("--map=") for a in argv if a.startswith("--map=")
    ]
    try:
        current = parse(key, given[-1] if given else "")
    except MappingError:  # argparse has said why
        return ""
    suggestion = suggest(key, release_columns(release), current)
    return f"lmms-spatial convert: the names found make a mapping likely: --map {suggestion.text}" if suggestion else ""
