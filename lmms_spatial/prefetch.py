"""Build our tasks' model inputs ahead of the model, on worker threads, with bounded memory.

lmms-eval's chat models call ``doc_to_messages(doc)`` batch by batch, between two GPU steps: our
image decode (and ODI-Bench's resize) sits on the critical path, ~56 ms of a ~604 ms/doc step for
two 1280x960 PNGs on an H100. lmms-eval hands a model all requests of a type at once, so the order
in which the model will read them is known before it starts (chat models sort by context string,
grouped by generation kwargs, with ``utils.Collator``; our ``staged``/``omni_cot`` declare theirs
with ``prefetch_order``). :func:`prefetching` wraps one ``generate_until`` call:

* every request whose document function is one of ours gets, for the duration of the call, a
  callable of its own in place of that function (restored afterwards, so caches and logs see the
  original request); worker threads call the *original* function on the request's document, read
  from ``lm.task_dict`` exactly as the model will read it, at most ``window`` documents ahead of the
  model (results computed or in flight but not yet taken never exceed ``window``);
* the model's call returns the precomputed result only if the document it passes is equal to the
  one the worker read (the function is a pure function of the document, so equal documents give
  equal results: no document ever gets another's images, whatever the order); otherwise, or when
  the worker has not started on it (an order we did not predict), the original function runs
  right there, as without prefetching. A worker's exception (a corrupt image: ``BadDocumentError``
  naming the document and field) is raised at the model's call, the same exception;
* each result is handed out once and dropped; the threads are shut down before ``generate_until``
  returns (or raises).

Requests of tasks that are not ours are left alone; with none of ours no thread starts.
``LMMS_SPATIAL_PREFETCH=0`` switches it off; ``LMMS_SPATIAL_PREFETCH_DOCS`` (window, default four
batches, at least 8) and ``LMMS_SPATIAL_PREFETCH_THREADS`` (default ``min(4, cpu_count)``) tune it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lmms_spatial import run_state
from lmms_spatial.paths import is_our_code

ENV_SWITCH = "LMMS_SPATIAL_PREFETCH"
ENV_WINDOW = "LMMS_SPATIAL_PREFETCH_DOCS"
ENV_THREADS = "LMMS_SPATIAL_PREFETCH_THREADS"
THREAD_PREFIX = "lmms-spatial-prefetch"
DOC_FUNCTIONS = ("doc_to_messages", "doc_to_visual")
BATCHES_AHEAD = 4
MIN_WINDOW = 8


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in {"0", "false", "no", "off"}


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a positive integer") from None
    if value < 1:
        raise ValueError(f"{name}={raw!r}: expected a positive integer")
    return value


def default_threads() -> int:
    return _positive_int(ENV_THREADS, min(4, os.cpu_count() or 1))


def default_window(batch_size: Any) -> int:
    try:
        batch = max(1, int(batch_size))
    except (TypeError, ValueError):
        batch = 1
    return _positive_int(ENV_WINDOW, max(MIN_WINDOW, BATCHES_AHEAD * batch))


# --- which requests are ours ----------------------------------------------------------------


def task_function(function: Any) -> Any:
    """The task's own function behind a request's document callable.

    lmms-eval puts bound methods of its task object in a request (``task.doc_to_messages``, which
    calls ``task.config.doc_to_messages``, or builds messages from ``doc_to_visual`` when a task
    has none); ``functools.partial`` wrappers are looked through.
    """
    owner, name = getattr(function, "__self__", None), getattr(function, "__name__", "")
    config = getattr(owner, "config", None)
    if config is not None and name in DOC_FUNCTIONS:
        inner = getattr(config, name, None)
        if inner is None and name == "doc_to_messages":
            inner = getattr(config, "doc_to_visual", None)
        function = inner
    while isinstance(function, functools.partial):
        function = function.func
    return function


def is_ours(function: Any) -> bool:
    """Whether a request's document callable runs code of ours (:func:`lmms_spatial.paths.is_our_code`, the
    plugin's rule for a task's code, applied to the task's own function behind the callable)."""
    return callable(function) and is_our_code(task_function(function))


def doc_function_index(args: Sequence[Any]) -> int | None:
    """Where a chat request ``(ctx, doc_to_messages, gen_kwargs, doc_id, task, split)`` holds its document
    callable (1), when that callable is ours; None otherwise.

    Simple (non-chat) requests ``(ctx, gen_kwargs, doc_to_visual, doc_id, task, split)`` are not
    prefetched: lmms-eval's simple models call the *first* request's ``doc_to_visual`` for a whole batch
    and sort by token counts, so per-request results built ahead would not be taken.
    """
    if len(args) == 6 and callable(args[1]) and is_ours(args[1]):
        return 1
    return None


