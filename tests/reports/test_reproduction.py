"""Did a run reproduce the paper: a run's row against the published row of its model (Δ, the paper's value against
the run's 95% interval, EASI's marks, what differed), in every format (lmms_spatial.reports.reproduction)."""

from __future__ import annotations

import math

import pytest
from report_fixtures import mmsi_scores, odi_scores, write_run

from lmms_spatial.reports import render
from lmms_spatial.reports.report import build_tables
from lmms_spatial.reports.reproduction import (
    Comparison,
    compare,
    easi_grade,
    easi_mark,
    interval,
    match,
    normalise,
    run_names,
    verdict,
)
from lmms_spatial.reports.runs import load_runs

STAMP = "20260101_000000"
QWEN72 = "pretrained=Qwen/Qwen2.5-VL-72B-Instruct"
ODI_ROWS = [{"model": m} for m in ("GPT-4o", "Blind GPT-4o", "InternVL2.5-8B", "Qwen2.5-VL-7B", "Qwen2.5-VL-72B")]


# --- names --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "read"),
    [
        ("Qwen/Qwen2.5-VL-72B-Instruct", "qwen2-5-vl-72b"),
        ("OpenGVLab/InternVL2_5-8B", "internvl2-5-8b"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("claude-3-5-sonnet-20240620", "claude-3-5-sonnet"),
        ("Qwen2.5-3B-Inst.", "qwen2-5-3b"),
        ("MiniCPM-V 4.0", "minicpm-v-4-0"),
        ("DS-7B-Chat", "ds-7b-chat"),
        ("/ckpts/org/Qwen2.5-VL-72B-Instruct", "qwen2-5-vl-72b"),
        ("XComposer2", "xcomposer2"),
        ("_x_", "x"),
        ("", ""),
    ],
)
def test_a_name_is_read_without_its_organisation_case_separators_instruct_suffix_or_snapshot_date(name, read):
    assert normalise(name) == read


def test_a_run_is_matched_by_its_label_or_checkpoint_to_exactly_one_published_row():
    assert match(run_names("Qwen2.5-VL-72B-Instruct", QWEN72), ODI_ROWS)["model"] == "Qwen2.5-VL-72B"
    assert match(["InternVL2_5-8B"], ODI_ROWS)["model"] == "InternVL2.5-8B"
    assert match(run_names("gpt-4o-2024-08-06", "model_version=gpt-4o-2024-08-06"), ODI_ROWS)["model"] == "GPT-4o"
    assert match(["Qwen2.5-VL-7B-Instruct"], ODI_ROWS)["model"] == "Qwen2.5-VL-7B"  # not the 72B
    assert match(["my-finetune"], ODI_ROWS) is None
    assert match(["replay (samples=a)", "samples=a"], ODI_ROWS) is None
    # a row's other names (known_as), and a name two rows answer to matches neither
    rows = [{"model": "LLaVA-v1.5-7B", "known_as": ["llava-hf/llava-1.5-7b-hf"]}, {"model": "x"}, {"model": "X"}]
    assert match(["llava-1.5-7b-hf"], rows)["model"] == "LLaVA-v1.5-7B"
    assert match(["x"], rows) is None
    assert match(["", "  "], [{"model": ""}, {"model": "GPT-4o"}]) is None  # an empty name matches no row


def test_easis_mark_of_each_grade():
    assert [easi_mark(g) for g in ("≤2.5", "≤5", ">5")] == ["✅", "☑️", "❌"]


