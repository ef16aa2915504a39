"""The staged model's small rules, each pinned with a hand-made fake (issue 42): what goes into a stage cache key
(the base model, the stage, the image key, the prompt text), what a cache hit records, the requests the base model
is given, how its arguments are split, and that a base model answering fewer requests than asked fails instead of
pairing answers with the wrong questions."""

from __future__ import annotations

import sqlite3
import threading
from types import SimpleNamespace

import pytest
from lmms_eval.api.instance import Instance
from loguru import logger

from lmms_spatial.models import stages
from lmms_spatial.models.staged import (
    StageCache,
    Staged,
    StageJob,
    _doc_order,
    _model_class,
    _OwnGenerate,
    _prompt_fingerprint,
    _text,
)


class CountingChat:
    """Answers ``<n>:<last text> [<images>]``, n counting every answer it ever gave: two prompts, or one prompt
    asked twice, never get the same answer (a cache hit shows as an old n)."""

    is_simple = False
    given = 0

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.batches: list[list[Instance]] = []
        self.task_dict = {}
        self.short = 0  # answers left out of the next batch (a broken base model)
        self.device = "cpu:7"

    def generate_until(self, requests):
        self.batches.append(list(requests))
        answers = []
        for r in requests:
            _ctx, to_messages, _gen, doc_id, task, split = r.args
            messages = to_messages(self.task_dict[task][split][doc_id])
            images = [
                p["url"] for m in messages for p in m["content"] if isinstance(p, dict) and p.get("type") == "image"
            ]
            CountingChat.given += 1
            answers.append(f"{CountingChat.given}:{messages[-1]['content'][-1]['text']} [{', '.join(images)}]")
        # a broken batch once, then whole ones: code that asks again instead of failing ends (a test that never ended
        # would be killed holding tqdm's lock, which every later mutant of a mutation run shares)
        short, self.short = self.short, 0
        return answers[: len(answers) - short]

    def loglikelihood(self, requests):
        return [(-1.5, False) for _ in requests]


class NoKind:
    """A model that does not say whether it is a simple one."""

    def __init__(self, **kwargs):
        pass


@pytest.fixture(autouse=True)
def _clean_stage_records():
    stages.clear()
    CountingChat.given = 0
    yield
    stages.clear()


def _image_turn(image: str, text: str) -> dict:
    return {"role": "user", "content": [{"type": "image", "url": image}, {"type": "text", "text": text}]}


def _two_stages(doc):
    """A caption, then boxes built on it, then the question: two rounds of stages."""
    return [
        _image_turn(doc["image"], doc.get("prompt", "caption")),
        stages.stage_placeholder("caption", doc["image"]),
        {"role": "user", "content": [{"type": "text", "text": "boxes"}]},
        stages.stage_placeholder("boxes", doc["image"]),
        {"role": "user", "content": [{"type": "text", "text": doc["question"]}]},
    ]


DOCS = [{"image": "img-1", "question": "q1"}, {"image": "img-2", "question": "q2"}]


def _meta(task: str, doc_id: int) -> dict:
    return {"task": task, "doc_id": doc_id, "repeats": 1}


def _requests(n: int = len(DOCS), task: str = "t", split: str = "test") -> list[Instance]:
    return [
        Instance("generate_until", ("", _two_stages, {"max_new_tokens": 8}, i, task, split), 0, _meta(task, i))
        for i in range(n)
    ]


def _model(cache=None, docs=DOCS, **kwargs) -> Staged:
    model = Staged(base=f"{__name__}.CountingChat", stage_cache=str(cache) if cache else "", **kwargs)
    model.task_dict = model.base.task_dict = {"t": {"test": docs}}  # stage jobs do not hand the base its tasks
    return model


# --- small helpers ----------------------------------------------------------------------------------------------


def test_an_output_is_its_text_attribute_or_the_string_itself_else_empty():
    assert _text(SimpleNamespace(text="A")) == "A"
    assert _text("B") == "B"
    assert _text(SimpleNamespace(text=None)) == ""
    assert _text(7) == ""


