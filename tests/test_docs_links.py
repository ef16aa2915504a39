"""Every relative link in README.md and docs/*.md leads somewhere: the file exists, and its ``#anchor`` is a
heading of that file, spelt as GitHub spells it.

The README is short because it links to ``docs/``; a page renamed or a heading reworded would otherwise leave
the README pointing at nothing, and nobody reads every link by hand. The checker below is tested on its own
first (a made-up repository with the usual mistakes), then run on the real pages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"`[^`]*`")


def _prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks: a ``# comment`` in a bash block is not a heading."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, link targets and punctuation dropped (``_`` and ``-`` kept),
    spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file; repeated headings get ``-1``, ``-2``, ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(page: Path) -> list[str]:
    """``'<target>: <why>'`` for each relative link of ``page`` that leads nowhere (web links are not
    fetched: the tests never touch the network)."""
    problems = []
    for line in _prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            linked = (page.parent / path_part).resolve() if path_part else page
            if not linked.exists():
                problems.append(f"{target}: no file {linked}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                problems.append(f"{target}: no heading with anchor #{anchor} in {linked.name}")
    return problems


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


# The checker itself, on a made-up repository.


def test_slugs_are_githubs():
    assert (
        slug("Whole runs (`lmms_spatial/plugin/`): no answer is lost")
        == "whole-runs-lmms_spatialplugin-no-answer-is-lost"
    )
    assert slug("Releases and prepared copies (`lmms_spatial/data/prepare.py`)") == (
        "releases-and-prepared-copies-lmms_spatialdatapreparepy"
    )
    assert slug("`lmms-spatial bench --runners`") == "lmms-spatial-bench---runners"
    assert slug("See [the docs](docs/x.md) now") == "see-the-docs-now"


def test_a_missing_page_a_wrong_anchor_and_a_wrong_relative_path_are_each_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "results.md").write_text("# Results\n\n## Exit status\n\n## Exit status\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        "Fine: [results](docs/results.md), [exit](docs/results.md#exit-status), "
        "[again](docs/results.md#exit-status-1), [web](https://example.org/x.md#nothing), [here](#install).\n"
        "## Install\n"
        "Broken: [gone](docs/long-runs.md), [anchor](docs/results.md#exit-codes), [up](../docs/results.md).\n"
        "In code, not a link: `[x](docs/nothing.md)`.\n"
        "```bash\n# [x](docs/nothing.md) in a fence\n```\n"
    )
    problems = broken_links(readme)
    assert [p.split(":")[0] for p in problems] == [
        "docs/long-runs.md",
        "docs/results.md#exit-codes",
        "../docs/results.md",
    ]
    assert "no heading with anchor #exit-codes in results.md" in problems[1]


def test_a_heading_inside_a_code_fence_is_no_anchor(tmp_path):
    page = tmp_path / "a.md"
    page.write_text("# Title\n\n```markdown\n### Table 3\n```\n[t](#table-3)\n")
    assert anchors(page) == {"title"}
    assert broken_links(page) == ["#table-3: no heading with anchor #table-3 in a.md"]


# The real pages.


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading(page):
    assert broken_links(page) == []


def test_the_readme_stays_a_front_page_and_keeps_ci_s_test_command():
    """Issue 43: at most 160 lines; ``.ci/run`` runs "the README's test command", which is ``pytest``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 160
    assert re.search(r"^pytest(\s+#|$)", text, re.M), "the README's test command is `pytest`"
    assert re.search(r"^pytest$", (REPO / ".ci" / "run").read_text(), re.M)
