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

import glob
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from lmms_spatial import run_options
from lmms_spatial.conditions import KEY, RunConditions, join_model_args, model_label, parse_model_args
from lmms_spatial.models import stages
from lmms_spatial.models._base import TextOnlyModel
from lmms_spatial.run_state import ModelArgsError, RunRefused

_SAMPLES_FILE = re.compile(r"^(?P<stamp>.*?)_samples_(?P<task>.+)\.jsonl$")


class MissingResponsesError(RunRefused, LookupError):
    """Requests the samples hold no answer for: the message counts and names them."""


class PromptMismatchError(RunRefused, ValueError):
    """Answers logged for other questions than the ones asked: the message says which and how they differ."""


class SamplesError(RunRefused, ValueError):
    """Samples that cannot be replayed as given (a file's name, a line that is no sample): the message names the
    file and line."""


class SamplesNotFound(RunRefused, FileNotFoundError):
    """``samples=`` names nothing to replay: the message names the path."""


def _first_text(value: Any) -> str | None:
    while isinstance(value, (list, tuple)):
        if not value:
            return None
        value = value[0]
    return value if isinstance(value, str) else None


@dataclass
class LoggedRun:
    """One earlier run a replay may answer from: the samples files of one start stamp in one folder, and the
    ``<stamp>_results.json`` beside them that says which model gave them, with which settings."""

    stamp: str
    folder: Path
    tasks: dict[str, Path] = field(default_factory=dict)  # {task: its samples file}
    results: Path | None = None
    label: str = "unknown model (no results file beside the samples)"
    settings: dict[str, Any] | None = None  # what makes answers differ (:data:`SETTINGS`); None: not known

    @property
    def name(self) -> str:
        return str(self.results) if self.results is not None else str(self.folder / f"{self.stamp}_samples_*.jsonl")


# the settings of a run that change its answers: two runs that agree on all of them answered as one model
SETTINGS = ("model", "model_args", "gen_kwargs", "random_seed", "numpy_seed", "torch_seed", "software", "weights")


class MixedRunsError(RunRefused, ValueError):
    """The samples hold answers of different models or settings: replaying them would score a mixture under
    one label. Its message is the run's whole last line."""


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in SETTINGS:
        value = config.get(key)
        # ``a=1,b=2`` and ``b=2,a=1`` are the same arguments
        out[key] = sorted(parse_model_args(value).items()) if key in ("model_args", "gen_kwargs") else value
    return out


def _read_results(run: LoggedRun) -> None:
    """Fill ``run``'s label and settings from its results file, when there is a readable one."""
    results = run.folder / f"{run.stamp}_results.json"
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    config = data.get("config") if isinstance(data, dict) else None
    if not isinstance(config, dict):
        return
    from lmms_spatial.environment import compared

    recorded = RunConditions.from_json(data.get(KEY))
    run.results, run.settings = results, _settings(config)
    # the lmms-eval / transformers / torch versions that gave the answers (a run of ours records them): answers
    # of two versions are two runs, never one model's
    run.settings["software"] = [list(pair) for pair in compared(recorded.environment)]
    # and the weights (a checkpoint rebuilt at one path gives other answers under the same model_args)
    run.settings["weights"] = recorded.model.fingerprint
    run.label = str(recorded.model.label or model_label(config.get("model"), config.get("model_args")))


def _samples_of(part: str, root: Path) -> list[Path]:
    if root.is_dir():
        return sorted(root.rglob("*_samples_*.jsonl"))
    if root.name.endswith("_results.json"):  # one run: every samples file of its start stamp beside it
        stamp = root.name[: -len("_results.json")]
        files = sorted(f for f in root.parent.glob(f"{glob.escape(stamp)}_samples_*.jsonl"))
        if not files:
            raise SamplesNotFound(f"replay: no samples files beside {part} (was the run made with --log_samples?)")
        return files
    return [root]


