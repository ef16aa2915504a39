# ruff: noqa: F811  (the browser fixtures are imported from test_view_browser.py; tests take them by name)
"""The Samples tab navigates like Inspect View (issue 63, item 3): list and sample side by side on a wide screen,
a deep link opening its sample in view below the sticky header, j/k/n/p and Escape, the request as a conversation
by role, and the tokens lmms-eval 0.7 recorded per sample.

The run is written here by hand, its outcomes chosen so each key's target is known: one ``mmsi_vanilla`` run of
eight questions, its images in a parquet file of ``id`` and ``image``.

=====  ===================  =================================================================================
doc    outcome              what else
=====  ===================  =================================================================================
0      right                two images; ``token_counts`` ``[{input 1234, output 56, reasoning 7}]``
1      not scored           ``token_counts`` ``[null]`` (a model that reports none)
2      wrong                ``token_counts`` ``[{}]`` (lmms-eval's TokenCounts with no field set)
3      right                no ``token_counts`` (lmms-eval before 0.7)
4      unparsed             ``token_counts`` ``{"input_tokens": 10, "output_tokens": 2}`` (one dict, no list)
5      right                ``input`` logged as chat messages: a system turn, then text, the image, text
6      judge failure        ``token_counts`` ``[{output 3}, null]`` (two requests, one recorded)
7      right
=====  ===================  =================================================================================

``n`` steps to 2, 4, 6 (wrong, unparsed, judge failure; never 1, not scored); in the list sorted by outcome
(right 0 3 5 7, wrong 2, unparsed 4, judge failure 6, not scored 1) ``j`` from 7 opens 2.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_view_browser import _missing, _open, _select, _wait, browser, shots  # noqa: E402,F401  (fixtures)
from view_fixtures import read_js  # noqa: E402

from lmms_spatial.cli import main as lmms_spatial  # noqa: E402
from lmms_spatial.view import evidence  # noqa: E402

STAMP = "20260101_000000"
TASK = "mmsi_vanilla"
OUTCOMES = ["right", "not_scored", "wrong", "right", "unparsed", "right", "judge_failure", "right"]
TOKENS: dict[int, object] = {
    0: [{"input_tokens": 1234, "output_tokens": 56, "reasoning_tokens": 7}],
    1: [None],
    2: [{}],
    4: {"input_tokens": 10, "output_tokens": 2},
    5: [None],
    6: [{"output_tokens": 3}, None],
    7: [None],
}
MESSAGES = [
    {"role": "system", "content": "Answer with one letter."},
    {"role": "user", "content": [{"type": "text", "text": "Look at this picture:"}, {"type": "image"},
                                 {"type": "text", "text": "Question 5: which object is furthest left?"}]},
]  # fmt: skip


def _record(i: int) -> dict:
    record: dict = {"id": str(i), "category": "Positional Relationship (Cam.-Obj.)", "answer": "A", "n_options": 4}
    kind = OUTCOMES[i]
    if kind == "right":
        record.update(parsed="A", score=1.0, reason="official:letter")
    elif kind == "wrong":
        record.update(parsed="C", score=0.0, reason="official:letter")
    elif kind == "unparsed":
        record.update(parsed=None, score=0.0, reason="official:none")
    elif kind == "judge_failure":
        record.update(failed=True, reason="judge_failed:timeout")
    else:  # not scored: an answer, no score
        record.update(parsed="B")
    return record


def _png(color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def write_run(folder: Path) -> None:
    """The eight questions' run (``folder/run``) and their images (``folder/mmsi/test.parquet``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    run = folder / "run"
    run.mkdir(parents=True)
    lines = []
    for i, kind in enumerate(OUTCOMES):
        reply = {"right": "A", "wrong": "C", "unparsed": "I cannot tell.", "not_scored": "B"}.get(kind, "A")
        prompt = (f"Both images show the same table.\nQuestion {i}: which object is furthest left?\n"
                  "Answer with the option's letter.")  # fmt: skip
        line: dict = {"doc_id": i, "target": "A", "filtered_resps": f"{reply} (reply {i})", "doc_hash": f"h{i}",
                      "input": MESSAGES if i == 5 else prompt, "accuracy": _record(i)}  # fmt: skip
        if i in TOKENS:
            line["token_counts"] = TOKENS[i]
        lines.append(line)
    (run / f"{STAMP}_samples_{TASK}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    results = {"results": {TASK: {"accuracy,none": 0.5}}, "n-samples": {TASK: {"original": 8, "effective": 8}},
               "config": {"model": "random_choice", "model_args": "seed=0"}}  # fmt: skip
    (run / f"{STAMP}_results.json").write_text(json.dumps(results))
    colors = [(200, 40, 40), (40, 160, 60), (40, 80, 200), (220, 180, 30), (150, 60, 170), (30, 170, 170),
              (240, 120, 30), (90, 90, 90)]  # fmt: skip
    images = [[{"bytes": _png(c), "path": None}] for c in colors]
    images[0].append({"bytes": _png((250, 190, 210), (48, 64)), "path": None})  # doc 0: two images
    (folder / "mmsi").mkdir()
    pq.write_table(pa.table({"id": [str(i) for i in range(8)], "image": images}), folder / "mmsi" / "test.parquet")


