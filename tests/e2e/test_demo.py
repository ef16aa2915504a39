"""``lmms-spatial demo``: every benchmark's demo tasks, offline, through the real CLI."""

from pathlib import Path

import pytest

from lmms_spatial.data.demo import DEMO_BENCHMARKS, build_demo_data, demo_tasks


@pytest.mark.slow
@pytest.mark.xdist_group("demo")  # the worker that runs the whole demo once
def test_demo_runs_every_demo_task_and_prints_the_table(full_demo):
    assert full_demo.returncode == 0, full_demo.stderr[-4000:]
    table = full_demo.stdout
    for task in demo_tasks():
        assert f"\n{task} " in table, f"{task} missing from demo table:\n{table}"
    assert "unparsed" in table and "chance" in table


@pytest.mark.slow
@pytest.mark.xdist_group("demo")
def test_the_demo_report_has_tables_of_every_benchmark(full_demo):
    from lmms_spatial.reports.layouts import benchmark_reports

    md = (full_demo.out / "report" / "report.md").read_text()
    for key in DEMO_BENCHMARKS:
        assert any(f"### {layout.title}" in md for layout in benchmark_reports()[key].layouts), key


@pytest.mark.slow
@pytest.mark.xdist_group("demo")
def test_every_table_of_the_demo_report_has_its_unparsed_and_chance_rows(full_demo):
    """Each model row has its unparsed row, and each table a chance row; a "-" there has a numbered reason."""
    md = (full_demo.out / "report" / "report.md").read_text()
    tables = [part.split("\n## ")[0] for part in md.split("\n### ")[1:]]
    assert len(tables) >= len(DEMO_BENCHMARKS)
    for table in tables:
        title, rows = table.splitlines()[0], [line for line in table.splitlines() if line.startswith("| ")]
        assert any(r.startswith("| *random\\_choice") and " unparsed* |" in r for r in rows), title
        chance = [r for r in rows if "chance level* |" in r]
        assert chance, title
        for mark in {c.split("-", 1)[1][:1] for r in chance for c in r.split(" | ")[1:] if c.startswith("-")}:
            assert f"\n- {mark} " in table, (title, mark)  # the footnote of the mark


def test_demo_data_is_small(tmp_path):
    build_demo_data(tmp_path)
    size = sum(f.stat().st_size for f in Path(tmp_path).rglob("*") if f.is_file())
    assert size < 2 * 1024 * 1024


def test_the_demo_of_some_tasks_builds_only_their_benchmarks_data(tmp_path, monkeypatch):
    """``lmms-spatial demo --tasks`` builds the data of the benchmarks it runs, not all of them."""
    import subprocess

    from lmms_spatial.cli import main as lmms_spatial

    calls = []

    def run(cmd, **kw):
        calls.append((cmd, kw["env"]))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    assert lmms_spatial(["demo", "--out", str(tmp_path), "--tasks", "mmsi_vanilla,mmsi_cot"]) == 1  # no results
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["mmsi"]
    cmd, env = calls[0]
    assert cmd[cmd.index("--tasks") + 1] == "mmsi_vanilla,mmsi_cot"
    assert env["LMMS_SPATIAL_MMSI_PATH"] == str(tmp_path / "data" / "mmsi")


def test_lmms_spatial_fixture_builds_one_benchmark_and_prints_its_export_line(tmp_path, capsys):
    from lmms_spatial.cli import main as lmms_spatial

    assert lmms_spatial(["fixture", "mmsi", "--out", str(tmp_path / "fx"), "-n", "3"]) == 0
    out = capsys.readouterr().out
    folder = (tmp_path / "fx" / "mmsi").resolve()
    assert f"export LMMS_SPATIAL_MMSI_PATH={folder}" in out.splitlines()
    assert "--tasks mmsi_vanilla,mmsi_circular,mmsi_cot" in out and "--model random_choice" in out
    assert sorted(p.name for p in (tmp_path / "fx").iterdir()) == ["mmsi"]
    import datasets

    rows = datasets.load_dataset("parquet", data_files=str(folder / "test.parquet"))["train"]
    assert len(rows) == 3  # -n items


def test_lmms_spatial_fixture_refuses_an_unknown_benchmark(tmp_path, capsys):
    from lmms_spatial.cli import main as lmms_spatial

    assert lmms_spatial(["fixture", "zz_nowhere", "--out", str(tmp_path)]) == 1
    assert "no fixture builder for ['zz_nowhere']" in capsys.readouterr().err
