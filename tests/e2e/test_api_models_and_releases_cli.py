"""The papers' API rows and incomplete releases, through the lmms-eval CLI (offline, no GPU).

1. lmms-eval's ``openai`` model pointed at a loopback OpenAI-compatible server that records every
   request: each document of every benchmark arrives with its own images, all of them, in order; a
   12000 x 6000 panorama arrives as OpenAI keeps it (1536 x 768), within OpenAI's 20 MB per image.
2. ``--tasks odi_bench`` on a release with no OCR questions: the other 18 tasks run, OCR is named
   as having no documents, the group means cover the others, the report marks the row.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections import Counter
from pathlib import Path

import datasets
import pytest
from PIL import Image, ImageDraw

from lmms_spatial.data.api_images import PROVIDERS
from lmms_spatial.data.erp_image import decode_erp
from lmms_spatial.metrics import odi_bench as odi
from lmms_spatial.plugin.empty_tasks import COVERAGE_KEY, DOCUMENTS_KEY, NO_DOCUMENTS
from lmms_spatial.reports.report import build_tables
from lmms_spatial.reports.runs import load_runs
from tools.fake_judge import FakeJudgeServer

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("api_cli")]  # one worker builds the shared runs

MB = 1024 * 1024
API_TASKS = {  # task -> (benchmark, parquet under its fixture folder, image column)
    "mmsi_vanilla": ("mmsi", "test.parquet", "images"),
    "dori_compound_rotation_coarse": ("dori", "test.parquet", "images"),  # two images per question
    "mmperspective_pts": ("mmperspective", "test.parquet", "images"),  # an image pair
    "osr_qa_standard_vanilla": ("osr_bench", "standard/test.parquet", "image"),
    "odi_bench_close_object_attribute": ("odi_bench", "test.parquet", "image"),
}


def _key(image: Image.Image) -> str:
    """An image's identity: size and RGB pixels (PNG round trips are lossless)."""
    rgb = image.convert("RGB")
    return f"{rgb.size}:{hashlib.sha1(rgb.tobytes()).hexdigest()}"


def _big_panorama() -> bytes:
    """12000 x 6000 JPEG of flat colour regions: the size of the release's large panoramas, quick to build."""
    image = Image.new("RGB", (12000, 6000), (90, 140, 200))
    draw = ImageDraw.Draw(image)
    for i in range(8):
        draw.rectangle([i * 1500, 3000, i * 1500 + 1400, 5999], fill=(30 * i, 200 - 20 * i, 60 + 10 * i))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def _odi_fixture(source: Path, out: Path, keep, image: bytes | None = None) -> Path:
    """The ODI-Bench fixture rows ``keep(task)`` accepts, their panorama replaced by ``image`` if given."""
    rows = datasets.load_dataset("parquet", data_files=str(source / "test.parquet"))["train"]
    rows = rows.cast_column("image", datasets.Image(decode=False)).filter(keep, input_columns=["task"])
    if image is not None:
        rows = rows.map(lambda _: {"image": {"bytes": image, "path": None}})
    out.mkdir(parents=True)
    rows.cast_column("image", datasets.Image()).to_parquet(str(out / "test.parquet"))
    return out


