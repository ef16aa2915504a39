"""What failed in a run that involved our tasks, said in the last line of output and in the exit status.

lmms-eval 0.7.x logs an evaluation that raised and exits 0. A run of ours (one whose tasks include one of
ours: :mod:`lmms_spatial.plugin.run`) instead ends with one line per failure and exit status 1:

- a task whose scoring or aggregation raised (the other tasks' results and every sample were
  written): ``lmms-spatial: osr_qa_negative_vanilla failed while scoring: TypeError: ...``;
- a run that stopped before any result, while lmms-eval built a task: that task is named, and
  said to be lmms-eval's own when it is (``... while building task mme (an lmms-eval task, not one
  of ours): FileNotFoundError: ...``);
- a run that stopped elsewhere: what is known (the stage, the cause), never a guessed task;
- a run that cannot do what was asked (:class:`RunRefused`: ``--limit 0``, ...): one line naming the fix.

What a user must know about numbers that *were* written (with-map tasks left unscored for want of a
map, judge verdicts that could not be read) ends the output the same way, as notes that leave the exit
status alone (:func:`add_note`).

The lines and the status are the command's, kept in :attr:`lmms_spatial.run_state.RunState.last_lines` (every run
of a ``--config`` list adds to them; they are said once, at interpreter exit).

Runs with none of our tasks keep lmms-eval's behaviour.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
from pathlib import Path

from lmms_spatial import run_state
from lmms_spatial.paths import tasks_dir
from lmms_spatial.run_state import RunRefused  # with the run state, so that code below the plugin can raise it

EXC_TASK_ATTR = "lmms_spatial_task"  # set on an exception raised while lmms-eval built that task
EXC_OURS_ATTR = "lmms_spatial_ours"  # ... and whether that task runs code of ours
ERROR_KEY = "lmms_spatial_error"  # a document's score when its scoring failed (isolation) or its request did


_lock = threading.Lock()  # the last lines are added from lmms-eval's threads and read at exit
INTERRUPTED_STATUS = 130  # a shell's status for a command ended by SIGINT


@functools.cache
def our_task_names() -> frozenset[str]:
    """Task, group and tag names declared by our YAML files (a plain scan: no YAML parsing, no data). Read once
    per process: the installed YAML files do not change while it runs."""
    pattern = re.compile(r"^(?:task|group|tag):\s*([\w.-]+)\s*(?:#.*)?$", re.MULTILINE)
    names: set[str] = set()
    for path in Path(tasks_dir()).rglob("*.yaml"):
        names.update(pattern.findall(path.read_text(encoding="utf-8")))
    return frozenset(names)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../lmms_spatial


def raised_by_us(exc: BaseException) -> bool:
    """Whether ``exc`` is one of our error classes, or was raised by a line of ours (a ``ValueError`` naming
    ``file.jsonl:18``, raised ``from`` the ``JSONDecodeError`` that names only a column)."""
    if type(exc).__module__.startswith("lmms_spatial"):
        return True
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep)


def root_cause(exc: BaseException) -> BaseException:
    """The exception that explains ``exc``: through tenacity's ``RetryError`` and ``raise ... from``.

    Our own one-line errors (data unavailable, a bad document, a file and line that cannot be read) win over
    whatever wraps them and over the library error they were raised from: the outermost raised by us is taken.
    """
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        attempt = getattr(current, "last_attempt", None)  # tenacity.RetryError
        inner = attempt.exception() if attempt is not None and hasattr(attempt, "exception") else None
        current = inner or current.__cause__ or current.__context__
    ours = [e for e in chain if raised_by_us(e)]
    return ours[0] if ours else chain[-1]


def describe(exc: BaseException) -> str:
    """``Type: first line of the message`` of the root cause."""
    cause = root_cause(exc)
    first = (str(cause).strip().splitlines() or [""])[0]
    return f"{type(cause).__name__}: {first}" if first else type(cause).__name__


def task_of(exc: BaseException) -> str | None:
    """The task lmms-eval was building when ``exc`` was raised (innermost), if one was."""
    current: BaseException | None = exc
    seen: list[BaseException] = []
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        name = getattr(current, EXC_TASK_ATTR, None)
        if name:
            return name
        current = current.__cause__ or current.__context__
    return None


def marked(exc: BaseException, attr: str) -> bool:
    """Whether ``exc`` or an exception in its chain carries ``attr`` set true."""
    current: BaseException | None = exc
    seen: list[BaseException] = []
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        if getattr(current, attr, False):
            return True
        current = current.__cause__ or current.__context__
    return False


def add_line(line: str) -> None:
    """A failure line: said last, and the command exits 1 (once per distinct line)."""
    with _lock:
        said = run_state.STATE.last_lines.failures
        if line not in said:
            said.append(line)
    register_exit()


def add_note(line: str) -> None:
    """A line printed at the very end of the run's output (after lmms-eval's tables); the exit status stays."""
    with _lock:
        said = run_state.STATE.last_lines.notes
        if line not in said:
            said.append(line)
    register_exit()


def replace_line(old: str | None, new: str) -> None:
    """A failure line that grew (one line per thing, naming more of it): ``old`` (if any) gives way to ``new``."""
    with _lock:
        said = run_state.STATE.last_lines.failures
        if old in said:
            said[said.index(old)] = new
            return
    add_line(new)


def lines() -> list[str]:
    """The failure lines said so far, in order."""
    with _lock:
        return list(run_state.STATE.last_lines.failures)


def notes() -> list[str]:
    with _lock:
        return list(run_state.STATE.last_lines.notes)


def task_failed(task: str, stage: str, exc: BaseException | str) -> bool:
    """Record that ``task`` failed at ``stage`` (``scoring``, ``aggregation``); True the first time."""
    cause = exc if isinstance(exc, str) else describe(exc)
    with _lock:
        failed = run_state.STATE.last_lines.failed_tasks
        if task in failed:
            return False
        failed[task] = f"{stage}: {cause}"
    add_line(
        f"lmms-spatial: {task} failed while {stage}: {cause}; the other tasks' results and every sample were written"
    )
    return True


def failed_tasks() -> dict[str, str]:
    with _lock:
        return dict(run_state.STATE.last_lines.failed_tasks)


def run_failed(exc: BaseException, requested_ours: list[str]) -> None:
    """The whole evaluation raised: name the task being built if lmms-eval was building one, else the stage."""
    refused = root_cause(exc)
    if isinstance(refused, RunRefused):
        add_line(f"lmms-spatial: {refused}")
        return
    if isinstance(refused, ImportError):  # a package missing or too new for what imports it: name it and the fix
        from lmms_spatial.environment import import_problem

        problem = import_problem(refused)
        if problem is not None:
            add_line(problem.line())
            return
    cause = describe(exc)
    task = task_of(exc)
    ours = ", ".join(requested_ours)
    if task is None:
        add_line(f"lmms-spatial: the run stopped before writing results ({ours} not evaluated): {cause}")
    elif task in our_task_names() or marked(exc, EXC_OURS_ATTR):
        add_line(f"lmms-spatial: {task} failed: {cause}")
    else:
        add_line(
            f"lmms-spatial: the run stopped while building task {task} (an lmms-eval task, not one of ours; "
            f"{ours} not evaluated): {cause}"
        )


def interrupted(kept: str) -> None:
    """Ctrl-C (SIGINT) stopped a run of ours: one line saying what is kept (``kept``) and that the same command
    resumes; exit status 130, as a shell gives a command SIGINT ended."""
    add_line(f"lmms-spatial: interrupted (Ctrl-C): {kept}")
    with _lock:
        run_state.STATE.last_lines.status = INTERRUPTED_STATUS


def reset() -> None:
    """Forget every failure (tests; a process that runs several evaluations)."""
    with _lock:
        run_state.STATE.last_lines = run_state.LastLines()


def _exit_if_failed() -> None:
    with _lock:
        said = run_state.STATE.last_lines
        failures, notes, status = list(said.failures), list(said.notes), said.status
    if failures or notes:
        sys.stdout.flush()
        for line in notes + failures:  # a failure is the very last thing said
            print(line, file=sys.stderr)
        sys.stderr.flush()
    if failures:
        os._exit(status if status is not None else 1)


@functools.cache  # once per process: atexit would run a second registration twice
def register_exit() -> None:
    """Exit with status 1 and the failure lines at interpreter exit. Registered when lmms-eval's evaluator is
    imported, before lmms-eval registers its own handlers, so that it runs after them (atexit is LIFO)."""
    import atexit

    atexit.register(_exit_if_failed)
