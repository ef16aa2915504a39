"""Published rows of each paper's tables, bundled as JSON in the benchmark's folder (``tasks/<key>/published.json``).

Transcribed from the seed texts (``/work/shared/seeds``): every table records its number, the
seed file, its columns (our metric keys) and the rows that could be read unambiguously; rows
that could not are listed under ``skipped`` with the reason. Values are as printed (percent or
fraction, see ``scale``: what a 0-1 score is multiplied by to be comparable).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def load(benchmark: str) -> dict[str, Any]:
    """The reference file of one benchmark: {benchmark, paper, source, tables: [...]}."""
    text = resources.files("lmms_spatial.tasks").joinpath(benchmark, "published.json").read_text("utf-8")
    return json.loads(text)


def table(benchmark: str, table_id: str) -> dict[str, Any]:
    for t in load(benchmark)["tables"]:
        if t["id"] == table_id:
            return t
    raise KeyError(f"{benchmark}: no reference table {table_id!r}")
