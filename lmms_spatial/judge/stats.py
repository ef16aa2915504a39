"""Thread-safe counters describing how a run's judge verdicts were obtained.

Tasks put :meth:`JudgeStats.as_dict` into their results so a reader can tell which judge
scored the numbers and how many verdicts came from the cache, were unparsable, or were
rule-based fallbacks. Counters are per process (lmms-eval's ``process_results`` threads share
one judge object, accelerate ranks each have their own).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class JudgeStats:
    """Counters for one (judge model, rubric) pair.

    ``judge_calls``: HTTP requests that returned a reply (re-asks of unparsable replies included);
    ``retries``: failed requests that were retried (429, 5xx, timeouts, connection errors);
    ``cache_hits``: items answered from the on-disk cache (or by an identical in-flight request);
    ``unparsed``: items scored 0 with reason ``judge_unparsed`` (fresh or from the cache);
    ``fallback``: items scored by the rubric's rule-based fallback (judge ``none``);
    ``items``: verdicts returned;
    ``example_unparsed``: the first reply no rule could read (for the run's last lines).
    """

    judge_model: str
    rubric: str
    rubric_version: str
    judge_calls: int = 0
    retries: int = 0
    cache_hits: int = 0
    unparsed: int = 0
    fallback: int = 0
    items: int = 0
    example_unparsed: str | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        """Increment counters atomically: ``stats.add(judge_calls=1, retries=2)``."""
        with self._lock:
            for name, value in counts.items():
                if name.startswith("_") or not isinstance(getattr(self, name, None), int):
                    raise AttributeError(f"JudgeStats has no counter {name!r}")
                setattr(self, name, getattr(self, name) + value)

    def note_unparsed(self, reply: str | None) -> None:
        """Keep the first unreadable reply as the example."""
        with self._lock:
            if self.example_unparsed is None and reply is not None:
                self.example_unparsed = reply

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready snapshot."""
        with self._lock:
            return {
                "judge_model": self.judge_model,
                "rubric": self.rubric,
                "rubric_version": self.rubric_version,
                "judge_calls": self.judge_calls,
                "retries": self.retries,
                "cache_hits": self.cache_hits,
                "unparsed": self.unparsed,
                "fallback": self.fallback,
                "items": self.items,
            }
