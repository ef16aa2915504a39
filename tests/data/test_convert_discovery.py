"""``lmms-spatial convert`` finds every converter through its benchmark's ``BENCHMARK.convert``; nothing shared is
edited."""

from __future__ import annotations

import sys

import pytest

import lmms_spatial.data.convert as convert
import lmms_spatial.tasks as tasks_pkg
from lmms_spatial.benchmark import Benchmark
from lmms_spatial.data.registry import BENCHMARKS


def test_the_shipped_converters_are_their_benchmarks_convert_parts():
    shipped = ["dori", "mmperspective", "odi_bench", "osr_bench"]  # mmsi is read as published
    assert [key for key in convert.CONVERTERS if key in [*shipped, "mmsi"]] == shipped
    assert all(convert.CONVERTERS[key] == f"lmms_spatial.tasks.{key}.convert" for key in shipped)


@pytest.mark.parametrize("key", [pytest.param(key, id=key) for key in convert.CONVERTERS])
def test_every_converter_is_its_benchmark_s_convert_part_and_says_what_it_expects(key):
    assert convert.CONVERTERS[key] == f"lmms_spatial.tasks.{key}.{BENCHMARKS[key].convert}"
    expected = convert.module(key).EXPECTED
    assert isinstance(expected, str) and expected, f"tasks/{key}/convert.py: EXPECTED says what a release holds"


def test_a_benchmark_naming_a_convert_part_has_a_converter_and_one_naming_none_has_not():
    found = convert.discovered(
        {
            "zz_orient": Benchmark("zz_orient", "", "V", convert="convert"),
            "zz_elsewhere": Benchmark("zz_elsewhere", "", "W", convert="release_reader"),
            "zz_no_converter": Benchmark("zz_no_converter", "", "X"),
        }
    )
    assert found == {
        "zz_orient": "lmms_spatial.tasks.zz_orient.convert",
        "zz_elsewhere": "lmms_spatial.tasks.zz_elsewhere.release_reader",
    }


def test_a_discovered_converter_is_imported_by_its_key(tmp_path, monkeypatch):
    (tmp_path / "zz_orient").mkdir()
    (tmp_path / "zz_orient" / "__init__.py").write_text("")
    (tmp_path / "zz_orient" / "convert.py").write_text(
        'EXPECTED = "a folder of *.jsonl"\n\ndef main(argv=None):\n    return 7\n'
    )
    monkeypatch.setattr(tasks_pkg, "__path__", [*tasks_pkg.__path__, str(tmp_path)])
    for key, entry in convert.discovered({"zz_orient": Benchmark("zz_orient", "", "V", convert="convert")}).items():
        monkeypatch.setitem(convert.CONVERTERS, key, entry)
    try:
        assert convert.module("zz_orient").main([]) == 7
        assert convert.module("zz_orient").EXPECTED == "a folder of *.jsonl"
    finally:
        sys.modules.pop("lmms_spatial.tasks.zz_orient.convert", None)
        sys.modules.pop("lmms_spatial.tasks.zz_orient", None)
