# ruff: noqa: F811  (the browser fixtures are imported from test_view_browser.py; tests take them by name)
"""``lmms-spatial view`` reads any run (issue 63): the data folder a results file names is looked into only where a
run's data may lie, and a reply of megabytes is a preview with "show all" on the page, never its whole text in the
DOM. (A samples line that is not a sample: tests/reports/test_report_conditions.py, through both commands.)

The runs are written here by hand: one ``mmsi_vanilla`` run of four questions, its results file naming where it
read its data, and the data as a parquet file of ``id`` and ``image``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_view_browser import _missing, _open, _texts, _wait, browser, shots  # noqa: E402,F401  (fixtures)
from view_fixtures import read_js  # noqa: E402

from lmms_spatial.cli import main as lmms_spatial  # noqa: E402
from lmms_spatial.view.build import PREVIEW  # noqa: E402
from lmms_spatial.view.images import recorded_roots  # noqa: E402

STAMP = "20260101_000000"
ENV = "LMMS_SPATIAL_MMSI_PATH"
# a reply of 5,000,000 characters: 625,000 numbered lines of 8 ("0000000\n" ... "0624999\n")
HUGE = "".join(f"{i:07d}\n" for i in range(625_000))
# the browser's copy: 1,000,000 characters (125,000 lines), the same rule at a fifth of the page's work
BIG = HUGE[:1_000_000]


@pytest.fixture(autouse=True)
def _no_declared_data(tmp_path, monkeypatch) -> None:
    """No MMSI data declared on this machine but what a test sets: an empty Hugging Face home of the test's own."""
    for name in (ENV, "LMMS_SPATIAL_MMSI_REPO", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))


def png(color: tuple[int, int, int]) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(buf, "PNG")
    return buf.getvalue()


def write_data(folder: Path, colors: list[tuple[int, int, int]]) -> list[bytes]:
    """MMSI data as parquet: the row of question ``i`` holds an image of ``colors[i]``; its images' bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    images = [png(c) for c in colors]
    folder.mkdir(parents=True)
    rows = {"id": [str(i) for i in range(len(images))], "image": [{"bytes": b, "path": None} for b in images]}
    pq.write_table(pa.table(rows), folder / "test.parquet")
    return images


def write_run(folder: Path, source: str | None = None, replies: list[str] | None = None) -> Path:
    """An mmsi_vanilla run of four questions (right, wrong, right, wrong); ``source``: the local copy its results say
    it read (``lmms_spatial.data``); ``replies``: the model's, default "A"."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(4):
        record = {"id": i, "category": "Positional Relationship (Cam.-Cam.)", "score": float(i % 2 == 0),
                  "parsed": "A", "n_options": 4}  # fmt: skip
        lines.append({"doc_id": i, "input": f"Question {i}?", "filtered_resps": (replies or ["A"] * 4)[i],
                      "accuracy": record})  # fmt: skip
    (folder / f"{STAMP}_samples_mmsi_vanilla.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    data = {"results": {"mmsi_vanilla": {"accuracy,none": 0.5}},
            "n-samples": {"mmsi_vanilla": {"original": 4, "effective": 4}},
            "config": {"model": "random_choice", "model_args": "seed=0"}}  # fmt: skip
    if source is not None:
        data["lmms_spatial"] = {"data": {"mmsi": {"source": source, "local": True}}}
    path = folder / f"{STAMP}_results.json"
    path.write_text(json.dumps(data))
    return path


def digest(image: bytes) -> str:
    """The name the page gives an image (lmms_spatial.view.images.ImageStore)."""
    return hashlib.sha1(image).hexdigest()[:20]


# ---------------------------------------------------------------------------------------- where images are looked for


