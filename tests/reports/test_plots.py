"""Plots a researcher can paste: %, short labels that fit, labels that do not overlap, no model dropped silently."""

from __future__ import annotations

import itertools

import pytest
from report_fixtures import FALLBACK, open_verdicts, write_run

from lmms_spatial.cli import main as lmms_spatial
from lmms_spatial.reports import plots
from lmms_spatial.reports.tables import Cell, Column, Leaf, Row, Table

STAMP = "20260101_000000"
API = "model_version=gpt-4o-2024-08-06,base_url=https://api.openai.com/v1,num_concurrent=8"


@pytest.fixture
def figures(monkeypatch):
    """{file name: what the figure showed} for every plot saved during the test."""
    shown: dict[str, dict] = {}
    save = plots._save

    def record(fig, plt, path):
        ax = fig.axes[0]
        legend = ax.get_legend()
        shown[path.name] = {
            "ylabel": ax.get_ylabel(),
            "xlabel": ax.get_xlabel(),
            "yticks": [t.get_text() for t in ax.get_yticklabels()],
            "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
            "texts": [t.get_text() for t in fig.texts],
            "bars": [p.get_height() for p in ax.patches],
            "boxes": _label_boxes(fig, ax),
        }
        return save(fig, plt, path)

    monkeypatch.setattr(plots, "_save", record)
    return shown


def _label_boxes(fig, ax) -> list[tuple[str, tuple[float, float, float, float]]]:
    renderer = fig.canvas.get_renderer()
    out = []
    for text in ax.texts:
        if text.get_text():
            box = text.get_window_extent(renderer)
            out.append((text.get_text(), (box.x0, box.y0, box.x1, box.y1)))
    return out


def _table(scale: float, value: float | None, note: str | None = None) -> Table:
    column = Column("acc", "Acc", Leaf("t", "accuracy"))
    rows = [Row("m", "model", [Cell(value, note=note)], model="m"), Row("P", "reference", [Cell(0.5 * scale)])]
    return Table("t", "T", "src", ["Acc"], rows=rows, columns=[column], scale=scale)


def test_every_plotted_score_is_in_percent_whatever_the_table_prints():
    """OSR-Bench's tables print fractions (scale 1), the others %: 0.25 and 25.0 both plot as 25%."""
    osr, odi = _table(1.0, 0.25), _table(100.0, 25.0)
    assert plots.percent(osr, 0, 0.25) == plots.percent(odi, 0, 25.0) == 25.0
    points, missing = plots.xy_points(osr, "acc", odi, "acc")
    assert points == [("m", "model", 25.0, 25.0), ("P", "reference", 50.0, 50.0)] and missing == []


def test_a_model_without_a_value_is_listed_under_the_scatter_with_the_reason(tmp_path, figures):
    x, y = _table(100.0, 40.0), _table(100.0, None, note="no judge: no answer was judged")
    points, missing = plots.xy_points(x, "acc", y, "acc")
    assert [p[0] for p in points] == ["P"]
    assert missing == ["m: no Acc of t (no judge: no answer was judged)"]
    plots.scatter(points, tmp_path / "s.png", "T", "x (%)", "y (%)", True, missing)
    assert figures["s.png"]["texts"] == ["Not plotted:\nm: no Acc of t (no judge: no answer was judged)"]


def test_two_runs_of_one_model_are_two_points_each_with_its_own_runs_values():
    """A partial run with the close tasks only and a whole run, both of ``m``: the whole run's open score is never
    paired with the partial run's close score (they share a model name, not their runs)."""
    from pathlib import Path
    from types import SimpleNamespace

    partial, whole = (SimpleNamespace(results_file=Path(f"/r/{n}_results.json")) for n in ("partial", "whole"))
    column = Column("acc", "Acc", Leaf("t", "accuracy"))

    def table(key, rows):
        return Table(key, key, "src", ["Acc"], rows=rows, columns=[column], scale=100.0)

    close = table("close", [Row("m (10/23)", "model", [Cell(30.0)], model="m", runs=[partial]),
                            Row("m", "model", [Cell(40.0)], model="m", runs=[whole]),
                            Row("m soft", "model", [Cell(45.0)], model="m soft", runs=[whole])])  # fmt: skip
    open_ = table("open", [Row("m (judge)", "model", [Cell(5.0)], model="m", runs=[whole]),
                           Row("m soft", "model", [Cell(6.0)], model="m soft", runs=[whole])])  # fmt: skip
    points, missing = plots.xy_points(close, "acc", open_, "acc")
    assert points == [("m (judge)", "model", 40.0, 5.0), ("m soft", "model", 45.0, 6.0)]
    assert missing == ["m (10/23): no Acc of open (not in open)"]


