"""Every reported number says what produced it, and unlike runs are never pooled (issue 33).

Through the real ``lmms-spatial report`` command on hand-made results and samples files
(:mod:`report_fixtures`), values computed by hand; plus unit tests of the conditions read from a run.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from report_fixtures import FALLBACK, mmsi_scores, odi_scores, open_verdicts, write_osr_run, write_run

from lmms_spatial.cli import main as lmms_spatial
from lmms_spatial.conditions import model_label
from lmms_spatial.reports.runs import derive_conditions, load_runs, pool_key

STAMP = "20260101_000000"
QWEN = "pretrained=Qwen/Qwen2.5-VL-7B-Instruct,attn_implementation=flash_attention_2"
GPT = "model_version=gpt-4o-2024-08-06,base_url=https://api.openai.com/v1,num_concurrent=8"


def report(capsys, out, *paths, labels: str | None = None) -> tuple[str, list[dict[str, str]], str]:
    """``lmms-spatial report PATHS --out OUT``: its report.md, the rows of its report.csv, and its stderr."""
    argv = ["report", *map(str, paths), "--out", str(out), "--no-plots", "--quiet"]
    assert lmms_spatial(argv + (["--labels", labels] if labels else [])) == 0
    err = capsys.readouterr().err
    rows = list(csv.DictReader(io.StringIO((out / "report.csv").read_text())))
    return (out / "report.md").read_text(), rows, err


def cell(rows: list[dict[str, str]], table: str, row: str, column: str) -> dict[str, str]:
    (found,) = [r for r in rows if r["table"] == table and r["row"] == row and r["column"] == column]
    return found


def section(md: str, title_start: str) -> str:
    """One table of report.md, from its heading to the next."""
    start = md.index(f"### {title_start}")
    end = md.find("\n### ", start + 1)
    return md[start : end if end != -1 else len(md)]


# ---------------------------------------------------------------------------------------
# a run's conditions, read once
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "args", "label"),
    [
        ("qwen2_5_vl", QWEN, "Qwen2.5-VL-7B-Instruct"),
        ("openai", GPT, "gpt-4o-2024-08-06"),
        ("litellm", "model=anthropic/claude-3-5-sonnet,num_concurrent=4", "claude-3-5-sonnet"),
        ("llava", "pretrained=/models/llava-7b/", "llava-7b"),  # a local folder: its name
        ("random_choice", "seed=0", "random_choice"),  # nothing names the model: the model's name
        ("qwen2_5_vl", {"pretrained": "Qwen/Qwen2.5-VL-3B-Instruct"}, "Qwen2.5-VL-3B-Instruct"),  # --config dict
    ],
)
def test_a_model_is_labelled_by_the_basename_of_its_checkpoint_never_by_its_whole_model_args(model, args, label):
    assert model_label(model, args) == label  # the rule the run writes its label with


def test_conditions_are_derived_from_an_older_results_file_and_its_samples(tmp_path):
    """No "lmms_spatial" key: documents from n-samples, --limit from config, the judge and its share from
    the verdicts, the map source from stage_outputs, the run options from the first score record."""
    write_run(tmp_path / "a", STAMP, QWEN + ",seed=3", {"existence": [1.0, 0.0]}, None,
              {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"}, model="qwen2_5_vl", of=5, limit=2,
              open_scores={"existence": [1.0, 0.5]}, judge=FALLBACK)  # fmt: skip
    write_osr_run(tmp_path / "b", STAMP, QWEN)
    a, b = (run.conditions for run in load_runs([tmp_path / "a", tmp_path / "b"]))
    # seeds()[0]: the model's seed, as text
    assert (a.model.label, a.model.name, a.model.args_without_seed(), a.seeds([])[0], a.recorded) == (
        "Qwen2.5-VL-7B-Instruct", "qwen2_5_vl", QWEN, "3", False)  # fmt: skip
    close, opened = a.task("odi_bench_close_existence"), a.task("odi_bench_open_existence")
    assert (close.documents, close.of, close.limit, close.partial) == (2, 5, 2, True)
    assert close.options() == {"LMMS_SPATIAL_ODI_MAX_PIXELS": "524288"} and close.judge is None
    judge = opened.judge
    assert (judge.kind, judge.share, judge.scored, judge.rubric) == ("rule", 1.0, 2, "odi_open")
    assert b.task("osr_qa_cogmap_standard_vanilla").map_source == "none"  # every record: stage_outputs null
    assert b.task("osr_qa_standard_vanilla").map_source is None  # not a map task


def test_recorded_conditions_are_read_from_the_results_lmms_spatial_key(tmp_path):
    path = write_run(tmp_path / "a", STAMP, QWEN, {"existence": [1.0, 0.0]}, None,
                     open_scores={"existence": [1.0, 0.5]})  # fmt: skip
    data = json.loads(path.read_text())
    data["lmms_spatial"] = {"schema": 1, "model": {"label": "Qwen-7B", "name": "qwen2_5_vl", "args": QWEN, "seed": 7},
                            "tasks": {"odi_bench_open_existence": {
                                "documents": 2, "of": 12, "limit": 2, "map_source": None, "run_options": {}, "seed": 7,
                                "judge": {"kind": "llm", "model": "gpt-4o", "rubric": "odi_open", "rubric_version": "2",
                                          "scored": 2, "failures": 0, "unparsed": 0}}}}  # fmt: skip
    path.write_text(json.dumps(data))
    (run,) = load_runs([path])
    c = run.conditions
    assert (run.label, c.recorded, c.seeds([])[0]) == ("Qwen-7B", True, "7")
    task = c.task("odi_bench_open_existence")
    assert (task.documents, task.of, task.options()) == (2, 12, {})
    assert (task.judge.kind, task.judge.model, task.judge.rubric_version) == ("llm", "gpt-4o", "2")
    # a task the key does not name keeps what the file says
    assert c.task("odi_bench_close_existence").documents == 2


def test_runs_pool_only_when_their_conditions_differ_in_the_seed_alone(tmp_path):
    """DORI's option seed is a seed; a prompt option, the documents or the model's arguments are not."""

    def conditions(name, options, args=QWEN, of=None):
        write_run(tmp_path / name, STAMP, args, {"existence": [1.0, 0.0]}, None, options, model="qwen2_5_vl", of=of)
        return load_runs([tmp_path / name])[0]

    tasks = {"odi_bench_close_existence"}
    base = conditions("a", {"LMMS_SPATIAL_DORI_SEED": "1"})
    assert pool_key(conditions("b", {"LMMS_SPATIAL_DORI_SEED": "2"}), tasks) == pool_key(base, tasks)
    assert pool_key(conditions("c", {"LMMS_SPATIAL_DORI_SEED": "1"}, QWEN + ",seed=5"), tasks) == pool_key(base, tasks)
    assert pool_key(conditions("d", {"LMMS_SPATIAL_ODI_PROMPT": "cube"}), tasks) != pool_key(base, tasks)
    assert pool_key(conditions("e", {"LMMS_SPATIAL_DORI_SEED": "1"}, of=9), tasks) != pool_key(base, tasks)
    assert pool_key(conditions("f", {"LMMS_SPATIAL_DORI_SEED": "1"}, QWEN + ",max_pixels=9"), tasks) != pool_key(
        base, tasks
    )


def test_the_samples_are_read_once_when_the_run_is_loaded(tmp_path, monkeypatch):
    """Tables read prepared values: once loaded, a run never opens its files again."""
    write_run(tmp_path / "a", STAMP, QWEN, odi_scores(0), mmsi_scores(0), model="qwen2_5_vl")
    runs = load_runs([tmp_path])
    from lmms_spatial.reports.report import build_tables

    real_open, real_read_text = open, Path.read_text

    def guarded(reader):
        def read(path, *args, **kwargs):
            assert tmp_path not in Path(path).parents, f"{path} read after loading"
            return reader(path, *args, **kwargs)

        return read

    monkeypatch.setattr("builtins.open", guarded(real_open))
    monkeypatch.setattr("pathlib.Path.read_text", guarded(real_read_text))
    tables = build_tables(runs)
    assert {t.key for t in tables} == {"odi_bench_close", "mmsi"}


def test_derive_conditions_lists_tasks_without_documents_and_tasks_that_failed_scoring():
    data = {"results": {"odi_bench_close_ocr": {"documents,none": "no documents in this release"},
                        "mmsi_vanilla": {"alias": "mmsi_vanilla"}},
            "lmms_spatial": {"failed_tasks": {"mmsi_vanilla": "TypeError: boom"}, "groups_without_scores": []},
            "config": {"model": "random_choice", "model_args": "seed=0"}}  # fmt: skip
    c = derive_conditions(data, {})
    assert c.task("odi_bench_close_ocr").empty and c.task("mmsi_vanilla").failed == "TypeError: boom"
    assert not c.recorded  # an isolation note, not the conditions key


# ---------------------------------------------------------------------------------------
# rows: the model, partial runs, judges
# ---------------------------------------------------------------------------------------


def test_every_row_names_its_model_by_its_short_label_and_labels_override_it(tmp_path, capsys):
    write_run(tmp_path / "runs" / "gpt", STAMP, GPT, odi_scores(0), mmsi_scores(0), model="openai")
    md, rows, _ = report(capsys, tmp_path / "r1", tmp_path / "runs")
    assert "| **gpt-4o-2024-08-06** |" in section(md, "MMSI-Bench")
    assert "base_url" not in "".join(r["row"] for r in rows)  # never the whole model_args in a row
    md, _, _ = report(capsys, tmp_path / "r2", tmp_path / "runs", labels="GPT-4o (ours)")
    assert "| **GPT-4o (ours)** |" in section(md, "MMSI-Bench")


def test_a_partial_run_is_marked_with_its_documents_wherever_its_numbers_appear(tmp_path, capsys):
    """4 of 8 questions per ODI task: 40 of 80 over Table 2's 10 tasks; MMSI-Bench ran whole (no mark)."""
    write_run(tmp_path / "q", STAMP, QWEN, odi_scores(0), mmsi_scores(0), model="qwen2_5_vl", of=8, limit=4)
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path / "q")
    odi = section(md, "ODI-Bench Table 2")
    assert "| **Qwen2.5-VL-7B-Instruct (40/80)** |" in odi
    assert "| *Qwen2.5-VL-7B-Instruct (40/80) unparsed* |" in odi
    assert ("- Qwen2.5-VL-7B-Instruct: partial run, 40 of 80 documents of this table's tasks (--limit 4); the "
            "published rows cover the whole split") in odi  # fmt: skip
    assert "| **Qwen2.5-VL-7B-Instruct** |" in section(md, "MMSI-Bench")
    # the CSV row names it too: 14 of the 40 questions right (odi_scores(0)), 35.0%
    assert float(cell(rows, "odi_bench_close", "Qwen2.5-VL-7B-Instruct (40/80)", "Overall")["value"]) == 35.0
    # the Runs list: 40 of 80 ODI-Bench documents and MMSI-Bench's 11 of 11
    assert "51/91 documents (10 of 11 tasks partial)" in md.split("### ")[0]


