"""Contract every benchmark folder must meet; a new benchmark gets these checks for free.

Every check is parametrized by benchmark key, so ``pytest tests/test_contract.py -k <key>`` runs
only that benchmark's (its fixture is the only one built). Conventions: ``tasks/<key>/`` holds the
YAMLs, ``tasks/<key>/__init__.py`` the benchmark (``BENCHMARK``) and its ``features()``,
``tasks/<key>/demo.py`` the fixture builder and the tasks the demo runs,
``hub_cards/<key>/README.md`` the card, and ``tasks/<key>/report.py`` (optional)
the report's tables.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import yaml
from lmms_eval_install import NO_BUILTIN_TASKS, builtin_task_yamls
from loaded_tasks import folder_index

from lmms_spatial.data.demo import DEMO_BENCHMARKS
from lmms_spatial.data.registry import BENCHMARKS
from lmms_spatial.metrics import dori as dori_metrics
from lmms_spatial.paths import benchmark_keys, tasks_dir

REPO = Path(__file__).resolve().parents[1]
KEYS = benchmark_keys()  # a benchmark is its folder under tasks/
# tests that load the benchmark's tasks through lmms-eval share one load per benchmark: same xdist worker
LOADED_KEYS = [pytest.param(key, marks=pytest.mark.xdist_group(f"tasks-{key}"), id=key) for key in KEYS]
# metrics a task emits only for unusual documents (absent from the fixtures by design)
CONDITIONAL_METRICS = {"mmsi_circular": {"unrotatable_questions"}}


def _card_front(key: str) -> dict:
    return yaml.safe_load((REPO / "hub_cards" / key / "README.md").read_text().split("---")[1])


@pytest.mark.parametrize("key", KEYS)
def test_every_task_folder_is_a_registered_benchmark_with_a_fixture_schema_and_card(key):
    assert key in BENCHMARKS, f"declare it in tasks/{key}/__init__.py (BENCHMARK = Benchmark(...))"
    assert key in DEMO_BENCHMARKS, f"tasks/{key}/demo.py needs build() and DEMO_TASKS"
    from lmms_spatial.data.registry import features

    assert isinstance(features(key), datasets.Features), f"tasks/{key}/__init__.py: BENCHMARK.features"
    assert (REPO / "hub_cards" / key / "README.md").is_file(), f"hub_cards/{key}/README.md"


@pytest.mark.parametrize("key", KEYS)
def test_every_part_a_benchmark_names_is_there(key):
    """``BENCHMARK`` names its parts by module (and attribute); each one it names imports and is what it should be,
    and its files (published rows, BibTeX) are in its folder."""
    from lmms_spatial.benchmark import PARTS
    from lmms_spatial.conditions import TaskNeeds

    bench = BENCHMARKS[key]
    for part in PARTS:
        if getattr(bench, part):
            assert bench.load(part) is not None, f"tasks/{key}/__init__.py: BENCHMARK.{part} = {getattr(bench, part)!r}"
    assert bench.needs, f"tasks/{key}/__init__.py: BENCHMARK.needs names its tasks' TaskNeeds"
    assert isinstance(bench.load("needs"), TaskNeeds), f"BENCHMARK.needs of {key} is not a TaskNeeds"
    for name in (bench.published, bench.citation):  # "": none yet (a new benchmark's, until it is written)
        assert not name or (REPO / "tasks" / key / name).is_file(), f"tasks/{key}/{name}"


@pytest.mark.parametrize("key", KEYS)
def test_every_task_of_the_folder_runs_in_the_demo(key):
    from lmms_spatial.reports.layouts import task_metrics

    leaves = set(task_metrics(Path(tasks_dir(), key)))
    assert leaves, f"tasks/{key}/ declares no task with a metric_list"
    assert leaves <= set(DEMO_BENCHMARKS[key][1]), f"add them to DEMO_TASKS in tasks/{key}/demo.py"


def _declared_names(key: str) -> set[str]:
    """Task, group and tag names our YAMLs of ``key`` declare."""
    from lmms_spatial.reports.layouts import read_task_yaml

    names: set[str] = set()
    for path in Path(tasks_dir(), key).glob("*.yaml"):
        names |= _names_in(read_task_yaml(path))
    return names


def _names_in(config: dict) -> set[str]:
    names = {config[k] for k in ("task", "group") if isinstance(config.get(k), str)}
    tags = config.get("tag")
    return names | ({tags} if isinstance(tags, str) else set(tags or []))


def builtin_collisions(names: set[str]) -> dict[str, str]:
    """{name: lmms-eval YAML declaring it} for ``names`` also declared by a built-in task, group or tag.

    Built-ins win over ours. Only the built-in YAMLs whose text mentions one of the names are parsed,
    so this takes a fraction of lmms-eval's own index build.
    """
    from lmms_spatial.reports.layouts import read_task_yaml

    found: dict[str, str] = {}
    for path in builtin_task_yamls():
        text = path.read_text(encoding="utf-8", errors="replace")
        if not any(name in text for name in names):
            continue
        try:
            declared = _names_in(read_task_yaml(path))
        except Exception:  # noqa: BLE001 - lmms-eval skips YAMLs it cannot read; so do we
            continue
        found.update({name: str(path) for name in declared & names})
    return found


def test_the_builtin_scan_finds_a_real_builtin_task():
    if not builtin_task_yamls():
        pytest.skip(NO_BUILTIN_TASKS)
    hits = builtin_collisions({"mmsi_bench", "zz_no_such_task"})
    assert set(hits) == {"mmsi_bench"} and hits["mmsi_bench"].endswith(".yaml")


@pytest.mark.parametrize("key", KEYS)
def test_no_task_name_collides_with_a_builtin_task(key):
    ours = _declared_names(key)
    assert ours and not builtin_collisions(ours)


@pytest.mark.parametrize("key", LOADED_KEYS)
def test_every_task_loads_and_every_declared_metric_is_produced(key, scored_tasks, task_manager, monkeypatch):
    """Every task YAML loads through lmms-eval on the fixture; process_results emits exactly its metric_list."""
    monkeypatch.setenv("LMMS_SPATIAL_JUDGE", "none")  # judged tasks: the rule-based fallback, no network
    tasks = scored_tasks(key)
    assert tasks, f"tasks/{key}/ has no task lmms-eval can load"
    index = folder_index(key, task_manager)  # the folder's entries, as the build of its groups read them
    assert sorted(tasks) == sorted(name for name, entry in index.items() if entry["type"] == "task")
    for name, task in sorted(tasks.items()):
        declared = set(task.declared)
        produced: set[str] = set()
        for doc in task.docs:
            for response in ("A", "``B``", "no idea"):
                produced |= set(task.process_results(doc, [response]))
        assert produced <= declared, f"{name}: metrics not declared in its YAML: {produced - declared}"
        missing = declared - produced - CONDITIONAL_METRICS.get(name, set())
        assert not missing, f"{name}: declared metrics never produced on the fixture: {missing}"


@pytest.mark.parametrize("key", KEYS)
def test_hub_card_declares_the_features_of_the_benchmark_s_schema(key):
    """One way: ``features()`` is the source, the card follows it (``lmms-spatial card <key>`` writes it)."""
    from lmms_spatial.data.cards import sync_card
    from lmms_spatial.data.registry import features

    front = _card_front(key)
    assert front["configs"] and front["license"] and front["task_categories"]
    info = front["dataset_info"]
    for entry in info if isinstance(info, list) else [info]:
        declared = datasets.Features._from_yaml_list(entry["features"])
        assert declared == features(key), f"hub_cards/{key}/README.md differs: run `lmms-spatial card {key}`"
    assert not sync_card(key, REPO, check=True)


@pytest.mark.parametrize("key", KEYS)
def test_a_card_with_several_configs_marks_exactly_one_default(key):
    """The viewer opens on the ``default: true`` config (else on the first in alphabetical order): the paper's
    main one. ``get_default_config_name`` raises for two defaults; one config is its own default."""
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    configs = MetadataConfigs.from_dataset_card_data(DatasetCard.load(REPO / "hub_cards" / key / "README.md").data)
    default = configs.get_default_config_name()
    assert default in configs, f"hub_cards/{key}/README.md: mark the paper's main config `default: true`"
    if len(configs) == 1:
        assert not any(c.get("default") for c in configs.values())


@pytest.mark.parametrize("key", KEYS)
def test_hub_card_files_match_the_fixture(key, fixture_folder):
    """Every config's files, as the card lays them out, are found in the fixture folder with the card's features."""
    front = _card_front(key)
    info = front["dataset_info"]
    by_config = {e["config_name"]: e for e in info} if isinstance(info, list) else {"default": info}
    folder = fixture_folder(key)
    for config in front["configs"]:
        features = datasets.Features._from_yaml_list(by_config[config["config_name"]]["features"])
        for files in config["data_files"]:
            fixture = datasets.load_dataset("parquet", data_files=str(folder / files["path"]))["train"]
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


@pytest.mark.parametrize("key", KEYS)
def test_hub_card_is_valid_for_the_hub_and_matches_the_fixture(key, fixture_folder):
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
    folder = fixture_folder(key)
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


@pytest.mark.parametrize("key", KEYS)
def test_every_card_is_read_by_datasets_without_a_warning_and_describes_every_config(key, caplog):
    """`datasets` drops a card's dataset_info with a logged warning when it is malformed (e.g. splits
    without num_bytes): the viewer then shows nothing of it. Every config needs its own features."""
    import logging

    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    logger = logging.getLogger("datasets")
    logger.addHandler(caplog.handler)
    try:
        data = DatasetCard.load(REPO / "hub_cards" / key / "README.md").data
        infos = DatasetInfosDict.from_dataset_card_data(data)
        configs = MetadataConfigs.from_dataset_card_data(data)
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [], key
        assert set(infos) == set(configs), f"{key}: dataset_info per config {sorted(infos)} vs {sorted(configs)}"
    finally:
        logger.removeHandler(caplog.handler)


# Tasks without an option list have no chance level; judge-scored ones have no unparsed rate.
# key: task-name prefix -> the conventional metrics it may leave out (say why in its YAML).
CONVENTION_EXEMPT = {
    "odi_bench_open_": {"chance_level", "unparsed_rate"},  # open-ended, LLM-judge scored
    "osr_cogmap_": {"chance_level"},  # cognitive maps: F1 against a grid, no options
}


@pytest.mark.parametrize("key", KEYS)
def test_every_task_reports_unparsed_rate_and_chance_level(key):
    from lmms_spatial.reports.layouts import task_metrics

    for name, metrics in sorted(task_metrics(Path(tasks_dir(), key)).items()):
        exempt = set().union(*(v for k, v in CONVENTION_EXEMPT.items() if name.startswith(k)))
        missing = {"unparsed_rate", "chance_level"} - set(metrics) - exempt
        assert not missing, f"{name}: every task reports {sorted(missing)} next to its score"


@pytest.mark.parametrize("key", KEYS)
def test_utils_py_is_thin_glue(key):
    """lmms-eval loads utils.py outside sys.modules: it may import and assign, never define code."""
    import ast

    utils = Path(tasks_dir(), key, "utils.py")
    tree = ast.parse(utils.read_text())
    defined = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)]
    assert not defined, f"{utils}: move {defined} into the adapter module (lmms_spatial.tasks.{key}.adapter)"


@pytest.mark.parametrize("key", KEYS)
def test_fixture_builder_is_deterministic(key, tmp_path):
    builder = DEMO_BENCHMARKS[key][0]
    builder(tmp_path / "a")
    builder(tmp_path / "b")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), f"{key}: {rel} differs"


@pytest.mark.parametrize("key", KEYS)
def test_importing_benchmark_code_has_no_side_effects(key):
    """Metrics, adapter, registry, demo and report modules import without network, threads or lmms-eval."""
    import json

    probe = f"""
