"""Task YAMLs parsed by libyaml (lmms_spatial.plugin.yaml_configs) give exactly the configs lmms-eval's own
``load_yaml_config`` gives: every YAML of ours in both of its modes, every built-in one as its index reads them."""

from __future__ import annotations

import importlib
import os
import types
from pathlib import Path

import pytest
import yaml

from lmms_spatial.data.registry import BENCHMARKS
from lmms_spatial.paths import tasks_dir
from lmms_spatial.plugin import yaml_configs


def _plain(value):
    """A config with what has no equality of its own made comparable: a YAML node (``!function`` in "simple"
    mode) by its tag and text, a function by its module file and name."""
    if isinstance(value, yaml.Node):
        return ("node", value.tag, _plain(value.value))
    if isinstance(value, types.FunctionType):
        return ("function", value.__code__.co_filename, value.__qualname__)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


@pytest.fixture
def utils_pair():
    """lmms-eval's ``utils`` module as shipped, and a second copy of it patched by us."""
    import lmms_eval.utils as installed

    stock = getattr(installed.load_yaml_config, "__wrapped__", installed.load_yaml_config)
    spec = importlib.util.find_spec("lmms_eval.utils")
    patched = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(patched)
    patched.load_yaml_config = getattr(patched.load_yaml_config, "__wrapped__", patched.load_yaml_config)
    yaml_configs.patch_yaml_loading(patched)
    return stock, patched.load_yaml_config


def _yamls(folder: str) -> list[str]:
    return sorted(str(p) for p in Path(folder).rglob("*.yaml") if "__pycache__" not in p.parts)


def test_our_yamls_are_found():
    assert len(_yamls(tasks_dir())) > 100  # our five benchmarks ship 127


# every benchmark's YAMLs (``pytest -k <key>``), and those outside a benchmark's folder (spatial_suite.yaml)
FOLDERS = [*BENCHMARKS, ""]


@pytest.mark.parametrize("mode", ["simple", "full"])
@pytest.mark.parametrize("folder", [pytest.param(f, id=f or "shared") for f in FOLDERS])
def test_every_yaml_of_ours_reads_the_same_in_both_modes(utils_pair, mode, folder):
    stock, patched = utils_pair
    paths = _yamls(os.path.join(tasks_dir(), folder)) if folder else sorted(map(str, Path(tasks_dir()).glob("*.yaml")))
    assert paths, f"tasks/{folder} holds no YAML"
    for path in paths:
        assert _plain(patched(path, mode=mode)) == _plain(stock(path, mode=mode)), path
    assert patched._lmms_spatial and patched.__wrapped__ is not patched


def test_a_function_of_a_task_is_found_next_to_its_yaml(utils_pair, tmp_path):
    """``!function utils.answer`` is imported from the YAML's own folder (lmms-eval reads ``loader.name``)."""
    _, patched = utils_pair
    (tmp_path / "utils.py").write_text("def answer(doc):\n    return 42\n")
    (tmp_path / "base.yaml").write_text("task: probe\nprocess_results: !function utils.answer\nnum: 3\n")
    (tmp_path / "child.yaml").write_text("include: base.yaml\ntask: child\n")
    config = patched(str(tmp_path / "child.yaml"), mode="full")
    assert config["task"] == "child" and config["num"] == 3
    assert config["process_results"]({}) == 42


def test_a_broken_yaml_raises_the_same_kind_of_error_at_the_same_place(utils_pair, tmp_path):
    stock, patched = utils_pair
    (tmp_path / "bad.yaml").write_text("task: probe\nmetric_list: [a, b\n")
    errors = []
    for load in (stock, patched):
        with pytest.raises(yaml.MarkedYAMLError) as caught:
            load(str(tmp_path / "bad.yaml"), mode="simple")
        errors.append((type(caught.value).__name__, caught.value.problem_mark.line))
    assert errors[0] == errors[1] == ("ParserError", 2)


def test_under_our_start_up_hook_lmms_eval_reads_yamls_with_libyaml():
    import lmms_eval.utils

    assert getattr(lmms_eval.utils.load_yaml_config, "_lmms_spatial", False)
    before = lmms_eval.utils.load_yaml_config
    yaml_configs.patch_yaml_loading(lmms_eval.utils)
    assert lmms_eval.utils.load_yaml_config is before  # wrapped once


@pytest.mark.slow  # ~7 CPU s: lmms-eval's ~1,900 built-in YAMLs, twice
def test_every_built_in_yaml_reads_as_lmms_eval_s_index_reads_it(utils_pair):
    import lmms_eval.tasks

    stock, patched = utils_pair
    paths = _yamls(os.path.dirname(lmms_eval.tasks.__file__))
    assert len(paths) > 1500
    differ = []
    for path in paths:
        try:
            expected = _plain(stock(path, mode="simple"))
        except Exception as exc:  # noqa: BLE001 - a YAML lmms-eval itself cannot read must fail the same way
            with pytest.raises(type(exc)):
                patched(path, mode="simple")
            continue
        if _plain(patched(path, mode="simple")) != expected:
            differ.append(path)
    assert differ == []
