"""The checks of lmms-eval's flags for runs of ours (``lmms_spatial.plugin.cli``), one rule at a time."""

from __future__ import annotations

import socket
import types

import pytest

from lmms_spatial.plugin import cli

SEEDS = [0, 1234, 1234, 1234]  # argparse's default for --seed


def _args(**given):
    base = dict(tasks="mmsi_vanilla", config=None, seed=list(SEEDS), num_fewshot=None, fewshot_as_multiturn=False,
                apply_chat_template=False, system_instruction=None, check_integrity=False, launcher_args=None,
                cache_requests=None, repeats=1, baseline=None, hf_hub_log_args="", output_path=None,
                log_samples_suffix="model_outputs")  # fmt: skip
    return types.SimpleNamespace(**{**base, **given})


def test_a_run_names_ours_by_a_task_group_or_tag_in_a_string_or_a_list():
    assert cli.names_ours("mmsi_vanilla") == ["mmsi_vanilla"]
    assert cli.names_ours("mme, mmsi") == ["mmsi"]  # a group of ours among lmms-eval's tasks
    assert cli.names_ours(["mme", "dori"]) == ["dori"]  # a config file's YAML list
    assert not cli.names_ours("mme,mmmu_val")
    assert not cli.names_ours(None)


def test_a_config_file_list_of_tasks_and_a_single_seed_are_named_with_what_to_write():
    args = _args(config="runs.yaml", tasks=["mmsi_vanilla", " dori "], seed=42)
    assert cli.config_mistakes(args) == [
        "tasks: in --config runs.yaml is a YAML list; lmms-eval reads a comma-separated string (it calls .split on "
        'it): write tasks: "mmsi_vanilla,dori"',
        "seed: 42 in --config runs.yaml is not the four seeds lmms-eval indexes (python's random, numpy, torch, "
        "few-shot sampling): write seed: [0, 1234, 1234, 1234] (or drop it for those defaults)",
    ]
    assert cli.config_mistakes(_args(config="runs.yaml", seed="0,1,2,3"))  # a string: lmms-eval would index its chars
    assert cli.config_mistakes(_args(config="runs.yaml", seed=[1, 2, 3]))  # three
    assert cli.config_mistakes(_args(config="runs.yaml", tasks="mmsi_vanilla,dori", seed=(1, 2, 3, None))) == []
    assert cli.refusals(_args(tasks=["mmsi"], seed=42)) == []  # no config file: argparse parsed both


@pytest.mark.parametrize(
    ("given", "starts"),
    [
        ({"num_fewshot": 2}, "--num_fewshot 2: our tasks are zero-shot"),
        ({"fewshot_as_multiturn": True}, "--fewshot_as_multiturn: our tasks are zero-shot"),
        ({"num_fewshot": 1, "fewshot_as_multiturn": True}, "--num_fewshot 1 --fewshot_as_multiturn: our tasks"),
        ({"apply_chat_template": True}, "--apply_chat_template is for lmms-eval's text-only tasks"),
        ({"system_instruction": "Be brief."}, "--system_instruction is glued in front of the paper's prompt"),
        ({"check_integrity": True}, "--check_integrity runs lmms-eval's own test suite"),
        ({"launcher_args": "name=sglang"}, "--launcher_args starts lmms-eval's judge server"),
        ({"cache_requests": "true"}, "--cache_requests true reuses the requests"),
        ({"repeats": 2}, "-n/--repeats 2: our scorers read one reply per question"),
        ({"baseline": "qwen25vl"}, "--baseline qwen25vl: lmms-eval scores the baseline's samples"),
    ],
)
def test_each_flag_that_cannot_give_the_papers_protocol_is_one_line(given, starts):
    [line] = cli.flag_mistakes(_args(**given))
    assert line.startswith(starts)


@pytest.mark.parametrize(
    "given",
    [
        {"num_fewshot": 0},
        {"cache_requests": "refresh"},
        {"cache_requests": "delete"},
        {"repeats": 1},
        {"system_instruction": ""},
        {"launcher_args": ""},
    ],
)
def test_the_values_that_change_nothing_pass(given):
    assert cli.flag_mistakes(_args(**given)) == []


def test_every_refused_flag_of_one_run_is_said():
    args = _args(num_fewshot=3, apply_chat_template=True, system_instruction="x", check_integrity=True,
                 launcher_args="name=x", cache_requests="TRUE", repeats=5, baseline="b.jsonl")  # fmt: skip
    assert len(cli.flag_mistakes(args)) == 8


def test_hub_arguments_are_read_as_lmms_eval_reads_them():
    assert cli.parse_model_args("hub_results_org=me, push_results_to_hub=True,") == {
        "hub_results_org": "me", "push_results_to_hub": "True"}  # fmt: skip
    assert cli.parse_model_args(None) == {}
    assert cli.pushes({"push_samples_to_hub": "true"}) and cli.pushes({"push_results_to_hub": "1"})
    assert not cli.pushes({"push_results_to_hub": "False", "hub_results_org": "me"})


