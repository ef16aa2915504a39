"""Run options: environment-variable task settings, recorded per sample and restored by replay."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lmms_spatial import run_options
from lmms_spatial.data.sources import BENCHMARKS
from lmms_spatial.run_options import RunOptionsConflict, from_record, in_effect, restore

ROOT = Path(__file__).resolve().parents[1]


def test_only_the_options_that_are_set_are_in_effect_for_their_benchmark():
    env = {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288", "LMMS_SPATIAL_ODI_RESIZE": " ", "LMMS_SPATIAL_DORI_SEED": "42"}
    assert in_effect("odi_bench", env) == {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"}
    assert in_effect("dori", env) == {"LMMS_SPATIAL_DORI_SEED": "42"}
    assert in_effect("mmsi", env) == {}


def test_an_old_dori_record_without_run_options_is_read_from_its_option_seed():
    assert from_record({"granularity": "coarse", "option_seed": "1998"}) == {"LMMS_SPATIAL_DORI_SEED": "1998"}
    assert from_record({"granularity": "coarse", "option_seed": "original"}) == {}
    assert from_record({"parsed": "A"}) is None  # a record of a benchmark without options


def test_restore_sets_an_unset_option_to_the_recorded_value():
    env: dict[str, str] = {}
    restored = restore({"dori_x": {"LMMS_SPATIAL_DORI_SEED": "42"}, "dori_y": {"LMMS_SPATIAL_DORI_SEED": "42"}}, env)
    assert restored == env == {"LMMS_SPATIAL_DORI_SEED": "42"}


def test_restore_keeps_an_option_already_set_to_the_recorded_value():
    env = {"LMMS_SPATIAL_DORI_SEED": "42"}
    assert restore({"dori_x": {"LMMS_SPATIAL_DORI_SEED": "42"}}, env) == {}
    assert env == {"LMMS_SPATIAL_DORI_SEED": "42"}


def test_restore_refuses_an_environment_that_contradicts_the_samples():
    with pytest.raises(RunOptionsConflict, match="LMMS_SPATIAL_DORI_SEED=1998 is set, but .* '42'"):
        restore({"dori_x": {"LMMS_SPATIAL_DORI_SEED": "42"}}, {"LMMS_SPATIAL_DORI_SEED": "1998"})


def test_restore_refuses_an_option_set_for_samples_generated_without_it():
    # an unseeded ODI run replayed with a pixel cap exported in the shell
    with pytest.raises(RunOptionsConflict, match="generated with it unset"):
        restore({"odi_bench_close_ar": {}}, {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"})


def test_restore_refuses_samples_of_one_benchmark_generated_with_different_values():
    with pytest.raises(RunOptionsConflict, match="dori_x: '42', dori_y: '1998'"):
        restore({"dori_x": {"LMMS_SPATIAL_DORI_SEED": "42"}, "dori_y": {"LMMS_SPATIAL_DORI_SEED": "1998"}}, {})


def test_options_of_other_benchmarks_are_left_alone():
    env = {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"}
    assert restore({"dori_x": {"LMMS_SPATIAL_DORI_SEED": "42"}}, env) == {"LMMS_SPATIAL_DORI_SEED": "42"}
    assert env["LMMS_SPATIAL_ODI_MAX_PIXELS"] == "524288"


# the code that reads task settings: each benchmark's folder (``pytest -k <key>``) and the shared data code
SOURCES = {
    **{key: sorted(ROOT.joinpath("tasks", key).rglob("*.py")) for key in BENCHMARKS},
    "shared": sorted(ROOT.joinpath("lmms_spatial", "data").rglob("*.py")),
}


def _task_settings(paths: list[Path]) -> set[str]:
    """The ``LMMS_SPATIAL_*`` variables the files name, less the data paths and the judge's settings."""
    named = {name for path in paths for name in re.findall(r'"(LMMS_SPATIAL_[A-Z_]+)"', path.read_text())}
    data_paths = {b.env_var for b in BENCHMARKS.values()}
    return {n for n in named - data_paths if not n.startswith("LMMS_SPATIAL_JUDGE")}


@pytest.mark.parametrize("where", list(SOURCES))
def test_every_environment_variable_a_task_reads_is_a_registered_run_option(where):
    """A task setting read from the environment must be recorded, or replay and reports miss it."""
    unregistered = sorted(_task_settings(SOURCES[where]) - set(run_options.BY_ENV))
    assert unregistered == [], "declare them as run_options of BENCHMARK (lmms_spatial.benchmark.RunOption)"


def test_every_registered_run_option_is_read_by_a_task():
    assert set().union(*(_task_settings(paths) for paths in SOURCES.values())) == set(run_options.BY_ENV)