def test_the_verdict_counts_the_columns_inside_names_those_outside_and_says_what_differed_and_partial():
    comparisons = [
        Comparison("Avg.", 50.0, 49.0, 1.0, True, "≤2.5"), Comparison("MSR", 40.0, 30.0, 10.0, False, ">5"),
        Comparison("Mot.", 20.0, 16.0, 4.0, False, "≤5"), Comparison("dist.", 9.0, 8.0, 1.0, None, None),
    ]  # fmt: skip
    assert verdict(
        "m (20/40)", "M", "P Table 1", comparisons, ["gen max_new_tokens=16", "rule-based judge"], "20 of 40 documents"
    ) == (
        "reproduction: m (20/40) against the published row M (P Table 1): the published value lies inside the run's "
        "95% interval in 1 of 3 columns (outside: MSR, Mot.); EASI's grades of |Δ| in points (blind to sample size "
        "and protocol): ≤2.5 in 1, ≤5 in 1, >5 in 1; what differed from the paper's protocol: gen max_new_tokens=16; "
        "rule-based judge; partial: 20 of 40 documents, the paper's row covers the whole split"
    )
    assert verdict("m", "M", "P", comparisons[:1], [], None) == (
        "reproduction: m against the published row M (P): the published value lies inside the run's 95% interval in "
        "1 of 1 columns; EASI's grades of |Δ| in points (blind to sample size and protocol): ≤2.5 in 1; what differed "
        "from the paper's protocol: nothing the run recorded"
    )
    assert verdict("m", "M", "P", comparisons[3:], [], None) == (
        "reproduction: m against the published row M (P): the run has no 95% interval for these columns (no samples "
        "file): only Δ and EASI's marks; what differed from the paper's protocol: nothing the run recorded"
    )


def test_the_run_is_known_by_its_label_and_the_checkpoint_or_api_model_it_was_given():
    given = "pretrained=org/m,dtype=bf16, model_version = v1,model=org/v"
    assert run_names("m", given) == ["m", "org/m", "v1", "org/v"]
    assert run_names("m", "pretrained=/ckpt/step=3/Qwen2.5-VL-7B") == ["m", "/ckpt/step=3/Qwen2.5-VL-7B"]
    assert run_names("m", "") == run_names("m", None) == run_names("m") == ["m"]
    assert run_names("m", "pretrained=,seed=3") == ["m"]  # an empty value names nothing


# --- the verdict rules ----------------------------------------------------------------------------------------------


def test_the_paper_is_judged_against_the_runs_bootstrap_interval_edges_included():
    assert compare("Avg.", 54.5, 30.7, (27.3, 81.8), 100, True).inside is True
    assert compare("Avg.", 54.5, 27.3, (27.3, 81.8), 100, True).inside is True  # on the edge: inside
    assert compare("Avg.", 54.5, 27.2, (27.3, 81.8), 100, True).inside is False
    assert compare("Avg.", 54.5, 81.9, (27.3, 81.8), 100, True).inside is False
    assert compare("Avg.", 54.5, 30.7, None, 100, True).inside is None  # no interval: no verdict, Δ and EASI only
    assert compare("Avg.", 54.5, 81.8, (27.3, 81.8), 100, True).inside is True  # the upper edge too
    assert compare("Avg.", 27.3 + 1e-12, 27.3, (27.300000000000004, 81.8), 100, True).inside is True  # float noise
    assert compare("Avg.", 54.5, 30.7, None, 100, True) == Comparison("Avg.", 54.5, 30.7, 54.5 - 30.7, None, ">5")


def test_pooled_seeds_give_mean_plus_minus_1_96_standard_errors_and_a_ci_wins_over_them():
    lo, hi = interval(50.0, None, None, 2.0)
    assert (lo, hi) == pytest.approx((50.0 - 1.959964 * 2.0, 50.0 + 1.959964 * 2.0))
    assert interval(50.0, 40.0, 60.0, 2.0) == (40.0, 60.0)
    assert interval(50.0, None, None, None) is None
    assert interval(50.0, 40.0, None, None) is None


@pytest.mark.parametrize(
    ("delta", "scale", "grade"),
    [
        (2.5, 100, "≤2.5"),
        (-2.5, 100, "≤2.5"),
        (2.51, 100, "≤5"),
        (5.0, 100, "≤5"),
        (-5.01, 100, ">5"),
        (0.025, 1, "≤2.5"),
        (0.03, 1, "≤5"),
        (0.051, 1, ">5"),
        (math.nan, 100, None),
    ],
)
def test_easis_grade_is_by_absolute_delta_in_points_of_a_percentage(delta, scale, grade):
    assert easi_grade(delta, scale) == grade


def test_a_column_that_is_not_a_percentage_gets_no_easi_mark():
    assert compare("dist.", 9.6, 9.0, (9.0, 10.0), 1, percentage=False).grade is None
    assert compare("F1", 0.30, 0.29, (0.2, 0.4), 1, percentage=True).grade == "≤2.5"  # 1 point of a fraction


# --- in the report --------------------------------------------------------------------------------------------------


def _mmsi(folder):
    return {t.key: t for t in build_tables(load_runs([folder]))}["mmsi"]


