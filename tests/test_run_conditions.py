"""A run's conditions in its results (``results["lmms_spatial"]``), the last lines they call for, and a chat
model that draws its own maps: the pieces, without lmms-eval runs (tests/e2e/test_run_conditions_cli.py has those)."""

from __future__ import annotations

import json
import math
import os

import pytest
from lmms_eval.api.instance import Instance

from lmms_spatial.conditions import DeclaredTask, ModelRecord, RunConditions
from lmms_spatial.models import stages
from lmms_spatial.plugin import conditions, failures
from lmms_spatial.plugin.maps import own_maps
from lmms_spatial.run_state import RunNotes

# --- the model's label ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args", "label"),
    [
        ("qwen2_5_vl", "pretrained=Qwen/Qwen2.5-VL-7B-Instruct,attn_implementation=flash_attention_2",
         "Qwen2.5-VL-7B-Instruct"),
        ("openai", "model_version=gpt-4o,base_url=https://api.openai.com/v1,num_concurrent=8", "gpt-4o"),
        ("litellm", "model=anthropic/claude-3-5-sonnet", "claude-3-5-sonnet"),
        ("staged", "base=qwen2_5_vl,pretrained=/ckpt/runs/my-model/,stage_cache=/tmp/s", "my-model"),
        ("random_choice", "seed=3", "random_choice"),
        ("random_choice", "", "random_choice"),
    ],
)  # fmt: skip
def test_the_label_is_the_basename_of_the_checkpoint_or_api_model_never_the_whole_model_args(name, args, label):
    assert conditions.model_label(name, args) == label


