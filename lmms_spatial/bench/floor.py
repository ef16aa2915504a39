"""The compute floor of a vision-language model on a document: the time its matrix products take at peak.

A runner's speed means little in absolute terms (a faster GPU, a longer prompt); as a ratio to the
floor it says how much of the machine the runner leaves unused. The floor counts the dense products
only (2 FLOP per parameter per token), the language model over every prompt token and the vision
tower over every image patch, and leaves out attention's quadratic term, embeddings and the output
head (one position per generated token): a lower bound, as a floor should be.

    floor_flops = 2 * llm_params * prompt_tokens + 2 * vision_params * patches

Issue 18's figure: a 7B Qwen2.5-VL (6.53 B LLM parameters without embeddings and head, 0.68 B
vision) on an MMSI document with two 1280x960 images (3,261 tokens, 12,696 patches) is 59.7 TFLOP,
76 ms at 790 TFLOP/s (the bf16 matrix rate measured on the H200 the device notes describe).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# lmms-eval 0.7.3's ``qwen2_5_vl`` pixel bounds: one copy, with the model code (re-exported for the bench)
from lmms_spatial.models.qwen2_5_vl_architecture import LMMS_EVAL_MAX_PIXELS, LMMS_EVAL_MIN_PIXELS  # noqa: F401

# bf16 dense matrix rate used for the floor unless told otherwise (TFLOP/s): the rate issue 18's
# figures were computed with, so ratios stay comparable between runs and machines.
DEFAULT_PEAK_TFLOPS = 790.0


@dataclass(frozen=True)
class ParamSplit:
    """Parameter counts the floor multiplies: LLM blocks (no embeddings, no head) and vision tower."""

    llm: int
    vision: int


def split_parameters(named_parameters: Iterable[tuple[str, object]]) -> ParamSplit:
    """Count ``model.named_parameters()`` into the LLM's dense blocks and the vision tower.

    Embedding tables are lookups, not products; the head runs on one position per new token, so
    neither belongs to a prefill floor. Names follow transformers' Qwen2.5-VL (``visual``,
    ``embed_tokens``, ``lm_head``) and most other VLMs (``vision_tower``, ``vision_model``).
    """
    llm = vision = 0
    for name, param in named_parameters:
        n = int(param.numel())  # type: ignore[attr-defined]
        if any(part in name for part in ("visual", "vision_tower", "vision_model")):
            vision += n
        elif "embed_tokens" in name or "lm_head" in name:
            continue
        else:
            llm += n
    return ParamSplit(llm=llm, vision=vision)


@dataclass(frozen=True)
class Floor:
    """The floor of one document (or the mean over several): FLOP and milliseconds at ``peak_tflops``."""

    tokens: float
    patches: float
    flops: float
    peak_tflops: float

    @property
    def ms(self) -> float:
        return self.flops / (self.peak_tflops * 1e12) * 1000.0

    def as_dict(self) -> dict[str, float]:
        return {
            "tokens": self.tokens,
            "patches": self.patches,
            "flops": self.flops,
            "tflop": float(f"{self.flops / 1e12:.4g}"),
            "peak_tflops": self.peak_tflops,
            "ms": float(f"{self.ms:.4g}"),
        }


def floor_of(params: ParamSplit, tokens: float, patches: float, peak_tflops: float = DEFAULT_PEAK_TFLOPS) -> Floor:
    flops = 2.0 * params.llm * tokens + 2.0 * params.vision * patches
    return Floor(tokens=tokens, patches=patches, flops=flops, peak_tflops=peak_tflops)


def mean_floor(params: ParamSplit, docs: Sequence[tuple[int, int]], peak_tflops: float = DEFAULT_PEAK_TFLOPS) -> Floor:
    """The floor per document, averaged over ``docs`` given as (prompt tokens, patches) pairs."""
    if not docs:
        raise ValueError("no documents to compute a floor for")
    tokens = sum(t for t, _ in docs) / len(docs)
    patches = sum(p for _, p in docs) / len(docs)
    return floor_of(params, tokens, patches, peak_tflops)
