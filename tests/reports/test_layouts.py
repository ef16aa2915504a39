"""Each benchmark's report part comes from its own module; a benchmark without one gets default tables."""

from __future__ import annotations

import json
import textwrap
import types

import pytest

from lmms_spatial.reports import layouts as reports
from lmms_spatial.reports.runs import load_runs
from lmms_spatial.reports.tables import build_table

DEFAULT_YAML = """\
dataset_path: !function utils.DATASET_PATH
test_split: test
metric_list:
  - metric: "accuracy"
    aggregation: !function utils.aggregate_accuracy
  - metric: "unparsed_rate"
    aggregation: !function utils.aggregate_mean
"""


def _task_folder(tmp_path):
    folder = tmp_path / "zz_probe"
    folder.mkdir()
    (folder / "_default.yaml").write_text(DEFAULT_YAML)  # no `task`: not a task
    (folder / "zz_probe.yaml").write_text(textwrap.dedent("""\
        include: _default.yaml
        task: zz_probe
        metric_list:
          - metric: "accuracy"
          - metric: "left_right"
          - metric: "count"
          - metric: "unparsed_rate"
          - metric: "chance_level"
        """))  # fmt: skip
    (folder / "zz_probe_plain.yaml").write_text("include: _default.yaml\ntask: zz_probe_plain\n")
    (folder / "zz_group.yaml").write_text("group: zz_group\ntask:\n  - zz_probe\n")
    return folder


def test_task_yamls_are_read_with_their_include_chain_and_function_tags(tmp_path):
    folder = _task_folder(tmp_path)
    config = reports.read_task_yaml(folder / "zz_probe_plain.yaml")
    assert config["dataset_path"] == "utils.DATASET_PATH" and config["task"] == "zz_probe_plain"
    assert reports.task_metrics(folder) == {
        "zz_probe": ["accuracy", "left_right", "count", "unparsed_rate", "chance_level"],
        "zz_probe_plain": ["accuracy", "unparsed_rate"],  # inherited from _default.yaml
    }


def test_a_benchmark_without_a_report_module_gets_one_table_per_task_from_its_metric_list(tmp_path):
    tables = reports.default_layouts("zz_probe", _task_folder(tmp_path))
    assert [t.key for t in tables] == ["zz_probe", "zz_probe_plain"]
    probe, plain = tables
    assert [c.header for c in probe.columns] == ["accuracy", "left_right", "count"]  # the rates are rows
    assert {(c.spec.chance, c.spec.unparsed) for c in probe.columns} == {("chance_level", "unparsed_rate")}
    assert {(c.spec.chance, c.spec.unparsed) for c in plain.columns} == {(None, "unparsed_rate")}
    assert probe.benchmark == "zz_probe" and probe.reference is None and "tasks/zz_probe/report.py" in probe.notes[0]


def test_a_default_table_is_filled_from_a_run_with_hand_computed_values(tmp_path):
    """Four documents: scores 1, 0, 1, 1 (accuracy 0.75); left_right on docs 0 and 2 (1, 1); count on 1, 3 (0, 1)."""
    layout = reports.default_layouts("zz_probe", _task_folder(tmp_path))[0]
    scores, categories = [1.0, 0.0, 1.0, 1.0], ["left_right", "count", "left_right", "count"]
    lines = []
    for i, (score, category) in enumerate(zip(scores, categories, strict=True)):
        record = {"id": f"q{i}", "score": score, "parsed": "A" if i != 1 else None, "category": category}
        lines.append({"doc_id": i, "accuracy": record, category: score})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "20260101_000000_samples_zz_probe.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    values = {"accuracy": 0.75, "left_right": 1.0, "count": 0.5, "unparsed_rate": 0.25, "chance_level": 1 / 3}
    (run_dir / "20260101_000000_results.json").write_text(json.dumps({
        "results": {"zz_probe": {f"{k},none": v for k, v in values.items()}},
        "config": {"model": "replay", "model_args": "samples=x"},
    }))  # fmt: skip

    table = build_table(layout, load_runs([run_dir]), ci=False)
    rows = {r.label: [c.value for c in r.cells] for r in table.rows}
    assert rows["replay"] == pytest.approx([75.0, 100.0, 50.0])  # the short label: the model's name
    assert rows["replay unparsed"] == pytest.approx([25.0, 25.0, 25.0])
    assert rows["chance level"] == pytest.approx([100 / 3] * 3)
    assert table.source == "no published rows"


def test_a_report_module_without_layouts_still_gets_the_default_tables_and_keeps_its_citation(tmp_path, monkeypatch):
    from lmms_spatial.reports.citations import Citation

    folder = _task_folder(tmp_path)
    monkeypatch.setattr(reports, "_tasks_root", lambda: tmp_path)
    cited = Citation("Z et al., 2026", "Zed", "2601.00001", "@article{z, note = {arXiv:2601.00001}}")
    part = reports._from_module("zz_probe", types.SimpleNamespace(CITATION=cited))
    assert not part.declared and part.citation is cited
    assert [t.key for t in part.layouts] == [t.key for t in reports.default_layouts("zz_probe", folder)]


def test_the_shipped_benchmarks_declare_their_tables_in_key_order():
    parts = reports.benchmark_reports()
    shipped = ["dori", "mmperspective", "mmsi", "odi_bench", "osr_bench"]
    assert [k for k in parts if k in shipped] == shipped
    assert all(parts[k].declared and parts[k].citation is not None for k in shipped)
    assert [t.key for t in parts["odi_bench"].layouts] == ["odi_bench_close", "odi_bench_open", "odi_bench_cot"]
    assert [s.name for s in parts["dori"].scatters] == ["dori_coarse_vs_granular"]
    assert parts["mmsi"].analysis is not None and parts["osr_bench"].analysis is None