def test_a_full_run_and_a_limit_run_of_one_model_stay_two_rows_with_a_warning_naming_the_difference(tmp_path, capsys):
    """The issue's FULL LIMIT3: never one row 'x ± y' as if they were two seeds."""
    full = odi_scores(0)
    write_run(tmp_path / "full", STAMP, "seed=0", full, None, model="random_choice")
    write_run(tmp_path / "limit2", STAMP, "seed=0", {t: s[:2] for t, s in full.items()}, None, model="random_choice",
              of=4, limit=2)  # fmt: skip
    md, rows, err = report(capsys, tmp_path / "out", tmp_path / "full", tmp_path / "limit2")
    table = section(md, "ODI-Bench Table 2")
    assert "±" not in table.split("Model cells:")[0]
    assert "| **random\\_choice** |" in table and "| **random\\_choice (20/40)** |" in table
    warning = ("WARNING: random_choice and random_choice (20/40) are not pooled as seeds of random_choice: documents "
               "4/4 vs documents 2/4 (odi_bench_close_allocentric_view_orientation, odi_bench_close_counting, "
               "odi_bench_close_egocentric_view_orientation and 7 more)")  # fmt: skip
    assert f"- {warning}" in table and f"report: {warning}" in err
    # HA (task 1): questions i with (i + 1) % 3 == 0 right: i = 2 of 0..3 (25%); of the first two, none (0%)
    assert float(cell(rows, "odi_bench_close", "random_choice", "HA")["value"]) == 25.0
    assert float(cell(rows, "odi_bench_close", "random_choice (20/40)", "HA")["value"]) == 0.0


