"""Published rows of each paper's tables, bundled as JSON in the benchmark's folder (its
``BENCHMARK.published``, ``tasks/<key>/published.json``).

Transcribed from the seed texts (``/work/shared/seeds``) or the paper: every table records its number, its
columns (our metric keys) and the rows that could be read unambiguously; rows that could not are listed under
``skipped`` with the reason. Values are as printed (percent or fraction, see ``scale``: what a 0-1 score is
multiplied by to be comparable). A report layout names a table by its ``id`` (``Layout(..., reference=id)``) and
compares each of its columns with the published value of the same key.

The file's schema, which :func:`check` enforces (``pytest -k <key>`` runs it on each benchmark's file; an unknown
key is refused, so a typo is not silently ignored)::

    {
      "benchmark": "<key>",                   # the benchmark's key (its folder)
      "paper": "DORI",                        # the paper's short name: "<paper> <table>" in a report's source line
      "citation": {                           # the report's Citation (tasks/<key>/report.py), repeated:
        "text": "...", "title": "...",        #   Citation.text(), Citation.title,
        "arxiv": "2505.21649",                #   Citation.arxiv ("" when the paper has none),
        "url": "https://arxiv.org/abs/..."    #   Citation.url (optional)
      },
      "transcribed_from": "001_....txt",      # where the numbers were read (a seed text, or the paper's version)
      "tables": [{
        "id": "table2",                       # unique in the file: what a layout's reference= names
        "table": "Table 2",                   # as the paper labels it
        "title": "...", "setting": "...",     # optional: its caption, the benchmark's setting it reports
        "scale": 100,                         # 100: values in percent; 1: as fractions (or a distance as printed)
        "columns": ["accuracy", "..."],       # the metric keys of its values, unique
        "rows": [{
          "model": "GPT-4o",                  # unique in the table
          "values": {"accuracy": 55.8},       # exactly the table's columns; null where the paper prints none
          "group": "...", "note": "...",      # optional: its section of the table, a note shown beside it
          "known_as": ["openai/gpt-4o"]       # optional: the names a run of it may carry
        }],
        "notes": ["..."],                     # optional: shown under the report's table
        "skipped": ["..."],                   # optional: rows not transcribed, each with the reason
        "unpublished": ["General"]            # optional: columns of a layout of this table the paper gives no
      }]                                      #   value for (else every layout column must be in "columns")
    }
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from numbers import Real
from typing import Any


@cache
def load(benchmark: str) -> dict[str, Any]:
    """The reference file of one benchmark: {benchmark, paper, citation, transcribed_from, tables: [...]}."""
    from lmms_spatial.data.registry import BENCHMARKS

    name = BENCHMARKS[benchmark].published if benchmark in BENCHMARKS else "published.json"
    text = resources.files("lmms_spatial.tasks").joinpath(benchmark, name).read_text("utf-8")
    return json.loads(text)


def table(benchmark: str, table_id: str) -> dict[str, Any]:
    for t in load(benchmark)["tables"]:
        if t["id"] == table_id:
            return t
    raise KeyError(f"{benchmark}: no reference table {table_id!r}")


# ---------------------------------------------------------------------------------------
# the schema (the module docstring describes it)
# ---------------------------------------------------------------------------------------

SCALES = (1, 100)
# {key: required} at each level of the file
FILE_KEYS = {"benchmark": True, "paper": True, "citation": True, "transcribed_from": True, "tables": True}
CITATION_KEYS = {"text": True, "title": True, "arxiv": True, "url": False}
TABLE_KEYS = {
    "id": True,
    "table": True,
    "title": False,
    "setting": False,
    "scale": True,
    "columns": True,
    "rows": True,
    "notes": False,
    "skipped": False,
    "unpublished": False,
}
ROW_KEYS = {"model": True, "values": True, "group": False, "note": False, "known_as": False}


def _keys(value: Any, keys: Mapping[str, bool], where: str) -> list[str]:
    """Problems with the keys of the object ``value``: not an object, a required key missing, an unknown key."""
    if not isinstance(value, Mapping):
        return [f"{where}: expected an object, got {type(value).__name__}"]
    missing = [k for k, required in keys.items() if required and k not in value]
    unknown = [k for k in value if k not in keys]
    problems = [f"{where}: missing {k!r}" for k in missing]
    problems += [f"{where}: unknown key {k!r} (known: {', '.join(keys)})" for k in unknown]
    return problems


def _text(value: Any, where: str, *, empty: bool = False) -> list[str]:
    if isinstance(value, str) and (empty or value.strip()):
        return []
    return [f"{where}: expected {'a string' if empty else 'a non-empty string'}, got {value!r}"]


def _texts(value: Any, where: str, *, unique: bool = False) -> list[str]:
    """A list of non-empty strings (each one once when ``unique``)."""
    if not isinstance(value, list):
        return [f"{where}: expected a list of strings, got {value!r}"]
    problems = [p for i, item in enumerate(value) for p in _text(item, f"{where}[{i}]")]
    if unique:
        problems += [f"{where}: {item!r} is listed twice" for item in _repeated(value)]
    return problems


def _repeated(items: Iterable[Any]) -> list[Any]:
    seen: list[Any] = []
    repeated: list[Any] = []
    for item in items:
        if item in seen and item not in repeated:
            repeated.append(item)
        seen.append(item)
    return repeated


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _row(row: Any, columns: list[str], where: str) -> list[str]:
    problems = _keys(row, ROW_KEYS, where)
    if not isinstance(row, Mapping):
        return problems
    if "model" in row:
        problems += _text(row["model"], f"{where}.model")
    for name in ("group", "note"):
        if name in row:
            problems += _text(row[name], f"{where}.{name}", empty=True)
    if "known_as" in row:
        problems += _texts(row["known_as"], f"{where}.known_as")
    values = row.get("values")
    if "values" in row and not isinstance(values, Mapping):
        problems.append(f"{where}.values: expected an object, got {values!r}")
    elif isinstance(values, Mapping):
        problems += [f"{where}.values: no value for column {c!r} (null where the paper prints none)"
                     for c in columns if c not in values]  # fmt: skip
        problems += [f"{where}.values: {c!r} is not a column of the table" for c in values if c not in columns]
        problems += [f"{where}.values.{c}: expected a number or null, got {v!r}"
                     for c, v in values.items() if v is not None and not _is_number(v)]  # fmt: skip
    return problems


def _table(t: Any, where: str) -> list[str]:
    problems = _keys(t, TABLE_KEYS, where)
    if not isinstance(t, Mapping):
        return problems
    for name in ("id", "table"):
        if name in t:
            problems += _text(t[name], f"{where}.{name}")
    for name in ("title", "setting"):
        if name in t:
            problems += _text(t[name], f"{where}.{name}", empty=True)
    if "scale" in t and (not _is_number(t["scale"]) or t["scale"] not in SCALES):
        problems.append(f"{where}.scale: expected one of {SCALES} (100: percent, 1: fractions), got {t['scale']!r}")
    columns = t.get("columns")
    if "columns" in t:
        problems += _texts(columns, f"{where}.columns", unique=True)
        if isinstance(columns, list) and not columns:
            problems.append(f"{where}.columns: empty")
    columns = [c for c in columns if isinstance(c, str)] if isinstance(columns, list) else []
    for name in ("notes", "skipped"):
        if name in t:
            problems += _texts(t[name], f"{where}.{name}")
    if "unpublished" in t:
        problems += _texts(t["unpublished"], f"{where}.unpublished", unique=True)
        if isinstance(t["unpublished"], list):
            problems += [f"{where}.unpublished: {c!r} is also in columns" for c in t["unpublished"] if c in columns]
    rows = t.get("rows")
    if "rows" in t and not isinstance(rows, list):
        problems.append(f"{where}.rows: expected a list, got {type(rows).__name__}")
    elif isinstance(rows, list):
        for i, row in enumerate(rows):
            problems += _row(row, columns, f"{where}.rows[{i}]")
        models = [r.get("model") for r in rows if isinstance(r, Mapping)]
        problems += [f"{where}.rows: model {m!r} has two rows" for m in _repeated(models)]
    return problems


def check(data: Any, benchmark: str | None = None) -> list[str]:
    """Every way ``data`` (a parsed ``published.json``) departs from the schema of the module docstring, one line
    each, naming where (``tables[0].rows[3].values``); ``[]`` when it follows it. With ``benchmark``, its
    ``benchmark`` must be that key."""
    problems = _keys(data, FILE_KEYS, "file")
    if not isinstance(data, Mapping):
        return problems
    if "benchmark" in data:
        problems += _text(data["benchmark"], "benchmark")
        if benchmark is not None and data["benchmark"] != benchmark:
            problems.append(f"benchmark: {data['benchmark']!r}, expected the folder's key {benchmark!r}")
    for name in ("paper", "transcribed_from"):
        if name in data:
            problems += _text(data[name], name)
    if "citation" in data:
        citation = data["citation"]
        problems += _keys(citation, CITATION_KEYS, "citation")
        if isinstance(citation, Mapping):
            problems += [p for k in ("text", "title") if k in citation for p in _text(citation[k], f"citation.{k}")]
            problems += [
                p for k in ("arxiv", "url") if k in citation for p in _text(citation[k], f"citation.{k}", empty=True)
            ]
    tables = data.get("tables")
    if "tables" in data and (not isinstance(tables, list) or not tables):
        problems.append(f"tables: expected a non-empty list, got {tables!r}")
    elif isinstance(tables, list):
        for i, t in enumerate(tables):
            problems += _table(t, f"tables[{i}]")
        ids = [t.get("id") for t in tables if isinstance(t, Mapping)]
        problems += [f"tables: id {i!r} is used twice" for i in _repeated(ids)]
    return problems


def check_layouts(layouts: Iterable[Any], data: Mapping[str, Any]) -> list[str]:
    """Problems of a benchmark's report layouts (:class:`lmms_spatial.reports.tables.Layout`) against its published
    file (``data``, valid by :func:`check`): a layout's ``reference`` must name a table there, and each of its
    columns must be a column of that table or be listed as the table's ``unpublished``; every ``unpublished``
    name must be a column of a layout of that table. Layouts without a reference are not compared."""
    tables = {t.get("id"): t for t in data.get("tables", [])}
    problems, shown = [], {}
    for layout in layouts:
        if not layout.reference:
            continue
        ref = tables.get(layout.reference)
        if ref is None:
            problems.append(
                f"layout {layout.key!r}: reference={layout.reference!r} is not a table id of the file "
                f"(ids: {', '.join(map(str, tables))})"
            )
            continue
        known = set(ref.get("columns", [])) | set(ref.get("unpublished", []))
        shown.setdefault(layout.reference, set()).update(c.key for c in layout.columns)
        problems += [
            f"layout {layout.key!r}: column {c.key!r} is not a column of published table {layout.reference!r} "
            f"({', '.join(ref.get('columns', []))}); if the paper gives no value for it, list it in the table's "
            "'unpublished'"
            for c in layout.columns
            if c.key not in known
        ]
    for table_id, ref in tables.items():
        problems += [
            f"table {table_id!r}: unpublished {name!r} is no column of a layout of this table"
            for name in ref.get("unpublished", [])
            if name not in shown.get(table_id, set())
        ]
    return problems
