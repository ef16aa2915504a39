"""Reading lmms-eval 0.7.x samples files for the replay model."""

import json

import pytest

from lmms_spatial.models.replay import find_samples_files, load_responses


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_raw_resps_win_over_filtered_ones(tmp_path):
    f = _write(
        tmp_path / "20260101_000000_samples_mmsi_vanilla.jsonl",
        [
            {"doc_id": 0, "resps": [["<think>x</think>``B``"]], "filtered_resps": ["``B``"]},
            {"doc_id": 1, "filtered_resps": ["C"]},  # lmms-eval drops resps when equal
            {"doc_id": 2, "filtered_resps": "D"},
        ],
    )
    responses = load_responses(find_samples_files(str(f)))
    assert responses == {
        ("mmsi_vanilla", 0): "<think>x</think>``B``",
        ("mmsi_vanilla", 1): "C",
        ("mmsi_vanilla", 2): "D",
    }


def _results(folder, stamp, model="random_choice", model_args="seed=0", **config):
    """The ``<stamp>_results.json`` lmms-eval writes beside a run's samples: what the replay reads of it."""
    folder.mkdir(parents=True, exist_ok=True)
    body = {"config": {"model": model, "model_args": model_args, "gen_kwargs": "", "random_seed": 0, **config}}
    (folder / f"{stamp}_results.json").write_text(json.dumps(body))
    return folder / f"{stamp}_results.json"


def test_a_folder_is_searched_and_the_task_comes_from_the_file_name(tmp_path):
    (tmp_path / "model").mkdir()
    _write(tmp_path / "model" / "20260101_000000_samples_mmsi_circular.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    _write(tmp_path / "20260101_000000_samples_mmsi_cot.jsonl", [{"doc_id": 0, "resps": ["B"]}])
    _results(tmp_path / "model", "20260101_000000")
    _results(tmp_path, "20260101_000000")
    assert sorted(find_samples_files(str(tmp_path))) == ["mmsi_circular", "mmsi_cot"]


def test_of_two_runs_of_one_model_with_the_same_settings_the_newest_answers_a_task(tmp_path):
    _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["old"]}])
    _write(tmp_path / "20260102_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["new"]}])
    _results(tmp_path, "20260101_000000", model_args="seed=0,device=cpu")
    _results(tmp_path, "20260102_000000", model_args="device=cpu,seed=0")  # the same arguments, in another order
    assert load_responses(find_samples_files(str(tmp_path))) == {("t", 0): "new"}


def test_the_shards_of_one_run_are_joined_and_a_document_answered_twice_is_the_newest_runs(tmp_path):
    """A run split with --offset/--limit over a job array: each shard answers its own documents; a later run that
    answers some of them again (a shard re-run) wins for those, and an older shard holding any of them is left out."""
    for shard in ("a", "b"):
        (tmp_path / shard).mkdir()
    _write(tmp_path / "a" / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["A0"]},
                                                               {"doc_id": 1, "resps": ["A1"]}])  # fmt: skip
    _write(tmp_path / "b" / "20260101_000100_samples_t.jsonl", [{"doc_id": 2, "resps": ["B2"]}])
    _results(tmp_path / "a", "20260101_000000")
    _results(tmp_path / "b", "20260101_000100")
    files = find_samples_files(str(tmp_path))
    assert files == {"t": [tmp_path / "b" / "20260101_000100_samples_t.jsonl",
                           tmp_path / "a" / "20260101_000000_samples_t.jsonl"]}  # fmt: skip
    assert load_responses(files) == {("t", 0): "A0", ("t", 1): "A1", ("t", 2): "B2"}
    # shard a again, later, for document 1 only: the first shard a overlaps it and is left out (newest wins)
    (tmp_path / "c").mkdir()
    _write(tmp_path / "c" / "20260101_000200_samples_t.jsonl", [{"doc_id": 1, "resps": ["C1"]}])
    _results(tmp_path / "c", "20260101_000200")
    assert load_responses(find_samples_files(str(tmp_path))) == {("t", 1): "C1", ("t", 2): "B2"}


