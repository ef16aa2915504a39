"""Omni-CoT's small rules, each pinned with hand-made inputs (issue 42): which coordinate system a grounding box is
read in and how it is normalised, clipped, dropped and rounded; how ``--model_args`` become options (and how they are
logged); the setting and artefact keys; the stage cache keys of every stage (image, view, crop, resize); what each
round sends for which document (a fake base model whose replies differ per document, view and crop); which answer
is final; chunking. The expected values are written here with their arithmetic."""

from __future__ import annotations

import re

import pytest
from lmms_eval.api.instance import Instance
from PIL import Image

from lmms_spatial.data import projection as proj
from lmms_spatial.models import omni_cot as oc
from lmms_spatial.models import stages

TASK = "odi_bench_close_mixed"
# two ERPs of different sizes (so a transcript tells them apart) and a document without one
ERP_A = Image.new("RGB", (64, 32), (180, 40, 40))
ERP_B = Image.new("RGB", (128, 64), (40, 40, 180))
ERPS = {"a": ERP_A, "b": ERP_B}
DOC_A = {
    "id": "a",
    "image": {"bytes": None, "path": "/erp/a.jpg"},
    "question": "  Where is the lamp? ",
    "prompt": "Where is the lamp?\nA. left\nB. right",
    # box 1 [0.70, 0.40, 0.80, 0.60]: θ = −180 + 0.75·360 = 90, φ = 90 − 0.5·180 = 0, fov = max(36, 36) + 10 = 46
    # box 2 [0.10, 0.0, 0.20, 0.30]: θ = −180 + 0.15·360 = −126, φ = 90 − 0.15·180 = 63 (top), fov = 54 + 10 = 64
    "grounding": "[[0.70, 0.40, 0.80, 0.60], [0.10, 0.0, 0.20, 0.30]]",
    "relevance": {"right": "Yes, the lamp is there.", "top": "no"},
}
DOC_N = {"id": "n", "question": "Is it night?", "prompt": "Is it night? Answer yes or no."}
DOC_B = {
    "id": "b",
    "image": {"bytes": None, "path": "/erp/b.jpg"},
    "question": "How many chairs?",
    "prompt": "How many chairs? Answer a number.",
    # [0.20, 0.40, 0.30, 0.60]: θ = −180 + 0.25·360 = −90 (left), φ = 0, fov = 36 + 10 = 46
    "grounding": "Boxes: [0.20, 0.40, 0.30, 0.60]",
    "relevance": {"left": "Maybe."},  # neither yes nor no: not kept
}


def to_messages(doc):
    """A task's messages: a system turn, then the user's ERP (when the document has one), a context line and the
    question text (the last text part)."""
    user = [{"type": "image", "url": ERPS[doc["id"]]}] if doc["id"] in ERPS else []
    user += [{"type": "text", "text": "Look at the panorama."}, {"type": "text", "text": doc["prompt"]}]
    return [
        {"role": "system", "content": [{"type": "text", "text": "Answer briefly."}]},
        {"role": "user", "content": user},
    ]


class _Task:
    """What lmms-eval hands a chat model as ``doc_to_messages``: a method of the task, its resolved
    ``lmms_eval_specific_kwargs`` carrying its prompt setting (an ODI-Bench YAML's ``setting: close``)."""

    def __init__(self, kwargs):
        self.lmms_eval_specific_kwargs = kwargs

    def doc_to_messages(self, doc):
        return to_messages(doc)


CLOSE = _Task({"setting": "close", "prompt": "erp"})


class EchoChat:
    """Answers each stage from the document's own script: captions name the document and the view, grounding and
    relevance replies come from the document, the first answer is ``first <id>``, a refinement ``refined <id>``.
    Keeps every call as a list of {doc, texts, images, gen}."""

    is_simple = False

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.task_dict = {}
        self.batches: list[list[dict]] = []

    def generate_until(self, requests):
        batch, replies = [], []
        for r in requests:
            _ctx, to_msgs, gen, doc_id, task, split = r.args
            doc = self.task_dict[task][split][doc_id]
            content = [c for m in to_msgs(doc) for c in m["content"]]
            texts = [c["text"] for c in content if c["type"] == "text"]
            images = [c["url"] for c in content if c["type"] == "image"]
            batch.append({"doc": doc["id"], "texts": texts, "images": images, "gen": gen})
            replies.append(self._reply(doc, texts[-1]))
        self.batches.append(batch)
        return replies

    @staticmethod
    def _reply(doc, text):
        view = re.match(r"This image is the (\w+) view", text)
        if view:
            return f" {doc['id']} {view.group(1)} caption \n"
        if text.startswith("Here is an ERP-formatted"):
            return doc["grounding"]
        if text.startswith("This image is a crop"):
            return doc["relevance"][re.search(r"looking (.+?) \(yaw", text).group(1)]
        if "Crops of the panorama" in text:
            return f"refined {doc['id']}"
        return f"first {doc['id']}"


@pytest.fixture(autouse=True)
def _clean():
    stages.clear()
    yield
    stages.clear()


@pytest.fixture
def projected(monkeypatch):
    """Every view an ErpProjector renders: (ERP size, oversample, name, yaw, pitch, fov, out_hw)."""
    seen = []
    real = proj.ErpProjector.project

    def project(self, views_):
        seen.extend((self.size, self.oversample, v.name, v.yaw, v.pitch, v.fov, v.out_hw) for v in views_)
        return real(self, views_)

    monkeypatch.setattr(proj.ErpProjector, "project", project)
    return seen


def _model(docs=(DOC_A, DOC_N, DOC_B), **options):
    model = oc.OmniCoT(base=f"{__name__}.EchoChat", **{"view_size": 8, "crop_size": 12, **options})
    model.task_dict = {TASK: {"test": list(docs)}}
    return model


