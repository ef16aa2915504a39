"""The Qwen2.5-VL facts the runtime model code needs: the 7B architecture and lmms-eval's pixel bounds.

Kept with the models (``vision_attention`` builds its stock-vs-patched tower from the 7B vision config and
sizes image grids with lmms-eval's bounds); the measuring tools (``lmms_spatial.bench.checkpoints`` for the
random-weight checkpoints, ``lmms_spatial.bench.floor`` for the compute floor) import them from here, never
the other way round.
"""

from __future__ import annotations

from typing import Any

# Qwen2.5-VL-7B-Instruct's config.json (text and vision parts), less the vocabulary (ours is tiny:
# it only changes the embedding table and head, which the compute floor leaves out).
QWEN2_5_VL_7B: dict[str, dict[str, Any]] = {
    "text_config": {
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "max_position_embeddings": 128000,
        "max_window_layers": 28,
        "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
    },
    "vision_config": {
        "depth": 32,
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "in_channels": 3,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 112,
        "out_hidden_size": 3584,
        "fullatt_block_indexes": [7, 15, 23, 31],
    },
}

# lmms-eval 0.7.3's ``qwen2_5_vl`` model arguments min_pixels / max_pixels (its defaults)
LMMS_EVAL_MIN_PIXELS = 256 * 28 * 28
LMMS_EVAL_MAX_PIXELS = 1605632
