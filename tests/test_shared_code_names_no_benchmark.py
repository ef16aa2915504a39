"""The shared machinery (``lmms_spatial/``) names no benchmark in its code: what it knows of one, it reads from that
benchmark's ``BENCHMARK`` (``tasks/<key>/__init__.py``). Docstrings and comments may use a benchmark as an example;
string literals, names and attributes may not. The speed benchmarks (``lmms_spatial/bench``) measure given
benchmarks' data and are left out, as the issue's ``git grep`` leaves them out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from lmms_spatial.data.registry import BENCHMARKS
from lmms_spatial.metrics.rubrics import RUBRICS

PACKAGE = Path(__file__).resolve().parents[1] / "lmms_spatial"
LEFT_OUT = ("bench",)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _named(source: str, words: re.Pattern[str]) -> list[str]:
    """Every string literal (not a docstring), name and attribute of ``source`` in which ``words`` occurs."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        elif isinstance(node, ast.Name):
            text = node.id
        elif isinstance(node, ast.Attribute):
            text = node.attr
        else:
            continue
        if words.search(text):
            hits.append(f"line {node.lineno}: {text!r}")
    return sorted(hits, key=lambda hit: int(hit.split(":")[0].removeprefix("line ")))


def _benchmark_words() -> re.Pattern[str]:
    names = sorted({*BENCHMARKS, *(r for r in RUBRICS if r.split("_")[0] in {k.split("_")[0] for k in BENCHMARKS})})
    return re.compile("|".join(re.escape(n) for n in names), re.IGNORECASE)


def test_no_module_of_the_shared_machinery_names_a_benchmark_in_its_code():
    words = _benchmark_words()
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in LEFT_OUT:
            continue
        hits = _named(path.read_text(encoding="utf-8"), words)
        if hits:
            found[str(path.relative_to(PACKAGE.parent))] = hits
    assert found == {}, "move what the shared code knows of a benchmark into its BENCHMARK"


def test_a_benchmark_named_in_code_is_found_and_one_in_a_docstring_or_comment_is_not():
    words = _benchmark_words()
    source = '"""As ``--tasks mmsi`` shows."""\n# dori\nSCORED = {"osr_negative"}\nx = cfg.odi_bench\n'
    assert _named(source, words) == ["line 3: 'osr_negative'", "line 4: 'odi_bench'"]