def _request(doc_id, task=TASK):
    return Instance(
        "generate_until",
        ("", CLOSE.doc_to_messages, {"max_new_tokens": 32}, doc_id, task, "test"),
        0,
        {"task": task, "doc_id": doc_id, "repeats": 1},
    )


def _states(model, n=3):
    model.base.task_dict = model.task_dict  # as generate_until does before the rounds
    return [model._state(_request(i)) for i in range(n)]


def _jobs(model):
    """Record the stage jobs of each run_stage_jobs call: [(stage, key, gen), ...] per call."""
    calls = []
    real = model.run_stage_jobs

    def run(jobs):
        calls.append([(j.stage, j.key, j.gen) for j in jobs])
        return real(jobs)

    model.run_stage_jobs = run
    return calls


# ---------------------------------------------------------------------------------------------------
# boxes
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "none", " FALSE ", "Off\n", 0, 0.0, None, []])
def test_these_switch_values_are_off(value):
    assert oc._bool(value) is False


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", " Yes ", "x", 1, 2, 0.5, [0]])
def test_these_switch_values_are_on(value):
    assert oc._bool(value) is True


@pytest.mark.parametrize(
    "raw,width,height,fmt",
    [
        ([], 256, 128, "none"),
        ([[0, 0, 1.5, 1.0]], 256, 128, "pixel"),  # 1.5 > 1: not normalised; fits a <= 1000 px ERP
        # a corner exactly on the ERP's right or bottom edge fits (each of the four values on its own)
        ([[256, 20, 200, 100]], 256, 128, "pixel"),
        ([[20, 128, 100, 50]], 256, 128, "pixel"),
        ([[20, 20, 256, 100]], 256, 128, "pixel"),
        ([[20, 20, 100, 128]], 256, 128, "pixel"),
        # one value past the ERP (each of the four on its own; a second box that does not fit): not pixels; all
        # values <= 1000: 0-1000
        ([[300, 0, 100, 100]], 256, 128, "thousand"),
        ([[0, 200, 100, 100]], 256, 128, "thousand"),
        ([[0, 0, 300, 100]], 256, 128, "thousand"),
        ([[0, 0, 100, 200]], 256, 128, "thousand"),
        ([[0, 0, 10, 10], [0, 0, 300, 100]], 256, 128, "thousand"),
        # a 1000 x 1000 ERP is small enough for a box that fits to be pixels; 1001 wide or high is not
        ([[100, 100, 200, 200]], 1000, 1000, "pixel"),
        ([[100, 100, 200, 200]], 1001, 500, "thousand"),
        ([[100, 100, 200, 200]], 500, 1001, "thousand"),
        ([[100, 100, 200, 200]], 2000, 500, "thousand"),
        # on a large ERP a box that fits is pixels only with a value over 1000: 1000 itself is the 0-1000 system
        ([[0, 0, 1000, 500]], 2000, 1000, "thousand"),
        ([[0, 0, 1001.5, 500]], 2000, 1000, "pixel"),
        # does not fit: 1000 is still 0-1000, 1001 can be nothing but (clipped) pixels
        ([[0, 0, 1000, 100]], 800, 400, "thousand"),
        ([[0, 0, 1001, 100]], 800, 400, "pixel"),
    ],
)
def test_box_format_of_each_rule_at_its_edge(raw, width, height, fmt):
    assert oc.box_format_of(raw, width, height) == fmt


def test_each_axis_is_divided_by_its_own_scale_in_each_forced_format():
    # pixels of a 100 x 50 ERP: x 10/100, 30/100; y 20/50, 40/50
    assert oc.parse_boxes("[10, 20, 30, 40]", 100, 50, "pixel").boxes == [[0.1, 0.4, 0.3, 0.8]]
    # 0-1000 on both axes whatever the ERP: 100/1000 ... 400/1000
    assert oc.parse_boxes("[100, 200, 300, 400]", 100, 50, "thousand").boxes == [[0.1, 0.2, 0.3, 0.4]]
    normalised = oc.parse_boxes("[0.1, 0.2, 0.3, 0.4]", 100, 50, "normalized")
    assert (normalised.boxes, normalised.format, normalised.raw) == ([[0.1, 0.2, 0.3, 0.4]], "normalized",
                                                                     [[0.1, 0.2, 0.3, 0.4]])  # fmt: skip


def test_values_are_clipped_to_the_image_on_both_sides_of_both_axes():
    parsed = oc.parse_boxes("[-0.5, -0.25, 1.5, 1.25]", 100, 50, "normalized")
    assert parsed.boxes == [[0.0, 0.0, 1.0, 1.0]] and parsed.dropped == 0


def test_empty_boxes_are_dropped_and_counted_and_the_next_box_is_kept():
    # no width; no height; no width once clipped (1.2 and 1.5 both become 1.0); then a good box
    text = "[0.2, 0.1, 0.2, 0.5] [0.1, 0.3, 0.4, 0.3] [1.2, 0.1, 1.5, 0.5] [0.1, 0.1, 0.2, 0.2]"
    parsed = oc.parse_boxes(text, 100, 50, "normalized")
    assert parsed.boxes == [[0.1, 0.1, 0.2, 0.2]] and parsed.dropped == 3 and len(parsed.raw) == 4


def test_boxes_are_rounded_to_six_decimals():
    # pixels of a 3 x 3 ERP: 1/3 = 0.333333..., 2/3 = 0.666666...
    assert oc.parse_boxes("[1, 1, 2, 2]", 3, 3, "pixel").boxes == [[0.333333, 0.333333, 0.666667, 0.666667]]


