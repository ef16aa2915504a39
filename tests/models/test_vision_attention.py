"""Batched window attention for the Qwen2.5-VL vision tower gives stock's results, in fewer attention calls.

Stock (transformers' sdpa path) calls attention once per window and once per image; the patch groups the windows
of equal length into one call (or pads them into one masked call) and must not change what any token sees. So
every comparison here is stock vs patched on the same weights and inputs, with stated tolerances:

- fp32: max |patched - stock| <= 1e-5 x max(1, max |stock|) (measured on CPU: 0 for ``grouped``, ~1e-7 padded);
- bf16: max |patched - stock| <= 1e-2 x max(1, max |stock|), about one bf16 spacing (2^-7 relative) at the
  largest value (measured on CPU: 0 for ``grouped``, 3e-4 relative for ``padded``);
- greedy generation: identical token ids.

Grids are chosen so that images have several windows and windows cut short by the right and bottom edges, and
the qkv weights are scaled so that attention is far from uniform (see ``_sharpen``): otherwise a patch that
attended across windows, or mis-scaled the logits by 1 %, would still pass.
"""

from __future__ import annotations

import sys
from itertools import pairwise
from pathlib import Path

import pytest
import torch
from PIL import Image

from lmms_spatial.models.vision_attention import (
    MODES,
    QWEN2_5_VL_7B_VISION,
    PatchReport,
    attend_by_plan,
    batched_vision_attention,
    build_attention_plan,
    build_vision_tower,
    patch_qwen2_5_vl_vision_attention,
    random_pixels,
    unpatch_qwen2_5_vl_vision_attention,
    window_cu_seqlens,
)

TESTS_DIR = Path(__file__).resolve().parents[1]
if str(TESTS_DIR) not in sys.path:  # tests/ is not a package; tiny_models.py sits next to it
    sys.path.insert(0, str(TESTS_DIR))

FP32_TOLERANCE = 1e-5
BF16_TOLERANCE = 1e-2

# A small tower with 2x2-merged-unit windows (4x4 patches = 16 tokens): a 12x20 grid has 3x5 windows, a 6x10
# grid (two frames) has 2x3 windows per frame of which the last row and column are cut (lengths 16, 8, 4).
WINDOWED = {
    "depth": 4,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_heads": 4,
    "out_hidden_size": 32,
    "window_size": 56,
    "fullatt_block_indexes": [1, 3],
}
WINDOWED_GRIDS = [(1, 12, 20), (2, 6, 10), (1, 8, 8), (1, 4, 6)]
# The tiny checkpoint's windows are 8x8 patches: a 12x20 grid is cut at both edges, 8x6 fits in one short window.
TINY_GRIDS = [(1, 12, 20), (1, 8, 6)]


def _sharpen(tower: torch.nn.Module, logit_std: float = 2.5) -> torch.nn.Module:
    """Scale the qkv weights so that attention logits have std ~``logit_std`` (returns ``tower``).

    With transformers' init (std 0.02) a 64-wide tower has logits of std ~0.03: attention is nearly uniform,
    and a patch that mixed windows or mis-scaled the logits would hardly change the output. For unit-RMS
    inputs, a logit's std is about hidden x std(W)^2, so the weights are scaled by sqrt(target / that).
    """
    with torch.no_grad():
        for block in tower.blocks:
            weight = block.attn.qkv.weight
            current = weight.shape[1] * float(weight.float().std()) ** 2
            weight.mul_((logit_std / current) ** 0.5)
    return tower


def _relative_diff(stock: torch.Tensor, patched: torch.Tensor) -> float:
    """max |patched - stock| over max(1, max |stock|): the quantity the tolerances above bound."""
    scale = max(1.0, float(stock.float().abs().max()))
    return float((patched.float() - stock.float()).abs().max()) / scale


def _tower_outputs(tower: torch.nn.Module, grids: list[tuple[int, int, int]], dtype: torch.dtype):
    pixels = random_pixels(tower, grids).to(dtype)
    with torch.no_grad():
        out = tower(pixels, grid_thw=torch.tensor(grids))
    return out.pooler_output, out.last_hidden_state


@pytest.fixture(scope="module")
def tiny_checkpoint(tiny_qwen2_5_vl) -> Path:
    return tiny_qwen2_5_vl  # built once per test run (tests/conftest.py)


