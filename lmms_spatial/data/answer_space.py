"""The answers a question allows, read from a normalised document (no model needed).

Used by the ``random_choice`` model (the demo's). A benchmark whose answers are not an ``options`` list
or Yes/No declares its own rule as its ``BENCHMARK``'s ``answers`` part (``answer_space(doc) -> list[str] | None``),
tried first for that benchmark's tasks; ``None`` from it leaves the generic rules below.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from lmms_spatial.metrics.extraction import LETTERS


@functools.cache
def _rules() -> dict[str, Any]:
    """{benchmark key: its ``answers`` module}, for the benchmarks that declare one."""
    from lmms_spatial.data.registry import with_part

    return {key: bench.load("answers") for key, bench in with_part("answers").items()}


def _generic(doc: Mapping[str, Any]) -> list[str] | None:
    options = doc.get("options")
    if isinstance(options, (list, tuple)) and len(options) > 0:
        return list(LETTERS[: len(options)])
    if str(doc.get("answer", "")).strip().lower() in {"yes", "no"}:
        return ["Yes", "No"]
    return None


def answer_space(doc: Mapping[str, Any], benchmark: str | None = None) -> list[str]:
    """The benchmark's own rule (its ``answers`` part) if it gives one; else option letters (an
    ``options`` list), else Yes/No (a yes/no answer), else ``[]`` (an open answer).

    ``benchmark`` None: a task not known by its name (a YAML of the user's that includes one of ours, under its
    own name) is read by every benchmark's rule, each where its module's ``BEFORE_GENERIC`` puts it: before the
    options list and Yes/No, or after them."""
    rules = _rules()
    if benchmark is not None:  # its own rule, if it declares one, then the generic ones
        own = [rules[benchmark].answer_space] if benchmark in rules else []
        order: list[Callable[[Mapping[str, Any]], list[str] | None]] = [*own, _generic]
    else:
        first = [m.answer_space for m in rules.values() if m.BEFORE_GENERIC]
        order = [*first, _generic, *(m.answer_space for m in rules.values() if not m.BEFORE_GENERIC)]
    for rule in order:
        found = rule(doc)
        if found is not None:
            return found
    return []