def test_the_labels_of_twenty_close_models_do_not_overlap(tmp_path, figures):
    points = [
        (f"model-{k:02d}-with-a-longish-name", "model", 40 + (k % 5) * 0.8, 40 + (k // 5) * 0.8) for k in range(20)
    ]
    points += [(f"Published-{k}", "reference", 42 + k * 0.3, 41 + k * 0.2) for k in range(10)]
    plots.scatter(points, tmp_path / "s.png", "T", "x (%)", "y (%)", False)
    boxes = figures["s.png"]["boxes"]
    assert len(boxes) == 30  # every point labelled (by name, or by a number listed under the plot)
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not plots._overlap(box_a, box_b), (a, b)


def test_bar_charts_have_a_y_axis_label_in_percent_and_no_bar_for_a_missing_value(tmp_path, figures):
    table = _table(100.0, None, note="mmsi_circular not in this run")
    table.rows.insert(1, Row("n", "model", [Cell(30.0)], model="n"))
    plots.bar_chart(table, tmp_path / "b.png")
    shown = figures["b.png"]
    assert shown["ylabel"] == "score (%)"
    heights = shown["bars"]
    assert heights[0] != heights[0] and heights[1:] == [30.0, 50.0]  # NaN: no bar, never a bar of 0
    assert shown["texts"] == ["Not plotted:\nm: no value for Acc (mmsi_circular not in this run)"]


def test_a_score_of_zero_is_drawn_as_a_visible_zero_not_as_no_bar(tmp_path, figures):
    """A bar of height 0 looks like a model that did not run: a zero gets a stroke at the axis labelled 0, in the
    grouped bars and in the headline bars alike; a missing value still draws nothing."""
    table = _table(100.0, 0.0)
    table.rows.insert(1, Row("n", "model", [Cell(None, note="not in this run")], model="n"))
    plots._grouped_bars(table, tmp_path / "g.png", table.rows[:2], table.rows[2:], [0])
    assert [label for label, _ in figures["g.png"]["boxes"]] == ["0"]  # m's zero; n draws nothing
    plots._headline_bars(table, tmp_path / "h.png", table.rows[:2], table.rows[2:], 0)
    assert [label for label, _ in figures["h.png"]["boxes"]] == ["0"]
    plain = _table(100.0, 30.0)
    plots._grouped_bars(plain, tmp_path / "none.png", plain.rows[:1], plain.rows[1:], [0])
    assert figures["none.png"]["boxes"] == []  # 30 and the published 50: no zero mark


def test_a_model_missing_columns_for_two_reasons_is_listed_with_each_reason_after_its_columns():
    headers = ["count w/ map", "count w/o map", "dir w/ map", "dir w/o map"]
    no_map, no_question = "no map stage", "no direction question"
    cells = [Cell(None, note=no_map), Cell(0.3), Cell(None, note=no_map), Cell(None, note=no_question)]
    table = Table("t", "T", "src", headers, rows=[Row("m (6/16)", "model", cells, model="m")], scale=1.0)
    assert plots._missing(table, table.rows, range(4)) == [
        "m (6/16): no value for count w/ map, dir w/ map (no map stage); dir w/o map (no direction question)"
    ]
    table.rows[0].cells[1] = Cell(None, note=no_map)
    table.rows[0].cells[3] = Cell(None, note=no_map)
    assert plots._missing(table, table.rows, range(4)) == ["m (6/16): no value for every column (no map stage)"]


def test_twenty_models_with_api_ones_get_short_labels_headline_bars_and_a_heatmap(tmp_path, figures):
    """Through the real command (ODI-Bench open-ended only, to keep it quick): one bar per row with short
    labels (marks kept), every column in a heatmap, and the model whose score is NaN listed, not dropped."""
    for k in range(20):
        args = f"pretrained=org/Model-{k:02d}-7B" if k % 2 else API.replace("gpt-4o-2024-08-06", f"gpt-4o-v{k:02d}")
        verdicts = open_verdicts(k) if k != 5 else {t: [None] * 4 for t in open_verdicts(0)}  # k=5: no judge
        judge = FALLBACK if k == 3 else "gpt-4o-judge"
        write_run(tmp_path / "runs" / f"m{k:02d}", STAMP, args, {}, None, model="hf" if k % 2 else "openai",
                  open_scores=verdicts, judge=judge, of=8 if k == 7 else None)  # fmt: skip
    out = tmp_path / "report"
    assert lmms_spatial(["report", str(tmp_path / "runs"), "--out", str(out), "--quiet"]) == 0
    assert sorted(p.name for p in (out / "plots").glob("*.png")) == ["odi_bench_open_bars.png",
                                                                     "odi_bench_open_heatmap.png"]  # fmt: skip
    bars = figures["odi_bench_open_bars.png"]
    assert bars["xlabel"] == "Overall (%)" and bars["ylabel"] == "model"
    labels = set(bars["yticks"])
    assert {"Model-03-7B (rule-based judge)", "Model-07-7B (40/80)", "gpt-4o-v00"} <= labels
    assert not any("base_url" in label for label in labels)
    assert any("Model-05-7B: no value for Overall (no judge" in t for t in bars["texts"])
    heat = figures["odi_bench_open_heatmap.png"]
    assert "Model-07-7B (40/80)" in heat["yticks"] and any("Model-05-7B: no value for every column" in t
                                                          for t in heat["texts"])  # fmt: skip
