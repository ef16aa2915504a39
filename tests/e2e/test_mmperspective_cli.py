"""MMPerspective end to end through the lmms-eval CLI, on the fixture data (no network, no GPU).

Two lmms-eval runs: the seeded random model over both groups (Table 1 and Table 2 trees), and
``replay`` of hand-written responses whose every score is worked out here by hand.
"""

from __future__ import annotations

import json
import random

import datasets
import pytest

from lmms_spatial.metrics.aggregation import mean
from lmms_spatial.metrics.mmperspective import PERCEPTION_TASKS, REASONING_TASKS, TASKS, table_row

pytestmark = pytest.mark.slow

LETTERS = "ABCDEFGH"


@pytest.fixture(scope="module")
def docs_by_task(fixture_datasets):
    """{leaf task: its documents in doc_id order}, selected as the tasks' process_docs do."""
    rows = list(
        datasets.load_dataset("parquet", data_files=str(fixture_datasets["mmperspective"] / "test.parquet"))["train"]
    )
    out = {}
    for prefix in ("mmperspective", "mmperspective_cot"):
        for t in TASKS:
            out[f"{prefix}_{t.lower()}"] = [r for r in rows if r["task"] == t and r["robust_group"] is None]
        out[f"{prefix}_robust"] = [r for r in rows if r["robust_group"] is not None]
    return out


def _samples_file(path, task, responses):
    f = path / f"20260101_000000_samples_{task}.jsonl"
    f.write_text("".join(json.dumps({"doc_id": i, "resps": [[r]]}) + "\n" for i, r in enumerate(responses)))


def _wrong(doc):
    return LETTERS[(LETTERS.index(doc["answer"]) + 1) % len(doc["options"])]


def test_random_choice_gives_seeded_task_accuracies_and_the_groups_give_pacc_racc_overall(lmms_eval, docs_by_task):
    run = lmms_eval("--model", "random_choice", "--model_args", "seed=8", "--tasks", "mmperspective,mmperspective_cot")
    results = run.results["results"]
    for prefix in ("mmperspective", "mmperspective_cot"):
        accuracy = {}
        for t in TASKS:
            task = f"{prefix}_{t.lower()}"
            docs = docs_by_task[task]
            guesses = [random.Random(f"8:{task}:{i}").choice(LETTERS[: len(d["options"])]) for i, d in enumerate(docs)]
            accuracy[t] = mean(g == d["answer"] for g, d in zip(guesses, docs, strict=True))
            assert run.metric(task, "accuracy") == pytest.approx(accuracy[t]), task
            assert run.metric(task, "unparsed_rate") == 0.0
        pacc = mean(accuracy[t] for t in PERCEPTION_TASKS)
        racc = mean(accuracy[t] for t in REASONING_TASKS)
        overall = mean(accuracy.values())  # the 9-task mean, not (PAcc + RAcc) / 2
        assert run.metric(f"{prefix}_perception", "accuracy") == pytest.approx(pacc)
        assert run.metric(f"{prefix}_reasoning", "accuracy") == pytest.approx(racc)
        assert run.metric(prefix, "accuracy") == pytest.approx(overall)
        row = table_row(run.results, prefix)
        assert (row["PAcc"], row["RAcc"], row["Overall"]) == pytest.approx((pacc, racc, overall))
        robust = f"{prefix}_robust"
        assert len(run.samples[robust]) == 15
        assert run.metric(robust, "complete_robust_groups") == 3 and run.metric(robust, "incomplete_robust_groups") == 0
        # robustness from the same seeded guesses: per seed item (robust_group), the share of its variants
        # answered right (graded) and whether all were (binary), averaged over the 3 items. Seed 8 leaves an
        # item with no variant right under both prompts (right per item: 2, 1, 0 and 0, 2, 0), so binary 0
        # is not also what "no variant right" would give.
        variants_right: dict[str, list[bool]] = {}
        for i, d in enumerate(docs_by_task[robust]):
            guess = random.Random(f"8:{robust}:{i}").choice(LETTERS[: len(d["options"])])
            assert run.samples[robust][i]["filtered_resps"] == guess
            variants_right.setdefault(d["robust_group"], []).append(guess == d["answer"])
        assert sorted(len(v) for v in variants_right.values()) == [5, 5, 5]
        graded = sum(sum(v) / 5 for v in variants_right.values()) / 3
        binary = sum(all(v) for v in variants_right.values()) / 3
        assert run.metric(robust, "graded_robustness") == pytest.approx(graded)
        assert run.metric(robust, "binary_robustness") == pytest.approx(binary)
        assert not any("accuracy" in key for key in results[robust])
    # the perception group's chance level is the unweighted mean of its tasks' chance levels
    chance = mean(run.metric(f"mmperspective_{t.lower()}", "chance_level") for t in PERCEPTION_TASKS)
    assert run.metric("mmperspective_perception", "chance_level") == pytest.approx(chance)
    record = run.samples["mmperspective_vpp"][0]["accuracy"]
    assert record["parsed"] in "ABCD" and record["reason"] == "letter_only"


