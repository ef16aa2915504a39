"""A run's results and samples files: each run its own, and a file that could not be written is a failure.

lmms-eval 0.7.x names a run's files by the second the command started (``<date>_results.json``,
``<date>_samples_<task>.jsonl``), opens the results with ``"w"`` and the samples with ``"a"``: two runs into one
``--output_path`` started in the same second (a SLURM array, two shells) leave one results file and samples files
holding both runs' lines, and both exit 0. It also catches every error while writing them and logs a warning:
a full disk or a folder it may not write leaves a 0-byte results file, or none, and exit 0.

For a run of ours (its results hold the ``"lmms_spatial"`` key, :mod:`.conditions`), the results file's name is
taken with ``O_EXCL`` before lmms-eval writes it: when ``<date>`` is taken (its results file or a samples file
exists), the run's files are ``<date>_take002_...`` (``_take003``, ...), so each run's samples sit beside its own
results, which is how ``lmms-spatial report`` pairs them; and a folder's results and samples files sort by name in
the order their runs started, as lmms-eval's own names do (``_take`` sorts after ``_results`` and ``_samples``; the
name before, ``<date>-2``, sorted *before* ``<date>_``: a script taking ``sorted(...)[-1]`` as the newest run, the
suite's among them, read the run before it). After lmms-eval wrote them, each file is checked (results: JSON
that reads back; samples: one whole line per document); one that is not ends the run with exit 1 in one line
naming the folder, the cause and the fix. By then the answers are in the answer store (:mod:`.resume`), so the
same command run again asks the model for none of them. A results file that is empty or cut short is removed
(never left looking like a result); a samples file cut short is kept as ``....jsonl.partial``.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import sys
from pathlib import Path
from typing import Any

from lmms_spatial.plugin import failures

MAX_RUNS_PER_SECOND = 999  # the n-th run of a second is <date>_take<nnn>: three digits sort as numbers


def _is_ours(results: Any) -> bool:
    from lmms_spatial.conditions import KEY

    return isinstance(results, dict) and KEY in results


def reserve(folder: Path, stamp: str) -> str:
    """A name for this run's files in ``folder``: ``stamp``, else ``stamp_take002``, ``stamp_take003``... (each file
    sorts by name after the earlier runs' files) whose results file this process created (``O_EXCL``: two processes
    never get the same) and which no samples file uses yet."""
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(1, MAX_RUNS_PER_SECOND + 1):
        name = stamp if n == 1 else f"{stamp}_take{n:03d}"
        if glob.glob(os.path.join(glob.escape(str(folder)), f"{glob.escape(name)}_samples_*.jsonl")):
            continue  # samples of a run that wrote no results (it crashed, or is lmms-eval's own): not ours to append
        try:
            os.close(os.open(folder / f"{name}_results.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            continue
        return name
    raise FileExistsError(f"{MAX_RUNS_PER_SECOND} runs' results named {stamp} in {folder}")


class _Caught:
    """The exception lmms-eval was handling when it logged a warning (it logs and goes on); removed on exit."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self._handler: int | None = None

    def _sink(self, _message: Any) -> None:
        error = sys.exc_info()[1]
        if error is not None:
            self.errors.append(error)

    def __enter__(self) -> _Caught:
        try:
            from loguru import logger

            self._handler = logger.add(self._sink, level="WARNING", format="{message}")
        except Exception:  # the cause is a nicety: the check below does not need it
            self._handler = None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._handler is not None:
            from loguru import logger

            logger.remove(self._handler)


def _reason(error: BaseException | None, fallback: str) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return failures.describe(error) if error is not None else fallback


def _answers_line(results: Any) -> str:
    config = results.get("config") if isinstance(results, dict) else None
    kept = config.get("use_cache") if isinstance(config, dict) else None
    if kept:
        return f"the answers are kept in {kept}, so the same command run again asks the model for none of them"
    return "the answers were not kept (no answer store): the same command asks the model again"


def _line(state: dict[str, Any]) -> str:
    items = state["what"] + (["its samples files"] if state["samples_skipped"] else [])
    what = items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
    return (f"lmms-spatial: {what} could not be written into {state['folder']} ({state['reason']}): free space "
            f"there or make it writable (or give another --output_path), then run the same command; "
            f"{state['answers']}")  # fmt: skip


def _unwritten(tracker: Any, what: str | None, reason: str) -> None:
    """Name one more file that could not be written; the run's one line about its folder says them all."""
    run = tracker._lmms_spatial_run
    state = run.get("unwritten")
    old = _line(state) if state else None
    if state is None:
        state = run["unwritten"] = {"folder": run["folder"], "reason": reason, "what": [], "samples_skipped": False,
                                    "answers": run["answers"]}  # fmt: skip
    if what is None:
        state["samples_skipped"] = True
    else:
        state["what"].append(what)
    failures.replace_line(old, _line(state))