def test_runs_of_different_models_or_seeds_in_one_folder_are_refused_naming_each_run_and_how_to_pick_one(tmp_path):
    from lmms_spatial.models.replay import MixedRunsError
    from lmms_spatial.plugin.failures import RunRefused

    for stamp, task in (("20260101_000000", "mmsi_vanilla"), ("20260102_000000", "mmsi_vanilla"),
                        ("20260103_000000", "odi_x"), ("20260101_000000", "odi_x")):  # fmt: skip
        _write(tmp_path / f"{stamp}_samples_{task}.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    first = _results(tmp_path, "20260101_000000", model_args="seed=0")
    second = _results(tmp_path, "20260102_000000", model_args="seed=1")
    third = _results(tmp_path, "20260103_000000", model="slow_guess", model_args="seed=7")
    with pytest.raises(MixedRunsError) as refused:
        find_samples_files(str(tmp_path))
    assert isinstance(refused.value, RunRefused)  # the whole last line of the run, exit 1
    assert str(refused.value) == (
        f"replay: samples={tmp_path} holds 3 runs of different models or settings (model, model_args), which "
        f"would be scored as one model: random_choice (random_choice seed=0): {first}, tasks mmsi_vanilla, odi_x; "
        f"random_choice (random_choice seed=1): {second}, tasks mmsi_vanilla; slow_guess (slow_guess seed=7): "
        f"{third}, tasks odi_x. Point samples= at one run: its folder, its _results.json or its samples files "
        f"(e.g. samples={third})"
    )


def test_sources_keep_reads_only_the_runs_holding_a_wanted_task_and_only_those_tasks(tmp_path):
    from lmms_spatial.models.replay import MixedRunsError, sources

    _write(tmp_path / "20260101_000000_samples_dori_a.jsonl", [{"doc_id": 0, "resps": ["A"]}])
    _write(tmp_path / "20260101_000000_samples_mmsi_vanilla.jsonl", [{"doc_id": 0, "resps": ["B"]}])
    _write(tmp_path / "20260102_000000_samples_mmsi_vanilla.jsonl", [{"doc_id": 0, "resps": ["C"]}])
    first = _results(tmp_path, "20260101_000000", model_args="seed=0")
    other = _results(tmp_path, "20260102_000000", model="slow_guess", model_args="seed=7")  # no DORI task
    with pytest.raises(MixedRunsError) as refused:
        sources(str(tmp_path), given="<{spec}>", fix="Fix with {example}.")  # every run compared, in these words
    assert str(refused.value).startswith(f"<{tmp_path}> holds 2 runs of different models or settings (model, ")
    assert str(refused.value).endswith(f"tasks mmsi_vanilla. Fix with {other}.")
    chosen = sources(str(tmp_path), keep=lambda task: task.startswith("dori_"))
    assert list(chosen) == ["dori_a"] and chosen["dori_a"].results == first
    assert chosen["dori_a"].tasks == {"dori_a": tmp_path / "20260101_000000_samples_dori_a.jsonl"}  # its MMSI left
    assert sources(str(tmp_path), keep=lambda task: task.startswith("osr_")) == {}


def test_a_refusal_says_what_was_given_and_the_fix_in_the_callers_words(tmp_path):
    from lmms_spatial.models.replay import MixedRunsError, check_one_model, find_runs

    for stamp, seed in (("20260101_000000", "seed=0"), ("20260102_000000", "seed=1")):
        _write(tmp_path / f"{stamp}_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"]}])
        second = _results(tmp_path, stamp, model_args=seed)
    runs = find_runs(str(tmp_path))
    with pytest.raises(MixedRunsError) as refused:
        check_one_model("SPEC", runs, given="<{spec}>", fix="Do this with {example}.")
    message = str(refused.value)
    assert message.startswith("<SPEC> holds 2 runs of different models or settings (model_args), which would be ")
    assert message.endswith(f"tasks t. Do this with {second}.")


