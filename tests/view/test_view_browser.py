# ruff: noqa: F811  (the session fixture view_site is imported from view_fixtures.py; tests take it by name)
"""``lmms-spatial view`` in a real browser: Debian's headless Chromium, driven by selenium through the system
chromedriver (nothing downloaded), loads the page from disk, filters, opens samples, follows deep links, exports a
figure, and compares what it shows with the results files. Without Chromium these tests skip, saying why.

Screenshots go to ``$LMMS_SPATIAL_VIEW_SCREENSHOTS`` when set (a folder), else to the test's temporary folder.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from view_fixtures import MARKUP, read_js, view_site  # noqa: E402,F401  (view_site: a fixture)

_CANDIDATES = ("/usr/bin/chromium", shutil.which("chromium") or "", shutil.which("chromium-browser") or "")
CHROMIUM = next((p for p in _CANDIDATES if p and Path(p).exists()), None)
DRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None)


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the Python package selenium is not installed (pip install -e '.[test]')"
    if CHROMIUM is None:
        return "no Chromium on this machine (Debian: apt-get install chromium chromium-driver)"
    if DRIVER is None:
        return "no chromedriver on this machine (Debian: apt-get install chromium-driver)"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    options.add_argument("--disable-dev-shm-usage")
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_script_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("LMMS_SPATIAL_VIEW_SCREENSHOTS") or tmp_path_factory.mktemp("view_screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _open(driver, site: Path, hash_: str = "") -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get((site / "index.html").resolve().as_uri() + hash_)
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def _wait(driver, condition: str, timeout: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(f"return {condition}"))


def _select(driver, element_id: str, value: str) -> None:
    driver.execute_script(
        "const s = document.getElementById(arguments[0]); s.value = arguments[1];"
        "s.dispatchEvent(new Event('change'));", element_id, value)  # fmt: skip


def _texts(driver, css: str) -> list[str]:
    """The text each element matching ``css`` shows, in one round trip: what ``WebElement.text`` gives element by
    element ("" for a hidden one), which cost ~19 s for the report's 2,224 cells (one request each)."""
    shown = "e.checkVisibility({opacityProperty: true, visibilityProperty: true}) ? e.innerText.trim() : ''"
    return driver.execute_script(f"return [...document.querySelectorAll(arguments[0])].map(e => {shown})", css)


def _requests_outside(driver, site: Path) -> list[str]:
    root = site.resolve().as_uri() + "/"
    names = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    return [n for n in names if not n.startswith(root) and not n.startswith(("data:", "blob:"))]


def test_the_tables_show_the_results_files_numbers_with_each_cell_s_conditions(browser, view_site, shots) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    _open(browser, view_site.out)
    results = json.loads(view_site.demo_results.read_text())["results"]
    value = results["dori_view_parallelism_coarse"]["accuracy,none"] * 100
    first_table = browser.find_elements(By.CSS_SELECTOR, "section.report-table")[0]
    headers = [h.text for h in first_table.find_elements(By.TAG_NAME, "th")]
    cell = browser.find_element(
        By.XPATH, "//section[contains(@class,'report-table')][1]//tr[td[1][text()='random_choice']]"
        f"/td[{headers.index('ViewPar C') + 1}]")  # fmt: skip
    assert cell.text.startswith(f"{value:.1f} [")
    ActionChains(browser).move_to_element(cell).perform()
    popup = browser.find_element(By.ID, "popup")
    assert popup.is_displayed() and "n/N" in popup.text and "2/2" in popup.text and "seed=0" in popup.text
    browser.save_screenshot(str(shots / "1_tables_conditions.png"))
    shown = _texts(browser, "section.report-table td.num")
    manifest = read_js(view_site.out / "data" / "manifest.js")
    assert shown == [c["t"] for t in manifest["tables"] for r in t["rows"] for c in r["cells"]]
    assert _requests_outside(browser, view_site.out) == []


def test_a_reply_holding_markup_is_shown_as_text(browser, view_site, shots) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, view_site.out)
    browser.find_element(By.CSS_SELECTOR, "button[data-tab=samples]").click()
    _select(browser, "f-task", "dori_canonical_orientation_coarse")
    _select(browser, "f-run", "1")
    _wait(browser, "LMMSView.state.complete && document.getElementById('list-info').textContent === '2 samples'")
    browser.find_element(By.CSS_SELECTOR, "tr.sample-row[data-doc='0']").click()
    _wait(browser, "!!document.getElementById('detail-reply')")
    assert browser.find_element(By.ID, "detail-reply").text == MARKUP
    assert browser.title == "lmms-spatial view"  # neither the script nor the onerror ran
    assert browser.execute_script("return document.querySelectorAll('#detail script, img[src=\"x\"]').length") == 0
    assert browser.find_element(By.CSS_SELECTOR, "tr.sample-row[data-doc='0'] td.reply").text == MARKUP
    browser.save_screenshot(str(shots / "2_markup_reply_as_text.png"))


