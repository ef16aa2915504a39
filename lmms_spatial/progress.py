"""Progress bars for our own long steps: converting a release, writing its shards, building a report.

One helper so every bar behaves the same way, as lmms-eval's do: tqdm, with the count, the total,
the rate and the ETA, on stderr. ``disable=None`` turns a bar off when stderr is not a terminal,
so logs, CI output and tests stay clean. (The judge's :meth:`~lmms_spatial.judge.Judge.score_many`
and the staged model have their own tqdm bars.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tqdm import tqdm


def progress(iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str, unit: str = "item") -> Any:
    """A tqdm bar over ``iterable`` (or updated by hand: ``bar.update(n)``), shown only on a terminal."""
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=None, dynamic_ncols=True)