def test_runs_whose_model_is_unknown_are_not_mixed_either(tmp_path):
    from lmms_spatial.models.replay import MixedRunsError

    _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["old"]}])
    _write(tmp_path / "20260102_000000_samples_t.jsonl", [{"doc_id": 0, "resps": ["new"]}])
    with pytest.raises(MixedRunsError, match=r"no results file beside some of them says which model gave them"):
        find_samples_files(str(tmp_path))
    one = str(tmp_path / "20260101_000000_samples_t.jsonl")  # one run, named by its samples file
    assert load_responses(find_samples_files(one)) == {("t", 0): "old"}


def test_a_results_file_picks_its_run_out_of_a_folder_of_several(tmp_path):
    for stamp, answer in (("20260101_000000", "A"), ("20260102_000000", "B")):
        for task in ("t", "u"):
            _write(tmp_path / f"{stamp}_samples_{task}.jsonl", [{"doc_id": 0, "resps": [answer]}])
    first = _results(tmp_path, "20260101_000000", model_args="seed=0")
    _results(tmp_path, "20260102_000000", model_args="seed=1")
    assert load_responses(find_samples_files(str(first))) == {("t", 0): "A", ("u", 0): "A"}


def test_a_line_that_is_not_a_sample_fails_with_its_location(tmp_path):
    f = _write(tmp_path / "20260101_000000_samples_t.jsonl", [{"no_doc_id": 1}])
    with pytest.raises(ValueError, match=r"samples_t.jsonl:1"):
        load_responses(find_samples_files(str(f)))


def _request(task, doc_id, prompt):
    from types import SimpleNamespace

    return SimpleNamespace(task_name=task, doc_id=doc_id, args=(prompt, None, {}, doc_id, task, "test"))


def _replay_of(tmp_path, **model_args):
    from lmms_spatial.models.replay import Replay

    _write(tmp_path / "20260101_000000_samples_t.jsonl",
           [{"doc_id": 0, "resps": ["A"], "input": "Which way?\nA. left\nB. right"}])  # fmt: skip
    return Replay(samples=str(tmp_path), **model_args)


def test_a_request_with_the_logged_prompt_gets_the_logged_answer(tmp_path):
    assert _replay_of(tmp_path).generate_until([_request("t", 0, "Which way?\nA. left\nB. right")]) == ["A"]


def test_a_request_whose_prompt_changed_fails_naming_the_task_doc_and_place(tmp_path):
    from lmms_spatial.models.replay import PromptMismatchError

    with pytest.raises(PromptMismatchError, match=r"1 of 1 prompts differ .* t doc_id 0 at character 14"):
        _replay_of(tmp_path).generate_until([_request("t", 0, "Which way?\nA. right\nB. left")])


def test_prompt_check_warn_scores_a_changed_prompt_anyway(tmp_path):
    assert _replay_of(tmp_path, prompt_check="warn").generate_until([_request("t", 0, "Other?")]) == ["A"]


def test_replay_restores_the_run_options_recorded_in_the_score_records(tmp_path, monkeypatch):
    import os

    from lmms_spatial.models.replay import Replay

    monkeypatch.setenv("LMMS_SPATIAL_DORI_SEED", "")  # unset for replay; monkeypatch undoes what replay sets
    record = {"granularity": "coarse", "option_seed": "42", "run_options": {"LMMS_SPATIAL_DORI_SEED": "42"}}
    _write(tmp_path / "20260101_000000_samples_dori_x.jsonl", [{"doc_id": 0, "resps": ["A"], "accuracy": record}])
    Replay(samples=str(tmp_path))
    assert os.environ["LMMS_SPATIAL_DORI_SEED"] == "42"