@pytest.mark.parametrize("max_boxes,kept", [(2, 2), ("1", 1), (0, 0), (-1, 0)])
def test_at_most_max_boxes_are_kept_never_a_negative_slice(max_boxes, kept):
    text = "[0.1, 0.1, 0.2, 0.2] [0.3, 0.3, 0.4, 0.4] [0.5, 0.5, 0.6, 0.6]"
    boxes = [[0.1, 0.1, 0.2, 0.2], [0.3, 0.3, 0.4, 0.4], [0.5, 0.5, 0.6, 0.6]]
    assert oc.parse_boxes(text, 100, 50, max_boxes=max_boxes).boxes == boxes[:kept]


def test_four_boxes_are_kept_by_default():
    text = " ".join(
        f"[0.{i}, 0.1, 0.{i}5, 0.2]" for i in range(1, 6)
    )  # [0.1, 0.1, 0.15, 0.2] ... [0.5, 0.1, 0.55, 0.2]
    assert [b[0] for b in oc.parse_boxes(text, 100, 50).boxes] == [0.1, 0.2, 0.3, 0.4]


def test_a_reply_without_boxes_has_format_none_even_when_a_format_is_forced():
    assert oc.parse_boxes("[]", 100, 50, "pixel") == oc.ParsedBoxes([], [], "none", 0)
    assert oc.parse_boxes(None, 100, 50) == oc.ParsedBoxes([], [], "none", 0)


def test_an_unknown_box_format_is_refused_by_name():
    with pytest.raises(ValueError) as error:
        oc.parse_boxes("[1, 2, 3, 4]", 100, 50, "polar")
    assert str(error.value) == "box_format must be one of ('auto', 'normalized', 'pixel', 'thousand'), got 'polar'"


# ---------------------------------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------------------------------


def test_options_without_arguments_or_with_none_are_the_defaults():
    assert oc.Options.from_args() == oc.Options()
    assert oc.Options.from_args(fov=None, method=None, erp_resize=None, oversample=None) == oc.Options()
    assert oc.Options().erp_resize is None and oc.Options().oversample == 1.0


def test_each_option_is_read_as_its_type():
    o = oc.Options.from_args(viewpoint="off", grounding="1", crop_filter=0, fov="75.5", view_size="64", max_crops="3",
                             margin=5, method=" Direct ", box_format="PIXEL", relevance_tokens="8")  # fmt: skip
    assert (o.viewpoint, o.grounding, o.crop_filter) == (False, True, False)
    assert o.fov == 75.5 and o.margin == 5.0 and type(o.margin) is float
    assert (o.view_size, o.max_crops, o.relevance_tokens) == (64, 3, 8)
    assert all(type(v) is int for v in (o.view_size, o.max_crops, o.relevance_tokens))
    assert (o.method, o.box_format) == ("direct", "pixel")


@pytest.mark.parametrize("value", ["", "none", " OFF ", "Full"])
def test_these_erp_resize_values_keep_the_full_erp(value):
    assert oc.Options.from_args(erp_resize=value).erp_resize is None


@pytest.mark.parametrize("value", ["64x128", [64, 128]])
def test_erp_resize_is_height_by_width_kept_as_width_height(value):
    assert oc.Options.from_args(erp_resize=value).erp_resize == (128, 64)


@pytest.mark.parametrize("value,expected", [("none", None), (" Off ", None), ("FULL", None), ("2", 2.0), (0.5, 0.5)])
def test_oversample_off_or_a_number(value, expected):
    assert oc.Options.from_args(oversample=value).oversample == expected


def test_a_bad_method_or_box_format_is_refused_by_name():
    with pytest.raises(ValueError) as error:
        oc.Options.from_args(method="Tree")
    assert (
        str(error.value) == "omni_cot: method must be one of ('omni_cot', 'direct', 'multiview', 'video'), got 'tree'"
    )
    with pytest.raises(ValueError) as error:
        oc.Options.from_args(box_format="polar")
    assert str(error.value) == (
        "omni_cot: box_format must be one of ('auto', 'normalized', 'pixel', 'thousand'), got 'polar'"
    )


def test_logged_options_write_the_resize_as_height_x_width_and_leave_the_options_alone():
    options = oc.Options(erp_resize=(128, 64), fov=80.0, max_crops=2)
    assert options.logged() == {
        "method": "omni_cot", "viewpoint": True, "grounding": True, "crop_filter": True, "fov": 80.0,
        "view_size": 512, "crop_size": 512, "margin": 10.0, "min_fov": 30.0, "max_fov": 120.0, "max_crops": 2,
        "box_format": "auto", "erp_resize": "64x128", "oversample": 1.0, "multiview_fov": 90.0,
        "video_duration": 12.0, "video_fps": 1.0, "video_size": 448, "chunk_size": 16, "caption_tokens": 256,
        "grounding_tokens": 256, "relevance_tokens": 16,
    }  # fmt: skip
    assert options.erp_resize == (128, 64)
    assert oc.Options().logged()["erp_resize"] is None


# ---------------------------------------------------------------------------------------------------
# keys
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "messages,task,setting",
    [
        (CLOSE.doc_to_messages, "odi_bench_close_counting", "close"),
        (_Task({"setting": "cot"}).doc_to_messages, "anything", "cot"),  # the YAML's setting, not the task's name
        (_Task({"prompt": "erp"}).doc_to_messages, "odi_bench_close", "odi_bench_close"),  # no setting: the name
        (_Task({"setting": ""}).doc_to_messages, "t", "t"),
        (_Task(None).doc_to_messages, "dori", "dori"),  # a task without lmms_eval_specific_kwargs
        (to_messages, "odi_bench_open", "odi_bench_open"),  # a plain function: no task to read
        (to_messages, None, "None"),
    ],
)
def test_the_setting_of_a_request_is_its_task_s_yaml_setting_else_its_name(messages, task, setting):
    assert oc.setting_of(messages, task) == setting


