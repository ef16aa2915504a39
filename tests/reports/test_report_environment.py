"""Every run says which software produced it, and rows produced by different software are warned about and never
pooled (lmms_spatial.reports.runs ``Conditions.environment``, tables ``software_warning``, report ``describe_run``)."""

from __future__ import annotations

import json
from pathlib import Path

from report_fixtures import odi_scores, write_run
from test_report_conditions import report, section

from lmms_spatial.reports.runs import load_runs, pool_key

STAMP = "20260101_000000"
QWEN = "pretrained=Qwen/Qwen2.5-VL-7B-Instruct"


def environment(transformers: str, *, gpu: bool = True) -> dict:
    env = {
        "python": "3.11.7",
        "platform": "Linux-x86_64",
        "lmms-spatial": {"version": "0.1.0", "commit": "1145c25aa0b1c2d3", "dirty": False},
        "packages": {"lmms-eval": "0.7.3", "transformers": transformers, "torch": "2.14.1", "numpy": "2.4.6"},
    }
    if gpu:
        env.update(cuda="12.8", gpu="NVIDIA H100 80GB HBM3")
    return env  # fmt: skip


def run_with(folder: Path, env: dict | None, args: str = QWEN) -> Path:
    path = write_run(folder, STAMP, args, odi_scores(0), None, model="qwen2_5_vl")
    data = json.loads(path.read_text())
    data["lmms_spatial"] = {"schema": 1, "model": {"label": "Qwen2.5-VL-7B-Instruct", "name": "qwen2_5_vl",
                                                   "args": args, "seed": None}, "tasks": {}}  # fmt: skip
    if env is not None:
        data["lmms_spatial"]["environment"] = env
    path.write_text(json.dumps(data))
    return path


def test_the_runs_list_names_the_software_of_each_run(tmp_path, capsys):
    run_with(tmp_path / "a", environment("5.24.0"))
    run_with(tmp_path / "b", None, QWEN + ",max_pixels=9")  # an older results file: nothing recorded
    md, _, _ = report(capsys, tmp_path / "out", tmp_path / "a", tmp_path / "b")
    runs = md.split("Runs:")[1].split("\n\n")[1].splitlines()
    assert runs[0].startswith("- Qwen2.5-VL-7B-Instruct: qwen2_5_vl (pretrained=Qwen/Qwen2.5-VL-7B-Instruct), ")
    assert ", lmms-spatial 0.1.0 @1145c25, lmms-eval 0.7.3, transformers 5.24.0, torch 2.14.1 (CUDA 12.8, NVIDIA " \
           "H100 80GB HBM3); `" in runs[0]  # fmt: skip
    assert ", software not recorded; `" in runs[1]


def test_two_runs_differing_only_in_transformers_are_two_rows_with_a_warning_naming_the_versions(tmp_path, capsys):
    run_with(tmp_path / "old", environment("4.57.1"))
    run_with(tmp_path / "new", environment("5.24.0"))
    a, b = load_runs([tmp_path / "old", tmp_path / "new"])
    tasks = set(a.conditions.tasks)
    assert pool_key(a, tasks) != pool_key(b, tasks)  # never pooled as seeds
    md, _, err = report(capsys, tmp_path / "out", tmp_path / "old", tmp_path / "new", labels="old,new")
    table = section(md, "ODI-Bench Table 2")
    warning = ("WARNING: these rows were produced with different software (old: transformers 4.57.1; new: "
               "transformers 5.24.0); numbers can move with these versions")  # fmt: skip
    assert f"- {warning}" in table
    assert "| **old** |" in table and "| **new** |" in table


def test_runs_on_the_same_software_get_no_warning_and_may_pool(tmp_path, capsys):
    run_with(tmp_path / "a", environment("5.24.0"))
    run_with(tmp_path / "b", environment("5.24.0", gpu=False), QWEN + ",seed=1")  # the GPU is not compared
    a, b = load_runs([tmp_path / "a", tmp_path / "b"])
    tasks = set(a.conditions.tasks)
    assert pool_key(a, tasks) == pool_key(b, tasks)
    md, _, _ = report(capsys, tmp_path / "out", tmp_path / "a", tmp_path / "b")
    assert "different software" not in md


def _reading(path: Path, data: dict) -> None:
    results = json.loads(path.read_text())
    results["lmms_spatial"]["data"] = data
    path.write_text(json.dumps(results))


def test_runs_that_read_different_releases_are_never_pooled_and_the_difference_is_named(tmp_path):
    """Seeds of one model pool only when they read the same data: a Hub release by id and revision; local copies
    (their paths and fingerprints follow the machine) only as local copies."""
    from lmms_spatial.reports.runs import differences

    hub = {"source": "someone/ODI-Bench", "local": False, "fingerprint": "f"}
    mmsi = {"source": "x/MMSI", "local": False}
    for name, args, data in [
        ("r1", QWEN, {"odi_bench": {**hub, "revision": "r1"}, "mmsi": {**mmsi, "revision": "m"}}),
        ("r2", QWEN + ",seed=1", {"odi_bench": {**hub, "revision": "r2"}, "mmsi": {**mmsi, "revision": "n"}}),
        ("r1_again", QWEN + ",seed=2", {"odi_bench": {**hub, "revision": "r1"}}),
        ("here", QWEN + ",seed=3", {"odi_bench": {"source": "/data/odi", "local": True, "fingerprint": "a"}}),
        ("there", QWEN + ",seed=4", {"odi_bench": {"source": "/scratch/odi", "local": True, "fingerprint": "b"}}),
    ]:  # fmt: skip
        _reading(run_with(tmp_path / name, environment("5.24.0"), args), data)
    r1, r2, again, here, there = load_runs([tmp_path / n for n in ("r1", "r2", "r1_again", "here", "there")])
    odi = {t for t in r1.conditions.tasks if t.startswith("odi_bench")}
    assert odi and pool_key(r1, odi) != pool_key(r2, odi)
    assert differences(r1, r2, odi) == ["data odi_bench: someone/ODI-Bench@r1 vs odi_bench: someone/ODI-Bench@r2"]
    assert pool_key(r1, odi) == pool_key(again, odi)  # MMSI-Bench's release is not these tasks' data
    assert pool_key(here, odi) == pool_key(there, odi) != pool_key(r1, odi)
    assert r1.conditions.data_of(odi) == (("odi_bench", "someone/ODI-Bench@r1"),)
    run_with(tmp_path / "older", environment("5.24.0"), QWEN + ",seed=5")  # written before the data was recorded
    (older,) = load_runs([tmp_path / "older"])
    assert older.conditions.data is None and pool_key(older, odi) != pool_key(r1, odi)
    assert differences(older, r1, odi) == ["data not recorded vs odi_bench: someone/ODI-Bench@r1"]