import importlib, importlib.util, json, socket, sys, threading
def _no_network(*args, **kwargs):
    raise AssertionError("network access at import time")
socket.socket.connect = _no_network
socket.create_connection = _no_network
threads = threading.active_count()
for module in ("lmms_spatial.metrics.{key}", "lmms_spatial.tasks.{key}.adapter", "lmms_spatial.tasks.{key}",
               "lmms_spatial.tasks.{key}.demo", "lmms_spatial.tasks.{key}.convert", "lmms_spatial.tasks.{key}.report"):
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


@pytest.mark.parametrize("key", KEYS)
def test_the_report_has_tables_for_the_benchmark_s_own_tasks(key):
    """Declared in tasks/<key>/report.py, or one per task from the YAMLs; never another's tasks."""
    from lmms_spatial.reports.layouts import benchmark_reports

    part = benchmark_reports()[key]
    assert part.layouts, f"{key}: no table in the report"
    ours = _declared_names(key)
    for layout in part.layouts:
        assert layout.benchmark == key and layout.tasks() <= ours, (layout.key, layout.tasks() - ours)


@pytest.mark.slow
@pytest.mark.xdist_group("demo")  # one worker runs the whole demo and reports each benchmark's slice
@pytest.mark.parametrize("key", KEYS)
def test_the_demo_of_the_benchmark_alone_exits_0_with_its_report(key, demo_run):
    """``lmms-spatial demo --tasks <its demo tasks>``: results for every task and a report with its tables."""
    run = demo_run(key)
    assert run.returncode == 0, run.stderr[-4000:]
    for task in DEMO_BENCHMARKS[key][1]:
        assert f"\n{task} " in run.stdout, f"{task} missing from the demo table"
    assert "report written:" in run.stdout
    assert (run.out / "report" / "report.csv").stat().st_size > 0 and (run.out / "report" / "report.tex").exists()
    md = (run.out / "report" / "report.md").read_text()
    _check_report_cell(key, md, _demo_results(run.out / "results"), run.out / "results")