def test_a_run_of_a_published_model_gets_its_delta_row_under_its_own_with_the_verdict(tmp_path):
    write_run(tmp_path / "q", STAMP, QWEN72, {}, mmsi_scores(0), model="qwen2_5_vl")
    table = _mmsi(tmp_path / "q")
    labels = [r.label for r in table.rows]
    at = labels.index("Qwen2.5-VL-72B-Instruct")
    assert labels[at + 1] == "Δ vs Qwen2.5-VL-72B (published)" and table.rows[at + 1].kind == "delta"
    model, delta = table.rows[at].cells, table.rows[at + 1].cells
    col = {h: i for i, h in enumerate(table.headers)}
    # mmsi_scores(0): 11 questions, one per category, right at the even ones: 6/11 = 54.5 against the paper's 30.7
    avg = delta[col["Avg."]]
    assert avg.value == pytest.approx(100 * 6 / 11 - 30.7)
    assert avg.inside == (model[col["Avg."]].lo <= 30.7 <= model[col["Avg."]].hi) and avg.grade == ">5"
    assert delta[col["Circular"]].value is None  # the paper prints no circular score for it
    [note] = [n for n in table.notes if n.startswith("reproduction:")]
    assert note.startswith("reproduction: Qwen2.5-VL-72B-Instruct against the published row Qwen2.5-VL-72B "
                           "(MMSI-Bench ")  # fmt: skip
    assert "EASI's grades of |Δ| in points (blind to sample size and protocol): >5 in 3;" in note
    assert note.endswith("what differed from the paper's protocol: nothing the run recorded")
    assert "partial" not in note


def test_a_model_without_a_published_row_gets_none(tmp_path):
    write_run(tmp_path / "a", STAMP, "samples=a", odi_scores(0), mmsi_scores(0))
    table = _mmsi(tmp_path / "a")
    assert not [r for r in table.rows if r.kind == "delta"]
    assert not [n for n in table.notes if n.startswith("reproduction:")]


def test_a_partial_run_off_the_protocol_says_so_in_its_verdict(tmp_path):
    scores = {t: s[:2] for t, s in odi_scores(0).items()}
    options = {
        "LMMS_SPATIAL_ODI_MAX_PIXELS": "1003520",
        "LMMS_SPATIAL_ODI_PROMPT": "v2",
        "LMMS_SPATIAL_DORI_SEED": "42",
    }
    write_run(tmp_path / "q", STAMP, QWEN72, scores, None, options, model="qwen2_5_vl", of=4, limit=2)
    table = {t.key: t for t in build_tables(load_runs([tmp_path / "q"]))}["odi_bench_close"]
    [note] = [n for n in table.notes if n.startswith("reproduction:")]
    assert note.startswith("reproduction: Qwen2.5-VL-72B-Instruct (20/40) against the published row Qwen2.5-VL-72B "
                           "(ODI-Bench Table 2")  # fmt: skip
    # the image and prompt options differ from the protocol; an option of what is scored (a seed) does not; n/N is
    # said once, as partial
    assert note.endswith("; what differed from the paper's protocol: run options LMMS_SPATIAL_ODI_MAX_PIXELS=1003520, "
                         "LMMS_SPATIAL_ODI_PROMPT=v2; partial: 20 of 40 documents, the paper's row covers the whole "
                         "split")  # fmt: skip


def test_a_run_renamed_with_labels_is_matched_by_the_checkpoint_it_was_given(tmp_path):
    write_run(tmp_path / "q", STAMP, QWEN72, {}, mmsi_scores(0), model="qwen2_5_vl")
    table = {t.key: t for t in build_tables(load_runs([tmp_path / "q"], labels=["my run"]))}["mmsi"]
    assert [r.label for r in table.rows][:2] == ["my run", "Δ vs Qwen2.5-VL-72B (published)"]


