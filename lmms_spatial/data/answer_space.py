"""The answers a question allows, read from a normalised document (no model needed).

Used by the ``random_choice`` model and for chance levels. A benchmark whose answers are not an ``options`` list
or Yes/No declares its own rule in ``tasks/<key>/answers.py`` (``answer_space(doc) -> list[str] | None``), found by
file name and tried first; ``None`` from it leaves the generic rules below.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from lmms_spatial.metrics.extraction import LETTERS


@functools.cache
def _rule(benchmark: str) -> Callable[[Mapping[str, Any]], list[str] | None] | None:
    from lmms_spatial.paths import benchmark_modules

    module = benchmark_modules("answers").get(benchmark)
    return importlib.import_module(module).answer_space if module else None


def answer_space(doc: Mapping[str, Any], benchmark: str | None = None) -> list[str]:
    """The benchmark's own rule (``tasks/<benchmark>/answers.py``) if it gives one; else option letters (an
    ``options`` list), else Yes/No (a yes/no answer), else ``[]`` (an open answer)."""
    rule = _rule(benchmark) if benchmark else None
    if rule is not None:
        own = rule(doc)
        if own is not None:
            return own
    options = doc.get("options")
    if isinstance(options, (list, tuple)) and len(options) > 0:
        return list(LETTERS[: len(options)])
    if str(doc.get("answer", "")).strip().lower() in {"yes", "no"}:
        return ["Yes", "No"]
    return []
