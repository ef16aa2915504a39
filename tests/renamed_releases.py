"""Releases whose columns were renamed, as a changed release might name them (tests of the column mapping)."""

from __future__ import annotations

import json
from pathlib import Path

from hub_releases import dori_release

DORI_RENAMES = {"question": "query", "answer": "correct_option", "task": "task_name"}
DORI_MAP = "task=task_name,question=query,answer=correct_option"


def renamed_dori_release() -> dict[str, bytes]:
    """The DORI fixture release with three columns renamed as another release might name them."""
    files = dori_release()
    rows = [json.loads(line) for line in files["questions.jsonl"].decode().splitlines()]
    rows = [{DORI_RENAMES.get(k, k): v for k, v in row.items()} for row in rows]
    files["questions.jsonl"] = "".join(json.dumps(r) + "\n" for r in rows).encode()
    return files


def write_release(files: dict[str, bytes], root: Path) -> Path:
    """``files`` written under ``root``, a local copy of the release."""
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root
