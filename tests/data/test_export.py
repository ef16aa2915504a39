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
SYNTHETIC = "**Synthetic demo data, not the {} release.**"
# the paper's main config of every benchmark with several (the viewer opens on it)
MAIN_CONFIG = {"osr_bench": "standard"}
PRETTY = {"dori": "DORI", "mmperspective": "MMPerspective", "mmsi": "MMSI-Bench", "odi_bench": "ODI-Bench",
          "osr_bench": "OSR-Bench"}  # fmt: skip


@pytest.fixture
def hf_home(tmp_path, monkeypatch) -> Path:
    return offline_hf_home(tmp_path, monkeypatch)


def exported_card(out: Path):
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs

    data = DatasetCard.load(out / "README.md").data
    return data, MetadataConfigs.from_dataset_card_data(data), DatasetInfosDict.from_dataset_card_data(data)


def unmarked_copy(folder: Path, to: Path) -> Path:
    """The parquet files of a fixture folder without its fixture marker: a normalised copy of unknown origin."""
    for file in folder.rglob("*.parquet"):
        (to / file.relative_to(folder)).parent.mkdir(parents=True, exist_ok=True)
        (to / file.relative_to(folder)).write_bytes(file.read_bytes())
    return to


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
    export("dori", out, source=unmarked_copy(fixture_datasets["dori"], tmp_path / "copy"), origin=DEMO)
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
    assert "Synthetic" not in (out / "README.md").read_text() and not data.get("tags")  # real data: no such claim


