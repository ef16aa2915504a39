"""Aggregation helpers shared by every benchmark.

All means use :func:`math.fsum`, so a result does not depend on the order in which
lmms-eval's threads or batches delivered the per-document records.

A *score record* is the dict a task's ``process_results`` returns for one document:
``{"id", "score", "parsed", "reason", ...}`` plus benchmark fields such as ``category``
or ``n_options``. ``parsed is None`` means the answer could not be parsed (it scored 0).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Record = Mapping[str, Any]


def mean(values: Iterable[float]) -> float:
    """Order-independent mean; an empty input is NaN (there is nothing to report)."""
    values = [float(v) for v in values]
    return math.fsum(values) / len(values) if values else float("nan")


def accuracy(records: Iterable[Record], key: str = "score") -> float:
    return mean(r[key] for r in records)


def group_by(records: Iterable[Record], key: str | Callable[[Record], Any]) -> dict[Any, list[Record]]:
    """Records grouped by a field (or a function of the record), groups in sorted key order."""
    getter = key if callable(key) else (lambda r: r[key])
    groups: dict[Any, list[Record]] = {}
    for record in records:
        groups.setdefault(getter(record), []).append(record)
    return {k: groups[k] for k in sorted(groups, key=str)}


def group_accuracy(records: Iterable[Record], by: str, key: str = "score") -> dict[Any, float]:
    """Accuracy per group (micro average inside each group)."""
    return {group: accuracy(rs, key) for group, rs in group_by(records, by).items()}


def unweighted_mean(subscores: Mapping[Any, float]) -> float:
    """Macro average: each sub-score counts once, whatever its number of questions.

    Used where a paper averages task accuracies (e.g. MMPerspective's PAcc/RAcc/Overall).
    """
    return mean(subscores.values())


def is_unparsed(record: Record) -> bool:
    return record.get("parsed") is None


def unparsed_rate(records: Iterable[Record]) -> float:
    """Share of documents whose answer could not be parsed (they score 0)."""
    return mean(1.0 if is_unparsed(r) else 0.0 for r in records)


def chance_level(option_counts: Iterable[int]) -> float:
    """Expected accuracy of a uniform random guess: the mean of 1/len(options)."""
    return mean(1.0 / n for n in option_counts if n > 0)


def seed_summary(accuracies_by_seed: Mapping[Any, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Mean and error bar per key over seeds: std / sqrt(number of seeds) (DORI App. K; the report's seed pools).

    ``std`` is the population standard deviation (``numpy.std``'s default, ddof=0); the
    paper does not say which, so the record also carries ``std_sample`` (ddof=1).
    """
    per_type: dict[str, list[float]] = {}
    for accs in accuracies_by_seed.values():
        for qt, value in accs.items():
            per_type.setdefault(qt, []).append(float(value))
    summary = {}
    for qt in sorted(per_type):
        values = per_type[qt]
        k = len(values)
        m = mean(values)
        var = math.fsum((v - m) ** 2 for v in values)
        std = math.sqrt(var / k)
        summary[qt] = {
            "mean": m,
            "std": std,
            "std_sample": math.sqrt(var / (k - 1)) if k > 1 else float("nan"),
            "error": std / math.sqrt(k),
            "seeds": k,
        }
    return summary
