"""``--model random_choice``: a seeded uniform guess over each question's own answers.

Reproduces the papers' "Random" rows in expectation (DORI's option counts vary from 3 to
16, so chance is per question). The guess depends only on (seed, task, doc_id): the same
on every run, whatever the batch order, process count or PYTHONHASHSEED.
"""

from __future__ import annotations

import random

from lmms_spatial.data.answer_space import answer_space
from lmms_spatial.models._base import TextOnlyModel

_COLUMNS = ("options", "answer", "question", "skill")


class RandomChoice(TextOnlyModel):
    # its guesses draw from its own seed= alone (never from lmms-eval's --seed, nor from sampling settings): what
    # the run's conditions record as its seeds (lmms_spatial.plugin.conditions.sampling_seed)
    own_seed_only = True

    def __init__(self, seed: int | str = 0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.seed = int(seed)
        self._docs_cache: dict[tuple[str, str], object] = {}
        self._benchmarks: dict[str, str] | None = None  # {task: benchmark key}, read once

    def _text_docs(self, task: str, split: str):
        """The split without image columns, so guessing never decodes an image."""
        key = (task, split)
        if key not in self._docs_cache:
            dataset = self.task_dict[task][split]
            columns = [c for c in _COLUMNS if c in dataset.column_names]
            self._docs_cache[key] = dataset.select_columns(columns)
        return self._docs_cache[key]

    def benchmark_of(self, task: str) -> str | None:
        """The benchmark whose folder declares ``task`` (None: not one of ours: the generic answer rules)."""
        if self._benchmarks is None:
            from lmms_spatial.paths import task_benchmarks

            self._benchmarks = task_benchmarks()
        return self._benchmarks.get(task)

    def guess(self, task: str, doc_id: int, choices: list[str]) -> str:
        if not choices:
            return ""
        return random.Random(f"{self.seed}:{task}:{doc_id}").choice(choices)

    def generate_until(self, requests) -> list[str]:
        answers = []
        for request in requests:
            task, doc_id, split = request.task_name, int(request.doc_id), request.args[-1]
            doc = self._text_docs(task, split)[doc_id]
            answers.append(self.guess(task, doc_id, answer_space(doc, self.benchmark_of(task))))
        return answers
