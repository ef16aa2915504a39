"""Prepare batches on worker threads ahead of the GPU, with bounded memory and no lost errors.

``fast_vlm``'s GPU thread should only run ``generate``: decoding, resizing and the processor run on
a pool of worker threads (Pillow and torch release the GIL), one document per task, a look-ahead
window at a time; a batcher thread sorts each finished window into length buckets
(:func:`~lmms_spatial.models.fast_inputs.bucket`), collates each batch and puts it on a queue of a
few batches. At most two windows are being prepared and ``queue_batches`` batches wait, so memory
stays flat whatever the number of documents.

A worker's exception (a corrupt image) travels through the queue and is raised in the consumer's
thread, in place of the batch it belonged to. :meth:`Pipeline.close` (also on error, via ``with``)
stops the batcher and the pool and joins them: no thread outlives the ``generate_until`` call.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lmms_spatial.models.fast_inputs import PreparedDoc, bucket

_END = object()
_POLL_S = 0.05


@dataclass
class _Failure:
    error: BaseException


@dataclass
class Batch:
    """A collated batch: its documents (positions, contexts) and the tensors to feed the model."""

    docs: list[PreparedDoc]
    tensors: dict[str, Any]


@dataclass
class PipelineTiming:
    """Seconds summed over one pipeline's life (worker time is summed over workers)."""

    docs: int = 0
    prep_s: float = 0.0  # per-document preparation in the workers
    collate_s: float = 0.0  # batching and pinning in the batcher thread
    wait_s: float = 0.0  # the consumer waiting for the next batch
    workers: int = 0


@dataclass
class Pipeline:
    """Iterate over collated batches of ``jobs`` (``(position, request args)``), window by window.

    ``prepare(position, args)`` makes one :class:`PreparedDoc` (on a worker thread);
    ``collate(docs)`` makes one batch's tensors (on the batcher thread).
    """

    jobs_by_window: Sequence[Sequence[tuple[int, tuple]]]
    prepare: Callable[[int, tuple], PreparedDoc]
    collate: Callable[[Sequence[PreparedDoc]], dict[str, Any]]
    batch_size: int
    workers: int = 4
    queue_batches: int = 2
    name: str = "fast_vlm"
    timing: PipelineTiming = field(default_factory=PipelineTiming)

    def __post_init__(self) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=max(1, self.queue_batches))
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max_workers=max(1, self.workers), thread_name_prefix=f"{self.name}-prep")
        self._thread = threading.Thread(target=self._batcher, name=f"{self.name}-batcher", daemon=True)
        self.timing.workers = max(1, self.workers)
        self._started = False

    # --- producer side --------------------------------------------------------------------

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def _batcher(self) -> None:
        try:
            pending: deque = deque()
            windows = iter(self.jobs_by_window)

            def submit_next() -> None:
                window = next(windows, None)
                if window is not None:
                    pending.append([self._pool.submit(self.prepare, pos, args) for pos, args in window])

            submit_next()
            submit_next()  # the next window is prepared while this one is batched and generated
            while pending:
                docs = [future.result() for future in pending.popleft()]
                submit_next()
                self.timing.prep_s += sum(d.seconds for d in docs)
                self.timing.docs += len(docs)
                for group in bucket(docs, self.batch_size):
                    start = time.perf_counter()
                    tensors = self.collate(group)
                    self.timing.collate_s += time.perf_counter() - start
                    if not self._put(Batch(group, tensors)):
                        return
            self._put(_END)
        except BaseException as exc:  # handed to the consumer, raised there
            self._put(_Failure(exc))

    # --- consumer side --------------------------------------------------------------------

    def __enter__(self) -> Pipeline:
        self._thread.start()
        self._started = True
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[Batch]:
        while True:
            start = time.perf_counter()
            while True:
                try:
                    item = self._queue.get(timeout=_POLL_S)
                    break
                except queue.Empty:
                    if not self._thread.is_alive() and self._queue.empty():
                        raise RuntimeError(f"{self.name}: batcher thread ended without a result") from None
            self.timing.wait_s += time.perf_counter() - start
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item

    def close(self) -> None:
        """Stop producing, drop what is queued, and join the batcher and every worker."""
        self._stop.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._started:
            self._thread.join()