def test_a_run_given_twice_counts_once_and_keeps_its_bootstrap_ci(tmp_path, capsys):
    """The same folder twice, and a copy of it: one row with its CI, never 'x ± 0.0' over two runs."""
    write_run(tmp_path / "a", STAMP, QWEN, odi_scores(0), mmsi_scores(0), model="qwen2_5_vl")
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    md, rows, err = report(capsys, tmp_path / "out", tmp_path / "a", tmp_path / "a", tmp_path / "copy")
    mmsi = section(md, "MMSI-Bench")
    assert mmsi.count("| **Qwen2.5-VL-7B-Instruct") == 1 and "±" not in mmsi.split("Model cells:")[0]
    avg = cell(rows, "mmsi", "Qwen2.5-VL-7B-Instruct", "Avg.")
    assert avg["n_runs"] == "1" and avg["ci_low"] and avg["ci_high"] and not avg["seed_error"]
    assert f"report: WARNING: {tmp_path / 'a' / (STAMP + '_results.json')} was given twice; counted once" in err
    assert (f"holds the same results as {tmp_path / 'a' / (STAMP + '_results.json')} (Qwen2.5-VL-7B-Instruct); "
            "counted once, not as a second seed") in err  # fmt: skip


def test_seeds_of_one_model_pool_as_mean_and_error_naming_the_seeds(tmp_path, capsys):
    for seed in range(3):
        write_run(tmp_path / f"s{seed}", STAMP, f"{QWEN},seed={seed}", odi_scores(seed), mmsi_scores(seed),
                  model="qwen2_5_vl")  # fmt: skip
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path)
    # Avg. per seed: mmsi_scores(s) right on every other category of 11: 6/11, 5/11, 6/11
    values = [600 / 11, 500 / 11, 600 / 11]
    mean = sum(values) / 3
    error = (sum((v - mean) ** 2 for v in values) / 3) ** 0.5 / 3**0.5
    avg = cell(rows, "mmsi", "Qwen2.5-VL-7B-Instruct", "Avg.")
    assert float(avg["value"]) == pytest.approx(mean, rel=1e-5) and float(avg["seed_error"]) == pytest.approx(
        error, 1e-5
    )
    assert avg["n_runs"] == "3"
    assert "- Qwen2.5-VL-7B-Instruct: mean ± std/sqrt(n) over 3 runs (seed=0, seed=1, seed=2)" in section(md, "MMSI")


