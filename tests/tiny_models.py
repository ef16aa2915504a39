"""Tiny random-weight checkpoints built at test time, so model-class tests run offline on CPU.

Real checkpoints are gigabytes and live on the Hub; the end-to-end tests only need something that
``from_pretrained`` loads through exactly the code path lmms-eval uses (config, weights, tokenizer,
processor, chat template). Everything here is built from scratch in a few seconds: no network,
nothing committed. The weights are random (seeded), so answers are gibberish; the tests check the
plumbing (every sample answered, every metric reported), never the accuracy.
"""

from __future__ import annotations

from pathlib import Path

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


def _train_byte_level_bpe(vocab_size: int) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Train a byte-level BPE on the tiny corpus; returns (vocab, merges) with all 256 bytes present.

    Byte-level means any text (and any byte sequence the random model emits) round-trips, so the
    tokenizer never needs an unknown token, just like the real Qwen tokenizer.
    """
    import json

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


def build_tiny_qwen_tokenizer(vocab_size: int = 400):
    """A Qwen2Tokenizer (tokenizers backend) with the Qwen special tokens and chat template.

    Built from a trained byte-level BPE rather than downloaded, so tests stay offline; special tokens
    get the ids right after the BPE vocabulary.
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
    tokenizer.model_max_length = 4096
    return tokenizer


def build_tiny_qwen2_5_vl(out_dir: Path, seed: int = 0) -> Path:
    """Write a random-weight Qwen2.5-VL checkpoint (model, tokenizer, processor) into ``out_dir``.

    The architecture is the real one at toy size (2 text layers of width 64, a 2-block vision tower
    with patch 14 and 2x2 merging, window + full attention), so lmms-eval's ``qwen2_5_vl`` class runs
    its unmodified code path. ``seed`` makes the weights, and therefore the generated text, repeatable.
    """
    import torch
    from transformers import (
        GenerationConfig,
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    tokenizer = build_tiny_qwen_tokenizer()
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in QWEN_SPECIAL_TOKENS}
    vocab_size = len(tokenizer)

    text_hidden, text_heads = 64, 4  # head_dim 16 -> rotary half-dim 8 = sum(mrope_section)
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": text_hidden,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": text_heads,
            "num_key_value_heads": 2,
            "max_position_embeddings": 4096,
            "max_window_layers": 2,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
            "bos_token_id": ids["<|endoftext|>"],
            "eos_token_id": ids["<|im_end|>"],
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_heads": 2,
            "in_channels": 3,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 112,
            "out_hidden_size": text_hidden,
            "fullatt_block_indexes": [1],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )

    with torch.random.fork_rng(devices=[]):  # seed the init without touching the caller's RNG state
        torch.manual_seed(seed)
        model = Qwen2_5_VLForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]],
        pad_token_id=ids["<|endoftext|>"],
        do_sample=False,
    )
    model.save_pretrained(out_dir)

    image_processor = Qwen2VLImageProcessor(
        patch_size=14,
        temporal_patch_size=2,
        merge_size=2,
        size={"shortest_edge": TINY_MIN_PIXELS, "longest_edge": TINY_MAX_PIXELS},
    )
    video_processor = Qwen2VLVideoProcessor(
        patch_size=14,
        temporal_patch_size=2,
        merge_size=2,
        size={"shortest_edge": TINY_MIN_PIXELS, "longest_edge": TINY_MAX_PIXELS},
    )
    processor = Qwen2_5_VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=QWEN_CHAT_TEMPLATE,
    )
    processor.save_pretrained(out_dir)
    return out_dir


def build_tiny_llava(out_dir: Path, seed: int = 0) -> Path:
    """A random-weight LLaVA (CLIP vision tower, Qwen2 text model) with a chat template: a model outside
    the Qwen family for ``fast_vlm``'s generic path (``AutoModelForImageTextToText`` + the processor).

    Every image becomes 4 tokens (56x56 crop, patch 14, CLS dropped by the "default" feature strategy).
    """
    import torch
    from transformers import (
        CLIPImageProcessor,
        GenerationConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tiny_qwen_tokenizer()
    tokenizer.add_tokens(["<image>"], special_tokens=True)
    tokenizer.chat_template = (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{% for c in message['content'] %}{% if c['type'] == 'image' %}<image>"
        "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    config = LlavaConfig(
        vision_config={
            "model_type": "clip_vision_model", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 2, "image_size": 56, "patch_size": 14,
        },
        text_config={
            "model_type": "qwen2", "vocab_size": len(tokenizer), "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "eos_token_id": eos,
            "pad_token_id": tokenizer.pad_token_id,
        },
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=tokenizer.pad_token_id, do_sample=False)
    model.save_pretrained(out_dir)
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 56}, crop_size={"height": 56, "width": 56}),
        tokenizer=tokenizer,
        patch_size=14,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=tokenizer.chat_template,
    )
    processor.save_pretrained(out_dir)
    return out_dir
