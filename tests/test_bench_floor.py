"""The compute floor that `lmms-spatial bench --runners` divides each runner's time by."""

from __future__ import annotations

import argparse
import math

import pytest

from lmms_spatial.bench.floor import Floor, ParamSplit, floor_of, mean_floor, split_parameters
from lmms_spatial.bench.runners import marginal_counters, runner_table
from lmms_spatial.models.fast_inputs import smart_resize  # qwen-vl-utils' resize, copied once


class _P:
    def __init__(self, n: int) -> None:
        self.n = n

    def numel(self) -> int:
        return self.n


def test_a_1280x960_image_is_resized_to_the_nearest_multiples_of_28_within_the_budget():
    # 960 / 28 = 34.3 -> 34 * 28 = 952; 1280 / 28 = 45.7 -> 46 * 28 = 1288; 952 * 1288 = 1,226,176 <= 1,605,632
    assert smart_resize(960, 1280, 28, 256 * 28 * 28, 1605632) == (952, 1288)


def test_an_image_over_the_pixel_budget_is_scaled_down_keeping_its_aspect():
    # 12000 x 6000 into 1,605,632 px: beta = sqrt(72e6 / 1605632) = 6.696; 6000 / 6.696 / 28 = 32.0 -> 32 * 28 = 896,
    # 12000 / 6.696 / 28 = 64.0 -> 64 * 28 = 1792 (floors), 896 * 1792 = 1,605,632
    h, w = smart_resize(6000, 12000, 28, 4 * 28 * 28, 1605632)
    assert (h, w) == (896, 1792)
    assert h * w <= 1605632


def test_an_image_under_the_pixel_budget_is_scaled_up():
    # 56 x 56 = 3136 px with min 4 * 3136: beta = 2, 56 * 2 / 28 = 4 -> 112 x 112
    assert smart_resize(56, 56, 28, 4 * 3136, 16384 * 28 * 28) == (112, 112)


@pytest.mark.parametrize("size", [(960, 1280), (512, 1024), (6000, 12000), (37, 91), (1080, 1920), (3000, 200)])
def test_smart_resize_agrees_with_qwen_vl_utils(size):
    qwen_vl_utils = pytest.importorskip("qwen_vl_utils")
    h, w = size
    ours = smart_resize(h, w, 28, 256 * 28 * 28, 1605632)
    assert ours == tuple(qwen_vl_utils.smart_resize(h, w, factor=28, min_pixels=256 * 28 * 28, max_pixels=1605632))


