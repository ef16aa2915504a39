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

The answers must meet the questions they were given to. Run options recorded in the score
records (:mod:`lmms_spatial.run_options`, e.g. DORI's option seed) are restored before the
tasks are built, and an environment that contradicts them fails the run. Each request's
prompt is compared with the logged ``input``: a difference (changed data, option order or
prompt template) fails the run unless ``prompt_check=warn`` (or ``off``). A sample logged
without its prompt is matched on the document id its score record carries (every task of ours
logs it) against the id of the document now at that doc_id; a sample with neither cannot be
checked and fails the run the same way (``doc_id`` alone is only a position: shifted or
filtered data would pair answers with other questions).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_spatial import run_options
from lmms_spatial.models import stages
from lmms_spatial.models._base import TextOnlyModel

_SAMPLES_FILE = re.compile(r"^(?P<stamp>.*?)_samples_(?P<task>.+)\.jsonl$")


class MissingResponsesError(LookupError):
    pass


class PromptMismatchError(ValueError):
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


@dataclass
class LoggedSamples:
    """What replay needs from samples files, keyed by (task, doc_id)."""

    responses: dict[tuple[str, int], str] = field(default_factory=dict)
    prompts: dict[tuple[str, int], str] = field(default_factory=dict)  # the logged ``input``
    doc_keys: dict[tuple[str, int], str] = field(default_factory=dict)  # document ``id`` in the score record
    run_options: dict[str, dict[str, str]] = field(default_factory=dict)  # {task: options its records carry}


def load_samples(files: dict[str, Path]) -> LoggedSamples:
    logged = LoggedSamples()
    for task, path in files.items():
        options_seen: dict[str, list] = {}
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
                logged.responses[(task, doc_id)] = text
                if isinstance(sample.get("input"), str):
                    logged.prompts[(task, doc_id)] = sample["input"]
                for value in sample.values():  # stage outputs (e.g. OSR maps) logged with the score
                    stages.restore_from_record(value)
                    if isinstance(value, dict) and value.get("id") is not None:
                        logged.doc_keys.setdefault((task, doc_id), str(value["id"]))
                    if isinstance(value, dict) and (options := run_options.from_record(value)) is not None:
                        options_seen.setdefault(run_options.describe(options), [options, line_no])
        if len(options_seen) > 1:
            shown = "; ".join(f"{k} (line {v[1]})" for k, v in options_seen.items())
            raise run_options.RunOptionsConflict(f"replay: {path} mixes run options: {shown}")
        if options_seen:
            logged.run_options[task] = next(iter(options_seen.values()))[0]
    return logged


def load_responses(files: dict[str, Path]) -> dict[tuple[str, int], str]:
    return load_samples(files).responses


PROMPT_CHECKS = ("error", "warn", "off")


class Replay(TextOnlyModel):
    """Answers from samples files. ``prompt_check``: what to do when a request's prompt differs
    from the logged one (``error``, the default: the answer was given to another question)."""

    def __init__(self, samples: str = "", prompt_check: str = "error", **kwargs) -> None:
        super().__init__(**kwargs)
        if not samples:
            raise ValueError("replay needs --model_args samples=<samples .jsonl file or folder>")
        if prompt_check not in PROMPT_CHECKS:
            raise ValueError(f"replay: prompt_check must be one of {PROMPT_CHECKS}, got {prompt_check!r}")
        self.prompt_check = prompt_check
        self.files = find_samples_files(str(samples))
        logged = load_samples(self.files)
        self.responses, self.prompts, self.doc_keys = logged.responses, logged.prompts, logged.doc_keys
        # before lmms-eval builds the tasks (it creates the model first): documents and prompts
        # must be the ones the answers were generated for
        for name, value in run_options.restore(logged.run_options).items():
            logger.warning(f"replay: {name}={value} restored from the samples (the answers were generated with it)")
        logger.info(f"replay: {len(self.responses)} responses for tasks {sorted(self.files)}")

    def _lookup(self, requests: Iterable) -> list[str | tuple[str, int]]:
        return [self.responses.get((r.task_name, int(r.doc_id)), (r.task_name, int(r.doc_id))) for r in requests]

    def _current_doc_key(self, request) -> str | None:
        """The ``id`` of the document the request is about now (lmms-eval's ``task_dict``), if any."""
        split = request.args[-1] if request.args and isinstance(request.args[-1], str) else None
        try:
            doc = self.task_dict[request.task_name][split][int(request.doc_id)]
        except (AttributeError, KeyError, IndexError, TypeError):
            return None
        value = doc.get("id") if isinstance(doc, dict) else None
        return None if value is None else str(value)

    def _refuse(self, message: str) -> None:
        """Answers that may belong to other questions: fail (``prompt_check=error``) or warn."""
        if self.prompt_check == "error":
            raise PromptMismatchError(message)
        logger.warning(message)

    def _check_documents(self, requests: list) -> None:
        """Samples logged without a prompt: the logged document id must be the current one."""
        moved, unknown = [], []
        for r in requests:
            key = (r.task_name, int(r.doc_id))
            if key in self.prompts:
                continue
            logged, current = self.doc_keys.get(key), self._current_doc_key(r)
            if logged is None or current is None:
                unknown.append(key)
            elif logged != current:
                moved.append((*key, logged, current))
        if moved:
            task, doc_id, logged, current = moved[0]
            message = (
                f"replay: {len(moved)} of {len(requests)} logged answers belong to other documents, e.g. {task} "
                f"doc_id {doc_id} was answered for document {logged!r} but is now document {current!r} (data "
                "changed or shifted). prompt_check=warn scores them anyway."
            )
            self._refuse(message)
        if unknown:
            task, doc_id = unknown[0]
            message = (
                f"replay: {len(unknown)} of {len(requests)} samples carry neither their prompt ('input') nor a "
                f"document id to check that they answer the current documents, e.g. {task} doc_id {doc_id}. "
                "prompt_check=warn scores them anyway, by position alone."
            )
            self._refuse(message)

    def _check_prompts(self, requests: list) -> None:
        if self.prompt_check == "off":
            return
        self._check_documents(requests)
        changed = []
        for r in requests:
            logged = self.prompts.get((r.task_name, int(r.doc_id)))
            if logged is not None and isinstance(r.args[0], str) and r.args[0] != logged:
                changed.append((r.task_name, int(r.doc_id), logged, r.args[0]))
        if not changed:
            return
        task, doc_id, old, new = changed[0]
        at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
        message = (
            f"replay: {len(changed)} of {len(requests)} prompts differ from the logged ones, e.g. {task} doc_id "
            f"{doc_id} at character {at}: logged {old[max(0, at - 30) : at + 50]!r}, now "
            f"{new[max(0, at - 30) : at + 50]!r}. The logged answers were given to other questions (changed "
            "data, option order or prompt). prompt_check=warn scores them anyway."
        )
        self._refuse(message)

    def generate_until(self, requests) -> list[str]:
        requests = list(requests)
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
        self._check_prompts(requests)
        return answers  # type: ignore[return-value]