def _sent_images(request: dict) -> list[tuple[Image.Image, int]]:
    """Every image of a chat-completions request, in message order, with its byte count."""
    found = []
    for message in request["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                raw = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                found.append((Image.open(io.BytesIO(raw)), len(raw)))
    return found


@pytest.fixture(scope="module")
def api_run(offline_env, fixture_datasets, lmms_eval_with_env, tmp_path_factory):
    """One lmms-eval run of the ``openai`` model over a task of every benchmark, the server's requests kept."""
    root = tmp_path_factory.mktemp("api_run")
    big = _big_panorama()
    odi_folder = _odi_fixture(fixture_datasets["odi_bench"], root / "odi", lambda t: t == "object_attribute", big)
    with FakeJudgeServer(lambda request: "A") as server:
        run = lmms_eval_with_env(
            {**offline_env, "LMMS_SPATIAL_ODI_PATH": str(odi_folder), "OPENAI_API_KEY": "test"}, root / "out",
            "--model", "openai", "--model_args", f"model_version=gpt-4o,base_url={server.base_url}",
            "--tasks", ",".join(API_TASKS),
        )  # fmt: skip
        requests = list(server.requests)
    return run, requests, big


def _expected_image_lists(run, fixture_datasets, big: bytes) -> Counter:
    """Per answered document (named by the id its score record logs), its images as the task must send them."""
    expected: Counter = Counter()
    for task, (bench, parquet, column) in API_TASKS.items():
        rows = datasets.load_dataset("parquet", data_files=str(fixture_datasets[bench] / parquet))["train"]
        by_id = {str(row["id"]): row for row in rows}
        for sample in run.samples[task]:
            doc_id = next(str(v["id"]) for v in sample.values() if isinstance(v, dict) and "id" in v)
            if bench == "odi_bench":  # the 12K panorama, sized as OpenAI keeps it
                images = [decode_erp(big, PROVIDERS["openai"].cap())]
            else:
                value = by_id[doc_id][column]
                images = value if isinstance(value, list) else [value]
            expected[tuple(_key(i) for i in images)] += 1
    return expected


def test_every_request_carries_its_documents_images_all_in_order(api_run, fixture_datasets):
    run, requests, big = api_run
    assert {task: len(run.samples[task]) > 0 for task in API_TASKS} == dict.fromkeys(API_TASKS, True)
    sent = Counter(tuple(_key(image) for image, _ in _sent_images(r)) for r in requests)
    expected = _expected_image_lists(run, fixture_datasets, big)
    assert sum(sent.values()) == sum(expected.values()) == len(requests)
    assert sent == expected
    assert {len(k) for k, n in expected.items()} == {1, 2}  # single images and ordered pairs both checked


def test_a_12000_by_6000_panorama_is_sent_as_openai_keeps_it_within_20_mb(api_run):
    run, requests, _ = api_run
    odi_requests = [r for r in requests if "ERP-formatted image" in str(r["messages"])]
    assert len(odi_requests) == len(run.samples["odi_bench_close_object_attribute"]) == 3
    for request in odi_requests:
        ((image, size),) = _sent_images(request)
        assert image.size == (1536, 768)  # fit 2048x2048 -> 2048x1024, then short side 768 -> 1536x768
        assert size <= 20 * MB
    records = [s["accuracy"] for s in run.samples["odi_bench_close_object_attribute"]]
    assert {str(r["run_options"]) for r in records} == {str({"LMMS_SPATIAL_ODI_API_IMAGES": "openai"})}


@pytest.fixture(scope="module")
def release_without_ocr(offline_env, fixture_datasets, lmms_eval_with_env, tmp_path_factory):
    root = tmp_path_factory.mktemp("no_ocr")
    folder = _odi_fixture(fixture_datasets["odi_bench"], root / "odi", lambda t: t != "ocr")
    env = {**offline_env, "LMMS_SPATIAL_ODI_PATH": str(folder), "LMMS_SPATIAL_JUDGE": "none"}
    return lmms_eval_with_env(env, root / "out", "--model", "random_choice", "--model_args", "seed=0",
                              "--tasks", "odi_bench")  # fmt: skip


def test_a_release_without_ocr_runs_the_other_tasks_and_names_ocr(release_without_ocr):
    run = release_without_ocr
    ran = {f"odi_bench_{s}_{t}" for s in ("close", "open") for t in odi.TASKS if t != "ocr"}
    assert set(run.samples) == set(run.results["n-samples"]) == ran
    for task in ("odi_bench_close_ocr", "odi_bench_open_ocr"):
        assert run.results["results"][task] == {"alias": task, DOCUMENTS_KEY: NO_DOCUMENTS}  # no metric, not 0
    assert run.stderr.strip().splitlines()[-1] == (
        f"lmms-spatial: odi_bench_close_ocr, odi_bench_open_ocr: {NO_DOCUMENTS}; left out, results written for "
        "the other tasks (group means cover only them)"
    )
    assert run.returncode == 1  # a data problem, as a missing dataset or a bad document


def test_group_means_cover_the_tasks_with_documents_and_say_so(release_without_ocr):
    run = release_without_ocr
    results = run.results["results"]
    assert results["odi_bench_close_general"][COVERAGE_KEY] == f"4 of 5; {NO_DOCUMENTS}: odi_bench_close_ocr"
    assert results["odi_bench_close"][COVERAGE_KEY] == f"9 of 10; {NO_DOCUMENTS}: odi_bench_close_ocr"
    assert COVERAGE_KEY not in results["odi_bench_close_spatial"]
    scores = [s["accuracy"]["score"] for t in odi.TASKS if t != "ocr" for s in run.samples[f"odi_bench_close_{t}"]]
    assert run.metric("odi_bench_close", "accuracy") == pytest.approx(sum(scores) / len(scores))


def test_the_report_marks_the_row_not_comparable_to_the_papers(release_without_ocr):
    tables = {t.key: t for t in build_tables(load_runs([release_without_ocr.out]), ci=False)}
    for key, task, marks in (("odi_bench_close", "odi_bench_close_ocr", "not comparable"),
                             ("odi_bench_open", "odi_bench_open_ocr", "rule-based judge; not comparable")):  # fmt: skip
        (row,) = [r for r in tables[key].rows if r.kind == "model"]
        assert row.label == f"random_choice ({marks})"  # the label leaves out seed=; LMMS_SPATIAL_JUDGE=none
        assert f"random_choice: not comparable to the paper's rows: {NO_DOCUMENTS} for {task}" in (tables[key].notes)
