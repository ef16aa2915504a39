"""Prefetching our tasks' model inputs (lmms_spatial.prefetch): order, bound, errors, fallbacks, threads."""

from __future__ import annotations

import functools
import io
import threading
import time

import pytest
from lmms_eval.api.instance import Instance
from PIL import Image

from lmms_spatial import prefetch as pf
from lmms_spatial.data.images import BadDocumentError
from lmms_spatial.tasks.mmsi import adapter as mmsi

TASK, SPLIT = "mmsi_vanilla", "test"
GEN = {"max_new_tokens": 4, "until": ["\n\n"]}


def png(colour: tuple[int, int, int], size: tuple[int, int] = (8, 6)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def mmsi_doc(i: int, question: str | None = None) -> dict:
    return {
        "id": i,
        "images": [{"bytes": png((i, 0, 0)), "path": None}, {"bytes": png((0, i, 0)), "path": None}],
        "question": question or f"question {i}",
        "answer": "A",
    }


def request(doc_id: int, ctx: str, gen: dict | None = None, fn=None) -> Instance:
    fn = fn or functools.partial(mmsi.doc_to_messages, lmms_eval_specific_kwargs={"pre_prompt": ""})
    args = (ctx, fn, dict(gen or GEN), doc_id, TASK, SPLIT)
    return Instance("generate_until", args, idx=0, metadata={"task": TASK, "doc_id": doc_id, "repeats": 1})


class ChatLoop:
    """lmms-eval 0.7.3's chat ``generate_until`` loop (Collator by context, grouped by gen kwargs)."""

    def __init__(self, docs: list[dict], batch_size: int = 2) -> None:
        self.task_dict = {TASK: {SPLIT: docs}}
        self.batch_size = batch_size
        self.read: list[int] = []  # doc ids in the order their messages were built
        self.pixels: dict[int, list[tuple]] = {}
        self.threads_seen: set[str] = set()

    def generate_until(self, requests: list[Instance]) -> list[str]:
        from lmms_eval import utils

        self.threads_seen = {t.name for t in threading.enumerate()}
        collator = utils.Collator([r.args for r in requests], lambda x: (x[0], x[0]), group_fn=lambda x: x[2],
                                  grouping=True)  # fmt: skip
        out = []
        for chunk in collator.get_batched(n=self.batch_size):
            for _ctx, fn, _gen, doc_id, task, split in chunk:
                messages = fn(self.task_dict[task][split][doc_id])
                self.read.append(doc_id)
                images = [c["url"] for c in messages[0]["content"] if c["type"] == "image"]
                self.pixels[doc_id] = [im.getpixel((0, 0)) for im in images]
                out.append(f"answer {doc_id}")
        return collator.get_original(out)


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(pf.THREAD_PREFIX)]


# --- order ----------------------------------------------------------------------------------


def test_predicted_order_is_the_chat_models_order_sorted_by_context_within_generation_kwargs_groups() -> None:
    other = {"max_new_tokens": 9}
    requests = [request(0, "b"), request(1, "a", other), request(2, "a"), request(3, "c", other)]
    # group of GEN first (first seen), sorted by context: 2 ("a"), 0 ("b"); then the other: 1 ("a"), 3 ("c")
    assert pf.predicted_order(object(), requests) == [2, 0, 1, 3]
    loop = ChatLoop([mmsi_doc(i) for i in range(4)])
    loop.generate_until(requests)
    assert loop.read == [2, 0, 1, 3]


def test_a_model_of_ours_declares_its_order_and_text_only_models_read_nothing() -> None:
    from lmms_spatial.models.random_choice import RandomChoice
    from lmms_spatial.models.staged import Staged

    requests = [request(2, "x"), request(0, "y"), request(1, "z")]
    assert Staged.prefetch_order(None, requests) == [1, 2, 0]  # document order
    assert RandomChoice().prefetch_order(requests) == []


# --- results --------------------------------------------------------------------------------


