"""Images for API-served models: each provider's documented size, its byte limit, and who is an API model."""

from __future__ import annotations

import pytest

from lmms_spatial.data import api_images
from lmms_spatial.data.api_images import PROVIDERS, pixels_within, provider_for, rule_in_effect

MB = 1024 * 1024


def _size(provider: str, width: int, height: int):
    return PROVIDERS[provider].cap().target_size(width, height)


def test_openai_fits_2048_then_sets_the_short_side_to_768_as_its_documented_examples():
    # OpenAI's own examples: 2048x4096 -> 1024x2048 (fit 2048) -> 768x1536; 1024x1024 -> 768x768
    assert _size("openai", 2048, 4096) == (768, 1536)
    assert _size("openai", 1024, 1024) == (768, 768)
    assert _size("openai", 700, 350) is None  # already within: sent as it is, never upscaled


def test_a_12000_by_6000_panorama_keeps_2_to_1_at_each_providers_size():
    # openai: 12000x6000 -> fit 2048 -> 2048x1024 -> short side 768 -> 1536x768
    assert _size("openai", 12000, 6000) == (1536, 768)
    # gemini: fit 3072x3072 -> 3072x1536
    assert _size("gemini", 12000, 6000) == (3072, 1536)
    # anthropic: long side 1568 -> 1568x784 = 1,229,312 px, exactly its pixel cap
    assert _size("anthropic", 12000, 6000) == (1568, 784)
    # qwen-vl: 1280 * 28 * 28 = 1,003,520 px -> short side floor(sqrt(1003520 / 2)) = 708 -> 1416x708 = 1,002,528
    assert _size("qwen-vl", 12000, 6000) == (1416, 708)
    # openai-patches: 1536 * 32 * 32 = 1,572,864 px -> short side floor(sqrt(786432)) = 886 -> 1772x886
    assert _size("openai-patches", 12000, 6000) == (1772, 886)


def test_the_largest_release_panorama_18700_wide_gets_the_same_size_as_a_12k_one():
    assert _size("openai", 18700, 9350) == (1536, 768)
    assert _size("gemini", 18700, 9350) == (3072, 1536)


@pytest.mark.parametrize("name", sorted(PROVIDERS))
@pytest.mark.parametrize(("width", "height"), [(18700, 9350), (40000, 400), (6000, 6000)])
def test_no_encoding_of_the_sent_image_can_exceed_the_providers_byte_limit(name, width, height):
    provider = PROVIDERS[name]
    sent_w, sent_h = provider.cap().target_size(width, height) or (width, height)
    worst_png = 3 * sent_w * sent_h + sent_h + 64 * 1024  # incompressible RGB: 3 bytes a pixel, a filter byte a row
    assert worst_png <= provider.max_image_bytes


def test_pixels_within_leaves_room_for_png_framing():
    # (20 MiB - 64 KiB headroom) / 3.01 bytes a pixel = 20,905,984 / 3.01 = 6,945,509.6
    assert pixels_within(20 * MB) == 6_945_509


def _api_class(module: str, name: str = "Model"):
    """A class standing for lmms-eval's model class defined in ``module`` (importing the real ones takes ~20 s;
    the end-to-end test uses lmms-eval's real ``openai`` class)."""
    return type(name, (), {"__module__": module})


def _model(module: str, **attrs):
    model = _api_class(module)()
    for key, value in attrs.items():
        setattr(model, key, value)
    return model


@pytest.mark.parametrize(
    ("module", "name", "provider", "recognised"),
    [
        ("lmms_eval.models.chat.openai", "gpt-4o", "openai", True),
        ("lmms_eval.models.chat.openai", "o3-2025-04-16", "openai", True),
        ("lmms_eval.models.chat.openai", "gpt-4.1-mini", "openai-patches", True),
        # an Azure deployment or proxy alias in capitals: names are matched lower-cased, so still the patch rule
        ("lmms_eval.models.chat.openai", "GPT-4.1-mini", "openai-patches", True),
        ("lmms_eval.models.chat.litellm", "Anthropic/Claude-3-5-Sonnet", "anthropic", True),
        ("lmms_eval.models.chat.openai", "qwen-vl-plus", "qwen-vl", True),
        ("lmms_eval.models.chat.async_openai", "gemini-2.5-pro", "gemini", True),
        ("lmms_eval.models.chat.litellm", "anthropic/claude-3-5-sonnet-20241022", "anthropic", True),
        ("lmms_eval.models.chat.gemini", "my-tuned-model", "gemini", False),
        ("lmms_eval.models.simple.claude", "", "anthropic", False),
        ("lmms_eval.models.chat.openai", "Qwen/Qwen2.5-VL-72B-Instruct", "openai", False),  # a local vLLM server
    ],
)
def test_an_api_model_gets_its_providers_rule_from_its_class_and_name(module, name, provider, recognised):
    found = provider_for(_model(module, model_version=name))
    assert (found.provider.name, found.recognised) == (provider, recognised)


def test_a_subclass_of_an_api_model_is_an_api_model():
    child = type("MyOpenAI", (_api_class("lmms_eval.models.chat.openai"),), {"__module__": "my_models"})()
    child.model_version = "gpt-4o"
    assert provider_for(child).provider.name == "openai"


def test_any_model_holding_an_http_url_is_an_api_model_with_openais_rule():
    found = provider_for(_model("my_models", base_url="http://127.0.0.1:8000/v1", model_version="my-vlm"))
    assert (found.provider.name, found.recognised) == ("openai", False)


def test_a_local_model_gets_no_rule():
    assert provider_for(_model("lmms_eval.models.chat.qwen2_5_vl", model_version="Qwen/Qwen2.5-VL-7B")).provider is None


