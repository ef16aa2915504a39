"""``lmms_spatial.data.registry``: benchmarks register without the demo package, and a bad declaration says why."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import lmms_spatial.data.registry as registry
from lmms_spatial.benchmark import Benchmark


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
    assert {"mmsi", "dori", "mmperspective", "odi_bench", "osr_bench"} <= set(BENCHMARKS)
    assert list(BENCHMARKS) == sorted(BENCHMARKS)  # module-name order
    assert BENCHMARKS["osr_bench"].revision_var == "LMMS_SPATIAL_OSR_REVISION"


@pytest.fixture
def declarations(tmp_path, monkeypatch):
    """A folder searched as part of the tasks package; write(name, body) adds a benchmark folder ``name/`` to it
    whose ``__init__.py`` is ``body``."""
    import lmms_spatial.tasks as tasks_pkg

    monkeypatch.setattr(tasks_pkg, "__path__", [*tasks_pkg.__path__, str(tmp_path)])
    written: list[str] = []

    def write(name: str, body: str) -> None:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(textwrap.dedent(body))
        written.append(f"{tasks_pkg.__name__}.{name}")

    yield write
    for module in written:
        sys.modules.pop(module, None)


def test_a_module_in_the_registry_declares_its_benchmark(declarations):
    declarations(
        "zz_orient",
        """
        from lmms_spatial.benchmark import Benchmark

        BENCHMARK = Benchmark("zz_orient", "someone/Orient", "LMMS_SPATIAL_ZZ_ORIENT_PATH")
        """,
    )
    declared = registry._declared()
    assert declared["zz_orient"] == Benchmark("zz_orient", "someone/Orient", "LMMS_SPATIAL_ZZ_ORIENT_PATH")
    assert list(declared) == sorted(registry.BENCHMARKS.keys() | {"zz_orient"})  # found beside the shipped ones


@pytest.mark.parametrize(
    ("body", "error", "message"),
    [
        ("X = 1\n", TypeError, r"tasks/zz_bad/__init__\.py must declare BENCHMARK = Benchmark\(key='zz_bad'"),
        (
            "from lmms_spatial.benchmark import Benchmark\nBENCHMARK = Benchmark('other', '', 'V')\n",
            ValueError,
            "declares the key 'other'; the folder must be named after its key",
        ),
    ],
)
def test_a_bad_declaration_names_its_file_and_the_fix(declarations, body, error, message):
    declarations("zz_bad", body)
    with pytest.raises(error, match=message):
        registry._declared()


def test_the_shipped_benchmarks_are_declared_in_their_own_modules_like_a_new_one():
    import lmms_spatial.tasks.mmsi as mmsi
    import lmms_spatial.tasks.osr_bench as osr

    assert registry.BENCHMARKS["mmsi"] is mmsi.BENCHMARK
    assert mmsi.MMSI_REVISION == mmsi.BENCHMARK.revision == "ec7c92bfaf7728fcca1d61e3e224e190af309436"
    assert osr.BENCHMARK.allow_patterns == ("qa.csv", "qa_with_negative.csv", "data/*/rgb.png", "README.md")
    assert (registry.BENCHMARKS["dori"].converter, registry.BENCHMARKS["dori"].hub_is_normalised) == ("dori", False)


def test_features_come_from_the_benchmark_s_module_and_a_missing_one_names_the_fix(declarations, monkeypatch):
    assert list(registry.features("odi_bench")) == ["id", "image", "task", "question", "options", "answer",
                                                    "answer_text"]  # fmt: skip
    declarations(
        "zz_plain", "from lmms_spatial.benchmark import Benchmark\nBENCHMARK = Benchmark('zz_plain', '', 'V')\n"
    )
    monkeypatch.setattr(registry, "BENCHMARKS", {**registry.BENCHMARKS, **registry._declared()})
    with pytest.raises(TypeError, match=r"tasks/zz_plain/__init__\.py must name features="):
        registry.features("zz_plain")
    with pytest.raises(KeyError, match="not a benchmark"):
        registry.features("zz_nowhere")


def test_mmsi_s_schema_keeps_the_release_s_descriptive_columns():
    columns = list(registry.features("mmsi"))
    assert columns[:6] == ["id", "images", "question_type", "question", "answer", "thought"]
    assert {"mean_normed_duration_seconds", "difficulty"} <= set(columns)


def test_a_demo_part_without_a_builder_names_its_module_and_what_it_lacks(declarations, tmp_path, monkeypatch):
    import lmms_spatial.data.demo as demo

    declarations(
        "zz_orphan",
        "from lmms_spatial.benchmark import Benchmark\n"
        "BENCHMARK = Benchmark(key='zz_orphan', hub_id='', env_var='V', demo='demo')\n",
    )
    (tmp_path / "zz_orphan" / "demo.py").write_text("DEMO_TASKS = ['zz_orphan']\n")  # no build()
    monkeypatch.setattr(registry, "BENCHMARKS", {**registry.BENCHMARKS, **registry._declared()})
    try:
        with pytest.raises(TypeError, match=r"lmms_spatial\.tasks\.zz_orphan\.demo must define build\(out_dir, n\) "
                           r"and DEMO_TASKS"):  # fmt: skip
            demo._discover_demo_modules()
    finally:
        sys.modules.pop("lmms_spatial.tasks.zz_orphan.demo", None)


def test_a_module_the_benchmark_does_not_name_is_not_one_of_its_parts(declarations, tmp_path, monkeypatch):
    import lmms_spatial.data.demo as demo

    declarations("zz_plain", "from lmms_spatial.benchmark import Benchmark\nBENCHMARK = Benchmark('zz_plain', '', 'V')")
    (tmp_path / "zz_plain" / "demo.py").write_text("DEMO_TASKS = ['zz_plain']\ndef build(out, n=4):\n    return out\n")
    monkeypatch.setattr(registry, "BENCHMARKS", {**registry.BENCHMARKS, **registry._declared()})
    assert "zz_plain" in registry.BENCHMARKS and "zz_plain" not in demo._discover_demo_modules()
    assert registry.BENCHMARKS["zz_plain"].load("demo") is None
