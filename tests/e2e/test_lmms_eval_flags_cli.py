"""lmms-eval 0.7.3's command-line flags with our tasks: each row of docs/running.md's flag table, through the real CLI.

A flag works as on one of lmms-eval's own tasks, works with what it really does said in one line, or is refused
before anything loads in one line naming the fix (``lmms_spatial/plugin/cli.py``). Runs of ``random_choice`` on the
MMSI-Bench fixture (12 questions); flags that fail the same way share one refused run, each with its own line.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import socket
import threading
from pathlib import Path

import forkserver
import pytest
import yaml

pytestmark = pytest.mark.slow

TASK = "mmsi_vanilla"
FIXTURE_QUESTIONS = 12  # the MMSI-Bench fixture's questions (lmms_spatial/tasks/mmsi/demo.py)


def _lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("lmms-spatial: ")]


def _results_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*_results.json"))


def test_flags_that_work_on_our_tasks_as_on_lmms_evals_own(lmms_eval, fixture_datasets):
    run = lmms_eval(
        "--model", "random_choice", "--tasks", TASK, "--limit", "3", "--offset", "10",
        "--batch_size", "2", "--max_batch_size", "4", "--device", "cpu", "--num_fewshot", "0",
        "--cache_requests", "delete", "--write_out", "--show_config", "--timezone", "UTC",
        "--trust_remote_code", "--process_with_media", "--process_docs_parallel", "1",
        "--agentic_trace_mode", "full", "--force_simple", "--max_tokens", "1",
        "--reasoning_tags", '[["<think>", "</think>"]]', "--log_samples_suffix", "mine",
        "--swanlab_args", "project=p,mode=disabled", "--swanlab_log_samples",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    # --offset 10 --limit 3 on 12 questions: questions 10 and 11, and the record says 2, not lmms-eval's "effective" 3
    assert [s["doc_id"] for s in run.samples[TASK]] == [10, 11]
    assert run.results["n-samples"][TASK] == {"original": FIXTURE_QUESTIONS, "effective": 3}
    record = run.results["lmms_spatial"]["tasks"][TASK]
    assert (record["documents"], record["of"]) == (2, FIXTURE_QUESTIONS)
    # --max_tokens 1: lmms-eval checks its budget between request types; ours have one, so every question is scored
    assert all(s["accuracy"]["score"] in (0.0, 1.0) for s in run.samples[TASK])
    # --show_config prints the task's config naming the data the run read, not lmms-eval's placeholder
    assert f'"dataset_path": "{fixture_datasets["mmsi"]}"' in run.stdout
    assert "placeholder.jsonl" not in run.stdout
    config = run.results["configs"][TASK]
    assert config["metadata"]["data"]["mmsi"]["source"] == str(fixture_datasets["mmsi"])
    # --write_out: lmms-eval's deprecated print of the prompt of document 0 (not in this run: --offset 10)
    assert "DEPRECATION WARNING: --write_out is deprecated" in run.stdout
    # --timezone UTC names the files by UTC's clock (lmms-eval's default is Asia/Singapore)
    stamp = _results_files(run.out)[-1].name[: len("20261128_224954")]
    named = dt.datetime.strptime(stamp, "%Y%m%d_%H%M%S").replace(tzinfo=dt.timezone.utc)
    assert abs((dt.datetime.now(dt.timezone.utc) - named).total_seconds()) < 600
    # --log_samples_suffix does nothing in lmms-eval 0.7.x: said, and the samples file has its usual name
    assert any("--log_samples_suffix mine does nothing" in line for line in _lines(run.stderr))
    assert [f.name for f in run.out.rglob("*_samples_*.jsonl")] == [f"{stamp}_samples_{TASK}.jsonl"]


REFUSED = {  # flag(s) -> what its line says (one line each, all in one run)
    ("--num_fewshot", "2", "--fewshot_as_multiturn"): "--num_fewshot 2 --fewshot_as_multiturn: our tasks are zero-shot",
    ("--apply_chat_template",): "--apply_chat_template is for lmms-eval's text-only tasks",
    ("--system_instruction", "Be brief."): "--system_instruction is glued in front of the paper's prompt",
    ("--check_integrity",): "--check_integrity runs lmms-eval's own test suite",
    ("--launcher_args", "name=sglang"): "--launcher_args starts lmms-eval's judge server",
    ("--repeats", "3"): "-n/--repeats 3: our scorers read one reply per question",
    ("--baseline", "qwen25vl"): "--baseline qwen25vl: lmms-eval scores the baseline's samples by matching the raw",
    ("--cache_requests", "true"): "--cache_requests true reuses the requests lmms-eval saved under a task's name",
    ("--hf_hub_log_args", "hub_results_org=me,push_results_to_hub=True"): "pushes to the Hub, and HF_TOKEN is not set",
}


def test_flags_that_cannot_give_the_papers_protocol_are_refused_before_anything_loads(
    lmms_eval_with_env, offline_env, tmp_path
):
    env = {k: v for k, v in offline_env.items() if k != "HF_TOKEN"}
    flags = [part for key in REFUSED for part in key]
    run = lmms_eval_with_env(env, tmp_path / "out", "--model", "random_choice", "--tasks", TASK, *flags,
                             expect_results=False)  # fmt: skip
    assert run.returncode == 1
    lines = _lines(run.stderr)
    for said in REFUSED.values():
        assert sum(said in line for line in lines) == 1, (said, lines)
    assert len(lines) == len(REFUSED), lines  # nothing else: the run never started (no answer store announced)
    assert "Traceback" not in run.stderr


def _run_cli(args: list[str], env: dict[str, str], cwd: Path) -> forkserver.Done:
    return forkserver.run_module("lmms_eval", args, env, cwd=cwd, timeout=600)


def test_a_config_file_lmms_eval_would_misread_is_refused_naming_each_key(offline_env, tmp_path):
    config = tmp_path / "runs.yaml"
    run = {
        "model": "random_choice",
        "tasks": [TASK, "dori_view_parallelism_coarse"],
        "seed": 42,
        "output_path": str(tmp_path / "out"),
        "log_samples": True,
    }
    config.write_text(yaml.safe_dump(run))
    done = _run_cli(["--config", str(config)], offline_env, tmp_path)
    assert done.returncode == 1
    assert _lines(done.stderr) == [
        f"lmms-spatial: tasks: in --config {config} is a YAML list; lmms-eval reads a comma-separated string (it calls "
        f'.split on it): write tasks: "{TASK},dori_view_parallelism_coarse"',
        f"lmms-spatial: seed: 42 in --config {config} is not the four seeds lmms-eval indexes (python's random, numpy, "
        "torch, few-shot sampling): write seed: [0, 1234, 1234, 1234] (or drop it for those defaults)",
    ]
    assert not (tmp_path / "out").exists()


def test_a_config_of_two_runs_says_where_a_json_output_path_and_a_db_use_cache_put_their_files(offline_env, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    runs = [
        {"model": "random_choice", "tasks": TASK, "limit": 2, "output_path": str(tmp_path / "out" / "myres.json"),
         "log_samples": True, "use_cache": str(store / "legacy.db")},
        {"model": "random_choice", "tasks": "dori_view_parallelism_coarse", "limit": 1,
         "output_path": str(tmp_path / "dori"), "log_samples": True},
    ]  # fmt: skip
    config = tmp_path / "runs.yaml"
    config.write_text(yaml.safe_dump(runs))
    done = _run_cli(["--config", str(config)], offline_env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = tmp_path / "out" / "myres.json"  # lmms-eval makes it a folder: said, and the files are there
    assert len(_results_files(folder)) == 1 and len(_results_files(tmp_path / "dori")) == 1
    lines = _lines(done.stderr)
    assert f"lmms-spatial: --output_path {folder} is a folder for lmms-eval: the results and samples files go into " \
           f"{folder}/ (<date>_results.json, <date>_samples_<task>.jsonl)" in lines  # fmt: skip
    # --use_cache x.db: lmms-eval 0.7.3 keeps cache.db and runs/ in the file's folder, and the line names that folder
    assert f"lmms-spatial: answers are kept in {store} as they come (--use_cache {store / 'legacy.db'}: lmms-eval " \
           "keeps cache.db and runs/ in that file's folder); the same command run again asks the model only for " \
           "the missing ones" in lines  # fmt: skip
    assert (store / "cache.db").is_file() and not (store / "legacy.db").exists()
    assert (tmp_path / "dori" / "cache" / "cache.db").is_file()  # the second run: its own default store
    assert not (tmp_path / "out" / "cache").exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_hub_push_the_hub_cannot_take_is_refused_before_anything_loads(lmms_eval_with_env, offline_env, tmp_path):
    """A token, online, and no Hub at the endpoint (no token and HF_HUB_OFFLINE set are refused the same way:
    the refused run above and tests/plugin/test_cli_flags_units.py)."""
    port = _closed_port()
    env = {k: v for k, v in offline_env.items() if k != "HF_HUB_OFFLINE"}
    env.update(HF_TOKEN="hf_x", HF_ENDPOINT=f"http://127.0.0.1:{port}")
    push = ["--hf_hub_log_args", "hub_results_org=me,push_results_to_hub=True"]
    run = lmms_eval_with_env(env, tmp_path / "out", "--model", "random_choice", "--tasks", TASK, *push,
                             expect_results=False)  # fmt: skip
    assert run.returncode == 1
    [line] = _lines(run.stderr)
    assert line.startswith("lmms-spatial: --hf_hub_log_args hub_results_org=me,push_results_to_hub=True pushes to "
                           f"the Hub, which cannot be reached from here (127.0.0.1:{port}: ")  # fmt: skip
    assert line.endswith("run where it can, or drop push_results_to_hub/push_samples_to_hub and push the results "
                         "file later (hf upload)")  # fmt: skip


class _RefusingHub(http.server.BaseHTTPRequestHandler):
    """A Hub that answers every request 401 (a token without write access)."""

    def _refuse(self) -> None:
        body = b'{"error": "Invalid credentials in Authorization header"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_HEAD = _refuse

    def log_message(self, *args) -> None:
        pass


def test_a_push_that_fails_after_generation_exits_1_with_the_results_written_and_the_command(
    lmms_eval_with_env, offline_env, tmp_path
):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RefusingHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {k: v for k, v in offline_env.items() if k != "HF_HUB_OFFLINE"}
        env.update(HF_TOKEN="hf_x", HF_ENDPOINT=f"http://127.0.0.1:{server.server_address[1]}")
        run = lmms_eval_with_env(env, tmp_path / "out", "--model", "random_choice", "--tasks", TASK, "--limit", "2",
                                 "--hf_hub_log_args", "hub_results_org=me,push_results_to_hub=True")  # fmt: skip
    finally:
        server.shutdown()
    assert run.returncode == 1
    [results] = _results_files(run.out)
    assert run.results["results"][TASK]["accuracy,none"] in (0.0, 0.5, 1.0)  # written whole
    pushed = [line for line in _lines(run.stderr) if "not pushed to the Hub" in line]
    assert len(pushed) == 1, _lines(run.stderr)
    assert pushed[0].startswith(f"lmms-spatial: the results are written ({results}) but were not pushed to the Hub (")
    assert pushed[0].endswith(f"push them with hf upload me/lmms-eval-results-private {results} {results.name} "
                              "--repo-type dataset --private")  # fmt: skip


def test_wandb_logs_our_samples_and_names_the_data_the_run_read(lmms_eval, fixture_datasets, tmp_path):
    wandb_dir = tmp_path / "wandb"
    wandb_dir.mkdir()
    wandb = ["--wandb_args", f"project=p,name=n,mode=offline,dir={wandb_dir}", "--wandb_log_samples"]
    run = lmms_eval("--model", "random_choice", "--tasks", "mmsi", "--limit", "3", "--verbosity", "WARNING", *wandb)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Logging to Weights and Biases failed" not in run.stdout + run.stderr
    assert "| INFO " not in run.stdout  # --verbosity WARNING
    [offline_run] = list((wandb_dir / "wandb").glob("offline-run-*"))
    tables = {f.name.split("_eval_results_")[0]: json.loads(f.read_text())
              for f in (offline_run / "files" / "media" / "table").glob("*_eval_results_*.table.json")}  # fmt: skip
    assert set(tables) == {"mmsi_vanilla", "mmsi_circular", "mmsi_cot"}  # the group's three tasks; no group table
    table = tables["mmsi_vanilla"]
    columns = table["columns"]
    assert {"accuracy", "Positional Relationship (Cam.–Cam.)", "MSR", "unparsed_rate"} <= set(columns)
    samples = {s["doc_id"]: s for s in run.samples["mmsi_vanilla"]}
    assert [row[columns.index("id")] for row in table["data"]] == [0, 1, 2]
    for row in table["data"]:
        sample = samples[row[columns.index("id")]]
        assert row[columns.index("raw_predictions")] == sample["filtered_resps"]  # the whole reply, not its [0]
        assert row[columns.index("accuracy")] == sample["accuracy"]["score"]
        assert row[columns.index("data")] == sample["input"]
    # the run's config, as W&B keeps it, names the fixture the run read
    assert str(fixture_datasets["mmsi"]).encode() in next(offline_run.glob("run-*.wandb")).read_bytes()


def test_power_analysis_counts_our_tasks_questions(lmms_eval_with_env, offline_env, tmp_path):
    run = lmms_eval_with_env(offline_env, tmp_path / "out", "--tasks", TASK, "--power-analysis", "--effect-size",
                             "0.1", "--alpha", "0.05", "--power", "0.8", "--correlation", "0.5", "--std-a", "0.5",
                             "--std-b", "0.5", expect_results=False)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    # n = 2 (z_0.975 + z_0.8)^2 * 0.5^2 (1 - 0.5) / 0.1^2 = 2 * 7.849 * 0.125 / 0.01 = 196.2 -> 197
    assert "Minimum sample size:     n = 197" in run.stdout
    assert f"  {TASK}:\n    Sample size:         n = {FIXTURE_QUESTIONS}\n" in run.stdout
