"""A release whose columns were renamed: the user maps them (``--map`` / ``LMMS_SPATIAL_<NAME>_MAP``)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hub_releases import osr_release, place_in_hub_cache  # noqa: E402
from offline_hub import offline_hf_home  # noqa: E402
from renamed_releases import DORI_MAP, renamed_dori_release, write_release  # noqa: E402

from lmms_spatial.cli import main as cli  # noqa: E402
from lmms_spatial.data.cards import layout_columns  # noqa: E402
from lmms_spatial.data.column_map import MappingError, parse, spellings, suggest  # noqa: E402
from lmms_spatial.data.convert import CONVERTERS, module  # noqa: E402
from lmms_spatial.data.prepare import MARKER  # noqa: E402
from lmms_spatial.data.sources import DataUnavailable, dataset_source  # noqa: E402


@pytest.fixture
def hf_home(tmp_path, monkeypatch) -> Path:
    return offline_hf_home(tmp_path, monkeypatch)


def test_a_mapping_names_layout_fields_and_release_columns_and_reads_them_under_the_converters_names():
    dori = parse("dori", "question=query, answer=correct_option")
    assert dori.pairs == (("question", "query"), ("answer", "correct_option"))
    assert dori.apply({"query": "Q?", "correct_option": "B", "id": "1"}) == {
        "query": "Q?", "correct_option": "B", "id": "1", "question": "Q?", "answer": "B",
    }  # fmt: skip
    osr = parse("osr_bench", "skill=skill_type,image=panorama")
    assert osr.renames == (("skill_type", "skills_tested"), ("panorama", "image_id"))  # the CSV's own names
    assert osr.columns(["panorama", "turn_id"]) == ["panorama", "turn_id", "image_id"]


@pytest.mark.parametrize(
    ("key", "text", "message"),
    [
        ("dori", "questoin=query", "--map: 'questoin' is not a column of dori's normalised layout; mappable: id, "),
        ("osr_bench", "cogmap=grid", "--map: 'cogmap' is made by the osr_bench converter, not read from one release"),
        ("odi_bench", "question", "--map: 'question' is not FIELD=COLUMN (e.g. question=query); mappable: id, image"),
        ("dori", "answer=gt,answer=label", "--map: 'answer' is mapped twice"),
        ("mmsi", "answer=gt", "--map: mmsi has no converter that takes a column mapping"),
    ],
)
def test_a_mapping_that_does_not_fit_the_layout_is_refused_in_one_line(key, text, message):
    with pytest.raises(MappingError) as caught:
        parse(key, text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("key", sorted(k for k in CONVERTERS if hasattr(module(k), "SPELLINGS")))
def test_every_mappable_field_is_a_column_of_the_normalised_layout(key):
    known = spellings(key)
    assert set(known) <= layout_columns(key) and set(module(key).REQUIRED) <= set(known)
    assert all(names and names[0] for names in known.values())


def test_the_renamed_dori_release_fails_its_paragraph_ending_with_the_mapping_and_converts_with_it(
    hf_home, monkeypatch
):
    snapshot = place_in_hub_cache(hf_home / "hub", "appledora/DORI-Benchmark", renamed_dori_release())
    with pytest.raises(DataUnavailable) as caught:
        dataset_source("dori")
    message = str(caught.value)
    assert "\n" not in message and "questions.jsonl has keys ['correct_option', 'granularity', 'id'," in message
    assert message.endswith(
        f"The names found make a mapping likely: set LMMS_SPATIAL_DORI_MAP={DORI_MAP} "
        f"(or `lmms-spatial convert dori RELEASE OUT --map {DORI_MAP}`)."
    )
    monkeypatch.setenv("LMMS_SPATIAL_DORI_MAP", DORI_MAP)
    source = dataset_source("dori")
    rows = datasets.load_dataset(source.path)["test"]
    assert rows["task"] == ["view_parallelism"] * 2 and rows["answer"] == ["A", "B"]
    assert rows["question"] == ["Determine which way Object A's front is facing relative to the camera."] * 2
    marker = json.loads((Path(source.path).parent / MARKER).read_text())
    assert (marker["map"], marker["commit"]) == (DORI_MAP, snapshot.name)


def test_a_prepared_copy_is_remade_when_the_mapping_changes(hf_home, monkeypatch):
    files = renamed_dori_release()
    rows = [json.loads(line) for line in files["questions.jsonl"].decode().splitlines()]
    files["questions.jsonl"] = "".join(json.dumps({**r, "gt_letter": "C"}) + "\n" for r in rows).encode()
    place_in_hub_cache(hf_home / "hub", "appledora/DORI-Benchmark", files)
    monkeypatch.setenv("LMMS_SPATIAL_DORI_MAP", DORI_MAP)
    assert datasets.load_dataset(dataset_source("dori").path)["test"]["answer"] == ["A", "B"]
    monkeypatch.setenv("LMMS_SPATIAL_DORI_MAP", "task=task_name,question=query,answer=gt_letter")
    assert datasets.load_dataset(dataset_source("dori").path)["test"]["answer"] == ["C", "C"]


def test_an_invalid_mapping_variable_stops_preparation_in_one_line(hf_home, monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_ODI_MAP", "picture=img")
    with pytest.raises(DataUnavailable, match=r"^odi_bench: LMMS_SPATIAL_ODI_MAP: 'picture' is not a column of"):
        dataset_source("odi_bench")


def test_the_convert_command_fails_without_the_mapping_suggesting_it_and_converts_with_it(tmp_path, capsys):
    release = write_release(renamed_dori_release(), tmp_path / "DORI")
    assert cli(["convert", "dori", str(release), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    missing = "missing (question / task_description / prompt / full_prompt)"
    assert err[0] == f"REJECT questions.jsonl row 0: field 'question': {missing}"
    assert err[-1] == f"lmms-spatial convert: the names found make a mapping likely: --map {DORI_MAP}"
    assert not (tmp_path / "out").exists()
    assert cli(["convert", "dori", str(release), str(tmp_path / "out"), "--map", DORI_MAP]) == 0
    assert pq.read_table(tmp_path / "out" / "test.parquet").column("answer").to_pylist() == ["A", "B"]


def test_a_renamed_osr_csv_column_converts_with_its_mapping(tmp_path, capsys):
    files = osr_release()
    for name in ("qa.csv", "qa_with_negative.csv"):
        files[name] = files[name].replace(b"skills_tested", b"skill_type", 1)  # the header only
    release = write_release(files, tmp_path / "OSR")
    assert cli(["convert", "osr_bench", str(release), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "lacks columns ['skills_tested']" in err and err.rstrip().endswith("--map skill=skill_type")
    assert cli(["convert", "osr_bench", str(release), str(tmp_path / "out"), "--map", "skill=skill_type"]) == 0
    skills = pq.read_table(tmp_path / "out" / "standard").column("skill").to_pylist()
    assert skills == ["object_counting", "relative_distance", "relative_direction"] * 2


def test_odi_and_mmperspective_converters_read_mapped_keys(tmp_path):
    from lmms_spatial.tasks.mmperspective import convert as mmperspective
    from lmms_spatial.tasks.odi_bench import convert as odi_bench

    (tmp_path / "QAs").mkdir()
    (tmp_path / "img.jpg").write_bytes(_jpeg())
    row = {"picture": "img.jpg", "ask": "Is there a dog?", "truth": "yes"}
    (tmp_path / "QAs" / "existence.jsonl").write_text(json.dumps(row) + "\n")
    result = odi_bench.collect(tmp_path, column_map=parse("odi_bench", "image=picture,question=ask,answer=truth"))
    assert [(r["question"], r["answer"]) for r in result.rows] == [("Is there a dog?", "Yes")] and not result.problems
    record = {"id": "1", "images": ["img.jpg"], "task": "VPP", "query": "Where?", "options": ["a", "b"], "answer": "B"}
    (tmp_path / "q.json").write_text(json.dumps([record]))
    path = mmperspective.convert(
        tmp_path, tmp_path / "q.json", tmp_path / "mmp", parse("mmperspective", "question=query")
    )
    assert pq.read_table(path).column("question").to_pylist() == ["Where?"]


def test_no_mapping_is_suggested_when_two_columns_are_equally_likely():
    found = ["id", "task", "granularity", "options", "answer", "image", "query", "prompt_text"]
    assert suggest("dori", found) is None  # question: "query" or "prompt_text"?
    assert suggest("dori", [c for c in found if c != "prompt_text"]).text == "question=query"


def test_a_mapped_column_the_release_lacks_is_named(hf_home, monkeypatch):
    place_in_hub_cache(hf_home / "hub", "appledora/DORI-Benchmark", renamed_dori_release())
    monkeypatch.setenv("LMMS_SPATIAL_DORI_MAP", "task=task_name,question=querry,answer=correct_option")
    with pytest.raises(DataUnavailable) as caught:
        dataset_source("dori")
    message = str(caught.value)
    assert "LMMS_SPATIAL_DORI_MAP names column(s) ['querry'] that no table of the release has." in message
    mended = "task=task_name,answer=correct_option,question=query"  # the found pairs kept, the wrong one replaced
    assert message.endswith(
        f"set LMMS_SPATIAL_DORI_MAP={mended} (or `lmms-spatial convert dori RELEASE OUT --map {mended}`)."
    )


def _jpeg() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (16, 8), "red").save(buffer, format="JPEG")
    return buffer.getvalue()