def test_rule_based_judge_rows_are_marked_and_footnoted_beside_llm_judged_ones(tmp_path, capsys):
    write_run(tmp_path / "a", STAMP, QWEN, odi_scores(0), None, model="qwen2_5_vl", open_scores=open_verdicts(0),
              judge=FALLBACK)  # fmt: skip
    write_run(tmp_path / "b", STAMP, GPT, odi_scores(1), None, model="openai", open_scores=open_verdicts(0),
              judge="gpt-4o-judge")  # fmt: skip
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path)
    table = section(md, "ODI-Bench Table 3")
    assert "| **Qwen2.5-VL-7B-Instruct (rule-based judge)** |" in table
    assert "| **gpt-4o-2024-08-06** |" in table  # judged by an LLM: no mark
    assert ("- Qwen2.5-VL-7B-Instruct: judged columns scored by the rule-based fallback, not an LLM judge (rubric "
            "odi_open v1.0) (40 scored); the published rows were scored by an LLM judge: not comparable with them"
            ) in table  # fmt: skip
    assert "- gpt-4o-2024-08-06: judged by gpt-4o-judge (rubric odi_open v1.0) (40 scored)" in table
    # open_verdicts(0): ((i + j) % 3) / 2 summed per task j: 1.5, 2, 2.5, repeating from j = 0 -> 19.5 of 40
    overall = cell(rows, "odi_bench_open", "Qwen2.5-VL-7B-Instruct (rule-based judge)", "Overall")
    assert float(overall["value"]) == pytest.approx(100 * 19.5 / 40)
    # the close-ended table has no judged column: no mark there
    assert "| **Qwen2.5-VL-7B-Instruct** |" in section(md, "ODI-Bench Table 2")


