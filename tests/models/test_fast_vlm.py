"""``--model fast_vlm``: lmms-eval's ``qwen2_5_vl`` inputs and answers, prepared on worker threads.

The pure parts (resize, bucketing, padding, the thread pipeline) are tested with hand-made values;
the class itself against lmms-eval 0.7.3's own chat ``qwen2_5_vl`` class on the tiny random-weight
checkpoint (tests/tiny_models.py), in-process, on the same documents: the tensors each class hands
to ``model.generate`` are captured and compared, and so are the greedy answers.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from lmms_eval.api.instance import Instance
from PIL import Image

from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.models.fast_inputs import PreparedDoc, bucket, collate, fetch_image, smart_resize, windows
from lmms_spatial.models.fast_pipeline import Pipeline

# --- the qwen-vl-utils resize ---------------------------------------------------------------------


def test_smart_resize_rounds_each_side_to_28_within_the_pixel_bounds():
    assert smart_resize(960, 1280, 28, 3136, 12845056) == (952, 1288)  # 34.3 -> 34, 45.7 -> 46 (x28)
    # over max_pixels: scaled by sqrt(960*1280 / 12544) = 9.897 then floored to 28: 97.0 -> 84, 129.3 -> 112
    assert smart_resize(960, 1280, 28, 3136, 12544) == (84, 112)
    # under min_pixels: 28x28 < 3136, scaled up by 2 and ceiled: (56, 56)
    assert smart_resize(28, 28, 28, 3136, 12544) == (56, 56)


@pytest.mark.parametrize(
    "size, mode", [((1280, 960), "RGB"), ((192, 128), "RGB"), ((97, 301), "RGBA"), ((50, 40), "L")]
)
def test_fetch_image_equals_qwen_vl_utils(size, mode):
    qwen_vl_utils = pytest.importorskip("qwen_vl_utils")
    rng = np.random.default_rng(0)
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    pixels = rng.integers(0, 256, size=(size[1], size[0], channels), dtype=np.uint8)
    image = Image.fromarray(pixels[:, :, 0] if mode == "L" else pixels, mode=mode)
    ours = fetch_image({"type": "image", "image": image})
    theirs = qwen_vl_utils.fetch_image({"type": "image", "image": image}, image_patch_size=14)
    assert ours.size == theirs.size and ours.mode == theirs.mode == "RGB"
    assert np.array_equal(np.asarray(ours), np.asarray(theirs))


# --- batching -----------------------------------------------------------------------------------


def _doc(position: int, n_tokens: int, first_id: int = 1, patches: int = 0) -> PreparedDoc:
    ids = torch.arange(first_id, first_id + n_tokens).unsqueeze(0)
    tensors = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if patches:
        tensors["pixel_values"] = torch.full((patches, 3), float(position))
    return PreparedDoc(position, tensors, context=f"doc {position}")


def test_bucket_sorts_a_window_longest_first_ties_in_request_order():
    docs = [_doc(0, 5), _doc(1, 9), _doc(2, 5), _doc(3, 12), _doc(4, 1)]
    batches = bucket(docs, 2)
    assert [[d.position for d in b] for b in batches] == [[3, 1], [0, 2], [4]]


def test_windows_never_span_two_generation_argument_groups():
    assert windows([[0, 1, 2, 3, 4], [5, 6]], 2) == [[0, 1], [2, 3], [4], [5, 6]]


def test_the_first_window_is_one_batch_so_the_gpu_starts_early():
    assert windows([[0, 1, 2, 3, 4, 5, 6], [7, 8]], 4, first=2) == [[0, 1], [2, 3, 4, 5], [6], [7, 8]]
    assert windows([[0], [1, 2]], 4, first=2) == [[0], [1, 2]]


def test_collate_pads_on_the_left_and_concatenates_pixels_in_document_order():
    batch = collate([_doc(0, 2, first_id=10, patches=1), _doc(1, 4, first_id=20, patches=2)], pad_token_id=99)
    assert batch["input_ids"].tolist() == [[99, 99, 10, 11], [20, 21, 22, 23]]
    assert batch["attention_mask"].tolist() == [[0, 0, 1, 1], [1, 1, 1, 1]]
    assert batch["pixel_values"][:, 0].tolist() == [0.0, 1.0, 1.0]


def test_collate_batches_a_text_only_document_with_an_image_document():
    batch = collate([_doc(0, 3, first_id=10), _doc(1, 2, first_id=20, patches=2)], pad_token_id=99)
    assert batch["input_ids"].tolist() == [[10, 11, 12], [99, 20, 21]]
    assert batch["pixel_values"].shape == (2, 3)  # only the second document's patches


def test_collate_refuses_pixel_tensors_that_cannot_be_concatenated():
    a, b = _doc(0, 2), _doc(1, 2)
    a.tensors["pixel_values"], b.tensors["pixel_values"] = torch.zeros(1, 3, 4, 4), torch.zeros(1, 3, 5, 5)
    with pytest.raises(ValueError, match="batch_size=1"):
        collate([a, b], pad_token_id=0)


# --- the pipeline -------------------------------------------------------------------------------


def _pipeline(n: int, batch_size: int, window: int, prepare=None, **kwargs) -> Pipeline:
    jobs = [[(i, ("", None, {}, i, "t", "test")) for i in range(s, min(s + window, n))] for s in range(0, n, window)]
    prepare = prepare or (lambda position, args: _doc(position, 1 + position % 3))
    return Pipeline(jobs, prepare, lambda docs: collate(docs, pad_token_id=0), batch_size, **kwargs)


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("fast_vlm")}


def test_pipeline_yields_every_document_once_in_length_buckets_per_window():
    with _pipeline(7, batch_size=2, window=4, workers=3) as pipeline:
        batches = [[d.position for d in b.docs] for b in pipeline]
    # window [0..3]: tokens 1,2,3,1 -> 2,1 | 0,3 ; window [4..6]: tokens 2,3,1 -> 5,4 | 6
    assert batches == [[2, 1], [0, 3], [5, 4], [6]]
    assert pipeline.timing.docs == 7


def test_pipeline_raises_a_worker_error_in_the_consumer_and_leaves_no_thread():
    def prepare(position, args):
        if position == 5:
            raise BadDocumentError("doc-5", "image", "cannot identify image file")
        return _doc(position, 2)

    before = _threads()
    seen = []
    with pytest.raises(BadDocumentError, match="doc-5"):
        with _pipeline(8, batch_size=2, window=2, prepare=prepare, workers=2) as pipeline:
            for batch in pipeline:
                seen.extend(d.position for d in batch.docs)
    assert seen == [0, 1, 2, 3]  # the batches before the bad one were delivered
    assert _threads() == before == set()


def test_pipeline_stops_its_threads_when_the_consumer_stops_early():
    with _pipeline(40, batch_size=2, window=2, workers=2, queue_batches=1) as pipeline:
        next(iter(pipeline))
    assert _threads() == set()


def test_pipeline_prepares_at_most_two_windows_ahead_of_a_blocked_queue():
    calls = []
    lock = threading.Lock()

    def prepare(position, args):
        with lock:
            calls.append(position)
        return _doc(position, 2)

    # 10 windows of one batch; the consumer takes one batch and stops reading
    with _pipeline(20, batch_size=2, window=2, prepare=prepare, workers=2, queue_batches=1) as pipeline:
        next(iter(pipeline))
        deadline = time.monotonic() + 10
        while not pipeline._queue.full() and time.monotonic() < deadline:
            time.sleep(0.01)
        while len(calls) < 10 and time.monotonic() < deadline:  # windows 0..4 once the batcher blocks
            time.sleep(0.01)
        prepared = len(calls)
    # consumed (window 0) + queued (1) + blocked in put (2) + two submitted ahead (3, 4)
    assert prepared == 10


# --- the class against lmms-eval's qwen2_5_vl -----------------------------------------------------

SIZES = [(192, 128), (128, 192), (300, 200), (96, 96), (256, 128), (192, 128), (160, 240)]
MODEL_ARGS = {"device": "cpu", "device_map": "cpu", "min_pixels": 3136, "max_pixels": 12544}


def _docs() -> list[dict]:
    rng = np.random.default_rng(0)
    docs = []
    for i, (w, h) in enumerate(SIZES):
        images = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for _ in range(1 + i % 2)]
        docs.append({"id": f"d{i}", "images": images, "question": "Which object is left of the cube? " * (1 + i % 3)})
    return docs


def _messages(doc: dict) -> list[dict]:
    content = [{"type": "image", "url": image} for image in doc["images"]]
    return [{"role": "user", "content": [*content, {"type": "text", "text": doc["question"]}]}]


def _requests(order=None, gen=None) -> list[Instance]:
    order = range(len(SIZES)) if order is None else order
    return [
        Instance(
            "generate_until",
            (f"ctx {i}", _messages, dict(gen or {"max_new_tokens": 6}), i, "t", "test"),
            0,
            {"task": "t", "doc_id": i, "repeats": 1},
        )
        for i in order
    ]


@pytest.fixture(scope="module")
def checkpoint(tiny_qwen2_5_vl) -> Path:
    return tiny_qwen2_5_vl  # built once per test run (tests/conftest.py)


def _capture(model) -> list[dict]:
    """Record what ``model.model.generate`` is given (the tensors lmms-eval's class or ours built)."""
    calls: list[dict] = []
    inner = model.model
    original = inner.generate

    def generate(**kwargs):
        calls.append({k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()})
        return original(**kwargs)

    inner.generate = generate
    return calls


@pytest.fixture(scope="module")
def reference(checkpoint):
    """lmms-eval's chat qwen2_5_vl at batch size 1, and its answers to the documents in order (run once)."""
    from lmms_eval.models.chat.qwen2_5_vl import Qwen2_5_VL

    model = Qwen2_5_VL(pretrained=str(checkpoint), batch_size=1, **MODEL_ARGS)
    if not hasattr(model, "fps"):  # its generate_until reads self.fps, which this __init__ never sets
        pytest.skip("lmms-eval 0.7.0's chat qwen2_5_vl cannot answer (self.fps is set from 0.7.1): no reference")
    model.task_dict = {"t": {"test": _docs()}}
    calls = _capture(model)
    model.answers = [r.text for r in model.generate_until(_requests())]
    model.calls = list(calls)
    return model


def _fast(checkpoint, **kwargs):
    from lmms_spatial.models.fast_vlm import FastVLM

    args = {**MODEL_ARGS, "vision_attention": "stock", "attn_implementation": "sdpa", **kwargs}
    model = FastVLM(pretrained=str(checkpoint), **args)
    model.task_dict = {"t": {"test": _docs()}}
    return model


def _inputs_by_doc(calls: list[dict]) -> list[dict]:
    """Each document's input_ids (padding removed), pixel_values and image_grid_thw, in call order."""
    docs = []
    for call in calls:
        patches = call["image_grid_thw"].prod(dim=1).tolist()
        image = 0
        pixel_offset = 0
        for row in range(call["input_ids"].shape[0]):
            ids = call["input_ids"][row][call["attention_mask"][row].bool()]
            n_images = int((ids == 409).sum())
            n_patches = sum(patches[image : image + n_images])
            docs.append(
                {
                    "input_ids": ids.tolist(),
                    "grid": call["image_grid_thw"][image : image + n_images].tolist(),
                    "pixels": call["pixel_values"][pixel_offset : pixel_offset + n_patches],
                }
            )
            image += n_images
            pixel_offset += n_patches
    return docs


def test_the_tiny_tokenizer_numbers_vision_start_409(checkpoint):
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(str(checkpoint)).convert_tokens_to_ids("<|vision_start|>") == 409


def test_same_token_ids_pixels_and_greedy_answers_as_lmms_eval_at_batch_size_1(checkpoint, reference):
    ref_calls, expected = reference.calls, reference.answers
    fast = _fast(checkpoint, batch_size=1)
    calls = _capture(fast)
    answers = [r.text for r in fast.generate_until(_requests())]

    assert answers == expected
    assert any(answer for answer in answers)  # the model really generated text
    # batch_size 1: both feed documents one per call; lmms-eval in its sorted order, ours by length
    ref_docs, our_docs = _inputs_by_doc(ref_calls), _inputs_by_doc(calls)
    key = lambda d: d["input_ids"]  # noqa: E731
    for ours, theirs in zip(sorted(our_docs, key=key), sorted(ref_docs, key=key), strict=True):
        assert ours["input_ids"] == theirs["input_ids"]
        assert ours["grid"] == theirs["grid"]
        assert torch.equal(ours["pixels"], theirs["pixels"])  # default torchvision backend = lmms-eval's
    assert fast.timing.docs == len(SIZES) and fast.timing.batches == len(SIZES)


def test_pil_backend_matches_lmms_eval_given_the_pil_image_processor(checkpoint, reference):
    from transformers import AutoImageProcessor

    original = reference.processor.image_processor
    reference.processor.image_processor = AutoImageProcessor.from_pretrained(
        str(checkpoint), backend="pil", min_pixels=3136, max_pixels=12544
    )
    try:
        expected = [r.text for r in reference.generate_until(_requests())]
    finally:
        reference.processor.image_processor = original
    fast = _fast(checkpoint, batch_size=1, image_backend="pil")
    assert type(fast.processor.image_processor).__name__ == "Qwen2VLImageProcessorPil"
    assert [r.text for r in fast.generate_until(_requests())] == expected


def test_batched_answers_agree_with_lmms_eval_at_batch_size_1(checkpoint, reference):
    expected = reference.answers
    fast = _fast(checkpoint, batch_size=4)
    calls = _capture(fast)
    assert [r.text for r in fast.generate_until(_requests())] == expected
    assert [c["input_ids"].shape[0] for c in calls] == [4, 3]


def test_answers_come_back_in_request_order_whatever_the_batches(checkpoint, reference):
    order = [6, 2, 0, 5, 1, 4, 3]
    expected = [reference.answers[i] for i in order]  # at batch size 1 an answer depends on its document only
    fast = _fast(checkpoint, batch_size=3, bucket_window=2)
    assert [r.text for r in fast.generate_until(_requests(order))] == expected


def test_requests_with_different_generation_arguments_are_never_batched_together(checkpoint):
    fast = _fast(checkpoint, batch_size=8)
    calls = _capture(fast)
    requests = _requests()
    for r in requests[::2]:  # docs 0, 2, 4, 6 ask for 2 new tokens, the others for 6
        r.arguments = (*r.args[:2], {"max_new_tokens": 2}, *r.args[3:])
    results = fast.generate_until(requests)
    assert sorted(c["max_new_tokens"] for c in calls) == [2, 6]
    assert sorted(c["input_ids"].shape[0] for c in calls) == [3, 4]
    assert [r.token_counts.output_tokens <= (2 if i % 2 == 0 else 6) for i, r in enumerate(results)] == [True] * 7


def test_a_corrupt_image_decoded_by_the_task_fails_naming_the_document_and_field(checkpoint):
    from lmms_spatial.data.images import load_image

    def messages(doc):  # as our tasks do: decode in doc_to_messages, failing with the id and field
        image = load_image(doc["image_bytes"], doc_id=doc["id"], field="image_bytes")
        return [{"role": "user", "content": [{"type": "image", "url": image}, {"type": "text", "text": "?"}]}]

    good = __import__("io").BytesIO()
    Image.new("RGB", (64, 48), "red").save(good, format="PNG")
    docs = [{"id": f"d{i}", "image_bytes": good.getvalue()} for i in range(4)]
    docs[2]["image_bytes"] = good.getvalue()[:60]  # truncated PNG
    fast = _fast(checkpoint, batch_size=2)
    fast.task_dict = {"t": {"test": docs}}
    requests = _requests(order=range(4))
    for r in requests:
        r.arguments = (r.args[0], messages, *r.args[2:])
    with pytest.raises(BadDocumentError, match=r"document 'd2', field 'image_bytes'"):
        fast.generate_until(requests)
    assert _threads() == set()


def test_an_unreadable_image_in_the_messages_fails_naming_the_document(checkpoint, tmp_path):
    garbage = tmp_path / "broken.png"
    garbage.write_bytes(b"not an image at all")
    docs = _docs()
    docs[3]["images"] = [str(garbage)]
    fast = _fast(checkpoint, batch_size=2)
    fast.task_dict = {"t": {"test": docs}}
    with pytest.raises(BadDocumentError, match=r"document 'd3', field 'image 0 of t document 3'"):
        fast.generate_until(_requests())
    assert _threads() == set()


def test_no_worker_thread_outlives_generate_until(checkpoint):
    fast = _fast(checkpoint, batch_size=2, workers=3)
    fast.generate_until(_requests())
    assert _threads() == set()


def test_staged_runs_over_fast_vlm_by_its_model_id(checkpoint, reference):
    from lmms_eval.models import get_model

    from lmms_spatial.models.fast_vlm import FastVLM
    from lmms_spatial.models.staged import Staged

    assert get_model("fast_vlm") is FastVLM
    staged = Staged(base="fast_vlm", pretrained=str(checkpoint), batch_size=2, vision_attention="stock", **MODEL_ARGS)
    staged.task_dict = {"t": {"test": _docs()}}
    assert staged.generate_until(_requests()) == reference.answers
    assert staged.base.timing_total.docs == staged.base.timing.docs == len(SIZES)  # no stage: one call


def test_generic_path_runs_a_llava_and_batching_keeps_each_answer(tmp_path):
    """Outside the Qwen family: no qwen-vl-utils resize, the processor per document, batches concatenated."""
    from tiny_models import build_tiny_llava

    checkpoint = build_tiny_llava(tmp_path / "tiny-llava")
    one = _fast(checkpoint, batch_size=1)
    assert one.model_type == "llava" and not one.qwen_resize
    calls = _capture(one)
    expected = [r.text for r in one.generate_until(_requests())]
    assert any(expected)
    # one 56x56 crop per image (pixel_values: images x 3 x 56 x 56); documents 1, 3, 5 have two images
    assert sorted(c["pixel_values"].shape[0] for c in calls) == [1, 1, 1, 1, 2, 2, 2]
    assert all(c["pixel_values"].shape[1:] == (3, 56, 56) for c in calls)
    three = _fast(checkpoint, batch_size=3)
    assert [r.text for r in three.generate_until(_requests())] == expected


def test_batched_vision_attention_keeps_lmms_evals_greedy_answers(checkpoint, reference):
    fast = _fast(checkpoint, batch_size=1, vision_attention="batched")
    assert fast.vision_attention == "batched"  # the tiny tower's 2 blocks were patched
    assert [r.text for r in fast.generate_until(_requests())] == reference.answers


def test_vision_attention_is_reported_stock_when_no_block_could_be_patched():
    from lmms_spatial.models.fast_vlm import patch_vision_attention

    line = patch_vision_attention(torch.nn.Linear(2, 2))  # no vision tower to patch
    assert line.startswith("vision attention: stock (")


def test_each_call_appends_its_counters_in_ms_to_the_stats_file(checkpoint, tmp_path, monkeypatch):
    from lmms_spatial.models.fast_vlm import STATS_ENV

    stats = tmp_path / "stats.jsonl"
    monkeypatch.setenv(STATS_ENV, str(stats))
    fast = _fast(checkpoint, batch_size=4)
    fast.generate_until(_requests())
    fast.generate_until(_requests([0, 1]))
    first, second = (json.loads(line) for line in stats.read_text().splitlines())
    # 7 documents at batch 4: the first window is one batch (4), then the 3 left; then 2 documents in one
    assert (first["docs"], first["batches"], second["docs"], second["batches"]) == (7, 2, 2, 1)
    assert first["critical_path_ms"] == pytest.approx(first["wait_ms"] + first["host_ms"], abs=0.002)
    assert set(first) == {"rank", "docs", "batches", "workers", "prep_ms", "wait_ms", "generate_ms", "host_ms",
                          "critical_path_ms"}  # fmt: skip


def test_the_decode_prefetcher_leaves_fast_vlm_to_its_own_workers(checkpoint):
    assert _fast(checkpoint, batch_size=1).prefetch_order(_requests()) == []
