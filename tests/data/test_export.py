"""``lmms-spatial export``: a normalised copy as a folder the Hub's viewer shows, described by its card."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import DatasetCard
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hub_releases import osr_release, place_in_hub_cache, png  # noqa: E402
from offline_hub import offline_hf_home  # noqa: E402
from renamed_releases import DORI_MAP, renamed_dori_release, write_release  # noqa: E402

from lmms_spatial.cli import main as cli  # noqa: E402
from lmms_spatial.data.cards import card_configs, card_features  # noqa: E402
from lmms_spatial.data.export import ExportError, Origin, export  # noqa: E402
from lmms_spatial.data.sources import dataset_source  # noqa: E402

KEYS = ["dori", "mmperspective", "mmsi", "odi_bench", "osr_bench"]
DEMO = Origin(how="demo data")


@pytest.fixture
def hf_home(tmp_path, monkeypatch) -> Path:
    return offline_hf_home(tmp_path, monkeypatch)


def exported_card(out: Path):
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs

    data = DatasetCard.load(out / "README.md").data
    return data, MetadataConfigs.from_dataset_card_data(data), DatasetInfosDict.from_dataset_card_data(data)


def demo_ids(folder: Path, pattern: str) -> list:
    """The ids of the demo parquet files the card's pattern names, in file and row order."""
    files = sorted(folder.glob(pattern))
    return [i for f in files for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()]


@pytest.mark.parametrize("key", KEYS)
def test_every_demo_export_loads_with_exactly_the_cards_configs_splits_features_and_counts(
    key, fixture_datasets, tmp_path
):
    out = tmp_path / "out"
    export(key, out, source=fixture_datasets[key], origin=DEMO, private=True)
    _data, configs, infos = exported_card(out)
    assert list(configs) == sorted(card_configs(key)) and set(infos) == set(configs)
    for config, entries in card_configs(key).items():
        loaded = datasets.load_dataset(str(out), config)  # what the viewer's workers do
        assert set(loaded) == {e["split"] for e in entries} == set(infos[config].splits)
        for entry in entries:
            split = loaded[entry["split"]]
            expected_ids = demo_ids(fixture_datasets[key], entry["path"])
            assert split.features == infos[config].features == card_features(key)[config]
            assert len(split) == infos[config].splits[entry["split"]].num_examples == len(expected_ids) > 0
            assert split["id"] == expected_ids  # every row, in order


def test_osr_export_of_the_demo_data_from_the_command_line_reads_back_with_pil_images(fixture_datasets, tmp_path):
    out = tmp_path / "osr"
    assert cli(["export", "osr_bench", str(out), "--demo"]) == 0
    for config in ("standard", "negative"):
        split = datasets.load_dataset(str(out), config)["test"]
        source = pq.read_table(fixture_datasets["osr_bench"] / config / "test.parquet").to_pylist()
        assert len(split) == len(source)
        first = split[0]["image"]
        assert isinstance(first, Image.Image)
        with Image.open(io.BytesIO(source[0]["image"]["bytes"])) as original:
            assert first.size == original.size and first.tobytes() == original.tobytes()


def test_row_groups_hold_at_most_the_promised_rows_and_bytes(fixture_datasets, tmp_path):
    demo = pq.read_table(fixture_datasets["odi_bench"] / "test.parquet")  # 23 questions
    assert demo.num_rows == 23
    big = tmp_path / "big"
    big.mkdir()
    copies = [
        demo.set_column(0, "id", pa.array([f"{i}-{n}" for i in demo.column("id").to_pylist()])) for n in range(11)
    ]
    pq.write_table(pa.concat_tables(copies), big / "test.parquet")  # 253 rows

    def groups(out: Path) -> list[int]:
        (file,) = (out / "data").glob("*.parquet")
        meta = pq.ParquetFile(file).metadata
        return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]

    export("odi_bench", tmp_path / "default", source=big, origin=DEMO, private=True)
    assert groups(tmp_path / "default") == [100, 100, 53]  # datasets' image row groups: the viewer reads one whole
    export("odi_bench", tmp_path / "ten", source=big, origin=DEMO, private=True, rows_per_group=10)
    assert groups(tmp_path / "ten") == [10] * 25 + [3]
    smallest = min(len(cell["bytes"]) for cell in demo.column("image").to_pylist())
    export("odi_bench", tmp_path / "bytes", source=fixture_datasets["odi_bench"], origin=DEMO, private=True,
           group_bytes=2 * smallest - 1)  # fmt: skip
    assert groups(tmp_path / "bytes") == [1] * 23  # no two images fit in a group of this many bytes


def test_the_card_counts_bytes_and_sizes_of_the_files_written(fixture_datasets, tmp_path):
    out = tmp_path / "dori"
    export("dori", out, source=fixture_datasets["dori"], origin=DEMO)
    data, configs, infos = exported_card(out)
    (file,) = (out / "data").glob("*.parquet")
    assert file.name == "test-00000-of-00001.parquet"
    assert configs["default"]["data_files"] == [{"split": "test", "path": "data/test-*.parquet"}]
    info = infos["default"]
    assert info.download_size == file.stat().st_size
    assert info.dataset_size == info.splits["test"].num_bytes == pq.read_table(file).nbytes
    assert data.license == "mit" and data.size_categories == ["n<1K"]
    assert (
        "## Citation" in DatasetCard.load(out / "README.md").text
        and "tasnim2025dori" in (out / "README.md").read_text()
    )


