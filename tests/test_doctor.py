"""``lmms-spatial doctor``: each line ok or the fix, exit 1 when something must be fixed (lmms_spatial.doctor)."""

from __future__ import annotations

import os

import pytest

from lmms_spatial import doctor
from lmms_spatial.data.sources import BENCHMARKS, OFFLINE_VARS, DataUnavailable, dataset_source
from lmms_spatial.doctor import FIX, NOTE, OK, Check


def by_what(checks: list[Check]) -> dict[str, Check]:
    return {c.what: c for c in checks}


def _run_stops_with(key: str) -> str:
    """The one line a run of ``key``'s tasks stops with now (what lmms-eval's task build gets from our loader)."""
    with pytest.raises(DataUnavailable) as stopped:
        dataset_source(key)
    return str(stopped.value).removeprefix(f"{key}: ")


def _local_copy_stops_with(key: str, value: str, monkeypatch) -> str:
    """The one line a run of ``key``'s tasks stops with when its variable is ``value``."""
    with monkeypatch.context() as patch:
        patch.setenv(BENCHMARKS[key].env_var, value)
        return _run_stops_with(key)


def test_data_paths_are_checked_where_a_variable_names_one(tmp_path):
    from lmms_spatial.data.demo import build_fixture

    build_fixture("mmsi", tmp_path / "mmsi")
    env = {"LMMS_SPATIAL_MMSI_PATH": str(tmp_path / "mmsi"), "LMMS_SPATIAL_DORI_PATH": str(tmp_path / "missing")}
    checks = by_what(list(doctor.check_data(env)))
    assert checks["mmsi"] == Check(OK, "mmsi", f"LMMS_SPATIAL_MMSI_PATH={tmp_path / 'mmsi'}")
    assert checks["dori"] == Check(
        FIX, "dori", f"LMMS_SPATIAL_DORI_PATH={str(tmp_path / 'missing')!r}: no such file or folder: point it at the "
        "data, or unset it to read the release"
    )  # fmt: skip
    assert checks["odi_bench"] == Check(
        NOTE, "odi_bench", "LMMS_SPATIAL_ODI_PATH not set: the release LiuYang66/ODI-Bench is read from the Hub"
    )
    assert checks["mmperspective"].detail == (
        "LMMS_SPATIAL_MMPERSPECTIVE_PATH not set: no public release; its tasks need a local copy "
        "(lmms-spatial convert mmperspective)"
    )


def test_a_local_copy_the_run_would_stop_on_is_a_fix_with_the_runs_own_line(tmp_path, monkeypatch):
    """Each copy the run stops on gives the line the run stops with (compared with the run's loader here), not
    ``ok``; the line names the fix for what the folder holds."""
    from lmms_spatial.data.demo import build_fixture

    (tmp_path / "empty").mkdir()
    renamed = build_fixture("mmsi", tmp_path / "renamed")  # the layout, in a file datasets reads as split train
    (renamed / "test.parquet").rename(renamed / "data.parquet")
    (tmp_path / "raw").mkdir()  # a release as downloaded: its own columns
    (tmp_path / "raw" / "questions.jsonl").write_text('{"image": "a.png", "question": "Q?", "correct": "A"}\n')
    (tmp_path / "notes.txt").write_text("not data")
    dori = build_fixture("dori", tmp_path / "dori")
    cases = [
        ("mmsi", tmp_path / "empty", "the folder holds no data files"),
        ("mmsi", renamed, "datasets reads this folder as split(s) ['train'], the tasks read 'test'; name the files"),
        ("odi_bench", tmp_path / "raw", "not odi_bench's layout (its columns: image, question, correct); point it at "
         f"a copy in the layout of hub_cards/odi_bench/README.md, or convert this one (`lmms-spatial convert "
         f"odi_bench {tmp_path / 'raw'} OUT`) and point it at OUT, or unset it to read the release"),
        ("osr_bench", dori, "holds dori data"),
        ("dori", tmp_path / "notes.txt", "expected a folder or one of"),
        ("mmperspective", tmp_path / "missing", "no such file or folder: point it at the data"),
    ]  # fmt: skip
    for key, value, why in cases:
        [check] = [c for c in doctor.check_data({BENCHMARKS[key].env_var: str(value)}) if c.what == key]
        stops_with = _local_copy_stops_with(key, str(value), monkeypatch)
        assert why in stops_with, stops_with
        assert check == Check(FIX, key, stops_with), key
    # a benchmark with no release cannot be unset to read one
    assert stops_with.endswith("point it at the data")
    # the fixture is a dori copy: ok where dori's variable names it, with a space around the value as typed
    assert by_what(list(doctor.check_data({"LMMS_SPATIAL_DORI_PATH": f" {dori} "})))["dori"] == Check(
        OK, "dori", f"LMMS_SPATIAL_DORI_PATH={dori}"
    )
    monkeypatch.setattr(doctor, "check_data", lambda _env: iter([check]))
    assert doctor.main(None, False, False, judge=False) == 1