def test_our_wrappers_are_looked_through_to_their_base_model():
    wrapper = _model("lmms_spatial.models.staged", base=_model("lmms_eval.models.chat.openai", model_version="gpt-4o"))
    assert provider_for(wrapper).provider.name == "openai"


@pytest.fixture
def api_model():
    """lmms-eval is evaluating an OpenAI model (what the evaluate patch records), forgotten afterwards."""
    api_images.set_model(_model("lmms_eval.models.chat.openai", model_version="gpt-4o"))
    yield
    api_images.set_model(None)


def test_the_evaluated_models_rule_is_in_effect(api_model):
    assert rule_in_effect(env={}).name == "openai"


def test_the_environment_names_the_rule_whatever_the_model(api_model):
    assert rule_in_effect(env={"LMMS_SPATIAL_ODI_API_IMAGES": "gemini"}).name == "gemini"
    assert rule_in_effect(env={"LMMS_SPATIAL_ODI_API_IMAGES": "none"}) is None
    api_images.set_model(None)  # replay: no API model, the recorded rule restored into the environment
    assert rule_in_effect(env={"LMMS_SPATIAL_ODI_API_IMAGES": "openai"}).name == "openai"


def test_an_unknown_rule_name_is_an_error_listing_the_known_ones():
    with pytest.raises(ValueError, match="expected one of openai, openai-patches, gemini, anthropic, qwen-vl, none"):
        rule_in_effect(env={"LMMS_SPATIAL_ODI_API_IMAGES": "bing"})


# --- who is an API model, exactly (each rule below decides the size of every panorama a model is sent) ----------


def test_a_byte_limit_no_image_fits_allows_one_pixel_at_least():
    assert pixels_within(64 * 1024) == 1  # all of it is the PNG framing's headroom
    assert pixels_within(64 * 1024 + 301) == 100  # 301 bytes / 3.01 worst bytes per pixel


def _wrapped(depth: int, inner):
    """``depth`` of our wrappers (``staged`` / ``omni_cot``) around ``inner``, each holding the next as ``base``."""
    model = inner
    for _ in range(depth):
        model = _model("lmms_spatial.models.staged", base=model)
    return model


def test_wrappers_are_looked_through_up_to_eight_deep_and_a_wrapper_that_is_its_own_base_ends_the_search():
    api = _model("lmms_eval.models.chat.openai", model_version="gpt-4o")
    assert provider_for(_wrapped(1, api)).provider.name == "openai"
    assert provider_for(_wrapped(8, api)).provider.name == "openai"
    assert provider_for(_wrapped(9, api)).provider is None  # deeper than any real stack: the search stops
    loop = _model("lmms_spatial.models.staged")
    loop.base = loop
    assert provider_for(loop).provider is None


@pytest.mark.parametrize(
    ("attrs", "provider", "shown"),
    [
        ({"model_name": "gemini-2.0-flash"}, "gemini", "Model (gemini-2.0-flash)"),
        ({"model": "claude-3-5-sonnet"}, "anthropic", "Model (claude-3-5-sonnet)"),
        (
            {"model_version": "gpt-4o", "model_name": "gemini-2.0-flash", "model": "claude-3"},
            "openai",
            "Model (gpt-4o)",
        ),
        ({"model_version": "  ", "model_name": " gemini-2.0-flash "}, "gemini", "Model (gemini-2.0-flash)"),
        ({"model": object(), "model_name": "o3"}, "openai", "Model (o3)"),  # a loaded network is no name
        ({}, "openai", "Model"),
    ],
)
def test_the_model_name_is_its_model_version_else_model_name_else_model(attrs, provider, shown):
    found = provider_for(_model("lmms_eval.models.chat.openai", **attrs))
    assert (found.provider.name, found.model) == (provider, shown)


def test_a_local_model_is_named_in_the_logs_and_gets_no_rule():
    found = provider_for(_model("lmms_eval.models.chat.qwen2_5_vl", model_version="Qwen/Qwen2.5-VL-7B"))
    assert (found.provider, found.model) == (None, "Model (Qwen/Qwen2.5-VL-7B)")


@pytest.mark.parametrize(
    ("attrs", "api"),
    [
        ({"api_url": "https://api.example.com/v1"}, True),
        ({"url": "http://10.0.0.1:8000"}, True),
        ({"base_url": "https://proxy.example.com/v1"}, True),
        ({"base_url": "/models/local"}, False),  # a path, not a server
        ({"url": "ftp://x"}, False),
        ({"client": type("Client", (), {"__module__": "httpx._client"})()}, True),
        ({"client": type("OpenAI", (), {"__module__": "openai"})()}, True),
        ({"client": type("Processor", (), {"__module__": "transformers.processing_utils"})()}, False),
        ({}, False),
    ],
)
def test_a_model_of_another_class_is_an_api_model_when_it_holds_an_http_client_or_url(attrs, api):
    found = provider_for(_model("my_models", model_version="my-vlm", **attrs))
    assert (found.provider.name if found.provider else None) == ("openai" if api else None)


def test_forgetting_the_model_leaves_no_rule_in_effect():
    api_images.set_model(_model("lmms_eval.models.chat.openai", model_version="gpt-4o"))
    api_images.set_model(None)
    assert api_images.current_model() is None
    assert rule_in_effect(env={}) is None


def test_set_model_returns_the_rule_it_records_with_the_model_in_the_runs_state():
    from lmms_spatial import run_state

    lm = _model("lmms_eval.models.chat.openai", model_version="gpt-4o")
    rule = api_images.set_model(lm)
    try:
        assert rule.provider.name == "openai"
        assert api_images.current_model() is rule
        assert run_state.evaluation().model is lm  # the state names the model object, not only its rule
    finally:
        assert api_images.set_model(None) is None
    assert run_state.evaluation() is None