def test_a_push_is_checked_for_a_token_then_offline_then_the_hub(monkeypatch):
    push = "hub_results_org=me,push_results_to_hub=True"
    assert cli.hub_problem(_args(hf_hub_log_args="hub_results_org=me"), {}) is None  # nothing to push
    assert "HF_TOKEN is not set" in cli.hub_problem(_args(hf_hub_log_args=push), {})
    offline = cli.hub_problem(_args(hf_hub_log_args=push), {"HF_TOKEN": "t", "HF_HUB_OFFLINE": "1"})
    assert "HF_HUB_OFFLINE is set" in offline
    asked = []
    monkeypatch.setattr(cli, "_reachable", lambda endpoint: asked.append(endpoint) or "h:443: refused")
    unreachable = cli.hub_problem(_args(hf_hub_log_args=push + ",token=t"), {"HF_HUB_OFFLINE": "0"})
    assert "which cannot be reached from here (h:443: refused)" in unreachable
    assert asked == ["https://huggingface.co"]
    monkeypatch.setattr(cli, "_reachable", lambda endpoint: asked.append(endpoint) and None)
    assert cli.hub_problem(_args(hf_hub_log_args=push), {"HF_TOKEN": "t", "HF_ENDPOINT": "http://hub:8080"}) is None
    assert asked[-1] == "http://hub:8080"


def test_the_hub_is_reachable_when_a_connection_opens():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert cli._reachable(f"http://127.0.0.1:{port}") is None
    reason = cli._reachable(f"http://127.0.0.1:{port}", timeout=2)
    assert reason.startswith(f"127.0.0.1:{port}: ")


def test_a_json_output_path_and_a_samples_suffix_are_said():
    said = cli.notices(_args(output_path="out/r.json", log_samples_suffix="mine"))
    assert said == [
        "--output_path out/r.json is a folder for lmms-eval: the results and samples files go into out/r.json/ "
        "(<date>_results.json, <date>_samples_<task>.jsonl)",
        "--log_samples_suffix mine does nothing in lmms-eval 0.7.x: samples files are named "
        "<date>_samples_<task>.jsonl",
    ]
    assert cli.notices(_args(output_path="out/runs")) == []  # lmms-eval's default suffix: nothing to say


def test_the_push_command_names_the_repository_lmms_eval_would_have_pushed_to():
    tracker = types.SimpleNamespace(public_repo=False, results_repo="me/r", results_repo_private="me/r-private",
                                    general_config_tracker=types.SimpleNamespace(model_name="qwen"))  # fmt: skip
    assert cli.push_command(tracker, "/o/20261128_results.json") == (
        "hf upload me/r-private /o/20261128_results.json qwen/20261128_results.json --repo-type dataset --private"
    )
    tracker.public_repo, tracker.general_config_tracker.model_name = True, ""
    assert cli.push_command(tracker, "/o/x_results.json") == "hf upload me/r /o/x_results.json x_results.json " \
                                                             "--repo-type dataset"  # fmt: skip


# --- the wrapper ----------------------------------------------------------------------------------------------------


def _wrapped(calls: list, raises: BaseException | None = None):
    def cli_evaluate_single(args=None):
        calls.append(args)
        if raises is not None:
            raise raises
        return "results", "samples"

    return cli._cli_evaluate_single(cli_evaluate_single)


@pytest.fixture
def said(monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(cli.failures, "add_line", lines.append)
    return lines


def test_a_run_with_none_of_our_tasks_is_left_as_lmms_eval_runs_it(said):
    calls = []
    args = _args(tasks="mme", num_fewshot=5)
    assert _wrapped(calls)(args) == ("results", "samples")
    assert calls == [args] and said == []


def test_a_refused_run_of_ours_never_reaches_lmms_eval_and_exits_1_after_its_lines(said):
    calls = []
    with pytest.raises(SystemExit) as stopped:
        _wrapped(calls)(_args(num_fewshot=2, repeats=3))
    assert stopped.value.code == 1 and calls == []
    assert [line.split(":")[1].strip() for line in said] == ["--num_fewshot 2", "-n/--repeats 3"]


def test_a_push_that_fails_after_the_results_are_written_exits_1_with_one_line(said, monkeypatch):
    from lmms_spatial import run_state

    push = "hub_results_org=me,push_results_to_hub=True"
    monkeypatch.setattr(cli, "hub_problem", lambda args, environ=None: None)
    monkeypatch.setattr(run_state.STATE, "push_failure_said", False)  # restored after the test, as written_for_hub
    failing = _wrapped([], raises=ConnectionError("hub gone"))
    monkeypatch.setattr(run_state.STATE, "written_for_hub", ("/o/r.json", "hf upload x"))
    with pytest.raises(ConnectionError):  # nothing written yet (the wrapper forgets an earlier run's): lmms-eval's
        failing(_args(hf_hub_log_args=push))

    def writes_then_fails(args=None):
        run_state.STATE.written_for_hub = ("/o/r.json", "hf upload me/r /o/r.json r.json --repo-type dataset")
        raise ConnectionError("hub gone")

    with pytest.raises(SystemExit) as stopped:
        cli._cli_evaluate_single(writes_then_fails)(_args(hf_hub_log_args=push))
    assert stopped.value.code == 1
    assert said == [
        "lmms-spatial: the results are written (/o/r.json) but were not pushed to the Hub (ConnectionError: hub gone): "
        "push them with hf upload me/r /o/r.json r.json --repo-type dataset"
    ]

    def said_already(args=None):
        run_state.STATE.written_for_hub = ("/o/r.json", "hf upload x")
        run_state.STATE.push_failure_said = True
        raise ConnectionError("again")

    said.clear()
    with pytest.raises(SystemExit):
        cli._cli_evaluate_single(said_already)(_args(hf_hub_log_args=push))
    assert said == []  # the push's first failure was the line
