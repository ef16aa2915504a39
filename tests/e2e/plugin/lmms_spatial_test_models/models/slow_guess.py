"""``--model slow_guess``: ``random_choice``'s seeded guesses, one request at a time, each logged before it is
answered and after ``SLOW_GUESS_DELAY`` seconds.

The delay and the log file come from the environment (``SLOW_GUESS_DELAY``, ``SLOW_GUESS_LOG``), not from
``--model_args``: a resumed run must be the same command (the model arguments are part of every answer's
cache key), and only the test's view of it changes. ``SLOW_GUESS_HANG_AFTER=N``: after N answers the model
hangs (a run that stays alive, holding what it saved, until the test kills it).
"""

from __future__ import annotations

import os
import time

from lmms_spatial.models.random_choice import RandomChoice


class SlowGuess(RandomChoice):
    def generate_until(self, requests) -> list[str]:
        delay = float(os.environ.get("SLOW_GUESS_DELAY", "0") or 0)
        log = os.environ.get("SLOW_GUESS_LOG", "")
        hang_after = int(os.environ.get("SLOW_GUESS_HANG_AFTER", "0") or 0)
        answers = []
        for request in requests:
            self.answered = getattr(self, "answered", 0)
            if hang_after and self.answered >= hang_after:
                time.sleep(3600)
            self.answered += 1
            if log:
                with open(log, "a", encoding="utf-8") as handle:
                    handle.write(f"{request.task_name} {request.doc_id}\n")
            time.sleep(delay)
            answers.extend(super().generate_until([request]))
        return answers
