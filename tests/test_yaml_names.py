"""Names our task YAMLs declare: a tag never shares a group's name (lmms-eval 0.7.3 refuses such a tag, "already
registered as a group", and leaves the task out), in the shipped benchmarks and in what the scaffold writes."""

from __future__ import annotations

import re
from pathlib import Path

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


def test_the_reading_finds_single_and_listed_names():
    assert _declared("task: a\ntag:\n  - x\n  - y\ngroup: g\n") == {"group": {"g"}, "tag": {"x", "y"}}
    assert _declared("tag: z\n") == {"group": set(), "tag": {"z"}}


def test_no_tag_of_ours_is_also_a_groups_name():
    declared = [_declared(path.read_text(encoding="utf-8")) for path in _yamls()]
    groups = set().union(*(d["group"] for d in declared))
    assert "spatial_suite" in groups and "mmsi" in groups  # the reading sees our groups
    paths = _yamls()
    clashes = {str(path.relative_to(ROOT)): sorted(d["tag"] & groups) for path, d in zip(paths, declared, strict=True)}
    assert {path: names for path, names in clashes.items() if names} == {}
