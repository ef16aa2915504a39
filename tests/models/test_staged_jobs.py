"""``Staged.run_stage_jobs`` (the stage engine omni_cot drives) and the staged model's small rules, with a fake model
whose answer differs per prompt text and per image (issue 42: a job keyed coarser than its image would get another
image's output)."""

from __future__ import annotations

import pytest
from lmms_eval.api.instance import Instance

from lmms_spatial.models import stages
from lmms_spatial.models.staged import StageCache, Staged, StageJob


class RecordingChat:
    """Answers ``<last text> [<images>]`` and records each batch's conversations and generation arguments."""

    is_simple = False

    def __init__(self, **kwargs):
        self.batches: list[list[tuple[list[dict], dict]]] = []
        self.task_dict = {}
        self.rank, self.world_size = 3, 4

    def generate_until(self, requests):
        batch = []
        for r in requests:
            _ctx, doc_to_messages, gen, doc_id, task, split = r.args
            batch.append((doc_to_messages(self.task_dict[task][split][doc_id]), gen))
        self.batches.append(batch)
        return [_answer(messages) for messages, _gen in batch]


def _answer(messages: list[dict]) -> str:
    images = [p["url"] for m in messages for p in m["content"] if isinstance(p, dict) and p.get("type") == "image"]
    return f"{messages[-1]['content'][-1]['text']} [{', '.join(images)}]"


def _messages(image: str, text: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "image", "url": image}, {"type": "text", "text": text}]}]


REQUEST = Instance(
    "generate_until",
    ("", lambda doc: [], {"max_new_tokens": 8}, 0, "t", "test"),
    0,
    {"task": "t", "doc_id": 0, "repeats": 1},
)


@pytest.fixture(autouse=True)
def _clean_stage_records():
    """A stage cache registers itself as a store of kept stages (process-wide): forgotten after each test."""
    stages.clear()
    yield
    stages.clear()


def _model(tmp_path=None) -> Staged:
    model = Staged(base=f"{__name__}.RecordingChat", stage_cache=str(tmp_path) if tmp_path else "")
    model.task_dict = {"t": {"test": [{}]}}
    model.base.task_dict = model.task_dict
    return model


def _jobs() -> list[StageJob]:
    return [
        StageJob(REQUEST, "staged_cot", "img-1", _messages("img-1", "describe"), {"max_new_tokens": 5}),
        StageJob(REQUEST, "staged_cot", "img-1", _messages("img-1", "describe")),  # the same job again
        StageJob(REQUEST, "staged_cot", "img-2", _messages("img-2", "describe")),  # another image, same text
        StageJob(REQUEST, "staged_cot", "img-1", _messages("img-1", "count")),  # same image, other text
        StageJob(REQUEST, "boxes", "img-1", _messages("img-1", "describe")),  # another stage
    ]


def test_each_distinct_job_is_generated_once_in_one_batch_and_each_job_gets_its_own_output() -> None:
    model = _model()
    outputs = model.run_stage_jobs(_jobs())
    assert outputs == ["describe [img-1]", "describe [img-1]", "describe [img-2]", "count [img-1]", "describe [img-1]"]
    (batch,) = model.base.batches
    assert [(messages[0]["content"][1]["text"], gen) for messages, gen in batch] == [
        ("describe", {"max_new_tokens": 5}),  # the job's own generation arguments over the request's
        ("describe", {"max_new_tokens": 8}),
        ("count", {"max_new_tokens": 8}),
        ("describe", {"max_new_tokens": 8}),
    ]
    assert model.calls == {"stage": 4, "final": 0, "stage_cache_hits": 0}


def test_the_bar_names_each_stage_once_without_the_engine_s_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model()
    named: list[str] = []
    real = Staged._run
    monkeypatch.setattr(Staged, "_run", lambda self, instances, stage="answers": named.append(stage) or real(
        self, instances, stage))  # fmt: skip
    model.run_stage_jobs(_jobs())
    assert named == ["cot + boxes"]


def test_stage_jobs_are_read_from_and_written_to_the_stage_cache_per_image(tmp_path) -> None:
    _model(tmp_path).run_stage_jobs(_jobs())
    again = _model(tmp_path)
    assert again.run_stage_jobs(_jobs()) == [
        "describe [img-1]", "describe [img-1]", "describe [img-2]", "count [img-1]", "describe [img-1]"]  # fmt: skip
    assert again.base.batches == [] and again.calls == {"stage": 0, "final": 0, "stage_cache_hits": 4}
    cache = StageCache(tmp_path)
    model_id = f"{__name__}.RecordingChat:"
    # the last output stored per (model, stage, key): img-1's cot was "count" last
    assert cache.latest(model_id, "staged_cot", "img-1") == "count [img-1]"
    assert cache.latest(model_id, "staged_cot", "img-2") == "describe [img-2]"
    assert cache.latest(model_id, "boxes", "img-1") == "describe [img-1]"


def test_no_jobs_ask_the_model_nothing() -> None:
    model = _model()
    assert model.run_stage_jobs([]) == []
    assert model.base.batches == []


def test_a_stage_cache_given_as_a_folder_or_a_sqlite_file(tmp_path) -> None:
    assert StageCache(tmp_path / "dir").path == tmp_path / "dir" / "stages.sqlite"
    assert StageCache(tmp_path / "mine.sqlite").path == tmp_path / "mine.sqlite"
    cache = StageCache(tmp_path / "dir")
    key = StageCache.key("m", "map", "img-1", "f")
    cache.put(key, "first")
    cache.put(key, "second")
    assert cache.get(key) == "second"
    assert cache.latest("m", "map", "img-1") is None  # stored without model, stage and key: not a "latest" row
    assert StageCache.key("m", "map", "img-2", "f") != key != StageCache.key("m", "map", "img-1", "g")


def test_the_engine_reads_rank_and_world_size_from_the_base_model() -> None:
    model = _model()
    assert (model.rank, model.world_size) == (3, 4)


def test_a_stage_engine_around_a_built_model_uses_that_model_s_own_generate(tmp_path) -> None:
    base = RecordingChat()
    base.task_dict = {"t": {"test": [{}]}}
    own: list[int] = []

    def generate(requests):
        own.append(len(requests))
        return [_answer(r.args[1]({})) for r in requests]

    engine = Staged.around(base, generate, "qwen:x")
    assert engine.run_stage_jobs([StageJob(REQUEST, "map", "img-1", _messages("img-1", "map"))]) == ["map [img-1]"]
    assert own == [1] and base.batches == []
    assert (engine.model_id, engine.cache, engine.chunk_size, engine.base.rank) == ("qwen:x", None, 256, 3)