def test_a_model_with_no_judge_gets_empty_judged_cells_that_say_why_and_every_answer_unusable(tmp_path, capsys):
    write_run(tmp_path / "a", STAMP, QWEN, {}, None, model="qwen2_5_vl", open_scores={"object_attribute": [None] * 4})
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path)
    table = section(md, "ODI-Bench Table 3")
    row = next(line for line in table.splitlines() if line.startswith("| **Qwen2.5"))
    oa = row.split(" | ")[4]
    assert oa.startswith("-")
    reason = ("no judge: no answer was judged (JudgeNotConfiguredError); set LMMS_SPATIAL_JUDGE and re-score the "
              "samples with --model replay")  # fmt: skip
    assert f"- {oa[1:]} {reason}" in table
    assert cell(rows, "odi_bench_open", "Qwen2.5-VL-7B-Instruct", "OA")["note"] == reason
    # unparsed (open-ended): 4 judge failures of 4 answers
    assert float(cell(rows, "odi_bench_open", "Qwen2.5-VL-7B-Instruct unparsed", "OA")["value"]) == 100.0
    assert "- Qwen2.5-VL-7B-Instruct: no judge verdict (JudgeNotConfiguredError) (0 scored, 4 judge failures)" in table


def test_an_older_run_whose_every_verdict_was_unparsed_shows_no_zero(tmp_path, capsys):
    """Runs before issue 33 scored an unparsed verdict 0: all unparsed gave judge_score 0.0, read as a real 0."""
    path = write_run(tmp_path / "a", STAMP, QWEN, {}, None, model="qwen2_5_vl",
                     open_scores={"object_attribute": ["unparsed"] * 4})  # fmt: skip
    assert json.loads(path.read_text())["results"]["odi_bench_open_object_attribute"]["judge_score,none"] == 0.0
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path)
    oa = cell(rows, "odi_bench_open", "Qwen2.5-VL-7B-Instruct", "OA")
    assert (oa["value"], oa["note"]) == ("", "judge: every verdict unparsed (no answer scored)")
    assert float(cell(rows, "odi_bench_open", "Qwen2.5-VL-7B-Instruct unparsed", "OA")["value"]) == 100.0


# ---------------------------------------------------------------------------------------
# OSR-Bench: never a with-map number without a map; unparsed and chance in every table
# ---------------------------------------------------------------------------------------


def test_with_map_cells_of_a_model_that_drew_no_map_are_empty_and_say_why(tmp_path, capsys):
    """The results file holds with-map accuracies (runs before issue 33 scored them): the report shows none."""
    write_osr_run(tmp_path / "q", STAMP, QWEN)
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path / "q")
    table = section(md, "OSR-Bench Table 3")
    reason = "no map: answered without a map drawn by the model (a chat model draws its own; or --model staged)"
    for skill in ("counting", "distance", "direction"):
        with_map = cell(rows, "osr_table3", "Qwen2.5-VL-7B-Instruct", f"{skill} w/ map")
        assert (with_map["value"], with_map["note"]) == ("", reason)
    assert f"- ¹ {reason}" in table
    # without the map, per skill from the samples: counting 0.5, distance 1/1, direction (0 + 1) / 2
    without = {s: float(cell(rows, "osr_table3", "Qwen2.5-VL-7B-Instruct", f"{s} w/o map")["value"])
               for s in ("counting", "distance", "direction")}  # fmt: skip
    assert without == {"counting": 0.5, "distance": 1.0, "direction": 0.5}


