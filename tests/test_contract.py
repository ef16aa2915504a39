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
    info = front["dataset_info"]
    by_config = {e["config_name"]: e for e in info} if isinstance(info, list) else {"default": info}
    for config in front["configs"]:  # every config's files, as the card lays them out, in the fixture folder
        features = datasets.Features._from_yaml_list(by_config[config["config_name"]]["features"])
        for files in config["data_files"]:
            fixture = datasets.load_dataset("parquet", data_files=str(fixture_datasets[key] / files["path"]))["train"]
            assert features == fixture.features, f"{key} config {config['config_name']}"


# Values the Hub accepts for `size_categories` (its dataset-card metadata spec).
HUB_SIZE_CATEGORIES = {
    "n<1K",
    "1K<n<10K",
    "10K<n<100K",
    "100K<n<1M",
    "1M<n<10M",
    "10M<n<100M",
    "100M<n<1B",
    "1B<n<10B",
    "10B<n<100B",
    "100B<n<1T",
    "n>1T",
}


@pytest.mark.parametrize("key", sorted(DEMO_BENCHMARKS))
def test_hub_card_is_valid_for_the_hub_and_matches_the_fixture(key, fixture_datasets):
    """The card parses with huggingface_hub's card tools and datasets' readers, offline.

    ``DatasetCard`` is what the Hub and ``push_to_hub`` use to read the front matter;
    ``MetadataConfigs`` / ``DatasetInfosDict`` are how ``datasets`` (and the dataset viewer)
    read ``configs`` and ``dataset_info`` from it.
    """
    import fnmatch
    import re

    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    card = DatasetCard((REPO / "hub_cards" / key / "README.md").read_text())
    data = card.data
    assert isinstance(data, DatasetCardData)
    assert card.text.strip(), "the card needs a body below the front matter"
    assert isinstance(data.license, str) and data.license, "license: one Hub license id"
    assert data.pretty_name
    for field in ("task_categories", "language", "size_categories"):
        values = getattr(data, field)
        assert isinstance(values, list) and values and all(isinstance(v, str) for v in values), field
    assert all(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", v) for v in data.task_categories), data.task_categories
    assert set(data.size_categories) <= HUB_SIZE_CATEGORIES, data.size_categories
    # the front matter survives a round trip through the card tools
    assert DatasetCard(card.content).data.to_dict() == data.to_dict()

    configs = MetadataConfigs.from_dataset_card_data(data)
    assert configs, "configs: at least one config with data_files"
    infos = DatasetInfosDict.from_dataset_card_data(data)
    assert infos and all(info.features is not None for info in infos.values()), "dataset_info.features missing"
    folder = fixture_datasets[key]
    fixture_files = [p.relative_to(folder).as_posix() for p in folder.rglob("*.parquet")]
    for name, config in configs.items():
        files = config.get("data_files")
        assert isinstance(files, list) and files, f"config {name}: data_files must list split/path entries"
        info = infos.get(name) or infos.get("default") or next(iter(infos.values()))
        for entry in files:
            assert entry.get("split") and entry.get("path"), f"config {name}: {entry}"
            for pattern in entry["path"] if isinstance(entry["path"], list) else [entry["path"]]:
                matched = [f for f in fixture_files if fnmatch.fnmatch(f, pattern)]
                assert matched, f"config {name}: {pattern!r} matches no fixture file of {fixture_files}"
                fixture = datasets.load_dataset("parquet", data_files=[str(folder / f) for f in matched])["train"]
                assert info.features == fixture.features, f"config {name}: card features differ from the fixture"


# Tasks without an option list have no chance level; judge-scored ones have no unparsed rate.
# key: task-name prefix -> the conventional metrics it may leave out (say why in its YAML).
CONVENTION_EXEMPT = {
    "odi_bench_open_": {"chance_level", "unparsed_rate"},  # open-ended, LLM-judge scored
    "osr_cogmap_": {"chance_level"},  # cognitive maps: F1 against a grid, no options
}


def test_every_task_reports_unparsed_rate_and_chance_level(our_index):
    from lmms_eval.utils import load_yaml_config

    for name, entry in sorted(_leaf_tasks(our_index).items()):
        config = load_yaml_config(entry["yaml_path"], mode="simple")
        declared = {m["metric"] for m in config.get("metric_list", [])}
        exempt = set().union(*(v for k, v in CONVENTION_EXEMPT.items() if name.startswith(k)))
        missing = {"unparsed_rate", "chance_level"} - declared - exempt
        assert not missing, f"{name}: every task reports {sorted(missing)} next to its score"


def test_utils_py_is_thin_glue(our_index):
    """lmms-eval loads utils.py outside sys.modules: it may import and assign, never define code."""
    import ast

    for utils in sorted(Path(tasks_dir()).glob("*/utils.py")):
        tree = ast.parse(utils.read_text())
        defined = [
            n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
        ]
        assert not defined, f"{utils}: move {defined} into the adapter module (lmms_spatial.tasks.<key>.adapter)"


@pytest.mark.parametrize("key", sorted(DEMO_BENCHMARKS))
def test_fixture_builder_is_deterministic(key, tmp_path):
    builder = DEMO_BENCHMARKS[key][0]
    builder(tmp_path / "a")
    builder(tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), f"{key}: {rel} differs"


def test_importing_benchmark_code_has_no_side_effects():
    """Metrics, adapters, demo builders and utils.py import without network, threads or lmms-eval."""
    import json
    import os
    import subprocess
    import sys

    keys = sorted(p.name for p in Path(tasks_dir()).iterdir() if (p / "__init__.py").is_file())
    probe = f"""
import importlib, importlib.util, json, socket, sys, threading
def _no_network(*args, **kwargs):
    raise AssertionError("network access at import time")
socket.socket.connect = _no_network
socket.create_connection = _no_network
threads = threading.active_count()
for key in {keys!r}:
    for module in (f"lmms_spatial.metrics.{{key}}", f"lmms_spatial.tasks.{{key}}.adapter"):
        if importlib.util.find_spec(module) is not None:
            importlib.import_module(module)
import lmms_spatial.data.demo
heavy = sorted(m for m in ("lmms_eval", "torch", "openai", "transformers") if m in sys.modules)
print(json.dumps({{"threads": threading.active_count() - threads, "heavy": heavy}}))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMMS_SPATIAL_")}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"threads": 0, "heavy": []}, report


def test_every_card_is_read_by_datasets_without_a_warning_and_describes_every_config(caplog):
    """`datasets` drops a card's dataset_info with a logged warning when it is malformed (e.g. splits
    without num_bytes): the viewer then shows nothing of it. Every config needs its own features."""
    import logging

    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    logger = logging.getLogger("datasets")
    logger.addHandler(caplog.handler)
    try:
        for key in sorted(DEMO_BENCHMARKS):
            caplog.clear()
            data = DatasetCard.load(REPO / "hub_cards" / key / "README.md").data
            infos = DatasetInfosDict.from_dataset_card_data(data)
            configs = MetadataConfigs.from_dataset_card_data(data)
            assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [], key
            assert set(infos) == set(configs), f"{key}: dataset_info per config {sorted(infos)} vs {sorted(configs)}"
    finally:
        logger.removeHandler(caplog.handler)


def test_the_cards_declare_the_columns_of_the_schemas_including_mmsi_descriptive_ones():
    from huggingface_hub import DatasetCard

    from lmms_spatial.data import schemas

    expected = {"mmsi": schemas.MMSI_FEATURES, "dori": schemas.DORI_FEATURES, "odi_bench": schemas.ODI_FEATURES,
                "osr_bench": schemas.OSR_FEATURES}  # fmt: skip
    for key, features in expected.items():
        info = DatasetCard.load(REPO / "hub_cards" / key / "README.md").data.dataset_info
        for entry in info if isinstance(info, list) else [info]:
            assert datasets.Features._from_yaml_list(entry["features"]) == features, key
    assert {"mean_normed_duration_seconds", "difficulty"} <= set(schemas.MMSI_FEATURES)