def test_a_replayed_run_keeps_the_label_of_the_run_whose_samples_it_answers_from(tmp_path):
    run = tmp_path / "qwen"
    run.mkdir()
    (run / "20260101_000000_samples_mmsi_vanilla.jsonl").write_text("{}\n")
    (run / "20260101_000000_results.json").write_text(
        json.dumps({"config": {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-3B-Instruct"}})
    )
    entry = conditions.model_entry({"model": "replay", "model_args": f"samples={run},prompt_check=warn"})
    assert entry.label == "Qwen2.5-VL-3B-Instruct"
    assert entry.replayed_from == str(run / "20260101_000000_results.json")


def test_a_run_records_the_software_that_produced_it():
    from importlib.metadata import version

    env = _build(_results(t={}), {})["environment"]
    assert {name: env["packages"][name] for name in ("lmms-eval", "transformers", "torch")} == {
        name: version(name) for name in ("lmms-eval", "transformers", "torch")
    }
    assert env["lmms-spatial"]["version"] == version("lmms-spatial")


def test_a_replay_keeps_the_environment_of_the_run_it_replays_and_adds_its_own_as_the_scorers(tmp_path):
    run = tmp_path / "qwen"
    run.mkdir()
    (run / "20260101_000000_samples_mmsi_vanilla.jsonl").write_text("{}\n")
    generated = {"python": "3.10.14", "packages": {"lmms-eval": "0.7.0", "transformers": "4.57.1", "torch": "2.8.0"},
                 "cuda": "12.8", "gpu": "NVIDIA H100 80GB HBM3"}  # fmt: skip
    (run / "20260101_000000_results.json").write_text(json.dumps({
        "config": {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-3B-Instruct"},
        "lmms_spatial": {"schema": 1, "environment": generated}}))  # fmt: skip
    results = _results(mmsi_vanilla={})
    results["config"].update(model="replay", model_args=f"samples={run}")
    value = _build(results, {"mmsi_vanilla": MMSI})
    assert value["environment"] == generated
    assert value["scorer_environment"] == conditions.environments(ModelRecord("x", "x", None))[0]
    # a replayed run that recorded no environment: null, not this process's
    (run / "20260101_000000_results.json").write_text(json.dumps({"config": {"model": "qwen2_5_vl"}}))
    assert _build(results, {"mmsi_vanilla": MMSI})["environment"] is None


def test_a_replay_of_two_runs_of_one_model_names_per_task_the_run_its_answers_come_from(tmp_path):
    config = {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-3B-Instruct"}
    for stamp, task in (("20260101_000000", "mmsi_vanilla"), ("20260102_000000", "odi_bench_close_existence")):
        (tmp_path / f"{stamp}_samples_{task}.jsonl").write_text("{}\n")
        (tmp_path / f"{stamp}_results.json").write_text(json.dumps({"config": config}))
    results = {"config": {"model": "replay", "model_args": f"samples={tmp_path}"},
               "n-samples": {"mmsi_vanilla": {"original": 1, "effective": 1},
                             "odi_bench_close_existence": {"original": 1, "effective": 1}}}  # fmt: skip
    tasks = {"mmsi_vanilla": MMSI, "odi_bench_close_existence": DeclaredTask("odi_bench")}
    built = _build(results, tasks)
    assert built["model"]["label"] == "Qwen2.5-VL-3B-Instruct"
    assert "replayed_from" not in built["model"]  # two runs: no one run speaks for every task
    assert built["tasks"]["mmsi_vanilla"]["replayed_from"] == str(tmp_path / "20260101_000000_results.json")
    assert built["tasks"]["odi_bench_close_existence"]["replayed_from"] == str(
        tmp_path / "20260102_000000_results.json"
    )
    only_mmsi = _build(results, {"mmsi_vanilla": MMSI})  # the run evaluated MMSI alone: one run answered
    assert only_mmsi["model"]["replayed_from"] == str(tmp_path / "20260101_000000_results.json")
    # neither run recorded its software: the replay's environment is unknown (null), its own is the scorer's
    assert built["environment"] is None and built["scorer_environment"]["packages"]


def test_a_replay_of_two_runs_on_the_same_software_keeps_that_software_as_its_environment(tmp_path):
    env = {"python": "3.11.7", "packages": {"lmms-eval": "0.7.3", "transformers": "5.24.0", "torch": "2.14.1"}}
    config = {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-3B-Instruct"}
    for stamp, task in (("20260101_000000", "mmsi_vanilla"), ("20260102_000000", "odi_bench_close_existence")):
        (tmp_path / f"{stamp}_samples_{task}.jsonl").write_text("{}\n")
        (tmp_path / f"{stamp}_results.json").write_text(
            json.dumps({"config": config, "lmms_spatial": {"environment": env}})
        )
    results = {"config": {"model": "replay", "model_args": f"samples={tmp_path}"},
               "n-samples": {"mmsi_vanilla": {"original": 1, "effective": 1},
                             "odi_bench_close_existence": {"original": 1, "effective": 1}}}  # fmt: skip
    built = _build(results, {"mmsi_vanilla": MMSI, "odi_bench_close_existence": DeclaredTask("odi_bench")})
    assert built["environment"] == env


# --- the conditions of a run --------------------------------------------------------------------


def _build(results, tasks, **kwargs) -> dict:
    """The conditions a run builds, as its results file holds them."""
    return conditions.build(results, tasks, **kwargs).to_json()


def _results(**results_of) -> dict:
    return {
        "config": {"model": "random_choice", "model_args": "seed=7", "limit": 3.0, "random_seed": 0},
        "n-samples": {t: {"original": 12, "effective": 3} for t in results_of},
        "results": {t: {"alias": t, **m} for t, m in results_of.items()},
    }


def test_documents_count_against_the_splits_size_and_the_limit_is_kept_as_given():
    tasks = {"mmsi_vanilla": MMSI}
    value = _build(_results(mmsi_vanilla={"accuracy,none": 0.5}), tasks, empty=["odi_bench_close_ocr"])
    assert value["schema"] == 1 and value["model"] == {"label": "random_choice", "name": "random_choice",
                                                       "args": "seed=7", "seed": 7, "sampling_seed": None,
                                                       "fingerprint": None}  # fmt: skip
    task = value["tasks"]["mmsi_vanilla"]
    assert (task["documents"], task["of"], task["limit"]) == (3, 12, 3)  # lmms-eval's 3.0 read back as 3
    assert task["judge"] is None and task["map_source"] is None and task["seed"] == 7
    assert value["tasks"]["odi_bench_close_ocr"]["documents"] == value["tasks"]["odi_bench_close_ocr"]["of"] == 0


@pytest.mark.parametrize(
    ("offset", "limit_counts", "documents"),
    [
        (0, {"original": 12, "effective": 3}, 3),
        (10, {"original": 12, "effective": 3}, 2),
        (1, {"original": 12, "effective": 12}, 11),
        (9, {"original": 12, "effective": 3}, 3),
        (20, {"original": 12, "effective": 12}, 0),
        (None, {"original": 12, "effective": 12}, 12),
        (2, {"effective": 5}, 5),
    ],
)
def test_documents_are_those_evaluated_after_the_offset(offset, limit_counts, documents):
    results = _results(mmsi_vanilla={"accuracy,none": 0.5})
    results["config"]["offset"], results["n-samples"]["mmsi_vanilla"] = offset, limit_counts
    assert _build(results, {"mmsi_vanilla": MMSI})["tasks"]["mmsi_vanilla"]["documents"] == documents


def test_each_of_our_tasks_config_names_the_data_the_run_read():
    from lmms_spatial.conditions import DataRecord

    hub = DataRecord("RunsenXu/MMSI-Bench", False, "abc123", "f1")
    placeholder = {"dataset_path": "json", "dataset_kwargs": {"data_files": "placeholder.jsonl"}}
    configs = {
        "mmsi_vanilla": {**placeholder, "metadata": {"version": 1.0}},
        "osr_qa_standard_vanilla": {**placeholder},
        "mme": {"dataset_path": "lmms-lab/MME"},
    }
    results = {"configs": configs}
    osr = DeclaredTask("osr_bench")
    local = DataRecord("/d/osr", True)
    data = {"mmsi": hub, "osr_bench/standard": local, "osr_bench/negative": local, "odi_bench": DataRecord("/d", True)}
    conditions.name_data(results, {"mmsi_vanilla": MMSI, "osr_qa_standard_vanilla": osr}, data)
    assert configs["mmsi_vanilla"] == {"dataset_path": "RunsenXu/MMSI-Bench", "dataset_kwargs": {"revision": "abc123"},
                                       "metadata": {"version": 1.0, "data": {"mmsi": hub.to_json()}}}  # fmt: skip
    osr_config = configs["osr_qa_standard_vanilla"]
    assert osr_config["dataset_path"] == "/d/osr" and osr_config["dataset_kwargs"] == {}
    assert sorted(osr_config["metadata"]["data"]) == ["osr_bench/negative", "osr_bench/standard"]
    assert configs["mme"] == {"dataset_path": "lmms-lab/MME"}  # lmms-eval's own task: as it was
    conditions.name_data(results, {"mmsi_vanilla": MMSI}, None)  # no data recorded: nothing to name
    assert configs["mmsi_vanilla"]["dataset_path"] == "RunsenXu/MMSI-Bench"


def test_lmms_evals_seed_is_recorded_only_where_it_reached_the_answers():
    """--seed's torch value reaches a local model's answers only when it samples; greedy answers, an API model's and
    a model that draws from its own seed= (random_choice: default 0) do not depend on it."""
    from lmms_spatial.plugin.conditions import sampling_seed
    from lmms_spatial.run_state import RunNotes

    config = {"model": "qwen2_5_vl", "model_args": "pretrained=x/y", "random_seed": 0, "torch_seed": 1234}
    sampled = {"mmsi_cot": {"do_sample": True, "temperature": 0.7}, "mmsi_vanilla": {"max_new_tokens": 16}}
    greedy = {"mmsi_vanilla": {"max_new_tokens": 16, "temperature": 0}}
    assert sampling_seed(config, sampled) == 1234
    assert sampling_seed(config, {"t": {"temperature": 0.2}}) == 1234  # temperature alone samples (many backends)
    assert sampling_seed(config, greedy) is None
    assert sampling_seed({**config, "model_args": "model_version=gpt-4o"}, sampled) is None
    assert sampling_seed({**config, "model_args": "pretrained=x,base_url=http://h/v1"}, sampled) is None

    results = _results(t={})
    results["config"].update(model_args="pretrained=x/y", random_seed=0, torch_seed=1234)
    value = conditions.build(results, {})
    assert value.model.seed is None  # the model takes no seed of its own; --seed is not recorded as one
    conditions.add_what_answered(value, results, RunNotes(generation=sampled))
    assert (value.model.seed, value.model.sampling_seed) == (None, 1234)
    conditions.add_what_answered(value, results, RunNotes(generation=greedy))
    assert value.model.sampling_seed is None
    # random_choice without seed=: the seed it drew from by default, and never --seed, sampled or not
    notes = RunNotes(generation=sampled, model_seed=0, own_seed_only=True)
    value = conditions.build({**results, "config": {**results["config"], "model_args": ""}}, {})
    conditions.add_what_answered(value, results, notes)
    assert (value.model.seed, value.model.sampling_seed) == (0, None)


def test_what_answered_and_the_generation_settings_each_task_was_run_with_are_recorded():
    """--gen_kwargs max_new_tokens=16 over mmsi_cot's own 2048 (tasks/mmsi/mmsi_cot.yaml), 3 of 4 answers
    from the store, given by one earlier run."""
    tasks = {"mmsi_cot": MMSI}
    results = _results(mmsi_cot={"accuracy,none": 0.5})
    results["config"]["gen_kwargs"] = {"max_new_tokens": 16}
    value = conditions.build(results, tasks)
    own = {"max_new_tokens": 2048, "temperature": 0.0, "do_sample": False, "until": ["\n\n"]}
    earlier = {"run": "the run of 2026-01-01 00:00:00 UTC into out (run id a1)", "answers": 3}
    notes = RunNotes(protocol={"mmsi_cot": own}, generation={"mmsi_cot": {**own, "max_new_tokens": 16}},
                     store={"root": "out/cache", "weights": "local:0123456789abcdef", "answers": 3, "asked": 4,
                            "tasks": {"mmsi_cot": 3}, "from": [earlier]})  # fmt: skip
    conditions.add_what_answered(value, results, notes)
    value = value.to_json()
    assert value["model"]["fingerprint"] == "local:0123456789abcdef"
    assert value["store"] == {"root": "out/cache", "answers": 3, "asked": 4, "from": [earlier]}
    task = value["tasks"]["mmsi_cot"]
    assert task["answers_from_store"] == 3
    assert task["generation"] == {"protocol": own, "in_effect": {**own, "max_new_tokens": 16},
                                  "overrides": {"max_new_tokens": 16}}  # fmt: skip
    # no store (LMMS_SPATIAL_RESUME=0, replay): unknown, not 0; the model's args still name its weights
    value = conditions.build(_results(mmsi_cot={}), tasks)
    conditions.add_what_answered(value, {"config": {}}, RunNotes())
    value = value.to_json()
    assert value["store"] is None and value["tasks"]["mmsi_cot"]["answers_from_store"] is None
    assert value["model"]["fingerprint"] is None and "generation" not in value["tasks"]["mmsi_cot"]


MMSI = DeclaredTask("mmsi")
ODI = DeclaredTask("odi_bench", judge_rubric="odi_open", run_options={"X": "1"})


def test_an_llm_judge_is_named_with_its_rubric_and_counts(monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "gpt-4o")
    metrics = {"judge_failures,none": 1, "judge_unparsed,none": 1, "judge_fallback_share,none": 0.0}
    value = _build(_results(odi_bench_open_ocr=metrics), {"odi_bench_open_ocr": ODI})
    # 3 documents: 1 judge failure, 1 unreadable verdict, so 3 - 1 - 1 = 1 verdict in judge_score
    assert value["tasks"]["odi_bench_open_ocr"]["judge"] == {
        "kind": "llm", "model": "gpt-4o", "rubric": "odi_open", "rubric_version": "1.0",
        "scored": 1, "failures": 1, "unparsed": 1}  # fmt: skip


def test_osr_negative_keeps_its_unreadable_verdicts_among_the_scored_ones(monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "deepseek-chat")
    osr = DeclaredTask("osr_bench", judge_rubric="osr_negative", run_options={"X": "1"})
    metrics = {"judge_failures,none": 0, "judge_unparsed,none": 2}
    judge = _build(_results(osr_qa_negative_vanilla=metrics), {"osr_qa_negative_vanilla": osr})
    assert judge["tasks"]["osr_qa_negative_vanilla"]["judge"]["scored"] == 3  # the 2 unreadable ones score 0


def test_the_rule_based_fallback_is_named_with_its_share(monkeypatch):
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")
    value = _build(_results(t={"judge_fallback_share,none": 1.0}), {"t": ODI})
    assert value["tasks"]["t"]["judge"] == {"kind": "rule", "rule": "odi_open rule-based fallback "
                                            "(LMMS_SPATIAL_JUDGE=none)", "share": 1.0}  # fmt: skip


def test_no_judge_configured_says_so(monkeypatch):
    monkeypatch.delenv("LMMS_SPATIAL_JUDGE", raising=False)
    value = _build(_results(t={"judge_failures,none": 3}), {"t": ODI})
    assert value["tasks"]["t"]["judge"] == {"kind": "none", "reason": "no judge configured (LMMS_SPATIAL_JUDGE is "
                                                                      "not set)"}  # fmt: skip


@pytest.mark.parametrize(("without", "draws", "source"),
                         [(0, False, "own_map"), (3, False, "none"), (1, False, "partial"), (None, True, "own_map"),
                          (None, False, "none")])  # fmt: skip
def test_the_map_source_is_read_from_the_answers_given_without_a_map(without, draws, source):
    metrics = {} if without is None else {"answers_without_map,none": without}  # None: --predict_only, no metrics
    osr = DeclaredTask("osr_bench", map_stage="osr_cogmap")
    value = _build(_results(t=metrics), {"t": osr}, lm_draws_maps=draws)
    assert value["tasks"]["t"]["map_source"] == source


def test_run_options_come_from_the_score_records_when_the_samples_are_at_hand():
    results = _results(t={})
    results["samples"] = {
        "t": [{"doc_id": 0, "judge_score": {"run_options": {"LMMS_SPATIAL_ODI_API_IMAGES": "openai"}}}]
    }
    value = _build(results, {"t": ODI})
    assert value["tasks"]["t"]["run_options"] == {"LMMS_SPATIAL_ODI_API_IMAGES": "openai"}
    assert _build(_results(t={}), {"t": ODI})["tasks"]["t"]["run_options"] == {"X": "1"}  # no samples


def test_the_tasks_declare_their_judge_and_map_in_their_benchmarks_task_needs():
    from lmms_spatial.tasks.odi_bench import adapter as odi
    from lmms_spatial.tasks.osr_bench import adapter as osr

    class Task:
        def __init__(self, name, scorer):
            self.config = type("Config", (), {"task": name, "process_results": scorer})()

    task_dict = {"odi_bench_open": {"odi_bench_open_ocr": Task("odi_bench_open_ocr", odi.process_results_open)},
                 "osr_qa_cogmap_negative_think": Task("osr_qa_cogmap_negative_think",
                                                      osr.PROCESSORS["qa_cogmap_negative_think"]),
                 "mme": Task("mme", print)}  # fmt: skip
    found = conditions.declared(task_dict)
    assert set(found) == {"odi_bench_open_ocr", "osr_qa_cogmap_negative_think"}  # not lmms-eval's own mme
    assert found["odi_bench_open_ocr"].judge_rubric == "odi_open" and found["odi_bench_open_ocr"].map_stage is None
    assert (found["osr_qa_cogmap_negative_think"].judge_rubric, found["osr_qa_cogmap_negative_think"].map_stage) \
        == ("osr_negative", "osr_cogmap")  # fmt: skip


# --- the last lines -----------------------------------------------------------------------------------


def _value(model: dict | None = None, **tasks) -> RunConditions:
    """Conditions as a results file holds them, read back."""
    model = model or {"label": "tiny", "name": "qwen2_5_vl", "args": "pretrained=/m/tiny"}
    return RunConditions.from_json({"model": model, "tasks": tasks})


def test_with_map_tasks_answered_without_a_map_are_named_with_the_command_that_scores_them():
    value = _value(
        {"label": "random_choice", "name": "random_choice", "args": "seed=0"},
        osr_qa_cogmap_standard_vanilla={"map_source": "none"},
        osr_qa_standard_vanilla={"map_source": None},
    )
    (line,) = conditions.notes(value)
    assert line == (
        "lmms-spatial: osr_qa_cogmap_standard_vanilla: not scored (NaN): they ask each question after the model's "
        "own map, and random_choice drew none (random_choice is not a chat model; answers_without_map counts them). "
        "A chat model draws its own map, e.g. lmms-eval --model qwen2_5_vl --model_args "
        "pretrained=Qwen/Qwen2.5-VL-7B-Instruct --tasks osr_qa_cogmap_standard_vanilla"
    )
    results = {"results": {"osr_qa_cogmap_standard_vanilla": {"accuracy,none": math.nan}}}
    conditions.annotate(results, value)
    assert results["results"]["osr_qa_cogmap_standard_vanilla"][conditions.NOT_SCORED_KEY] == ("no map")


def _judged(unparsed: int, scored: int, rubric: str = "odi_open") -> dict:
    return {"judge": {"kind": "llm", "model": "j", "rubric": rubric, "rubric_version": "1.0", "scored": scored,
                      "failures": 0, "unparsed": unparsed}}  # fmt: skip


def test_more_than_five_percent_unreadable_verdicts_are_said_with_one_example():
    samples = {"b": [{"judge_score": {"reason": "judge_unparsed", "judge_reply": "I think\n it is fine"}}]}
    # 1 of 20 verdicts (5%): not said, also when all are in one task of a run; 2 of 21 (9.5%): said, with the
    # reply found in the samples
    assert conditions.notes(_value(a=_judged(1, 19))) == []
    assert conditions.notes(_value(a=_judged(0, 18), b=_judged(1, 1))) == []  # 1 of 20 over the run, not 1 of 2
    (line,) = conditions.notes(_value(a=_judged(1, 19), b=_judged(1, 0)), samples)
    assert line == ("lmms-spatial: 2 of 21 verdicts of the judge j (rubric odi_open) could not be read (10%): left "
                    "out of judge_score, counted in judge_unparsed; e.g. 'I think it is fine'. Check the judge model "
                    "and its server")  # fmt: skip


def test_osr_unreadable_verdicts_are_said_to_score_0_as_officially_and_the_example_can_come_from_the_judge():
    # osr_negative: unreadable verdicts are among the scored ones (0, as the official evaluator), 3 of 3
    (line,) = conditions.notes(_value(t=_judged(3, 3, "osr_negative")), example=lambda rubric: f"{rubric} said ok")
    assert "3 of 3 verdicts" in line and "(100%)" in line
    assert "scored 0 in llm_accuracy, as the official OSR-Bench evaluator scores them" in line
    assert "e.g. 'osr_negative said ok'" in line


def test_notes_end_the_output_and_leave_the_exit_status_alone(monkeypatch, capsys):
    exits = []
    monkeypatch.setattr(os, "_exit", exits.append)
    failures.reset()
    try:
        failures.add_note("lmms-spatial: a note")
        failures._exit_if_failed()
        assert capsys.readouterr().err == "lmms-spatial: a note\n" and exits == []
        failures.add_line("lmms-spatial: t failed while scoring: X")
        failures._exit_if_failed()
        assert capsys.readouterr().err.splitlines() == [
            "lmms-spatial: a note",
            "lmms-spatial: t failed while scoring: X",
        ]
        assert exits == [1]
    finally:
        failures.reset()


# --- a chat model draws its own maps -----------------------------------------------------------------


class FakeChat:
    """A chat 'model' recording every call: the requests as given, and the messages it read."""

    is_simple = False

    def __init__(self):
        self.calls: list[list] = []
        self.read: list[list[list[dict]]] = []
        self.task_dict = {"maps": {"test": [{"image": "img-1", "q": "q1"}, {"image": "img-1", "q": "q2"},
                                            {"image": "img-2", "q": "q3"}]},
                          "other": {"test": [{"q": "o1"}, {"q": "o2"}]}}  # fmt: skip

    def generate_until(self, requests):
        self.calls.append(list(requests))
        batch = []
        for r in requests:
            _ctx, doc_to_messages, _gen, doc_id, task, split = r.args
            batch.append(doc_to_messages(self.task_dict[task][split][doc_id]))
        self.read.append(batch)
        return [f"answer to: {messages[-1]['content'][-1]['text']}" for messages in batch]


def _to_messages(doc):
    if "image" not in doc:
        return [{"role": "user", "content": [{"type": "text", "text": doc["q"]}]}]
    return [{"role": "user", "content": [{"type": "image", "url": doc["image"]}, {"type": "text", "text": "map"}]},
            stages.stage_placeholder("osr_cogmap", doc["image"]),
            {"role": "user", "content": [{"type": "text", "text": doc["q"]}]}]  # fmt: skip


def _request(task: str, doc_id: int) -> Instance:
    return Instance("generate_until", ("", _to_messages, {}, doc_id, task, "test"), 0,
                    {"task": task, "doc_id": doc_id, "repeats": 1})  # fmt: skip


@pytest.fixture
def clean_stages():
    stages.clear()
    yield
    stages.clear()


def test_a_chat_model_draws_one_map_per_image_and_other_tasks_reach_it_unchanged(clean_stages, tmp_path):
    lm = FakeChat()
    requests = [_request("other", 1), _request("maps", 0), _request("maps", 1), _request("other", 0),
                _request("maps", 2)]  # fmt: skip
    with own_maps(lm, {"maps"}, "fake:m", str(tmp_path / "answers")) as drawing:
        answers = lm.generate_until(requests)
    assert drawing is True and "generate_until" not in lm.__dict__  # the model is left as it was
    others, maps, finals = lm.calls
    assert others == [requests[0], requests[3]]  # the same requests, in their order, in one call
    assert [m[-1]["content"][-1]["text"] for m in lm.read[1]] == ["map", "map"]  # img-1 and img-2: 2 maps, not 3
    assert len(finals) == 3 and lm.read[2][0][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "answer to: map"}],
    }
    assert answers == ["answer to: o2", "answer to: q1", "answer to: q2", "answer to: o1", "answer to: q3"]
    assert stages.stage_result("osr_cogmap", "img-2") == {"key": "img-2", "output": "answer to: map"}
    assert (tmp_path / "answers" / "lmms_spatial_stages.sqlite").is_file()  # kept with the answers


def test_a_map_kept_with_the_answers_is_found_for_an_answer_a_resumed_run_takes_from_the_cache(clean_stages, tmp_path):
    lm = FakeChat()
    with own_maps(lm, {"maps"}, "fake:m", str(tmp_path)):
        lm.generate_until([_request("maps", 2)])
    stages.clear()  # a new process: nothing in memory, the model not asked again
    lm = FakeChat()
    with own_maps(lm, {"maps"}, "fake:m", str(tmp_path)):
        assert stages.stage_result("osr_cogmap", "img-2") == {"key": "img-2", "output": "answer to: map"}
    assert lm.calls == []


def test_a_simple_model_or_one_that_draws_stages_itself_is_left_alone(clean_stages):
    simple = FakeChat()
    simple.is_simple = True
    with own_maps(simple, {"maps"}, "fake:m") as drawing:
        assert drawing is False and "generate_until" not in simple.__dict__
    with own_maps(FakeChat(), set(), "fake:m") as drawing:  # no with-map task in the run
        assert drawing is False


# --- one schema: the values the run writes are the values the report reads -----------------------------------


def test_the_conditions_a_run_writes_read_back_to_the_same_bytes():
    """Every key a run of ours writes, in its order (a replayed run, an LLM judge, a with-map task, the store and
    the keys lmms_spatial.plugin.isolation adds): from_json then to_json gives the same JSON, byte for byte."""
    generation = {"protocol": {"max_new_tokens": 512}, "in_effect": {"max_new_tokens": 16},
                  "overrides": {"max_new_tokens": 16}}  # fmt: skip
    written = {
        "schema": 1, "lmms_spatial_version": "0.1.0",
        "model": {"label": "Qwen2.5-VL-3B-Instruct", "name": "replay", "args": "samples=out", "seed": None,
                  "sampling_seed": None, "replayed_from": "out/20260101_000000_results.json", "fingerprint": None},
        "tasks": {
            "odi_bench_open_ocr": {"documents": 3, "of": 12, "limit": 3,
                                   "judge": {"kind": "llm", "model": "gpt-4o", "rubric": "odi_open",
                                             "rubric_version": "1.0", "scored": 1, "failures": 1, "unparsed": 1},
                                   "map_source": None, "run_options": {"LMMS_SPATIAL_ODI_API_IMAGES": "openai"},
                                   "seed": None, "replayed_from": "out/20260101_000000_results.json",
                                   "answers_from_store": 2, "generation": generation, "requests_failed": 1},
            "osr_qa_cogmap_negative_think": {"documents": 12, "of": 12, "limit": None,
                                             "judge": {"kind": "rule", "rule": "osr_negative rule-based fallback "
                                                       "(LMMS_SPATIAL_JUDGE=none)", "share": None},
                                             "map_source": "none", "run_options": {}, "seed": 0,
                                             "answers_from_store": None, "requests_failed": 0},
            "mmsi_vanilla": {"documents": 0, "of": 0, "limit": None, "judge": {"kind": "none", "reason": "no key"},
                             "map_source": None, "run_options": {}, "seed": 0, "answers_from_store": 0,
                             "requests_failed": 0},
        },
        "environment": None, "scorer_environment": {"python": "3.11.7"},
        "store": {"root": "out/cache", "answers": 2, "asked": 27, "from": [{"run": "the run of ...", "answers": 2}]},
        "data": {"mmsi": {"source": "RunsenXu/MMSI-Bench", "local": False, "revision": "abc123", "fingerprint": "f0"},
                 "osr_bench/qa": {"source": "/data/osr", "local": True, "revision": None, "fingerprint": None}},
        "failed_tasks": {"mmsi_vanilla": "ValueError: x"}, "groups_without_scores": ["mmsi"],
    }  # fmt: skip
    read = RunConditions.from_json(json.loads(json.dumps(written)))
    assert read.tasks["odi_bench_open_ocr"].judge.scored == 1 and read.model.replayed_from.endswith("_results.json")
    assert json.dumps(read.to_json(), indent=2) == json.dumps(written, indent=2)


def test_a_key_an_earlier_version_did_not_write_is_taken_from_the_samples_but_a_recorded_null_is_kept():
    """OSR-Bench with-map records carry their stage outputs (here: no map, so "none" when derived). A run that
    recorded ``map_source: null`` said the task is no with-map task: the report keeps that null; a file without
    the key gets the map source its samples show."""
    from lmms_spatial.reports.runs import derive_conditions

    lines = {"t": [{"doc_id": 0, "accuracy": {"score": 0.0, "stage_outputs": {"osr_cogmap": None}}}]}

    def read(entry: dict) -> str | None:
        data = {"config": {"model": "random_choice", "model_args": "seed=0"},
                "n-samples": {"t": {"original": 1, "effective": 1}},
                "lmms_spatial": {"schema": 1, "model": {"label": "random_choice"}, "tasks": {"t": entry}}}  # fmt: skip
        return derive_conditions(data, lines).task("t").map_source

    assert read({"documents": 1, "map_source": None}) is None
    assert read({"documents": 1}) == "none"
    assert read({"documents": 1, "map_source": "own_map"}) == "own_map"


def test_a_benchmark_declares_its_needs_once_by_scorer_name_and_one_that_declares_none_needs_nothing():
    from lmms_spatial.conditions import TaskNeeds, declare, needs_of

    def process_results_open():  # named as ODI-Bench's open-ended scorer
        pass

    def process_results():  # named as its close-ended one
        pass

    assert declare("odi_bench", process_results_open).judge_rubric == "odi_open"
    assert declare("odi_bench", process_results).judge_rubric is None
    assert needs_of("no_such_benchmark") == TaskNeeds()
    assert declare("no_such_benchmark", process_results) == DeclaredTask("no_such_benchmark", None, None, {})


def test_the_data_each_benchmark_was_read_from_is_recorded_for_the_call_even_when_already_loaded(tmp_path, monkeypatch):
    """The data a number came from is part of what produced it: a local copy by its absolute path, with datasets'
    fingerprint of the split read; a second call in the same process (the load kept) records it again."""
    from lmms_spatial import run_state
    from lmms_spatial.conditions import DataRecord
    from lmms_spatial.data import loading
    from lmms_spatial.data.demo import build_demo_data

    env = build_demo_data(tmp_path / "data", n=2, keys=["mmsi"])
    ((variable, folder),) = env.items()
    monkeypatch.setenv(variable, folder)
    placeholder = __import__("datasets").Dataset.from_dict({loading.PLACEHOLDER_COLUMN: [0]})
    loading.forget_loaded()
    records = []
    for _ in range(2):
        call = run_state.Call({})
        run_state.STATE.calls.append(call)
        try:
            documents = loading.resolve(placeholder, "mmsi")
        finally:
            run_state.STATE.calls.remove(call)
        records.append(call.data)
    loading.forget_loaded()
    expected = DataRecord(str((tmp_path / "data" / "mmsi").resolve()), True, None, documents._fingerprint)
    assert records == [{"mmsi": expected}, {"mmsi": expected}]
    assert len(documents) == 2 and isinstance(expected.fingerprint, str)
    assert RunConditions.from_json({"data": {"mmsi": expected.to_json()}}).data == {"mmsi": expected}