# Per benchmark, one cell its demo report must show: (table heading, column, its tasks, metric, decimals,
# scale, what the demo's replies are); a column of several tasks is their unweighted mean (DORI's Avg. C,
# MMPerspective's PAcc). The demo's model is random_choice, which replies one of the question's own letters:
# for a multiple-choice task ("letters") nothing is unparsed and the value is the share of replies equal to
# the sample's target; where the task wants a map ("not maps") everything is unparsed and scores 0. The
# unparsed row must show that rate, the chance row the tasks' chance_level, in the table's format.
_DORI_COARSE = tuple(f"dori_{t}_coarse" for t in dori_metrics.TASKS)
REPORT_CELLS = {
    "dori": ("DORI Table 2: accuracy per question type (C coarse, G granular)", "Avg. C", _DORI_COARSE, "accuracy",
             1, 100, "letters"),
    "mmperspective": ("MMPerspective Table 1: accuracy and robustness", "PAcc",
                      ("mmperspective_vpp", "mmperspective_clp", "mmperspective_vap", "mmperspective_ldp"),
                      "accuracy", 1, 100, "letters"),
    "mmsi": ("MMSI-Bench: overall, per category, circular", "Avg.", ("mmsi_vanilla",), "accuracy", 1, 100,
             "letters"),
    "odi_bench": ("ODI-Bench Table 2: close setting", "OA", ("odi_bench_close_object_attribute",), "accuracy", 2,
                  100, "letters"),
    # a map has no chance level
    "osr_bench": ("OSR-Bench Table 2: cognitive map generation", "F1", ("osr_cogmap_standard",), "cogmap_f1", 3, 1,
                  "not maps"),
}  # fmt: skip


