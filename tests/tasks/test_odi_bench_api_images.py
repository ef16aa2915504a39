"""ODI-Bench panoramas for an API model: the provider's size, the user's cap first, the rule in every sample."""

from __future__ import annotations

import io
import os

import pytest
from PIL import Image

from lmms_spatial import run_options
from lmms_spatial.data import api_images
from lmms_spatial.tasks.odi_bench import adapter

API_IMAGES = "LMMS_SPATIAL_ODI_API_IMAGES"


def _panorama(width: int = 4000, height: int = 2000) -> bytes:
    """A 2:1 JPEG with flat colour regions (fast to build and to encode)."""
    image = Image.new("RGB", (width, height), (90, 140, 200))
    image.paste((200, 60, 40), (0, height // 2, width // 2, height))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


DOC = {
    "id": "oa-1",
    "task": "object_attribute",
    "question": "What color is the sofa?",
    "options": ["red", "blue", "green", "white"],
    "answer": "A",
    "answer_text": "red",
    "image": {"bytes": _panorama(), "path": None},
}


def _evaluating(module: str, name: str):
    """lmms-eval evaluates a model of the class defined in ``module`` (what the evaluate patch records)."""
    return api_images.set_model(type("Model", (), {"__module__": module, "model_version": name})())


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for name in list(os.environ):
        if name.startswith("LMMS_SPATIAL_"):
            monkeypatch.delenv(name)
    yield
    api_images.set_model(None)


def test_an_openai_model_gets_the_panorama_as_openai_keeps_it():
    _evaluating("lmms_eval.models.chat.openai", "gpt-4o")
    (image,) = adapter.doc_to_visual(DOC)
    assert image.size == (1536, 768)  # 4000x2000: fit 2048 -> 2048x1024, short side 768 -> 1536x768


def test_a_gemini_model_gets_the_panorama_as_gemini_keeps_it():
    _evaluating("lmms_eval.models.chat.gemini", "gemini-2.0-flash")
    (image,) = adapter.doc_to_visual(DOC)
    assert image.size == (3072, 1536)  # fit 3072x3072


def test_a_local_model_gets_the_full_panorama():
    _evaluating("lmms_eval.models.chat.qwen2_5_vl", "Qwen/Qwen2.5-VL-7B-Instruct")
    (image,) = adapter.doc_to_visual(DOC)
    assert image.size == (4000, 2000)


def test_the_users_max_pixels_wins_over_the_provider(monkeypatch):
    _evaluating("lmms_eval.models.chat.openai", "gpt-4o")
    monkeypatch.setenv("LMMS_SPATIAL_ODI_MAX_PIXELS", str(1024 * 512))
    (image,) = adapter.doc_to_visual(DOC)
    assert image.size == (1024, 512)


def test_the_users_resize_wins_over_the_provider(monkeypatch):
    _evaluating("lmms_eval.models.chat.openai", "gpt-4o")
    monkeypatch.setenv("LMMS_SPATIAL_ODI_RESIZE", "512x1024")
    (image,) = adapter.doc_to_visual(DOC)
    assert image.size == (1024, 512)


def test_none_sends_an_api_model_the_full_panorama(monkeypatch):
    _evaluating("lmms_eval.models.chat.openai", "gpt-4o")
    monkeypatch.setenv(API_IMAGES, "none")
    (image,) = adapter.doc_to_visual(DOC)
    assert image.size == (4000, 2000)


def test_the_rule_that_sized_the_image_is_recorded_in_the_sample():
    _evaluating("lmms_eval.models.chat.openai", "gpt-4o")
    record = adapter.process_results(DOC, ["A"])["accuracy"]
    assert record["run_options"] == {API_IMAGES: "openai"}


def test_a_local_models_samples_record_no_rule():
    _evaluating("lmms_eval.models.chat.qwen2_5_vl", "Qwen/Qwen2.5-VL-7B-Instruct")
    assert adapter.process_results(DOC, ["A"])["accuracy"]["run_options"] == {}


def test_a_users_cap_is_recorded_instead_of_the_rule_it_overrode(monkeypatch):
    _evaluating("lmms_eval.models.chat.openai", "gpt-4o")
    monkeypatch.setenv("LMMS_SPATIAL_ODI_MAX_PIXELS", "524288")
    assert adapter.process_results(DOC, ["A"])["accuracy"]["run_options"] == {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"}


def test_replay_restores_the_recorded_rule_and_records_it_again():
    env: dict[str, str] = {}
    assert run_options.restore({"odi_bench_close_object_attribute": {API_IMAGES: "openai"}}, env) == {
        API_IMAGES: "openai"
    }
    os.environ.update(env)  # what replay does before the tasks are built (undone by the autouse fixture)
    try:
        _evaluating("lmms_spatial.models.replay", "")  # replay is no API model: the environment says the rule
        assert adapter.process_results(DOC, ["A"])["accuracy"]["run_options"] == {API_IMAGES: "openai"}
    finally:
        del os.environ[API_IMAGES]