def _results_ok(path: Path) -> bool:
    try:
        return isinstance(json.loads(path.read_text(encoding="utf-8")), dict)
    except (OSError, ValueError):
        return False


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _save_results_aggregated(original):
    @functools.wraps(original)
    def save_results_aggregated(self, results, samples, datetime_str, *args, **kwargs):
        tracker = getattr(self, "general_config_tracker", None)
        model = getattr(tracker, "model_name_sanitized", None)
        if not self.output_path or not _is_ours(results) or model is None or not isinstance(datetime_str, str):
            return original(self, results, samples, datetime_str, *args, **kwargs)
        folder = Path(self.output_path) / model
        self._lmms_spatial_run = {"folder": folder, "answers": _answers_line(results), "written": False}
        try:
            name = reserve(folder, datetime_str.replace(":", "-"))
        except OSError as exc:  # lmms-eval would write under a name that may be another run's: not called
            _unwritten(self, "the results file", _reason(exc, ""))
            return None
        with _Caught() as caught:
            returned = original(self, results, samples, name, *args, **kwargs)
        path = folder / f"{name}_results.json"
        if _results_ok(path):
            self._lmms_spatial_run["written"] = True
            _pushed_or_said(self, path, caught.errors)
        else:
            _remove(path)  # empty or cut short: never left looking like a result
            _unwritten(self, "the results file", _reason(next(iter(caught.errors), None), "an empty file"))
        return returned

    save_results_aggregated._lmms_spatial = True
    return save_results_aggregated


def _pushed_or_said(tracker: Any, path: Path, errors: list[BaseException]) -> None:
    """A run asked to push its results to the Hub: what was written is kept in the run's state (a failure later in
    the push names it, :mod:`.cli`), and a push lmms-eval caught and logged as a warning ends the run with exit 1
    naming the command that pushes the file."""
    if not (getattr(tracker, "push_results_to_hub", False) or getattr(tracker, "push_samples_to_hub", False)):
        return
    from lmms_spatial import run_state
    from lmms_spatial.plugin.cli import push_command, push_failed_line

    written = (str(path), push_command(tracker, str(path)))
    run_state.STATE.written_for_hub = written
    if errors and getattr(tracker, "push_results_to_hub", False):
        failures.add_line(push_failed_line(written, errors[-1]))
        run_state.STATE.push_failure_said = True


def _lines_written(path: Path) -> tuple[int, bool]:
    """(whole lines, whether the file ends with one) of a samples file; (0, True) when there is none."""
    lines, last = 0, b"\n"
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):  # a samples file can be large: read in blocks
                lines += block.count(b"\n")
                last = block[-1:]
    except OSError:
        return 0, True
    return lines, last == b"\n"


def _save_results_samples(original):
    @functools.wraps(original)
    def save_results_samples(self, task_name, samples, *args, **kwargs):
        run = getattr(self, "_lmms_spatial_run", None)
        if run is None or not self.output_path:
            return original(self, task_name, samples, *args, **kwargs)
        if not run["written"]:  # samples beside no results file are read by nothing; the answers are in the store
            _unwritten(self, None, "")
            return None
        expected = len(samples) if isinstance(samples, list) else None
        with _Caught() as caught:
            returned = original(self, task_name, samples, *args, **kwargs)
        path = run["folder"] / f"{self.date_id}_samples_{task_name}.jsonl"
        lines, whole = _lines_written(path)
        if expected is not None and (lines != expected or not whole):
            if lines or not whole:
                try:
                    path.rename(path.with_name(path.name + ".partial"))  # what was written, not read as a run's
                except OSError:
                    pass
            else:
                _remove(path)
            fallback = f"{lines} of {expected} lines written"
            _unwritten(self, f"the samples of {task_name}", _reason(next(iter(caught.errors), None), fallback))
        return returned

    save_results_samples._lmms_spatial = True
    return save_results_samples


def patch_result_files(module) -> None:
    """Each run of ours writes its own results and samples files, and says when one could not be written."""
    from lmms_spatial.plugin import internal

    cls = internal(module, "EvaluationTracker", "runs in one second may share files; unwritten files go unsaid")
    if cls is None:
        return
    for name, make in (("save_results_aggregated", _save_results_aggregated),
                       ("save_results_samples", _save_results_samples)):  # fmt: skip
        original = internal(module, f"EvaluationTracker.{name}", "runs in one second may share files")
        if original is not None and not getattr(original, "_lmms_spatial", False):
            setattr(cls, name, make(original))
