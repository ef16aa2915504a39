"""Finished lmms-eval runs as the report reads them: ``*_results.json`` plus its samples files."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmms_spatial import run_options

_SEED_ARG = re.compile(r"(^|,)\s*seed\s*=\s*[^,]*")


@dataclass
class Run:
    """One ``*_results.json`` and the samples files written next to it (same timestamp)."""

    results_file: Path
    data: dict[str, Any]
    label: str
    _samples: dict[str, list[dict[str, Any]] | None] = field(default_factory=dict, repr=False)

    @property
    def results(self) -> dict[str, dict[str, Any]]:
        return self.data.get("results", {})

    def has(self, task: str) -> bool:
        return task in self.results

    def value(self, task: str, metric: str) -> float | None:
        raw = self.results.get(task, {}).get(f"{metric},none")
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or math.isnan(raw):
            return None
        return float(raw)

    def samples(self, task: str) -> list[dict[str, Any]] | None:
        """The samples lines of ``task`` (None without a samples file)."""
        if task not in self._samples:
            stamp = self.results_file.name[: -len("_results.json")]
            path = self.results_file.parent / f"{stamp}_samples_{task}.jsonl"
            if not path.exists():
                self._samples[task] = None
            else:
                lines = path.read_text(encoding="utf-8").splitlines()
                self._samples[task] = [json.loads(line) for line in lines if line.strip()]
        return self._samples[task]

    def run_options(self, tasks: Iterable[str]) -> list[dict[str, str]]:
        """The distinct run options (:mod:`lmms_spatial.run_options`) the samples of ``tasks`` record."""
        records = []
        for task in sorted(set(tasks) & set(self.results)):
            first = next(iter(self.samples(task) or []), {})  # one run, one setting: the first sample says it
            records += [v for v in first.values() if isinstance(v, dict) and run_options.from_record(v) is not None][:1]
        return run_options.collect(records)


def model_label(data: dict[str, Any]) -> str:
    """``model`` plus its ``model_args`` without ``seed=``: runs differing only by seed share it."""
    config = data.get("config", {})
    model = str(config.get("model") or data.get("model_name") or "model")
    args = _SEED_ARG.sub("", str(config.get("model_args") or "")).strip(", ")
    return f"{model} ({args})" if args else model


def find_results_files(paths: Iterable[Path | str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_file() and p.name.endswith("_results.json"):
            files.append(p)
        elif p.is_dir():
            files.extend(sorted(p.rglob("*_results.json")))
        else:
            raise FileNotFoundError(f"{p}: neither a *_results.json file nor a folder")
    if not files:
        raise FileNotFoundError(f"no *_results.json under {', '.join(map(str, paths))}")
    return files


def load_runs(paths: Iterable[Path | str], labels: list[str] | None = None) -> list[Run]:
    """Every run found under ``paths``; ``labels`` (one per results file, in order) override the names."""
    files = find_results_files(paths)
    if labels and len(labels) != len(files):
        raise ValueError(f"{len(labels)} labels for {len(files)} results files: {[str(f) for f in files]}")
    runs = []
    for i, f in enumerate(files):
        data = json.loads(f.read_text(encoding="utf-8"))
        runs.append(Run(f, data, labels[i] if labels else model_label(data)))
    return runs


def group_by_label(runs: list[Run]) -> dict[str, list[Run]]:
    """Runs of one model (same label) are seeds of it; first-seen order."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    return groups