def test_the_setting_is_read_through_the_prefetcher_s_stand_in():
    from lmms_spatial.prefetch import PrefetchedCall

    # a run of ours prefetches documents: the request then holds the prefetcher's stand-in for the task's method
    assert oc.setting_of(PrefetchedCall(CLOSE.doc_to_messages, []), "odi_bench_close_counting") == "close"
    assert oc.setting_of(PrefetchedCall(to_messages, []), "odi_bench_open") == "odi_bench_open"


def test_artifact_key_and_lookup_are_per_setting_and_document():
    assert oc.artifact_key({"id": "q7"}, "open") == "open:q7"
    assert oc.artifact_key({"question_id": 5}, "close") == "close:5"
    stages.record_artifact("omni_cot", "open:q7", {"final_answer": "left"})
    assert oc.lookup({"id": "q7"}, "open") == {"final_answer": "left", "key": "open:q7"}
    assert oc.lookup({"id": "q7"}, "close") is None


@pytest.mark.parametrize(
    "image,key",
    [
        ({"bytes": b"abc", "path": "/erp/a.jpg"}, "a9993e364706816a"),  # sha1("abc") = a9993e364706816aba3e...
        ({"bytes": b"", "path": "/erp/a.jpg"}, "path:/erp/a.jpg"),  # no bytes: the path
        ({"bytes": None, "path": None}, "fallback"),
        (b"abc", "a9993e364706816a"),
        (bytearray(b"abc"), "a9993e364706816a"),
        ("/erp/a.jpg", "path:/erp/a.jpg"),
        (ERP_A, "fallback"),  # already decoded: nothing to hash
        (None, "fallback"),
    ],
)
def test_image_key_is_a_hash_of_the_bytes_or_the_path(image, key):
    assert oc.image_key({"image": image}, "fallback") == key


def test_image_key_of_a_document_without_an_image_is_the_fallback():
    assert oc.image_key({"id": "x"}, "task:3") == "task:3"


