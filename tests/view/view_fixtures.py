"""Runs for the viewer's tests: the demo (every benchmark, real lmms-eval) and a second model whose replies were
chosen (``--model replay`` of edited demo samples, scored by lmms-eval with a fake LLM judge), then one page."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import forkserver  # tests/forkserver.py: CLI runs as forks of a pre-warmed process
import pytest


def _suite_conftest():
    """tests/conftest.py as a module: ``from conftest import ...`` finds whichever conftest pytest imported last
    (tests/judge/ has one too), so it is loaded once by its path under a name of its own."""
    import importlib.util

    name = "_lmms_spatial_tests_conftest"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "conftest.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


build_once, run_lmms_eval = _suite_conftest().build_once, _suite_conftest().run_lmms_eval

# a reply that must show as text: run as HTML it would add a script and an image that sets the title
MARKUP = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\"> B"
CRAFTED_TASKS = ("dori_canonical_orientation_coarse", "odi_bench_open_counting", "osr_cogmap_standard")
# scene-a's map (tests below): chair (2,3) (7,6), tv (1,8), table (4,7), lamp (6,0), sofa (8,2) as (row, col);
# the reply has both chairs, the tv and the table right, the sofa far off, no lamp, and a piano not in the scene
MAP_REPLY = '{"chair": [[3, 2], [6, 7]], "tv": [[8, 1]], "table": [[7, 4]], "sofa": [[9, 9]], "piano": [[5, 5]]}'
# what Omni-CoT logs in a score record (docs/omni_cot.md, "What is logged"): two crops, the second dropped
OMNI_COT = {"method": "omni_cot", "crops": [
    {"box": [0.1, 0.3, 0.3, 0.7], "theta": -108.0, "phi": 0.0, "fov": 80.0, "direction": "left", "relevance": "yes",
     "kept": True},
    {"box": [0.6, 0.2, 0.8, 0.5], "theta": 36.0, "phi": 27.0, "fov": 70.0, "direction": "front right",
     "relevance": "no", "kept": False}], "crops_kept": 1, "crops_dropped": 1, "first_answer": "3",
    "final_answer": "4", "refined": True}  # fmt: skip


@dataclass
class ViewSite:
    demo_results: Path  # the demo's results file
    crafted_results: Path  # the replay run's results file
    out: Path  # the page's folder
    stdout: str
    data: dict[str, Path]  # benchmark -> demo data folder


def _crafted_samples(demo_results: Path, folder: Path, data: dict[str, Path]) -> None:
    """The demo's samples of CRAFTED_TASKS with the replies replaced (replay checks the prompts still match)."""
    stamp = demo_results.name[: -len("_results.json")]
    folder.mkdir(parents=True)
    for task in CRAFTED_TASKS:
        source = demo_results.parent / f"{stamp}_samples_{task}.jsonl"
        lines = [json.loads(x) for x in source.read_text().splitlines()]
        for line in lines:
            reply = {"dori": MARKUP if line["doc_id"] == 0 else "A", "odi_": "4", "osr_": MAP_REPLY}[task[:4]]
            line.pop("resps", None)
            line["filtered_resps"] = reply
        (folder / f"{stamp}_samples_{task}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def build_view_site(demo_results: Path, data: dict[str, Path], env: dict[str, str], out: Path) -> None:
    """The replay run (chosen replies, a fake judge) in ``out/crafted``, then the page of both runs in ``out/site``."""
    from lmms_spatial.data.registry import BENCHMARKS
    from tools.fake_judge import FakeJudgeServer

    _crafted_samples(demo_results, out / "replies", data)
    env = {**env, **{BENCHMARKS[k].env_var: str(p) for k, p in data.items()}}
    with FakeJudgeServer(lambda request: "1") as server:
        judge = {"LMMS_SPATIAL_JUDGE": "fake-judge", "LMMS_SPATIAL_JUDGE_BASE_URL": server.base_url,
                 "LMMS_SPATIAL_JUDGE_API_KEY": "k", "LMMS_SPATIAL_JUDGE_CACHE": str(out / "verdicts")}  # fmt: skip
        run_lmms_eval(["--model", "replay", "--model_args", f"samples={out / 'replies'}", "--tasks",
                       ",".join(CRAFTED_TASKS)], {**env, **judge}, out / "crafted")  # fmt: skip
    # the artefacts the omni_cot model logs, on the first open-ended ODI answer
    samples = next((out / "crafted").rglob("*_samples_odi_bench_open_counting.jsonl"))
    lines = [json.loads(x) for x in samples.read_text().splitlines()]
    lines[0]["judge_score"]["omni_cot"] = OMNI_COT
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    args = ["view", str(demo_results), str(out / "crafted"), "--out", str(out / "site"),
            *[f"--data={k}={p}" for k, p in data.items()]]  # fmt: skip
    # a fork of the worker's pre-warmed process where a new one would be the same run (tests/forkserver.py)
    proc = forkserver.run_module("lmms_spatial.cli", args, env, cwd=out, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (out / "view_stdout").write_text(proc.stdout)


@pytest.fixture(scope="session")
def view_site(full_demo, shared_dir, offline_base_env) -> ViewSite:
    from lmms_spatial.data.registry import BENCHMARKS

    assert full_demo.returncode == 0, full_demo.stderr[-3000:]
    demo_results = next((full_demo.out / "results").glob("*_results.json"))
    data = {k: full_demo.out / "data" / k for k in BENCHMARKS if (full_demo.out / "data" / k).exists()}
    out = build_once(shared_dir, "view_site", lambda out: build_view_site(demo_results, data, offline_base_env, out))
    crafted = next((out / "crafted").rglob("*_results.json"))
    return ViewSite(demo_results, crafted, out / "site", (out / "view_stdout").read_text(), data)


def read_js(path: Path) -> object:
    """The JSON payload of a data file ``LMMSView.kind(<json>);``."""
    text = path.read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])