def test_osr_qa_tables_have_per_skill_unparsed_rates_and_chance_levels(tmp_path, capsys):
    write_osr_run(tmp_path / "q", STAMP, QWEN)
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path / "q")
    for table, suffix in (("osr_table3", " w/o map"), ("osr_table4", "")):
        name = {"counting": "object counting", "distance": "relative distance", "direction": "relative direction"}
        column = {s: (f"{s}{suffix}" if suffix else name[s]) for s in name}
        unparsed = {s: cell(rows, table, "Qwen2.5-VL-7B-Instruct unparsed", column[s])["value"] for s in name}
        assert {s: float(v) for s, v in unparsed.items()} == {"counting": 0.0, "distance": 0.0, "direction": 0.5}
        chance = {s: cell(rows, table, "chance level", column[s]) for s in name}
        assert float(chance["distance"]["value"]) == 0.25 and float(chance["direction"]["value"]) == 0.125
        assert chance["counting"]["note"] == "object counting scores partial credit: no chance level"


def test_chair_has_the_unparsed_map_rate_beside_it(tmp_path, capsys):
    """Two maps, one unparsed (CHAIR_S 0 by the official rule), one with CHAIR_S 0.5: CHAIR_S 0.25 next to 0.5."""
    write_osr_run(tmp_path / "q", STAMP, QWEN)
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path / "q")
    assert float(cell(rows, "osr_table4", "Qwen2.5-VL-7B-Instruct", "CHAIR_S")["value"]) == 0.25
    assert float(cell(rows, "osr_table4", "Qwen2.5-VL-7B-Instruct unparsed", "CHAIR_S")["value"]) == 0.5
    table = section(md, "OSR-Bench Table 4")
    assert "| *Qwen2.5-VL-7B-Instruct unparsed* | 0.500 | " in table
    assert "read CHAIR and F1 with this rate beside them" in table
    assert cell(rows, "osr_table4", "chance level", "CHAIR_S")["note"].startswith("cognitive maps: no chance level")


def test_an_empty_cell_says_why_in_a_numbered_footnote(tmp_path, capsys):
    """mmsi_circular was not run: its cells are '-' with a mark, and the mark's footnote names the task."""
    write_run(tmp_path / "a", STAMP, QWEN, {}, mmsi_scores(0), model="qwen2_5_vl")
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path / "a")
    table = section(md, "MMSI-Bench")
    row = next(line for line in table.splitlines() if line.startswith("| **Qwen2.5"))
    assert row.endswith("| -¹ |")
    assert "- ¹ mmsi_circular not in this run" in table
    assert "- ² circular: no chance level recorded" in table
    assert cell(rows, "mmsi", "Qwen2.5-VL-7B-Instruct", "Circular")["note"] == "mmsi_circular not in this run"
    tex = (tmp_path / "out" / "report.tex").read_text()
    assert "--\\textsuperscript{1}" in tex and "\\textsuperscript{1}~mmsi\\_circular not in this run" in tex


