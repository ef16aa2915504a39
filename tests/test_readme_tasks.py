"""The README's task table names every task and group a user can type after ``--tasks``, and nothing else.

A benchmark that gains a task (or renames one) must show up on the front page: this reads the names from the
task YAMLs themselves (``task:`` of a task, ``group:`` of a group) and matches them against the table's first
column, where ``<...>`` stands for a name part and ``{a,b}`` for a list of them. Each benchmark's rows are checked
under its key (``pytest -k <key>``): its names have rows, and the rows of its paper (second column) name its tasks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lmms_spatial.data.registry import BENCHMARKS

REPO = Path(__file__).resolve().parents[1]


def yaml_names(folder: Path = REPO / "tasks") -> set[str]:
    """Every task and group name the YAMLs under ``folder`` define (a ``task:`` holding a list is a group's
    members)."""
    names = set()
    for path in folder.rglob("*.yaml"):
        for _key, value in re.findall(r"^(task|group):[ \t]*(\S+)[ \t]*$", path.read_text(), re.M):
            names.add(value)
    return names


def table_rows(readme: str) -> list[tuple[str, str]]:
    """(key of the first column as written, the paper it names in the second column) of each name in the table
    under ``## Tasks``: ``[MMSI-Bench](https://...)`` and ``MMSI-Bench`` name one paper."""
    section = readme.split("\n## Tasks\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("| `"):
            first_cell, paper = (line.split(" | ") + [""])[:2]
            paper = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", paper).strip()
            rows += [(key, paper) for key in re.findall(r"`([^`]+)`", first_cell)]
    return rows


def table_patterns(readme: str) -> list[str]:
    """The keys of the first column of the table under ``## Tasks``, as written."""
    return [key for key, _paper in table_rows(readme)]


def to_regex(key: str) -> re.Pattern[str]:
    """``dori_<type>_<granularity>`` -> ``dori_[a-z0-9_]+_[a-z0-9_]+``; ``x_{a,b}`` -> ``x_(?:a|b)``."""
    out = ""
    for part in re.split(r"(<[^>]+>|\{[^}]+\})", key):
        if part.startswith("<"):
            out += "[a-z0-9_]+"
        elif part.startswith("{"):
            out += "(?:" + "|".join(map(re.escape, part[1:-1].split(","))) + ")"
        else:
            out += re.escape(part)
    return re.compile(out)


def test_the_pattern_reading_matches_what_the_table_means():
    assert to_regex("mmperspective_{vpp,clp}").fullmatch("mmperspective_clp")
    assert not to_regex("mmperspective_{vpp,clp}").fullmatch("mmperspective_vap")
    assert to_regex("dori_<type>_<granularity>").fullmatch("dori_view_parallelism_coarse")
    assert not to_regex("dori").fullmatch("dori_coarse")


def test_every_task_and_group_name_has_a_row_and_every_row_names_one():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    patterns = [to_regex(key) for key in table_patterns(readme)]
    names = yaml_names()
    assert len(names) > 100  # the five benchmarks' tasks were found
    unlisted = sorted(name for name in names if not any(p.fullmatch(name) for p in patterns))
    assert unlisted == [], f"add these to the README's task table: {unlisted}"
    stale = [p.pattern for p in patterns if not any(p.fullmatch(name) for name in names)]
    assert stale == [], f"the README's task table names tasks that do not exist: {stale}"


@pytest.mark.parametrize("key", list(BENCHMARKS))
def test_every_task_and_group_of_the_benchmark_has_a_row_and_its_paper_s_rows_name_its_tasks(key):
    rows = [(to_regex(pattern), paper) for pattern, paper in table_rows((REPO / "README.md").read_text("utf-8"))]
    names = yaml_names(REPO / "tasks" / key)
    assert names, f"tasks/{key}/ defines no task"
    unlisted = sorted(name for name in names if not any(p.fullmatch(name) for p, _ in rows))
    papers = {paper for p, paper in rows if any(p.fullmatch(name) for name in names)}
    stale = [p.pattern for p, paper in rows if paper in papers and not any(p.fullmatch(name) for name in names)]
    assert (unlisted, stale) == ([], []), (
        f"README.md's task table: add rows for {unlisted}; its rows of {key}'s paper name no task of it: {stale}"
    )