# per leaf task, what each of its two documents gets: right, wrong, or unparsed
PLAN = {
    "VPP": ("right", "right"),  # 1.0
    "CLP": ("right", "wrong"),  # 0.5
    "VAP": ("wrong", "wrong"),  # 0.0
    "LDP": ("unparsed", "right"),  # 0.5
    "PTR": ("right", "right"),  # 1.0
    "LRR": ("right", "right"),  # 1.0
    "OVR": ("wrong", "right"),  # 0.5
    "PTS": ("wrong", "unparsed"),  # 0.0
    "VPC": ("right", "right"),  # 1.0
}


def _reply(doc, what, cot):
    if what == "unparsed":
        return "I cannot tell from this image."
    letter = doc["answer"] if what == "right" else _wrong(doc)
    return f"Option {_wrong(doc)} is tempting, but the lines converge elsewhere.\nAnswer: {letter}" if cot else letter


def test_replay_rescores_hand_written_responses_into_the_table_row(lmms_eval, docs_by_task, tmp_path):
    samples = tmp_path / "samples"
    samples.mkdir()
    for prefix, cot in (("mmperspective", False), ("mmperspective_cot", True)):
        for t, plan in PLAN.items():
            task = f"{prefix}_{t.lower()}"
            docs = docs_by_task[task]
            _samples_file(samples, task, [_reply(d, what, cot) for d, what in zip(docs, plan, strict=True)])
        # robustness rows: group 0 right on all 5 variants, group 1 wrong on its flip, group 2 right
        robust = docs_by_task[f"{prefix}_robust"]
        replies = [
            _reply(d, "wrong" if (d["robust_group"], d["perturbation"]) == ("robust-1", "flip") else "right", cot)
            for d in robust
        ]
        _samples_file(samples, f"{prefix}_robust", replies)

    # --limit 12 keeps the 2 docs of every task but cuts robustness group 2 after 2 of its 5 variants
    tasks = "mmperspective,mmperspective_cot"
    run = lmms_eval(
        "--model", "replay", "--model_args", f"samples={samples},prompt_check=warn", "--tasks", tasks, "--limit", "12"
    )

    assert run.metric("mmperspective_vpp", "accuracy") == 1.0
    assert (
        run.metric("mmperspective_ldp", "accuracy") == 0.5 and run.metric("mmperspective_ldp", "unparsed_rate") == 0.5
    )
    assert run.metric("mmperspective_perception", "accuracy") == pytest.approx((1 + 0.5 + 0 + 0.5) / 4)  # PAcc 0.5
    assert run.metric("mmperspective_reasoning", "accuracy") == pytest.approx((1 + 1 + 0.5 + 0 + 1) / 5)  # RAcc 0.7
    assert run.metric("mmperspective", "accuracy") == pytest.approx(5.5 / 9)  # Overall; (PAcc + RAcc) / 2 is 0.6
    assert run.metric("mmperspective_perception", "unparsed_rate") == pytest.approx(1 / 8)  # 1 of 8 questions
    # robustness over the 2 complete groups: (1 + 4/5) / 2 graded, 1 of 2 binary; group 2 reported, not scored
    assert run.metric("mmperspective_robust", "graded_robustness") == pytest.approx(0.9)
    assert run.metric("mmperspective_robust", "binary_robustness") == 0.5
    assert run.metric("mmperspective_robust", "complete_robust_groups") == 2
    assert run.metric("mmperspective_robust", "incomplete_robust_groups") == 1
    assert run.metric("mmperspective_robust", "variant_flip") == 0.5
    assert run.metric("mmperspective_robust", "variant_crop") == 1.0
    # chain of thought: the final "Answer: X" line wins over the letter named in the reasoning
    assert run.metric("mmperspective_cot", "accuracy") == pytest.approx(5.5 / 9)
    record = run.samples["mmperspective_cot_vpp"][0]["accuracy"]
    assert record["score"] == 1.0 and record["reason"].startswith("last_line:")
    unparsed = run.samples["mmperspective_ldp"][0]["accuracy"]
    assert unparsed["parsed"] is None and unparsed["reason"].startswith("unparsed:")
    row = table_row(run.results)
    assert (row["PAcc"], row["RAcc"], row["Graded"], row["Binary"]) == pytest.approx((0.5, 0.7, 0.9, 0.5))
