"""What the progress bars of a run are told (lmms_spatial.progress, plugin.resume, models.staged / omni_cot):
the run's one bar moves as the model answers (per request or per batch, as the model counts), not once per saved
chunk, and counts every request once; staged models show one bar per named stage."""

from __future__ import annotations

import sys
import types

import pytest
from tqdm import tqdm

from lmms_spatial import progress
from lmms_spatial.plugin import resume


class _Request:
    def __init__(self, n: int) -> None:
        self.args = (f"q{n:02d}", None, {"temperature": 0}, n, "task", "test")
        self.task_name, self.doc_id = "task", n


@pytest.fixture
def batched_model_module(monkeypatch):
    """A model module as lmms-eval's are written: ``from tqdm import tqdm`` at the top, one bar per call of
    ``generate_until``, updated once per batch of 2."""
    module = types.ModuleType("fake_batched_model")
    module.tqdm = tqdm

    class BatchedModel:
        batch_size, rank = 2, 0

        def generate_until(self, requests):
            bar = module.tqdm(total=len(requests), desc="Model Responding")
            answers = []
            for start in range(0, len(requests), self.batch_size):
                batch = requests[start : start + self.batch_size]
                answers += [f"answer {r.doc_id}" for r in batch]
                bar.update(len(batch))
            bar.close()
            return answers

    BatchedModel.__module__ = module.__name__
    module.BatchedModel = BatchedModel
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_the_runs_bar_moves_per_batch_the_model_answers_and_counts_cached_answers_once(
    monkeypatch, progress_bars, batched_model_module
):
    from lmms_spatial import run_state

    monkeypatch.setattr(run_state.STATE, "runs", [object()])  # inside a run of ours
    monkeypatch.setenv(resume.ENV_SAVE_EVERY, "4")
    lm = batched_model_module.BatchedModel()
    cached = {9}  # the last chunk's second request is answered from the store: the model never sees it

    def execute(self, lm, reqtype, chunk):  # lmms-eval's ResponseCache.execute: only uncached requests go out
        asked = [r for r in chunk if r.doc_id not in cached]
        answers = iter(lm.generate_until(asked))
        return ["kept 9" if r.doc_id in cached else next(answers) for r in chunk]

    requests = [_Request(n) for n in range(10)]  # chunks of 4, 4, 2
    answers = resume._execute(execute)(types.SimpleNamespace(), lm, "generate_until", requests)
    assert answers == [f"answer {n}" for n in range(9)] + ["kept 9"]
    (bar,) = progress_bars  # the model's own "Model Responding" bars are not drawn
    assert (bar.desc, bar.total) == ("Model Responding (answers saved as they come)", 10)
    # per batch of 2 as the model counts; the last chunk: 1 answered by the model, then 1 from the store
    assert bar.updates == [2, 2, 2, 2, 1, 1]
    assert bar.n == 10
    assert batched_model_module.tqdm is tqdm  # the model's module is given its tqdm back


def test_a_model_that_counts_more_than_it_was_asked_never_pushes_the_bar_past_the_chunk(progress_bars):
    bar = progress.tqdm(total=3, desc="run")
    module = types.ModuleType("fake_overcounting_model")
    module.tqdm = tqdm
    sys.modules[module.__name__] = module
    try:
        with progress.counting_into(bar, [module.__name__], cap=3) as sink:
            module.tqdm(total=3).update(5)  # e.g. one count per stage turn
        assert sink.left == 0
    finally:
        del sys.modules[module.__name__]
    assert bar.updates == [3] and bar.n == 3
