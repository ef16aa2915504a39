"""A pytest plugin loaded only by mutation runs (``python -m tools.mutation``): tqdm's write lock made
a lock of each process.

tqdm guards its bars with a ``multiprocessing`` lock created once and shared by every process forked after it. mutmut
forks one worker per mutant from a process that has made bars, and kills a worker that runs past its time (a mutant
that loops forever); killed inside a bar's lock, it leaves the lock held, and every later worker that makes a bar
waits for it until its own time runs out: a whole function's mutants then count as timeouts, and a mutant listed as
equivalent as killed (measured 2026-11-26 on ``models/staged.py``: 45 such timeouts in a row). Set while pytest starts
in mutmut's own process, before the first fork, the lock is copied into each worker instead of shared.
"""

from __future__ import annotations


def pytest_configure(config) -> None:  # noqa: ARG001 (pytest's hook signature)
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())