def predicted_order(lm: Any, requests: Sequence[Any]) -> list[int]:
    """Positions of ``requests`` in the order the model will read their documents.

    A model of ours says so itself (``prefetch_order``); lmms-eval's chat models sort with
    ``utils.Collator`` by context string, grouped by generation kwargs, which is reproduced here with
    the same class (a stable sort, so ties keep request order). A wrong prediction costs only speed.
    """
    own = getattr(lm, "prefetch_order", None)
    if callable(own):
        return list(own(requests))
    try:
        from lmms_eval import utils

        indexed = [(*r.args, i) for i, r in enumerate(requests)]
        collator = utils.Collator(indexed, lambda x: (x[0], x[0]), group_fn=lambda x: x[2], grouping=True)
        order = [x[-1] for batch in collator.get_batched(n=len(indexed) or 1) for x in batch]
    except Exception:  # requests of another shape: request order (only speed depends on it)
        return list(range(len(requests)))
    return order if sorted(order) == list(range(len(requests))) else list(range(len(requests)))


# --- the prefetcher -------------------------------------------------------------------------


@dataclass
class Slot:
    """One document read, in the predicted order: its future holds ``(doc, ok, value)``."""

    position: int
    load_doc: Callable[[], Any]
    compute: Callable[[Any], Any]
    future: Future | None = None
    taken: bool = False


@dataclass
class Stats:
    hits: int = 0  # the model got a precomputed result
    misses: int = 0  # computed in the model's thread (not started yet, or a different document)
    waited: int = 0  # the model had to wait for a worker
    most_ahead: int = 0  # the largest number of submitted-but-untaken documents seen


