"""Automatic preparation of a Hub release: found in the cache, converted once, every failure in words."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import datasets
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hub_releases import dori_release, mmsi_release, odi_release, osr_release, place_in_hub_cache  # noqa: E402
from offline_hub import offline_hf_home, online  # noqa: E402

import lmms_spatial.data.convert as convert  # noqa: E402
from lmms_spatial.data.prepare import MARKER, prepare  # noqa: E402
from lmms_spatial.data.sources import (  # noqa: E402
    BENCHMARKS,
    DataUnavailable,
    dataset_source,
)
from lmms_spatial.tasks.mmsi import MMSI_REVISION  # noqa: E402


@pytest.fixture
def hf_home(tmp_path, monkeypatch) -> Path:
    return offline_hf_home(tmp_path, monkeypatch)


def test_the_osr_release_in_the_cache_is_converted_into_both_configs_pointing_at_its_panoramas(hf_home):
    snapshot = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release())
    source = dataset_source("osr_bench")
    assert source.local and source.path == str(hf_home / "lmms_spatial" / "osr_bench" / snapshot.name / "data")
    standard = datasets.load_dataset(source.path, data_dir="standard")["test"].cast_column(
        "image", datasets.Image(decode=False)
    )
    assert standard["id"] == ["scene-1:1", "scene-1:2", "scene-1:3", "scene-2:1", "scene-2:2", "scene-2:3"]
    first = standard[0]["image"]
    assert first["bytes"] is None and first["path"] == str(snapshot / "data" / "scene-1" / "rgb.png")
    negative = datasets.load_dataset(source.path, data_dir="negative")["test"]
    # the file's order: the absent-chair rows last
    assert negative["id"] == ["scene-1:1", "scene-1:2", "scene-1:3", "scene-2:1", "scene-2:2", "scene-2:3", "scene-1:4",
                              "scene-2:4"]  # fmt: skip
    assert negative[6]["question"] == "How many chair(s) are in this room?" and negative[6]["answer"] == "0"
    marker = json.loads((Path(source.path).parent / MARKER).read_text())
    assert (marker["benchmark"], marker["revision"], marker["commit"]) == ("osr_bench", "main", snapshot.name)


@pytest.mark.parametrize(
    ("key", "repo", "files", "n"),
    [("odi_bench", "LiuYang66/ODI-Bench", odi_release(), 6), ("dori", "appledora/DORI-Benchmark", dori_release(), 2)],
)
def test_odi_and_dori_releases_in_the_cache_become_one_test_split(hf_home, key, repo, files, n):
    place_in_hub_cache(hf_home / "hub", repo, files)
    assert len(datasets.load_dataset(dataset_source(key).path)["test"]) == n


def test_the_odi_release_as_a_third_party_loader_reads_it_gets_its_tasks_from_the_file_names(hf_home):
    snapshot = place_in_hub_cache(hf_home / "hub", "LiuYang66/ODI-Bench", odi_release())
    test = datasets.load_dataset(dataset_source("odi_bench").path)["test"].cast_column(
        "image", datasets.Image(decode=False)
    )
    by_task = {}
    for row in test:
        by_task.setdefault(row["task"], []).append((row["id"], row["answer"], Path(row["image"]["path"]).name))
    assert by_task == {
        "object_attribute": [
            ("object_attribute_1", "A", "indoor_0001.jpg"),
            ("object_attribute_2", "B", "outdoor_0002.jpg"),
        ],
        "existence": [("existence_1", "Yes", "indoor_0001.jpg"), ("existence_2", "No", "outdoor_0002.jpg")],
        "egocentric_view_orientation": [("egocentric_view_orientation_1", "C", "indoor_0001.jpg")],
        "allocentric_view_orientation": [("allocentric_view_orientation_1", "D", "outdoor_0002.jpg")],
    }
    assert test[0]["image"]["path"] == str(snapshot / "images_final" / "indoor_0001.jpg")
    assert test[0]["answer_text"] == "red"  # no open-ended answer in the row: the correct option's text


def test_a_prepared_copy_is_reused_and_remade_when_the_release_moved(hf_home, monkeypatch):
    snapshot = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release())
    calls = []
    real = convert.convert_release
    monkeypatch.setattr(convert, "convert_release", lambda *a: (calls.append(a), real(*a))[1])
    first = prepare(BENCHMARKS["osr_bench"])
    assert prepare(BENCHMARKS["osr_bench"]) == first and len(calls) == 1
    marker = first.parent / MARKER
    marker.write_text(marker.read_text().replace(str(snapshot), "/elsewhere/snapshot"))  # a copied cache
    assert prepare(BENCHMARKS["osr_bench"]) == first and len(calls) == 2


def test_two_processes_preparing_at_once_convert_the_release_once(hf_home, monkeypatch):
    place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release())
    calls, started = [], threading.Barrier(2)
    real = convert.convert_release

    def slow(*args):
        calls.append(args)
        threading.Event().wait(0.3)  # the other one arrives while this one converts
        return real(*args)

    monkeypatch.setattr(convert, "convert_release", slow)
    results: list[Path] = []

    def run():
        started.wait()
        results.append(prepare(BENCHMARKS["osr_bench"]))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 2 and results[0] == results[1]
    assert sorted(p.name for p in results[0].parent.parent.iterdir() if p.is_dir()) == [results[0].parent.name]


def test_offline_without_the_release_fails_in_one_line_naming_the_fixes(hf_home):
    with pytest.raises(DataUnavailable) as caught:
        dataset_source("osr_bench")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("osr_bench: offline (HF_HUB_OFFLINE) and UUUserna/OSR-Bench@main is not in")
    assert "LMMS_SPATIAL_OSR_PATH" in message and "lmms-spatial convert osr_bench" in message
    assert "LMMS_SPATIAL_OSR_REVISION" in message


def test_a_revision_override_selects_that_snapshot_and_an_unknown_one_is_named(hf_home, monkeypatch):
    old = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release(scenes=("old",)), revision="v0")
    new = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release())
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REVISION", old.name)  # a commit
    assert Path(dataset_source("osr_bench").path).parent.name == old.name
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REVISION", "v0")  # a tag
    assert Path(dataset_source("osr_bench").path).parent.name == old.name
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REVISION", "v9")
    with pytest.raises(DataUnavailable, match=r"UUUserna/OSR-Bench@v9 is not in the Hugging Face cache") as caught:
        dataset_source("osr_bench")
    assert f"(it holds commit(s) {', '.join(sorted([old.name, new.name]))})" in str(caught.value)
    assert not caught.value.transient  # offline: no retry can find it


def test_a_release_in_another_layout_is_described_found_versus_expected(hf_home):
    place_in_hub_cache(
        hf_home / "hub",
        "LiuYang66/ODI-Bench",
        {"README.md": b"", "train/0001.jpg": b"x", "metadata.jsonl": b'{"file_name": "0001.jpg", "q": "?"}\n'},
    )
    with pytest.raises(DataUnavailable) as caught:
        dataset_source("odi_bench")
    message = str(caught.value)
    assert "\n" not in message
    assert "LiuYang66/ODI-Bench@main (commit " in message and "does not have the layout lmms-spatial reads" in message
    assert "no QAs/ folder" in message
    assert "Found: 3 files (" in message and "top level: README.md, metadata.jsonl, train/" in message
    assert "metadata.jsonl has keys ['file_name', 'q']" in message
    assert "Expected: a QAs/ folder of per-task" in message
    assert "lmms-spatial convert odi_bench RELEASE OUT [--skip-bad]" in message and "LMMS_SPATIAL_ODI_PATH" in message


def test_a_partial_download_names_the_missing_file_and_leaves_no_prepared_copy(hf_home):
    files = osr_release()
    del files["data/scene-2/rgb.png"]
    snapshot = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", files)
    with pytest.raises(DataUnavailable, match=r"first: standard data/scene-2/rgb.png:1: image data/scene-2/rgb.png"):
        dataset_source("osr_bench")
    assert [p.name for p in (hf_home / "lmms_spatial" / "osr_bench").iterdir() if p.is_dir()] == []
    assert not (hf_home / "lmms_spatial" / "osr_bench" / snapshot.name).exists()


def _mmsi_parquet(tmp_path, ids) -> bytes:
    datasets.Dataset.from_list([{"id": i, "question": "q", "answer": "A"} for i in ids]).to_parquet(
        str(tmp_path / "t.parquet")
    )
    return (tmp_path / "t.parquet").read_bytes()


def test_mmsi_offline_reads_its_pinned_commit_copied_into_the_cache_as_a_local_folder(hf_home, tmp_path):
    snapshot = place_in_hub_cache(
        hf_home / "hub", "RunsenXu/MMSI-Bench", mmsi_release(_mmsi_parquet(tmp_path, [1])), commit=MMSI_REVISION
    )
    source = dataset_source("mmsi")
    assert source.local and source.path == str(snapshot)
    assert datasets.load_dataset(source.path)["test"]["id"] == [1]


def test_mmsi_revision_main_reads_the_snapshot_main_points_at_instead_of_the_pin(hf_home, tmp_path, monkeypatch):
    place_in_hub_cache(hf_home / "hub", "RunsenXu/MMSI-Bench", mmsi_release(b"pinned"), commit=MMSI_REVISION)
    newer = place_in_hub_cache(
        hf_home / "hub", "RunsenXu/MMSI-Bench", mmsi_release(_mmsi_parquet(tmp_path, [1, 2])), revision="main"
    )
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_REVISION", "main")
    source = dataset_source("mmsi")
    assert source.path == str(newer) and datasets.load_dataset(source.path)["test"]["id"] == [1, 2]


def test_online_the_release_comes_from_snapshot_download_with_the_allow_patterns(hf_home, monkeypatch):
    snapshot = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release())
    online(monkeypatch)
    calls = []

    def fake_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs))
        return str(snapshot)

    monkeypatch.setattr("huggingface_hub.snapshot_download", fake_download)
    assert Path(dataset_source("osr_bench").path).parent.name == snapshot.name
    ((repo_id, kwargs),) = calls
    assert (repo_id, kwargs["repo_type"], kwargs["revision"]) == ("UUUserna/OSR-Bench", "dataset", "main")
    assert kwargs["allow_patterns"] == ["qa.csv", "qa_with_negative.csv", "data/*/rgb.png", "README.md"]
    assert kwargs["cache_dir"] == str(hf_home / "hub")


def _without_a_connection(monkeypatch) -> None:
    """Online (no offline variable), and the Hub cannot be reached: huggingface_hub's error with nothing cached."""
    from huggingface_hub.errors import LocalEntryNotFoundError

    online(monkeypatch)

    def no_connection(repo_id, **kwargs):
        raise LocalEntryNotFoundError("Connection error, and we cannot find the requested files in the disk cache.")

    monkeypatch.setattr("huggingface_hub.snapshot_download", no_connection)


