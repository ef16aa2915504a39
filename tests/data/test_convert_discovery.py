"""``lmms-spatial convert`` finds a new benchmark's converter by its file name; nothing shared is edited."""

from __future__ import annotations

import sys

import lmms_spatial.data.convert as convert


def test_a_module_in_the_convert_package_is_a_converter_named_by_its_key(tmp_path, monkeypatch):
    assert convert.converter_keys() == ["dori", "mmperspective", "odi_bench", "osr_bench"]
    (tmp_path / "zz_orient.py").write_text(
        'RELEASE_LAYOUT = "a folder of *.jsonl"\n\ndef main(argv=None):\n    return 7\n'
    )
    monkeypatch.setattr(convert, "__path__", [*convert.__path__, str(tmp_path)])
    try:
        assert convert.converter_keys() == ["dori", "mmperspective", "odi_bench", "osr_bench", "zz_orient"]
        assert convert.module("zz_orient").main([]) == 7
        assert convert.release_layout("zz_orient") == "a folder of *.jsonl"
        assert convert.release_layout("dori") == convert.CONVERTERS["dori"][1]
    finally:
        sys.modules.pop("lmms_spatial.data.convert.zz_orient", None)