def test_documents_are_taken_in_task_split_and_document_order():
    def request(task, split, doc_id):
        return Instance("generate_until", ("", None, {}, doc_id, task, split), 0, _meta(task, doc_id))

    requests = [request("u", "test", 0), request("t", "val", 1), request("t", "test", 10), request("t", "test", 2)]
    assert _doc_order(requests[1]) == ("t", "val", 1)
    assert Staged.prefetch_order(None, requests) == [3, 2, 1, 0]  # t/test 2, t/test 10, t/val 1, u/test 0


def test_a_prompt_fingerprint_holds_each_turn_s_role_and_texts_and_tolerates_parts_without_text():
    user = [{"role": "user", "content": [{"type": "text", "text": "map"}]}]
    system = [{"role": "system", "content": [{"type": "text", "text": "map"}]}]
    assert _prompt_fingerprint(user) != _prompt_fingerprint(system)
    # an image part, a bare string part and a turn without content carry no text of the prompt
    with_image = [
        {"role": "user", "content": [{"type": "image", "url": "x"}, "loose", {"type": "text", "text": "map"}]}
    ]
    assert _prompt_fingerprint(with_image) == _prompt_fingerprint(user)
    assert _prompt_fingerprint([{"role": "user"}]) == _prompt_fingerprint([{"role": "user", "content": []}])


def test_a_base_model_is_an_lmms_eval_id_or_a_dotted_class_path():
    assert _model_class("replay").__name__ == "Replay"
    assert _model_class("lmms_spatial.models.staged.StageCache") is StageCache


# --- the stage cache ---------------------------------------------------------------------------------------------


def test_a_stage_cache_makes_its_folders_and_can_be_read_from_another_thread(tmp_path):
    cache = StageCache(tmp_path / "a" / "b")
    assert cache.path == tmp_path / "a" / "b" / "stages.sqlite"
    cache.put("k", "out", model="m", stage="map", key="img-1")
    seen = []
    reader = threading.Thread(target=lambda: seen.append((cache.get("k"), cache.latest("m", "map", "img-1"))))
    reader.start()
    reader.join()
    assert seen == [("out", "out")]


@pytest.mark.parametrize("named", [{"key": "img-1"}, {"model": "m"}, {"model": "m", "stage": "map"}])
def test_an_output_stored_without_model_stage_and_key_all_three_is_no_latest_row(tmp_path, named):
    cache = StageCache(tmp_path)
    cache.put("k", "out", **named)
    assert sqlite3.connect(cache.path).execute("SELECT COUNT(*) FROM latest").fetchone() == (0,)


# --- the model ------------------------------------------------------------------------------------------------------


def test_a_staged_model_without_a_stage_cache_keeps_none_and_says_so_when_asked_for_a_kept_stage(tmp_path):
    model = Staged(base=f"{__name__}.CountingChat")
    assert model.cache is None
    assert model._kept_stage("map", "img-1") is None
    assert (model.base_name, model.chunk_size) == (f"{__name__}.CountingChat", 256)


def test_chunk_size_is_read_as_a_number_of_at_least_one():
    assert Staged(base=f"{__name__}.CountingChat", chunk_size="3").chunk_size == 3
    assert Staged(base=f"{__name__}.CountingChat", chunk_size=0).chunk_size == 1


def test_arguments_left_empty_are_not_passed_to_the_base_model():
    assert _model(pretrained="x/y", device=None).base.kwargs == {"pretrained": "x/y"}


def test_a_base_model_that_does_not_say_it_is_a_chat_model_is_refused():
    with pytest.raises(ValueError) as raised:
        Staged(base=f"{__name__}.NoKind")
    assert str(raised.value) == (
        f"staged: base model '{__name__}.NoKind' is a simple (non-chat) model; stages need chat messages"
    )