def test_every_document_gets_its_own_images_and_the_answers_keep_request_order() -> None:
    docs = [mmsi_doc(i) for i in range(6)]
    loop = ChatLoop(docs)
    answers = pf.prefetching(loop, loop.generate_until, [request(i, f"ctx {5 - i}") for i in range(6)])
    assert answers == [f"answer {i}" for i in range(6)]
    assert loop.read == [5, 4, 3, 2, 1, 0]
    assert loop.pixels == {i: [(i, 0, 0), (0, i, 0)] for i in range(6)}
    stats = pf.last_stats()  # a document whose worker had not started yet is built by the model's thread
    assert stats.hits + stats.misses == 6


def test_results_are_the_same_whatever_the_thread_count() -> None:
    docs = [mmsi_doc(i) for i in range(5)]
    seen = []
    for threads in (1, 4):
        loop = ChatLoop(docs)
        pf.prefetching(loop, loop.generate_until, [request(i, f"c{i % 3}") for i in range(5)], threads=threads)
        seen.append((loop.read, loop.pixels))
    assert seen[0] == seen[1]


def test_an_unpredicted_order_is_still_correct_built_on_the_models_thread() -> None:
    class Reversed(ChatLoop):
        def generate_until(self, requests):
            for r in reversed(requests):
                _ctx, fn, _gen, doc_id, task, split = r.args
                self.pixels[doc_id] = [c["url"].getpixel((0, 0)) for c in fn(self.task_dict[task][split][doc_id])
                                       [0]["content"] if c["type"] == "image"]  # fmt: skip
            return ["x"] * len(requests)

    docs = [mmsi_doc(i) for i in range(12)]
    loop = Reversed(docs)
    pf.prefetching(loop, loop.generate_until, [request(i, f"{i:02d}") for i in range(12)], window=2, threads=1)
    assert loop.pixels == {i: [(i, 0, 0), (0, i, 0)] for i in range(12)}
    assert pf.last_stats().misses >= 10  # only the window's two documents were built ahead


def test_a_model_that_passes_another_document_gets_that_documents_images() -> None:
    class Swapping(ChatLoop):
        def generate_until(self, requests):
            (_ctx, fn, _gen, _doc_id, _task, _split) = requests[0].args
            time.sleep(0.05)  # let the worker build document 0 first
            messages = fn(mmsi_doc(7))  # not the document of this request
            self.pixels[7] = [c["url"].getpixel((0, 0)) for c in messages[0]["content"] if c["type"] == "image"]
            return ["x"]

    loop = Swapping([mmsi_doc(0)])
    pf.prefetching(loop, loop.generate_until, [request(0, "a")])
    assert loop.pixels == {7: [(7, 0, 0), (0, 7, 0)]}
    assert pf.last_stats().hits == 0


def test_a_corrupt_image_raises_at_the_model_with_the_document_id_and_field() -> None:
    bad = mmsi_doc(3)
    bad["images"][1] = {"bytes": png((1, 2, 3))[:-30], "path": None}  # PNG cut inside its pixel data
    with pytest.raises(BadDocumentError) as direct:
        mmsi.doc_to_messages(bad)
    loop = ChatLoop([mmsi_doc(0), mmsi_doc(1), mmsi_doc(2), bad])
    with pytest.raises(BadDocumentError) as prefetched:
        pf.prefetching(loop, loop.generate_until, [request(i, f"{i}") for i in range(4)])
    assert str(prefetched.value) == str(direct.value)
    assert (prefetched.value.doc_id, prefetched.value.field) == (3, "images[1]")
    assert str(prefetched.value).startswith("document 3, field 'images[1]': cannot decode image")
    assert loop.read == [0, 1, 2]
    assert prefetch_threads() == []


# --- bound and threads ----------------------------------------------------------------------


def test_never_more_than_the_window_of_documents_is_built_and_not_yet_taken() -> None:
    lock, built, taken, most = threading.Lock(), [0], [0], [0]

    def compute(doc):
        with lock:
            built[0] += 1
            most[0] = max(most[0], built[0] - taken[0])
        return doc * 10

    slots = [pf.Slot(i, functools.partial(int, i), compute) for i in range(20)]
    prefetcher = pf.Prefetcher(slots, window=3, threads=4)
    try:
        results = []
        for slot in slots:
            deadline = time.monotonic() + 5
            while built[0] < min(taken[0] + 3, 20) and time.monotonic() < deadline:  # workers reach the bound
                time.sleep(0.001)
            results.append(prefetcher.take(slot, slot.position))
            with lock:
                taken[0] += 1
    finally:
        prefetcher.close()
    assert results == [10 * i for i in range(20)]
    assert most[0] == 3
    assert prefetcher.stats.most_ahead == 3