def test_filters_compare_models_and_deep_links(browser, view_site, shots) -> None:
    from selenium.webdriver.common.by import By

    manifest = read_js(view_site.out / "data" / "manifest.js")
    _open(browser, view_site.out)
    browser.find_element(By.CSS_SELECTOR, "button[data-tab=samples]").click()
    _select(browser, "f-benchmark", "odi_bench")
    _select(browser, "f-outcome", "right")
    right = sum(e["counts"]["right"] for e in manifest["tasks"] if e["benchmark"] == "odi_bench")
    _wait(browser, f"LMMSView.state.complete && document.getElementById('list-info').textContent === '{right} samples'")
    outcomes = set(_texts(browser, "tr.sample-row td:nth-child(6)"))
    assert outcomes == {"right"}
    browser.save_screenshot(str(shots / "3_filtered_list.png"))
    # compare: one row per question, each model's parsed answer
    _select(browser, "f-benchmark", "osr_bench")
    _select(browser, "f-task", "osr_cogmap_standard")
    _select(browser, "f-outcome", "")
    browser.execute_script(
        "const c = document.getElementById('f-compare'); c.checked = true; c.dispatchEvent(new Event('change'))"
    )
    _wait(browser, "LMMSView.state.complete && document.querySelectorAll('tr.compare-row').length > 0")
    first = browser.find_element(By.CSS_SELECTOR, "tr.compare-row[data-doc='0']")
    cells = [td.text for td in first.find_elements(By.TAG_NAME, "td")]
    assert cells[-2:] == ["(unparsed)", "map"]  # random_choice drew no map; the replay's map parsed
    browser.save_screenshot(str(shots / "4_compare_models_row.png"))
    # a deep link opens the sample: the map pair
    _open(browser, view_site.out, "#task=osr_cogmap_standard&doc=0&run=1")
    _wait(browser, "document.querySelectorAll('.block-grid .grid').length === 2")
    hallucinated = browser.find_elements(By.CSS_SELECTOR, ".block-grid .grid span.s-hallucinated")
    assert [s.text for s in hallucinated] == ["piano"]
    missed = browser.find_elements(By.CSS_SELECTOR, ".block-grid .grid span.s-missed")
    assert sorted(s.text for s in missed) == ["lamp", "sofa"]
    browser.execute_script("document.querySelector('.block-grid').scrollIntoView()")
    browser.save_screenshot(str(shots / "5_osr_map_pair.png"))
    # the judged open-ended answer with Omni-CoT's crops on the panorama
    _open(browser, view_site.out, "#task=odi_bench_open_counting&doc=0&run=1")
    _wait(browser, "document.querySelectorAll('#detail .crop').length === 2")
    assert "fake-judge" in browser.find_element(By.CSS_SELECTOR, ".block-judge").text
    assert browser.find_element(By.ID, "detail-outcome").text == "right"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#detail .crop.dropped")) == 1
    browser.save_screenshot(str(shots / "6_panorama_crops_judge.png"))
    assert _requests_outside(browser, view_site.out) == []


def test_marked_questions_export_as_png_and_pdf(browser, view_site, shots) -> None:
    from PIL import Image
    from selenium.webdriver.common.by import By

    for task in ("odi_bench_open_counting", "osr_cogmap_standard"):
        if task == "odi_bench_open_counting":
            _open(browser, view_site.out, f"#task={task}&doc=0&run=1")
        else:
            browser.execute_script(f"location.hash = '#task={task}&doc=0&run=1'")
        heading = "document.querySelector('#detail h2')"
        _wait(browser, f"!!{heading} && {heading}.textContent.includes('{task}')")
        browser.find_element(By.CSS_SELECTOR, "#detail input.mark").click()
    assert browser.find_element(By.ID, "marked-count").text == "2"
    browser.find_element(By.CSS_SELECTOR, "button[data-tab=figure]").click()
    read = (
        "const done = arguments[arguments.length - 1]; const r = new FileReader();"
        "r.onload = () => done(r.result.split(',')[1]); r.readAsDataURL(LMMSView.exported[arguments[0]]);"
    )
    browser.find_element(By.ID, "fig-png").click()
    _wait(browser, "!!LMMSView.exported.png")
    png = base64.b64decode(browser.execute_async_script(read, "png"))
    browser.find_element(By.ID, "fig-pdf").click()
    _wait(browser, "!!LMMSView.exported.pdf")
    pdf = base64.b64decode(browser.execute_async_script(read, "pdf"))
    (shots / "7_figure.png").write_bytes(png)
    (shots / "7_figure.pdf").write_bytes(pdf)
    import io

    with Image.open(io.BytesIO(png)) as img:
        assert img.format == "PNG" and img.width > 1000  # two panels side by side
    assert pdf.startswith(b"%PDF-1.4") and pdf.rstrip().endswith(b"%%EOF") and b"/DCTDecode" in pdf
    browser.save_screenshot(str(shots / "7_figure_tab.png"))
