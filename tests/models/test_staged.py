"""``--model staged``: stage turns generated once per key, batched per round, cached, then the final turns."""

from __future__ import annotations

import pytest
from lmms_eval.api.instance import Instance

from lmms_spatial.models import stages
from lmms_spatial.models.staged import Staged


class FakeChat:
    """A chat 'model' that records every batch it is given and answers from the last user text and the images of
    the conversation: each image gets its own map, so a map handed to the wrong image shows."""

    is_simple = False

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.batches: list[list[list[dict]]] = []
        self.task_dict = {}

    def generate_until(self, requests):
        batch = []
        for r in requests:
            _ctx, doc_to_messages, _gen, doc_id, task, split = r.args
            batch.append(doc_to_messages(self.task_dict[task][split][doc_id]))
        self.batches.append(batch)
        return [_answer(messages) for messages in batch]


def _answer(messages: list[dict]) -> str:
    images = [part["url"] for m in messages if m["role"] == "user" for part in m["content"] if part["type"] == "image"]
    return f"answer to: {messages[-1]['content'][-1]['text']}" + (f" [{', '.join(images)}]" if images else "")


class FakeSimple(FakeChat):
    is_simple = True


def _messages(doc):
    """Two turns: describe the image (a stage keyed by the image), then the question."""
    return [
        {"role": "user", "content": [{"type": "image", "url": doc["image"]}, {"type": "text", "text": "map please"}]},
        stages.stage_placeholder("map", doc["image"]),
        {"role": "user", "content": [{"type": "text", "text": doc["question"]}]},
    ]


DOCS = [
    {"image": "img-1", "question": "q1"},
    {"image": "img-1", "question": "q2"},
    {"image": "img-2", "question": "q3"},
    {"image": "img-1", "question": "q4"},
]


def _requests(docs=DOCS, to_messages=_messages):
    return [
        Instance(
            "generate_until",
            ("", to_messages, {"max_new_tokens": 8}, i, "t", "test"),
            0,
            {"task": "t", "doc_id": i, "repeats": 1},
        )
        for i in range(len(docs))
    ]


@pytest.fixture(autouse=True)
def _clean_stage_records():
    stages.clear()
    yield
    stages.clear()


def _model(tmp_path=None, **kwargs) -> Staged:
    model = Staged(base=f"{__name__}.FakeChat", stage_cache=str(tmp_path) if tmp_path else "", **kwargs)
    model.task_dict = {"t": {"test": DOCS}}
    return model


def test_one_stage_call_per_distinct_key_all_in_one_batch_then_one_final_batch():
    model = _model()
    answers = model.generate_until(_requests())
    stage_batch, final_batch = model.base.batches
    assert len(stage_batch) == 2  # img-1 and img-2, not 4
    assert [m[-1]["content"][-1]["text"] for m in stage_batch] == ["map please", "map please"]
    assert len(final_batch) == 4
    assert answers == [
        "answer to: q1 [img-1]",
        "answer to: q2 [img-1]",
        "answer to: q3 [img-2]",
        "answer to: q4 [img-1]",
    ]
    assert model.calls == {"stage": 2, "final": 4, "stage_cache_hits": 0}


def test_each_final_turn_carries_the_map_of_its_own_image():
    """q3 asks about img-2: its conversation holds img-2's map, the others img-1's (a map keyed by anything coarser
    than the image, the task or the chunk, would hand img-1's map to q3)."""
    model = _model(chunk_size=3)
    model.generate_until(_requests())
    finals = [conversation for batch in model.base.batches for conversation in batch if len(conversation) == 3]
    maps = {c[2]["content"][0]["text"]: c[1]["content"][0]["text"] for c in finals}
    assert maps == {"q1": "answer to: map please [img-1]", "q2": "answer to: map please [img-1]",
                    "q3": "answer to: map please [img-2]", "q4": "answer to: map please [img-1]"}  # fmt: skip


def test_chunks_bound_the_conversations_held_and_still_make_each_stage_once():
    model = _model(chunk_size=2)
    answers = model.generate_until(_requests())
    # document order, 2 at a time: [q1 q2] -> map img-1, finals; [q3 q4] -> map img-2, finals (img-1 reused)
    assert [len(b) for b in model.base.batches] == [1, 2, 1, 2]
    assert model.calls == {"stage": 2, "final": 4, "stage_cache_hits": 0}
    assert answers == [
        "answer to: q1 [img-1]",
        "answer to: q2 [img-1]",
        "answer to: q3 [img-2]",
        "answer to: q4 [img-1]",
    ]


def test_answers_come_back_in_request_order_whatever_the_document_order():
    model = _model(chunk_size=3)
    answers = model.generate_until(list(reversed(_requests())))
    assert answers == [
        "answer to: q4 [img-1]",
        "answer to: q3 [img-2]",
        "answer to: q2 [img-1]",
        "answer to: q1 [img-1]",
    ]