def test_online_without_a_connection_fails_in_one_line_naming_the_fixes(hf_home, monkeypatch):
    _without_a_connection(monkeypatch)
    with pytest.raises(DataUnavailable) as caught:
        dataset_source("dori")
    message = str(caught.value)
    assert message.startswith("dori: cannot download appledora/DORI-Benchmark@main (Connection error, and we")
    assert "LMMS_SPATIAL_DORI_PATH" in message and "LMMS_SPATIAL_DORI_REVISION" in message and "\n" not in message
    assert caught.value.transient  # online: lmms-eval's retries may find the network back


def test_a_release_with_no_converter_is_not_told_to_convert_when_it_cannot_be_downloaded(hf_home, monkeypatch):
    from lmms_spatial.data.prepare import fetch_release
    from lmms_spatial.data.registry import BENCHMARKS

    _without_a_connection(monkeypatch)
    with pytest.raises(DataUnavailable) as caught:
        fetch_release(BENCHMARKS["mmsi"], MMSI_REVISION)  # MMSI-Bench's parquet is read as published
    assert str(caught.value) == (
        f"mmsi: cannot download RunsenXu/MMSI-Bench@{MMSI_REVISION} (Connection error, and we cannot find the "
        "requested files in the disk cache.); set LMMS_SPATIAL_MMSI_PATH to a local copy of the release (the layout "
        "of hub_cards/mmsi/README.md), or LMMS_SPATIAL_MMSI_REVISION to a revision of RunsenXu/MMSI-Bench that is "
        "available"
    )