def test_no_thread_outlives_generate_until_even_when_it_raises_and_requests_are_restored() -> None:
    class Failing(ChatLoop):
        def generate_until(self, requests):
            self.threads_seen = {t.name for t in threading.enumerate()}
            raise RuntimeError("model crashed")

    requests = [request(i, f"{i}") for i in range(4)]
    originals = [r.arguments for r in requests]
    loop = Failing([mmsi_doc(i) for i in range(4)])
    with pytest.raises(RuntimeError, match="model crashed"):
        pf.prefetching(loop, loop.generate_until, requests)
    assert any(name.startswith(pf.THREAD_PREFIX) for name in loop.threads_seen)
    assert prefetch_threads() == []
    assert [r.arguments for r in requests] == originals


def test_switched_off_no_thread_starts_and_requests_are_untouched(monkeypatch) -> None:
    monkeypatch.setenv(pf.ENV_SWITCH, "0")
    requests = [request(i, f"{i}") for i in range(3)]
    originals = [r.arguments[1] for r in requests]
    seen = []

    class Watching(ChatLoop):
        def generate_until(self, requests):
            seen.extend(r.args[1] for r in requests)
            return super().generate_until(requests)

    loop = Watching([mmsi_doc(i) for i in range(3)])
    pf.prefetching(loop, loop.generate_until, requests)
    assert seen == originals
    assert not any(name.startswith(pf.THREAD_PREFIX) for name in loop.threads_seen)
    assert loop.pixels[2] == [(2, 0, 0), (0, 2, 0)]


def test_requests_of_other_tasks_are_left_alone_and_start_no_thread() -> None:
    def their_doc_to_messages(doc):  # a function of another package: not ours
        return [{"role": "user", "content": [{"type": "text", "text": "t"}]}]

    their_doc_to_messages.__module__ = "lmms_eval.tasks.other.utils"
    requests = [request(i, f"{i}", fn=their_doc_to_messages) for i in range(3)]
    loop = ChatLoop([mmsi_doc(i) for i in range(3)])
    pf.prefetching(loop, loop.generate_until, requests)
    assert all(r.args[1] is their_doc_to_messages for r in requests)
    assert not any(name.startswith(pf.THREAD_PREFIX) for name in loop.threads_seen)


def test_lmms_eval_task_methods_are_recognised_through_their_config() -> None:
    class Config:
        doc_to_messages = staticmethod(mmsi.doc_to_messages)

    class Task:
        config = Config()

        def doc_to_messages(self, doc):
            return self.config.doc_to_messages(doc)

    assert pf.is_ours(Task().doc_to_messages)
    assert pf.doc_function_index(("ctx", Task().doc_to_messages, {}, 0, TASK, SPLIT)) == 1  # chat requests
    assert pf.doc_function_index(("ctx", {}, Task().doc_to_messages, 0, TASK, SPLIT)) is None  # simple: not prefetched
    assert pf.doc_function_index(("ctx", {}, Task().doc_to_messages, 0, TASK)) is None  # another shape


def test_a_document_function_written_in_one_of_our_task_folders_is_prefetched_as_the_plugin_counts_it(tmp_path):
    """One rule for "ours" (lmms_spatial.paths.is_our_code): a function lmms-eval loaded from a utils.py of one of our
    task folders (by file path, as module "utils") is ours to the prefetcher as it is to the plugin's wrappers."""
    import os

    from lmms_spatial.paths import tasks_dir
    from lmms_spatial.plugin.ours import is_ours as plugin_is_ours

    source = "def doc_to_messages(doc):\n    return []\n"
    for where, ours in ((os.path.join(tasks_dir(), "mmsi", "utils.py"), True), (str(tmp_path / "utils.py"), False)):
        namespace: dict = {"__name__": "utils"}
        exec(compile(source, where, "exec"), namespace)
        function = namespace["doc_to_messages"]
        assert function.__module__ == "utils"
        assert pf.is_ours(function) is ours, where
        assert plugin_is_ours({"task": "t", "doc_to_messages": function}) is ours, where
        assert pf.doc_function_index(("ctx", function, {}, 0, TASK, SPLIT)) == (1 if ours else None), where


