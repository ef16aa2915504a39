"""docs/running.md's table of lmms-eval's flags: every flag of ``lmms-eval --help`` has a row, and each test it
cites exists."""

from __future__ import annotations

import re
import sys
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


def _lmms_eval_flags(monkeypatch) -> set[str]:
    from lmms_eval import __main__ as cli

    monkeypatch.setattr(sys, "argv", ["lmms-eval"])
    parser, _ = cli.parse_eval_args()
    return {option for action in parser._actions for option in action.option_strings} - {"-h", "--help"}


def test_every_flag_of_lmms_eval_has_a_row(monkeypatch):
    listed = set().union(*(flags for flags, _ in _table()))
    flags = _lmms_eval_flags(monkeypatch)
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