@pytest.fixture(scope="module")
def nav_site(tmp_path_factory) -> Path:
    """The page of the eight questions, built once for this module's tests."""
    folder = tmp_path_factory.mktemp("nav")
    write_run(folder)
    out = folder / "site"
    args = ["view", str(folder / "run"), "--no-plots", "--out", str(out), f"--data=mmsi={folder / 'mmsi'}"]
    assert lmms_spatial(args) == 0
    return out


# ---------------------------------------------------------------------------------------- what the data holds


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([None], {"requests": 1, "recorded": 0, "input": None, "output": None, "reasoning": None}),
        ([{}], {"requests": 1, "recorded": 0, "input": None, "output": None, "reasoning": None}),
        ([{"input_tokens": 1234, "output_tokens": 56, "reasoning_tokens": 7}],
         {"requests": 1, "recorded": 1, "input": 1234, "output": 56, "reasoning": 7}),
        ([{"output_tokens": 3}, None], {"requests": 2, "recorded": 1, "input": None, "output": 3, "reasoning": None}),
        ([{"input_tokens": 5, "output_tokens": 1}, {"input_tokens": 6, "output_tokens": 2}],
         {"requests": 2, "recorded": 2, "input": 11, "output": 3, "reasoning": None}),
        ({"input_tokens": 10, "output_tokens": 2}, {"requests": 1, "recorded": 1, "input": 10, "output": 2,
                                                    "reasoning": None}),
        ([{"prompt_tokens": 9, "completion_tokens": 4}],  # an OpenAI usage block's names
         {"requests": 1, "recorded": 1, "input": 9, "output": 4, "reasoning": None}),
        ([{"input_tokens": "many", "output_tokens": -1, "reasoning_tokens": True}],  # not counts: not read
         {"requests": 1, "recorded": 0, "input": None, "output": None, "reasoning": None}),
        (None, {"requests": 1, "recorded": 0, "input": None, "output": None, "reasoning": None}),
    ],
)  # fmt: skip
def test_token_counts_are_read_in_the_shapes_lmms_eval_writes(value, expected) -> None:
    assert evidence.token_counts({"token_counts": value}) == expected


def test_a_line_without_token_counts_has_none_and_the_evaluator_writes_the_shape_read() -> None:
    assert evidence.token_counts({"doc_id": 0}) is None
    # lmms-eval 0.7's own writer: one entry per request, TokenCounts.to_dict() (fields it has) or None
    from lmms_eval.api.instance import TokenCounts

    written = [TokenCounts(input_tokens=3, output_tokens=4).to_dict(), None, TokenCounts().to_dict()]
    assert evidence.token_counts({"token_counts": written}) == {
        "requests": 3, "recorded": 1, "input": 3, "output": 4, "reasoning": None}  # fmt: skip


def test_the_request_is_turns_where_the_line_logs_messages_and_none_where_it_logs_one_text() -> None:
    assert evidence.conversation({"input": "Question?"}) is None  # lmms-eval 0.7: the context string
    assert evidence.conversation({"input": []}) is None
    assert evidence.conversation({"input": [{"content": "no role"}]}) is None
    two_images = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}, {"type": "video"},
                                               {"type": "image"}, "and a plain string"]},
                  {"role": "assistant", "content": [{"text": "an earlier answer"}]}]  # fmt: skip
    assert evidence.conversation({"input": two_images}) == [
        {"role": "user", "parts": [{"image": 0}, {"other": "video"}, {"image": 1}, {"text": "and a plain string"}]},
        {"role": "assistant", "parts": [{"text": "an earlier answer"}]},
    ]


