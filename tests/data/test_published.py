"""``LMMS_SPATIAL_<NAME>_REPO``: a published normalised copy is read as published, never converted."""

from __future__ import annotations

import sys
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hub_releases import place_in_hub_cache  # noqa: E402
from offline_hub import offline_hf_home, online  # noqa: E402
from published_copies import folder_files  # noqa: E402

from lmms_spatial.data.export import Origin, export  # noqa: E402
from lmms_spatial.data.sources import DatasetSource, DataUnavailable, dataset_source  # noqa: E402

REPO = "lmms-spatial-ci/osr-bench"


@pytest.fixture
def hf_home(tmp_path, monkeypatch) -> Path:
    return offline_hf_home(tmp_path, monkeypatch)


@pytest.fixture
def published_osr(fixture_datasets, tmp_path) -> dict[str, bytes]:
    """The demo OSR-Bench data exported as it would be uploaded: {path in the repository: bytes}."""
    export("osr_bench", tmp_path / "export", source=fixture_datasets["osr_bench"], origin=Origin(how="demo"))
    return folder_files(tmp_path / "export")


def test_a_published_copy_in_the_cache_is_read_offline_as_published_without_converting(
    hf_home, monkeypatch, published_osr, fixture_datasets
):
    snapshot = place_in_hub_cache(hf_home / "hub", REPO, published_osr)
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REPO", REPO)
    source = dataset_source("osr_bench")
    assert source == DatasetSource(str(snapshot), {}, local=True)
    standard = datasets.load_dataset(source.path, data_dir="standard")["test"]  # as the osr_*_standard tasks load it
    demo = pq.read_table(fixture_datasets["osr_bench"] / "standard" / "test.parquet", columns=["id"])
    assert standard["id"] == demo.column("id").to_pylist()
    assert not (hf_home / "lmms_spatial").exists()  # nothing prepared: no conversion


def test_the_revision_variable_picks_a_commit_or_tag_of_the_published_copy(hf_home, monkeypatch, published_osr):
    old = place_in_hub_cache(hf_home / "hub", REPO, {**published_osr, "NOTE.md": b"v1"}, revision="v1")
    new = place_in_hub_cache(hf_home / "hub", REPO, published_osr)
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REPO", REPO)
    assert dataset_source("osr_bench").path == str(new)
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REVISION", "v1")
    assert dataset_source("osr_bench").path == str(old)
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REVISION", old.name)
    assert dataset_source("osr_bench").path == str(old)


def test_offline_without_the_published_copy_fails_in_one_line_naming_the_repo_variable(hf_home, monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_DORI_REPO", "lmms-spatial-ci/dori")
    with pytest.raises(DataUnavailable) as caught:
        dataset_source("dori")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("LMMS_SPATIAL_DORI_REPO=lmms-spatial-ci/dori: dori: offline (")
    assert f"lmms-spatial-ci/dori@main is not in the Hugging Face cache {str(hf_home / 'hub')!r}" in message


def test_a_local_copy_wins_over_a_published_one(hf_home, monkeypatch, fixture_datasets):
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REPO", REPO)  # not in the cache: would fail if read
    monkeypatch.setenv("LMMS_SPATIAL_OSR_PATH", str(fixture_datasets["osr_bench"]))
    assert dataset_source("osr_bench").path == str(Path(fixture_datasets["osr_bench"]).resolve())


def test_a_repo_variable_that_is_no_dataset_id_is_refused_in_one_line(hf_home, monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_REPO", "https://huggingface.co/datasets/x/y")
    with pytest.raises(
        DataUnavailable, match=r"^LMMS_SPATIAL_MMSI_REPO='https://huggingface.co/datasets/x/y': expected"
    ):
        dataset_source("mmsi")


def test_online_the_repository_and_its_revision_are_handed_to_datasets(hf_home, monkeypatch):
    online(monkeypatch)
    monkeypatch.setenv("LMMS_SPATIAL_MMPERSPECTIVE_REPO", "someone/mmperspective")  # no Hub release of its own
    assert dataset_source("mmperspective") == DatasetSource("someone/mmperspective", {})
    monkeypatch.setenv("LMMS_SPATIAL_MMPERSPECTIVE_REVISION", "v2")
    assert dataset_source("mmperspective") == DatasetSource("someone/mmperspective", {"revision": "v2"})


def test_prepare_names_the_published_copy_it_will_read(hf_home, monkeypatch, published_osr, capsys):
    from lmms_spatial.cli import main as cli

    snapshot = place_in_hub_cache(hf_home / "hub", REPO, published_osr)
    monkeypatch.setenv("LMMS_SPATIAL_OSR_REPO", REPO)
    assert cli(["prepare", "osr_bench"]) == 0
    assert capsys.readouterr().out == f"osr_bench: {snapshot}\n"
