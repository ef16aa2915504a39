"""Images for API-served models: within what each provider accepts, at no more pixels than it keeps.

An API model (lmms-eval's ``openai``, ``async_openai``, ``gemini``, ``litellm``, ``claude``,
``gpt4v``, ... and any model that sends images over HTTP) gets our PIL images encoded by
lmms-eval inside the request body: PNG by default (``LMMS_IMAGE_ENCODE_FORMAT``), no resizing.
A 12000 × 6000 ODI-Bench panorama becomes a 93 MB PNG that takes ~50 s of CPU to encode and that
providers refuse (~20 MB per image) or shrink anyway. So ODI-Bench sizes the panorama it hands
to an API model as that provider would (:data:`PROVIDERS`), using the reduced JPEG decode of
:func:`lmms_spatial.data.erp_image.decode_erp` (nothing decodes 175 MP just to shrink it).

Which provider: :func:`provider_for` reads the model object lmms-eval evaluates, which the run's state holds
with its rule while ``evaluate`` runs (:class:`lmms_spatial.run_state.Evaluation`, set through :func:`set_model`
by the evaluate wrapper; our wrappers
``staged`` / ``omni_cot`` are looked through to their ``base``): a known API model class, or any
model holding an HTTP client or URL, is an API model; its model name picks the provider
(``gpt-4o`` / ``o3`` -> OpenAI, ``gemini-*`` -> Google, ``claude-*`` -> Anthropic,
``qwen-vl-plus`` / ``-max`` -> Alibaba Model Studio). An OpenAI-compatible endpoint serving a
model we do not recognise (a local vLLM server, say) gets OpenAI's rule, the protocol's
reference, and the log says so. Local models (``qwen2_5_vl``, ``fast_vlm``, ``vllm``, ...) get
``None``: their images are unchanged.

The user decides last: ``LMMS_SPATIAL_ODI_MAX_PIXELS`` / ``LMMS_SPATIAL_ODI_RESIZE`` win over
any provider rule, and :data:`ENV_API_IMAGES` names the rule to use whatever the model
(``openai``, ``gemini``, ..., or ``none`` for full resolution). The rule applied is recorded in
every ODI-Bench sample under that name (:mod:`lmms_spatial.run_options`), so ``--model replay``
restores it and ``lmms-spatial report`` shows it and warns when compared models saw different
sizes.

Byte limits are guaranteed, not hoped for: a rule's pixel cap never exceeds what the worst case
(incompressible PNG, 3 bytes a pixel plus framing) encodes within the provider's byte limit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lmms_spatial import run_state
from lmms_spatial.data.erp_image import ResolutionCap

ENV_API_IMAGES = "LMMS_SPATIAL_ODI_API_IMAGES"
NONE = "none"  # ENV_API_IMAGES value: full resolution even for an API model

MB = 1024 * 1024
# Worst case of lmms-eval's default encoding: an incompressible RGB PNG stores 3 bytes a pixel, one
# filter byte a row, zlib and chunk framing (< 0.1 %); JPEG / WEBP at quality 85 are smaller.
_WORST_BYTES_PER_PIXEL = 3.01
_HEADROOM = 64 * 1024


def pixels_within(max_bytes: int) -> int:
    """The most pixels an image may have so that no encoding of it exceeds ``max_bytes``."""
    return max(1, int((max_bytes - _HEADROOM) / _WORST_BYTES_PER_PIXEL))


@dataclass(frozen=True)
class ProviderImages:
    """What one provider does with an image: the most it keeps, the most it accepts.

    ``max_side`` / ``max_short_side`` / ``max_pixels``: the provider downscales beyond these
    (keeping the aspect ratio), so we send no more. ``max_image_bytes``: the largest encoded
    image it accepts (a request-size limit is turned into a per-image one for one image).
    """

    name: str
    keeps: str  # one line for logs and the README
    source: str  # the provider's documentation
    max_side: int | None = None
    max_short_side: int | None = None
    max_pixels: int | None = None
    max_image_bytes: int = 20 * MB

    def cap(self) -> ResolutionCap:
        """The resolution cap that sends what the provider keeps, within its byte limit."""
        within = pixels_within(self.max_image_bytes)
        pixels = within if self.max_pixels is None else min(self.max_pixels, within)
        return ResolutionCap(max_pixels=pixels, max_side=self.max_side, max_short_side=self.max_short_side)

    def describe(self) -> str:
        return f"{self.name}: {self.keeps} ({self.source})"


OPENAI_DOCS = "https://platform.openai.com/docs/guides/images-vision#calculating-costs"
PROVIDERS: dict[str, ProviderImages] = {
    p.name: p
    for p in (
        # OpenAI, "detail: high" (GPT-4o, GPT-4.1, o1, o3, ...): "images are first scaled to fit within a
        # 2048 x 2048 square, maintaining their aspect ratio. Then, they are scaled such that the
        # shortest side of the image is 768px long." Input requirements: "Up to 20MB per image".
        ProviderImages(
            "openai", "fit in 2048x2048, then short side at most 768 px; 20 MB per image", OPENAI_DOCS,
            max_side=2048, max_short_side=768,
        ),
        # OpenAI's patch-based models (gpt-4.1-mini, gpt-4.1-nano, o4-mini): the image is covered by
        # 32 x 32 px patches, at most 1536 of them, and scaled down to fit that budget.
        ProviderImages(
            "openai-patches", "at most 1536 patches of 32x32 px (1,572,864 px); 20 MB per image", OPENAI_DOCS,
            max_pixels=1536 * 32 * 32,
        ),
        # Google Gemini: "larger images are scaled down and padded to fit a maximum resolution of
        # 3072 x 3072 while preserving their original aspect ratio" (Vertex AI, image understanding);
        # inline data: the whole request under 20 MB (ai.google.dev image understanding), base64
        # included, so 15 MB of image bytes for one image.
        ProviderImages(
            "gemini", "fit in 3072x3072; inline request at most 20 MB (base64 included)",
            "https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/image-understanding, "
            "https://ai.google.dev/gemini-api/docs/image-understanding",
            max_side=3072, max_image_bytes=15 * MB,
        ),
        # Anthropic Claude: "If your image's long edge is more than 1568 pixels, or your image is more
        # than ~1,600 tokens, it will first be scaled down, preserving aspect ratio"; the largest 1:2
        # image not resized is 784 x 1568 px; 5 MB per image on the API.
        ProviderImages(
            "anthropic", "long side at most 1568 px, at most 1568x784 px (the largest 1:2 size kept); 5 MB per image",
            "https://docs.claude.com/en/docs/build-with-claude/vision",
            max_side=1568, max_pixels=1568 * 784, max_image_bytes=5 * MB,
        ),
        # Alibaba Model Studio (DashScope) Qwen-VL: one token per 28 x 28 px, at most 1280 tokens per image
        # unless vl_high_resolution_images is set; a base64 image at most 10 MB (7.5 MB of bytes).
        ProviderImages(
            "qwen-vl", "at most 1280 tokens of 28x28 px (1,003,520 px); base64 image at most 10 MB",
            "https://www.alibabacloud.com/help/en/model-studio/vision",
            max_pixels=1280 * 28 * 28, max_image_bytes=int(7.5 * MB),
        ),
    )
}  # fmt: skip

# lmms-eval model classes that send images over HTTP -> the provider their API speaks for
# (the model name refines it: LiteLLM and OpenAI-compatible clients reach every provider).
_API_MODULES = {
    "lmms_eval.models.chat.openai": "openai",
    "lmms_eval.models.chat.async_openai": "openai",
    "lmms_eval.models.chat.litellm": "openai",
    "lmms_eval.models.chat.gemini": "gemini",
    "lmms_eval.models.simple.openai": "openai",
    "lmms_eval.models.simple.gpt4v": "openai",
    "lmms_eval.models.simple.batch_gpt4": "openai",
    "lmms_eval.models.simple.litellm": "openai",
    "lmms_eval.models.simple.srt_api": "openai",
    "lmms_eval.models.simple.gemini": "gemini",
    "lmms_eval.models.simple.claude": "anthropic",
}
_HTTP_CLIENT_PACKAGES = {"openai", "anthropic", "google", "httpx", "requests", "aiohttp", "litellm"}

# model name -> provider, first match wins (lower-cased; a LiteLLM "provider/" prefix is kept)
_BY_NAME: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"claude"), "anthropic"),
    (re.compile(r"gemini"), "gemini"),
    (re.compile(r"qwen[\d.]*-vl-(plus|max|flash)|qvq-(plus|max)"), "qwen-vl"),
    (re.compile(r"(^|/)(gpt-4\.1-(mini|nano)|o4-mini)"), "openai-patches"),
    (re.compile(r"(^|/)(gpt-|chatgpt|o1|o3|o4)"), "openai"),
)


@dataclass(frozen=True)
class ModelImages:
    """The rule chosen for one model object: the provider (None: a local model) and why."""

    provider: ProviderImages | None
    model: str  # "openai (gpt-4o)" for logs
    recognised: bool = True  # False: an API model whose name we do not know (OpenAI's rule)


def _base_model(lm: Any) -> Any:
    """Our wrappers (``staged``, ``omni_cot``) send the images through their ``base`` model."""
    seen = 0
    while getattr(lm, "base", None) is not None and seen < 8:
        lm, seen = lm.base, seen + 1
    return lm


def _model_name(lm: Any) -> str:
    for attr in ("model_version", "model_name", "model"):
        value = getattr(lm, attr, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _sends_http(lm: Any) -> bool:
    client = getattr(lm, "client", None)
    if client is not None and type(client).__module__.split(".")[0] in _HTTP_CLIENT_PACKAGES:
        return True
    return any(
        isinstance(getattr(lm, attr, None), str) and getattr(lm, attr).startswith(("http://", "https://"))
        for attr in ("base_url", "api_url", "url")
    )


def provider_for(lm: Any) -> ModelImages:
    """The provider rule for the model object ``lm`` (``provider`` None for a local model)."""
    lm = _base_model(lm)
    family = next((_API_MODULES[c.__module__] for c in type(lm).__mro__ if c.__module__ in _API_MODULES), None)
    if family is None and _sends_http(lm):
        family = "openai"
    name = _model_name(lm)
    shown = f"{type(lm).__name__} ({name})" if name else type(lm).__name__
    if family is None:
        return ModelImages(None, shown)
    by_name = next((provider for pattern, provider in _BY_NAME if pattern.search(name.lower())), None)
    return ModelImages(PROVIDERS[by_name or family], shown, recognised=by_name is not None)


# --- the model being evaluated: part of the run's state (lmms_spatial.run_state), set around lmms-eval's evaluate ---


def set_model(lm: Any) -> ModelImages | None:
    """Make ``lm`` the model being evaluated, with its rule, in the run's state (None forgets it); returns the rule."""
    evaluation = None if lm is None else run_state.Evaluation(lm, provider_for(lm))
    run_state.set_evaluation(evaluation)
    return None if evaluation is None else evaluation.images


def current_model() -> ModelImages | None:
    """The rule of the model being evaluated (:attr:`lmms_spatial.run_state.Evaluation.images`), if one is."""
    evaluation = run_state.evaluation()
    return None if evaluation is None else evaluation.images


def rule_in_effect(env: Mapping[str, str] | None = None) -> ProviderImages | None:
    """The provider rule that sizes API images now: :data:`ENV_API_IMAGES` if set, else the model's.

    Raises ``ValueError`` naming the known rules when the variable names none of them.
    """
    env = os.environ if env is None else env
    forced = env.get(ENV_API_IMAGES, "").strip().lower()
    if forced:
        if forced == NONE:
            return None
        if forced not in PROVIDERS:
            known = ", ".join([*PROVIDERS, NONE])
            raise ValueError(f"{ENV_API_IMAGES}={forced!r}: expected one of {known}")
        return PROVIDERS[forced]
    model = current_model()
    return None if model is None else model.provider