def _load_tiny(checkpoint: Path, dtype: torch.dtype = torch.float32, **vision_overrides):
    """The tiny checkpoint, optionally with another vision tower shape (then freshly initialised, seeded)."""
    from transformers import AutoConfig, Qwen2_5_VLForConditionalGeneration

    if not vision_overrides:
        return Qwen2_5_VLForConditionalGeneration.from_pretrained(checkpoint, dtype=dtype).eval()
    config = AutoConfig.from_pretrained(checkpoint)
    for name, value in vision_overrides.items():
        setattr(config.vision_config, name, value)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return Qwen2_5_VLForConditionalGeneration(config).to(dtype).eval()


def _two_image_inputs(checkpoint: Path):
    """A prompt with two images of different sizes, through the checkpoint's own processor and chat template.

    The pixel bounds are raised from the checkpoint's 4..16 merged tokens to 16..48, so that with 4x4-patch
    windows the images have several windows each, cut at the edges (336x224 and 140x252 pixels -> 10x16 and
    18x10 patches; the checkpoint's own 8x8-patch windows are cut too).
    """
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(checkpoint)
    processor.image_processor.size = {"shortest_edge": 16 * 28 * 28, "longest_edge": 48 * 28 * 28}
    images = [Image.new("RGB", (336, 224), (200, 40, 40)), Image.new("RGB", (140, 252), (30, 90, 220))]
    for image, step in zip(images, (7, 5), strict=True):
        pixels = image.load()
        for x in range(0, image.width, step):  # some structure, so that attention is not uniform
            for y in range(0, image.height, step):
                pixels[x, y] = ((x * 3) % 256, (y * 5) % 256, ((x + y) * 7) % 256)
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "image"},
                {"type": "image"},
                {"type": "text", "text": "Which object is furthest to the left?"},
            ],
        }
    ]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    inputs = processor(text=[text], images=images, return_tensors="pt")
    assert inputs["image_grid_thw"].tolist() == [[1, 10, 16], [1, 18, 10]]
    return inputs


# --- the plan: which tokens go into which call ---------------------------------------------------------------


def test_grouped_plan_batches_equal_lengths_and_keeps_packed_order() -> None:
    # segments [0,4) [4,8) [8,10) [10,13) [13,17): lengths 4, 4, 2, 3, 4
    plan = build_attention_plan([0, 4, 8, 10, 13, 17], mode="grouped")

    assert [(g.count, g.length) for g in plan.groups] == [(3, 4), (1, 2), (1, 3)]
    # the three length-4 segments are not adjacent (13..16 comes after the others): gathered by rows
    assert plan.groups[0].rows.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [13, 14, 15, 16]]
    assert plan.groups[1].span == (8, 10) and plan.groups[1].rows is None
    assert plan.groups[2].span == (10, 13)
    assert all(g.key_mask is None for g in plan.groups)
    # concatenated output: seg0 0-3, seg1 4-7, seg4 8-11, seg2 12-13, seg3 14-16
    assert plan.take.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 8, 9, 10, 11]


def test_padded_plan_is_one_masked_batch_padded_with_each_segments_first_token() -> None:
    plan = build_attention_plan([0, 4, 8, 10, 13], mode="padded")

    (group,) = plan.groups
    assert (group.count, group.length) == (4, 4)
    assert group.rows.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 8, 8], [10, 11, 12, 10]]
    assert group.key_mask[:, 0, 0].tolist() == [
        [True, True, True, True],
        [True, True, True, True],
        [True, True, False, False],
        [True, True, True, False],
    ]
    assert plan.take.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14]


def test_plan_of_equal_contiguous_segments_is_a_view_without_gather_or_scatter() -> None:
    plan = build_attention_plan([0, 3, 6, 9], mode="padded")

    (group,) = plan.groups
    assert (group.count, group.length, group.span, group.rows, group.key_mask) == (3, 3, (0, 9), None, None)
    assert plan.take is None


def test_plan_skips_empty_segments() -> None:
    plan = build_attention_plan([0, 2, 2, 5], mode="grouped")

    assert [(g.count, g.length) for g in plan.groups] == [(1, 2), (1, 3)]
    assert plan.take is None  # [0,2) then [2,5): already packed order
    assert build_attention_plan([0, 0]).groups == ()


def test_plan_refuses_boundaries_that_are_not_a_packed_sequence() -> None:
    for bad in ([], [1, 4], [0, 5, 3]):
        with pytest.raises(ValueError, match="cu_seqlens"):
            build_attention_plan(bad)