def test_odi_bench_export_without_private_refuses_in_one_line_naming_the_licence(tmp_path, capsys):
    assert cli(["export", "odi_bench", str(tmp_path / "odi"), "--demo"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cc-by-nc-nd-4.0" in err and "--private" in err
    assert not (tmp_path / "odi").exists()
    assert cli(["export", "odi_bench", str(tmp_path / "odi"), "--demo", "--private"]) == 0
    text = (tmp_path / "odi" / "README.md").read_text()
    assert "**Private copy.** The release is licensed `cc-by-nc-nd-4.0`, which allows no derivatives" in text


def test_the_prepared_copy_is_exported_with_its_release_images_embedded_and_its_repo_and_commit(hf_home, tmp_path):
    snapshot = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release())
    prepared = Path(dataset_source("osr_bench").path)
    assert pq.read_table(prepared / "standard").column("image").to_pylist()[0]["bytes"] is None  # paths only
    out = tmp_path / "osr"
    assert cli(["export", "osr_bench", str(out)]) == 0
    data, _configs, _infos = exported_card(out)
    assert data.source_datasets == ["UUUserna/OSR-Bench"]
    assert f"at commit `{snapshot.name}` (revision `main`)" in (out / "README.md").read_text()
    cells = pq.read_table(next((out / "standard").glob("*.parquet"))).column("image").to_pylist()
    assert [c["path"] for c in cells] == ["rgb.png"] * 6
    assert [c["bytes"] for c in cells] == [png((0, 90, 160))] * 3 + [png((40, 90, 160))] * 3


def test_a_missing_image_fails_naming_the_document_and_the_field_and_writes_nothing(hf_home, tmp_path):
    snapshot = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release())
    prepared = Path(dataset_source("osr_bench").path)
    (snapshot / "data" / "scene-2" / "rgb.png").unlink()
    with pytest.raises(ExportError, match=r"document 'scene-2:1', field 'image': \[Errno 2\]"):
        export("osr_bench", tmp_path / "osr", source=prepared, origin=DEMO)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]  # no OUT, no half-written folder


def test_export_never_writes_into_a_folder_that_holds_files(fixture_datasets, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match="exists and is not an empty folder"):
        export("mmsi", tmp_path / "out", source=fixture_datasets["mmsi"], origin=DEMO)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["keep.txt"]


def test_an_exported_card_is_read_by_datasets_without_a_warning(fixture_datasets, tmp_path, caplog):
    import logging

    export("osr_bench", tmp_path / "osr", source=fixture_datasets["osr_bench"], origin=DEMO)
    logger = logging.getLogger("datasets")
    logger.addHandler(caplog.handler)
    try:
        exported_card(tmp_path / "osr")
    finally:
        logger.removeHandler(caplog.handler)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_local_release_is_converted_with_its_mapping_and_exported_naming_both(tmp_path, capsys):
    release = write_release(renamed_dori_release(), tmp_path / "DORI")
    assert cli(["export", "dori", str(tmp_path / "plain"), "--release", str(release)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith(f"--map {DORI_MAP}`).")
    assert cli(["export", "dori", str(tmp_path / "out"), "--release", str(release), "--map", DORI_MAP]) == 0
    assert datasets.load_dataset(str(tmp_path / "out"))["test"]["answer"] == ["A", "B"]
    text = (tmp_path / "out" / "README.md").read_text()
    assert f"converted by lmms-spatial's `dori` converter with the column mapping `{DORI_MAP}`" in text


def test_one_parquet_file_is_exported_with_the_origin_the_user_names(fixture_datasets, tmp_path):
    file = fixture_datasets["mmsi"] / "test.parquet"
    args = ["export", "mmsi", str(tmp_path / "out"), "--data", str(file), "--origin", "RunsenXu/MMSI-Bench@abc123"]
    assert cli(args) == 0
    data, _configs, infos = exported_card(tmp_path / "out")
    assert data.source_datasets == ["RunsenXu/MMSI-Bench"]
    assert infos["default"].splits["test"].num_examples == pq.ParquetFile(file).metadata.num_rows
    assert (
        "[`RunsenXu/MMSI-Bench`](https://huggingface.co/datasets/RunsenXu/MMSI-Bench) at commit `abc123`"
        in (tmp_path / "out" / "README.md").read_text()
    )


def test_one_file_cannot_hold_the_two_osr_configs(fixture_datasets, tmp_path):
    file = fixture_datasets["osr_bench"] / "standard" / "test.parquet"
    with pytest.raises(ExportError, match="osr_bench has configs standard, negative; give the folder"):
        export("osr_bench", tmp_path / "out", source=file, origin=DEMO)
