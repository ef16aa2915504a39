"""ODI-Bench metrics: Table 2/3 aggregates, chance level, judge failures, option anchoring."""

from __future__ import annotations

import json
import math

import pytest

from lmms_spatial.metrics import odi_bench as odi
from lmms_spatial.tasks.odi_bench import anchoring


def rec(task: str, score: float | None, i: int = 0, **extra) -> dict:
    r = {"id": f"{task}_{i}", "task": task, **extra}
    if score is None:
        r["failed"] = True
    else:
        r["score"] = score
    return r


def test_general_spatial_and_overall_are_means_over_questions_as_in_the_paper():
    # object_attribute: 3 questions, 2 right (2/3); the other general tasks 1 question each
    records = [rec("object_attribute", s, i) for i, s in enumerate([1.0, 1.0, 0.0])]
    records += [rec("human_attribute", 1.0), rec("existence", 0.0), rec("counting", 1.0), rec("ocr", 0.0)]
    records += [rec(t, 0.5) for t in odi.SPATIAL_TASKS]
    summary = odi.summarise(records)
    assert summary["tasks"]["object_attribute"] == pytest.approx(2 / 3)
    assert summary["General"] == pytest.approx(4 / 7)  # 7 questions, 4 right; per task it would be 0.533
    assert summary["Spatial"] == 0.5
    # 12 questions: 4 right in General + 5 * 0.5 in Spatial
    assert summary["Overall"] == pytest.approx((4 + 2.5) / 12)


def test_the_papers_random_row_is_reproduced_by_summarise_with_the_paper_question_counts():
    # Table 2, Random Choice: 25.00 on every task but Exist. 50.00 and OR 41.00; Overall 26.93.
    # Each question scores its task's chance (a uniform guesser's expected score), with the per-task
    # question counts Table 2 implies: 1220, 304, 200, 172, 121 | 815, 477, 500, 245, 200 (4,254).
    chance = {t: 0.25 for t in odi.TASKS} | {"existence": 0.5, "odi_reasoning": 0.41}
    records = [rec(t, chance[t], i) for t, n in odi.PAPER_QUESTION_COUNTS.items() for i in range(n)]
    summary = odi.summarise(records)
    # by hand: (0.25 * (4254 - 200 - 200) + 0.5 * 200 + 0.41 * 200) / 4254 = (963.5 + 100 + 82) / 4254
    #        = 1145.5 / 4254 = 0.269276...; the mean of the ten task scores would be 2.91 / 10 = 29.10
    assert summary["Overall"] == pytest.approx(1145.5 / 4254)
    assert round(summary["Overall"] * 100, 2) == 26.93
    # General: (0.25 * (1220 + 304 + 172 + 121) + 0.5 * 200) / 2017 = (454.25 + 100) / 2017
    assert summary["General"] == pytest.approx(554.25 / 2017)
    # Spatial: (0.25 * (815 + 477 + 500 + 245) + 0.41 * 200) / 2237 = (509.25 + 82) / 2237
    assert summary["Spatial"] == pytest.approx(591.25 / 2237)
    assert summary["tasks"]["existence"] == pytest.approx(0.5) and summary["n"]["object_attribute"] == 1220


# Table 5 (Omni-CoT ablations): Overall, General, Spatial of 12 rows, as printed
TABLE_5 = [
    (57.12, 70.49, 45.05), (63.07, 72.08, 54.94), (62.79, 71.79, 54.67), (58.29, 67.67, 49.83),
    (55.88, 70.05, 43.09), (63.89, 72.63, 56.01), (52.76, 66.33, 40.53), (55.76, 67.82, 44.88),
    (53.71, 65.79, 42.83), (48.93, 54.29, 44.12), (50.52, 66.78, 35.85), (58.04, 69.81, 47.43),
]  # fmt: skip


@pytest.mark.parametrize(("overall", "general", "spatial"), TABLE_5)
def test_every_row_of_table_5_has_overall_as_the_question_weighted_mean_of_general_and_spatial(
    overall, general, spatial
):
    # 2,017 General and 2,237 Spatial questions (Table 2's counts); every General question scores the
    # row's General, every Spatial one its Spatial: summarise's Overall must be the paper's Overall,
    # (2017 * General + 2237 * Spatial) / 4254, to within the three numbers' rounding to 0.01.
    # (The mean of General and Spatial would miss: row 1 gives (70.49 + 45.05) / 2 = 57.77, not 57.12.)
    records = [
        rec(t, (general if t in odi.GENERAL_TASKS else spatial) / 100, i)
        for t, n in odi.PAPER_QUESTION_COUNTS.items()
        for i in range(n)
    ]
    summary = odi.summarise(records)
    assert (summary["n"]["object_attribute"], sum(summary["n"].values())) == (1220, 4254)
    assert summary["General"] * 100 == pytest.approx(general)
    assert summary["Spatial"] * 100 == pytest.approx(spatial)
    assert summary["Overall"] * 100 == pytest.approx(overall, abs=0.015)
    assert summary["Overall"] * 100 == pytest.approx((2017 * general + 2237 * spatial) / 4254)


def _table_2_row(model: str) -> dict[str, float]:
    from lmms_spatial.reports import references

    return next(r["values"] for r in references.table("odi_bench", "table2_close")["rows"] if r["model"] == model)


@pytest.mark.parametrize(("model", "general", "spatial"), [("Gemini-2.0-flash", 70.49, 45.05),
                                                           ("InternVL2.5-8B", 66.33, 40.53)])  # fmt: skip