def test_the_detail_data_holds_the_turns_and_the_token_counts(nav_site) -> None:
    (entry,) = read_js(nav_site / "data" / "manifest.js")["tasks"]
    details = [d for c in entry["chunks"] for d in read_js(nav_site / "data" / f"d{c['id']}.js")[1]]
    assert [d.get("tokens", {}).get("recorded") for d in details] == [1, 0, 0, None, 1, 0, 1, 0]
    assert details[0]["tokens"] == {"requests": 1, "recorded": 1, "input": 1234, "output": 56, "reasoning": 7}
    assert details[5]["turns"] == [
        {"role": "system", "parts": [{"text": "Answer with one letter."}]},
        {"role": "user", "parts": [{"text": "Look at this picture:"}, {"image": 0},
                                   {"text": "Question 5: which object is furthest left?"}]},
    ]  # fmt: skip
    assert [("turns" in d) for d in details] == [i == 5 for i in range(8)]
    assert [len(d["images"]) for d in details] == [2, 1, 1, 1, 1, 1, 1, 1]


# ---------------------------------------------------------------------------------------- in Chromium


def _box(driver, css: str) -> dict:
    script = (
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, width: r.width, height: r.height};"
    )
    return driver.execute_script(script, css)


def _shown(driver) -> str:
    """The sample the detail shows, as 'doc' (waits until its page is drawn)."""
    _wait(driver, "!!document.querySelector('#detail h2')")
    return driver.execute_script("return document.querySelector('#detail h2').textContent.split(' · ')[2]")


