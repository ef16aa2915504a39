"""Data access: Hub-or-local resolution and loud, precise failures on bad rows."""

import io
import os

import pytest
from PIL import Image

from lmms_spatial.data.answer_space import answer_space
from lmms_spatial.data.images import BadDocumentError, load_image, load_images, require
from lmms_spatial.data.sources import OFFLINE_VARS, DataUnavailable, dataset_source


def test_hub_id_at_its_pinned_commit_is_used_when_the_env_var_is_unset(monkeypatch):
    for name in ("LMMS_SPATIAL_MMSI_PATH", "LMMS_SPATIAL_MMSI_REVISION", *OFFLINE_VARS):
        monkeypatch.delenv(name, raising=False)
    source = dataset_source("mmsi")
    pinned = {"revision": "ec7c92bfaf7728fcca1d61e3e224e190af309436"}
    assert (source.path, source.kwargs, source.local) == ("RunsenXu/MMSI-Bench", pinned, False)
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_REVISION", "main")  # the override; main is datasets' default
    assert dataset_source("mmsi").kwargs == {}


def test_a_local_folder_is_loaded_as_is(monkeypatch, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test-00000.parquet").write_bytes(b"")
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(tmp_path))
    assert dataset_source("mmsi").path == str(tmp_path.resolve())


def test_a_single_parquet_file_becomes_the_test_split(monkeypatch, tmp_path):
    file = tmp_path / "mmsi.parquet"
    file.write_bytes(b"")
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(file))
    source = dataset_source("mmsi")
    assert source.path == "parquet"
    assert source.kwargs == {"data_files": {"test": str(file.resolve())}}


def test_a_missing_local_path_fails_naming_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(tmp_path / "nope"))
    with pytest.raises(DataUnavailable, match="LMMS_SPATIAL_MMSI_PATH"):
        dataset_source("mmsi")


@pytest.mark.parametrize(
    ("key", "variable"),
    [("dori", "LMMS_SPATIAL_DORI_PATH"), ("odi_bench", "LMMS_SPATIAL_ODI_PATH"),
     ("osr_bench", "LMMS_SPATIAL_OSR_PATH"), ("mmperspective", "LMMS_SPATIAL_MMPERSPECTIVE_PATH")],
)  # fmt: skip
def test_a_release_that_cannot_be_had_fails_at_once_naming_the_variable_and_the_convert_command(
    monkeypatch, tmp_path, key, variable
):
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(DataUnavailable) as caught:
        dataset_source(key)
    message = str(caught.value)
    assert variable in message and f"lmms-spatial convert {key}" in message and "\n" not in message


def test_an_empty_local_folder_fails_naming_the_variable(monkeypatch, tmp_path):
    (tmp_path / "README.md").write_text("no data here")
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(tmp_path))
    with pytest.raises(DataUnavailable, match=r"LMMS_SPATIAL_MMSI_PATH=.*: the folder holds no data files"):
        dataset_source("mmsi")


def test_offline_without_the_dataset_in_the_cache_fails_at_once(monkeypatch, tmp_path):
    for name in ("LMMS_SPATIAL_MMSI_PATH", "LMMS_SPATIAL_MMSI_REVISION", "HF_HUB_CACHE", *OFFLINE_VARS):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # the hub cache is HF_HOME/hub
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    with pytest.raises(DataUnavailable) as stopped:
        dataset_source("mmsi")
    assert str(stopped.value) == (  # the pinned commit, and the cache looked in (HF_HOME is easy to get wrong)
        "mmsi: offline (HF_HUB_OFFLINE) and RunsenXu/MMSI-Bench@ec7c92bfaf7728fcca1d61e3e224e190af309436 is not in the "
        f"Hugging Face cache {str(tmp_path / 'hub')!r}; download it once with network access, or set "
        "LMMS_SPATIAL_MMSI_PATH to a local copy"
    )
    (tmp_path / "datasets" / "runsenxu___mmsi-bench").mkdir(parents=True)
    assert dataset_source("mmsi").path == "RunsenXu/MMSI-Bench"  # what datasets prepared itself is enough


