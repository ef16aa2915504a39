"""DORI end to end through the lmms-eval CLI on the fixture data, then the report from its samples."""

from __future__ import annotations

import json
import random

import datasets
import pytest

from lmms_spatial.cli import main as lmms_spatial
from lmms_spatial.metrics.dori import GRANULARITIES, TASKS
from lmms_spatial.tasks.dori.patterns import build_report

LETTERS = "ABCDEFGHIJKLMNOP"

# the module's tests share one seeded run: one xdist worker runs them all
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dori_cli")]

# (task, granularity) -> what the replayed model says for the question type's second item:
# an option text (a wrong answer chosen on purpose) or None (an unparseable reply).
# The first item of every question type is answered right.
SECOND_ITEM = {
    ("viewer_scene_direction", "granular"): "90 degrees",  # truth 270: half credit (opposite sense)
    ("inter_object_direction", "granular"): "46 to 90 degrees counterclockwise",  # truth 0-45 ccw: half credit
    ("single_axis_rotation", "granular"): "135 degrees",  # truth 90: no credit (90 is its own category)
    ("view_parallelism", "granular"): "65 degrees to 95 degrees",  # truth 135-180: no credit
}


@pytest.fixture(scope="module")
def dori_docs(fixture_datasets):
    ds = datasets.load_dataset("parquet", data_files=str(fixture_datasets["dori"] / "test.parquet"))["train"]
    rows = ds.remove_columns("images").to_list()
    return {(t, g): [r for r in rows if (r["task"], r["granularity"]) == (t, g)] for t in TASKS for g in GRANULARITIES}


def _letter(doc, text):
    return "ABCDEFGHIJKLMNOP"[doc["options"].index(text)]


def _write_samples(folder, task_name, responses):
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps({"doc_id": i, "resps": [[r]]}) + "\n" for i, r in enumerate(responses))
    (folder / f"20260101_000000_samples_{task_name}.jsonl").write_text(lines)


def test_replayed_answers_give_table_2_soft_accuracy_and_the_error_report(lmms_eval, dori_docs, tmp_path, capsys):
    samples = tmp_path / "samples"
    for (task, gran), docs in dori_docs.items():
        first, second = docs
        wrong = SECOND_ITEM.get((task, gran))
        responses = [
            f'"answer": "{first["answer"]}", "reasoning": "the arrow points that way"',
            f'"answer": "{_letter(second, wrong)}"' if wrong else "I cannot tell from this picture.",
        ]
        _write_samples(samples, f"dori_{task}_{gran}", responses)

    run = lmms_eval("--model", "replay", "--model_args", f"samples={samples},prompt_check=warn", "--tasks", "dori")

    for task in TASKS:
        for gran in GRANULARITIES:
            assert run.metric(f"dori_{task}_{gran}", "accuracy") == 0.5
    # Avg. C / Avg. G: unweighted means of the 7 question types; the top group averages all 14
    assert run.metric("dori_coarse", "accuracy") == pytest.approx(0.5)
    assert run.metric("dori", "accuracy") == pytest.approx(0.5)
    # soft: 1 + 0.5 on viewer-scene and inter-object granular, 1 + 0 elsewhere
    assert run.metric("dori_viewer_scene_direction_granular", "soft_accuracy") == 0.75
    assert run.metric("dori_single_axis_rotation_granular", "soft_accuracy") == 0.5
    assert run.metric("dori_granular", "soft_accuracy") == pytest.approx((5 * 0.5 + 2 * 0.75) / 7)
    # coarse second items were unparseable; granular ones without a chosen wrong answer too
    assert run.metric("dori_compound_rotation_coarse", "unparsed_rate") == 0.5
    assert run.metric("dori_viewer_scene_direction_granular", "unparsed_rate") == 0.0
    n_options = len(dori_docs[("single_axis_rotation", "granular")][0]["options"])
    assert run.metric("dori_single_axis_rotation_granular", "chance_level") == pytest.approx(1 / n_options)

    # the analysis comes from the samples files alone
    report = build_report([run.out])["structured"]
    assert report["table2"]["average"] == {"coarse": 0.5, "granular": 0.5}
    pattern = {(r["question_type"], r["truth"], r["predicted"]): r["pattern"] for r in report["patterns"]}
    assert pattern[("viewer_scene_direction_granular", "270 degrees", "90 degrees")] == "rotational_symmetry_confusion"
    assert (
        pattern[("view_parallelism_granular", "135 degrees to 180 degrees", "65 degrees to 95 degrees")]
        == "angle_compression"
    )
    assert (
        pattern[("canonical_orientation_coarse", "No, the image is not in the canonical orientation", "UNKNOWN")]
        == "uncertainty_cascade"
    )
    assert report["compound"]["n"] == 2 and report["compound"]["both_wrong"] == 50.0

    assert lmms_spatial(["dori-report", str(run.out)]) == 0
    printed = capsys.readouterr().out
    assert "Table 2 layout" in printed and "rotational_symmetry_confusion" in printed