def test_patches_of_a_1280x960_image_are_its_14_pixel_cells_after_resizing():
    # (952 / 14) * (1288 / 14) = 68 * 92
    h, w = smart_resize(960, 1280, 28, 256 * 28 * 28, 1605632)
    assert (h // 14) * (w // 14) == 6256


def test_parameters_split_into_llm_blocks_and_vision_tower_without_embeddings_or_head():
    named = [
        ("model.visual.blocks.0.attn.qkv.weight", _P(10)),
        ("model.visual.merger.mlp.0.weight", _P(5)),
        ("model.language_model.embed_tokens.weight", _P(100)),
        ("lm_head.weight", _P(100)),
        ("model.language_model.layers.0.mlp.up_proj.weight", _P(7)),
        ("model.language_model.norm.weight", _P(2)),
    ]
    assert split_parameters(named) == ParamSplit(llm=9, vision=15)


def test_floor_of_issue_18s_mmsi_document_is_59_9_tflop_and_76_ms_at_790_tflops():
    # 2 * (6.53e9 * 3261 + 0.68e9 * 12696) = 2 * (21294.33e9 + 8633.28e9) = 59855.22e9 FLOP
    floor = floor_of(ParamSplit(llm=6_530_000_000, vision=680_000_000), tokens=3261, patches=12696)
    assert floor.flops == pytest.approx(59_855.22e9)
    assert floor.ms == pytest.approx(59_855.22e9 / 790e12 * 1000)  # 75.77 ms
    assert round(floor.ms) == 76


def test_mean_floor_averages_tokens_and_patches_over_documents():
    floor = mean_floor(ParamSplit(llm=10, vision=3), [(100, 40), (300, 0)], peak_tflops=1.0)
    # tokens 200, patches 20: 2 * 10 * 200 + 2 * 3 * 20 = 4120 FLOP
    assert (floor.tokens, floor.patches, floor.flops) == (200, 20, 4120)


def test_mean_floor_of_no_documents_is_refused():
    with pytest.raises(ValueError, match="no documents"):
        mean_floor(ParamSplit(llm=1, vision=1), [])


def test_the_7b_architecture_has_qwen2_5_vl_7bs_layer_shapes():
    torch = pytest.importorskip("torch")
    from transformers import Qwen2_5_VLForConditionalGeneration

    from lmms_spatial.bench.checkpoints import build_qwen_tokenizer, qwen2_5_vl_config

    with torch.device("meta"):
        model = Qwen2_5_VLForConditionalGeneration(qwen2_5_vl_config("7b", build_qwen_tokenizer()))
    split = split_parameters(model.named_parameters())
    d, f, kv = 3584, 18944, 4 * 128  # hidden, MLP, key/value width (4 heads of 128)
    attention = d * d + d + 2 * (d * kv + kv) + d * d  # q (bias), k and v (bias), o (no bias)
    layer = attention + 3 * d * f + 2 * d  # gate, up, down; two RMSNorms
    assert split.llm == 28 * layer + d  # + the final norm
    v, vf, out = 1280, 3420, 3584
    block = 2 * v + (v * 3 * v + 3 * v) + (v * v + v) + 2 * (v * vf + vf) + (vf * v + v)
    merger = v + (4 * v * 4 * v + 4 * v) + (4 * v * out + out)  # ln_q, then 2x2 merged patches through an MLP
    assert split.vision == 3 * 2 * 14 * 14 * v + 32 * block + merger
    assert math.isclose(split.llm / 1e9, 6.53, abs_tol=0.005) and math.isclose(split.vision / 1e9, 0.68, abs_tol=0.005)


def test_counters_of_the_extra_documents_cancel_fixed_costs():
    first = {"docs": 8, "wait_ms": 40.0, "prep_ms": 800.0, "generate_ms": 1000.0}
    second = {"docs": 16, "wait_ms": 56.0, "prep_ms": 1600.0, "generate_ms": 2600.0}
    assert marginal_counters(first, second) == {"generate_ms": 200.0, "prep_ms": 100.0, "wait_ms": 2.0}


def test_counters_are_none_when_the_longer_run_added_no_document():
    assert marginal_counters({"docs": 8, "wait_ms": 1.0}, {"docs": 8, "wait_ms": 2.0}) == {"wait_ms": None}


def test_runner_table_gives_each_runner_its_floor_ratio_and_the_speedup():
    floor = Floor(tokens=3000, patches=0, flops=60e9, peak_tflops=1.0)  # 60e9 FLOP at 1e12 FLOP/s = 60 ms
    runs = {
        "qwen2_5_vl": {"marginal_ms_per_doc": 600.0, "our_cpu_ms_per_marginal_doc": 56.0},
        "fast_vlm": {"marginal_ms_per_doc": 150.0,
                     "counters_ms_per_marginal_doc": {"critical_path_ms": 0.5, "prep_ms": 40.0, "generate_ms": 149.0}},
    }  # fmt: skip
    args = argparse.Namespace(arch="tiny", device="cpu", dtype="float32", attn_implementation="sdpa", batch_size=8,
                              limit=4)  # fmt: skip
    table = runner_table(runs, floor, {}, ParamSplit(llm=10, vision=0), 0.0, args)
    assert floor.ms == pytest.approx(60.0)
    assert table["speedup"] == 4.0  # 600 / 150
    assert table["runners"]["qwen2_5_vl"]["floor_ratio"] == 10.0  # 600 / 60
    assert table["runners"]["fast_vlm"]["floor_ratio"] == 2.5  # 150 / 60
    assert table["runners"]["fast_vlm"]["ours_on_critical_path_ms_per_doc"] == 0.5
    assert table["runners"]["qwen2_5_vl"]["ours_on_critical_path_ms_per_doc"] == 56.0
    assert table["targets"]["floor_ratio_ok"] is True and table["targets"]["speedup_ok"] is True


@pytest.mark.slow  # ~100 s: six lmms-eval runs of the tiny checkpoint (cold, 2L and L for each runner)
def test_runners_section_runs_both_runners_on_a_checkpoint_built_here(offline_env, tmp_path):
    import json

    import forkserver  # tests/forkserver.py: CLI runs as forks of a pre-warmed process

    out = tmp_path / "bench.json"
    args = ["bench", "--only", "tasks", "--runners", "--arch", "tiny", "--device", "cpu", "--tasks", "mmsi_vanilla",
            "--docs", "2", "--limit", "2", "--batch_size", "2", "--gen_kwargs", "max_new_tokens=2", "--min-pixels",
            "3136", "--max-pixels", "12544", "--work", str(tmp_path / "work"), "--json", str(out)]  # fmt: skip
    proc = forkserver.run_module("lmms_spatial.cli", args, offline_env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(out.read_text())["runners"]

    assert (report["arch"], report["dtype"], report["limit"]) == ("tiny", "float32", 2)
    for runner in ("qwen2_5_vl", "fast_vlm"):
        run = report["runs"][runner]
        assert "error" not in run, run.get("error")
        assert run["docs"] == 2 and run["docs_2l"] == 4  # the cold run, then --limit 4 against --limit 2
    floor, params = report["floor"], report["params"]
    assert floor["tokens"] > 0 and floor["patches"] > 0
    assert floor["flops"] == 2 * params["llm"] * floor["tokens"] + 2 * params["vision"] * floor["patches"]
    # fast_vlm's own counters of the cold, 2L and L runs were read: one line per generate_until
    lines = (tmp_path / "work" / "runners" / "fast_vlm" / "runner_stats.jsonl").read_text().splitlines()
    assert [json.loads(line)["docs"] for line in lines] == [2, 4, 2]
    assert set(report["runs"]["fast_vlm"]["counters_ms_per_marginal_doc"]) >= {"critical_path_ms", "generate_ms"}
    assert "## Runners: Qwen2.5-VL tiny" in proc.stdout
