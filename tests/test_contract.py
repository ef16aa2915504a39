"""Contract every benchmark folder must meet; a new benchmark gets these checks for free.

Conventions: ``tasks/<key>/`` holds the YAMLs, ``hub_cards/<key>/README.md`` the card,
``lmms_spatial.data.demo.DEMO_BENCHMARKS[<key>]`` the fixture/demo builder and the
tasks the demo (and therefore the end-to-end demo test) runs.
"""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
import yaml

from lmms_spatial.data.demo import DEMO_BENCHMARKS, demo_tasks
from lmms_spatial.paths import tasks_dir

REPO = Path(__file__).resolve().parents[1]
# metrics a task emits only for unusual documents (absent from the fixtures by design)
CONDITIONAL_METRICS = {"mmsi_circular": {"unrotatable_questions"}}


@pytest.fixture(scope="module")
def task_manager():
    from lmms_eval.tasks import TaskManager

    return TaskManager(include_defaults=False)


@pytest.fixture(scope="module")
def our_index(task_manager):
    return task_manager._get_task_and_group(tasks_dir())


def _benchmark_of(entry: dict) -> str:
    return Path(entry["yaml_path"]).relative_to(tasks_dir()).parts[0]


def _leaf_tasks(index: dict) -> dict[str, dict]:
    return {name: e for name, e in index.items() if e["type"] == "task"}


def test_every_task_folder_is_a_known_benchmark(our_index):
    folders = {p.name for p in Path(tasks_dir()).iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert folders <= set(DEMO_BENCHMARKS), "each tasks/<key>/ needs a fixture builder in DEMO_BENCHMARKS"
    assert {_benchmark_of(e) for e in _leaf_tasks(our_index).values()} == folders


@pytest.mark.slow
def test_no_task_name_collides_with_a_builtin_task(task_manager, our_index):
    import lmms_eval.tasks

    builtin = task_manager._get_task_and_group(str(Path(lmms_eval.tasks.__file__).parent))
    assert not set(our_index) & set(builtin)


def test_every_task_runs_in_the_end_to_end_demo(our_index):
    assert set(_leaf_tasks(our_index)) <= set(demo_tasks())


def test_every_task_loads_and_every_declared_metric_is_produced(our_index, task_manager, offline_env, monkeypatch):
    for key, value in offline_env.items():
        monkeypatch.setenv(key, value)
    from lmms_eval.tasks import get_task_dict

    for name in sorted(_leaf_tasks(our_index)):
        task = get_task_dict([name], task_manager)[name]
        declared = {m["metric"] for m in task.config.metric_list}
        produced: set[str] = set()
        for doc in task.eval_docs_no_media:
            for response in ("A", "``B``", "no idea"):
                produced |= set(task.config.process_results(doc, [response]))
        assert produced <= declared, f"{name}: metrics not declared in its YAML: {produced - declared}"
        missing = declared - produced - CONDITIONAL_METRICS.get(name, set())
        assert not missing, f"{name}: declared metrics never produced on the fixture: {missing}"


@pytest.mark.parametrize("key", sorted(DEMO_BENCHMARKS))
def test_hub_card_declares_the_features_of_the_normalised_schema(key, fixture_datasets):
    card = (REPO / "hub_cards" / key / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert front["configs"] and front["license"] and front["task_categories"]
    features = datasets.Features._from_yaml_list(front["dataset_info"]["features"])
    fixture = datasets.load_dataset("parquet", data_files=str(fixture_datasets[key] / "*.parquet"))["train"]
    assert features == fixture.features