def test_the_model_id_of_the_cache_keys_is_the_base_and_its_pretrained_or_model_version():
    base = f"{__name__}.CountingChat"
    assert _model(pretrained="Qwen/Qwen2.5-VL-7B", model_version="v2").model_id == f"{base}:Qwen/Qwen2.5-VL-7B"
    assert _model(model_version="gpt-4o-2024").model_id == f"{base}:gpt-4o-2024"
    assert _model().model_id == f"{base}:"


def test_what_the_staged_model_does_not_have_comes_from_its_base_model_and_the_rest_is_refused():
    model = _model()
    assert model.device == "cpu:7"
    assert model.loglikelihood(["r1", "r2"]) == [(-1.5, False), (-1.5, False)]
    with pytest.raises(NotImplementedError) as raised:
        model.generate_until_multi_round([])
    assert str(raised.value) == "staged: multi-round requests are expressed with stage placeholders instead"
    bare = Staged.__new__(Staged)  # before __init__ set its base (copy, pickle): no endless lookup
    with pytest.raises(AttributeError) as missing:
        bare.base  # noqa: B018
    assert str(missing.value) == "base"


def test_an_engine_around_a_built_model_starts_with_no_calls_and_that_model_s_tasks():
    base = CountingChat()
    base.task_dict = {"t": {"test": DOCS}}
    engine = Staged.around(base, base.generate_until, "qwen:x")
    assert (engine.base_name, engine.task_dict) == ("qwen:x", base.task_dict)
    assert engine.calls == {"stage": 0, "final": 0, "stage_cache_hits": 0}
    assert engine.device == "cpu:7"
    bare = _OwnGenerate.__new__(_OwnGenerate)
    with pytest.raises(AttributeError) as missing:
        bare._lm  # noqa: B018
    assert str(missing.value) == "_lm"


def test_a_base_model_request_is_a_generate_until_of_the_document_with_the_fixed_messages():
    model = _model()
    (request,) = _requests(1)
    request.arguments = ("", _two_stages, None, 0, "t", "test")
    made = model._instance(request, [{"role": "user", "content": []}], {"max_new_tokens": 3})
    assert (made.request_type, made.idx, made.metadata) == (
        "generate_until", 0, {"task": "t", "doc_id": 0, "repeats": 1})  # fmt: skip
    ctx, to_messages, gen, doc_id, task, split = made.args
    assert (ctx, gen, doc_id, task, split) == ("", {"max_new_tokens": 3}, 0, "t", "test")
    assert to_messages({"ignored": 1}) == [{"role": "user", "content": []}]


# --- stage jobs and chunks ------------------------------------------------------------------------------------------


def _job(stage: str, image: str, text: str = "describe") -> StageJob:
    (request,) = _requests(1)
    return StageJob(request, stage, image, [_image_turn(image, text)])


def test_stage_job_calls_add_up_over_calls(tmp_path):
    model = _model()
    model.run_stage_jobs([_job("cot", "img-1")])
    model.run_stage_jobs([_job("cot", "img-2")])
    assert model.calls["stage"] == 2


def test_cached_stage_jobs_are_told_apart_by_stage_and_by_base_model(tmp_path):
    """Two stages on one image with one prompt text, then another base model on the same cache: each gets its own."""
    jobs = [_job("cot", "img-1"), _job("boxes", "img-1")]
    assert _model(tmp_path, pretrained="a").run_stage_jobs(jobs) == ["1:describe [img-1]", "2:describe [img-1]"]
    again = _model(tmp_path, pretrained="a")
    assert again.run_stage_jobs(jobs) == ["1:describe [img-1]", "2:describe [img-1]"]
    other = _model(tmp_path, pretrained="b")
    assert other.run_stage_jobs(jobs) == ["3:describe [img-1]", "4:describe [img-1]"]
    assert other.calls == {"stage": 2, "final": 0, "stage_cache_hits": 0}


def test_a_base_model_that_answers_fewer_stage_jobs_than_asked_fails_the_run():
    model = _model()
    model.base.short = 1
    with pytest.raises(ValueError, match="zip"):
        model.run_stage_jobs([_job("cot", "img-1"), _job("cot", "img-2")])