def test_a_samples_file_whose_records_disagree_on_run_options_fails(tmp_path):
    from lmms_spatial.run_options import RunOptionsConflict

    rows = [{"doc_id": i, "resps": ["A"], "accuracy": {"run_options": {"LMMS_SPATIAL_DORI_SEED": s}}}
            for i, s in enumerate(["42", "7"])]  # fmt: skip
    f = _write(tmp_path / "20260101_000000_samples_dori_x.jsonl", rows)
    with pytest.raises(RunOptionsConflict, match="mixes run options"):
        load_responses(find_samples_files(str(f)))


def _replay_without_prompts(tmp_path, records, **model_args):
    from lmms_spatial.models.replay import Replay

    _write(tmp_path / "20260101_000000_samples_t.jsonl", records)
    return Replay(samples=str(tmp_path), **model_args)


# logged without ``input``: answers 0..3 were given to documents q0..q3
LOGGED = [{"doc_id": i, "resps": [["ABCD"[i]]], "accuracy": {"id": f"q{i}", "score": 1.0}} for i in range(4)]


def test_without_a_logged_prompt_the_document_id_in_the_record_must_match_the_current_document(tmp_path):
    replay = _replay_without_prompts(tmp_path, LOGGED)
    replay.task_dict = {"t": {"test": [{"id": f"q{i}"} for i in range(4)]}}
    assert replay.generate_until([_request("t", i, "?") for i in range(4)]) == ["A", "B", "C", "D"]


def test_shifted_documents_are_refused_instead_of_scoring_answers_against_other_questions(tmp_path):
    from lmms_spatial.models.replay import PromptMismatchError

    replay = _replay_without_prompts(tmp_path, LOGGED)
    replay.task_dict = {"t": {"test": [{"id": f"q{i + 1}"} for i in range(4)]}}  # one document dropped in front
    with pytest.raises(PromptMismatchError, match=r"4 of 4 logged answers belong to other documents.*'q0'.*'q1'"):
        replay.generate_until([_request("t", i, "?") for i in range(4)])


def test_a_sample_with_neither_prompt_nor_document_id_is_refused_unless_warned(tmp_path):
    from lmms_spatial.models.replay import PromptMismatchError

    bare = [{"doc_id": 0, "resps": [["A"]]}]
    with pytest.raises(PromptMismatchError, match="neither their prompt"):
        _replay_without_prompts(tmp_path, bare).generate_until([_request("t", 0, "?")])
    assert _replay_without_prompts(tmp_path, bare, prompt_check="warn").generate_until([_request("t", 0, "?")]) == ["A"]


def test_answers_of_one_model_on_different_transformers_are_two_runs_never_one(tmp_path):
    """The same model and arguments, run under transformers 4.57.1 and 5.24.0: numbers move with the software, so the
    folder is refused, each run named with its versions."""
    import json

    from lmms_spatial.models.replay import MixedRunsError

    for stamp, transformers in (("20260101_000000", "4.57.1"), ("20260102_000000", "5.24.0")):
        _write(tmp_path / f"{stamp}_samples_t.jsonl", [{"doc_id": 0, "resps": ["A"]}])
        path = _results(tmp_path, stamp, model_args="seed=0")
        data = json.loads(path.read_text())
        env = {"packages": {"lmms-eval": "0.7.3", "transformers": transformers, "torch": "2.14.1"}}
        path.write_text(json.dumps({**data, "lmms_spatial": {"environment": env}}))
    with pytest.raises(MixedRunsError) as refused:
        find_samples_files(str(tmp_path))
    message = str(refused.value)
    assert "holds 2 runs of different models or settings (software)" in message
    assert "(random_choice seed=0 on lmms-eval 0.7.3, transformers 4.57.1, torch 2.14.1)" in message
    assert "(random_choice seed=0 on lmms-eval 0.7.3, transformers 5.24.0, torch 2.14.1)" in message