def test_odi_bench_export_without_private_refuses_in_one_line_naming_the_licence(fixture_datasets, tmp_path, capsys):
    copy = str(unmarked_copy(fixture_datasets["odi_bench"], tmp_path / "copy"))  # data of unrecorded origin
    assert cli(["export", "odi_bench", str(tmp_path / "odi"), "--data", copy]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cc-by-nc-nd-4.0" in err and "--private" in err
    assert not (tmp_path / "odi").exists()
    assert cli(["export", "odi_bench", str(tmp_path / "odi"), "--data", copy, "--private"]) == 0
    text = (tmp_path / "odi" / "README.md").read_text()
    assert "**Private copy.** The release is licensed `cc-by-nc-nd-4.0`, which allows no derivatives" in text


def test_a_private_export_ends_with_the_commands_that_keep_it_private_and_the_viewers_condition(
    fixture_datasets, tmp_path, capsys
):
    copy = str(unmarked_copy(fixture_datasets["odi_bench"], tmp_path / "copy"))
    out = tmp_path / "odi"
    assert cli(["export", "odi_bench", str(out), "--data", copy, "--private", "--repo-id", "lab/odi"]) == 0
    last = capsys.readouterr().out.splitlines()[-5:]
    assert last[0].startswith("upload, private") and "checked" in last[0]  # nothing can be checked offline
    # created private before the upload: `hf upload --private` only sets the visibility of a repository it creates
    assert last[1:3] == [
        "  hf repos create lab/odi --repo-type dataset --private",
        f"  hf upload lab/odi {out} --repo-type dataset",
    ]
    assert "existing public repository stays public" in last[3]
    assert "hf repos settings lab/odi --repo-type dataset --private" in last[3]
    assert "PRO" in last[4] and "Enterprise" in last[4]
    text = (out / "README.md").read_text()
    assert "`hf repos create lab/odi --repo-type dataset --private`" in text and "stays public" in text


def test_the_odi_bench_demo_is_synthetic_so_it_needs_no_private_flag_and_claims_no_licence(tmp_path, capsys):
    assert cli(["export", "odi_bench", str(tmp_path / "odi"), "--demo"]) == 0
    card = DatasetCard.load(tmp_path / "odi" / "README.md")
    assert card.data.license is None and card.data.tags == ["synthetic"]
    assert "Private copy" not in card.text


def test_the_prepared_copy_is_exported_with_its_release_images_embedded_and_its_repo_and_commit(hf_home, tmp_path):
    snapshot = place_in_hub_cache(hf_home / "hub", "UUUserna/OSR-Bench", osr_release())
    prepared = Path(dataset_source("osr_bench").path)
    assert pq.read_table(prepared / "standard").column("image").to_pylist()[0]["bytes"] is None  # paths only
    out = tmp_path / "osr"
    assert cli(["export", "osr_bench", str(out)]) == 0
    data, _configs, _infos = exported_card(out)
    assert data.source_datasets == ["UUUserna/OSR-Bench"] and data.license == "mit" and not data.get("tags")
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


def test_a_cell_that_is_not_an_image_fails_naming_the_document_and_the_field(fixture_datasets, tmp_path):
    table = pq.read_table(fixture_datasets["odi_bench"] / "test.parquet")
    cells = table.column("image").to_pylist()
    cells[3] = {"bytes": b"<html>not found</html>", "path": "x.jpg"}  # a download that went wrong
    (tmp_path / "copy").mkdir()
    column = pa.array(cells, type=table.schema.field("image").type)
    pq.write_table(table.set_column(1, "image", column), tmp_path / "copy" / "test.parquet")
    document = table.column("id")[3].as_py()
    with pytest.raises(ExportError, match=rf"document '{document}', field 'image': not a readable image \(Unidentif"):
        export("odi_bench", tmp_path / "out", source=tmp_path / "copy", origin=DEMO, private=True)
    assert not (tmp_path / "out").exists()


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
    file = unmarked_copy(fixture_datasets["mmsi"], tmp_path / "copy") / "test.parquet"
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


@pytest.mark.parametrize("key", KEYS)
def test_each_exported_card_read_with_the_hub_card_classes_names_its_default_says_synthetic_and_fits_its_files(
    key, fixture_datasets, tmp_path
):
    """What the Hub reads (``DatasetCard`` / ``DatasetCardData``), checked against the parquet files themselves."""
    from huggingface_hub import DatasetCardData

    out = tmp_path / "out"
    export(key, out, source=fixture_datasets[key], origin=DEMO, private=True)  # a fixture: synthetic
    card = DatasetCard.load(out / "README.md")
    data = card.data
    assert isinstance(data, DatasetCardData)
    # the default config: marked on the paper's main one when there are several, else the only one is it
    configs = {c["config_name"]: c for c in data.configs}
    assert set(configs) == set(card_configs(key))
    defaults = [name for name, c in configs.items() if c.get("default")]
    assert defaults == ([MAIN_CONFIG[key]] if len(configs) > 1 else [])
    # up front: synthetic demo data, no licence or source of the release claimed
    first = card.text.strip().split("\n\n")[1]  # the paragraph under the title
    assert first.startswith(SYNTHETIC.format(PRETTY[key])) and "no licence of the release" in first
    assert data.license is None and data.source_datasets is None and data.tags == ["synthetic"]
    assert "synthetic demo data" in data.pretty_name
    # every config's data_files, features and counts are the files'
    infos = (
        data.dataset_info if isinstance(data.dataset_info, list) else [{**data.dataset_info, "config_name": "default"}]
    )
    assert sorted(i["config_name"] for i in infos) == sorted(configs)
    for info in infos:
        name = info["config_name"]
        for entry, split in zip(configs[name]["data_files"], info["splits"], strict=True):
            files = sorted(out.glob(entry["path"]))
            assert files and entry["split"] == split["name"]
            assert split["num_examples"] == sum(pq.ParquetFile(f).metadata.num_rows for f in files)
            for file in files:
                declared = datasets.Features._from_yaml_list(info["features"])
                assert datasets.Features.from_arrow_schema(pq.read_schema(file)) == declared == card_features(key)[name]
        written = [f for e in configs[name]["data_files"] for f in out.glob(e["path"])]
        assert info["download_size"] == sum(f.stat().st_size for f in written)


def test_fixture_data_stays_synthetic_whatever_origin_the_user_names(fixture_datasets, tmp_path):
    file = fixture_datasets["mmsi"] / "test.parquet"  # built by build_fixture: its folder holds the marker
    args = ["export", "mmsi", str(tmp_path / "out"), "--data", str(file), "--origin", "RunsenXu/MMSI-Bench@abc123"]
    assert cli(args) == 0
    data, _configs, _infos = exported_card(tmp_path / "out")
    assert data.source_datasets is None and data.license is None
    assert SYNTHETIC.format("MMSI-Bench") in (tmp_path / "out" / "README.md").read_text()


def test_every_column_of_every_exported_file_has_a_page_index(fixture_datasets, tmp_path):
    export("osr_bench", tmp_path / "osr", source=fixture_datasets["osr_bench"], origin=DEMO)
    files = sorted((tmp_path / "osr").rglob("*.parquet"))
    assert len(files) == 2
    for file in files:
        meta = pq.ParquetFile(file).metadata
        chunks = [meta.row_group(g).column(c) for g in range(meta.num_row_groups) for c in range(meta.num_columns)]
        assert chunks and all(chunk.has_column_index and chunk.has_offset_index for chunk in chunks)


# --- panoramas over the viewer's limit -------------------------------------------------------------------

# Pillow's default MAX_IMAGE_PIXELS is 1024**3 // 4 // 3 = 89,478,485; it raises DecompressionBombError above
# twice that, 178,956,970 pixels: what the viewer's image re-encoding can open.
VIEWER_LIMIT = 178_956_970
PANORAMA = (20_000, 10_000)  # 200,000,000 pixels


@pytest.fixture(scope="module")
def panorama_source(tmp_path_factory) -> Path:
    """An ODI-Bench copy of two rows: a 20,000 x 10,000 JPEG panorama (grey: left half black, right half
    white; 2.3 MB) and a 64 x 32 one."""
    folder = tmp_path_factory.mktemp("panorama")
    big = Image.new("L", PANORAMA, 0)
    big.paste(255, (10_000, 0, 20_000, 10_000))
    jpeg = io.BytesIO()
    big.save(jpeg, "JPEG", quality=75)
    del big
    small = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 30, 30)).save(small, "PNG")
    row = {"task": "counting", "question": "How many?", "options": ["1", "2"], "answer": "A", "answer_text": "one"}
    rows = [
        {"id": "huge", "image": {"bytes": jpeg.getvalue(), "path": "huge.jpg"}, **row},
        {"id": "small", "image": {"bytes": small.getvalue(), "path": "small.png"}, **row},
    ]
    datasets.Dataset.from_list(rows, features=card_features("odi_bench")["default"]).to_parquet(
        str(folder / "test.parquet")
    )
    return folder


