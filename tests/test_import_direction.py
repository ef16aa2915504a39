"""Which way the package's rooms point: runtime code never imports the measuring tools."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "lmms_spatial"


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_model_code_imports_nothing_from_the_bench_package():
    offenders = {
        path.name: sorted(m for m in _imported_modules(path) if m.startswith("lmms_spatial.bench"))
        for path in sorted((PACKAGE / "models").glob("*.py"))
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}


def test_the_bench_takes_the_qwen_constants_from_the_model_code():
    from lmms_spatial.bench import checkpoints, floor
    from lmms_spatial.models import qwen2_5_vl_architecture as arch

    assert checkpoints.ARCHITECTURES["7b"] is arch.QWEN2_5_VL_7B
    assert (floor.LMMS_EVAL_MIN_PIXELS, floor.LMMS_EVAL_MAX_PIXELS) == (256 * 28 * 28, 1605632)
