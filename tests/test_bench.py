"""``lmms-spatial bench --tiny``: the harness runs end to end and writes a complete report (not timed)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import forkserver  # tests/forkserver.py: CLI runs as forks of a pre-warmed process
import pytest

from lmms_spatial.cli import build_parser
from lmms_spatial.data.demo import demo_tasks

ROW_KEYS = ("load_s", "row_cpu_ms_per_doc", "visual_cpu_ms_per_doc", "prompt_cpu_ms_per_doc",
            "messages_cpu_ms_per_doc", "score_cpu_ms_per_doc", "our_cpu_ms_per_doc", "peak_rss_mb")  # fmt: skip


def test_bench_is_a_subcommand_and_the_other_subcommands_stay():
    parser = build_parser()
    args = parser.parse_args(["bench", "--tiny", "--json", "x.json"])
    assert args.tiny and args.json == "x.json" and args.func.__name__ == "_cmd_bench"
    assert parser.parse_args(["demo"]).func.__name__ == "_cmd_demo"


@pytest.mark.slow  # ~45 s: builds every demo dataset and runs the harness
def test_tiny_bench_reports_every_demo_task_and_every_section(offline_env, tmp_path):
    out = tmp_path / "bench.json"
    args = ["bench", "--tiny", "--work", str(tmp_path / "work"), "--json", str(out)]
    proc = forkserver.run_module("lmms_spatial.cli", args, offline_env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(out.read_text())

    assert set(report["tasks"]) == set(demo_tasks())
    for task, row in report["tasks"].items():
        for key in ROW_KEYS:
            assert isinstance(row[key], (int, float)) and row[key] >= 0, (task, key)
        assert row["docs_measured"] == 2 and row["n_docs_in_dataset"] >= 1

    odi = report["odi_decode"]
    assert odi["same_size"] and odi["within_tolerance"], odi
    osr = report["osr_scoring"]
    assert {"cogmap_f1", "avg_distance", "chair_i"} <= set(osr["metrics"]["osr_cogmap_standard"])
    assert {"accuracy", "overall", "unparsed_rate"} <= set(osr["metrics"]["osr_qa_standard_vanilla"])
    calls = report["osr_calls"]
    assert (
        calls["ok"] and calls["calls_per_image"] == calls["expected_calls_per_image"] < calls["naive_calls_per_image"]
    )
    assert report["summary"]["osr_calls"]["ok"] and "non_odi_max_cpu_ms_per_doc" in report["summary"]
    assert "per benchmark, our CPU ms/doc" in proc.stdout

    # two reports compare
    proc = forkserver.run_module("lmms_spatial.cli", ["bench", "--compare", str(out), str(out)], offline_env,
                                 timeout=120)  # fmt: skip
    assert proc.returncode == 0 and "mmsi_vanilla" in proc.stdout and " 1.00" in proc.stdout, proc.stderr


# --- steady state: the marginal time per document ------------------------------------------


def test_steady_state_marginal_cancels_start_up_and_weights_ours_by_the_added_documents():
    from lmms_spatial.bench import steady_state

    # task b has 6 documents: --limit 4 gives 4 + 4, --limit 8 gives 8 + 6, so 4 + 2 = 6 documents added
    # in 26 - 20 = 6 s: 1000 ms/doc; ours over the added ones: (2.0 * 4 + 5.0 * 2) / 6 = 3.0 ms = 0.3%
    state = steady_state(20.0, {"a": 4, "b": 4}, 26.0, {"a": 8, "b": 6}, {"a": 2.0, "b": 5.0, "c": 99.0})
    assert state == {
        "docs_2l": 14,
        "marginal_docs": 6,
        "marginal_wall_s": 6.0,
        "marginal_ms_per_doc": 1000.0,
        "our_cpu_ms_per_marginal_doc": 3.0,
        "our_share_of_steady": 0.003,
        "steady_reason": None,
    }
    # 3 docs in 0.75 s: 250 ms/doc; ours 10 ms/doc = 4%
    state = steady_state(10.0, {"a": 3}, 10.75, {"a": 6}, {"a": 10.0})
    assert (state["marginal_ms_per_doc"], state["our_share_of_steady"]) == (250.0, 0.04)


def test_steady_state_without_added_documents_or_growth_reports_none_with_a_reason():
    from lmms_spatial.bench import steady_state

    same = steady_state(12.0, {"a": 2, "b": 3}, 12.5, {"a": 2, "b": 3}, {"a": 1.0, "b": 1.0})
    assert same["marginal_docs"] == 0 and same["marginal_ms_per_doc"] is None and same["our_share_of_steady"] is None
    assert same["steady_reason"].startswith("docs(2L) == docs(L) = 5")

    shrank = steady_state(12.0, {"a": 4}, 11.5, {"a": 8}, {"a": 1.0})
    assert shrank["marginal_wall_s"] == -0.5 and shrank["marginal_ms_per_doc"] is None
    assert shrank["steady_reason"].startswith("wall(2L) <= wall(L)")

    no_cpu = steady_state(10.0, {"a": 4}, 12.0, {"a": 8}, {})  # the tasks section did not run
    assert no_cpu["marginal_ms_per_doc"] == 500.0 and no_cpu["our_share_of_steady"] is None
    assert no_cpu["steady_reason"] == "no CPU figure (tasks section) for a"


def test_steady_runs_need_a_limit_and_skip_when_every_task_ran_out_of_documents(tmp_path):
    import argparse

    from lmms_spatial.bench.end_to_end import _steady_runs

    def steady(limit, docs):  # neither case starts lmms-eval (no command would run: "false")
        return _steady_runs(argparse.Namespace(limit=limit), ["false"], {}, tmp_path, docs, {})

    assert steady(None, {"a": 12})["steady_reason"] == "needs --limit L (runs --limit 2L and --limit L)"
    skipped = steady(4, {"a": 2, "b": 3})
    assert skipped["marginal_ms_per_doc"] is None and skipped["marginal_wall_s"] is None
    assert skipped["steady_reason"].startswith("docs(2L) == docs(L) = 5") and "skipped" in skipped["steady_reason"]
    assert not any(tmp_path.iterdir())


def test_summary_checks_the_steady_share_against_five_percent():
    from lmms_spatial.bench import STEADY_SHARE_BUDGET, format_report
    from lmms_spatial.bench import summary as _summary

    assert STEADY_SHARE_BUDGET == 0.05
    e2e = {"model": "m", "batch_size": 1, "docs": 8, "wall_s": 30.0, "docs_per_s": 0.267, "our_cpu_ms_per_doc": 3.0,
           "our_share_of_wall": 0.0008, "child_peak_rss_mb": 900.0, "steady": True, "limit": 4, "limit_2l": 8,
           "wall_s_l_warm": 29.0, "wall_s_2l": 33.0, "docs_l_warm": 8, "docs_2l": 16, "marginal_docs": 8,
           "marginal_ms_per_doc": 500.0, "our_cpu_ms_per_marginal_doc": 3.0, "our_share_of_steady": 0.006,
           "steady_reason": None}  # fmt: skip
    summary = _summary({"end_to_end": e2e})["end_to_end_steady"]
    assert summary["ok"] is True and summary["budget"] == 0.05 and "7B" in summary["note"]
    text = format_report({"end_to_end": e2e, "meta": {"peak_rss_mb": 1.0}, "summary": {}})
    assert "marginal 500.0 ms/doc over 8 docs" in text and "= 0.600% of it (budget 5%: ok" in text

    over = _summary({"end_to_end": {**e2e, "our_share_of_steady": 0.06}})["end_to_end_steady"]
    assert over["ok"] is False
    none = {**e2e, "marginal_ms_per_doc": None, "our_share_of_steady": None, "steady_reason": "docs(2L) == docs(L) = 8"}
    assert _summary({"end_to_end": none})["end_to_end_steady"] == {
        "our_share_of_steady": None,
        "marginal_ms_per_doc": None,
        "budget": 0.05,
        "ok": None,
        "note": "docs(2L) == docs(L) = 8",
    }
    assert "no share: docs(2L) == docs(L) = 8" in format_report(
        {"end_to_end": none, "meta": {"peak_rss_mb": 1.0}, "summary": {}}
    )


def test_bench_flags_steady_and_image_size():
    parser = build_parser()
    args = parser.parse_args(["bench", "--model", "m", "--limit", "4"])
    assert args.steady is True and args.image_size == "demo"
    args = parser.parse_args(["bench", "--no-steady", "--image-size", "real"])
    assert args.steady is False and args.image_size == "real"
    with pytest.raises(SystemExit):
        parser.parse_args(["bench", "--image-size", "huge"])


def test_real_image_size_refuses_env_data(capsys):
    from lmms_spatial.bench import main

    assert main(["--image-size", "real", "--use-env-data", "--only", "tasks"]) == 2
    assert "--image-size real re-encodes the demo fixtures" in capsys.readouterr().err


# --- real-size copies of the demo data -----------------------------------------------------


def _encoded(size: tuple[int, int], fmt: str, colour=(120, 80, 200)) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, colour)
    ImageDraw.Draw(image).rectangle((2, 2, size[0] // 2, size[1] // 2), fill=(250, 250, 0))
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def _tiny_parquet(path: Path) -> Path:
    """Three rows: a single PNG/JPEG column and a list column (landscape, portrait, repeated images)."""
    import datasets

    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "image": datasets.Image(),
            "images": datasets.Sequence(datasets.Image()),
            "answer": datasets.Value("string"),
        }
    )
    png, jpeg, portrait = _encoded((32, 16), "PNG"), _encoded((24, 12), "JPEG"), _encoded((12, 20), "PNG")
    rows = {
        "id": ["r0", "r1", "r2"],
        "image": [{"bytes": png, "path": None}, {"bytes": jpeg, "path": "x.jpg"}, {"bytes": png, "path": None}],
        "images": [
            [{"bytes": portrait, "path": None}, {"bytes": jpeg, "path": None}],
            [],
            [{"bytes": png, "path": None}],
        ],
        "answer": ["A", "B", "C"],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(rows, features=features).to_parquet(str(path))
    return path


def _images_of(path: Path) -> list[tuple[str, tuple[int, int], str, bytes]]:
    import pyarrow.parquet as pq
    from PIL import Image

    table = pq.read_table(path)
    out = []
    for row in table.to_pylist():
        for value in [row["image"], *row["images"]]:
            with Image.open(io.BytesIO(value["bytes"])) as image:
                out.append((image.format, image.size, image.mode, value["bytes"]))
    return out


def test_real_size_copy_keeps_format_schema_rows_and_is_deterministic(tmp_path):
    import pyarrow.parquet as pq

    from lmms_spatial.bench.real_images import copy_folder

    src = _tiny_parquet(tmp_path / "src" / "standard" / "test.parquet")
    (tmp_path / "src" / "README.md").write_text("card")
    first = copy_folder(tmp_path / "src", tmp_path / "a", (64, 40))
    second = copy_folder(tmp_path / "src", tmp_path / "b", (64, 40))
    dst = tmp_path / "a" / "standard" / "test.parquet"

    # same schema, features metadata included, same rows, other files copied
    assert pq.read_schema(dst).equals(pq.read_schema(src), check_metadata=True)
    assert pq.read_table(dst).drop(["image", "images"]).equals(pq.read_table(src).drop(["image", "images"]))
    assert pq.read_table(dst)["image"].to_pylist()[1]["path"] == "x.jpg"
    assert (tmp_path / "a" / "README.md").read_text() == "card"

    # every image at the requested size (portrait: transposed), in its own format and mode
    got = [(fmt, size, mode) for fmt, size, mode, _ in _images_of(dst)]
    assert got == [
        ("PNG", (64, 40), "RGB"),  # r0 image
        ("PNG", (40, 64), "RGB"),  # r0 images: the portrait one
        ("JPEG", (64, 40), "RGB"),
        ("JPEG", (64, 40), "RGB"),  # r1 image
        ("PNG", (64, 40), "RGB"),  # r2 image (same source as r0)
        ("PNG", (64, 40), "RGB"),
    ]
    images = _images_of(dst)
    assert images[0][3] == images[4][3] == images[5][3]  # one source image, one output image
    assert first["rows"] == 3 and first["images"] == 6 and first["distinct_images"] == 3
    assert first["formats"] == {"PNG": 4, "JPEG": 2} and first["sizes"] == {"64x40": 5, "40x64": 1}
    assert first["source_sizes"] == {"32x16": 3, "12x20": 1, "24x12": 2}

    # deterministic: byte-identical parquet files from two calls
    assert dst.read_bytes() == (tmp_path / "b" / "standard" / "test.parquet").read_bytes()
    assert {k: v for k, v in first.items() if k not in ("build_s", "mean_decode_cpu_ms")} == {
        k: v for k, v in second.items() if k not in ("build_s", "mean_decode_cpu_ms")
    }


def test_real_size_noise_gives_photo_like_png_sizes():
    import numpy as np
    from PIL import Image

    from lmms_spatial.bench.real_images import NOISE_CHROMA, NOISE_LUMA, realistic_image

    flat = _encoded((256, 128), "PNG")
    out = realistic_image(flat, (1024, 512))
    assert out == realistic_image(flat, (1024, 512))  # seeded by the source bytes
    assert out != realistic_image(_encoded((256, 128), "PNG", colour=(121, 80, 200)), (1024, 512))
    with Image.open(io.BytesIO(out)) as image:
        assert (image.format, image.size) == ("PNG", (1024, 512))
        pixels = np.asarray(image, dtype=np.int16)
    # a flat region of the source stays within the noise amplitude of its colour, and is not flat
    region = pixels[300:500, 700:1000] - np.array([120, 80, 200])
    assert np.abs(region).max() <= NOISE_LUMA + NOISE_CHROMA + 1 and region.std() > 1.0
    assert 0.5 * 2**20 <= len(out) <= 1.5 * 2**20, len(out)  # a 1024 x 512 PNG photo: ~0.5-1.5 MB


def test_real_size_data_maps_env_vars_and_keeps_unsized_benchmarks(tmp_path):
    from lmms_spatial.bench.real_images import REAL_IMAGE_SIZES, real_size_data

    assert REAL_IMAGE_SIZES["osr_bench"] == (1024, 512) and REAL_IMAGE_SIZES["odi_bench"] is None
    osr = tmp_path / "osr_bench"
    _tiny_parquet(osr / "standard" / "test.parquet")
    mmsi = _tiny_parquet(tmp_path / "mmsi" / "test.parquet")  # a single file, as the variable may name
    odi = tmp_path / "odi_bench"
    _tiny_parquet(odi / "test.parquet")
    env = {"LMMS_SPATIAL_OSR_PATH": str(osr), "LMMS_SPATIAL_MMSI_PATH": str(mmsi), "LMMS_SPATIAL_ODI_PATH": str(odi)}
    new_env, report = real_size_data(env, tmp_path / "real", sizes={"osr_bench": (48, 24), "mmsi": (30, 20)})
    assert new_env == {
        "LMMS_SPATIAL_OSR_PATH": str(tmp_path / "real" / "osr_bench"),
        "LMMS_SPATIAL_MMSI_PATH": str(tmp_path / "real" / "mmsi" / "test.parquet"),
        "LMMS_SPATIAL_ODI_PATH": str(odi),  # no size: kept
    }
    assert report["osr_bench"]["size"] == [48, 24] and report["osr_bench"]["sizes"] == {"48x24": 5, "24x48": 1}
    assert report["mmsi"]["sizes"] == {"30x20": 5, "20x30": 1}
    assert report["odi_bench"]["kept"] and report["odi_bench"]["sizes"] == {"32x16": 3, "12x20": 1, "24x12": 2}
    assert [s for _f, s, _m, _b in _images_of(tmp_path / "real" / "osr_bench" / "standard" / "test.parquet")][:2] == [
        (48, 24),
        (24, 48),
    ]
    # ``only``: a benchmark nothing reads is kept
    new_env, report = real_size_data(env, tmp_path / "real2", sizes={"osr_bench": (48, 24)}, only={"mmsi"})
    assert new_env["LMMS_SPATIAL_OSR_PATH"] == str(osr) and report["osr_bench"]["kept"]


@pytest.mark.slow  # ~40 s: builds the demo data, re-encodes OSR-Bench and MMSI-Bench at full size
def test_bench_tasks_at_real_image_size(offline_env, tmp_path):
    out = tmp_path / "bench.json"
    args = ["bench", "--only", "tasks", "--image-size", "real", "--docs", "2", "--tasks",
            "osr_qa_standard_vanilla,mmsi_vanilla", "--work", str(tmp_path / "work"), "--json", str(out)]  # fmt: skip
    proc = forkserver.run_module("lmms_spatial.cli", args, offline_env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(out.read_text())
    assert report["meta"]["image_size"] == "real"
    sizes = report["image_sizes"]
    assert sizes["osr_bench"]["sizes"] == {"1024x512": 20} and sizes["osr_bench"]["formats"] == {"PNG": 20}
    assert sizes["mmsi"]["sizes"] == {"1280x960": 24} and sizes["mmsi"]["formats"] == {"PNG": 24}
    assert 0.5 * 1024 <= sizes["osr_bench"]["mean_image_kb"] <= 1.5 * 1024
    assert sizes["dori"]["kept"] and sizes["odi_bench"]["kept"]  # not among the tasks: not re-encoded
    assert set(report["tasks"]) == {"osr_qa_standard_vanilla", "mmsi_vanilla"}
    for row in report["tasks"].values():
        assert row["docs_measured"] == 2 and row["our_cpu_ms_per_doc"] > 0
    line = next(line for line in proc.stdout.splitlines() if line.startswith("images (real): "))
    assert "mmsi 1280x960 PNG" in line and "osr_bench 1024x512 PNG" in line  # benchmarks in key order


@pytest.mark.slow  # ~60 s: three lmms-eval runs of the instant random_choice model
def test_end_to_end_steady_state_runs_limit_l_and_2l(offline_env, tmp_path):
    out = tmp_path / "bench.json"
    args = ["bench", "--only", "tasks,e2e", "--tasks", "mmsi_vanilla", "--docs", "2", "--model", "random_choice",
            "--model_args", "seed=0", "--limit", "4", "--work", str(tmp_path / "work"), "--json", str(out)]  # fmt: skip
    proc = forkserver.run_module("lmms_spatial.cli", args, offline_env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    e2e = json.loads(out.read_text())["end_to_end"]
    assert "error" not in e2e, e2e
    # mmsi_vanilla has 12 documents: --limit 4 and --limit 8 both run in full
    assert (e2e["docs"], e2e["docs_l_warm"], e2e["docs_2l"], e2e["marginal_docs"]) == (4, 4, 8, 4)
    assert e2e["steady"] and e2e["limit_2l"] == 8 and e2e["wall_s_2l"] > 0 and e2e["our_share_of_wall"] > 0
    if e2e["marginal_ms_per_doc"] is None:  # an instant model: the 4 extra documents may vanish in the noise
        assert e2e["steady_reason"].startswith("wall(2L) <= wall(L)")
    else:
        # the two walls are rounded to 0.01 s each: their difference is off by up to 0.01 s, 2.5 ms over 4 docs
        assert e2e["marginal_ms_per_doc"] == pytest.approx(
            1000 * (e2e["wall_s_2l"] - e2e["wall_s_l_warm"]) / 4, rel=0.05, abs=1000 * 0.01 / 4 + 1e-9
        )
        # the share is rounded to 5 decimals (half a unit: 5e-6), its two inputs to 3
        assert e2e["our_share_of_steady"] == pytest.approx(
            e2e["our_cpu_ms_per_marginal_doc"] / e2e["marginal_ms_per_doc"], rel=1e-3, abs=5e-6
        )
    assert "steady state (--limit 4" in proc.stdout