def test_final_prompt_carries_the_generated_stage_turn_as_the_assistant_message():
    model = _model()
    model.generate_until(_requests())
    final = model.base.batches[1][0]
    assert final[1] == {"role": "assistant", "content": [{"type": "text", "text": "answer to: map please [img-1]"}]}
    assert final[0]["content"][0] == {"type": "image", "url": "img-1"}


def test_stage_outputs_are_recorded_for_the_tasks_logs():
    _model().generate_until(_requests())
    assert stages.stage_result("map", "img-2") == {"key": "img-2", "output": "answer to: map please [img-2]"}
    assert stages.stage_result("map", "img-1") == {"key": "img-1", "output": "answer to: map please [img-1]"}


def test_stage_cache_makes_a_second_run_skip_the_stage(tmp_path):
    _model(tmp_path).generate_until(_requests())
    again = _model(tmp_path)
    again.generate_until(_requests())
    assert again.calls == {"stage": 0, "final": 4, "stage_cache_hits": 2}
    assert len(again.base.batches) == 1  # only the final turns
    # each question is given its own image's map from the cache
    (finals,) = again.base.batches
    assert [c[1]["content"][0]["text"] for c in finals] == [
        "answer to: map please [img-1]", "answer to: map please [img-1]", "answer to: map please [img-2]",
        "answer to: map please [img-1]"]  # fmt: skip


def test_a_changed_stage_prompt_is_not_served_from_the_cache(tmp_path):
    _model(tmp_path).generate_until(_requests())

    def other_prompt(doc):
        messages = _messages(doc)
        messages[0]["content"][1]["text"] = "a different map prompt"
        return messages

    again = _model(tmp_path)
    again.generate_until(_requests(to_messages=other_prompt))
    assert again.calls["stage"] == 2


def test_a_stage_that_builds_on_another_runs_in_a_later_round():
    def two_stages(doc):
        return [
            {"role": "user", "content": [{"type": "text", "text": "caption"}]},
            stages.stage_placeholder("caption", doc["image"]),
            {"role": "user", "content": [{"type": "text", "text": "boxes"}]},
            stages.stage_placeholder("boxes", doc["image"]),
            {"role": "user", "content": [{"type": "text", "text": doc["question"]}]},
        ]

    model = _model()
    model.generate_until(_requests(to_messages=two_stages))
    captions, boxes, finals = model.base.batches
    assert len(captions) == 2 and len(boxes) == 2 and len(finals) == 4
    assert boxes[0][1]["content"][0]["text"] == "answer to: caption"


def test_arguments_other_than_base_and_stage_cache_go_to_the_base_model():
    assert _model(pretrained="x/y", device="cpu").base.kwargs == {"pretrained": "x/y", "device": "cpu"}


def test_a_simple_base_model_is_refused():
    with pytest.raises(ValueError, match="simple"):
        Staged(base=f"{__name__}.FakeSimple")


def test_replay_restores_logged_stage_outputs():
    record = {"score": 1.0, "stage_outputs": {"map": {"key": "img-9", "output": "{}"}}}
    assert stages.restore_from_record(record) == 1
    assert stages.stage_result("map", "img-9") == {"key": "img-9", "output": "{}"}


def test_a_map_a_resumed_run_did_not_generate_is_read_from_the_stage_cache(tmp_path):
    _model(tmp_path).generate_until(_requests())
    stages.clear()  # a new process: its answers come from lmms-eval's response cache, the model is not asked
    again = _model(tmp_path)
    assert stages.stage_result("map", "img-2") == {"key": "img-2", "output": "answer to: map please [img-2]"}
    assert stages.stage_result("map", "img-1") == {"key": "img-1", "output": "answer to: map please [img-1]"}
    assert again.base.batches == []


def test_in_a_run_that_keeps_its_answers_the_maps_are_kept_beside_them_unless_a_stage_cache_is_given(tmp_path):
    model = _model()
    model.keep_stages_with_answers(tmp_path / "answers")
    assert model.cache.path == tmp_path / "answers" / "lmms_spatial_stages.sqlite"
    model.keep_stages_with_answers(tmp_path / "elsewhere")  # chosen once
    assert model.cache.path == tmp_path / "answers" / "lmms_spatial_stages.sqlite"
    chosen = _model(tmp_path / "mine")
    chosen.keep_stages_with_answers(tmp_path / "answers")
    assert chosen.cache.path == tmp_path / "mine" / "stages.sqlite"
    on_file = _model()
    on_file.keep_stages_with_answers(tmp_path / "cache.db")  # --use_cache names a database file
    assert on_file.cache.path == tmp_path / "lmms_spatial_stages.sqlite"


def test_each_stage_and_the_answers_show_a_bar_of_their_own_named_for_the_stage(progress_bars):
    _model().generate_until(_requests())
    assert [(b.desc, b.total, b.n) for b in progress_bars] == [
        ("staged: map", 2, 2),  # one map per image: img-1, img-2
        ("staged: answers", 4, 4),
    ]
