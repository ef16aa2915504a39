"""Reading lmms-eval 0.7.x samples files for the replay model."""

import json

import pytest

from lmms_spatial.models.replay import find_samples_files, load_responses


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_raw_resps_win_over_filtered_ones(tmp_path):
    f = _write(
        tmp_path / "20260101_000000_samples_mmsi_vanilla.jsonl",
        [
            {"doc_id": 0, "resps": [["<think>x</think>``B``"]], "filtered_resps": ["``B``"]},
            {"doc_id": 1, "filtered_resps": ["C"]},  # lmms-eval drops resps when equal
            {"doc_id": 2, "filtered_resps": "D"},
        ],
    )
    responses = load_responses(find_samples_files(str(f)))
    assert responses == {
        ("mmsi_vanilla", 0): "<think>x</think>``B``",
        ("mmsi_vanilla", 1): "C",
        ("mmsi_vanilla", 2): "D",
    }


def test_a_folder_is_searched_and_the_task_comes_from_the_file_name(tmp_path):
    (tmp_path / "model").mkdir()
    _write(tmp_path / "model" / "20260101_000000_samples_mmsi_circular.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    _write(tmp_path / "20260101_000000_samples_mmsi_cot.jsonl", [{"doc_id": 0, "resps": ["B"]}])
    assert sorted(find_samples_files(str(tmp_path))) == ["mmsi_circular", "mmsi_cot"]


def test_the_newest_file_of_a_task_is_replayed(tmp_path):
    _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["old"]}])
    _write(tmp_path / "20260102_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["new"]}])
    assert load_responses(find_samples_files(str(tmp_path))) == {("t", 0): "new"}


def test_a_line_that_is_not_a_sample_fails_with_its_location(tmp_path):
    f = _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"no_doc_id": 1}])
    with pytest.raises(ValueError, match=r"samples_t.jsonl:1"):
        load_responses(find_samples_files(str(f)))
