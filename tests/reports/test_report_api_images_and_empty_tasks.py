"""The report against the paper: a row with a task missing from the release, a model that saw API-sized images."""

from __future__ import annotations

import json

from report_fixtures import mmsi_scores, odi_scores, write_run

from lmms_spatial.plugin.empty_tasks import DOCUMENTS_KEY, NO_DOCUMENTS
from lmms_spatial.reports.report import build_tables
from lmms_spatial.reports.runs import load_runs


def _close_table(root):
    return {t.key: t for t in build_tables(load_runs([root]), ci=False)}["odi_bench_close"]


def _without_ocr(folder, stamp, model_args):
    """A run on a release with no OCR questions: lmms-eval's results name the task, with no metric."""
    scores = {t: s for t, s in odi_scores(0).items() if t != "ocr"}
    path = write_run(folder, stamp, model_args, scores, mmsi_scores(0))
    data = json.loads(path.read_text())
    data["results"]["odi_bench_close_ocr"] = {"alias": "odi_bench_close_ocr", DOCUMENTS_KEY: NO_DOCUMENTS}
    path.write_text(json.dumps(data))


def test_a_row_with_a_task_absent_from_the_release_is_marked_not_comparable(tmp_path):
    _without_ocr(tmp_path / "a", "20260101_000000", "samples=a")
    write_run(tmp_path / "b", "20260101_000000", "samples=b", odi_scores(1), mmsi_scores(1))
    table = _close_table(tmp_path)
    rows = {r.label: r for r in table.rows if r.kind == "model"}
    assert set(rows) == {"replay (not comparable)", "replay"}  # the mark tells the two replay runs apart
    assert f"replay (not comparable): not comparable to the paper's rows: {NO_DOCUMENTS} for odi_bench_close_ocr" in (
        table.notes
    )
    marked = dict(zip(table.headers, rows["replay (not comparable)"].cells, strict=True))
    # OCR has no value, and the question means that need it (Overall, General) are not made up without it
    assert [marked[h].value for h in ("OCR", "Overall", "General")] == [None, None, None]
    assert marked["OCR"].note == f"odi_bench_close_ocr: {NO_DOCUMENTS}"  # the footnote of its "-"
    # Spatial does not contain OCR: odi_scores(0) gives 4 questions per task, right when (i + j) % 3 == 0
    # for task index j = 5..9 -> 1 + 2 + 1 + 1 + 2 = 7 of 20 right
    assert marked["Spatial"].value == 100 * 7 / 20


def test_a_model_that_saw_api_sized_panoramas_is_named_and_compared_with_a_warning(tmp_path):
    write_run(tmp_path / "a", "20260101_000000", "samples=a", odi_scores(0), mmsi_scores(0),
              odi_options={"LMMS_SPATIAL_ODI_API_IMAGES": "openai"})  # fmt: skip
    write_run(tmp_path / "b", "20260101_000000", "samples=b", odi_scores(1), mmsi_scores(1), odi_options={})
    notes = _close_table(tmp_path).notes
    assert "replay (samples=a): run with LMMS_SPATIAL_ODI_API_IMAGES=openai" in notes
    assert any(n.startswith("WARNING: these models were run with different prompt or image settings") for n in notes)
