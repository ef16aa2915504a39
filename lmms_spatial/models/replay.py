"""``--model replay``: answer every request with the response logged in samples files.

This is how old generations are re-scored with new metrics, without a GPU::

    lmms-eval --model replay --model_args samples=runs/qwen/ --tasks mmsi_vanilla

``samples`` is one lmms-eval 0.7.x ``<date>_samples_<task>.jsonl`` file or a folder searched
recursively for them (several folders/files may be joined with ``:``). The raw model
output (``resps``, before reasoning-tag stripping) is replayed; ``filtered_resps`` when
the file has no ``resps``. Stage outputs logged in score records (``stage_outputs``, e.g.
the cognitive maps of ``osr_qa_cogmap``) are restored, so re-scored samples log them
again. A request whose task and doc_id have no logged response fails the whole run,
naming them: a silently missing answer would change the numbers.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_spatial.models import stages
from lmms_spatial.models._base import TextOnlyModel

_SAMPLES_FILE = re.compile(r"^(?P<stamp>.*?)_samples_(?P<task>.+)\.jsonl$")


class MissingResponsesError(LookupError):
    pass


def _first_text(value: Any) -> str | None:
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    return value if isinstance(value, str) else None


def find_samples_files(spec: str) -> dict[str, Path]:
    """{task: newest samples file} for every samples file under the given paths."""
    found: dict[str, list[Path]] = {}
    for part in filter(None, spec.split(os.pathsep)):
        root = Path(part).expanduser()
        if not root.exists():
            raise FileNotFoundError(f"replay: samples path {part!r} does not exist")
        files = [root] if root.is_file() else sorted(root.rglob("*_samples_*.jsonl"))
        for f in files:
            m = _SAMPLES_FILE.match(f.name)
            if not m:
                raise ValueError(f"replay: {f} is not named <date>_samples_<task>.jsonl")
            found.setdefault(m.group("task"), []).append(f)
    chosen = {}
    for task, files in found.items():
        files = sorted(files, key=lambda p: (p.name, str(p)))
        if len(files) > 1:
            logger.warning(f"replay: {len(files)} samples files for task {task}; using the newest, {files[-1]}")
        chosen[task] = files[-1]
    return chosen


def load_responses(files: dict[str, Path]) -> dict[tuple[str, int], str]:
    responses: dict[tuple[str, int], str] = {}
    for task, path in files.items():
        with open(path, encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    sample = json.loads(line)
                    doc_id = int(sample["doc_id"])
                except (ValueError, KeyError) as exc:
                    raise ValueError(f"replay: {path}:{line_no}: not an lmms-eval sample ({exc})") from exc
                text = _first_text(sample["resps"]) if "resps" in sample else None
                if text is None:
                    text = _first_text(sample.get("filtered_resps"))
                if text is None:
                    raise ValueError(f"replay: {path}:{line_no}: no text response for doc_id {doc_id}")
                responses[(task, doc_id)] = text
                for value in sample.values():  # stage outputs (e.g. OSR maps) logged with the score
                    stages.restore_from_record(value)
    return responses


class Replay(TextOnlyModel):
    def __init__(self, samples: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        if not samples:
            raise ValueError("replay needs --model_args samples=<samples .jsonl file or folder>")
        self.files = find_samples_files(str(samples))
        self.responses = load_responses(self.files)
        logger.info(f"replay: {len(self.responses)} responses for tasks {sorted(self.files)}")

    def _lookup(self, requests: Iterable) -> list[str | tuple[str, int]]:
        return [self.responses.get((r.task_name, int(r.doc_id)), (r.task_name, int(r.doc_id))) for r in requests]

    def generate_until(self, requests) -> list[str]:
        answers = self._lookup(requests)
        missing = [a for a in answers if isinstance(a, tuple)]
        if missing:
            by_task: dict[str, list[int]] = {}
            for task, doc_id in missing:
                by_task.setdefault(task, []).append(doc_id)
            detail = "; ".join(
                f"{task}: {len(ids)} docs, e.g. doc_id {sorted(ids)[:10]}"
                + ("" if task in self.files else " (no samples file for this task)")
                for task, ids in sorted(by_task.items())
            )
            raise MissingResponsesError(f"replay: no logged response for {len(missing)} requests — {detail}")
        return answers  # type: ignore[return-value]