def test_a_panorama_over_the_viewers_limit_is_refused_in_one_line_naming_the_limit_and_the_flag(
    panorama_source, tmp_path, capsys
):
    out = tmp_path / "odi"
    assert cli(["export", "odi_bench", str(out), "--data", str(panorama_source), "--private"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "document 'huge', field 'image': 20,000 x 10,000 = 200,000,000 pixels" in err
    assert "limit of 178,956,970" in err and "--downscale-large-images" in err
    assert not out.exists()


def test_with_the_flag_a_20000_by_10000_panorama_is_stored_within_the_viewers_limit_with_its_original_size(
    panorama_source, tmp_path, monkeypatch
):
    out = tmp_path / "odi"
    (split,) = export("odi_bench", out, source=panorama_source, origin=DEMO, private=True, downscale_large_images=True)
    assert split.downscaled == 1
    loaded = datasets.load_dataset(str(out))["test"].cast_column("image", datasets.Image(decode=False))
    huge, small = loaded[0], loaded[1]
    # the largest 2:1 size within the limit: short side int(10,000 * sqrt(178,956,970 / 200,000,000)) = 9,459,
    # long side 2 x 9,459 = 18,918; 18,918 x 9,459 = 178,945,362 <= 178,956,970
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 89_478_485)  # Pillow's default, as in the viewer
    with pytest.warns(Image.DecompressionBombWarning), Image.open(io.BytesIO(huge["image"]["bytes"])) as image:
        image.load()  # over 89.5 MP Pillow only warns; no DecompressionBombError: the preview works
        assert image.size == (18_918, 9_459) and image.format == "JPEG" and image.mode == "L"
        assert image.getpixel((4_729, 4_729)) < 10 and image.getpixel((14_189, 4_729)) > 245  # the halves kept
    assert 18_918 * 9_459 <= VIEWER_LIMIT
    assert huge["image_original_size"] == {"width": 20_000, "height": 10_000}
    assert small["image_original_size"] is None  # stored as it was, byte for byte
    source_small = pq.read_table(panorama_source / "test.parquet").column("image").to_pylist()[1]["bytes"]
    assert small["image"]["bytes"] == source_small
    # the card declares the extra column (the layout's columns unchanged) and says what was done
    _data, _configs, infos = exported_card(out)
    expected = datasets.Features(card_features("odi_bench")["default"])
    expected["image_original_size"] = {"width": datasets.Value("int64"), "height": datasets.Value("int64")}
    assert infos["default"].features == expected
    assert datasets.Features.from_arrow_schema(pq.read_schema(next(out.rglob("*.parquet")))) == expected
    text = (out / "README.md").read_text()
    assert "**Downscaled images.**" in text and "1 such image(s)" in text and "`image_original_size`" in text