def test_table_5_general_and_spatial_are_the_question_means_of_table_2s_task_scores(model, general, spatial):
    values = _table_2_row(model)
    records = [
        rec(task, values[odi.ABBREVIATIONS[task]] / 100, i)
        for task, n in odi.PAPER_QUESTION_COUNTS.items()
        for i in range(n)
    ]  # every question of a task carries the task's Table 2 accuracy: its question mean is that accuracy
    summary = odi.summarise(records)
    assert summary["General"] * 100 == pytest.approx(general, abs=0.015)
    assert summary["Spatial"] * 100 == pytest.approx(spatial, abs=0.015)
    assert summary["Overall"] * 100 == pytest.approx(values["Overall"], abs=0.015)


def test_judge_failures_are_left_out_of_every_mean():
    records = [rec("counting", 1.0, 0), rec("counting", None, 1), rec("counting", 0.0, 2)]
    assert odi.mean_score(records) == 0.5
    summary = odi.summarise(records)
    assert summary["n"]["counting"] == 2 and summary["failed"] == 1


def test_mean_score_of_only_failures_is_nan():
    assert math.isnan(odi.mean_score([rec("ocr", None)]))


def test_chance_level_is_one_over_options_and_a_half_for_yes_no():
    assert odi.chance_of({"n_options": 4}) == 0.25
    assert odi.chance_of({"n_options": 2}) == 0.5


@pytest.mark.parametrize(
    ("name", "task"),
    [("Object Attribute", "object_attribute"), ("EVO", "egocentric_view_orientation"), ("Exist.", "existence"),
     ("odi-reasoning", "odi_reasoning"), ("OCR", "ocr"), ("Count.", "counting")],
)  # fmt: skip
def test_task_names_are_normalised_from_paper_spellings(name, task):
    assert odi.normalise_task(name) == task


def test_unknown_task_name_is_an_error_listing_the_known_ones():
    with pytest.raises(ValueError, match="unknown ODI-Bench task 'depth'.*object_attribute"):
        odi.normalise_task("depth")


def test_table_row_follows_the_paper_column_order():
    summary = odi.summarise([rec(t, 1.0) for t in odi.TASKS])
    table = odi.format_table(summary, "m")
    assert table.splitlines()[0] == (
        "|  | Overall | General | Spatial | OA | HA | Exist. | Count. | OCR | EVO | AVO | SS | RD | OR |"
    )
    assert table.splitlines()[2].startswith("| m | 100.00 | 100.00 | 100.00 | 100.00")


# -- option anchoring ---------------------------------------------------------------------


def test_option_anchoring_counts_both_directions_over_matched_questions():
    close = [rec("ocr", 0.0, 0), rec("ocr", 1.0, 1), rec("ocr", 1.0, 2), rec("counting", 0.0, 3)]
    opened = [rec("ocr", 1.0, 0), rec("ocr", 0.0, 1), rec("ocr", 1.0, 2), rec("counting", 0.5, 3)]
    result = odi.option_anchoring(close, opened)
    assert result["n"] == 4
    assert result["open_right_close_wrong"] == 0.25  # q0
    assert result["close_right_open_wrong"] == 0.25  # q1 (q3's 0.5 is not right at threshold 1)
    assert result["both_right"] == 0.25 and result["both_wrong"] == 0.25
    assert result["per_task"]["ocr"]["open_right_close_wrong"] == pytest.approx(1 / 3)


def test_option_anchoring_threshold_half_counts_partial_credit_as_right():
    close = [rec("counting", 0.0, 3)]
    opened = [rec("counting", 0.5, 3)]
    assert odi.option_anchoring(close, opened, open_threshold=0.5)["open_right_close_wrong"] == 1.0


def test_option_anchoring_leaves_out_judge_failures_and_unmatched_questions():
    close = [rec("ocr", 1.0, 0), rec("ocr", 1.0, 1), rec("ocr", 1.0, 2)]
    opened = [rec("ocr", 0.0, 0), rec("ocr", None, 1), rec("ocr", 1.0, 9)]
    result = odi.option_anchoring(close, opened)
    assert result["n"] == 1 and result["close_right_open_wrong"] == 1.0
    assert (result["open_failed"], result["only_close"], result["only_open"]) == (1, 1, 1)


def _samples(path, metric, records):
    path.write_text("".join(json.dumps({"doc_id": i, metric: r}) + "\n" for i, r in enumerate(records)))
    return path


def test_anchoring_reads_the_close_and_open_samples_files_of_two_runs(tmp_path, capsys):
    close_dir, open_dir = tmp_path / "close", tmp_path / "open"
    close_dir.mkdir(), open_dir.mkdir()
    _samples(close_dir / "x_samples_odi_bench_close_ocr.jsonl", "accuracy", [rec("ocr", 0.0, 0), rec("ocr", 1.0, 1)])
    _samples(open_dir / "x_samples_odi_bench_open_ocr.jsonl", "judge_score", [rec("ocr", 1.0, 0), rec("ocr", 1.0, 1)])
    result = odi.anchoring_from_runs(close_dir, open_dir)
    assert result["open_right_close_wrong"] == 0.5 and result["close_right_open_wrong"] == 0.0
    out_json = tmp_path / "a.json"
    assert anchoring.main(["anchoring", str(close_dir), str(open_dir), "--json", str(out_json)]) == 0
    assert "50.00%" in capsys.readouterr().out
    assert json.loads(out_json.read_text())["n"] == 2


def test_anchoring_cli_names_a_samples_file_without_the_record(tmp_path, capsys):
    bad = tmp_path / "x_samples_odi_bench_close_ocr.jsonl"
    bad.write_text(json.dumps({"doc_id": 0}) + "\n")
    assert anchoring.main(["anchoring", str(bad), str(bad)]) == 1
    assert f"{bad}:1: no 'accuracy' record" in capsys.readouterr().err