def test_a_base_model_that_answers_fewer_stage_turns_than_asked_fails_the_run():
    model = _model()
    model.base.short = 1
    with pytest.raises(ValueError, match="zip"):
        model.generate_until(_requests())


def test_a_base_model_that_answers_fewer_questions_than_asked_fails_the_run(tmp_path):
    _model(tmp_path).generate_until(_requests())  # every stage cached: only the questions are asked next
    again = _model(tmp_path)
    again.base.short = 1
    with pytest.raises(ValueError, match="zip"):
        again.generate_until(_requests())


def test_a_second_run_takes_every_stage_of_every_round_from_the_cache(tmp_path):
    first = _model(tmp_path).generate_until(_requests())
    # round 1: captions 1, 2; round 2: boxes 3, 4; then the questions 5, 6
    assert first == ["5:q1 [img-1]", "6:q2 [img-2]"]
    again = _model(tmp_path)
    assert again.generate_until(_requests()) == ["7:q1 [img-1]", "8:q2 [img-2]"]
    assert again.calls == {"stage": 0, "final": 2, "stage_cache_hits": 4}
    (finals,) = again.base.batches
    conversation = finals[0].args[1]({})
    assert [conversation[1]["content"][0]["text"], conversation[3]["content"][0]["text"]] == [
        "1:caption [img-1]", "3:boxes [img-1]"]  # fmt: skip


def test_another_base_model_on_the_same_cache_makes_its_own_maps(tmp_path):
    _model(tmp_path, pretrained="a").generate_until(_requests())
    other = _model(tmp_path, pretrained="b")
    other.generate_until(_requests())
    assert other.calls == {"stage": 4, "final": 2, "stage_cache_hits": 0}


def test_a_map_read_from_the_cache_is_the_one_recorded_for_the_logs_not_the_latest_of_another_prompt(tmp_path):
    """Prompt "caption" then prompt "other" fill the cache; a third run with "caption" reads its own map from the
    cache, and that map (not the "latest" one, made for "other") is what the logs record."""
    _model(tmp_path).generate_until(_requests(1))  # caption 1, boxes 2, q1 3
    _model(tmp_path, docs=[{**DOCS[0], "prompt": "other"}]).generate_until(_requests(1))  # 4, 5, 6
    stages.clear()
    _model(tmp_path).generate_until(_requests(1))
    assert stages.stage_result("caption", "img-1") == {"key": "img-1", "output": "1:caption [img-1]"}


def test_stages_of_one_round_share_one_bar_naming_each(progress_bars):
    def one_stage_each(doc):
        return [_image_turn(doc["image"], "look"), stages.stage_placeholder(doc["stage"], doc["image"]),
                {"role": "user", "content": [{"type": "text", "text": doc["question"]}]}]  # fmt: skip

    model = _model(docs=[{**DOCS[0], "stage": "caption"}, {**DOCS[1], "stage": "boxes"}])
    requests = [
        Instance("generate_until", ("", one_stage_each, {}, i, "t", "test"), 0, _meta("t", i)) for i in range(2)
    ]
    model.generate_until(requests)
    assert [(b.desc, b.total) for b in progress_bars] == [("staged: caption + boxes", 2), ("staged: answers", 2)]


def test_the_documents_bar_counts_every_document_by_chunk_and_the_calls_are_logged(monkeypatch):
    import tqdm

    made: list[dict] = []

    class Bar:
        def __init__(self, **kwargs):
            made.append({**kwargs, "updates": []})

        def update(self, n):
            made[-1]["updates"].append(n)

        def close(self):
            made[-1]["closed"] = True

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(m.record["message"]), level="INFO")
    try:
        _model(chunk_size=1).generate_until(_requests())
    finally:
        logger.remove(sink)
    assert made == [{"total": 2, "desc": "staged (maps + questions)", "unit": "doc", "disable": None,
                     "updates": [1, 1], "closed": True}]  # fmt: skip
    assert "staged: {'stage': 4, 'final': 2, 'stage_cache_hits': 0}" in seen