def _demo_results(folder: Path) -> dict:
    results: dict = {}
    for path in sorted(folder.glob("*_results.json")):
        results.update(json.loads(path.read_text())["results"])
    return results


def _markdown_table(md: str, heading: str) -> dict[str, dict[str, str]]:
    """{row label: {column: cell}} of the table under ``### heading``."""
    assert f"\n### {heading}\n" in md, f"no table {heading!r} in the report"
    section = md.split(f"\n### {heading}\n", 1)[1].split("\n#", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    header = [c.strip() for c in lines[0].strip("|").split(" | ")]
    rows = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        rows[cells[0]] = dict(zip(header[1:], cells[1:], strict=True))
    return rows


def _all_markdown_tables(md: str) -> dict[str, dict[str, dict[str, str]]]:
    headings = [line[len("### ") :] for line in md.splitlines() if line.startswith("### ")]
    return {heading: _markdown_table(md, heading) for heading in headings if "\n| " in md.split(f"### {heading}\n")[1]}


def _check_any_benchmarks_report(key: str, md: str) -> None:
    """A benchmark without a REPORT_CELLS entry (a contributor's new one: it edits no shared file) still gets a
    report whose tables each show the model's row, its unparsed row and the chance row."""
    tables = {h: rows for h, rows in _all_markdown_tables(md).items() if "**random\\_choice**" in rows}
    assert tables, f"{key}: no table of the report shows the demo's model"
    for heading, rows in tables.items():
        assert "*random\\_choice unparsed*" in rows and "*chance level*" in rows, (key, heading, sorted(rows))


def _check_report_cell(key: str, md: str, results: dict, folder: Path) -> None:
    _check_any_benchmarks_report(key, md)
    if key not in REPORT_CELLS:
        return
    heading, column, tasks, metric, decimals, scale, replies = REPORT_CELLS[key]
    rows = _markdown_table(md, heading)

    def mean(values) -> float:
        values = list(values)
        return sum(values) / len(values)

    def shown(value: float) -> str:
        return f"{value * scale:.{decimals}f}"

    def share_right(task: str) -> float:
        (samples,) = folder.glob(f"*_samples_{task}.jsonl")
        lines = [json.loads(line) for line in samples.read_text().splitlines()]
        return mean(line["filtered_resps"] == line["target"] for line in lines)

    value, unparsed = (mean(share_right(t) for t in tasks), 0.0) if replies == "letters" else (0.0, 1.0)
    reported = {name: mean(results[t][f"{name},none"] for t in tasks) for name in (metric, "unparsed_rate")}
    model = rows["**random\\_choice**"][column]  # "50.0 [0.0, 100.0]": the value, then its bootstrap CI
    assert model.split(" [")[0] == shown(value) == shown(reported[metric]), (key, model, value, reported)
    assert rows["*random\\_choice unparsed*"][column] == shown(unparsed) == shown(reported["unparsed_rate"]), key
    if replies == "letters":
        chance = mean(results[t]["chance_level,none"] for t in tasks)
        assert rows["*chance level*"][column] == shown(chance), key
    assert any(label.endswith("(published)") for label in rows), f"{key}: no published row next to the run"
