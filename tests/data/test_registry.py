"""``lmms_spatial.data.registry``: benchmarks register without the demo package, and a bad declaration says why."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import lmms_spatial.data.registry as registry
from lmms_spatial.data.benchmark import Benchmark


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(m for m in sys.modules if m.startswith('lmms_spatial')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_the_registry_imports_neither_the_demo_package_nor_the_sources():
    loaded = _loaded_after("import lmms_spatial.data.registry")
    assert "lmms_spatial.data.registry" in loaded
    assert not {"lmms_spatial.data.demo", "lmms_spatial.data.sources"} & loaded


def test_resolving_a_data_source_does_not_import_the_demo_package():
    loaded = _loaded_after("from lmms_spatial.data.sources import BENCHMARKS, dataset_source")
    assert "lmms_spatial.data.demo" not in loaded


def test_sources_reads_the_registry_s_benchmarks():
    from lmms_spatial.data.sources import BENCHMARKS

    assert BENCHMARKS is registry.BENCHMARKS
    assert list(BENCHMARKS)[:5] == ["mmsi", "dori", "mmperspective", "odi_bench", "osr_bench"]
    assert BENCHMARKS["osr_bench"].revision_var == "LMMS_SPATIAL_OSR_REVISION"


@pytest.fixture
def declarations(tmp_path, monkeypatch):
    """A folder searched as part of the registry package; write(name, body) adds a module to it."""
    monkeypatch.setattr(registry, "__path__", [*registry.__path__, str(tmp_path)])
    written: list[str] = []

    def write(name: str, body: str) -> None:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
        written.append(f"{registry.__name__}.{name}")

    yield write
    for module in written:
        sys.modules.pop(module, None)


def test_a_module_in_the_registry_declares_its_benchmark(declarations):
    declarations(
        "zz_orient",
        """
        from lmms_spatial.data.benchmark import Benchmark

        BENCHMARK = Benchmark("zz_orient", "someone/Orient", "LMMS_SPATIAL_ZZ_ORIENT_PATH")
        """,
    )
    assert registry._declared() == {
        "zz_orient": Benchmark("zz_orient", "someone/Orient", "LMMS_SPATIAL_ZZ_ORIENT_PATH")
    }


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        ("X = 1\n", TypeError, r"zz_bad\.py must declare BENCHMARK = Benchmark\('zz_bad'"),
        (
            "from lmms_spatial.data.benchmark import Benchmark\nBENCHMARK = Benchmark('other', '', 'V')\n",
            ValueError,
            "declares the key 'other'; the module must be named after its key",
        ),
    ],
)
def test_a_bad_declaration_names_its_file_and_the_fix(declarations, body, error, message):
    declarations("zz_bad", body)
    with pytest.raises(error, match=message):
        registry._declared()


def test_a_declaration_cannot_take_a_shipped_key(declarations):
    declarations("mmsi", "from lmms_spatial.data.benchmark import Benchmark\nBENCHMARK = Benchmark('mmsi', '', 'V')\n")
    with pytest.raises(ValueError, match="'mmsi' is a shipped benchmark"):
        registry._declared()
