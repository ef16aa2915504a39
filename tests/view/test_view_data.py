# ruff: noqa: F811  (the session fixture view_site is imported from view_fixtures.py; tests take it by name)
"""``lmms-spatial view``: the data files it writes hold the results files' numbers and every samples line.

The page (tests/view/test_view_browser.py) only shows these files; here they are checked against the runs: the
demo (every benchmark through lmms-eval) and a second model with chosen replies (view_fixtures.py).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from view_fixtures import MAP_REPLY, MARKUP, read_js, view_site  # noqa: E402,F401  (view_site: a fixture)

from lmms_spatial.view import evidence  # noqa: E402
from lmms_spatial.view.build import _common_ends, folder_size  # noqa: E402

ASSETS = Path(__file__).parents[2] / "lmms_spatial" / "view" / "assets"


def _manifest(site) -> dict:
    return read_js(site.out / "data" / "manifest.js")


def _entry(manifest: dict, run: int, task: str) -> dict:
    return next(e for e in manifest["tasks"] if e["run"] == run and e["task"] == task)


def _rows(site, entry: dict) -> list[list]:
    return [row for c in entry["chunks"] for row in read_js(site.out / "data" / f"l{c['id']}.js")[1]]


def _details(site, entry: dict) -> list[dict]:
    return [d for c in entry["chunks"] for d in read_js(site.out / "data" / f"d{c['id']}.js")[1]]


# ---------------------------------------------------------------------------------------- pure parts


@pytest.mark.parametrize(
    ("line", "record", "expected"),
    [
        ({}, {"parsed": "A", "score": 1.0}, "right"),
        ({}, {"parsed": "A", "score": 0.0}, "wrong"),
        ({}, {"parsed": 3, "score": 0.75}, "wrong"),  # partial credit (OSR counting) is not right
        ({}, {"parsed": None, "score": 0.0}, "unparsed"),
        ({"unparsed_rate": 1.0}, {"score": 0.0}, "unparsed"),
        ({}, {"failed": True, "reason": "judge_failed:timeout"}, "judge_failure"),
        ({}, {"parsed": 8, "reason": "no_map: ..."}, "not_scored"),  # an OSR answer withheld without a map
        ({"accuracy": 1.0}, {"parsed": "B"}, "right"),  # a plain per-document score beside the record
    ],
)
def test_outcome_is_read_from_the_score_record(line, record, expected) -> None:
    assert evidence.outcome(line, record) == expected


def test_the_score_record_is_the_first_dict_metric_of_the_line() -> None:
    line = {"doc_id": 0, "target": "A", "doc": {"x": 1}, "accuracy": {"parsed": "A", "score": 1.0}, "other": {"a": 1}}
    assert evidence.score_record(line) == ("accuracy", {"parsed": "A", "score": 1.0})


def test_prompts_are_stored_less_the_template_every_prompt_of_the_task_shares() -> None:
    prompts = ["Look.\nQ: red?\nAnswer.", "Look.\nQ: blue?\nAnswer.", "Look.\nQ: rose?\nAnswer."]
    pre, suf = _common_ends(prompts)
    assert (pre, suf) == (len("Look.\nQ: "), len("\nAnswer."))
    assert [p[pre : len(p) - suf] for p in prompts] == ["red?", "blue?", "rose?"]
    # a label's ": " ends the template too; the question's own words are never cut ("Q: r" is shared)
    assert _common_ends(["Q: red? A", "Q: rose? A"]) == (3, 0)
    assert _common_ends(["How many cats?", "How many dogs?"]) == (0, 0)
    assert _common_ends(["same", "same"]) == (4, 0)  # prefix and suffix never overlap
    assert _common_ends(["only one"]) == (0, 0)


def test_the_page_sets_no_run_text_as_html_and_names_nothing_outside_its_folder() -> None:
    js = (ASSETS / "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in js, sink
    text = js + (ASSETS / "index.html").read_text() + (ASSETS / "app.css").read_text()
    assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), "a URL outside the folder"
    assert "default-src 'none'" in (ASSETS / "index.html").read_text()  # the CSP: no request the page did not list


# ---------------------------------------------------------------------------------------- the written page


@pytest.mark.slow
def test_the_tables_hold_the_report_s_cells_and_the_results_files_numbers(view_site) -> None:
    from lmms_spatial.reports import render
    from lmms_spatial.reports.report import build

    manifest = _manifest(view_site)
    report = build([view_site.demo_results, view_site.crafted_results])
    assert [t["key"] for t in manifest["tables"]] == [t.key for t in report["tables"]]
    for shown, table in zip(manifest["tables"], report["tables"], strict=True):
        lines = [x for x in render.markdown(table).splitlines() if x.startswith("| ") and not x.startswith("| Model")]
        assert [[c["t"] for c in row["cells"]] for row in shown["rows"]] == [
            [c.strip() for c in line.strip("| ").split(" | ")[1:]] for line in lines
        ]
    # and by hand from the results file: DORI's ViewPar C of the demo model, in % with one decimal
    results = json.loads(view_site.demo_results.read_text())["results"]
    dori = next(t for t in manifest["tables"] if t["key"].startswith("dori"))
    row = next(r for r in dori["rows"] if r["label"] == "random_choice")
    cell = row["cells"][dori["headers"].index("ViewPar C")]
    assert cell["v"] == pytest.approx(results["dori_view_parallelism_coarse"]["accuracy,none"] * 100)
    assert cell["t"].startswith(f"{results['dori_view_parallelism_coarse']['accuracy,none'] * 100:.1f} [")
    conditions = dict(x for x in cell["cond"] if x[0])
    assert conditions["n/N"] == "2/2" and conditions["model"] == "random_choice" and conditions["seed"] == "seed=0"


@pytest.mark.slow
def test_every_samples_line_is_in_the_page_with_the_score_the_run_gave_it(view_site) -> None:
    manifest = _manifest(view_site)
    results = json.loads(view_site.demo_results.read_text())
    demo_tasks = {e["task"] for e in manifest["tasks"] if e["run"] == 0}
    assert demo_tasks == set(results["n-samples"])
    assert manifest["samples"] == sum(e["n"] for e in manifest["tasks"])
    for task in ("dori_view_parallelism_coarse", "mmsi_vanilla", "odi_bench_close_counting"):
        entry = _entry(manifest, 0, task)
        rows = _rows(view_site, entry)
        assert len(rows) == entry["n"] == results["n-samples"][task]["effective"]
        assert sorted(r[0] for r in rows) == list(range(entry["n"]))
        assert sum(r[2] for r in rows) / len(rows) == pytest.approx(results["results"][task]["accuracy,none"])
        assert entry["counts"]["right"] == sum(r[2] == 1 for r in rows)
        assert all(r[8] for r in rows)  # each has its image (the demo data)
    # the prompt as sent: the task's shared start, the stored middle, the shared end
    entry = _entry(manifest, 0, "odi_bench_close_counting")
    samples = next(view_site.demo_results.parent.glob("*_samples_odi_bench_close_counting.jsonl"))
    first = json.loads(samples.read_text().splitlines()[0])
    detail = _details(view_site, entry)[0]
    assert entry["prefix"] + detail["prompt"] + entry["suffix"] == first["input"]
    assert detail["reply"] == first["filtered_resps"] and detail["truth"] == first["accuracy"]["answer"]


@pytest.mark.slow
def test_a_map_is_marked_as_the_scorer_matched_it(view_site) -> None:
    manifest = _manifest(view_site)
    entry = _entry(manifest, 1, "osr_cogmap_standard")
    row, detail = _rows(view_site, entry)[0], _details(view_site, entry)[0]
    assert detail["reply"] == MAP_REPLY
    assert detail["truth"] == "the true map (the grid below)"  # not the line's target (a QA answer of its image)
    # TP 4 (both chairs, tv, table), FP 2 (sofa far off, piano), FN 2 (sofa, lamp): F1 = 2 * (4/6)^2 / (8/6)
    assert row[2] == pytest.approx(2 / 3, abs=1e-4) and manifest["outcomes"][row[1]] == "wrong"
    grid = next(b for b in detail["blocks"] if b["type"] == "grid")
    model, truth = grid["grids"]
    assert sorted((c["label"], c["status"]) for c in model["cells"]) == [
        ("chair", "matched"), ("chair", "matched"), ("piano", "hallucinated"), ("sofa", "extra"),
        ("table", "matched"), ("tv", "matched")]  # fmt: skip
    assert sorted((c["label"], c["status"]) for c in truth["cells"]) == [
        ("chair", "matched"), ("chair", "matched"), ("lamp", "missed"), ("sofa", "missed"),
        ("table", "matched"), ("tv", "matched")]  # fmt: skip
    assert {(c["r"], c["c"]) for c in model["cells"] if c["label"] == "piano"} == {(5, 5)}


@pytest.mark.slow
def test_a_judged_answer_carries_its_verdict_and_omni_cot_its_crops(view_site) -> None:
    manifest = _manifest(view_site)
    entry = _entry(manifest, 1, "odi_bench_open_counting")
    row, detail = _rows(view_site, entry)[0], _details(view_site, entry)[0]
    judge = dict(next(b for b in detail["blocks"] if b["type"] == "judge")["items"])
    assert judge["judge"] == "fake-judge" and judge["judge_reply"] == "1" and judge["rubric"] == "odi_open"
    assert manifest["outcomes"][row[1]] == "right"  # the truth of doc 0 is 4, the reply 4, the verdict 1
    crops = next(b for b in detail["blocks"] if b["type"] == "crops")
    boxes = [(c["box"], c["kept"]) for c in crops["items"]]
    assert boxes == [([0.1, 0.3, 0.3, 0.7], True), ([0.6, 0.2, 0.8, 0.5], False)]
    dori = _details(view_site, _entry(manifest, 1, "dori_canonical_orientation_coarse"))[0]
    assert dori["reply"] == MARKUP  # kept as the model wrote it; the page shows it as text (browser test)
    options = next(b for b in dori["blocks"] if b["type"] == "options")
    assert options["title"] == "Options as the model saw them (option seed original)"


@pytest.mark.slow
def test_the_command_ends_with_where_the_page_is_and_its_size(view_site) -> None:
    last = view_site.stdout.strip().splitlines()[-1]
    size = folder_size(view_site.out)
    assert last.startswith("view written: ") and "index.html (folder " in last
    assert f"{size / 1024 / 1024:.1f} MB" in last or f"{size / 1024:.1f} KB" in last
    assert "bytes of thumbnails per sample" in view_site.stdout


@pytest.mark.slow
def test_the_demo_ends_by_writing_the_page_and_saying_where(full_demo) -> None:
    last = full_demo.stdout.strip().splitlines()[-1]
    # the demo's folder, named as it was while the fixture built it (build_once renames it after)
    where, sep, size = last.removeprefix("view written: ").partition(" (folder ")
    assert last.startswith("view written: ") and sep and where.endswith("/demo/view/index.html"), last
    assert size.endswith("); open it in a browser, no server needed")
    manifest = read_js(full_demo.out / "view" / "data" / "manifest.js")
    assert manifest["missing_data"] == [] and len(manifest["runs"]) == 1  # the demo's data gave every image


@pytest.mark.slow
def test_the_demo_s_page_shows_the_report_s_plots_in_the_report_s_order(full_demo) -> None:
    """The demo draws its plots once, for its report; its page lists those PNGs, the same bytes, in the same order."""
    report = full_demo.out / "report"
    listed = [Path(line.removeprefix("- `").removesuffix("`")).name
              for line in (report / "report.md").read_text().split("\n## Plots\n", 1)[1].splitlines()
              if line.startswith("- `")]  # fmt: skip
    assert len(listed) == len(list((report / "plots").glob("*.png"))) > 0
    manifest = read_js(full_demo.out / "view" / "data" / "manifest.js")
    assert manifest["plots"] == [f"plots/{name}" for name in listed]
    for name in listed:
        assert (full_demo.out / "view" / "plots" / name).read_bytes() == (report / "plots" / name).read_bytes(), name


def test_images_come_from_the_data_given_then_the_copy_the_run_read_then_the_variable(tmp_path, monkeypatch) -> None:
    """`lmms-spatial view RESULTS` finds a local copy's images without --data: the run recorded where it read them
    (here a copy in the run's folder: where a recorded copy may lie, tests/view/test_view_any_samples.py)."""
    from lmms_spatial.view.images import data_roots, recorded_roots

    run, other = tmp_path / "run" / "s_results.json", tmp_path / "other" / "s_results.json"
    read, given, variable = tmp_path / "run" / "read", tmp_path / "other" / "given", tmp_path / "variable"
    for folder in (read, given, variable):
        folder.mkdir(parents=True)
    results = [
        (run, {"lmms_spatial": {"data": {"osr_bench/standard": {"source": str(read), "local": True},
                                         "mmsi": {"source": "RunsenXu/MMSI-Bench", "local": False, "revision": "r1"},
                                         "dori": {"source": str(tmp_path / "run" / "gone"), "local": True}}}}),
        (other, {"lmms_spatial": {"data": {"osr_bench/negative": {"source": str(given), "local": True}}}}),
        (other, {"results": {}}),  # a results file of another tool: nothing recorded
    ]  # fmt: skip
    recorded, refused = recorded_roots(results)
    assert recorded == {"osr_bench": read}  # a Hub release and a copy no longer on disk are not roots; first run wins
    assert refused == {}
    monkeypatch.setenv("LMMS_SPATIAL_OSR_PATH", str(variable))
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_PATH", str(variable))
    assert data_roots(None, recorded)["osr_bench"] == read
    assert data_roots({"osr_bench": str(given)}, recorded)["osr_bench"] == given
    assert data_roots(None, {})["osr_bench"] == variable and data_roots(None, recorded)["mmsi"] == variable