class Prefetcher:
    """Runs ``slot.compute(slot.load_doc())`` for slots in order, at most ``window`` untaken at a time."""

    def __init__(self, slots: Sequence[Slot], *, window: int, threads: int) -> None:
        if window < 1 or threads < 1:
            raise ValueError("window and threads must be at least 1")
        self.window, self.threads = window, threads
        self.stats = Stats()
        self._slots = list(slots)
        self._next = 0
        self._outstanding = 0
        self._lock = threading.Lock()
        self._closed = False
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=THREAD_PREFIX)
        with self._lock:
            self._fill()

    @staticmethod
    def _work(slot: Slot) -> tuple[Any, bool, Any]:
        try:
            doc = slot.load_doc()
        except Exception:  # the model reads the document itself and meets the problem there
            return None, False, None
        try:
            return doc, True, slot.compute(doc)
        except Exception as exc:  # raised at the model's call, with its own message
            return doc, False, exc

    def _fill(self) -> None:  # under the lock
        while not self._closed and self._outstanding < self.window and self._next < len(self._slots):
            slot = self._slots[self._next]
            self._next += 1
            if slot.taken:
                continue
            slot.future = self._executor.submit(self._work, slot)
            self._outstanding += 1
            self.stats.most_ahead = max(self.stats.most_ahead, self._outstanding)

    def take(self, slot: Slot, doc: Any) -> Any:
        """The result for ``doc`` at ``slot``: the worker's if it read an equal document, else computed here."""
        with self._lock:
            if slot.taken:
                raise RuntimeError("prefetch slot taken twice")
            slot.taken = True
            future, slot.future = slot.future, None
            if future is not None and future.cancel():  # queued, not started: no point waiting for it
                self._outstanding -= 1
                future = None
                self._fill()
            if future is None:
                self.stats.misses += 1
            elif not future.done():
                self.stats.waited += 1
        if future is None:
            return slot.compute(doc)
        try:
            loaded, ok, value = future.result()
        finally:
            with self._lock:
                self._outstanding -= 1
                self._fill()
        same = loaded is not None and (loaded is doc or loaded == doc)  # exact: no digest, no id shortcut
        with self._lock:
            if same:
                self.stats.hits += 1
            else:
                self.stats.misses += 1
        if not same:
            return slot.compute(doc)
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Cancel what has not started, wait for what has (at most ``threads`` documents), drop all results."""
        with self._lock:
            self._closed = True
            for slot in self._slots:
                if slot.future is not None:
                    slot.future.cancel()
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            for slot in self._slots:
                slot.future = None
            self._slots = []


class PrefetchedCall:
    """Stands in for one request's document callable: hands out that request's prefetched results."""

    def __init__(self, original: Callable[..., Any], prefetcher_ref: list[Prefetcher]) -> None:
        self.original = original
        self._ref = prefetcher_ref
        self._slots: deque[Slot] = deque()
        self._lock = threading.Lock()
        functools.update_wrapper(self, original, updated=())

    def __call__(self, doc: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:  # multi-round and other call shapes: not what was prefetched
            return self.original(doc, *args, **kwargs)
        with self._lock:
            slot = self._slots.popleft() if self._slots else None
        if slot is None or not self._ref:
            return self.original(doc)
        return self._ref[0].take(slot, doc)


def _row_reader(lm: Any, args: Sequence[Any]) -> Callable[[], Any]:
    doc_id, task, split = args[3], args[4], args[5]

    def read() -> Any:
        return lm.task_dict[task][split][doc_id]

    return read


def last_stats() -> Stats | None:
    """Counters of the most recent prefetching call in this process (for benchmarks and tests)."""
    return run_state.STATE.prefetch_stats


def _log(prefetcher: Prefetcher, n: int) -> None:
    from loguru import logger

    s = prefetcher.stats
    logger.info(
        f"lmms-spatial prefetch: {n} documents, {s.hits} built ahead, {s.misses} built on the model's thread, "
        f"{s.waited} waited for; window {prefetcher.window}, {prefetcher.threads} threads"
    )


def prefetching(lm: Any, generate_until: Callable[[list], Any], requests: list, *, window: int | None = None,
                threads: int | None = None) -> Any:  # fmt: skip
    """``generate_until(requests)``, with our requests' document functions computed ahead (module doc)."""
    if not enabled() or not requests:
        return generate_until(requests)
    placed: dict[int, tuple[Any, int, PrefetchedCall]] = {}  # id(request) -> (request, index, call)
    for request in requests:
        if id(request) in placed:
            continue
        args = getattr(request, "args", None)
        index = doc_function_index(args) if isinstance(args, tuple) else None
        if index is not None:
            placed[id(request)] = (request, index, None)
    if not placed or getattr(lm, "task_dict", None) is None:
        return generate_until(requests)
    ref: list[Prefetcher] = []
    for key, (request, index, _none) in list(placed.items()):
        placed[key] = (request, index, PrefetchedCall(request.args[index], ref))
    slots: list[Slot] = []
    for position in predicted_order(lm, requests):
        request = requests[position]
        entry = placed.get(id(request))
        if entry is None:
            continue
        _request, index, call = entry
        slot = Slot(len(slots), _row_reader(lm, request.args), call.original)
        call._slots.append(slot)
        slots.append(slot)
    if not slots:  # the model reads no document function of ours (it says so in prefetch_order)
        return generate_until(requests)
    window = window or max(default_window(getattr(lm, "batch_size", 1)), int(getattr(lm, "prefetch_window", 0) or 0))
    originals = {key: request.arguments for key, (request, _i, _c) in placed.items()}
    prefetcher = None
    try:
        for request, index, call in placed.values():
            args = list(request.args)
            args[index] = call
            request.arguments = tuple(args)
        prefetcher = Prefetcher(slots, window=window, threads=threads or default_threads())
        ref.append(prefetcher)
        return generate_until(requests)
    finally:
        ref.clear()
        if prefetcher is not None:
            prefetcher.close()
            run_state.STATE.prefetch_stats = prefetcher.stats
            _log(prefetcher, len(slots))
        for key, (request, _index, _call) in placed.items():
            request.arguments = originals[key]


@contextlib.contextmanager
def prefetching_model(lm: Any) -> Iterator[None]:
    """While the block runs, ``lm.generate_until(requests)`` goes through :func:`prefetching`.

    Set on the instance (its class and every other model are untouched) and removed afterwards.
    """
    original = getattr(lm, "generate_until", None)
    state = getattr(lm, "__dict__", None)
    if original is None or state is None or getattr(original, "_lmms_spatial_prefetch", False):
        yield
        return
    had_own, own = "generate_until" in state, state.get("generate_until")

    def generate_until(requests):
        return prefetching(lm, original, requests)

    generate_until._lmms_spatial_prefetch = True
    state["generate_until"] = generate_until
    try:
        yield
    finally:
        if had_own:
            state["generate_until"] = own
        else:
            state.pop("generate_until", None)