def test_lines_that_are_not_samples_are_skipped_named_and_counted_by_the_report_and_the_view(tmp_path, capsys):
    """A model's byte that is not UTF-8, a line that is not JSON, a JSON array and the cut last line of a killed run:
    each costs its line, named file:line with why, counted in every format; the 11 samples are all there."""
    write_run(tmp_path / "a", STAMP, QWEN, {}, mmsi_scores(0), model="qwen2_5_vl")
    samples = tmp_path / "a" / f"{STAMP}_samples_mmsi_vanilla.jsonl"
    # lines 12-15; 0xff follows the 39 bytes of '{"doc_id": 11, "accuracy": {"parsed": "'; line 15's string opens
    # after the 28 characters of '{"doc_id": 13, "accuracy": {'
    samples.write_bytes(samples.read_bytes() + b'{"doc_id": 11, "accuracy": {"parsed": "\xff"}}\n{not json\n'
                        b'[{"doc_id": 12}]\n{"doc_id": 13, "accuracy": {"sc')  # fmt: skip
    named = [
        f"{samples}:12: not UTF-8 (0xff at byte 40 of the line)",
        f"{samples}:13: not JSON (Expecting property name enclosed in double quotes: column 2)",
        f"{samples}:14: not a samples record (a JSON list, not an object)",
        f"{samples}:15: cut short: the last line, with no line end, is not whole JSON (Unterminated string starting "
        "at: column 29), as a killed run leaves it",
    ]
    md, rows, err = report(capsys, tmp_path / "out", tmp_path / "a")
    count = (f"WARNING: Qwen2.5-VL-7B-Instruct: 4 samples lines skipped, not samples ({tmp_path / 'a'}): the values "
             "read from the samples lines (CIs, per-question values, analyses) leave them out")  # fmt: skip
    warnings = [count] + [f"WARNING: skipped {line}" for line in named]
    assert [line for line in err.splitlines() if "skipped" in line] == [f"report: {w}" for w in warnings]
    assert "\n".join(f"- {w}" for w in warnings) in md.split("Warnings:", 1)[1]
    note = ("Qwen2.5-VL-7B-Instruct: 4 lines of its samples files skipped, not samples (named in the warnings): its "
            "CIs and the values read from samples lines leave them out")  # fmt: skip
    assert f"- {note}\n" in section(md, "MMSI-Bench")
    assert cell(rows, "mmsi", "Qwen2.5-VL-7B-Instruct", "") == {
        "table": "mmsi", "row": "Qwen2.5-VL-7B-Instruct", "kind": "skipped_lines", "column": "", "value": "4",
        "ci_low": "", "ci_high": "", "seed_error": "", "n_runs": "", "note": note}  # fmt: skip
    assert note in (tmp_path / "out" / "report.tex").read_text()
    # the numbers: the results file's (6 of 11 right), with the CI of the 11 samples lines written before the bad ones
    avg = cell(rows, "mmsi", "Qwen2.5-VL-7B-Instruct", "Avg.")
    assert (avg["value"], avg["n_runs"]) == ("54.5455", "1") and avg["ci_low"] and avg["ci_high"]
    assert [line["doc_id"] for line in load_runs([tmp_path / "a"])[0].lines["mmsi_vanilla"]] == list(range(11))
    # the view: the same lines named by the command, the count on the page, every sample in it
    assert lmms_spatial(["view", str(tmp_path / "a"), "--no-plots", "--out", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:6] == ["view: 4 lines of the samples files skipped, not samples (the page counts them and names "
                        "them in its warnings):"] + [f"view:   {line}" for line in named]  # fmt: skip
    text = (tmp_path / "site" / "data" / "manifest.js").read_text(encoding="utf-8")
    manifest = json.loads(text[text.index("(") + 1 : text.rindex(")")])
    (entry,) = manifest["tasks"]
    assert (manifest["skipped"], manifest["samples"], entry["skipped"], entry["n"]) == (4, 11, 4, 11)
    assert manifest["warnings"][-5:] == warnings


def test_a_results_file_cut_short_stops_the_report_and_the_view_naming_it(tmp_path, capsys):
    write_run(tmp_path / "a", STAMP, QWEN, {}, mmsi_scores(0), model="qwen2_5_vl")
    broken = tmp_path / "a" / "20261127_000000_results.json"
    broken.write_text('{"results": {"mmsi_vanilla"', encoding="utf-8")
    for command in ("report", "view"):
        assert lmms_spatial([command, str(tmp_path / "a"), "--no-plots", "--out", str(tmp_path / command)]) == 1
        assert capsys.readouterr().err.startswith(f"{command}: {broken}: not a JSON results file (")


# ---------------------------------------------------------------------------------------
# generation settings are conditions (issue 41)
# ---------------------------------------------------------------------------------------

MMSI_PROTOCOL = {"do_sample": False, "max_new_tokens": 1024, "temperature": 0.0, "until": ["\n\n"]}  # its YAML's


def _mmsi_run(folder: Path, seed: int, overrides: dict | None) -> Path:
    """mmsi_vanilla of Qwen at ``seed``, its conditions recorded as a run of ours records them: ``overrides``
    (``--gen_kwargs``) updating the task's own generation settings."""
    path = write_run(folder, STAMP, f"{QWEN},seed={seed}", {}, mmsi_scores(seed), model="qwen2_5_vl",
                     config={"gen_kwargs": overrides})  # fmt: skip
    data = json.loads(path.read_text())
    generation = {"protocol": MMSI_PROTOCOL, "in_effect": {**MMSI_PROTOCOL, **(overrides or {})},
                  "overrides": overrides or {}}  # fmt: skip
    data["lmms_spatial"] = {"schema": 1, "model": {"label": "Qwen2.5-VL-7B-Instruct", "name": "qwen2_5_vl",
                                                   "args": f"{QWEN},seed={seed}", "seed": seed},
                            "tasks": {"mmsi_vanilla": {"documents": 11, "of": 11, "limit": None, "judge": None,
                                                       "map_source": None, "run_options": {}, "seed": seed,
                                                       "generation": generation}}}  # fmt: skip
    path.write_text(json.dumps(data))
    return path


def test_runs_differing_only_in_generation_settings_are_never_pooled_and_the_off_protocol_row_is_marked(
    tmp_path, capsys
):
    _mmsi_run(tmp_path / "protocol", 0, None)
    _mmsi_run(tmp_path / "short1", 1, {"max_new_tokens": 16})
    _mmsi_run(tmp_path / "short2", 2, {"max_new_tokens": 16})
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path)
    table = section(md, "MMSI-Bench")
    # mmsi_scores(s): 6 of 11 categories right for an even shift, 5 for an odd one
    protocol = cell(rows, "mmsi", "Qwen2.5-VL-7B-Instruct", "Avg.")
    assert float(protocol["value"]) == pytest.approx(600 / 11) and protocol["n_runs"] == "1"
    short = cell(rows, "mmsi", "Qwen2.5-VL-7B-Instruct (gen max_new_tokens=16)", "Avg.")
    assert float(short["value"]) == pytest.approx((500 / 11 + 600 / 11) / 2) and short["n_runs"] == "2"
    assert (
        "- Qwen2.5-VL-7B-Instruct (gen max_new_tokens=16): generation settings other than the paper's protocol "
        "(the tasks' own generation_kwargs): max_new_tokens=16 (protocol 1024) on mmsi_vanilla"
    ) in table
    assert ("are not pooled as seeds of Qwen2.5-VL-7B-Instruct: --gen_kwargs none vs max_new_tokens=16; generation "
            'do_sample=false, max_new_tokens=1024, temperature=0, until=["\\n\\n"] vs generation do_sample=false, '
            'max_new_tokens=16, temperature=0, until=["\\n\\n"] (mmsi_vanilla)') in table  # fmt: skip