def test_windows_of_a_grid_cut_at_both_edges_fall_into_three_groups() -> None:
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as stock

    # 12x20 patches = 6x10 merged units; 4x4-unit windows (112 px): rows 4+2, columns 4+4+2, in row-major
    # order: 64 64 32 | 32 32 16 tokens.
    _, cu_window_seqlens = stock.get_vision_window_index(
        torch.tensor([[1, 12, 20]]), spatial_merge_size=2, window_size=112, patch_size=14
    )
    assert cu_window_seqlens.tolist() == [0, 64, 128, 160, 192, 224, 240]

    plan = build_attention_plan(cu_window_seqlens.tolist(), mode="grouped")

    assert [(g.count, g.length) for g in plan.groups] == [(2, 64), (3, 32), (1, 16)]


@pytest.mark.parametrize("grids", [[(1, 12, 20)], [(1, 68, 92), (2, 6, 10), (1, 16, 16)]])
def test_benchmark_window_boundaries_are_transformers_ones(grids) -> None:
    from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as stock

    _, expected = stock.get_vision_window_index(
        torch.tensor(grids), spatial_merge_size=2, window_size=112, patch_size=14
    )

    assert window_cu_seqlens(grids) == expected.tolist()


def test_attention_by_plan_equals_attention_per_segment() -> None:
    generator = torch.Generator().manual_seed(1)
    cu = [0, 5, 10, 12, 19, 24]
    q, k, v = (torch.randn(24, 2, 8, generator=generator) for _ in range(3))
    expected = torch.cat(
        [
            torch.nn.functional.scaled_dot_product_attention(
                q[a:b].transpose(0, 1), k[a:b].transpose(0, 1), v[a:b].transpose(0, 1)
            ).transpose(0, 1)
            for a, b in pairwise(cu)
        ]
    )
    for mode in MODES:
        for max_scores in (1 << 28, 2 * 5 * 5):  # also one segment per call
            plan = build_attention_plan(cu, mode=mode)
            got = attend_by_plan(plan, q, k, v, scale=8**-0.5, max_scores_per_call=max_scores)
            assert float((got - expected).abs().max()) <= 1e-6, (mode, max_scores)


# --- patching: what is patched, what is left alone, and undoing it --------------------------------------------


def test_patch_reports_every_block_of_the_tiny_checkpoint(tiny_checkpoint: Path) -> None:
    model = _load_tiny(tiny_checkpoint)

    report = patch_qwen2_5_vl_vision_attention(model)

    assert isinstance(report, PatchReport)  # the interface fast_vlm relies on: patched (int), reason (str)
    assert isinstance(report.patched, int) and isinstance(report.reason, str)
    assert report.patched == 2 and report.mode == "grouped"
    assert "sdpa" in report.reason
    assert patch_qwen2_5_vl_vision_attention(model) == PatchReport(2, "already patched", "grouped")


@pytest.mark.parametrize("implementation", ["flash_attention_2", "flash_attention_3"])
def test_flash_attention_towers_are_left_alone(implementation: str) -> None:
    tower = build_vision_tower(WINDOWED)
    tower.config._attn_implementation = implementation

    report = patch_qwen2_5_vl_vision_attention(tower)

    assert report.patched == 0
    assert implementation in report.reason and "varlen" in report.reason
    assert all("forward" not in vars(block.attn) for block in tower.blocks)


def test_other_attention_implementations_are_left_alone() -> None:
    tower = build_vision_tower(WINDOWED)
    tower.config._attn_implementation = "flex_attention"

    report = patch_qwen2_5_vl_vision_attention(tower)

    assert report.patched == 0 and "flex_attention" in report.reason


def test_a_model_without_a_vision_tower_is_not_patched() -> None:
    report = patch_qwen2_5_vl_vision_attention(torch.nn.Linear(4, 4))

    assert report.patched == 0 and "no Qwen2.5-VL vision tower" in report.reason


def test_an_unexpected_attention_layout_is_not_patched() -> None:
    tower = build_vision_tower(WINDOWED)
    tower.blocks[2].attn.qkv = torch.nn.Identity()  # as if a future version had split q, k and v

    report = patch_qwen2_5_vl_vision_attention(tower)

    assert report.patched == 0 and "unexpected layout" in report.reason and "qkv" in report.reason
    assert all("forward" not in vars(block.attn) for block in tower.blocks)  # all or nothing


