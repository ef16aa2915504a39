"""Tiny random-weight checkpoints built at test time, so model-class tests run offline on CPU.

Real checkpoints are gigabytes and live on the Hub; the end-to-end tests only need something that
``from_pretrained`` loads through exactly the code path lmms-eval uses (config, weights, tokenizer,
processor, chat template). The builder lives in the package (``lmms_spatial.bench.checkpoints``),
where ``lmms-spatial bench`` also builds the 7B architecture on a GPU; these are the test names for it.
The weights are random (seeded), so answers are gibberish; the tests check the plumbing, never accuracy.
"""

from __future__ import annotations

from pathlib import Path

from lmms_spatial.bench.checkpoints import (  # noqa: F401  (re-exported for the tests)
    QWEN_CHAT_TEMPLATE,
    QWEN_SPECIAL_TOKENS,
    TINY_MAX_PIXELS,
    TINY_MIN_PIXELS,
    build_qwen_tokenizer,
    build_random_qwen2_5_vl,
)


def build_tiny_qwen_tokenizer(vocab_size: int = 400):
    return build_qwen_tokenizer(vocab_size)


def build_tiny_qwen2_5_vl(out_dir: Path, seed: int = 0) -> Path:
    """A random-weight Qwen2.5-VL at toy size (model, tokenizer, processor) in ``out_dir``."""
    return build_random_qwen2_5_vl(out_dir, arch="tiny", seed=seed)
