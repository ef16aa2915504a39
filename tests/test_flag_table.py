"""docs/running.md's table of lmms-eval's flags: every flag of ``lmms-eval --help`` has a row, and each test it
cites exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNING = REPO / "docs" / "running.md"
FLAGS_TESTS = "tests/e2e/test_lmms_eval_flags_cli.py"


def _table() -> list[tuple[set[str], str]]:
    text = RUNNING.read_text(encoding="utf-8")
    section = text.split("## lmms-eval's flags with our tasks", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`-"):
            rows.append((set(re.findall(r"`(-[-\w]+)`", cells[0])), cells[2]))
    return rows


def _lmms_eval_flags() -> set[str]:
    """The option strings of ``lmms-eval eval``'s parser, read from the installed ``lmms_eval/__main__.py`` with
    ``ast`` (importing it costs seconds): every ``add_argument("--x", "-y", ...)`` call of the module."""
    import ast
    import importlib.util

    origin = importlib.util.find_spec("lmms_eval").submodule_search_locations[0]
    tree = ast.parse(Path(origin, "__main__.py").read_text(encoding="utf-8"))
    flags = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            flags.update(a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-"))
    return flags


def test_every_flag_of_lmms_eval_has_a_row():
    listed = set().union(*(flags for flags, _ in _table()))
    flags = _lmms_eval_flags()
    assert {"--model", "--tasks", "--config", "--hf_hub_log_args"} <= flags  # the reading found the parser
    # argparse's aliases: the row names one spelling
    aliases = {"--process-docs-parallel", "--num_samples", "-c", "-b"}
    assert flags - listed - aliases == set()
    from lmms_spatial.plugin import lmms_eval_version

    if lmms_eval_version() == "0.7.3":  # the table's version; 0.7.0 lacks --swanlab_* and --process_docs_parallel
        assert listed - flags == set()


def test_each_row_cites_tests_that_exist():
    for flags, cited in _table():
        if cited == "-":
            continue
        names = re.findall(r"`([^`]+::\w+)`", cited)
        assert names, (flags, cited)
        for name in names:
            path, _, function = name.partition("::")
            path = FLAGS_TESTS if path == "F" else path
            source = (REPO / path).read_text(encoding="utf-8")
            assert f"def {function}(" in source, (flags, name)
