"""A task's data is found when lmms-eval loads it (lmms_spatial.data.loading), never when a YAML is read."""

from __future__ import annotations

import shutil
import subprocess
import sys

import datasets
import pytest

from lmms_spatial.data import loading
from lmms_spatial.data.sources import DataUnavailable


@pytest.fixture(autouse=True)
def _fresh_loads():
    loading.forget_loaded()
    yield
    loading.forget_loaded()


def _placeholder() -> datasets.Dataset:
    return datasets.load_dataset(loading.DATASET_PATH, split="test", **loading.PLACEHOLDER_KWARGS)


def test_the_placeholder_every_yaml_names_is_one_row_that_says_it_is_one():
    placeholder = _placeholder()
    assert len(placeholder) == 1 and loading.is_placeholder(placeholder)


def test_a_placeholder_becomes_the_benchmark_named_by_the_task_and_is_loaded_once(fixture_datasets, monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(fixture_datasets["mmsi"]))
    first = loading.resolve(_placeholder(), "mmsi")
    assert len(first) == 12 and {"id", "images", "question", "answer"} <= set(first.column_names)
    assert loading.resolve(_placeholder(), "mmsi") is first  # the other tasks of the benchmark share the load


def test_data_a_yaml_names_itself_is_processed_as_it_is(monkeypatch):
    monkeypatch.delenv("LMMS_SPATIAL_MMSI_PATH", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing of ours is resolved: no error although nothing is cached
    own = datasets.Dataset.from_dict({"id": [1], "question": ["q"]})
    assert loading.resolve(own, "mmsi") is own


def test_a_config_folder_without_data_names_the_folder_and_the_variable(fixture_datasets, monkeypatch, tmp_path):
    copy = tmp_path / "osr"
    shutil.copytree(fixture_datasets["osr_bench"] / "standard", copy / "standard")  # no negative/ folder
    monkeypatch.setenv("LMMS_SPATIAL_OSR_PATH", str(copy))
    assert len(loading.resolve(_placeholder(), "osr_bench", "standard")) == 8  # the standard fixture's 8 questions
    with pytest.raises(DataUnavailable) as caught:
        loading.resolve(_placeholder(), "osr_bench", "negative")
    assert str(caught.value) == (
        f"LMMS_SPATIAL_OSR_PATH={str(copy)!r}: no data files in its folder negative/ (the negative config's test "
        "split); convert the release with `lmms-spatial convert` or point LMMS_SPATIAL_OSR_PATH at a complete copy"
    )


def test_building_the_task_index_touches_no_data(tmp_path):
    """`lmms-eval --tasks list` offline, with nothing of ours set or cached: our tasks are listed, nothing read."""
    code = "from lmms_eval.tasks import TaskManager as T; print('mmsi_vanilla' in T(include_defaults=False).all_tasks)"
    env = {"PATH": "/usr/bin:/bin", "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[-1] == "True"
    assert not (tmp_path / "hf" / "datasets").exists() and not (tmp_path / "hf" / "lmms_spatial").exists()


@pytest.mark.parametrize(("expected", "found"), [("mmsi", "dori"), ("dori", "osr_bench"), ("odi_bench", "mmsi")])
def test_a_variable_pointing_at_another_benchmarks_copy_names_the_variable_what_it_holds_and_what_was_expected(
    fixture_datasets, monkeypatch, expected, found
):
    from lmms_spatial.data.registry import BENCHMARKS

    variable, other = BENCHMARKS[expected].env_var, BENCHMARKS[found].env_var
    monkeypatch.setenv(variable, str(fixture_datasets[found]))
    with pytest.raises(DataUnavailable) as caught:
        loading.resolve(_placeholder(), expected)
    assert str(caught.value) == (
        f"{variable}={str(fixture_datasets[found])!r} holds {found} data (the layout of hub_cards/{found}/README.md), "
        f"not {expected}: point {variable} at a {expected} copy ({found} is read from {other})"
    )


def test_a_copy_of_the_right_layout_with_extra_columns_is_read(fixture_datasets, monkeypatch, tmp_path):
    rows = datasets.load_dataset(str(fixture_datasets["mmsi"]), split="test").add_column("source", ["x"] * 12)
    rows.to_parquet(str(tmp_path / "test.parquet"))  # 'source' is one of DORI's columns too: still MMSI-Bench
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(tmp_path))
    assert len(loading.resolve(_placeholder(), "mmsi")) == 12


def test_a_copy_missing_a_column_the_task_reads_names_the_variable_and_the_layout(fixture_datasets, monkeypatch,
                                                                                  tmp_path):  # fmt: skip
    from lmms_spatial.tasks.mmsi.adapter import process_docs

    rows = datasets.load_dataset(str(fixture_datasets["mmsi"]), split="test").remove_columns(["answer"])
    rows.to_parquet(str(tmp_path / "test.parquet"))
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(tmp_path))
    with pytest.raises(DataUnavailable) as caught:
        process_docs(_placeholder())
    message = str(caught.value)
    assert message.startswith(f"LMMS_SPATIAL_MMSI_PATH={str(tmp_path)!r}: not mmsi's layout (document '<every row>', "
                              "field 'answer': missing column")  # fmt: skip
    assert message.endswith("point it at a mmsi copy in the layout of hub_cards/mmsi/README.md")  # no converter


def test_a_yamls_own_data_missing_a_column_keeps_the_documents_error(monkeypatch):
    from lmms_spatial.data.images import BadDocumentError
    from lmms_spatial.tasks.mmsi.adapter import process_docs

    own = datasets.Dataset.from_dict({"id": [1], "question": ["q"], "images": [[]]})
    with pytest.raises(BadDocumentError, match="field 'answer': missing column"):
        process_docs(own)  # the user's own file: no variable of ours to name
