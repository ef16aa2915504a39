"""ODI-Bench edges (issue 37): question-weighted levels on unequal tasks, anchoring counts, the printed tables."""

import math

import pytest

from lmms_spatial.metrics import odi_bench as odi


def rec(task, score, i=0, **extra):
    return {"id": f"{task}_{i}", "task": task, "score": score, **extra}


def test_levels_are_question_means_so_a_large_task_outweighs_a_small_one():
    # General: OA 9 questions all right, OCR 1 question wrong -> 9/10 per question (the task mean would be 0.5)
    # Spatial: EVO 1 question right, RD 3 questions wrong -> 1/4 (task mean 0.5)
    records = [rec("object_attribute", 1.0, i) for i in range(9)] + [rec("ocr", 0.0)]
    records += [rec("egocentric_view_orientation", 1.0)] + [rec("relative_direction", 0.0, i) for i in range(3)]
    summary = odi.summarise(records)
    assert summary["General"] == 0.9 and summary["Spatial"] == 0.25
    assert summary["Overall"] == pytest.approx(10 / 14)  # 9 + 1 right of 14 questions
    assert summary["n"]["object_attribute"] == 9 and summary["n"]["counting"] == 0
    assert "counting" not in summary["tasks"]  # a task with no question has no score, not 0


def test_a_level_without_questions_is_nan_and_prints_as_a_dash():
    summary = odi.summarise([rec("ocr", 0.5)])
    assert summary["General"] == 0.5 and math.isnan(summary["Spatial"])
    row = odi.format_table(summary).splitlines()[2]
    assert row == "| model | 50.00 | 50.00 | - | - | - | - | - | 50.00 | - | - | - | - | - |"


def test_the_open_ended_scale_0_half_1_averages_per_question():
    records = [rec("scene_simulation", s, i) for i, s in enumerate([0.0, 0.5, 1.0, 0.5])]
    assert odi.summarise(records)["tasks"]["scene_simulation"] == 0.5  # (0 + 0.5 + 1 + 0.5) / 4


def test_every_task_has_its_level():
    assert [odi.level_of(t) for t in odi.GENERAL_TASKS] == ["General"] * 5
    assert [odi.level_of(t) for t in odi.SPATIAL_TASKS] == ["Spatial"] * 5


def test_a_record_marked_failed_is_left_out_even_if_it_carries_a_score():
    records = [rec("ocr", 1.0, 0), rec("ocr", 0.0, 1, failed=True)]
    assert odi.mean_score(records) == 1.0 and odi.scored(records) == [records[0]]
    close, opened = [rec("ocr", 1.0, 1)], [rec("ocr", 0.0, 1, failed=True)]
    result = odi.option_anchoring(close, opened)
    assert result["n"] == 0 and result["open_failed"] == 1


def test_anchoring_counts_each_of_the_four_cases_apart():
    # q0 both right; q1, q2 both wrong; q3, q4, q5 close right only; q6 open right only: 7 questions
    close = [rec("ocr", s, i) for i, s in enumerate([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0])]
    opened = [rec("ocr", s, i) for i, s in enumerate([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])]
    result = odi.option_anchoring(close, opened)
    assert (result["both_right"], result["both_wrong"]) == (1 / 7, 2 / 7)
    assert (result["close_right_open_wrong"], result["open_right_close_wrong"]) == (3 / 7, 1 / 7)


def test_anchoring_from_runs_passes_the_threshold_on(tmp_path):
    import json

    close, opened = tmp_path / "c_samples_odi_bench_close_x.jsonl", tmp_path / "o_samples_odi_bench_open_x.jsonl"
    close.write_text(json.dumps({"accuracy": rec("ocr", 0.0, 0)}) + "\n", encoding="utf-8")
    opened.write_text(json.dumps({"judge_score": rec("ocr", 0.5, 0)}) + "\n", encoding="utf-8")
    assert odi.anchoring_from_runs(close, opened)["open_right_close_wrong"] == 0.0  # 0.5 is not right at 1.0
    assert odi.anchoring_from_runs(close, opened, open_threshold=0.5)["open_right_close_wrong"] == 1.0


