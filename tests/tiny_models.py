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
