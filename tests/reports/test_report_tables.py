"""Rendered report tables for hand-made results: golden files, seeds, CIs, CLI and plots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from report_fixtures import mmsi_scores, odi_scores, write_run

from lmms_spatial.cli import main as lmms_spatial
from lmms_spatial.reports import render
from lmms_spatial.reports.report import build, build_tables
from lmms_spatial.reports.runs import load_runs

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("LMMS_SPATIAL_UPDATE_GOLDEN") == "1"


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"golden file {path} missing: run with LMMS_SPATIAL_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


@pytest.fixture
def two_models(tmp_path):
    write_run(tmp_path / "a", "20260101_000000", "samples=a", odi_scores(0), mmsi_scores(0))
    write_run(tmp_path / "b", "20260101_000000", "samples=b", odi_scores(1), mmsi_scores(1))
    return tmp_path


@pytest.fixture
def three_seeds(tmp_path):
    for seed in range(3):
        write_run(
            tmp_path / f"s{seed}", "20260101_000000", f"samples=x,seed={seed}", odi_scores(seed), mmsi_scores(seed)
        )
    return tmp_path


def _tables(root):
    return {t.key: t for t in build_tables(load_runs([root]))}


def test_tables_found_are_the_benchmarks_in_the_results(two_models):
    assert set(_tables(two_models)) == {"odi_bench_close", "mmsi"}


@pytest.mark.parametrize("key", ["odi_bench_close", "mmsi"])
def test_rendered_tables_match_golden_files(two_models, key):
    table = _tables(two_models)[key]
    _check_golden(f"{key}.md", render.markdown(table))
    _check_golden(f"{key}.tex", render.latex(table))
    _check_golden(f"{key}.csv", render.csv_text([table]))


def test_model_rows_values_chance_unparsed_and_ci(two_models):
    t = _tables(two_models)["odi_bench_close"]
    rows = {r.label: r for r in t.rows}
    a = rows["replay (samples=a)"]
    col = {h: i for i, h in enumerate(t.headers)}
    # OA (j=0) with shift 0: questions 0 and 3 right of 4
    assert a.cells[col["OA"]].value == pytest.approx(50.0)
    # Overall: mean over the 40 questions
    scores = odi_scores(0)
    assert a.cells[col["Overall"]].value == pytest.approx(100 * sum(map(sum, scores.values())) / 40)
    lo, hi = a.cells[col["Overall"]].lo, a.cells[col["Overall"]].hi
    assert lo < a.cells[col["Overall"]].value < hi
    assert rows["chance level"].cells[col["Exist."]].value == pytest.approx(50.0)
    assert rows["replay (samples=a) unparsed"].cells[col["HA"]].value == pytest.approx(25.0)
    assert rows["replay (samples=a) unparsed"].cells[col["OA"]].value == 0.0
    assert rows["o3"].kind == "reference" and rows["o3"].cells[col["Overall"]].value == 62.62
    assert rows["o3"].cells[col["General"]].value is None  # the paper prints no General / Spatial value


def test_bootstrap_is_deterministic_and_seeded(two_models):
    def overall(seed):
        t = {x.key: x for x in build_tables(load_runs([two_models]), seed=seed)}["odi_bench_close"]
        c = t.rows[0].cells[0]
        return c.lo, c.hi

    assert overall(0) == overall(0)
    assert overall(0) != overall(1) or overall(0) != overall(2)


def test_a_bootstrap_ci_matches_a_hand_worked_case(tmp_path):
    """Two questions per ODI task. All right: every resample's mean is 1, CI [100, 100]. One right of two
    (task 'existence', scores 1, 0): a resample's mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4, so
    of 500 draws about 125 are 0 and 125 are 1: the 2.5th and 97.5th percentiles are 0 and 100."""
    scores = {t: [1.0, 1.0] for t in odi_scores(0)}
    scores["existence"] = [1.0, 0.0]
    write_run(tmp_path / "a", "20260101_000000", "samples=a", scores, None)
    t = _tables(tmp_path)["odi_bench_close"]
    col = {h: i for i, h in enumerate(t.headers)}
    row = next(r for r in t.rows if r.kind == "model")
    oa, exist = row.cells[col["OA"]], row.cells[col["Exist."]]
    assert (oa.value, oa.lo, oa.hi) == (100.0, 100.0, 100.0)
    assert (exist.value, exist.lo, exist.hi) == (50.0, 0.0, 100.0)


def test_several_seeds_of_one_model_give_mean_and_error(three_seeds):
    t = _tables(three_seeds)["mmsi"]
    models = [r for r in t.rows if r.kind == "model"]
    assert [r.label for r in models] == ["replay"]  # seeds of one model: one row, its short label
    cell = models[0].cells[0]
    values = [100 * sum(mmsi_scores(s)) / 11 for s in range(3)]
    mean = sum(values) / 3
    std = (sum((v - mean) ** 2 for v in values) / 3) ** 0.5
    assert cell.value == pytest.approx(mean) and cell.err == pytest.approx(std / 3**0.5) and cell.n == 3
    assert "±" in render.markdown(t)


def test_cli_writes_every_format_and_the_plots(two_models, tmp_path, capsys):
    out = tmp_path / "report"
    assert lmms_spatial(["report", str(two_models), "--out", str(out), "--labels", "A,B"]) == 0
    md = (out / "report.md").read_text()
    assert "| **A** |" in md and "o3 (published)" in md
    assert (out / "report.csv").read_text().startswith("table,row,kind,column")
    assert "\\toprule" in (out / "report.tex").read_text()
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert pngs == ["mmsi_bars.png", "odi_bench_close_bars.png"]
    assert all((out / "plots" / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_cli_errors(tmp_path, capsys):
    assert lmms_spatial(["report", str(tmp_path / "nothing")]) == 1
    assert lmms_spatial(["report", str(tmp_path), "--format", "docx"]) == 1


def test_build_collects_analyses_only_when_samples_allow(two_models):
    report = build([two_models])
    assert report["analyses"] == []  # close-ended only: no anchoring, no DORI


def test_report_shows_a_bar_over_every_table_layout_and_every_run(two_models, progress_bars):
    from lmms_spatial.reports.report import layouts

    build([two_models])
    assert [(b.desc, b.total, b.n) for b in progress_bars] == [
        ("report: tables", len(layouts()), len(layouts())),
        ("report: analyses", 2, 2),  # the two runs
    ]


def test_a_model_run_with_non_default_settings_is_named_under_the_table(tmp_path):
    cap = {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"}
    write_run(tmp_path / "a", "20260101_000000", "samples=a", odi_scores(0), mmsi_scores(0), odi_options=cap)
    write_run(tmp_path / "b", "20260101_000000", "samples=b", odi_scores(1), mmsi_scores(1), odi_options={})
    notes = _tables(tmp_path)["odi_bench_close"].notes
    assert "replay (samples=a): run with LMMS_SPATIAL_ODI_MAX_PIXELS=524288" in notes
    assert not any(n.startswith("replay (samples=b)") for n in notes)
    assert any(n.startswith("WARNING: these models were run with different prompt or image settings") for n in notes)


def test_models_run_with_the_same_settings_get_no_settings_warning(tmp_path):
    cap = {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"}
    for name, shift in (("a", 0), ("b", 1)):
        write_run(tmp_path / name, "20260101_000000", f"samples={name}", odi_scores(shift), mmsi_scores(shift),
                  odi_options=cap)  # fmt: skip
    notes = _tables(tmp_path)["odi_bench_close"].notes
    assert sum(n.endswith("run with LMMS_SPATIAL_ODI_MAX_PIXELS=524288") for n in notes) == 2
    assert not any("different prompt or image settings" in n for n in notes)