@pytest.mark.parametrize("recorded", ["/", "decoy"])
def test_a_data_folder_outside_the_run_and_the_declared_roots_is_never_walked(recorded, tmp_path, monkeypatch, capsys):
    """A results file edited to name "/" (or any folder of this disk holding parquet files with the same ids): the
    view walks neither, says so once, and the images come from the copy the benchmark's variable declares."""
    legit = write_data(tmp_path / "mmsi", [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)])
    write_data(tmp_path / "decoy", [(0, 0, 0), (9, 9, 9), (0, 0, 0), (9, 9, 9)])  # ids 0-3 too
    source = "/" if recorded == "/" else str(tmp_path / "decoy")
    results = write_run(tmp_path / "run", source)
    monkeypatch.setenv(ENV, str(tmp_path / "mmsi"))
    walked: list[Path] = []
    rglob = Path.rglob

    def spy(self: Path, pattern: str):
        if pattern == "*.parquet":  # what the view looks for in a data folder (DataIndex)
            walked.append(self)
            if not self.resolve().is_relative_to(tmp_path.resolve()):
                return iter(())  # had the view walked "/", this test would not take the hours it takes
        return rglob(self, pattern)

    monkeypatch.setattr(Path, "rglob", spy)
    assert lmms_spatial(["view", str(tmp_path / "run"), "--no-plots", "--out", str(tmp_path / "site")]) == 0
    assert walked == [tmp_path / "mmsi"]
    note = (f"mmsi: images not looked for in {source}, the copy {results} records reading: it lies outside the run's "
            f"folder and mmsi's declared data roots ({ENV}, the Hugging Face cache of its release, a fixture "
            "lmms-spatial built); pass --data mmsi=PATH to read a copy there")  # fmt: skip
    out = capsys.readouterr().out
    assert f"view: {note}\n" in out and "4 distinct images" in out
    manifest = read_js(tmp_path / "site" / "data" / "manifest.js")
    assert manifest["data_notes"] == [note]
    assert sorted(p.stem for p in (tmp_path / "site" / "thumbs").iterdir()) == sorted(map(digest, legit))
    # --data names the copy to read: the recorded one is not needed, and not mentioned
    assert lmms_spatial(["view", str(tmp_path / "run"), "--no-plots", "--out", str(tmp_path / "given"),
                         f"--data=mmsi={tmp_path / 'mmsi'}"]) == 0  # fmt: skip
    assert read_js(tmp_path / "given" / "data" / "manifest.js")["data_notes"] == []