def test_anchoring_over_no_matched_question_is_nan_not_an_error():
    result = odi.option_anchoring([rec("ocr", 1.0, 0)], [rec("ocr", 1.0, 1)])
    assert result["n"] == 0 and math.isnan(result["open_right_close_wrong"]) and math.isnan(result["both_wrong"])
    assert result["per_task"] == {} and (result["only_close"], result["only_open"]) == (1, 1)


def test_anchoring_prints_one_row_per_task_then_all_then_what_was_left_out():
    close = [rec("ocr", 0.0, 0), rec("ocr", 1.0, 1), rec("counting", 1.0, 2)]
    opened = [rec("ocr", 1.0, 0), rec("ocr", 1.0, 1), rec("counting", 0.0, 2)]
    text = odi.format_anchoring(odi.option_anchoring(close, opened, open_threshold=0.5))

    def row(name, n, oc, co):  # columns: task 30 wide, n 5, two percentages 23 + "%"
        return f"{name.ljust(30)} {str(n).rjust(5)} {oc.rjust(23)}% {co.rjust(23)}%"

    assert text.splitlines() == [
        " ".join(
            ["task".ljust(30), "n".rjust(5), "open right, close wrong".rjust(24), "close right, open wrong".rjust(24)]
        ),
        row("counting", 1, "0.00", "100.00"),  # q2: close right, open wrong
        row("ocr", 2, "50.00", "0.00"),  # q0: open right, close wrong; q1 both right
        row("all", 3, "33.33", "33.33"),
        "(open right = judge score >= 0.5; left out: 0 without a verdict, 0 only close-ended, 0 only open-ended)",
    ]


def test_the_table_row_uses_the_label_and_scale_it_is_given():
    summary = odi.summarise([rec(t, 0.25) for t in odi.TASKS])
    lines = odi.format_table(summary, label="GPT", scale=1.0).splitlines()
    assert lines[1] == "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    assert lines[2] == "| GPT |" + " 0.25 |" * 13
    assert odi.format_table(summary).splitlines()[2].startswith("| model | 25.00 |")


@pytest.mark.parametrize(
    ("name", "task"),
    [(" Object__Attribute ", "object_attribute"), ("ODI reason", "odi_reasoning"), ("count", "counting")],
)
def test_more_task_spellings(name, task):
    assert odi.normalise_task(name) == task


def test_an_unknown_task_lists_the_known_ones_comma_separated():
    with pytest.raises(ValueError, match=r"known: object_attribute, human_attribute, existence, counting, ocr, "):
        odi.normalise_task("depth")


def test_a_question_with_options_is_never_yes_no_even_if_its_answer_is_yes():
    assert odi.is_yes_no({"options": ["Yes", "No"], "answer": "Yes"}) is False
    assert odi.is_yes_no({"options": [], "answer": "C"}) is False
    assert odi.is_yes_no({"options": None, "answer": " no "}) is True


def test_chance_of_one_option_is_one_and_of_a_question_without_option_count_a_half():
    assert odi.chance_of({"n_options": 1}) == 1.0
    assert odi.chance_of({}) == 0.5 and odi.chance_of({"n_options": 0}) == 0.5
    assert odi.chance_of({"n_options": "5"}) == 0.2


def test_samples_files_that_cannot_be_found_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing: no such samples file or folder$"):
        odi._samples_files(tmp_path / "missing", "close")
    with pytest.raises(FileNotFoundError, match=r": no \*_samples_odi_bench_open_\*\.jsonl files$"):
        odi._samples_files(tmp_path, "open")


def test_records_after_a_blank_line_are_read_and_a_record_that_is_no_dict_is_named(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"accuracy": {"id": "a"}}\n\n{"accuracy": {"id": "b"}}\n', encoding="utf-8")
    assert odi.read_records([path], "accuracy") == [{"id": "a"}, {"id": "b"}]
    path.write_text('{"accuracy": [1]}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"s\.jsonl:1: 'accuracy' is not a score record$"):
        odi.read_records([path], "accuracy")