def find_runs(spec: str) -> list[LoggedRun]:
    """Every run whose samples files are under the given paths (files, folders searched recursively, or a run's
    ``_results.json``, joined with ``:``), oldest first."""
    runs: dict[tuple[Path, str], LoggedRun] = {}
    for part in filter(None, spec.split(os.pathsep)):
        root = Path(part).expanduser()
        if not root.exists():
            raise SamplesNotFound(f"replay: samples path {part!r} does not exist")
        for f in _samples_of(part, root):
            m = _SAMPLES_FILE.match(f.name)
            if not m:
                raise SamplesError(f"replay: {f} is not named <date>_samples_<task>.jsonl")
            run = runs.get((f.parent, m.group("stamp")))
            if run is None:
                run = runs[(f.parent, m.group("stamp"))] = LoggedRun(m.group("stamp"), f.parent)
                _read_results(run)
            run.tasks[m.group("task")] = f
    return sorted(runs.values(), key=lambda r: (r.stamp, str(r.folder)))


def _differences(runs: list[LoggedRun]) -> list[str]:
    if any(r.settings is None for r in runs):
        return ["no results file beside some of them says which model gave them"]
    return [key for key in SETTINGS if len({json.dumps(r.settings[key], default=str) for r in runs}) > 1]


def _describe(run: LoggedRun) -> str:
    settings = run.settings or {}
    args = join_model_args(dict(settings.get("model_args") or []))
    gen = join_model_args(dict(settings.get("gen_kwargs") or []))
    software = ", ".join(f"{name} {version}" for name, version in settings.get("software") or [])
    what = " ".join(x for x in (str(settings.get("model") or ""), args, f"gen_kwargs {gen}" if gen else "",
                                f"on {software}" if software else "") if x)  # fmt: skip
    return f"{run.label}{f' ({what})' if what else ''}: {run.name}, tasks {', '.join(sorted(run.tasks))}"


REPLAY_GIVEN = "replay: samples={spec}"
REPLAY_FIX = "Point samples= at one run: its folder, its _results.json or its samples files (e.g. samples={example})"


def check_one_model(spec: str, runs: list[LoggedRun], given: str = REPLAY_GIVEN, fix: str = REPLAY_FIX) -> None:
    """Refuse samples of several runs that differ in model or settings (:class:`MixedRunsError`); ``given`` and
    ``fix`` say what was given and what to do, for the command that reads them (``{spec}``, ``{example}``)."""
    if len(runs) < 2:
        return
    differ = _differences(runs)
    if not differ:
        return
    newest = runs[-1]
    example = newest.results or os.pathsep.join(str(f) for _, f in sorted(newest.tasks.items()))
    raise MixedRunsError(
        f"{given.format(spec=spec)} holds {len(runs)} runs of different models or settings ({', '.join(differ)}), "
        f"which would be scored as one model: "
        + "; ".join(_describe(r) for r in runs)
        + f". {fix.format(example=example)}"
    )


def task_runs(spec: str, keep: Callable[[str], bool] | None = None, given: str = REPLAY_GIVEN,
              fix: str = REPLAY_FIX) -> dict[str, list[LoggedRun]]:  # fmt: skip
    """{task: the runs whose answers a replay of ``spec`` gives, newest first}, once every run found is of one model
    with the same settings (:func:`check_one_model`). A task in several runs: the newest, and each older run whose
    documents none of the newer ones holds (the shards of one run split with ``--offset``/``--limit``, e.g. a job
    array: docs/running.md); an older run answering documents a newer one holds again is left out, and said.
    ``keep``: the tasks wanted (a run holding none of them is not read, nor compared with the others)."""
    runs = find_runs(spec)
    if keep is not None:
        for run in runs:
            run.tasks = {task: path for task, path in run.tasks.items() if keep(task)}
        runs = [run for run in runs if run.tasks]
    check_one_model(spec, runs, given, fix)
    chosen: dict[str, list[LoggedRun]] = {}
    held: dict[str, set[int]] = {}
    for run in reversed(runs):  # newest first: a newer run of the same model and settings wins
        for task, path in run.tasks.items():
            if task not in chosen:
                chosen[task] = [run]
                held[task] = _doc_ids(path) if len([r for r in runs if task in r.tasks]) > 1 else set()
                continue
            ids = _doc_ids(path)
            if ids & held[task]:
                logger.warning(f"replay: task {task} is in {run.name} and {chosen[task][0].name} (same model and "
                               f"settings); using the newest, {chosen[task][0].tasks[task]}")  # fmt: skip
                continue
            chosen[task].append(run)
            held[task] |= ids
    return chosen