def test_a_recorded_copy_is_read_in_the_run_s_folder_the_variable_s_the_hub_cache_or_a_fixture(tmp_path, monkeypatch):
    from lmms_spatial.data.demo import FIXTURE_MARKER

    results = tmp_path / "runs" / "qwen" / f"{STAMP}_results.json"
    inside = {
        "the run's folder": tmp_path / "runs" / "qwen" / "data",
        "the variable's copy": tmp_path / "declared" / "mmsi",
        "a Hub snapshot": tmp_path / "hub" / "datasets--RunsenXu--MMSI-Bench" / "snapshots" / "abc",
        "the published copy's snapshot": tmp_path / "hub" / "datasets--me--mmsi-copy" / "snapshots" / "def",
        "the copy converted from the release": tmp_path / "hf_home" / "lmms_spatial" / "mmsi" / "abc",
        "an mmsi fixture": tmp_path / "fixture",
    }
    outside = {
        "another run's folder": tmp_path / "runs" / "other",
        "a folder above the run's": tmp_path / "runs",
        "another benchmark's fixture": tmp_path / "dori_fixture",
        "the run's folder, through ..": tmp_path / "runs" / "qwen" / ".." / "other",
        "a link in the run's folder to elsewhere": tmp_path / "runs" / "qwen" / "link",
        "another release in the Hub cache": tmp_path / "hub" / "datasets--someone--else" / "snapshots" / "abc",
    }
    for folder in [*inside.values(), *outside.values()]:
        if folder.name != "link":
            folder.mkdir(parents=True, exist_ok=True)
    (tmp_path / "runs" / "qwen" / "link").symlink_to(tmp_path / "runs" / "other")
    (tmp_path / "fixture" / FIXTURE_MARKER).write_text(json.dumps({"benchmark": "mmsi"}))
    (tmp_path / "dori_fixture" / FIXTURE_MARKER).write_text(json.dumps({"benchmark": "dori"}))
    monkeypatch.setenv(ENV, str(tmp_path / "declared"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("LMMS_SPATIAL_MMSI_REPO", "me/mmsi-copy")

    def record(source: str) -> tuple[Path, dict]:
        return results, {"lmms_spatial": {"data": {"mmsi": {"source": source, "local": True}}}}

    def recorded(folder: Path) -> tuple[dict, dict]:
        return recorded_roots([record(str(folder))])

    for where, folder in inside.items():
        assert recorded(folder) == ({"mmsi": folder}, {}), where
    for where, folder in outside.items():
        roots, refused = recorded(folder)
        assert roots == {} and refused["mmsi"].startswith(f"mmsi: images not looked for in {folder}, "), where
    # a later run's copy that may be read wins over an earlier one that may not; the refusal is said
    roots, refused = recorded_roots([record("/"), record(str(inside["an mmsi fixture"]))])
    assert roots == {"mmsi": inside["an mmsi fixture"]}
    assert refused["mmsi"].startswith("mmsi: images not looked for in /, ")
    assert recorded_roots([record("/a\0b")]) == ({}, {})  # a name no disk holds (a NUL): no copy, and no crash


# ---------------------------------------------------------------------------------------- long texts


def test_a_reply_of_megabytes_is_a_preview_in_its_sample_and_whole_in_a_file_of_its_own(tmp_path, capsys):
    """The 5,000,000-character reply: its sample holds the first PREVIEW characters and where the rest is; the whole
    text is written once (a judged answer that is the whole reply points to the same file); the list row a snippet."""
    assert PREVIEW == 4000
    replies = [HUGE, HUGE, "B", "\ud800 a lone surrogate"]  # the second judged whole: its record has no "parsed"
    write_run(tmp_path / "run", replies=replies)
    samples = tmp_path / "run" / f"{STAMP}_samples_mmsi_vanilla.jsonl"
    lines = [json.loads(x) for x in samples.read_text().splitlines()]
    del lines[1]["accuracy"]["parsed"]
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert lmms_spatial(["view", str(tmp_path / "run"), "--no-plots", "--out", str(tmp_path / "site")]) == 0
    (entry,) = read_js(tmp_path / "site" / "data" / "manifest.js")["tasks"]
    (chunk,) = entry["chunks"]
    details = read_js(tmp_path / "site" / "data" / f"d{chunk['id']}.js")[1]
    assert [d["reply"] for d in details] == [HUGE[:4000], HUGE[:4000], "B", "\ud800 a lone surrogate"]
    assert details[0]["long"] == {"reply": [0, 5_000_000]}
    assert details[1]["long"] == {"reply": [0, 5_000_000], "parsed": [0, 5_000_000]} and details[1]["judged_whole"]
    assert "long" not in details[2] and "long" not in details[3]
    assert sorted(p.name for p in (tmp_path / "site" / "data").glob("t*.js")) == ["t0.js"]
    assert read_js(tmp_path / "site" / "data" / "t0.js") == [0, HUGE]
    assert os.path.getsize(tmp_path / "site" / "data" / f"d{chunk['id']}.js") < 3 * 4000 + 4000
    rows = read_js(tmp_path / "site" / "data" / f"l{chunk['id']}.js")[1]
    assert rows[0][7] == " ".join(f"{i:07d}" for i in range(20)) + "…"  # 20 numbers of 7 and 19 spaces: 159 + 1


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_a_reply_of_megabytes_shows_its_start_until_show_all_is_clicked(browser, shots, tmp_path) -> None:
    """The page of a run with a 1,000,000-character reply, a line that is not a sample and "/" as its data: the
    tables tab counts the skipped line and says where images were not looked for; the reply shows its start."""
    from selenium.webdriver.common.by import By

    results = write_run(tmp_path / "run", "/", replies=["A", BIG, "B", "C"])
    samples = tmp_path / "run" / f"{STAMP}_samples_mmsi_vanilla.jsonl"
    samples.write_bytes(samples.read_bytes() + b"{oops\n")
    assert lmms_spatial(["view", str(tmp_path / "run"), "--no-plots", "--out", str(tmp_path / "site")]) == 0
    _open(browser, tmp_path / "site")
    assert browser.find_element(By.ID, "skipped-lines").text.startswith("1 line of the samples files skipped: not ")
    assert browser.find_element(By.ID, "status").text == "4 samples in 1 run tasks; 1 line skipped (not samples)"
    warning = f"WARNING: skipped {samples}:5: not JSON (Expecting property name enclosed in double quotes: column 2)"
    assert warning in _texts(browser, "#tab-tables ul.notes li")
    assert browser.find_element(By.CSS_SELECTOR, "p.data-note").text.startswith(
        f"mmsi: images not looked for in /, the copy {results} records reading")  # fmt: skip
    _open(browser, tmp_path / "site", "#task=mmsi_vanilla&doc=1")
    _wait(browser, "!!document.getElementById('detail-reply')")
    reply = "document.getElementById('detail-reply').textContent"
    assert browser.execute_script(f"return {reply}") == BIG[:4000] + "…"
    assert browser.execute_script("return document.body.textContent.length") < 30_000  # the page, not the reply
    button = browser.find_element(By.CSS_SELECTOR, "button.show-all[data-field=reply]")
    assert button.text == "show all (1,000,000 characters)"
    browser.save_screenshot(str(shots / "7_long_reply_preview.png"))
    button.click()
    _wait(browser, f"{reply}.length === 1000000")
    whole = (f"const t = {reply}.split('\\n'); return t.length === 125001 && t[125000] === '' && "
             "t.slice(0, 125000).every((line, i) => line === String(i).padStart(7, '0'))")  # fmt: skip
    assert browser.execute_script(whole)
    assert browser.find_elements(By.CSS_SELECTOR, "button.show-all[data-field=reply]") == []
    browser.save_screenshot(str(shots / "8_long_reply_whole.png"))