def test_offline_with_another_commit_of_a_pinned_release_cached_names_that_commit(monkeypatch, tmp_path):
    for name in ("LMMS_SPATIAL_MMSI_PATH", "LMMS_SPATIAL_MMSI_REVISION", "HF_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    (tmp_path / "hub" / "datasets--RunsenXu--MMSI-Bench" / "snapshots" / "abc123").mkdir(parents=True)
    with pytest.raises(DataUnavailable) as caught:
        dataset_source("mmsi")
    message = str(caught.value)
    assert "RunsenXu/MMSI-Bench@ec7c92bfaf7728fcca1d61e3e224e190af309436 is not in" in message
    assert "holds commit(s) abc123; set LMMS_SPATIAL_MMSI_REVISION to one of them" in message
    assert "LMMS_SPATIAL_MMSI_PATH" in message and "\n" not in message


def _png(colour=(10, 20, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_images_may_arrive_as_bytes_dicts_or_decoded():
    decoded = Image.new("L", (4, 3), 7)
    for value in (_png(), {"bytes": _png(), "path": None}, decoded):
        image = load_image(value, doc_id=1, field="images[0]")
        assert image.mode == "RGB" and image.size == (4, 3)


def test_a_corrupt_image_fails_naming_the_document_and_field():
    doc = {"id": 17, "images": [_png(), b"not an image"]}
    with pytest.raises(BadDocumentError, match=r"document 17, field 'images\[1\]'"):
        load_images(doc)


def test_a_missing_column_fails_naming_the_document_and_field():
    with pytest.raises(BadDocumentError, match=r"document 'x9', field 'question': missing"):
        require({"id": "x9"}, "question")


def test_answer_space_comes_from_the_options_of_each_document():
    assert answer_space({"options": ["a", "b", "c"]}) == ["A", "B", "C"]
    assert answer_space({"options": [], "answer": "Yes"}) == ["Yes", "No"]
    assert answer_space({"question": "Q?\nOptions: A: x, B: y, C: z, D: w", "answer": "B"}, "mmsi") == list("ABCD")


def _solid_png(color) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (4, 2), color).save(buf, "PNG")
    return buf.getvalue()


def test_decoded_image_cache_decodes_the_same_bytes_once_and_hands_out_copies():
    from lmms_spatial.data.images import DecodedImageCache

    cache = DecodedImageCache(capacity=2)
    a = cache.load({"bytes": _solid_png((1, 2, 3)), "path": None}, doc_id="d1", field="image")
    a.putpixel((0, 0), (9, 9, 9))  # a model editing its input does not edit the cache
    b = cache.load(_solid_png((1, 2, 3)), doc_id="d2", field="image")
    assert (cache.misses, cache.hits) == (1, 1) and b.getpixel((0, 0)) == (1, 2, 3)


def test_decoded_image_cache_forgets_the_least_recently_used_image():
    from lmms_spatial.data.images import DecodedImageCache

    cache = DecodedImageCache(capacity=2)
    for color in [(1, 1, 1), (2, 2, 2), (1, 1, 1), (3, 3, 3), (2, 2, 2)]:
        cache.load(_solid_png(color), doc_id="d", field="image")
    assert (cache.misses, cache.hits) == (4, 1)  # (2,2,2) was evicted by (3,3,3), (1,1,1) was kept by its reuse


def test_decoded_image_cache_names_the_document_of_a_corrupt_image():
    from lmms_spatial.data.images import DecodedImageCache

    with pytest.raises(BadDocumentError, match=r"'q7', field 'image'"):
        DecodedImageCache().load(b"not a png", doc_id="q7", field="image")


def _image_rows(features_of_images):
    import datasets

    cell = {"bytes": _solid_png((5, 6, 7)), "path": None}
    images = [[cell, cell]] * 3 if isinstance(features_of_images, datasets.List) else [cell] * 3
    features = datasets.Features({"images": features_of_images, "t": datasets.Value("string")})
    return datasets.Dataset.from_dict({"images": images, "t": ["a", "b", "a"]}, features=features)


def test_undecoded_rows_carry_the_bytes_of_a_list_of_images_without_copying_them():
    import datasets

    from lmms_spatial.data.images import undecoded

    ds = _image_rows(datasets.List(datasets.Image()))
    plain = undecoded(ds, "images")
    assert plain.features["images"] == datasets.List(datasets.Image(decode=False))
    assert plain[0]["images"][1]["bytes"] == _solid_png((5, 6, 7))

    def image_buffers(d):
        return [b.address for b in d.data.table.column("images").chunk(0).buffers() if b is not None]

    assert image_buffers(plain) == image_buffers(ds)  # the same arrow buffers: no image byte copied
    assert plain._fingerprint != ds._fingerprint  # later map caches do not mix the two
    assert plain.filter(lambda t: t == "a", input_columns=["t"])["t"] == ["a", "a"]


def test_undecoded_leaves_an_undecoded_column_as_it_is():
    import datasets

    from lmms_spatial.data.images import undecoded

    ds = _image_rows(datasets.Image(decode=False))
    assert undecoded(ds, "images") is ds


def test_a_local_folder_without_a_test_split_fails_naming_the_split_it_has(monkeypatch, tmp_path):
    (tmp_path / "mmsi.parquet").write_bytes(b"PAR1")  # datasets would call this split 'train'
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(tmp_path))
    with pytest.raises(DataUnavailable, match=r"as split\(s\) \['train'\], the tasks read 'test'; name the files"):
        dataset_source("mmsi")


def test_a_folders_splits_are_read_once_per_layout_and_again_after_a_file_is_renamed(monkeypatch, tmp_path):
    """Every task of a benchmark asks for the same folder: datasets' split patterns glob it once, not once per
    task; renaming the file (or any change to the folder's entries) is seen by the next check."""
    import datasets.data_files

    (tmp_path / "mmsi.parquet").write_bytes(b"PAR1")
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(tmp_path))
    real = datasets.data_files.get_data_patterns
    asked = []
    monkeypatch.setattr(datasets.data_files, "get_data_patterns", lambda folder, *a, **k: asked.append(folder)
                        or real(folder, *a, **k))  # fmt: skip
    for _ in range(3):  # three tasks of one benchmark
        with pytest.raises(DataUnavailable, match=r"as split\(s\) \['train'\]"):
            dataset_source("mmsi")
    assert asked == [str(tmp_path)]
    (tmp_path / "mmsi.parquet").rename(tmp_path / "test.parquet")
    os.utime(tmp_path, ns=(0, 10**18))  # a rename within one clock tick would keep the folder's time
    assert dataset_source("mmsi").local  # read as split 'test' now
    assert asked == [str(tmp_path), str(tmp_path)]
