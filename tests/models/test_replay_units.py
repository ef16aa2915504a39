"""``--model replay``'s small rules, each pinned with hand-written samples and results files (issue 42: a mutant of
replay.py killed only by a whole lmms-eval run means a missing unit test). Which settings tell two runs apart, how
a run is named in a refusal, which file and line a refusal points at, and what each refusal says."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from loguru import logger

from lmms_spatial.models import stages
from lmms_spatial.models.replay import (
    LoggedRun,
    MissingResponsesError,
    MixedRunsError,
    PromptMismatchError,
    Replay,
    _describe,
    _first_text,
    _settings,
    find_runs,
    find_samples_files,
    load_responses,
    load_samples,
)
from lmms_spatial.run_options import RunOptionsConflict


def _write(path, rows) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _results(folder, stamp, config=None, conditions=None):
    folder.mkdir(parents=True, exist_ok=True)
    body = {"config": config if config is not None else {"model": "guess", "model_args": "seed=0"}}
    if conditions is not None:
        body["lmms_spatial"] = conditions
    path = folder / f"{stamp}_results.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def _request(task: str, doc_id: int, prompt: str, split: str = "test") -> SimpleNamespace:
    return SimpleNamespace(task_name=task, doc_id=doc_id, args=(prompt, None, {}, doc_id, task, split))


@pytest.fixture
def messages():
    """Every loguru message of level WARNING and above, and INFO ones, as (level, text)."""
    seen: list[tuple[str, str]] = []
    sink = logger.add(lambda m: seen.append((m.record["level"].name, m.record["message"])), level="INFO")
    yield seen
    logger.remove(sink)


@pytest.fixture(autouse=True)
def _clean_stage_records():
    stages.clear()
    yield
    stages.clear()


# --- values read from a samples line -------------------------------------------------------------------------------


def test_the_text_of_a_response_is_the_first_string_however_deeply_listed_and_nothing_else():
    assert _first_text([["<think>x</think>B"], ["C"]]) == "<think>x</think>B"
    assert _first_text("D") == "D"
    assert _first_text([]) is None
    assert _first_text([[5]]) is None  # a number is not a response
    assert _first_text({"text": "A"}) is None


def test_a_sample_whose_response_is_not_text_fails_naming_its_file_line_and_document(tmp_path):
    f = _write(
        tmp_path / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"]}, {"doc_id": 7, "resps": [3]}]
    )
    with pytest.raises(ValueError) as raised:
        load_responses({"t": tmp_path / "20260101_000000_samples_t.jsonl"})
    assert str(raised.value) == f"replay: {f}:2: no text response for doc_id 7"


def test_blank_lines_between_samples_are_skipped_not_the_end_of_the_file(tmp_path):
    path = tmp_path / "20260101_000000_samples_t.jsonl"
    path.write_text('{"doc_id": 0, "resps": ["A"]}\n\n   \n{"doc_id": 1, "resps": ["B"]}\n', encoding="utf-8")
    assert load_responses({"t": path}) == {("t", 0): "A", ("t", 1): "B"}


def test_stage_outputs_logged_in_a_score_record_are_restored_for_the_rescored_logs(tmp_path):
    record = {"score": 1.0, "stage_outputs": {"map": {"key": "img-3", "output": '{"chair": [1, 2]}'}}}
    path = tmp_path / "20260101_000000_samples_t.jsonl"
    _write(path, [{"doc_id": 0, "resps": ["A"], "osr_score": record}])
    load_samples({"t": path})
    assert stages.stage_result("map", "img-3") == {"key": "img-3", "output": '{"chair": [1, 2]}'}


def test_a_samples_file_mixing_run_options_is_refused_naming_each_and_its_first_line(tmp_path):
    rows = [{"doc_id": i, "resps": ["A"], "accuracy": {"run_options": {"LMMS_SPATIAL_DORI_SEED": s}}}
            for i, s in enumerate(["42", "42", "7"])]  # fmt: skip
    path = tmp_path / "20260101_000000_samples_dori_x.jsonl"
    _write(path, rows)
    with pytest.raises(RunOptionsConflict) as raised:
        load_samples({"dori_x": path})
    assert str(raised.value) == (
        f"replay: {path} mixes run options: LMMS_SPATIAL_DORI_SEED=42 (line 1); LMMS_SPATIAL_DORI_SEED=7 (line 3)"
    )


def test_shards_mixing_run_options_are_refused_naming_each_file_and_line(tmp_path):
    def rows(seed):
        return [{"doc_id": 0, "resps": ["A"], "accuracy": {"run_options": {"LMMS_SPATIAL_DORI_SEED": seed}}}]

    first = Path(_write(tmp_path / "20260101_000000_samples_dori_x.jsonl", rows("42")))
    second = Path(_write(tmp_path / "20260101_000100_samples_dori_x.jsonl", rows("7")))
    with pytest.raises(RunOptionsConflict) as raised:
        load_samples({"dori_x": [first, second]})
    assert str(raised.value) == (
        f"replay: the samples of dori_x mix run options: LMMS_SPATIAL_DORI_SEED=42 ({first.name} line 1); "
        f"LMMS_SPATIAL_DORI_SEED=7 ({second.name} line 1)"
    )


def test_a_run_left_out_of_one_task_for_answering_its_documents_again_still_answers_its_other_tasks(tmp_path):
    from lmms_spatial.models.replay import task_runs

    old, new = tmp_path / "old", tmp_path / "new"
    for folder in (old, new):
        folder.mkdir()
    _write(old / "20260101_000000_samples_a_task.jsonl", [{"doc_id": 0, "resps": ["old"]}])
    _write(old / "20260101_000000_samples_b_task.jsonl", [{"doc_id": 0, "resps": ["only old"]}])
    _write(new / "20260102_000000_samples_a_task.jsonl", [{"doc_id": 0, "resps": ["new"]}])
    for folder, stamp in ((old, "20260101_000000"), (new, "20260102_000000")):
        (folder / f"{stamp}_results.json").write_text(json.dumps({"config": {"model": "m", "model_args": "x=1"}}))
    found = task_runs(str(tmp_path))
    assert {task: [r.folder.name for r in runs] for task, runs in found.items()} == {"a_task": ["new"],
                                                                                     "b_task": ["old"]}  # fmt: skip


# --- which run a folder holds, and what tells two runs apart ------------------------------------------------------


def test_model_and_generation_arguments_are_compared_whatever_their_order():
    one = _settings({"model": "m", "model_args": "b=2,a=1", "gen_kwargs": "top_p=1,temperature=0"})
    two = _settings({"model": "m", "model_args": "a=1,b=2", "gen_kwargs": "temperature=0,top_p=1"})
    assert one == two
    assert one["gen_kwargs"] == [("temperature", "0"), ("top_p", "1")]
    assert one["model_args"] == [("a", "1"), ("b", "2")]
    assert one["random_seed"] is None


def test_two_runs_differing_only_in_their_weights_are_refused_naming_the_weights(tmp_path):
    for stamp, weights in (("20260101_000000", "sha256:aaa"), ("20260102_000000", "sha256:bbb")):
        _write(tmp_path / f"{stamp}_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"]}])
        _results(tmp_path, stamp, conditions={"model": {"label": "ckpt", "fingerprint": weights}})
    with pytest.raises(MixedRunsError, match=r"holds 2 runs of different models or settings \(weights\), "):
        find_samples_files(str(tmp_path))


def test_a_results_file_that_is_not_an_object_leaves_the_run_unknown(tmp_path):
    _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    (tmp_path / "20260101_000000_results.json").write_text("[1, 2]", encoding="utf-8")
    (run,) = find_runs(str(tmp_path))
    assert (run.results, run.settings, run.label) == (None, None, "unknown model (no results file beside the samples)")


def test_a_run_without_a_recorded_label_is_labelled_by_its_pretrained_argument(tmp_path):
    _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    _results(tmp_path, "20260101_000000", {"model": "qwen2_5_vl", "model_args": "pretrained=Qwen/Qwen2.5-VL-7B"})
    (run,) = find_runs(str(tmp_path))
    assert run.label == "Qwen2.5-VL-7B"


def test_a_run_is_described_by_label_model_arguments_generation_arguments_and_software():
    run = LoggedRun("20260101_000000", Path("/runs"), tasks={"u": None, "t": None})
    run.label = "ckpt"
    run.results = Path("/runs/20260101_000000_results.json")
    run.settings = {
        "model": "qwen",
        "model_args": [("a", "1"), ("b", "2")],
        "gen_kwargs": [("temperature", "0"), ("top_p", "1")],
        "software": [["torch", "2.14.1"]],
    }
    assert _describe(run) == (
        "ckpt (qwen a=1,b=2 gen_kwargs temperature=0,top_p=1 on torch 2.14.1): "
        "/runs/20260101_000000_results.json, tasks t, u"
    )
    unknown = LoggedRun("20260101_000000", Path("/runs"), tasks={"t": None})
    assert _describe(unknown) == (
        "unknown model (no results file beside the samples): /runs/20260101_000000_samples_*.jsonl, tasks t"
    )


def test_runs_without_results_files_are_refused_naming_the_newest_run_s_samples_files_to_pick(tmp_path):
    _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    _write(tmp_path / "20260102_000000_samples_u.jsonl", [{"doc_id": 0, "resps": ["B"]}])
    _write(tmp_path / "20260102_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["B"]}])
    with pytest.raises(MixedRunsError) as raised:
        find_samples_files(str(tmp_path))
    newest = [tmp_path / "20260102_000000_samples_t.jsonl", tmp_path / "20260102_000000_samples_u.jsonl"]
    assert str(raised.value).endswith(f"(e.g. samples={newest[0]}{os.pathsep}{newest[1]})")
    assert "settings (no results file beside some of them says which model gave them), which would" in str(raised.value)


def test_several_paths_joined_by_the_path_separator_are_all_read(tmp_path):
    a = _write(tmp_path / "a" / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    b = _write(tmp_path / "b" / "20260101_000000_samples_u.jsonl", [{"doc_id": 0, "resps": ["B"]}])
    for folder in ("a", "b"):
        _results(tmp_path / folder, "20260101_000000")
    assert load_responses(find_samples_files(f"{a}{os.pathsep}{b}")) == {("t", 0): "A", ("u", 0): "B"}


def test_of_two_runs_of_one_stamp_the_later_folder_answers_and_a_warning_names_both(tmp_path, messages):
    """Runs sort by (stamp, folder): given as b then a, b's run is still the later one and answers."""
    a = tmp_path / "a"
    b = tmp_path / "b"
    fa = _write(a / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["from a"]}])
    fb = _write(b / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["from b"]}])
    ra, rb = _results(a, "20260101_000000"), _results(b, "20260101_000000")
    assert load_responses(find_samples_files(f"{b}{os.pathsep}{a}")) == {("t", 0): "from b"}
    assert ("WARNING", f"replay: task t is in {ra} and {rb} (same model and settings); using the newest, {fb}") in (
        messages
    )
    assert fa != fb