def test_texts_images_and_user_turns():
    content = [{"type": "text", "text": "a"}, {"type": "image", "url": ERP_A}, "raw", {"type": "image"},
               {"type": "text", "text": "b"}]  # fmt: skip
    assert oc._texts(content) == ["a", "b"]
    assert oc._images(content) == [ERP_A, None]
    assert oc._user(ERP_A, "t", ERP_B) == [
        {"role": "user", "content": [{"type": "image", "url": ERP_A}, {"type": "text", "text": "t"},
                                     {"type": "image", "url": ERP_B}]}
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------------
# the model: its arguments, each document's state, each stage's prompt and key
# ---------------------------------------------------------------------------------------------------


def test_the_wrapper_keeps_its_own_options_and_gives_the_rest_to_the_base_model():
    model = oc.OmniCoT(base=f"{__name__}.EchoChat", pretrained="m1", fov="80", max_crops=2)
    assert model.base.kwargs == {"pretrained": "m1"}
    assert (model.options.fov, model.options.max_crops) == (80.0, 2)
    assert model.calls == {"stage": 0, "final": 0, "stage_cache_hits": 0, "caption": 0, "grounding": 0, "first": 0,
                           "relevance": 0, "refine": 0, "documents": 0}  # fmt: skip


def test_a_document_s_state_reads_the_user_turn():
    model = _model()
    a, n, b = _states(model)
    assert (a.erp, a.text, a.question, a.key, a.image_key) == (
        ERP_A, "Where is the lamp?\nA. left\nB. right", "Where is the lamp?", "close:a", "path:/erp/a.jpg"
    )  # fmt: skip
    assert a.doc is DOC_A and a.request.args[3] == 0 and b.erp is ERP_B
    assert a.art == {"prompt_version": "omni_cot/1", "method": "omni_cot", "options": model.options.logged(),
                     "erp_size": [64, 32]}  # fmt: skip
    # no image in the turn: no ERP; no image in the document: the task and index name it
    assert (n.erp, n.image_key, n.art["erp_size"]) == (None, "odi_bench_close_mixed:1", None)


def test_a_document_without_a_question_asks_its_prompt_text():
    model = _model(docs=[{"id": "a", "prompt": " Count the chairs. "}, {"id": "n", "question": "", "prompt": "Why?"}])
    first, second = _states(model, 2)
    assert (first.text, first.question) == (" Count the chairs. ", "Count the chairs.")
    assert second.question == "Why?"


def test_a_state_without_a_decoded_image_or_text():
    model = _model()

    def messages(doc):
        return [{"role": "user", "content": [{"type": "image", "url": "/erp/a.jpg"}]}]

    request = Instance(
        "generate_until", ("", messages, {}, 0, TASK, "test"), 0, {"task": TASK, "doc_id": 0, "repeats": 1}
    )
    state = model._state(request)
    assert (state.erp, state.text, state.question) == (None, "", "Where is the lamp?")
    # a plain function is no task method: no YAML setting to read, so the artefact is keyed by the task's name
    assert state.key == f"{TASK}:a"


def test_a_user_turn_without_content_adds_nothing():
    model = _model()

    def messages(doc):
        return [{"role": "user"}, *to_messages(doc)]

    request = Instance(
        "generate_until", ("", messages, {}, 0, TASK, "test"), 0, {"task": TASK, "doc_id": 0, "repeats": 1}
    )
    state = model._state(request)
    assert (state.erp, state.text) == (ERP_A, "Where is the lamp?\nA. left\nB. right")


def test_erp_resize_resizes_the_erp_the_model_sees():
    model = _model(erp_resize="16x40")
    (a,) = _states(model, 1)
    assert a.erp.size == (40, 16) and a.art["erp_size"] == [40, 16]


def test_caption_jobs_six_views_keyed_by_image_view_fov_size_and_resize(projected):
    model = _model(fov=82.5, caption_tokens=40)
    (a,) = _states(model, 1)
    jobs = model._caption_jobs(a)
    assert [name for name, _ in jobs] == ["front", "right", "back", "left", "top", "bottom"]
    assert [j.key for _, j in jobs][:2] == ["path:/erp/a.jpg|front|82.5|8|None", "path:/erp/a.jpg|right|82.5|8|None"]
    assert all(j.stage == "omni_cot_caption" and j.gen == {"max_new_tokens": 40} and j.request is a.request
               for _, j in jobs)  # fmt: skip
    (image, text) = jobs[1][1].messages[0]["content"]
    assert image["type"] == "image" and image["url"].size == (8, 8)
    assert text == {"type": "text", "text": (
        "This image is the right view (82.5° field of view) of a 360-degree panoramic image, seen from the camera "
        "position. Describe in two or three sentences the objects, people and text visible in this view and where "
        "they are in it.")}  # fmt: skip
    assert projected[1] == ((64, 32), 1.0, "right", 90.0, 0.0, 82.5, (8, 8))
    resized = _model(erp_resize="16x40")
    (r,) = _states(resized, 1)
    assert resized._caption_jobs(r)[0][1].key == "path:/erp/a.jpg|front|90|8|(40, 16)"


def test_grounding_job_the_erp_and_the_bare_question_keyed_by_image_and_resize():
    model = _model(max_crops=3, grounding_tokens=50, erp_resize="16x40")
    (a,) = _states(model, 1)
    job = model._grounding_job(a)
    assert (job.stage, job.key, job.gen, job.request) == (
        "omni_cot_grounding", "path:/erp/a.jpg|(40, 16)", {"max_new_tokens": 50}, a.request
    )  # fmt: skip
    assert job.messages == [{"role": "user", "content": [{"type": "image", "url": a.erp}, {"type": "text", "text": (
        "Here is an ERP-formatted 360-degree panoramic image and a question about it.\n"
        "Question: Where is the lamp?\n"
        "Give the bounding boxes of at most 3 image regions that are most relevant to answering the question, as a "
        "JSON list [[x1, y1, x2, y2], ...] with coordinates normalised to [0, 1] (x from the left edge, y from the top "
        "edge of the image). Answer [] if no region helps.")}]}]  # fmt: skip


VIEWPOINT_HEADER = (
    "The panorama seen from the camera position, described view by view (front is the centre of the "
    "ERP-formatted image, right is three quarters across it, back is at its left and right edges, left is "
    "one quarter across it):"
)


def test_first_answer_is_the_task_s_prompt_after_the_stripped_captions_or_the_task_s_prompt_alone():
    model = _model()
    a, n, _b = _states(model)
    prompt = {"type": "text", "text": "Where is the lamp?\nA. left\nB. right"}
    assert model._first_messages(a) == [{"role": "user", "content": [{"type": "image", "url": ERP_A}, prompt]}]
    assert model._first_messages(n) == [{"role": "user", "content": [
        {"type": "text", "text": "Is it night? Answer yes or no."}]}]  # fmt: skip
    a.captions = {"front": "  a lamp \n", "back": "a door"}
    assert model._first_messages(a)[0]["content"][1]["text"] == (
        f"{VIEWPOINT_HEADER}\nFront view: a lamp\nBack view: a door\n\nWhere is the lamp?\nA. left\nB. right"
    )


def test_crops_from_the_grounding_reply_rounded_and_rendered_at_crop_size(projected):
    model = _model(margin=10)
    (a,) = _states(model, 1)
    # box 1 (0.1234567 rounded to 0.123457, 0.4111111 to 0.411111): cx = (0.123457 + 0.3) / 2 = 0.2117285,
    # θ = −180 + 76.22226 = −103.77774; cy = (0.2 + 0.411111) / 2 = 0.3055555, φ = 90 − 54.99999 = 35.00001 (upper; yaw
    # −103.8 is nearest −90: left); fov = max((0.3 − 0.123457)·360, 0.211111·180) + 10 = 63.55548 + 10 = 73.55548;
    # each rounded to 4 decimals. Box 2: no height, dropped; box 3: θ = 90, φ = 0, fov = 36 + 10 = 46 (min 30)
    reply = "[0.1234567, 0.2, 0.3, 0.4111111], [0.5, 0.5, 0.6, 0.5], [0.70, 0.40, 0.80, 0.60]"
    model._make_crops(a, reply)
    assert a.crops == [
        {
            "box": [0.123457, 0.2, 0.3, 0.411111],
            "theta": -103.7777,
            "phi": 35.0,
            "fov": 73.5555,
            "direction": "upper left",
        },
        {"box": [0.7, 0.4, 0.8, 0.6], "theta": 90.0, "phi": 0.0, "fov": 46.0, "direction": "right"},
    ]
    assert {k: a.art[k] for k in ("grounding_reply", "box_format", "boxes_raw", "boxes", "boxes_dropped_empty")} == {
        "grounding_reply": reply,
        "box_format": "normalized",
        "boxes_raw": [[0.1234567, 0.2, 0.3, 0.4111111], [0.5, 0.5, 0.6, 0.5], [0.7, 0.4, 0.8, 0.6]],
        "boxes": [[0.123457, 0.2, 0.3, 0.411111], [0.7, 0.4, 0.8, 0.6]],
        "boxes_dropped_empty": 1,
    }
    assert [im.size for im in a.crop_images] == [(12, 12), (12, 12)]
    assert projected == [((64, 32), 1.0, "crop0", -103.7777, 35.0, 73.5555, (12, 12)),
                         ((64, 32), 1.0, "crop1", 90.0, 0.0, 46.0, (12, 12))]  # fmt: skip


def test_crop_options_box_format_max_crops_and_fov_limits():
    # forced pixels of the 64 x 32 ERP: [16, 8, 32, 24] -> [0.25, 0.25, 0.5, 0.75]: θ = −180 + 0.375·360 = −45,
    # φ = 90 − 0.5·180 = 0, fov = max(0.25·360, 0.5·180) + 20 = 110, capped at 100; the second box is over max_crops
    model = _model(box_format="pixel", max_crops=1, margin=20, max_fov=100)
    (a,) = _states(model, 1)
    model._make_crops(a, "[16, 8, 32, 24] [0, 0, 8, 8]")
    assert [(c["box"], c["theta"], c["phi"], c["fov"]) for c in a.crops] == [([0.25, 0.25, 0.5, 0.75], -45.0, 0.0,
                                                                              100.0)]  # fmt: skip
    # a tiny box: fov = 0.01·360 + 0 = 3.6, raised to min_fov 40
    small = _model(margin=0, min_fov=40)
    (s,) = _states(small, 1)
    small._make_crops(s, "[0.5, 0.5, 0.51, 0.51]")
    assert s.crops[0]["fov"] == 40.0


def test_relevance_job_the_crop_and_its_direction_keyed_by_image_crop_size_and_resize():
    model = _model(relevance_tokens=4)
    (a,) = _states(model, 1)
    model._make_crops(a, DOC_A["grounding"])
    job = model._relevance_job(a, 1)
    assert (job.stage, job.key, job.gen, job.request) == (
        "omni_cot_relevance", "path:/erp/a.jpg|-126.0|63.0|64.0|12|None", {"max_new_tokens": 4}, a.request
    )  # fmt: skip
    assert job.messages == [{"role": "user", "content": [{"type": "image", "url": a.crop_images[1]}, {
        "type": "text", "text": "This image is a crop of a 360-degree panoramic image, looking top (yaw -126°, pitch "
        "63°, field of view 64°).\nQuestion: Where is the lamp?\nIs this crop relevant to answering the question? "
        "Answer ONLY with yes or no."}]}]  # fmt: skip


def test_refinement_numbers_the_kept_crops_and_strips_the_previous_answer():
    model = _model()
    (a,) = _states(model, 1)
    model._make_crops(a, "[0.70, 0.40, 0.80, 0.60] [0.20, 0.40, 0.30, 0.60] [0.10, 0.0, 0.20, 0.30]")
    messages = model._refine_messages(a, [0, 2], "  B \n")
    assert [c["url"] for c in messages[0]["content"][:-1]] == [ERP_A, a.crop_images[0], a.crop_images[2]]
    assert messages[0]["content"][-1]["text"] == (
        "Crops of the panorama that may help, in the order of the images after the ERP-formatted image:\n"
        "Crop 1: looking right (yaw 90°, pitch 0°, field of view 46°)\n"
        "Crop 2: looking top (yaw -126°, pitch 63°, field of view 64°)\n\n"
        "Your previous answer was: B\nRethink your answer using the crops and the view descriptions.\n\n"
        "Where is the lamp?\nA. left\nB. right"
    )
    a.captions = {"left": " a chair "}
    assert messages != model._refine_messages(a, [0, 2], "B")
    assert model._refine_messages(a, [1], "B")[0]["content"][-1]["text"].startswith(
        f"{VIEWPOINT_HEADER}\nLeft view: a chair\n\nCrops of the panorama that may help, in the order of the images "
        "after the ERP-formatted image:\nCrop 1: looking left (yaw -90°, pitch 0°, field of view 46°)\n\n"
    )


# ---------------------------------------------------------------------------------------------------
# the three rounds
# ---------------------------------------------------------------------------------------------------


def test_three_rounds_each_document_s_replies_reach_that_document(projected):
    model = _model()
    jobs = _jobs(model)
    states = _states(model)
    finals = model._omni_cot(states)
    # a: crop 'right' kept -> refined; n: no ERP -> no caption, box or crop, first answer; b: 'Maybe.' keeps nothing
    assert finals == ["refined a", "first n", "first b"]
    a, n, b = states
    assert a.captions == {v: f" a {v} caption \n" for v in ("front", "right", "back", "left", "top", "bottom")}
    assert b.captions["top"] == " b top caption \n" and n.captions is None
    assert [(c["direction"], c["relevance_reply"], c["relevance"], c["kept"]) for c in a.crops] == [
        ("right", "Yes, the lamp is there.", "Yes", True), ("top", "no", "No", False)]  # fmt: skip
    assert [(c["direction"], c["relevance"], c["kept"]) for c in b.crops] == [("left", None, False)]
    assert (a.art["first_answer"], a.art["refined"], a.art["crops_kept"], a.art["crops_dropped"]) == (
        "first a", True, 1, 1)  # fmt: skip
    assert (b.art["first_answer"], b.art["refined"], b.art["crops_kept"], b.art["crops_dropped"]) == (
        "first b", False, 0, 1)  # fmt: skip
    assert (n.art["captions"], n.art["refined"], n.art["crops"], "levels_used" in n.art) == (None, False, [], False)
    assert a.art["captions"] == a.captions and a.art["crops"] == a.crops
    # 8 px 90° views: need = 1.0 · (4 / tan 45°) · π/180 · 360 = 25.1 ERP px; 64 // 2 = 32 >= 25.1, 16 < 25.1: level 1;
    # 12 px crops of 46° and 64° need 6 / tan 23° · 2π = 88.8 and 6 / tan 32° · 2π = 60.3 px > 32: level 0;
    # b (128 wide): 64 and 32 >= 25.1, 16 < 25.1: level 2
    assert (a.art["levels_used"], b.art["levels_used"]) == ([0, 1], [0, 2])
    assert a.projector is None and b.projector is None  # the padded ERPs are let go after round 1
    assert model.calls == {"stage": 12 + 2 + 3 + 3, "final": 0, "stage_cache_hits": 0, "caption": 12,
                                "grounding": 2, "first": 3, "relevance": 3, "refine": 1, "documents": 0}  # fmt: skip
    round1, round2 = jobs
    assert [j[:2] for j in round1][5:8] == [("omni_cot_caption", "path:/erp/a.jpg|bottom|90|8|None"),
                                            ("omni_cot_caption", "path:/erp/b.jpg|front|90|8|None"),
                                            ("omni_cot_caption", "path:/erp/b.jpg|right|90|8|None")]  # fmt: skip
    assert [j[:2] for j in round1][12:] == [("omni_cot_grounding", "path:/erp/a.jpg|None"),
                                            ("omni_cot_grounding", "path:/erp/b.jpg|None")]  # fmt: skip
    assert round2 == [
        ("omni_cot_first", "path:/erp/a.jpg|close:a|None", None),
        ("omni_cot_first", "odi_bench_close_mixed:1|close:n|None", None),
        ("omni_cot_first", "path:/erp/b.jpg|close:b|None", None),
        ("omni_cot_relevance", "path:/erp/a.jpg|90.0|0.0|46.0|12|None", {"max_new_tokens": 16}),
        ("omni_cot_relevance", "path:/erp/a.jpg|-126.0|63.0|64.0|12|None", {"max_new_tokens": 16}),
        ("omni_cot_relevance", "path:/erp/b.jpg|-90.0|0.0|46.0|12|None", {"max_new_tokens": 16}),
    ]
    (refine,) = model.base.batches[2]
    assert refine["doc"] == "a" and refine["images"] == [ERP_A, a.crop_images[0]] and refine["gen"] == {
        "max_new_tokens": 32}  # fmt: skip
    assert refine["texts"][-1].endswith("Your previous answer was: first a\nRethink your answer using the crops and "
                                        "the view descriptions.\n\nWhere is the lamp?\nA. left\nB. right")  # fmt: skip


def test_without_the_filter_every_crop_is_kept_and_no_relevance_question_is_asked():
    model = _model(crop_filter="false")
    states = _states(model)
    assert model._omni_cot(states) == ["refined a", "first n", "refined b"]
    assert [c["kept"] for s in states for c in s.crops] == [True, True, True]
    assert "relevance_reply" not in states[0].crops[0] and model.calls["relevance"] == 0
    assert states[0].art["crops_kept"] == 2 and states[2].art["crops_kept"] == 1


def test_without_grounding_no_box_no_relevance_no_refinement():
    model = _model(grounding="no")
    states = _states(model)
    assert model._omni_cot(states) == ["first a", "first n", "first b"]
    assert model.calls["grounding"] == 0 and model.calls["relevance"] == 0 and model.calls["refine"] == 0
    assert [len(b) for b in model.base.batches] == [12, 3]
    assert states[0].art["refined"] is False and states[0].crops == []


def test_without_viewpoint_no_caption_and_the_first_answer_is_the_direct_one():
    model = _model(viewpoint="0")
    states = _states(model)
    assert model._omni_cot(states) == ["refined a", "first n", "first b"]
    assert [len(b) for b in model.base.batches] == [2, 3 + 3, 1]  # groundings; first answers + crops; refinement
    assert model.base.batches[1][0]["texts"][-1] == "Where is the lamp?\nA. left\nB. right"
    assert states[0].art["captions"] is None and model.calls["caption"] == 0


def test_oversample_none_renders_every_view_from_the_full_erp():
    model = _model(oversample="none")
    states = _states(model)
    model._omni_cot(states)
    assert states[0].art["levels_used"] == [0] and states[2].art["levels_used"] == [0]


# ---------------------------------------------------------------------------------------------------
# generate_until: chunks, baselines, records
# ---------------------------------------------------------------------------------------------------


def test_documents_are_answered_chunk_size_at_a_time_and_counted():
    model = _model(docs=[DOC_A, DOC_B, DOC_A], chunk_size=1)
    answers = model.generate_until([_request(0), _request(1), _request(2)])
    assert answers == ["refined a", "first b", "refined a"]
    # per chunk: captions + grounding (7), first + relevance (1 + crops), refinement (a only)
    assert [[e["doc"] for e in batch] for batch in model.base.batches] == [
        ["a"] * 7, ["a"] * 3, ["a"], ["b"] * 7, ["b"] * 2, ["a"] * 7, ["a"] * 3, ["a"]]  # fmt: skip
    # every count adds up over the chunks: 3 documents of 6 views, 2 + 1 + 2 crops, a refined twice
    assert {k: model.calls[k] for k in ("caption", "grounding", "first", "relevance", "refine", "final",
                                        "documents")} == {"caption": 18, "grounding": 3, "first": 3, "relevance": 5,
                                                          "refine": 2, "final": 3, "documents": 3}  # fmt: skip
    assert oc.lookup(DOC_A, "close")["final_answer"] == "refined a" and oc.lookup(DOC_A, "close")["key"] == "close:a"
    assert oc.lookup(DOC_B, "close")["final_answer"] == "first b"


def test_a_chunk_size_of_0_is_one_document_at_a_time():
    model = _model(docs=[DOC_N, DOC_N], method="direct", chunk_size=0)
    assert model.generate_until([_request(0), _request(1)]) == ["first n", "first n"]
    assert [len(b) for b in model.base.batches] == [1, 1]
    assert model.prefetch_window == 1 and _model(chunk_size=5).prefetch_window == 5


def test_prefetch_order_is_the_request_order():
    model = _model()
    assert model.prefetch_order([_request(2), _request(0), _request(1)]) == [0, 1, 2]


def test_direct_baseline_sends_the_erp_and_the_task_s_prompt_and_records_the_answer():
    model = _model(method="direct")
    answers = model.generate_until([_request(0), _request(1)])
    assert answers == ["first a", "first n"]
    (batch,) = model.base.batches
    assert [(e["images"], e["texts"][-1]) for e in batch] == [
        ([ERP_A], "Where is the lamp?\nA. left\nB. right"), ([], "Is it night? Answer yes or no.")]  # fmt: skip
    art = oc.lookup(DOC_A, "close")
    assert (art["method"], art["final_answer"], art["erp_size"]) == ("direct", "first a", [64, 32])
    assert (model.calls["final"], model.calls["documents"]) == (2, 2)


def test_a_baseline_shows_one_bar_named_for_its_method_and_logs_its_counts(progress_bars, logged):
    infos = logged("INFO")
    model = _model(method="direct")
    model.generate_until([_request(0), _request(1)])
    assert [(b.desc, b.total, b.unit) for b in progress_bars] == [("omni_cot: direct answers", 2, "request")]
    assert infos[-1] == (
        "omni_cot (direct): {'stage': 0, 'final': 2, 'stage_cache_hits': 0, 'caption': 0, 'grounding': 0, "
        "'first': 0, 'relevance': 0, 'refine': 0, 'documents': 2}"
    )


class ShortChat(EchoChat):
    """A broken base model: leaves out the last answer of a call of refinements or of a baseline's answers (the
    task's prompt alone); stage calls are answered whole."""

    def generate_until(self, requests):
        replies = super().generate_until(requests)
        texts = [e["texts"][-1] for e in self.batches[-1]]
        short = any("Rethink your answer" in t or t.startswith(("Where", "How")) for t in texts)
        return replies[:-1] if short else replies


def test_a_base_model_answering_fewer_refinements_fails_instead_of_keeping_first_answers():
    model = oc.OmniCoT(base=f"{__name__}.ShortChat", view_size=8, crop_size=12, crop_filter=False)
    model.task_dict = {TASK: {"test": [DOC_A, DOC_B]}}
    with pytest.raises(ValueError):  # two refinements asked, one answered: b would keep its first answer
        model.generate_until([_request(0), _request(1)])


def test_a_base_model_answering_fewer_baseline_questions_fails_instead_of_dropping_documents():
    model = oc.OmniCoT(base=f"{__name__}.ShortChat", view_size=8, method="direct")
    model.task_dict = {TASK: {"test": [DOC_A, DOC_B]}}
    with pytest.raises(ValueError):  # two documents asked, one answered: one answer for two requests
        model.generate_until([_request(0), _request(1)])


def test_multiview_baseline_twelve_labelled_views_at_multiview_fov(projected):
    model = _model(method="multiview", multiview_fov=60)
    answers = model.generate_until([_request(0), _request(1)])
    assert answers == ["first a", "first n"]
    entry, no_erp = model.base.batches[0]
    assert entry["texts"][0] == (
        "The 360-degree panorama is shown as 12 perspective views (60° field of view), each labelled with its "
        "direction (yaw: 0° front, +90° right, 180° back, −90° left; pitch: + up, − down)."
    )
    assert entry["texts"][1:3] == ["Front view (yaw 0°, pitch 0°):", "Front-right view (yaw 45°, pitch 0°):"]
    assert entry["texts"][-2:] == ["Bottom-back view (yaw 180°, pitch -45°):", "Where is the lamp?\nA. left\nB. right"]
    assert [im.size for im in entry["images"]] == [(8, 8)] * 12
    assert no_erp["images"] == [] and no_erp["texts"] == ["Is it night? Answer yes or no."]  # the direct prompt
    assert oc.lookup(DOC_A, "close")["views"][11] == {"name": "bottom-back", "yaw": 180.0, "pitch": -45.0, "fov": 60.0}
    assert projected[2] == ((64, 32), 1.0, "right", 90.0, 0.0, 60.0, (8, 8))


def test_video_baseline_frames_every_second_at_multiview_fov(projected):
    model = _model(method="video", video_duration=3, video_fps=1, video_size=10, multiview_fov=70)
    assert model.generate_until([_request(0)]) == ["first a"]
    (entry,) = model.base.batches[0]
    assert entry["texts"][0].startswith(
        "The 360-degree panorama is shown as a video of 3 frames (1 frames per second, 3 s) that turns from the front"
    )
    assert [im.size for im in entry["images"]] == [(10, 10)] * 3 and entry["texts"][-1].startswith("Where is the")
    # 3 frames over 630°: 0°, 210° (yaw 210 -> -150), 420° (past 360: yaw 0, pitch 60)
    assert oc.lookup(DOC_A, "close")["frames"] == [{"t": 0.0, "yaw": 0.0, "pitch": 0.0},
                                                   {"t": 1.0, "yaw": -150.0, "pitch": 0.0},
                                                   {"t": 2.0, "yaw": 0.0, "pitch": 60.0}]  # fmt: skip
    assert [p[2:] for p in projected] == [("t=0s", 0.0, 0.0, 70.0, (10, 10)), ("t=1s", -150.0, 0.0, 70.0, (10, 10)),
                                          ("t=2s", 0.0, 60.0, 70.0, (10, 10))]  # fmt: skip