def _offline_with_an_empty_cache(tmp_path, monkeypatch) -> dict[str, str]:
    """The environment of an air-gapped node whose Hugging Face cache is ``tmp_path/hf``: no data variable set."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE", *OFFLINE_VARS):
        monkeypatch.delenv(name, raising=False)
    for bench in BENCHMARKS.values():
        for name in (bench.env_var, bench.repo_var, bench.revision_var, bench.map_var):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return dict(os.environ)


def test_offline_a_release_missing_from_the_cache_is_named_with_the_runs_own_line(tmp_path, monkeypatch):
    env = _offline_with_an_empty_cache(tmp_path, monkeypatch)
    checks = by_what(list(doctor.check_data(env)))
    for key in ("dori", "mmsi", "odi_bench", "osr_bench"):  # converted from the release (3), read as published (mmsi)
        bench = BENCHMARKS[key]
        assert checks[key] == Check(
            NOTE, key, f"{bench.env_var} not set, and its tasks stop at once: {_run_stops_with(key)}"
        ), key
    assert "appledora/DORI-Benchmark@main is not in the Hugging Face cache" in checks["dori"].detail
    assert checks["mmperspective"].detail.endswith("no public release; its tasks need a local copy "
                                                   "(lmms-spatial convert mmperspective)")  # fmt: skip
    assert doctor.main(None, False, False, judge=False) == 0  # notes: a run of other benchmarks is not stopped


def test_offline_a_release_in_the_cache_is_ok_where_the_run_reads_it(tmp_path, monkeypatch):
    env = _offline_with_an_empty_cache(tmp_path, monkeypatch)
    made = "0123456789abcdef0123456789abcdef01234567"
    snapshots = {}
    for key in ("dori", "mmsi"):  # the pinned revision's snapshot, as `hf download` leaves it (mmsi pins a commit)
        bench = BENCHMARKS[key]
        repo = tmp_path / "hf" / "hub" / f"datasets--{bench.hub_id.replace('/', '--')}"
        pinned = len(bench.revision) == 40
        snapshots[key] = repo / "snapshots" / (bench.revision if pinned else made)
        snapshots[key].mkdir(parents=True)
        if not pinned:  # a branch: its ref names the commit
            (repo / "refs").mkdir()
            (repo / "refs" / bench.revision).write_text(made)
    checks = by_what(list(doctor.check_data(env)))
    assert checks["dori"] == Check(
        OK, "dori", "LMMS_SPATIAL_DORI_PATH not set: offline, the release appledora/DORI-Benchmark is read from the "
        "Hugging Face cache")  # fmt: skip
    assert checks["mmsi"].status == OK
    assert dataset_source("mmsi").path == str(snapshots["mmsi"])  # where the run reads it
    assert checks["odi_bench"].status == NOTE  # not copied: still named


def test_a_published_copy_is_named_where_its_variable_points(tmp_path, monkeypatch):
    env = _offline_with_an_empty_cache(tmp_path, monkeypatch)
    online = {k: v for k, v in env.items() if k not in OFFLINE_VARS} | {"LMMS_SPATIAL_DORI_REPO": "lab/dori-copy"}
    assert by_what(list(doctor.check_data(online)))["dori"] == Check(
        NOTE, "dori", "LMMS_SPATIAL_DORI_PATH not set: the published copy lab/dori-copy (LMMS_SPATIAL_DORI_REPO) is "
        "read from the Hub")  # fmt: skip
    monkeypatch.setenv("LMMS_SPATIAL_DORI_REPO", "lab/dori-copy")
    offline = by_what(list(doctor.check_data(dict(os.environ))))["dori"]
    assert offline == Check(
        NOTE, "dori", f"LMMS_SPATIAL_DORI_PATH not set, and its tasks stop at once: {_run_stops_with('dori')}"
    )
    assert offline.detail.split("stop at once: ")[1].startswith("LMMS_SPATIAL_DORI_REPO=lab/dori-copy: dori: offline")


def test_the_judge_line_follows_the_judge_setting():
    assert [c.status for c in doctor.check_judge({"LMMS_SPATIAL_JUDGE": "none"})] == [OK]
    unset = list(doctor.check_judge({}))
    assert unset[0].status == NOTE and "LMMS_SPATIAL_JUDGE not set" in unset[0].detail
    # a configured judge whose server does not answer: one probe, and the fix
    down = list(doctor.check_judge({"LMMS_SPATIAL_JUDGE": "gpt-4o-mini",
                                    "LMMS_SPATIAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}))  # fmt: skip
    assert down[0].status == FIX
    assert down[0].detail.startswith("gpt-4o-mini: http://127.0.0.1:9/v1/models does not answer")
    # the OpenAI API (no base URL) with no key: said without asking it, as the run's notice says it
    (no_key,) = doctor.check_judge({"LMMS_SPATIAL_JUDGE": "gpt-4o"})
    assert no_key == Check(FIX, "judge", "gpt-4o: no API key is set for https://api.openai.com/v1: set "
                                         "LMMS_SPATIAL_JUDGE_API_KEY (or OPENAI_API_KEY) to your key")  # fmt: skip


def test_offline_variables_are_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import importlib

    import huggingface_hub.constants

    importlib.reload(huggingface_hub.constants)
    try:
        checks = list(doctor.check_hub({"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "0"}))
    finally:
        monkeypatch.delenv("HF_HOME")
        importlib.reload(huggingface_hub.constants)
    assert checks[0] == Check(OK, "Hub cache", str(tmp_path / "hf" / "hub"))
    assert checks[1].detail.startswith("HF_HUB_OFFLINE set: only what is in the Hub cache")


def test_an_unknown_model_is_a_fix():
    [check] = doctor.check_model("no_such_model_xyz")
    assert check.status == FIX and check.what == "--model no_such_model_xyz"


def test_a_model_that_imports_is_ok():
    assert list(doctor.check_model("random_choice")) == [Check(OK, "--model random_choice", "its class imports")]


def test_main_exits_1_with_the_count_when_a_line_is_a_fix(monkeypatch, capsys):
    checks = [Check(OK, "python", "3.11.7"), Check(FIX, "filelock", "filelock 4.3.1: ...: pip install 'filelock<4'")]
    monkeypatch.setattr(doctor, "run_checks", lambda *a, **k: checks)
    assert doctor.main(None, False, False) == 1
    assert capsys.readouterr().out.splitlines() == [
        "ok   python: 3.11.7",
        "FIX  filelock: filelock 4.3.1: ...: pip install 'filelock<4'",
        "1 to fix",
    ]
    monkeypatch.setattr(doctor, "run_checks", lambda *a, **k: checks[:1])
    assert doctor.main(None, False, False) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "ready"


def test_drift_from_the_tested_set_is_a_note_naming_the_packages(tmp_path, monkeypatch):
    tested = tmp_path / "tested.txt"
    tested.write_text("filelock==3.32.7\ntorch==2.14.1\n")
    monkeypatch.setattr(doctor.environment, "installed", lambda: {"filelock": "4.3.1", "torch": "2.14.1"})
    assert list(doctor.check_tested_set(tested)) == [Check(
        NOTE, "tested set", f"1 packages differ from {tested}: filelock 3.32.7 -> 4.3.1 (to install exactly it: "
        "pip install -e . -c constraints/tested.txt)")]  # fmt: skip
    assert list(doctor.check_tested_set(None)) == []