def test_a_missing_path_a_misnamed_file_and_a_results_file_without_samples_are_refused_by_name(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        find_runs(str(tmp_path / "nowhere"))
    assert str(raised.value) == f"replay: samples path {str(tmp_path / 'nowhere')!r} does not exist"
    odd = _write(tmp_path / "answers.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    with pytest.raises(ValueError) as raised:
        find_runs(odd)
    assert str(raised.value) == f"replay: {odd} is not named <date>_samples_<task>.jsonl"
    results = _results(tmp_path / "r", "20260101_000000")
    with pytest.raises(FileNotFoundError) as raised:
        find_runs(str(results))
    assert str(raised.value) == (f"replay: no samples files beside {results} (was the run made with --log_samples?)")


# --- the model --------------------------------------------------------------------------------------------------------


def test_a_replay_given_no_samples_is_refused():
    with pytest.raises(ValueError, match=r"^replay needs --model_args samples="):
        Replay()


def test_the_replay_says_how_many_responses_it_read_and_which_run_options_it_restored(tmp_path, monkeypatch, messages):
    monkeypatch.setenv("LMMS_SPATIAL_DORI_SEED", "")
    monkeypatch.delenv("LMMS_SPATIAL_DORI_SEED")  # unset; monkeypatch restores the original afterwards
    rows = [{"doc_id": i, "resps": ["A"], "accuracy": {"run_options": {"LMMS_SPATIAL_DORI_SEED": "42"}}}
            for i in range(2)]  # fmt: skip
    _write(tmp_path / "20260101_000000_samples_dori_x.jsonl", rows)
    Replay(samples=str(tmp_path))
    assert messages == [
        ("WARNING", "replay: LMMS_SPATIAL_DORI_SEED=42 restored from the samples (the answers were generated with it)"),
        ("INFO", "replay: 2 responses for tasks ['dori_x']"),
    ]


def test_the_current_document_id_is_read_from_the_request_s_split_and_only_from_a_dict_with_an_id(tmp_path):
    _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"], "input": "?"}])
    replay = Replay(samples=str(tmp_path))
    replay.task_dict = {"t": {"test": [{"id": 7}, {"no_id": 1}, "text"], "val": [{"id": "v0"}]}}
    assert replay._current_doc_key(_request("t", 0, "?")) == "7"  # the id as text
    assert replay._current_doc_key(_request("t", 0, "?", split="val")) == "v0"
    assert replay._current_doc_key(_request("t", 1, "?")) is None  # no id
    assert replay._current_doc_key(_request("t", 2, "?")) is None  # not a dict
    no_split = SimpleNamespace(task_name="t", doc_id=0, args=("?", None, {}, 0, "t", 3))
    assert replay._current_doc_key(no_split) is None  # the last argument is not a split name
    assert replay._current_doc_key(SimpleNamespace(task_name="t", doc_id=0, args=())) is None


def _without_prompts(tmp_path, rows, **kwargs) -> Replay:
    _write(tmp_path / "20260101_000000_samples_t.jsonl", rows)
    return Replay(samples=str(tmp_path), **kwargs)


def test_a_sample_logged_with_its_prompt_does_not_stop_the_document_check_of_the_next_ones(tmp_path):
    rows = [{"doc_id": 0, "resps": ["A"], "input": "Q0?"}, {"doc_id": 1, "resps": ["B"], "acc": {"id": "q1"}}]
    replay = _without_prompts(tmp_path, rows)
    replay.task_dict = {"t": {"test": [{"id": "q0"}, {"id": "moved"}]}}
    with pytest.raises(PromptMismatchError) as raised:
        replay.generate_until([_request("t", 0, "Q0?"), _request("t", 1, "Q1?")])
    assert str(raised.value) == (
        "replay: 1 of 2 logged answers belong to other documents, e.g. t doc_id 1 was answered for document 'q1' but "
        "is now document 'moved' (data changed or shifted). prompt_check=warn scores them anyway."
    )


def test_a_sample_whose_current_document_has_no_id_cannot_be_checked_and_is_refused(tmp_path):
    replay = _without_prompts(tmp_path, [{"doc_id": 0, "resps": ["A"], "acc": {"id": "q0"}}])
    replay.task_dict = {"t": {"test": [{"question": "no id"}]}}
    with pytest.raises(PromptMismatchError) as raised:
        replay.generate_until([_request("t", 0, "?")])
    assert str(raised.value) == (
        "replay: 1 of 1 samples carry neither their prompt ('input') nor a document id to check that they answer the "
        "current documents, e.g. t doc_id 0. prompt_check=warn scores them anyway, by position alone."
    )


def test_prompt_check_off_checks_nothing_and_says_nothing(tmp_path, messages):
    replay = _without_prompts(tmp_path, [{"doc_id": 0, "resps": ["A"], "input": "Q0?"}, {"doc_id": 1, "resps": ["B"]}],
                              prompt_check="off")  # fmt: skip
    messages.clear()
    assert replay.generate_until([_request("t", 0, "changed"), _request("t", 1, "?")]) == ["A", "B"]
    assert [m for m in messages if m[0] != "INFO"] == []


def test_a_prompt_that_only_grows_differs_where_the_shorter_one_ends_and_shows_30_before_and_50_after(tmp_path):
    logged = "x" * 40
    now = "x" * 40 + "0123456789" * 6  # differs at character 40: 30 characters shown before it, 50 from it
    replay = _without_prompts(tmp_path, [{"doc_id": 0, "resps": ["A"], "input": logged}])
    with pytest.raises(PromptMismatchError) as raised:
        replay.generate_until([_request("t", 0, now)])
    assert str(raised.value) == (
        f"replay: 1 of 1 prompts differ from the logged ones, e.g. t doc_id 0 at character 40: logged {'x' * 30!r}, "
        f"now {'x' * 30 + ('0123456789' * 5)!r}. The logged answers were given to other questions (changed data, "
        "option order or prompt). prompt_check=warn scores them anyway."
    )


def test_a_prompt_changed_in_the_middle_shows_its_neighbourhood_on_both_sides(tmp_path):
    logged = "a" * 35 + "L" + "b" * 60  # differs at 35: shown from 5 to 85
    now = "a" * 35 + "N" + "b" * 60
    replay = _without_prompts(tmp_path, [{"doc_id": 0, "resps": ["A"], "input": logged}])
    with pytest.raises(PromptMismatchError, match="at character 35: ") as raised:
        replay.generate_until([_request("t", 0, now)])
    assert f"logged {'a' * 30 + 'L' + 'b' * 49!r}, now {'a' * 30 + 'N' + 'b' * 49!r}." in str(raised.value)


def test_a_refusal_of_many_missing_documents_names_the_first_ten(tmp_path):
    replay = _without_prompts(tmp_path, [{"doc_id": 0, "resps": ["A"], "input": "?"}])
    with pytest.raises(MissingResponsesError) as raised:
        replay.generate_until([_request("t", i, "?") for i in range(12, 0, -1)])
    assert str(raised.value) == (
        "replay: no logged response for 12 requests — t: 12 docs, e.g. doc_id [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    )