def test_an_attention_forward_wrapped_by_someone_else_is_not_replaced() -> None:
    tower = build_vision_tower(WINDOWED)
    wrapper = tower.blocks[3].attn.forward  # e.g. what accelerate's add_hook_to_module installs
    tower.blocks[3].attn.forward = wrapper

    report = patch_qwen2_5_vl_vision_attention(tower)

    assert report.patched == 0 and "already wrapped" in report.reason
    assert tower.blocks[3].attn.forward is wrapper
    assert all("forward" not in vars(block.attn) for block in tower.blocks[:3])


def test_unpatch_restores_the_stock_forward_and_removes_the_hooks() -> None:
    tower = build_vision_tower(WINDOWED)
    hooks_before = (len(tower._forward_pre_hooks), len(tower._forward_hooks))
    stock_out, _ = _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)

    assert patch_qwen2_5_vl_vision_attention(tower).patched == 4
    assert unpatch_qwen2_5_vl_vision_attention(tower) == 4

    assert all(block.attn.forward.__func__ is type(block.attn).forward for block in tower.blocks)
    assert (len(tower._forward_pre_hooks), len(tower._forward_hooks)) == hooks_before
    assert torch.equal(_tower_outputs(tower, WINDOWED_GRIDS, torch.float32)[0], stock_out)
    assert unpatch_qwen2_5_vl_vision_attention(tower) == 0


def test_context_manager_patches_inside_only() -> None:
    tower = build_vision_tower(WINDOWED)

    with batched_vision_attention(tower, mode="padded") as report:
        assert report.patched == 4 and report.mode == "padded"
        assert all("forward" in vars(block.attn) for block in tower.blocks)

    assert all("forward" not in vars(block.attn) for block in tower.blocks)


def test_plans_are_built_once_per_forward_not_once_per_block() -> None:
    tower = build_vision_tower(WINDOWED)  # 4 blocks: 2 window, 2 full
    patch_qwen2_5_vl_vision_attention(tower)
    cache = tower._lmms_spatial_batched_attention.cache

    _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)
    assert cache.builds == 2  # one for the windows, one for the images
    _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)
    assert cache.builds == 4  # and again for the next forward (the cache is emptied around each)
    assert not cache.by_object and not cache.by_value


def test_training_with_attention_dropout_goes_through_stock(monkeypatch) -> None:
    from lmms_spatial.models import vision_attention

    calls: list[int] = []
    real = vision_attention.attend_by_plan
    monkeypatch.setattr(vision_attention, "attend_by_plan", lambda *a, **k: calls.append(1) or real(*a, **k))
    tower = build_vision_tower(WINDOWED)
    patch_qwen2_5_vl_vision_attention(tower)

    _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)
    assert len(calls) == 4  # eval: every block batched

    tower.train()
    for block in tower.blocks:
        block.attn.attention_dropout = 0.1  # stock's per-window dropout is what training would expect
    _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)
    assert len(calls) == 4  # no block batched


# --- numerics: patched equals stock ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_windowed_tower_matches_stock_in_fp32(mode: str) -> None:
    tower = _sharpen(build_vision_tower(WINDOWED))
    stock_merged, stock_hidden = _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)

    with batched_vision_attention(tower, mode=mode):
        merged, hidden = _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)

    assert merged.shape == (sum(t * h * w for t, h, w in WINDOWED_GRIDS) // 4, 32)
    assert _relative_diff(stock_merged, merged) <= FP32_TOLERANCE
    assert _relative_diff(stock_hidden, hidden) <= FP32_TOLERANCE


@pytest.mark.parametrize("mode", MODES)
def test_windowed_tower_matches_stock_in_bf16(mode: str) -> None:
    tower = _sharpen(build_vision_tower(WINDOWED, dtype=torch.bfloat16))
    stock_merged, stock_hidden = _tower_outputs(tower, WINDOWED_GRIDS, torch.bfloat16)

    with batched_vision_attention(tower, mode=mode):
        merged, hidden = _tower_outputs(tower, WINDOWED_GRIDS, torch.bfloat16)

    assert merged.dtype == torch.bfloat16
    assert _relative_diff(stock_merged, merged) <= BF16_TOLERANCE
    assert _relative_diff(stock_hidden, hidden) <= BF16_TOLERANCE


def test_eager_tower_is_patched_and_matches_stock_eager_in_fp32() -> None:
    tower = _sharpen(build_vision_tower(WINDOWED, attn_implementation="eager"))
    stock_merged, _ = _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)

    with batched_vision_attention(tower) as report:
        merged, _ = _tower_outputs(tower, WINDOWED_GRIDS, torch.float32)

    assert report.patched == 4 and "eager" in report.reason
    assert _relative_diff(stock_merged, merged) <= FP32_TOLERANCE