@pytest.fixture(scope="module")
def seeded_run(lmms_eval_into, tmp_path_factory):
    """``random_choice seed=0`` on the ``dori_unstructured`` group with option seed 42, run once."""
    args = ["--model", "random_choice", "--model_args", "seed=0", "--tasks", "dori_unstructured"]
    out = tmp_path_factory.mktemp("dori_seeded") / "run"
    return lmms_eval_into(out, *args, env={"LMMS_SPATIAL_DORI_SEED": "42"})


def test_seeded_run_scores_exactly_the_guesses_and_option_orders_the_seeding_rules_give(seeded_run, dori_docs):
    # Derived here from the two documented rules, not from the scorer:
    # - random_choice guesses random.Random(f"{seed}:{task}:{doc_id}").choice(the question's letters);
    # - LMMS_SPATIAL_DORI_SEED=42 shuffles a question's options with random.Random(f"42:{id}").shuffle.
    # A guess is right when it is the letter the true option text moved to; the reply is a bare letter.
    accuracy = {}
    for (task, gran), docs in dori_docs.items():
        name = f"dori_unstructured_{task}_{gran}"
        right = 0
        for doc_id, doc in enumerate(docs):
            options = list(doc["options"])
            random.Random(f"42:{doc['id']}").shuffle(options)
            truth = doc["options"][LETTERS.index(doc["answer"])]
            guess = random.Random(f"0:{name}:{doc_id}").choice(LETTERS[: len(options)])
            sample = seeded_run.samples[name][doc_id]
            assert (sample["accuracy"]["id"], sample["accuracy"]["options"]) == (doc["id"], options), name
            assert sample["filtered_resps"] == guess, name
            right += guess == LETTERS[options.index(truth)]
        accuracy[name] = right / len(docs)
        assert seeded_run.metric(name, "accuracy") == accuracy[name], name
        assert seeded_run.metric(name, "unparsed_rate") == 0.0, name
    # the group: the unweighted mean of its 14 question types
    assert len(accuracy) == 14
    assert seeded_run.metric("dori_unstructured", "accuracy") == pytest.approx(sum(accuracy.values()) / 14)


def test_seeded_run_shuffles_options_and_keeps_answers_attached(seeded_run, dori_docs):
    run = seeded_run
    original = {d["id"]: d for docs in dori_docs.values() for d in docs}
    shuffled_any = False
    for task_name, samples in run.samples.items():
        for sample in samples:
            record = sample["accuracy"]
            assert record["option_seed"] == "42" and record["prompt"] == "unstructured"
            doc = original[record["id"]]
            truth = doc["options"]["ABCDEFGHIJKLMNOP".index(doc["answer"])]
            assert record["options"]["ABCDEFGHIJKLMNOP".index(record["answer"])] == truth, task_name
            shuffled_any |= record["options"] != doc["options"]
    assert shuffled_any


def test_replay_restores_the_option_seed_the_answers_were_generated_with(lmms_eval, seeded_run):
    tasks = "dori_unstructured_view_parallelism_granular,dori_unstructured_compound_rotation_coarse"
    seeded = seeded_run  # the option seed 42 run of the whole group; two of its tasks are replayed

    # no seed in the environment: replay reads it from the samples and scores the same letters
    replayed = lmms_eval("--model", "replay", "--model_args", f"samples={seeded.out}", "--tasks", tasks)
    assert set(replayed.samples) == set(tasks.split(","))
    for task in tasks.split(","):
        assert [s["accuracy"] for s in replayed.samples[task]] == [s["accuracy"] for s in seeded.samples[task]]
        assert replayed.samples[task][0]["accuracy"]["run_options"] == {"LMMS_SPATIAL_DORI_SEED": "42"}
    assert "LMMS_SPATIAL_DORI_SEED=42 restored" in replayed.stdout + replayed.stderr

    # a contradicting seed fails the run instead of scoring against another option order
    clash = lmms_eval("--model", "replay", "--model_args", f"samples={seeded.out}", "--tasks", tasks,
                      env={"LMMS_SPATIAL_DORI_SEED": "1998"}, expect_results=False)  # fmt: skip
    assert "LMMS_SPATIAL_DORI_SEED=1998 is set, but the samples were generated with '42'" in clash.stdout + clash.stderr
