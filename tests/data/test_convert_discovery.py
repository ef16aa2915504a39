"""``lmms-spatial convert`` finds every converter by its file name in the benchmark's folder; nothing shared is
edited."""

from __future__ import annotations

import sys

import lmms_spatial.data.convert as convert
import lmms_spatial.tasks as tasks_pkg


def _benchmark_folder(root, key: str, converter: str = "") -> None:
    """``root/<key>/`` as a benchmark folder (a package) holding ``convert.py``."""
    (root / key).mkdir()
    (root / key / "__init__.py").write_text("")
    (root / key / "convert.py").write_text(converter)


def test_the_shipped_converters_are_found_by_file_name_and_say_what_they_expect():
    assert sorted(convert.CONVERTERS) == ["dori", "mmperspective", "odi_bench", "osr_bench"]
    for key in convert.CONVERTERS:
        assert convert.CONVERTERS[key] == f"lmms_spatial.tasks.{key}.convert"
        assert isinstance(convert.module(key).EXPECTED, str) and convert.module(key).EXPECTED


def test_a_module_beside_them_is_a_converter_named_by_its_file_and_helpers_are_not(tmp_path):
    _benchmark_folder(tmp_path, "zz_orient")
    _benchmark_folder(tmp_path, "_helper")
    (tmp_path / "zz_no_converter").mkdir()
    (tmp_path / "zz_no_converter" / "__init__.py").write_text("")
    assert convert.discovered([str(tmp_path)]) == {"zz_orient": "lmms_spatial.tasks.zz_orient.convert"}


def test_a_discovered_converter_is_imported_by_its_key(tmp_path, monkeypatch):
    _benchmark_folder(tmp_path, "zz_orient", 'EXPECTED = "a folder of *.jsonl"\n\ndef main(argv=None):\n    return 7\n')
    monkeypatch.setattr(tasks_pkg, "__path__", [*tasks_pkg.__path__, str(tmp_path)])
    for key, entry in convert.discovered([str(tmp_path)]).items():
        monkeypatch.setitem(convert.CONVERTERS, key, entry)
    try:
        assert convert.module("zz_orient").main([]) == 7
        assert convert.module("zz_orient").EXPECTED == "a folder of *.jsonl"
    finally:
        sys.modules.pop("lmms_spatial.tasks.zz_orient.convert", None)
        sys.modules.pop("lmms_spatial.tasks.zz_orient", None)
