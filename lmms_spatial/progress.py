"""Progress bars for our own long steps: converting a release, writing its shards, building a report.

One helper so every bar behaves the same way, as lmms-eval's do: tqdm, with the count, the total,
the rate and the ETA, on stderr. ``disable=None`` turns a bar off when stderr is not a terminal,
so logs, CI output and tests stay clean. (The judge's :meth:`~lmms_spatial.judge.Judge.score_many`
and the staged model have their own tqdm bars.)

Model calls: a run of ours sends the requests in saved chunks (:mod:`lmms_spatial.plugin.resume`), and one bar
counts the whole run; the model's own bar (lmms-eval's models update theirs per request or per batch) is
forwarded into it (:func:`counting_into`), so the bar moves as the model answers, not once per saved chunk.
``staged`` and ``omni_cot`` show one named bar per stage (:func:`stage`) instead of the base model's
``Model Responding``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from lmms_spatial import run_state


def progress(iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str, unit: str = "item") -> Any:
    """A tqdm bar over ``iterable`` (or updated by hand: ``bar.update(n)``), shown only on a terminal."""
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=None, dynamic_ncols=True)


# --- model calls: one bar of ours counts what the model's own bar would -------------------------------------


class _Sink:
    """Where a model's progress goes now: our bar, and how many more counts it takes (None: no cap)."""

    def __init__(self, bar: Any, cap: int | None) -> None:
        self.bar, self.left = bar, cap

    def take(self, n: int) -> None:
        n = n if self.left is None else max(0, min(n, self.left))
        if self.left is not None:
            self.left -= n
        if n:
            self.bar.update(n)


_lock = threading.Lock()  # the sinks (run_state.STATE.progress_sinks, innermost last) change from the model's threads


class ForwardedBar:
    """What a model's module-level ``tqdm(...)`` gives while one of our bars counts (:func:`counting_into`):
    nothing is drawn, and each ``update(n)`` the model makes (per request or per batch) moves our bar."""

    def __init__(self, iterable: Iterable[Any] | None = None, *args: Any, **kwargs: Any) -> None:
        self.iterable, self.n, self.total = iterable, 0, kwargs.get("total")
        self.disable = False

    def __iter__(self):
        for item in self.iterable or ():
            yield item
            self.update(1)

    def update(self, n: int | float = 1) -> None:
        self.n += int(n)
        with _lock:
            sinks = run_state.STATE.progress_sinks
            if sinks:
                sinks[-1].take(int(n))

    @staticmethod
    def write(text: str, *args: Any, **kwargs: Any) -> None:  # ``tqdm.write``: a line above the bars
        print(text, file=sys.stderr)

    def __getattr__(self, name: str) -> Any:  # set_description, set_postfix, refresh, close, ...: nothing to draw
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None

    def __enter__(self) -> ForwardedBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def modules_of(model: Any) -> list[str]:
    """The modules a model's code comes from (its class and the classes it inherits ``generate_until`` from,
    e.g. lmms-eval's chat classes from the simple ones): where its ``tqdm`` bars are made."""
    return [cls.__module__ for cls in type(model).__mro__ if cls.__module__ not in ("builtins", "abc")]


@contextmanager
def counting_into(bar: Any, modules: Iterable[str], cap: int | None = None) -> Iterator[_Sink]:
    """While inside: the ``tqdm`` of each module named (a model's, as lmms-eval's models import it) is a
    :class:`ForwardedBar`, so the model's per-request or per-batch updates move ``bar``, at most ``cap`` of
    them. The caller tops the bar up with ``sink.left`` for what the model did not count (answers from a cache,
    a model with no bar of its own)."""
    from tqdm import tqdm as real

    swapped = []
    for name in dict.fromkeys(modules):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "tqdm", None) is real:
            module.tqdm = ForwardedBar
            swapped.append(module)
    sink = _Sink(bar, cap)
    with _lock:
        run_state.STATE.progress_sinks.append(sink)
    try:
        yield sink
    finally:
        with _lock:
            if sink in run_state.STATE.progress_sinks:  # gone if the run state was reset meanwhile
                run_state.STATE.progress_sinks.remove(sink)
        for module in swapped:
            module.tqdm = real


@contextmanager
def stage(name: str, total: int, modules: Iterable[str]) -> Iterator[Any]:
    """A named bar over one stage's ``total`` model requests (``omni_cot: omni_cot_caption``), moved by the
    model's own updates (:func:`counting_into`), full when the stage ends; it vanishes when done."""
    bar = tqdm(total=total, desc=name, unit="request", disable=None, dynamic_ncols=True, leave=False)
    try:
        with counting_into(bar, modules, cap=total) as sink:
            yield bar
        sink.take(sink.left or 0)
    finally:
        bar.close()
