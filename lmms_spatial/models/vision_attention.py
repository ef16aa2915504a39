"""Batched window attention for the Qwen2.5-VL vision tower (sdpa / eager), installed on a loaded model.

Why: in transformers' sdpa and eager paths, ``Qwen2_5_VLVisionAttention`` splits the packed sequence at every
``cu_seqlens`` boundary and calls attention once per piece. In 28 of the 32 blocks of the 7B tower the pieces
are the 8x8-patch windows, so two 1280x960 images cost ~200 attention calls per block, each far too small to
fill a GPU; measured on an H100 (issue 18) the vision tower is ~75 % of prefill. Attention inside one window
never looks outside it, so the windows of equal length are one ``scaled_dot_product_attention`` call over
``[windows, heads, length, head_dim]`` without any mask (interior windows all have the same length; the
windows cut by an image's right or bottom edge form a few more groups), and the full-attention blocks are one
call per group of equally long images. Every row sees exactly the keys it saw before; only the batching
changes, so fp32 results agree with stock to rounding (tests: max abs diff <= 1e-5).

A ``padded`` mode is kept as well: all segments padded to the longest, one call with a boolean key-padding
mask (padded query rows attend to real keys and are dropped afterwards, so nothing is NaN). It is one call
instead of a few, but the mask rules out the flash kernels on a GPU; ``grouped`` is the default.

What is NOT changed: the qkv projection, the rotary application (the modeling module's own
``apply_rotary_pos_emb_vision`` is called on the same tensors), the output projection, the blocks' MLPs, the
window permutation and the merger. ``flash_attention_*`` is left alone (it is already one varlen call per
block), and so is any other implementation. If the module layout is not the one this was written against
(transformers 5.17 and 5.23 have the same one), nothing is patched and the report says why.

The grouping (gather indices, scatter indices, masks) depends only on ``cu_seqlens``; the tower passes the same
two tensors (windows, full) to every block, so it is built once per tower forward per tensor, cached by tensor
identity (and, on a miss, by value), and the cache is emptied when the tower's forward starts and ends.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from types import MethodType
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from lmms_spatial.models.qwen2_5_vl_architecture import LMMS_EVAL_MAX_PIXELS, LMMS_EVAL_MIN_PIXELS, QWEN2_5_VL_7B

MODES = ("grouped", "padded")
#: Upper bound on attention scores (windows x heads x len x len) per call. Only the math fallback kernel
#: materialises them; the bound keeps that fallback near stock's memory use (stock: one image per call).
DEFAULT_MAX_SCORES_PER_CALL = 1 << 28

_STOCK_FORWARD = "_lmms_spatial_stock_forward"
_TOWER_STATE = "_lmms_spatial_batched_attention"
_HANDLED_IMPLEMENTATIONS = (None, "sdpa", "eager")


@dataclass(frozen=True)
class PatchReport:
    """What :func:`patch_qwen2_5_vl_vision_attention` did: ``patched`` blocks, and why not more in ``reason``."""

    patched: int
    reason: str
    mode: str = ""

    def __bool__(self) -> bool:
        return self.patched > 0


# ---------------------------------------------------------------------------------------------------------------
# The plan: how packed segments become batched calls, and back
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionGroup:
    """``count`` segments attended as one batch of rows ``length`` long.

    ``rows`` are ``[count, length]`` packed token positions to gather (padding repeats the segment's first token),
    or ``None`` when the group is the contiguous packed range ``span`` (no gather, a view). ``key_mask`` is
    ``[count, 1, 1, length]`` (True = real key) or ``None`` when nothing is padded.
    """

    count: int
    length: int
    rows: torch.Tensor | None
    span: tuple[int, int] | None
    key_mask: torch.Tensor | None


@dataclass(frozen=True)
class AttentionPlan:
    """Groups in output order, and ``take``: for each packed token, its row in the groups' concatenated output.

    ``take`` is ``None`` when that concatenation already is the packed order (one unpadded contiguous group).
    """

    total: int
    groups: tuple[AttentionGroup, ...]
    take: torch.Tensor | None


def build_attention_plan(
    cu_seqlens: Sequence[int], mode: str = "grouped", device: torch.device | str | None = None
) -> AttentionPlan:
    """Group the segments ``[cu[i], cu[i+1])`` for batched attention (``grouped``: by equal length; ``padded``: one).

    Empty segments are skipped (stock attends nothing there either). Built on the host from a list, then the few
    index tensors are moved to ``device`` in one go per tensor.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    cu = [int(x) for x in cu_seqlens]
    if len(cu) < 2 or cu[0] != 0 or any(b < a for a, b in pairwise(cu)):
        raise ValueError(f"cu_seqlens must start at 0 and not decrease, got {cu[:8]}...")
    segments = [(start, stop - start) for start, stop in pairwise(cu) if stop > start]
    total = cu[-1]
    if not segments:
        return AttentionPlan(0, (), None)

    if mode == "padded":
        longest = max(length for _, length in segments)
        buckets: dict[int, list[tuple[int, int]]] = {longest: segments}
    else:
        buckets = {}
        for segment in segments:
            buckets.setdefault(segment[1], []).append(segment)

    groups: list[AttentionGroup] = []
    # take[token] = (offset of the token's segment row in the concatenated output) - segment start + token
    row_shift = torch.empty(len(segments), dtype=torch.long)
    seg_order = {start: i for i, (start, _) in enumerate(segments)}
    offset = 0
    for length, members in buckets.items():
        starts = torch.tensor([s for s, _ in members], dtype=torch.long)
        lengths = torch.tensor([n for _, n in members], dtype=torch.long)
        columns = torch.arange(length, dtype=torch.long)
        valid = columns[None, :] < lengths[:, None]
        padded = not bool(valid.all())
        contiguous = not padded and all(b[0] == a[0] + length for a, b in pairwise(members))
        if contiguous:
            rows, span = None, (members[0][0], members[0][0] + len(members) * length)
        else:
            rows = torch.where(valid, starts[:, None] + columns[None, :], starts[:, None])
            span = None
        key_mask = valid[:, None, None, :] if padded else None
        for rank, (start, _) in enumerate(members):
            row_shift[seg_order[start]] = offset + rank * length - start
        groups.append(AttentionGroup(len(members), length, rows, span, key_mask))
        offset += len(members) * length

    take: torch.Tensor | None = None
    if offset != total or not bool((row_shift == 0).all()):  # else the groups' output already is packed order
        seg_lengths = torch.tensor([n for _, n in segments], dtype=torch.long)
        take = torch.repeat_interleave(row_shift, seg_lengths) + torch.arange(total, dtype=torch.long)
    if device is not None:
        device = torch.device(device)
        groups = [
            AttentionGroup(
                g.count,
                g.length,
                None if g.rows is None else g.rows.to(device),
                g.span,
                None if g.key_mask is None else g.key_mask.to(device),
            )
            for g in groups
        ]
        take = None if take is None else take.to(device)
    return AttentionPlan(total, tuple(groups), take)


def attend_by_plan(
    plan: AttentionPlan,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    scale: float,
    max_scores_per_call: int = DEFAULT_MAX_SCORES_PER_CALL,
) -> torch.Tensor:
    """Attention within each segment for packed ``[tokens, heads, head_dim]`` q/k/v; returns the same layout."""
    heads = query.shape[1]
    if not plan.groups:
        return value[:0]
    outputs: list[torch.Tensor] = []
    for group in plan.groups:
        if group.span is not None:
            lo, hi = group.span
            shape = (group.count, group.length, heads, query.shape[-1])
            q, k, v = (t[lo:hi].view(shape) for t in (query, key, value))
        else:
            q, k, v = query[group.rows], key[group.rows], value[group.rows]
        per_call = max(1, max_scores_per_call // (heads * group.length * group.length))
        for first in range(0, group.count, per_call):
            last = min(first + per_call, group.count)
            mask = None if group.key_mask is None else group.key_mask[first:last]
            out = F.scaled_dot_product_attention(
                q[first:last].transpose(1, 2),
                k[first:last].transpose(1, 2),
                v[first:last].transpose(1, 2),
                attn_mask=mask,
                dropout_p=0.0,
                is_causal=False,
                scale=scale,
            )
            outputs.append(out.transpose(1, 2).reshape(-1, heads, out.shape[-1]))
    packed = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=0)
    return packed if plan.take is None else packed.index_select(0, plan.take)


# ---------------------------------------------------------------------------------------------------------------
# Installing it on a model
# ---------------------------------------------------------------------------------------------------------------


class _PlanCache:
    """Plans of the current tower forward: by ``cu_seqlens`` object (no device sync), else by its values."""

    def __init__(self, mode: str, max_entries: int = 8) -> None:
        self.mode = mode
        self.max_entries = max_entries
        self.by_object: list[tuple[torch.Tensor, AttentionPlan]] = []
        self.by_value: OrderedDict[tuple, AttentionPlan] = OrderedDict()
        self.builds = 0  # how many plans were built (tests: once per distinct cu_seqlens per forward)

    def clear(self, *_args: Any, **_kwargs: Any) -> None:
        self.by_object.clear()
        self.by_value.clear()

    def plan_for(self, cu_seqlens: torch.Tensor) -> AttentionPlan:
        for tensor, plan in self.by_object:
            if tensor is cu_seqlens:
                return plan
        values = tuple(cu_seqlens.tolist())
        key = (values, str(cu_seqlens.device))
        plan = self.by_value.get(key)
        if plan is None:
            plan = build_attention_plan(values, self.mode, cu_seqlens.device)
            self.builds += 1
            self.by_value[key] = plan
            while len(self.by_value) > self.max_entries:
                self.by_value.popitem(last=False)
        # holding the tensor keeps its id from being reused while the entry lives
        self.by_object.append((cu_seqlens, plan))
        del self.by_object[: -self.max_entries]
        return plan


@dataclass
class _TowerState:
    cache: _PlanCache
    handles: list[Any]
    max_scores_per_call: int


def _find_vision_tower(model: nn.Module) -> nn.Module | None:
    """The Qwen2.5-VL vision transformer: ``model.visual``, ``model.model.visual``, or ``model`` itself.

    A ``DistributedDataParallel``-style wrapper (``.module``) is looked through once.
    """
    inner = getattr(model, "module", None)
    if isinstance(inner, nn.Module) and not isinstance(getattr(model, "blocks", None), nn.ModuleList):
        model = inner
    candidates = [getattr(model, "visual", None), getattr(getattr(model, "model", None), "visual", None), model]
    for candidate in candidates:
        if isinstance(candidate, nn.Module) and isinstance(getattr(candidate, "blocks", None), nn.ModuleList):
            if hasattr(candidate, "fullatt_block_indexes") or hasattr(candidate, "window_size"):
                return candidate
    return None


def _attention_problem(attn: nn.Module) -> str | None:
    """Why this attention module is not the one this patch was written against (None when it is)."""
    qkv, proj = getattr(attn, "qkv", None), getattr(attn, "proj", None)
    if not isinstance(qkv, nn.Linear) or not isinstance(proj, nn.Linear):
        return f"{type(attn).__name__} has no qkv/proj linear layers"
    heads = getattr(attn, "num_heads", None)
    if not isinstance(heads, int) or heads <= 0 or qkv.out_features != 3 * qkv.in_features:
        return f"{type(attn).__name__} has no usable num_heads or a qkv that is not 3 x hidden"
    if qkv.in_features % heads:
        return f"{type(attn).__name__}: hidden size {qkv.in_features} not divisible by {heads} heads"
    try:
        parameters = inspect.signature(type(attn).forward).parameters
    except (TypeError, ValueError):
        return f"cannot read the signature of {type(attn).__name__}.forward"
    if not {"hidden_states", "cu_seqlens", "position_embeddings"} <= set(parameters):
        return f"{type(attn).__name__}.forward takes {list(parameters)[1:]}, not (hidden_states, cu_seqlens, ...)"
    rotary = getattr(sys.modules.get(type(attn).__module__), "apply_rotary_pos_emb_vision", None)
    if not callable(rotary):
        return f"{type(attn).__module__} has no apply_rotary_pos_emb_vision"
    return None


def _implementation(config: Any) -> str | None:
    value = getattr(config, "_attn_implementation", None)
    return value if value is None or isinstance(value, str) else str(value)


def _batched_forward(
    self: nn.Module,
    hidden_states: torch.Tensor,
    cu_seqlens: torch.Tensor,
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
    *args: Any,
    **kwargs: Any,
) -> torch.Tensor:
    """Stock projections and rotary; attention by the tower's cached plan. Anything unusual goes to stock."""
    stock: Callable[..., torch.Tensor] = getattr(self, _STOCK_FORWARD)
    state: _TowerState = self._lmms_spatial_state
    dropout = float(getattr(self, "attention_dropout", 0.0) or 0.0)
    if (
        args
        or position_embeddings is None
        or _implementation(getattr(self, "config", None)) not in _HANDLED_IMPLEMENTATIONS
        or (self.training and dropout > 0)
        or not isinstance(cu_seqlens, torch.Tensor)
        or cu_seqlens.dim() != 1
        or hidden_states.dim() != 2
    ):
        return stock(hidden_states, cu_seqlens, position_embeddings, *args, **kwargs)
    try:
        plan = state.cache.plan_for(cu_seqlens)
    except ValueError:  # boundaries that do not describe a packed sequence: let stock decide what they mean
        plan = None
    seq_length = hidden_states.shape[0]
    if plan is None or plan.total != seq_length:
        return stock(hidden_states, cu_seqlens, position_embeddings, **kwargs)

    query, key, value = self.qkv(hidden_states).reshape(seq_length, 3, self.num_heads, -1).permute(1, 0, 2, 3).unbind(0)
    cos, sin = position_embeddings
    query, key = self._lmms_spatial_rotary(query, key, cos, sin)
    head_dim = query.shape[-1]
    scale = float(getattr(self, "scaling", head_dim**-0.5))
    out = attend_by_plan(plan, query, key, value, scale, state.max_scores_per_call)
    return self.proj(out.reshape(seq_length, -1).contiguous())


def patch_qwen2_5_vl_vision_attention(
    model: nn.Module, mode: str = "grouped", max_scores_per_call: int = DEFAULT_MAX_SCORES_PER_CALL
) -> PatchReport:
    """Make every vision block of a Qwen2.5-VL model attend by batched calls; returns what was patched and why not.

    ``model``: ``Qwen2_5_VLForConditionalGeneration``, ``Qwen2_5_VLModel`` or the vision tower itself. Idempotent;
    undo with :func:`unpatch_qwen2_5_vl_vision_attention`. Nothing is patched (``patched == 0``) when the tower
    uses flash attention (already one varlen call per block) or an implementation other than sdpa/eager, or when
    its layout is not the expected one; ``reason`` says which.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    tower = _find_vision_tower(model)
    if tower is None:
        return PatchReport(0, f"no Qwen2.5-VL vision tower (visual.blocks) found on {type(model).__name__}")
    implementation = _implementation(getattr(tower, "config", None))
    if implementation is not None and "flash" in implementation:
        return PatchReport(0, f"left alone: attention is {implementation!r}, already one varlen call per block")
    if implementation not in _HANDLED_IMPLEMENTATIONS:
        return PatchReport(0, f"left alone: attention implementation {implementation!r} is not sdpa or eager")
    existing: _TowerState | None = getattr(tower, _TOWER_STATE, None)
    if existing is not None:
        count = sum(1 for block in tower.blocks if _STOCK_FORWARD in vars(getattr(block, "attn", nn.Module())))
        return PatchReport(count, "already patched", existing.cache.mode)
    attentions = [getattr(block, "attn", None) for block in tower.blocks]
    for index, attn in enumerate(attentions):
        if not isinstance(attn, nn.Module):
            return PatchReport(0, f"vision block {index} has no attn module; nothing patched")
        problem = _attention_problem(attn)
        if problem is not None:
            return PatchReport(0, f"unexpected layout, nothing patched: {problem}")
        if "forward" in vars(attn):  # replacing someone else's wrapper would silently drop what it does
            return PatchReport(
                0, f"vision block {index}'s attention forward is already wrapped (a hook?); nothing patched"
            )

    cache = _PlanCache(mode)
    handles = [tower.register_forward_pre_hook(cache.clear), tower.register_forward_hook(cache.clear)]
    state = _TowerState(cache, handles, max_scores_per_call)
    setattr(tower, _TOWER_STATE, state)
    for attn in attentions:
        rotary = sys.modules[type(attn).__module__].apply_rotary_pos_emb_vision
        attn.__dict__[_STOCK_FORWARD] = attn.forward  # the bound class method
        attn.__dict__["_lmms_spatial_state"] = state
        attn.__dict__["_lmms_spatial_rotary"] = rotary
        attn.__dict__["forward"] = MethodType(_batched_forward, attn)
    stock = implementation or "default"
    windows = "one call per window length" if mode == "grouped" else "one padded call with a key mask"
    return PatchReport(len(attentions), f"{mode}: {windows} per block (stock implementation {stock!r})", mode)


def unpatch_qwen2_5_vl_vision_attention(model: nn.Module) -> int:
    """Restore the stock vision attention; returns how many blocks were restored (0 when none was patched)."""
    tower = _find_vision_tower(model)
    if tower is None:
        return 0
    state: _TowerState | None = tower.__dict__.pop(_TOWER_STATE, None)
    if state is not None:
        for handle in state.handles:
            handle.remove()
        state.cache.clear()
    restored = 0
    for block in tower.blocks:
        attn = getattr(block, "attn", None)
        if isinstance(attn, nn.Module) and _STOCK_FORWARD in attn.__dict__:
            for name in ("forward", _STOCK_FORWARD, "_lmms_spatial_state", "_lmms_spatial_rotary"):
                attn.__dict__.pop(name, None)
            restored += 1
    return restored


@contextlib.contextmanager
def batched_vision_attention(model: nn.Module, mode: str = "grouped") -> Iterator[PatchReport]:
    """``with batched_vision_attention(model) as report:`` patched inside, stock again after (if we patched it)."""
    tower = _find_vision_tower(model)
    already = tower is not None and getattr(tower, _TOWER_STATE, None) is not None
    report = patch_qwen2_5_vl_vision_attention(model, mode=mode)
    try:
        yield report
    finally:
        if report.patched and not already:
            unpatch_qwen2_5_vl_vision_attention(model)


# ---------------------------------------------------------------------------------------------------------------
# Benchmark: stock vs patched vision tower at the 7B architecture, random weights
# ---------------------------------------------------------------------------------------------------------------

#: Qwen2.5-VL-7B-Instruct's vision_config: transformers' Qwen2_5_VLVisionConfig defaults except hidden_size
#: (the default there is 3584; the released 7B tower is 1280 wide with a 5120 -> 3584 merger). One copy, with
#: the text part, in lmms_spatial.models.qwen2_5_vl_architecture; lmms-eval 0.7.3's pixel bounds likewise.
QWEN2_5_VL_7B_VISION = QWEN2_5_VL_7B["vision_config"]


def image_grid(
    width: int,
    height: int,
    patch_size: int = 14,
    merge_size: int = 2,
    min_pixels: int = LMMS_EVAL_MIN_PIXELS,
    max_pixels: int = LMMS_EVAL_MAX_PIXELS,
) -> tuple[int, int, int]:
    """``(t, h, w)`` patch grid the Qwen2-VL processor gives one image under lmms-eval's pixel bounds."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize

    factor = patch_size * merge_size
    resized_height, resized_width = smart_resize(
        height, width, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels
    )
    return 1, resized_height // patch_size, resized_width // patch_size


def build_vision_tower(
    overrides: dict[str, Any] | None = None,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
    seed: int = 0,
    attn_implementation: str = "sdpa",
) -> nn.Module:
    """Random-weight ``Qwen2_5_VisionTransformerPretrainedModel`` (7B architecture unless overridden)."""
    from transformers import Qwen2_5_VLConfig
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VisionTransformerPretrainedModel

    vision = {**QWEN2_5_VL_7B_VISION, **(overrides or {})}
    config = Qwen2_5_VLConfig(vision_config=vision).vision_config
    config._attn_implementation = attn_implementation
    try:  # transformers' own init is ~5x slower than drawing the numbers; the values need only be random
        from transformers.initialization import no_init_weights
    except ImportError:  # pragma: no cover - older layouts: let transformers initialise
        no_init_weights = contextlib.nullcontext
    with torch.device(device), no_init_weights():
        tower = Qwen2_5_VisionTransformerPretrainedModel._from_config(config, dtype=dtype)
    generator = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, parameter in tower.named_parameters():
            if "norm" in name or "ln_q" in name:  # RMSNorm scales start at one, as in transformers' init
                parameter.fill_(1.0)
            else:  # weights and biases: N(0, initializer_range), biases too so that they take part
                parameter.normal_(0.0, config.initializer_range, generator=generator)
    return tower.eval()


def random_pixels(tower: nn.Module, grids: Sequence[tuple[int, int, int]], seed: int = 0) -> torch.Tensor:
    """Flattened patches as the processor emits them: ``[sum(t*h*w), channels*temporal*patch*patch]``."""
    config = tower.config
    width = config.in_channels * config.temporal_patch_size * config.patch_size**2
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(sum(t * h * w for t, h, w in grids), width, generator=generator)


def _vision_output(tower: nn.Module, pixels: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
    out = tower(pixels, grid_thw=grid_thw)
    return out.pooler_output if hasattr(out, "pooler_output") else out


def _timed(
    fn: Callable[[], torch.Tensor], device: torch.device, repeat: int, warmup: int = 1
) -> tuple[float, torch.Tensor]:
    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(warmup):  # kernel selection, allocator
        fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        sync()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2] * 1000, result


def bench(
    scenarios: Sequence[Sequence[tuple[int, int]]],
    device: str = "cpu",
    dtype: str = "float32",
    depth: int | None = None,
    repeat: int = 3,
    modes: Sequence[str] = MODES,
    warmup: int = 1,
) -> list[dict[str, Any]]:
    """Median ms of the stock and patched vision tower per scenario (a list of (width, height) images)."""
    torch_dtype = getattr(torch, dtype)
    overrides: dict[str, Any] = {}
    if depth is not None:  # same block shape, fewer blocks: every 8th block (and the last) full attention
        overrides = {"depth": depth, "fullatt_block_indexes": sorted({*range(7, depth, 8), depth - 1})}
    tower = build_vision_tower(overrides, torch_dtype, device)
    device_ = torch.device(device)
    rows = []
    for images in scenarios:
        grids = [image_grid(w, h) for w, h in images]
        pixels = random_pixels(tower, grids).to(device_, torch_dtype)
        grid_thw = torch.tensor(grids, device=device_)
        forward = functools.partial(_vision_output, tower, pixels, grid_thw)
        with torch.inference_mode():
            stock_ms, stock_out = _timed(forward, device_, repeat, warmup)
            row: dict[str, Any] = {
                "images": "+".join(f"{w}x{h}" for w, h in images),
                "patches": int(pixels.shape[0]),
                "stock_ms": round(stock_ms, 1),
            }
            for mode in modes:
                with batched_vision_attention(tower, mode=mode) as report:
                    if not report.patched:
                        raise RuntimeError(f"not patched: {report.reason}")
                    ms, out = _timed(forward, device_, repeat, warmup)
                row[f"{mode}_ms"] = round(ms, 1)
                row[f"{mode}_speedup"] = round(stock_ms / ms, 2)
                row[f"{mode}_max_abs_diff"] = float((out.float() - stock_out.float()).abs().max())
            row["output_max_abs"] = float(stock_out.float().abs().max())
        rows.append(row)
    return rows


def window_cu_seqlens(
    grids: Sequence[tuple[int, int, int]], window_size: int = 112, patch_size: int = 14, merge_size: int = 2
) -> list[int]:
    """Window boundaries in the tower's packed order: per image and frame, windows row by row.

    The same boundaries as transformers' ``get_vision_window_index`` (tests check it), computed here so that the
    attention-only benchmark does not depend on where a given transformers version keeps that function.
    """
    units = window_size // merge_size // patch_size  # window side in merged units
    cu = [0]
    for frames, height, width in grids:
        rows, columns = height // merge_size, width // merge_size
        for _ in range(frames):
            for top in range(0, rows, units):
                for left in range(0, columns, units):
                    cu.append(cu[-1] + min(units, rows - top) * min(units, columns - left) * merge_size**2)
    return cu


def bench_attention(
    scenarios: Sequence[Sequence[tuple[int, int]]],
    device: str = "cpu",
    dtype: str = "float32",
    repeat: int = 3,
    modes: Sequence[str] = MODES,
    warmup: int = 1,
) -> list[dict[str, Any]]:
    """Median ms of ONE block's attention (7B width), stock vs patched, for a window block and a full block.

    The MLPs and projections that dominate a CPU forward are left out, so this isolates what the patch changes.
    Patched times reuse the block's plan, as blocks 2..32 of a forward do; ``plan_ms`` is building it (once per
    forward per kind of block).
    """
    torch_dtype, device_ = getattr(torch, dtype), torch.device(device)
    tower = build_vision_tower({"depth": 1, "fullatt_block_indexes": []}, torch_dtype, device)
    attn = tower.blocks[0].attn
    config = tower.config
    rows = []
    for images in scenarios:
        grids = [image_grid(w, h) for w, h in images]
        total = sum(t * h * w for t, h, w in grids)
        generator = torch.Generator().manual_seed(0)
        hidden = torch.randn(total, config.hidden_size, generator=generator).to(device_, torch_dtype)
        angles = torch.randn(total, attn.head_dim, generator=generator).to(device_)
        position_embeddings = (angles.cos(), angles.sin())
        full = [0]
        for t, h, w in grids:
            full.extend(full[-1] + h * w * (i + 1) for i in range(t))
        kinds = {"window": window_cu_seqlens(grids, config.window_size, config.patch_size), "full": full}
        row: dict[str, Any] = {"images": "+".join(f"{w}x{h}" for w, h in images), "patches": total}
        with torch.inference_mode():
            for kind, cu in kinds.items():
                cu_seqlens = torch.tensor(cu, dtype=torch.int32, device=device_)
                call = functools.partial(attn, hidden, cu_seqlens=cu_seqlens, position_embeddings=position_embeddings)
                stock_ms, stock_out = _timed(call, device_, repeat, warmup)
                row[f"{kind}_windows" if kind == "window" else f"{kind}_images"] = len(cu) - 1
                row[f"{kind}_stock_ms"] = round(stock_ms, 2)
                for mode in modes:
                    with batched_vision_attention(tower, mode=mode):
                        state: _TowerState = getattr(tower, _TOWER_STATE)
                        start = time.perf_counter()
                        state.cache.plan_for(cu_seqlens)
                        row[f"{kind}_{mode}_plan_ms"] = round((time.perf_counter() - start) * 1000, 2)
                        ms, out = _timed(call, device_, repeat, warmup)
                    row[f"{kind}_{mode}_ms"] = round(ms, 2)
                    row[f"{kind}_{mode}_speedup"] = round(stock_ms / ms, 2)
                    row[f"{kind}_{mode}_max_abs_diff"] = float((out.float() - stock_out.float()).abs().max())
        rows.append(row)
    return rows


def _parse_scenario(text: str) -> list[tuple[int, int]]:
    images = []
    for part in text.split(","):
        width, height = part.lower().split("x")
        images.append((int(width), int(height)))
    return images


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lmms_spatial.models.vision_attention",
        description="Time the Qwen2.5-VL vision tower (7B architecture, random weights), stock vs batched attention.",
    )
    parser.add_argument("--bench", action="store_true", help="run the benchmark (the only action)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    parser.add_argument(
        "--images",
        action="append",
        help="one scenario: comma-separated WxH images in one forward (repeatable); "
        "default: 1280x960 and 1280x960,1280x960",
    )
    parser.add_argument(
        "--part",
        choices=["tower", "attention"],
        default="tower",
        help="tower: whole vision forward; attention: one block's attention (window and full) alone",
    )
    parser.add_argument("--depth", type=int, default=None, help="fewer blocks than 32 (quick CPU runs)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (median reported)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs before them")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {MODES}")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    args = parser.parse_args(argv)
    if not args.bench:
        parser.print_help()
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    scenarios = [_parse_scenario(s) for s in (args.images or ["1280x960", "1280x960,1280x960"])]
    modes = [m for m in args.modes.split(",") if m]
    if args.part == "attention":
        rows = bench_attention(scenarios, args.device, args.dtype, args.repeat, modes, args.warmup)
        header = f"one block's attention: device={args.device} dtype={args.dtype} torch={torch.__version__}"
    else:
        rows = bench(scenarios, args.device, args.dtype, args.depth, args.repeat, modes, args.warmup)
        header = (
            f"vision tower: device={args.device} dtype={args.dtype} depth={args.depth or 32} torch={torch.__version__}"
        )
    import transformers

    header += f" transformers={transformers.__version__}"
    if torch.device(args.device).type == "cuda":
        header += f" gpu={torch.cuda.get_device_name(torch.device(args.device))}"
    print(header)
    for row in rows:
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
