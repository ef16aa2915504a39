"""``lmms-spatial convert`` finds every converter by its file name; nothing shared is edited."""

from __future__ import annotations

import sys

import lmms_spatial.data.convert as convert


def test_the_shipped_converters_are_found_by_file_name_and_say_what_they_expect():
    assert sorted(convert.CONVERTERS) == ["dori", "mmperspective", "odi_bench", "osr_bench"]
    for key in convert.CONVERTERS:
        assert convert.CONVERTERS[key] == f"lmms_spatial.data.convert.{key}"
        assert isinstance(convert.module(key).EXPECTED, str) and convert.module(key).EXPECTED


def test_a_module_beside_them_is_a_converter_named_by_its_file_and_helpers_are_not(tmp_path):
    (tmp_path / "zz_orient.py").write_text("")
    (tmp_path / "_helper.py").write_text("")
    assert convert.discovered([str(tmp_path)]) == {"zz_orient": "lmms_spatial.data.convert.zz_orient"}


def test_a_discovered_converter_is_imported_by_its_key(tmp_path, monkeypatch):
    (tmp_path / "zz_orient.py").write_text('EXPECTED = "a folder of *.jsonl"\n\ndef main(argv=None):\n    return 7\n')
    monkeypatch.setattr(convert, "__path__", [*convert.__path__, str(tmp_path)])
    for key, entry in convert.discovered([str(tmp_path)]).items():
        monkeypatch.setitem(convert.CONVERTERS, key, entry)
    try:
        assert convert.module("zz_orient").main([]) == 7
        assert convert.module("zz_orient").EXPECTED == "a folder of *.jsonl"
    finally:
        sys.modules.pop("lmms_spatial.data.convert.zz_orient", None)
