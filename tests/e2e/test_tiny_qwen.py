"""MMSI-Bench through lmms-eval's real ``qwen2_5_vl`` chat model class, on CPU, with a tiny random model.

The CLI tests with ``dummy``/``random_choice``/``replay`` never touch a processor, a chat template or
``generate``; this one does: a random-weight Qwen2.5-VL built at test time (tests/tiny_models.py) is
loaded by lmms-eval's unmodified model class, images go through the vision tower, answers are
generated in batches of 2 with left padding, and our task scores them. The answers are gibberish,
so the test checks that every sample was answered and scored and every metric reported, not accuracy.

lmms-eval exits 0 even when evaluation raises, so everything is judged from the files it wrote.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

LIMIT = 4

# device=cpu: the class defaults to device="cuda" and moves inputs with `inputs.to(self.device)`
#   ("RuntimeError: Found no NVIDIA driver on your system" without it); device_map=cpu places the weights.
# min/max_pixels: the class passes its defaults (256*28*28 .. 1605632) to AutoProcessor.from_pretrained,
#   which would upscale the 192x128 fixture images to ~256 merged tokens each; 4..16 tokens keeps it fast.
MODEL_ARGS = "device=cpu,device_map=cpu,min_pixels=3136,max_pixels=12544"


@pytest.fixture
def tiny_qwen_run(lmms_eval, tiny_qwen2_5_vl, tmp_path) -> dict:
    """Run lmms-eval once on the MMSI fixture with the tiny checkpoint; return results, samples and log."""
    checkpoint = tiny_qwen2_5_vl  # built once per test run (tests/conftest.py)
    run = lmms_eval(
        "--model", "qwen2_5_vl",
        "--model_args", f"pretrained={checkpoint},{MODEL_ARGS}",
        "--tasks", "mmsi_vanilla",
        "--limit", str(LIMIT),
        "--batch_size", "2",
        "--gen_kwargs", "max_new_tokens=8",
        env={"CUDA_VISIBLE_DEVICES": ""},  # the CPU path is what is under test, even on a GPU machine
    )  # fmt: skip
    log = f"--- stdout ---\n{run.stdout[-4000:]}\n--- stderr ---\n{run.stderr[-8000:]}"
    return {"results": run.results, "samples": run.samples["mmsi_vanilla"], "log": log}


def test_tiny_qwen2_5_vl_answers_every_sample_and_reports_every_metric(tiny_qwen_run: dict) -> None:
    results, samples, log = tiny_qwen_run["results"], tiny_qwen_run["samples"], tiny_qwen_run["log"]

    # The chat implementation ran (not the simple one, and not a fallback), on our checkpoint, batched.
    config = results["config"]
    assert config["model_backend"] == "lmms_eval.models.chat.qwen2_5_vl.Qwen2_5_VL (chat)", log
    assert str(config["batch_size"]) == "2"
    assert results["n-samples"]["mmsi_vanilla"]["effective"] == LIMIT

    # Every sample was answered by generate() and scored by our process_results.
    assert sorted(s["doc_id"] for s in samples) == list(range(LIMIT)), log
    categories = set()
    for sample in samples:
        response = sample["filtered_resps"]
        if isinstance(response, list):  # lmms-eval versions differ: "text" or ["text"]
            (response,) = response
        assert isinstance(response, str), sample
        assert sample["token_counts"][0]["output_tokens"] > 0, sample  # the model really generated
        record = sample["accuracy"]
        assert {"parsed", "reason", "category", "score"} <= set(record), record
        assert record["parsed"] is None or record["parsed"] in "ABCD"
        assert record["score"] == float(record["parsed"] == sample["target"])
        categories.add(record["category"])

    # Every aggregate metric, plus one per category present among the samples.
    metrics = results["results"]["mmsi_vanilla"]
    for name in ("accuracy", "unparsed_rate", "chance_level", *sorted(categories)):
        assert isinstance(metrics.get(f"{name},none"), float), (name, sorted(metrics))
    assert metrics["chance_level,none"] == 0.25
    # accuracy is the share of samples whose parsed letter is the target (each checked above)
    right = sum(s["accuracy"]["parsed"] == s["target"] for s in samples)
    assert metrics["accuracy,none"] == pytest.approx(right / LIMIT)
    unparsed = sum(s["accuracy"]["parsed"] is None for s in samples) / LIMIT
    assert metrics["unparsed_rate,none"] == pytest.approx(unparsed)