def _key(driver, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(key).perform()


def _at(driver, doc: int) -> None:
    """Wait until the detail shows doc ``doc`` whole and its list row is the highlighted one."""
    _wait(driver, f"document.getElementById('detail').dataset.shown === '{TASK}\\u0000{doc}\\u00000'"
                  f" && document.querySelector('#list tr.current')?.dataset.doc === '{doc}'", 20)  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_a_deep_link_opens_the_sample_beside_the_list_in_view_below_the_header(browser, nav_site, shots) -> None:
    browser.set_window_size(1400, 1000)
    _open(browser, nav_site, f"#task={TASK}&doc=6")
    _at(browser, 6)
    assert browser.execute_script("return innerWidth") >= 1100
    header, listed, detail = _box(browser, "header"), _box(browser, "#list-pane"), _box(browser, "#detail")
    # side by side: the detail right of the list, the two boxes apart
    assert listed["right"] <= detail["left"] and listed["width"] > 300 and detail["width"] > 300
    assert detail["top"] < listed["bottom"] and listed["top"] < detail["bottom"]
    # the detail's top (its heading) in view below the sticky header, and the page not scrolled past it
    heading = _box(browser, "#detail h2")
    assert header["bottom"] <= detail["top"] < heading["top"] < browser.execute_script("return innerHeight") / 2
    assert detail["bottom"] <= browser.execute_script("return innerHeight") + 1  # the pane fits the window
    # the list's row of doc 6 highlighted and in the list's view
    row, pane = _box(browser, "#list tr.current"), _box(browser, "#list-scroll")
    assert browser.execute_script("return document.querySelector('#list tr.current').dataset.doc") == "6"
    assert pane["top"] <= row["top"] and row["bottom"] <= pane["bottom"]
    assert browser.find_element("id", "detail-outcome").text == "judge failure"
    # two requests, one of which recorded its output tokens
    assert browser.find_element("id", "detail-tokens").text == "3 output tokens (1 of 2 requests recorded, summed)"
    browser.save_screenshot(str(shots / "nav_1_deep_link_wide.png"))


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_a_row_out_of_sight_is_scrolled_into_the_list_s_view_and_its_page_shown(browser, nav_site) -> None:
    """A low window: the deep link's row (the last) is below the list pane's fold, and is scrolled into its view,
    below the list's sticky column headings. Three rows a page: the link shows the row's page, and k to a row of
    the page before turns the page."""
    browser.set_window_size(1400, 520)
    try:
        _open(browser, nav_site, f"#task={TASK}&doc=7")
        _at(browser, 7)
        _wait(browser, "LMMSView.state.complete")
        row, pane, head = _box(browser, "#list tr.current"), _box(browser, "#list-scroll"), _box(browser, "#list thead")
        assert browser.execute_script("return document.getElementById('list-scroll').scrollTop") > 0
        assert head["bottom"] <= row["top"] + 1 and row["bottom"] <= pane["bottom"]
        assert _box(browser, "#detail")["top"] < 520 / 2  # the sample in view too
    finally:
        browser.set_window_size(1400, 1000)
    _open(browser, nav_site)
    browser.execute_script(f"LMMSView.state.perPage = 3; location.hash = '#task={TASK}&doc=7'")
    _at(browser, 7)
    _wait(browser, "LMMSView.state.complete && document.getElementById('page').textContent === 'page 3 of 3'")
    rows = "[...document.querySelectorAll('#list tr.sample-row')].map(r => r.dataset.doc)"
    assert browser.execute_script(f"return {rows}") == ["6", "7"]
    for doc in (6, 5):
        _key(browser, "k")
        _at(browser, doc)
    assert browser.find_element("id", "page").text == "page 2 of 3"
    assert browser.execute_script(f"return {rows}") == ["3", "4", "5"]


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_a_deep_link_on_a_narrow_screen_scrolls_to_the_sample_below_the_header(browser, nav_site, shots) -> None:
    browser.set_window_size(900, 700)
    try:
        _open(browser, nav_site, f"#task={TASK}&doc=7")
        _at(browser, 7)
        _wait(browser, "LMMSView.state.complete")
        header, listed, detail = _box(browser, "header"), _box(browser, "#list-pane"), _box(browser, "#detail")
        assert listed["bottom"] <= detail["top"]  # stacked: the detail below the list
        # scrolled to it, not under the header
        assert header["bottom"] <= detail["top"] < browser.execute_script("return innerHeight") / 2
        assert browser.execute_script("return scrollY") > 0
        browser.save_screenshot(str(shots / "nav_2_deep_link_narrow.png"))
    finally:
        browser.set_window_size(1400, 1000)


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_keys_move_through_the_list_in_its_order_and_n_p_through_wrong_answers(browser, nav_site, shots) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.set_window_size(1400, 1000)
    _open(browser, nav_site)
    browser.find_element("css selector", "button[data-tab=samples]").click()
    _wait(browser, "LMMSView.state.complete && document.getElementById('list-info').textContent === '8 samples'")
    assert "next wrong answer" in browser.find_element("id", "keys-hint").text
    _key(browser, "j")  # nothing open: the list's first sample
    _at(browser, 0)
    assert browser.execute_script("return location.hash") == f"#task={TASK}&doc=0&run=0"
    _key(browser, "j")
    _at(browser, 1)
    _key(browser, Keys.ARROW_DOWN)
    _at(browser, 2)
    _key(browser, "k")
    _at(browser, 1)
    _key(browser, Keys.ARROW_UP)
    _at(browser, 0)
    assert browser.execute_script("return location.hash") == f"#task={TASK}&doc=0&run=0"
    for doc in (2, 4, 6):  # n: wrong, unparsed, judge failure; 1 (not scored) and the right ones passed over
        _key(browser, "n")
        _at(browser, doc)
        assert browser.execute_script("return location.hash") == f"#task={TASK}&doc={doc}&run=0"
    _key(browser, "n")  # no later wrong answer: stays, and says so
    _wait(browser, "document.getElementById('status').textContent === 'no later wrong answer in the list'")
    assert _shown(browser) == "doc 6"
    _key(browser, "p")
    _at(browser, 4)
    # keys typed into a filter are text, not moves
    browser.find_element("id", "f-text").send_keys("jn")
    _wait(browser, "LMMSView.state.complete && document.getElementById('list-info').textContent === '0 samples'")
    assert browser.execute_script("return document.getElementById('f-text').value") == "jn"
    assert _shown(browser) == "doc 4"
    seq = browser.execute_script("return LMMSView.state.seq")
    browser.execute_script("const t = document.getElementById('f-text'); t.value = ''; t.blur();"
                           "t.dispatchEvent(new Event('input'))")  # fmt: skip
    _wait(browser, f"LMMSView.state.seq > {seq} && LMMSView.state.complete"
                   " && document.getElementById('list-info').textContent === '8 samples'")  # fmt: skip
    # the list's sort order: by outcome, right 0 3 5 7 then wrong 2: j from 7 opens 2
    _select(browser, "f-sort", "outcome")
    _wait(browser, "LMMSView.state.complete && document.getElementById('list-info').textContent === '8 samples'")
    browser.find_element("css selector", "#list tr.sample-row[data-doc='7']").click()
    _at(browser, 7)
    _key(browser, "j")
    _at(browser, 2)
    rows = "[...document.querySelectorAll('#list tr.sample-row')]"
    order = browser.execute_script(f"return {rows}.map(r => r.dataset.doc)")
    assert order == ["0", "3", "5", "7", "2", "4", "6", "1"]
    browser.save_screenshot(str(shots / "nav_3_keys_sorted_by_outcome.png"))
    _select(browser, "f-sort", "order")


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_the_conversation_shows_turns_by_role_with_images_in_place_and_the_tokens(browser, nav_site, shots) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.set_window_size(1400, 1000)
    _open(browser, nav_site, f"#task={TASK}&doc=0")
    _at(browser, 0)
    roles = browser.execute_script(
        "return [...document.querySelectorAll('#detail-conversation .turn')].map(t => t.dataset.role)"
    )
    assert roles == ["user", "assistant"]
    user = "#detail-conversation .turn-user"
    assert browser.execute_script(f"return document.querySelectorAll('{user} .images img').length") == 2
    images_first = (
        f"const t = document.querySelector('{user}'); const img = t.querySelector('img');"
        "return !!(img.compareDocumentPosition(t.querySelector('pre')) & Node.DOCUMENT_POSITION_FOLLOWING)"
    )
    assert browser.execute_script(images_first)  # the images, then the text
    assert "Question 0: which object" in browser.find_element("id", "detail-prompt").text
    reply = browser.find_element("css selector", "#detail-conversation .turn-assistant #detail-reply")
    assert reply.text == "A (reply 0)"
    assert browser.find_element("id", "detail-tokens").text == "1,234 input · 56 output · 7 reasoning tokens"
    # the blocks stay below the conversation
    below = browser.execute_script(
        "const c = document.getElementById('detail-conversation'); return ['dl.kv', '#detail-compare',"
        " '#detail-record'].every(s => c.compareDocumentPosition(document.querySelector('#detail ' + s))"
        " & Node.DOCUMENT_POSITION_FOLLOWING)")  # fmt: skip
    assert below
    browser.save_screenshot(str(shots / "nav_4_conversation_wide.png"))
    # Escape closes the larger image
    browser.find_element("css selector", f"{user} .imgbox").click()
    _wait(browser, "!document.getElementById('lightbox').hidden && !!document.querySelector('#lightbox img')")
    _key(browser, Keys.ESCAPE)
    _wait(browser, "document.getElementById('lightbox').hidden")
    # [null]: the model reported none; no key at all (lmms-eval before 0.7): nothing said
    _key(browser, "j")
    _at(browser, 1)
    assert browser.find_element("id", "detail-tokens").text == "not recorded (the model reported none)"
    _key(browser, "j")
    _at(browser, 2)  # [{}]
    assert browser.find_element("id", "detail-tokens").text == "not recorded (the model reported none)"
    _key(browser, "j")
    _at(browser, 3)
    assert browser.find_elements("id", "detail-tokens") == []
    _key(browser, "j")
    _at(browser, 4)
    assert browser.find_element("id", "detail-tokens").text == "10 input · 2 output tokens"
    # doc 5 logged its request as messages: system, then the user turn's text, image, text in that order
    _key(browser, "j")
    _at(browser, 5)
    turns = browser.execute_script(
        "return [...document.querySelectorAll('#detail-conversation .turn')].map(t => [t.dataset.role,"
        " [...t.children].slice(1).map(c => c.tagName === 'PRE' ? 'text: ' + c.textContent"
        " : c.querySelector('img') ? 'image' : c.tagName)])")  # fmt: skip
    assert turns == [
        ["system", ["text: Answer with one letter."]],
        ["user", ["text: Look at this picture:", "image", "text: Question 5: which object is furthest left?"]],
        ["assistant", ["text: A (reply 5)"]],
    ]
    browser.save_screenshot(str(shots / "nav_5_messages_turns.png"))
