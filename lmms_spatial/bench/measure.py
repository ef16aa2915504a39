"""What every phase of ``lmms-spatial bench`` measures with: CPU and wall clocks, peak RSS, quiet logs.

CPU seconds (``time.process_time``) are what our code costs whatever else the machine runs; wall
seconds are what a user waits; peak RSS (``ru_maxrss``) is the high-water mark of this process.
"""

from __future__ import annotations

import resource
import sys
import time


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Timer:
    """Accumulates CPU and wall seconds over every ``with`` block it is used in."""

    def __init__(self) -> None:
        self.cpu = self.wall = 0.0

    def __enter__(self):
        self._c, self._w = time.process_time(), time.perf_counter()
        return self

    def __exit__(self, *_exc) -> None:
        self.cpu += time.process_time() - self._c
        self.wall += time.perf_counter() - self._w


def quiet_logs() -> None:
    """lmms-eval logs every task load at INFO: keep only errors so the report stays readable."""
    try:
        from loguru import logger

        logger.remove()
        logger.add(sys.stderr, level="ERROR")
    except ImportError:  # pragma: no cover
        pass
