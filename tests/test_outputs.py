"""A run's results and samples files (lmms_spatial.plugin.outputs), through lmms-eval's own EvaluationTracker:
runs of ours started in one second keep their own files, and a file that could not be written is a failure
naming the folder, never a 0-byte results file and exit 0. The CLI side: tests/e2e/test_outputs_cli.py."""

from __future__ import annotations

import errno
import json
import os
import pathlib

import pytest

from lmms_spatial.plugin import failures, outputs

SECOND = "20260101_000000"  # lmms-eval's get_datetime_str format: both runs started in this second
FULL = OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def tracker_module():
    import lmms_eval.loggers.evaluation_tracker as module

    outputs.patch_result_files(module)  # idempotent: the startup hook has normally done it already
    failures.reset()
    yield module
    failures.reset()


def _tracker(module, out):
    tracker = module.EvaluationTracker(output_path=str(out))
    tracker.general_config_tracker.model_name_sanitized = "m"
    return tracker


def _results(seed: int, ours: bool = True) -> dict:
    results = {"results": {"t": {"accuracy,none": seed / 10}}, "config": {"use_cache": "/kept/answers"}}
    if ours:
        results["lmms_spatial"] = {"schema": 1, "seed": seed}
    return results


def _samples(answers: list[str]) -> list[dict]:
    return [{"doc_id": i, "doc": {}, "doc_hash": str(i), "target": "A", "arguments": [(f"question {i}",)],
             "resps": [[a]], "filtered_resps": [a]} for i, a in enumerate(answers)]  # fmt: skip


def _save(module, out, seed, answers, ours=True):
    tracker = _tracker(module, out)
    tracker.save_results_aggregated(results=_results(seed, ours), samples=None, datetime_str=SECOND)
    tracker.save_results_samples(task_name="t", samples=_samples(answers))


def _lines(path) -> list[str]:
    return [json.loads(line)["filtered_resps"] for line in path.read_text().splitlines()]


def test_two_runs_of_ours_in_one_second_keep_their_own_results_and_samples(tracker_module, tmp_path):
    _save(tracker_module, tmp_path, 1, ["A", "B", "C"])
    _save(tracker_module, tmp_path, 2, ["D", "E"])
    folder = tmp_path / "m"
    # by name, the later run's files come last: sorted(glob("*_results.json"))[-1] is the newest run, and its samples
    assert sorted(p.name for p in folder.iterdir()) == [
        f"{SECOND}_results.json", f"{SECOND}_samples_t.jsonl", f"{SECOND}_take002_results.json",
        f"{SECOND}_take002_samples_t.jsonl",
    ]  # fmt: skip
    assert json.loads((folder / f"{SECOND}_results.json").read_text())["lmms_spatial"]["seed"] == 1
    assert json.loads((folder / f"{SECOND}_take002_results.json").read_text())["lmms_spatial"]["seed"] == 2
    assert _lines(folder / f"{SECOND}_samples_t.jsonl") == ["A", "B", "C"]  # 3 lines for 3 documents, not 5
    assert _lines(folder / f"{SECOND}_take002_samples_t.jsonl") == ["D", "E"]
    assert failures.lines() == []


def test_a_name_whose_samples_are_there_without_results_is_not_appended_to(tracker_module, tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / f"{SECOND}_samples_t.jsonl").write_text('{"left": "by a run that wrote no results"}\n')
    _save(tracker_module, tmp_path, 1, ["A"])
    assert (folder / f"{SECOND}_samples_t.jsonl").read_text() == '{"left": "by a run that wrote no results"}\n'
    assert _lines(folder / f"{SECOND}_take002_samples_t.jsonl") == ["A"]
    assert (folder / f"{SECOND}_take002_results.json").exists() and not (folder / f"{SECOND}_results.json").exists()


def test_the_name_is_taken_exclusively_so_two_processes_never_share_it(tmp_path):
    names = [outputs.reserve(tmp_path, SECOND) for _ in range(11)]
    assert names[:3] == [SECOND, f"{SECOND}_take002", f"{SECOND}_take003"] and names[-1] == f"{SECOND}_take011"
    assert all((tmp_path / f"{n}_results.json").stat().st_size == 0 for n in names)
    # in the order they were taken, by name: the tenth run's after the second's, every one after the first
    assert sorted(f"{n}_results.json" for n in names) == [f"{n}_results.json" for n in names]


def test_a_run_with_none_of_our_tasks_is_written_as_lmms_eval_writes_it(tracker_module, tmp_path):
    _save(tracker_module, tmp_path, 1, ["A", "B"], ours=False)
    _save(tracker_module, tmp_path, 2, ["C"], ours=False)
    folder = tmp_path / "m"
    assert sorted(p.name for p in folder.iterdir()) == [f"{SECOND}_results.json", f"{SECOND}_samples_t.jsonl"]
    assert _lines(folder / f"{SECOND}_samples_t.jsonl") == ["A", "B", "C"]  # lmms-eval's "a": unchanged for its runs


class _FullDisk:
    """A file on a full disk: opening worked, every write raises ENOSPC."""

    def __init__(self, real):
        self.real = real

    def write(self, _text):
        raise FULL

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.real.close()


def test_a_results_file_the_disk_cannot_hold_is_removed_and_the_run_fails_naming_the_folder(
    tracker_module, tmp_path, monkeypatch
):
    real_open = pathlib.Path.open

    def full_for_results(self, mode="r", *args, **kwargs):
        handle = real_open(self, mode, *args, **kwargs)
        return _FullDisk(handle) if self.name.endswith("_results.json") and "w" in mode else handle

    monkeypatch.setattr(pathlib.Path, "open", full_for_results)
    _save(tracker_module, tmp_path, 1, ["A", "B"])
    folder = tmp_path / "m"
    assert list(folder.iterdir()) == []  # no 0-byte results file looking like a result, no orphan samples
    assert failures.lines() == [
        f"lmms-spatial: the results file and its samples files could not be written into {folder} (No space left on "
        "device): free space there or make it writable (or give another --output_path), then run the same command; "
        "the answers are kept in /kept/answers, so the same command run again asks the model for none of them"
    ]
    exits = []
    monkeypatch.setattr(os, "_exit", exits.append)
    failures._exit_if_failed()
    assert exits == [1]


def test_a_samples_file_cut_short_by_a_full_disk_is_kept_aside_and_the_run_fails_naming_it(
    tracker_module, tmp_path, monkeypatch
):
    opened = []

    def full_after_two_lines(path, mode="r", *args, **kwargs):
        opened.append(path)
        handle = open(path, mode, *args, **kwargs)  # lmms-eval opens the samples file once per line
        return _FullDisk(handle) if len(opened) > 2 else handle

    monkeypatch.setattr(tracker_module, "open", full_after_two_lines, raising=False)
    _save(tracker_module, tmp_path, 1, ["A", "B", "C", "D"])
    folder = tmp_path / "m"
    assert sorted(p.name for p in folder.iterdir()) == [f"{SECOND}_results.json", f"{SECOND}_samples_t.jsonl.partial"]
    assert _lines(folder / f"{SECOND}_samples_t.jsonl.partial") == ["A", "B"]
    assert failures.lines() == [
        f"lmms-spatial: the samples of t could not be written into {folder} (No space left on device): free space "
        "there or make it writable (or give another --output_path), then run the same command; the answers are kept "
        "in /kept/answers, so the same command run again asks the model for none of them"
    ]
