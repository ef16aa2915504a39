# ruff: noqa: F811  (the browser fixtures are imported from test_view_browser.py; tests take them by name)
"""``lmms-spatial view`` at full size: a synthetic OSR-Bench run as large as the real one (4,100 panoramas of
1024×512, 153,312 questions: standard 74,326 + negative sampling 78,986), written as lmms-eval writes a run
(results file + samples files) with its data as parquet, then the page built and opened in headless Chromium.

The figures (build time, folder size, bytes per sample, time to the first page and to every sample loaded) are
printed and written to ``view_scale.json`` beside the screenshots; docs/view.md quotes them. They are measured, not
asserted (no timed assertions): the test asserts that every sample arrives in the list.
``python tests/view/test_view_scale.py OUT [IMAGES]`` writes the same run to OUT without the test.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_view_browser import _missing, _open, _wait, browser, shots  # noqa: E402,F401  (fixtures)

SPLITS = {"osr_qa_standard_vanilla": ("standard", 74_326), "osr_qa_negative_vanilla": ("negative", 78_986)}
IMAGES = 4_100
SKILLS = ("object_counting", "relative_distance", "relative_direction")
PROMPT = (
    "According to the PANORAMA and the predicted objects' center locations, answer the following question: {q}\n"
    "    Please answer the question with a brief response following these guidelines:\n"
    "    - For counting questions: Respond with only an integer (including 0 if no objects are present).\n"
    "    - For relative distance questions: Respond with only the object name.\n"
    "    - For relative direction questions: Respond with only one of: front, back, left, right, front-left, "
    "front-right, back-left, back-right."
)
OBJECTS = ("chair", "sofa", "table", "tv", "lamp", "bed", "fridge", "sink", "desk", "plant")
DIRECTIONS = ("front", "back", "left", "right", "front-left", "front-right", "back-left", "back-right")


def _panorama(i: int) -> bytes:
    """A 1024×512 JPEG: floor, wall and a few boxes placed from ``i`` (distinct images, ordinary JPEG size)."""
    import random

    from PIL import Image, ImageDraw

    rnd = random.Random(i)
    img = Image.new("RGB", (1024, 512), (220 - i % 40, 215, 200))
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 300, 1024, 512), fill=(160 + i % 50, 140, 110))
    for _ in range(8):
        x, y = rnd.randrange(0, 960), rnd.randrange(150, 420)
        draw.rectangle((x, y, x + rnd.randrange(30, 120), y + rnd.randrange(30, 90)),
                       fill=tuple(rnd.randrange(256) for _ in range(3)), outline=(20, 20, 20))  # fmt: skip
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=85)
    return buf.getvalue()


def write_synthetic_osr_run(out: Path, images: int = IMAGES) -> tuple[Path, Path]:
    """(results file, data folder) of a full-size synthetic OSR-Bench run: each question's reply, score record and
    prompt in the form the real tasks log them; scores seeded, the results file holding their means."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    results_dir, data = out / "results", out / "data"
    results_dir.mkdir(parents=True)
    pictures = data / "panoramas"
    pictures.mkdir(parents=True)
    paths = []
    for i in range(images):
        (pictures / f"{i}.jpg").write_bytes(_panorama(i))
        paths.append(str((pictures / f"{i}.jpg").resolve()))
    stamp = "20260101_000000"
    rnd = random.Random(0)
    results, n_samples = {}, {}
    for task, (config, n) in SPLITS.items():
        rows = {"id": [], "image": []}
        per_skill: dict[str, list[float]] = {s: [] for s in SKILLS}
        with open(results_dir / f"{stamp}_samples_{task}.jsonl", "w", encoding="utf-8") as fh:
            for doc in range(n):
                scene, turn = doc * images // n, doc % 37
                skill = SKILLS[doc % 3]
                a, b = rnd.sample(OBJECTS, 2)
                if skill == "object_counting":
                    q, answer, reply = f"How many {a}(s) are in this room?", rnd.randint(1, 4), rnd.randint(0, 4)
                    score = max(0.0, 1 - abs(reply - answer) / max(reply, answer, 1))
                    answer, reply, reason = str(answer), str(reply), "first_digits:reply"
                elif skill == "relative_distance":
                    q, answer = f"Which of these objects ({a}, {b}) is the closest to the lamp?", a
                    reply, reason = rnd.choice((a, b)), "exact_match"
                    score = float(reply == answer)
                else:
                    q, answer = f"Standing at the {a} facing the {b}, where is the tv?", rnd.choice(DIRECTIONS)
                    reply, reason = rnd.choice(DIRECTIONS), "exact_match"
                    score = float(reply == answer)
                per_skill[skill].append(score)
                ident = f"scene-{scene}:{turn}-{doc}"
                record = {"score": score, "parsed": reply, "reason": reason, "id": ident, "scene_id": f"scene-{scene}",
                          "skill": skill, "answer": answer}  # fmt: skip
                line = {"doc_id": doc, "target": answer, "filtered_resps": reply, "token_counts": [None],
                        "doc_hash": hashlib.sha256(f"{task}{doc}".encode()).hexdigest(), "accuracy": record,
                        "overall": record, skill: score, "unparsed_rate": 0.0, "chance_level": 0.125,
                        "input": PROMPT.format(q=q)}  # fmt: skip
                fh.write(json.dumps(line) + "\n")
                rows["id"].append(ident)
                rows["image"].append({"bytes": None, "path": paths[scene]})
        scores = [s for v in per_skill.values() for s in v]
        means = {s: sum(v) / len(v) for s, v in per_skill.items()}
        results[task] = {"alias": task, "accuracy,none": sum(scores) / len(scores),
                         "overall,none": sum(means.values()) / 3, **{f"{s},none": m for s, m in means.items()},
                         "unparsed_rate,none": 0.0, "chance_level,none": 0.125}  # fmt: skip
        n_samples[task] = {"original": n, "effective": n}
        (data / config).mkdir(exist_ok=True)
        pq.write_table(pa.table(rows), data / config / "test.parquet")
    config = {"model": "synthetic", "model_args": "pretrained=synthetic/osr-full-size", "limit": None}
    results_file = results_dir / f"{stamp}_results.json"
    results_file.write_text(json.dumps({"results": results, "n-samples": n_samples, "config": config}))
    return results_file, data


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_a_full_size_osr_bench_run_opens_and_loads_every_sample(browser, shots, tmp_path, request) -> None:
    if not request.config.getoption("--full-size"):
        pytest.skip("the full-size page takes 6-11 min on 2 cores: pytest --full-size tests/view/test_view_scale.py")
    from lmms_spatial.view.build import build

    results_file, data = write_synthetic_osr_run(tmp_path / "run")
    start = time.perf_counter()
    result = build([results_file], tmp_path / "site", data={"osr_bench": str(data)}, plots=False)
    built = time.perf_counter() - start
    n = result["samples"]
    assert n == 74_326 + 78_986
    _open(browser, tmp_path / "site")
    from selenium.webdriver.common.by import By

    browser.find_element(By.CSS_SELECTOR, "button[data-tab=samples]").click()
    _wait(browser, "!!LMMSView.timing.firstPage", 300)
    _wait(
        browser, f"LMMSView.state.complete && document.getElementById('list-info').textContent === '{n} samples'", 600
    )
    timing = browser.execute_script("return LMMSView.timing")
    browser.save_screenshot(str(shots / "8_full_size_osr_list.png"))
    figures = {
        "samples": n,
        "images": result["images"],
        "build_seconds": round(built, 1),
        "folder_bytes": result["bytes"],
        "folder_bytes_per_10k_samples": round(result["bytes"] / n * 10_000),
        "thumbnail_bytes_per_sample": round(result["thumb_bytes"] / n, 1),
        "thumbnail_bytes_per_image": round(result["thumb_bytes"] / result["images"]),
        "browser_ms_manifest": round(timing["manifest"]),
        "browser_ms_first_page": round(timing["firstPage"]),
        "browser_ms_all_samples": round(timing["allLoaded"]),
        "browser_ms_all_samples_per_10k": round(timing["allLoaded"] / n * 10_000),
    }
    (shots / "view_scale.json").write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures))
    assert browser.find_elements(By.CSS_SELECTOR, "tr.sample-row")  # the first page is on screen


if __name__ == "__main__":
    print(write_synthetic_osr_run(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else IMAGES))
