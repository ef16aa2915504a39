"""A run of ours is recognised by what it runs, not by how it was named: each way of asking lmms-eval for a task
of ours keeps its answers and exits 1 naming a failure (lmms_spatial.plugin.run).

The failure is a scoring bug in a YAML of the user's that includes ``mmsi_vanilla`` (its answers are kept, the
run exits 1 naming the task), except for the routes where a missing data folder is the natural failure.
"""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import pytest

from lmms_spatial.paths import tasks_dir

pytestmark = pytest.mark.slow

SCORING_BUG = "lmms-spatial: my_broken failed while scoring: TypeError: scorer bug"


def kept_answers(out: Path) -> int:
    """How many answers the run's answer store holds (every run folder's SQLite file, merged or not)."""
    keys: set[str] = set()
    for db in (out / "cache").rglob("*.db"):
        with sqlite3.connect(db) as connection:
            keys.update(row[0] for row in connection.execute("SELECT cache_key FROM responses"))
    return len(keys)


def last_line(run) -> str:
    return run.stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def own_tasks(tmp_path_factory) -> Path:
    """A folder of the user's: ``my_broken`` (``mmsi_vanilla`` with a scorer that raises, tagged ``my_tag``);
    ``single/`` holds it alone."""
    own = tmp_path_factory.mktemp("own_tasks")
    for folder in (own, own / "single"):
        folder.mkdir(exist_ok=True)
        (folder / "utils.py").write_text("def explode(doc, results):\n    raise TypeError('scorer bug')\n")
        (folder / "my_broken.yaml").write_text(textwrap.dedent(f"""\
            include: {tasks_dir()}/mmsi/mmsi_vanilla.yaml
            task: my_broken
            tag: my_tag
            process_results: !function utils.explode
            """))  # fmt: skip
    return own


@pytest.mark.parametrize("route", ["tag", "folder"])
def test_a_task_of_ours_asked_for_through_a_tag_or_a_folder_keeps_its_answers_and_exits_1(route, own_tasks, lmms_eval):
    """(A group: ``spatial_suite`` below, a group of groups, keeps its answers and exits 1 naming a failure.)"""
    single = str(own_tasks / "single")
    tasks = {"tag": ["--tasks", "my_tag", "--include_path", str(own_tasks)],
             # a folder of YAML files (lmms-eval loads each as a config; its own index names the task)
             "folder": ["--tasks", single, "--include_path", single]}[route]  # fmt: skip
    run = lmms_eval("--model", "random_choice", *tasks, "--limit", "2")
    assert run.returncode == 1
    assert last_line(run).startswith(SCORING_BUG)
    assert f"answers are kept in {run.out / 'cache'}" in run.stderr
    assert kept_answers(run.out) == 2  # --limit 2 of one task
    assert len(run.samples["my_broken"]) == 2


def test_a_yaml_file_of_ours_given_to_tasks_gets_the_way_that_runs(own_tasks, lmms_eval):
    file = own_tasks / "single" / "my_broken.yaml"
    run = lmms_eval("--model", "random_choice", "--tasks", str(file), expect_results=False)
    assert run.returncode == 1
    folder = own_tasks / "single"
    assert last_line(run) == (
        f"lmms-spatial: this lmms-eval does not run a YAML file given to --tasks ({file}: it reports it not found); "
        f"give its folder instead: --tasks {folder} --include_path {folder}"
    )


def test_with_the_hook_off_the_readmes_include_path_route_keeps_answers_and_names_a_failure(lmms_eval):
    route = ["--tasks", "mmsi_vanilla", "--include_path", tasks_dir(), "--limit", "3"]
    off = {"LMMS_SPATIAL_DISABLE_HOOK": "1"}
    run = lmms_eval("--model", "random_choice", *route, env=off)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"answers are kept in {run.out / 'cache'}" in run.stderr and kept_answers(run.out) == 3
    failed = lmms_eval("--model", "random_choice", *route, env={**off, "LMMS_SPATIAL_MMSI_PATH": "/nonexistent"},
                       expect_results=False)  # fmt: skip
    assert failed.returncode == 1
    assert last_line(failed) == (
        "lmms-spatial: a task of mmsi failed: DataUnavailable: LMMS_SPATIAL_MMSI_PATH='/nonexistent': no such file "
        "or folder: point it at the data, or unset it to read the release"
    )


# --- spatial_suite: the headline task of each benchmark, with any model -------------------------------------

HEADLINES = {"mmsi_vanilla": "results", "dori": "groups", "mmperspective": "groups", "odi_bench_close": "groups",
             "osr_qa_standard_vanilla": "results"}  # fmt: skip


def test_spatial_suite_scores_all_five_benchmarks_with_a_model_that_only_guesses(lmms_eval):
    run = lmms_eval("--model", "random_choice", "--model_args", "seed=0", "--tasks", "spatial_suite")
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.results["group_subtasks"]["spatial_suite"] == list(HEADLINES)
    for headline, table in HEADLINES.items():
        accuracy = run.results[table][headline]["accuracy,none"]
        assert isinstance(accuracy, float) and 0 <= accuracy <= 1, (headline, accuracy)
    assert {t.split("_")[0] for t in run.samples} == {"mmsi", "dori", "mmperspective", "odi", "osr"}
    assert f"answers are kept in {run.out / 'cache'}" in run.stderr and kept_answers(run.out) == sum(
        len(s) for s in run.samples.values()
    )
    assert "spatial_suite" not in run.results["groups"]  # no score pooled across benchmarks


def test_spatial_suite_without_its_mmsi_data_exits_1_naming_the_variable(lmms_eval):
    run = lmms_eval("--model", "random_choice", "--tasks", "spatial_suite",
                    env={"LMMS_SPATIAL_MMSI_PATH": "/nonexistent"}, expect_results=False)  # fmt: skip
    assert run.returncode == 1
    assert last_line(run) == (
        "lmms-spatial: mmsi_vanilla failed: DataUnavailable: LMMS_SPATIAL_MMSI_PATH='/nonexistent': no such file "
        "or folder: point it at the data, or unset it to read the release"
    )
    assert not (run.out / "cache").exists()


def test_spatial_suite_holds_no_task_that_needs_a_special_model_or_a_judge():
    from lmms_eval.utils import load_yaml_config

    suite = load_yaml_config(str(Path(tasks_dir()) / "spatial_suite.yaml"))
    assert suite["group"] == "spatial_suite" and suite["task"] == list(HEADLINES)
    assert "aggregate_metric_list" not in suite
    assert not [t for t in suite["task"] if "cogmap" in t or "open" in t or "negative" in t]