def sources(spec: str, keep: Callable[[str], bool] | None = None, given: str = REPLAY_GIVEN,
            fix: str = REPLAY_FIX) -> dict[str, LoggedRun]:  # fmt: skip
    """{task: the newest run whose answers a replay of ``spec`` gives} (:func:`task_runs`)."""
    return {task: runs[0] for task, runs in task_runs(spec, keep, given, fix).items()}


def _doc_ids(path: Path) -> set[int]:
    """The documents a samples file answers (a line that is no sample is named by :func:`load_samples`)."""
    ids = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                ids.add(int(json.loads(line)["doc_id"]))
            except (ValueError, KeyError, TypeError):
                continue
    return ids


def find_samples_files(spec: str) -> dict[str, list[Path]]:
    """{task: its samples files} for every samples file under the given paths (:func:`task_runs`); samples of runs
    of different models or settings are refused (:class:`MixedRunsError`)."""
    return {task: [run.tasks[task] for run in runs] for task, runs in task_runs(spec).items()}


@dataclass
class LoggedSamples:
    """What replay needs from samples files, keyed by (task, doc_id)."""

    responses: dict[tuple[str, int], str] = field(default_factory=dict)
    prompts: dict[tuple[str, int], str] = field(default_factory=dict)  # the logged ``input``
    doc_keys: dict[tuple[str, int], str] = field(default_factory=dict)  # document ``id`` in the score record
    run_options: dict[str, dict[str, str]] = field(default_factory=dict)  # {task: options its records carry}


def load_samples(files: dict[str, Path | list[Path]]) -> LoggedSamples:
    """The answers of ``files`` ({task: a samples file, or the files of its shards})."""
    logged = LoggedSamples()
    for task, paths in files.items():
        options_seen: dict[str, list] = {}
        for path in [paths] if isinstance(paths, (str, Path)) else paths:
            _read_samples(task, Path(path), logged, options_seen)
        if len(options_seen) > 1:
            one = len({str(path) for _, path, _ in options_seen.values()}) == 1
            shown = "; ".join(f"{k} ({'' if one else f'{path.name} '}line {line})"
                              for k, (_, path, line) in options_seen.items())  # fmt: skip
            where = f"{next(iter(options_seen.values()))[1]} mixes" if one else f"the samples of {task} mix"
            raise run_options.RunOptionsConflict(f"replay: {where} run options: {shown}")
        if options_seen:
            logged.run_options[task] = next(iter(options_seen.values()))[0]
    return logged


def _read_samples(task: str, path: Path, logged: LoggedSamples, options_seen: dict[str, list]) -> None:
    with open(path, encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                sample = json.loads(line)
                doc_id = int(sample["doc_id"])
            except (ValueError, KeyError) as exc:
                raise SamplesError(f"replay: {path}:{line_no}: not an lmms-eval sample ({exc})") from exc
            text = _first_text(sample["resps"]) if "resps" in sample else None
            if text is None:
                text = _first_text(sample.get("filtered_resps"))
            if text is None:
                raise SamplesError(f"replay: {path}:{line_no}: no text response for doc_id {doc_id}")
            logged.responses[(task, doc_id)] = text
            if isinstance(sample.get("input"), str):
                logged.prompts[(task, doc_id)] = sample["input"]
            for value in sample.values():  # stage outputs (e.g. OSR maps) logged with the score
                stages.restore_from_record(value)
                if isinstance(value, dict) and value.get("id") is not None:
                    logged.doc_keys.setdefault((task, doc_id), str(value["id"]))
                if isinstance(value, dict) and (options := run_options.from_record(value)) is not None:
                    options_seen.setdefault(run_options.describe(options), [options, path, line_no])


def load_responses(files: dict[str, Path]) -> dict[tuple[str, int], str]:
    return load_samples(files).responses


PROMPT_CHECKS = ("error", "warn", "off")


class Replay(TextOnlyModel):
    """Answers from samples files. ``prompt_check``: what to do when a request's prompt differs
    from the logged one (``error``, the default: the answer was given to another question)."""

    def __init__(self, samples: str = "", prompt_check: str = "error", **kwargs) -> None:
        super().__init__(**kwargs)
        if not samples:
            raise ModelArgsError("replay needs --model_args samples=<samples .jsonl file or folder>")
        if prompt_check not in PROMPT_CHECKS:
            raise ModelArgsError(f"replay: prompt_check must be one of {PROMPT_CHECKS}, got {prompt_check!r}")
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