def test_the_generation_settings_recorded_by_a_run_are_read_and_an_older_files_gen_kwargs_is_marked(tmp_path, capsys):
    (run,) = load_runs([_mmsi_run(tmp_path / "short", 1, {"max_new_tokens": 16})])
    task = run.conditions.task("mmsi_vanilla")
    assert task.off_protocol() == {"max_new_tokens": ("16", "1024")}
    assert run.conditions.gen_overrides == (("max_new_tokens", "16"),)
    # no "lmms_spatial" key: only lmms-eval's config.gen_kwargs says the settings were changed
    write_run(tmp_path / "older" / "x", STAMP, QWEN, {}, mmsi_scores(0), model="qwen2_5_vl",
              config={"gen_kwargs": {"max_new_tokens": 16}})  # fmt: skip
    md, rows, _ = report(capsys, tmp_path / "out", tmp_path / "older")
    assert cell(rows, "mmsi", "Qwen2.5-VL-7B-Instruct (--gen_kwargs max_new_tokens=16)", "Avg.")["n_runs"] == "1"
    assert ("- Qwen2.5-VL-7B-Instruct: run with --gen_kwargs max_new_tokens=16; its "
            "tasks' own settings (the paper's protocol) are not in this results file: it may not follow the protocol"
            ) in section(md, "MMSI-Bench")  # fmt: skip
