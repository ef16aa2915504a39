"""Did a run reproduce the paper? Δ to the published row of the same model, judged by the run's own uncertainty.

A run's row is matched to a published row by name (:func:`match`): the run's label (the checkpoint's basename,
``--labels``) or its ``pretrained`` / ``model_version`` against the row's model and the names it is known by
(``known_as`` in ``published.json``), both read the same way (:func:`normalise`: the organisation dropped, case,
``.``/``_``/space as ``-``, an ``-Instruct``/``-Inst.`` suffix and an API snapshot date dropped), so
``Qwen/Qwen2.5-VL-72B-Instruct`` is the paper's ``Qwen2.5-VL-72B`` and ``gpt-4o-2024-08-06`` its ``GPT-4o``.

Per column where both have a value (:func:`compare`): Δ = run − paper, in the table's units; whether the
published value lies inside the run's 95% interval (the bootstrap CI of one run; mean ± 1.96·std/√n over seeds),
the verdict that accounts for the run's sample size; and, for comparison, EASI's mark by |Δ| in points of a
percentage (≤ 2.5, ≤ 5, > 5; EASI prints ✅ ☑️ ❌), which is blind to sample size and protocol. A column that is not
a percentage (a distance) gets no mark. The table's note (:func:`verdict`) says in how many columns the paper lies
inside the run's interval and what differed from the paper's protocol (generation settings, image and prompt
options, judge, documents n/N), and a partial run's verdict says partial.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lmms_spatial.conditions import LABEL_ARGS, parse_model_args, short_name

EASI_MARKS = (("≤2.5", 2.5, "✅"), ("≤5", 5.0, "☑️"), (">5", math.inf, "❌"))  # (grade, |Δ| up to, EASI's mark)
Z95 = 1.959963984540054  # the normal quantile of a two-sided 95% interval (seeds: mean ± Z95·std/√n)
_SEPARATORS = re.compile(r"[\s._]+")
_DATE = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$")  # an API snapshot: gpt-4o-2024-08-06, ...-20240620
_INSTRUCT = re.compile(r"-(?:instruct|inst)$")


def normalise(name: str) -> str:
    """A model name as the matching reads it: ``Qwen/Qwen2.5-VL-72B-Instruct`` -> ``qwen2-5-vl-72b``."""
    text = short_name(str(name).strip()).lower()
    text = _SEPARATORS.sub("-", text).strip("-")
    text = _DATE.sub("", text)
    return _INSTRUCT.sub("", text)


def run_names(label: str, args: str | None = None) -> list[str]:
    """What a run is known by: its label, and the ``pretrained`` / ``model_version`` / ``model`` it was given (a
    local checkpoint's path too: its last folder is its name)."""
    given = parse_model_args(args)
    return [label, *(given[key] for key in LABEL_ARGS if given.get(key))]


def match(names: Iterable[str], rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The published row whose model (or a name in its ``known_as``) reads as one of ``names``; None when no row
    does, or when two rows do (an ambiguous name matches nothing)."""
    wanted = {normalise(n) for n in names} - {""}
    found = [r for r in rows if wanted & {normalise(n) for n in [r["model"], *r.get("known_as", [])]}]
    return found[0] if len(found) == 1 else None


def easi_grade(delta: float, scale: float) -> str | None:
    """EASI's grade of |Δ| (``≤2.5``, ``≤5``, ``>5`` points of a percentage) for a table of ``scale`` (100: values in
    percent; 1: fractions); None for a non-finite Δ."""
    if not math.isfinite(delta):
        return None
    points = abs(delta) * 100.0 / scale
    return next(grade for grade, bound, _ in EASI_MARKS if points <= bound + 1e-9)


def easi_mark(grade: str) -> str:
    """EASI's mark of a grade: ``≤2.5`` -> ✅."""
    return {g: mark for g, _, mark in EASI_MARKS}[grade]


@dataclass(frozen=True)
class Comparison:
    """One column: the run's value, the paper's, Δ, whether the paper lies inside the run's interval (None: the
    run has no interval there) and EASI's grade (None: not a percentage)."""

    column: str
    run: float
    paper: float
    delta: float
    inside: bool | None
    grade: str | None


def interval(value: float, lo: float | None, hi: float | None, err: float | None) -> tuple[float, float] | None:
    """The run's 95% interval for a cell: its bootstrap CI, else mean ± Z95·std/√n over seeds, else None."""
    if lo is not None and hi is not None:
        return lo, hi
    if err is not None and math.isfinite(err):
        return value - Z95 * err, value + Z95 * err
    return None


def compare(column: str, value: float, paper: float, bounds: tuple[float, float] | None, scale: float,
            percentage: bool) -> Comparison:  # fmt: skip
    """The comparison of one cell (all in the table's units)."""
    inside = None if bounds is None else bounds[0] - 1e-9 <= paper <= bounds[1] + 1e-9
    delta = value - paper
    return Comparison(column, value, paper, delta, inside, easi_grade(delta, scale) if percentage else None)


def verdict(who: str, row: str, source: str, comparisons: Sequence[Comparison], differences: Sequence[str],
            partial: str | None) -> str:  # fmt: skip
    """The table's note on one run against its published row."""
    judged = [c for c in comparisons if c.inside is not None]
    inside = [c.column for c in judged if c.inside]
    outside = [c.column for c in judged if not c.inside]
    if judged:
        head = f"the published value lies inside the run's 95% interval in {len(inside)} of {len(judged)} columns"
        head += f" (outside: {', '.join(outside)})" if outside else ""
    else:
        head = "the run has no 95% interval for these columns (no samples file): only Δ and EASI's marks"
    grades = [c.grade for c in comparisons if c.grade is not None]
    easi = ", ".join(f"{grade} in {sum(g == grade for g in grades)}" for grade, _, _ in EASI_MARKS if grade in grades)
    text = f"reproduction: {who} against the published row {row} ({source}): {head}"
    if easi:
        text += f"; EASI's grades of |Δ| in points (blind to sample size and protocol): {easi}"
    text += "; what differed from the paper's protocol: " + ("; ".join(differences) or "nothing the run recorded")
    if partial:
        text += f"; partial: {partial}, the paper's row covers the whole split"
    return text