@pytest.mark.parametrize("dtype,tolerance", [(torch.float32, FP32_TOLERANCE), (torch.bfloat16, BF16_TOLERANCE)])
@pytest.mark.parametrize("mode", MODES)
def test_tiny_checkpoint_tower_matches_stock(tiny_checkpoint: Path, mode: str, dtype, tolerance: float) -> None:
    tower = _sharpen(_load_tiny(tiny_checkpoint, dtype).model.visual)
    stock_merged, stock_hidden = _tower_outputs(tower, TINY_GRIDS, dtype)

    with batched_vision_attention(tower, mode=mode) as report:
        merged, hidden = _tower_outputs(tower, TINY_GRIDS, dtype)

    assert report.patched == 2
    assert _relative_diff(stock_merged, merged) <= tolerance
    assert _relative_diff(stock_hidden, hidden) <= tolerance


@pytest.mark.parametrize(
    "vision", [{}, {"depth": 3, "window_size": 56, "fullatt_block_indexes": [1]}], ids=["tiny", "small_windows"]
)
@pytest.mark.parametrize("mode", MODES)
def test_model_logits_and_greedy_tokens_match_stock_for_two_images(tiny_checkpoint: Path, vision, mode) -> None:
    model = _load_tiny(tiny_checkpoint, **vision)
    _sharpen(model.model.visual)
    inputs = _two_image_inputs(tiny_checkpoint)
    with torch.no_grad():
        stock_logits = model(**inputs).logits
        stock_tokens = model.generate(**inputs, max_new_tokens=8, do_sample=False)

        with batched_vision_attention(model, mode=mode) as report:
            logits = model(**inputs).logits
            tokens = model.generate(**inputs, max_new_tokens=8, do_sample=False)

    assert report.patched == model.config.vision_config.depth
    assert _relative_diff(stock_logits, logits) <= FP32_TOLERANCE
    assert tokens.tolist() == stock_tokens.tolist()


def test_model_logits_match_stock_in_bf16(tiny_checkpoint: Path) -> None:
    model = _load_tiny(tiny_checkpoint, torch.bfloat16, depth=3, window_size=56, fullatt_block_indexes=[1])
    _sharpen(model.model.visual)
    inputs = _two_image_inputs(tiny_checkpoint)
    inputs["pixel_values"] = inputs["pixel_values"].to(torch.bfloat16)
    with torch.no_grad():
        stock_logits = model(**inputs).logits
        with batched_vision_attention(model):
            logits = model(**inputs).logits

    assert _relative_diff(stock_logits, logits) <= BF16_TOLERANCE


# --- the real 7B tower ------------------------------------------------------------------------------------------


def test_7b_vision_architecture_is_transformers_default_except_the_width() -> None:
    from transformers import Qwen2_5_VLConfig

    default = Qwen2_5_VLConfig().vision_config
    for name, value in QWEN2_5_VL_7B_VISION.items():
        if name != "hidden_size":
            expected = getattr(default, name)
            assert (list(expected) if isinstance(expected, tuple) else expected) == value, name
    # the released 7B checkpoint's tower is 1280 wide (its merger maps 4 x 1280 = 5120 -> 3584)
    assert (default.hidden_size, QWEN2_5_VL_7B_VISION["hidden_size"]) == (3584, 1280)


@pytest.mark.slow
def test_7b_vision_tower_matches_stock_in_fp32() -> None:
    """All 32 blocks at the real width; a 336x224 image (16x24 patches: 2x3 whole windows) and a 196x140 one
    (10x14 patches: 2x2 windows, cut at the right and bottom edges). Each image has several windows in both
    directions; a larger image adds fp32 compute (a 24x32 grid took twice as long) and no other case."""
    tower = _sharpen(build_vision_tower())  # QWEN2_5_VL_7B_VISION, random weights
    grids = [(1, 16, 24), (1, 10, 14)]
    stock_merged, stock_hidden = _tower_outputs(tower, grids, torch.float32)

    with batched_vision_attention(tower) as report:
        merged, hidden = _tower_outputs(tower, grids, torch.float32)

    assert report.patched == 32
    assert merged.shape == ((16 * 24 + 10 * 14) // 4, 3584)
    assert _relative_diff(stock_merged, merged) <= FP32_TOLERANCE
    assert _relative_diff(stock_hidden, hidden) <= FP32_TOLERANCE
