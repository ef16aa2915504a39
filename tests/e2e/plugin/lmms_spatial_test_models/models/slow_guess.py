"""``--model slow_guess``: ``random_choice``'s seeded guesses, one request at a time, each logged before it is
answered and after ``SLOW_GUESS_DELAY`` seconds.

The delay and the log file come from the environment (``SLOW_GUESS_DELAY``, ``SLOW_GUESS_LOG``), not from
``--model_args``: a resumed run must be the same command (the model arguments are part of every answer's
cache key), and only the test's view of it changes. ``SLOW_GUESS_HANG_AFTER=N``: after N answers the model
hangs (a run that stays alive, holding what it saved, until the test kills it).

``SLOW_GUESS_STORE_PAGES=N`` (a disk that fills up): every SQLite file of the answer store (``rank_*.db``) this
process opens may hold N pages at most (``PRAGMA max_page_count``), so SQLite itself raises ``database or disk is
full`` once the answers outgrow them, as on a full disk. Set when this module is imported, before the store opens.
"""

from __future__ import annotations

import os
import sqlite3
import time

from lmms_spatial.models.random_choice import RandomChoice


def _limit_store_pages(pages: int) -> None:
    connect = sqlite3.connect

    def limited(database, *args, **kwargs):
        connection = connect(database, *args, **kwargs)
        if os.path.basename(str(database)).startswith("rank_") and str(database).endswith(".db"):
            connection.execute(f"PRAGMA max_page_count = {pages}")
        return connection

    sqlite3.connect = limited


if os.environ.get("SLOW_GUESS_STORE_PAGES"):
    _limit_store_pages(int(os.environ["SLOW_GUESS_STORE_PAGES"]))


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
