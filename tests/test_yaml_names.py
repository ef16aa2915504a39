"""Names our task YAMLs declare: a tag never shares a group's name (lmms-eval 0.7.3 refuses such a tag, "already
registered as a group", and leaves the task out), in the shipped benchmarks and in what the scaffold writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lmms_spatial.data.registry import BENCHMARKS

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "lmms_spatial" / "scaffold" / "templates"
_KEY = re.compile(r"^(group|tag):[ \t]*([^\s#]*)")
_ITEM = re.compile(r"^\s+-\s*([^\s#]+)")


def _declared(text: str) -> dict[str, set[str]]:
    """{"group": names, "tag": names} of one YAML (``tag: x``, or a list of ``- x`` lines under ``tag:``)."""
    found: dict[str, set[str]] = {"group": set(), "tag": set()}
    key = None
    for line in text.splitlines():
        head, item = _KEY.match(line), _ITEM.match(line)
        if head:
            key = None if head.group(2) else head.group(1)
            if head.group(2):
                found[head.group(1)].add(head.group(2))
        elif item and key:
            found[key].add(item.group(1))
        else:
            key = None
    return found


def _yamls() -> list[Path]:
    return sorted((ROOT / "tasks").rglob("*.yaml")) + sorted(TEMPLATES.rglob("*.yaml.tmpl"))


def _groups() -> set[str]:
    return set().union(*(_declared(path.read_text(encoding="utf-8"))["group"] for path in _yamls()))


def test_the_reading_finds_single_and_listed_names():
    assert _declared("task: a\ntag:\n  - x\n  - y\ngroup: g\n") == {"group": {"g"}, "tag": {"x", "y"}}
    assert _declared("tag: z\n") == {"group": set(), "tag": {"z"}}


def test_the_reading_sees_our_groups():
    assert {"spatial_suite", "mmsi"} <= _groups()


# every benchmark's folder (``pytest -k <key>``), the YAMLs beside them (spatial_suite.yaml) and the scaffold's
FOLDERS = {
    **{key: sorted((ROOT / "tasks" / key).rglob("*.yaml")) for key in BENCHMARKS},
    "shared": sorted((ROOT / "tasks").glob("*.yaml")),
    "scaffold": sorted(TEMPLATES.rglob("*.yaml.tmpl")),
}


@pytest.mark.parametrize("folder", list(FOLDERS))
def test_no_tag_of_ours_is_also_a_groups_name(folder):
    groups = _groups()
    tags = {str(p.relative_to(ROOT)): _declared(p.read_text(encoding="utf-8"))["tag"] for p in FOLDERS[folder]}
    clashes = {path: sorted(names & groups) for path, names in tags.items()}
    assert {path: names for path, names in clashes.items() if names} == {}