def test_seeds_of_a_published_model_are_judged_by_mean_plus_minus_1_96_standard_errors(tmp_path):
    for seed in range(3):
        write_run(tmp_path / f"s{seed}", STAMP, f"{QWEN72},seed={seed}", {}, mmsi_scores(seed), model="qwen2_5_vl")
    table = _mmsi(tmp_path)
    col = {h: i for i, h in enumerate(table.headers)}["Avg."]
    model, delta = (r.cells[col] for r in table.rows[:2])
    assert model.err is not None and model.lo is None and table.rows[1].kind == "delta"
    # seeds 0, 1, 2: 6/11, 5/11, 6/11 right
    assert model.value == pytest.approx(100 * 17 / 33)
    assert delta.value == pytest.approx(100 * 17 / 33 - 30.7)
    assert delta.inside == (model.value - 1.959964 * model.err <= 30.7 <= model.value + 1.959964 * model.err)


def test_a_column_that_is_not_a_percentage_gets_delta_and_interval_but_no_easi_grade(tmp_path):
    from lmms_spatial.reports.tables import Column, Layout, Leaf, build_table

    write_run(tmp_path / "q", STAMP, QWEN72, {}, mmsi_scores(0), model="qwen2_5_vl")
    layout = Layout("mmsi", "mmsi", "t", (Column("accuracy", "Avg.", Leaf("mmsi_vanilla", "accuracy"), scaled=False),
                                         Column("MSR", "MSR", None)), reference="main")  # fmt: skip
    table = build_table(layout, load_runs([tmp_path / "q"]))
    avg, msr = table.rows[1].cells
    assert avg.value == pytest.approx(6 / 11 - 30.7) and avg.grade is None and avg.inside is False
    assert msr.value is None  # a published-only column: nothing of the run to compare


def test_every_format_shows_the_delta_row_and_the_latex_compiles(tmp_path):
    write_run(tmp_path / "q", STAMP, QWEN72, {}, mmsi_scores(0), model="qwen2_5_vl")
    table = _mmsi(tmp_path / "q")
    md, csv, tex = render.markdown(table), render.csv_text([table]), render.latex(table)
    delta = next(r for r in table.rows if r.kind == "delta").cells[0]
    words = "in CI" if delta.inside else "outside CI"
    assert f"| *Δ vs Qwen2.5-VL-72B (published)* | {delta.value:+.1f} ({words}, ❌ >5) |" in md
    assert render.DELTA_LEGEND in md
    assert f'mmsi,Δ vs Qwen2.5-VL-72B (published),delta,Avg.,{delta.value:.6g},,,,1,"{words}, EASI >5"' in csv
    cell = f"{delta.value:+.1f}\\\\{{\\scriptsize {words}, EASI \\textgreater{{}}5}}"
    assert f"\\textit{{$\\Delta$ vs Qwen2.5-VL-72B (published)}} & \\begin{{tabular}}[t]{{@{{}}r@{{}}}}{cell}" in tex


def test_a_replayed_run_is_matched_by_the_label_of_the_run_whose_answers_it_scores(tmp_path):
    import json

    path = write_run(tmp_path / "r", STAMP, "samples=runs/qwen72b", {}, mmsi_scores(0), model="replay")
    data = json.loads(path.read_text())
    data["lmms_spatial"] = {"schema": 1, "model": {"label": "Qwen2.5-VL-72B-Instruct", "name": "replay",
                                                  "args": "samples=runs/qwen72b", "seed": None}}  # fmt: skip
    path.write_text(json.dumps(data))
    table = _mmsi(tmp_path / "r")
    assert [r.label for r in table.rows if r.kind == "delta"] == ["Δ vs Qwen2.5-VL-72B (published)"]
    assert any(n.startswith("reproduction: Qwen2.5-VL-72B-Instruct against the published row") for n in table.notes)


def test_the_results_page_shows_the_delta_row_as_the_report_writes_it(tmp_path):
    from lmms_spatial.view.build import table_json

    write_run(tmp_path / "q", STAMP, QWEN72, {}, mmsi_scores(0), model="qwen2_5_vl")
    table = _mmsi(tmp_path / "q")
    page = table_json(table)
    [row] = [r for r in page["rows"] if r["kind"] == "delta"]
    delta = next(r for r in table.rows if r.kind == "delta").cells
    assert row["label"] == "Δ vs Qwen2.5-VL-72B (published)"
    assert [c["t"] for c in row["cells"]] == [render.cell_text(c, table.digits) for c in delta]
    assert row["cells"][0]["t"].startswith(f"{delta[0].value:+.1f} (")
    assert render.DELTA_LEGEND in page["notes"]
    assert any(n.startswith("reproduction: ") for n in page["notes"])
