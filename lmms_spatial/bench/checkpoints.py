"""Random-weight Qwen2.5-VL checkpoints built offline, at toy size or at the real 7B architecture.

Speed figures need the real architecture (the 7B model's layer widths decide what the GPU does),
not the real weights; GPU machines here reach no hub, and tests reach none either. So both are
built from a config: the same model class, processor and chat template lmms-eval loads, with a
byte-level BPE tokenizer trained on a few sentences (any text round-trips, as with Qwen's own).
Weights are random (seeded): answers are gibberish, timings and plumbing are real.

``tests/tiny_models.py`` uses the tiny one for every model test; ``lmms-spatial bench --runners``
builds the 7B one on the GPU it measures.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from lmms_spatial.models.qwen2_5_vl_architecture import QWEN2_5_VL_7B  # one copy, with the model code

# Tokens the Qwen2.5-VL chat template, processor and model config refer to by name. The order is
# the order of the ids after the byte-level vocabulary (the real model has them at 151643...).
QWEN_SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# Qwen-style template: images and videos become <|vision_start|><|image_pad|><|vision_end|> (the processor
# expands the pad into one token per merged patch), text is copied, every turn is closed by <|im_end|>.
QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}"
    "{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# A few sentences in the style of the benchmark prompts, so the trained BPE learns some real merges.
_CORPUS: tuple[str, ...] = (
    "Both images show the same table. Which object is furthest to the left of the red square?",
    "The camera moved sideways between image 1 and image 2. In which direction did the camera move?",
    "Considering both images, which object on the table is the largest?",
    "Options: A: the blue circle, B: the green triangle, C: the yellow square, D: none of them",
    "Answer with the option's letter from the given choices directly. The answer is A B C D.",
    "left right up down it did not move they are all the same size",
)

# Small enough that two 192x128 images become a handful of patches (the processor rescales to this range).
TINY_MIN_PIXELS = 4 * 28 * 28
TINY_MAX_PIXELS = 16 * 28 * 28

# The real architecture at toy size (2 text layers of width 64, a 2-block vision tower with patch 14
# and 2x2 merging, window + full attention), so lmms-eval's ``qwen2_5_vl`` runs its unmodified path.
QWEN2_5_VL_TINY: dict[str, dict[str, Any]] = {
    "text_config": {
        "hidden_size": 64,  # 4 heads of 16 -> rotary half-dim 8 = sum(mrope_section)
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "max_window_layers": 2,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
    },
    "vision_config": {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "in_channels": 3,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 112,
        "out_hidden_size": 64,
        "fullatt_block_indexes": [1],
    },
}

ARCHITECTURES = {"tiny": QWEN2_5_VL_TINY, "7b": QWEN2_5_VL_7B}

# Pixel budget each architecture's processor is saved with: the tiny one keeps test images to a few
# patches; the 7B one is Qwen2.5-VL-7B-Instruct's preprocessor_config.json (lmms-eval narrows it
# with its own min_pixels / max_pixels model arguments).
PIXEL_BUDGETS = {"tiny": (TINY_MIN_PIXELS, TINY_MAX_PIXELS), "7b": (3136, 12845056)}


def _train_byte_level_bpe(vocab_size: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Train a byte-level BPE on the tiny corpus; returns (vocab, merges) with all 256 bytes present.

    Byte-level means any text (and any byte sequence the random model emits) round-trips, so the
    tokenizer never needs an unknown token, just like the real Qwen tokenizer.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS, trainer=trainer)
    model = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return dict(model["vocab"]), merges


def build_qwen_tokenizer(vocab_size: int = 400):
    """A Qwen2Tokenizer (tokenizers backend) with the Qwen special tokens and chat template.

    Built from a trained byte-level BPE rather than downloaded; special tokens get the ids right
    after the BPE vocabulary.
    """
    from transformers import Qwen2Tokenizer

    vocab, merges = _train_byte_level_bpe(vocab_size)
    next_id = len(vocab)
    for token in QWEN_SPECIAL_TOKENS:
        vocab[token] = next_id
        next_id += 1
    tokenizer = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=list(QWEN_SPECIAL_TOKENS),
    )
    tokenizer.chat_template = QWEN_CHAT_TEMPLATE
    tokenizer.model_max_length = 4096 if vocab_size <= 400 else 131072
    return tokenizer


def qwen2_5_vl_config(arch: str, tokenizer) -> Any:
    """The ``Qwen2_5_VLConfig`` of ``arch`` ("tiny" or "7b") with ``tokenizer``'s vocabulary and token ids."""
    from transformers import Qwen2_5_VLConfig

    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; known: {', '.join(ARCHITECTURES)}")
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in QWEN_SPECIAL_TOKENS}
    parts = copy.deepcopy(ARCHITECTURES[arch])
    parts["text_config"].update(
        vocab_size=len(tokenizer),
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    return Qwen2_5_VLConfig(
        **parts,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )


def build_random_qwen2_5_vl(out_dir: Path, arch: str = "tiny", seed: int = 0, device: str = "cpu",
                            dtype: str = "float32") -> Path:  # fmt: skip
    """Write a random-weight Qwen2.5-VL checkpoint (model, tokenizer, processor) of ``arch`` into ``out_dir``.

    ``seed`` makes the weights, and so the generated text, repeatable. The 7B one is built where
    it will run (``device="cuda"``, ``dtype="bfloat16"``: 15 GB, seconds on a GPU) rather than
    initialised in float32 on the host.
    """
    import torch
    from transformers import (
        GenerationConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = build_qwen_tokenizer()
    config = qwen2_5_vl_config(arch, tokenizer)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in QWEN_SPECIAL_TOKENS}

    devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=devices):  # seed the init without touching the caller's RNG state
        torch.manual_seed(seed)
        with torch.device(device):
            model = Qwen2_5_VLForConditionalGeneration._from_config(config, dtype=getattr(torch, dtype)).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]],
        pad_token_id=ids["<|endoftext|>"],
        do_sample=False,
    )
    model.save_pretrained(out_dir)

    min_pixels, max_pixels = PIXEL_BUDGETS[arch]
    geometry = {"patch_size": 14, "temporal_patch_size": 2, "merge_size": 2}
    size = {"shortest_edge": min_pixels, "longest_edge": max_pixels}
    processor = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(**geometry, size=size),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(**geometry, size=size),
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    processor.save_pretrained(out_dir)
    return out_dir