def test_the_window_defaults_to_four_batches_and_at_least_eight(monkeypatch) -> None:
    monkeypatch.delenv(pf.ENV_WINDOW, raising=False)
    assert (pf.default_window(8), pf.default_window(1), pf.default_window("auto")) == (32, 8, 8)
    monkeypatch.setenv(pf.ENV_WINDOW, "5")
    assert pf.default_window(8) == 5
    monkeypatch.setenv(pf.ENV_WINDOW, "0")
    with pytest.raises(ValueError, match="LMMS_SPATIAL_PREFETCH_DOCS"):
        pf.default_window(8)


def test_the_startup_hook_prefetches_only_while_evaluate_runs() -> None:
    import types

    from lmms_spatial.plugin.run import patch_evaluator

    class Model:
        def generate_until(self, requests):
            return ["plain"]

    calls = []

    def evaluate(lm, task_dict=None):
        calls.append(lm.generate_until._lmms_spatial_prefetch)
        return lm.generate_until([])

    module = types.SimpleNamespace(__name__="lmms_eval.evaluator", evaluate=evaluate, simple_evaluate=lambda: None,
                                   consolidate_group_results=lambda *a: None)  # fmt: skip
    patch_evaluator(module)
    patch_evaluator(module)  # idempotent
    lm = Model()
    assert module.evaluate(lm=lm) == ["plain"]
    assert calls == [True]
    assert "generate_until" not in vars(lm)


class PixelChat:
    """A chat base for ``staged``: answers with the first pixel of every image it is shown."""

    is_simple = False

    def __init__(self, **kwargs) -> None:
        self.task_dict = {}

    def generate_until(self, requests):
        out = []
        for r in requests:
            _ctx, fn, _gen, doc_id, task, split = r.args
            messages = fn(self.task_dict[task][split][doc_id])
            out.append(str([c["url"].getpixel((0, 0)) for m in messages for c in m["content"] if c["type"] == "image"]))
        return out


def test_staged_reads_prefetched_documents_chunk_by_chunk_with_the_same_answers() -> None:
    from lmms_spatial.models.staged import Staged

    docs = [mmsi_doc(i) for i in range(6)]
    answers = []
    for prefetch in (False, True):
        model = Staged(base=f"{__name__}.PixelChat", chunk_size=2)
        model.task_dict = {TASK: {SPLIT: docs}}
        requests = [request(i, f"{i}") for i in (3, 1, 5, 0, 2, 4)]
        run = functools.partial(pf.prefetching, model, model.generate_until) if prefetch else model.generate_until
        answers.append(run(requests))
    assert answers[0] == answers[1] == [str([(i, 0, 0), (0, i, 0)]) for i in (3, 1, 5, 0, 2, 4)]
    stats = pf.last_stats()
    assert stats.hits + stats.misses == 6


EXIT_SCRIPT = """
import functools, threading
from lmms_eval.api.instance import Instance
from lmms_spatial import prefetch as pf
from lmms_spatial.tasks.mmsi import adapter

fn = functools.partial(adapter.doc_to_messages, lmms_eval_specific_kwargs={})
doc = {"id": 0, "images": [{"bytes": open(PNG, "rb").read(), "path": None}], "question": "q", "answer": "A"}

class Model:
    task_dict = {"t": {"s": [doc] * 40}}
    def generate_until(self, requests):  # returns before taking anything: 8 built or in flight
        return ["x"] * len(requests)

requests = [Instance("generate_until", (str(i), fn, {}, i, "t", "s"), 0, {"task": "t", "doc_id": i, "repeats": 1})
            for i in range(40)]
pf.prefetching(Model(), Model().generate_until, requests, window=8, threads=2)
print(sorted(t.name for t in threading.enumerate()))
"""


def test_the_interpreter_exits_cleanly_after_a_model_that_took_nothing(tmp_path) -> None:
    import subprocess
    import sys

    image = tmp_path / "im.png"
    Image.new("RGB", (640, 480), (9, 9, 9)).save(image)
    script = f"PNG = {str(image)!r}\n{EXIT_SCRIPT}"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "['MainThread']"
