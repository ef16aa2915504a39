"""A task name lmms-eval cannot find that is close to one of ours: the run ends, exit 1, naming our nearest.

lmms-eval 0.7.x answers an unknown ``--tasks`` name with ``Tasks not found`` (a traceback) and exit status 0,
so ``--tasks mmsi_vanila`` looks like a run that did nothing wrong. ``TaskManager.match_tasks`` (the CLI's
lookup of the names it was given) is wrapped: for every name it does not find that is near one of our task,
group or tag names, the run's last line says ``lmms-spatial: no task named mmsi_vanila: did you mean
mmsi_vanilla?`` and the run exits 1 (lmms-eval stops on its own right after, before any model call).

Near: the same name in another case; a prefix of ours (3 characters at least); or a few edits away (1 edit for
names up to 5 characters, 2 beyond: a letter dropped, added, changed, or two swapped), and no nearer to one of
lmms-eval's own names than to ours. A name nowhere near ours keeps lmms-eval's behaviour, unless the same
``--tasks`` also names one of ours: that run of ours would not run either, so it exits 1 naming the name.

A YAML file of ours given to ``--tasks`` (lmms-eval 0.7.0-0.7.3 load it, then report it not found) gets the
same: exit 1, naming the way that runs (its folder).

Through the Python API (``lmms_eval.evaluator.simple_evaluate(tasks=["mmsi_vanila"], ...)``) lmms-eval raises a
bare ``KeyError: 'mmsi_vanila'`` while building the tasks; the same names get :class:`UnknownTaskError` (a
``KeyError``) whose message is the CLI's line (:func:`unknown_task_error`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from lmms_spatial.plugin import failures, internal

MIN_PREFIX = 3
SHOWN = 3


def distance(a: str, b: str, limit: int) -> int:
    """Edit distance with adjacent swaps (optimal string alignment); any value above ``limit`` is ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], previous2[j - 2] + 1)
        if min(row) > limit:
            return limit + 1
        previous2, previous = previous, row
    return min(previous[-1], limit + 1)


def allowed_edits(name: str) -> int:
    return 1 if len(name) <= 5 else 2


def nearest_ours(name: str, ours: Iterable[str], others: Iterable[str] = ()) -> list[str]:
    """Our names that ``name`` (which no task has) was probably meant to be, nearest first; [] when none is near."""
    ours = sorted(set(ours))
    lowered = name.lower()
    same = [n for n in ours if n.lower() == lowered]
    if same:
        return same
    if len(name) >= MIN_PREFIX:
        longer = sorted((n for n in ours if n.lower().startswith(lowered)), key=lambda n: (len(n), n))
        if longer:
            return longer[:SHOWN]
    limit = allowed_edits(name)
    scored = sorted((distance(lowered, n.lower(), limit), n) for n in ours)
    best = scored[0][0] if scored else limit + 1
    if best > limit:
        return []
    if any(distance(lowered, n.lower(), best - 1) < best for n in set(others) - set(ours)):
        return []  # nearer to one of lmms-eval's own names: not ours to answer
    return [n for d, n in scored if d == best][:SHOWN]


def unknown_names(requested: list[str], matched: Iterable[str]) -> list[str]:
    """The names of ``--tasks`` lmms-eval will not find (as its CLI decides: not matched, no wildcard, no file)."""
    found = set(matched)
    return [n for n in requested if n and n not in found and "*" not in n and not os.path.isfile(n)]


# lmms-eval 0.7.0 to 0.7.3 load a YAML file given to --tasks, then report it "not found" all the same (the file
# name is checked against the task configs it loaded): only a folder of YAML files runs
FILE_NOT_RUN_UP_TO = (0, 7, 3)


def _single_files_of_ours(requested: list[str]) -> list[str]:
    from lmms_spatial.environment import version_tuple
    from lmms_spatial.plugin import lmms_eval_version
    from lmms_spatial.plugin.ours import is_yaml_file_of_ours

    if version_tuple(lmms_eval_version()) > FILE_NOT_RUN_UP_TO:
        return []
    return [entry for entry in requested if is_yaml_file_of_ours(entry)]


def check_names(requested: list[str], matched: Iterable[str], all_names: Iterable[str]) -> list[str]:
    """The failure lines for the unknown names among ``requested`` ([] when lmms-eval's own behaviour stays)."""
    ours = failures.our_task_names()
    files = _single_files_of_ours(requested)
    if files:
        folder = os.path.dirname(os.path.abspath(files[0]))
        return [f"lmms-spatial: this lmms-eval does not run a YAML file given to --tasks ({files[0]}: it reports "
                f"it not found); give its folder instead: --tasks {folder} --include_path {folder}"]  # fmt: skip
    missing = unknown_names(requested, matched)
    if not missing:
        return []
    everything = set(all_names)
    lines = []
    for name in missing:
        near = nearest_ours(name, ours, everything)
        if near:
            lines.append(f"lmms-spatial: no task named {name}: did you mean {', '.join(near)}?")
    asked = sorted(set(requested) & ours)
    if not lines and asked:
        lines.append(f"lmms-spatial: no task named {', '.join(missing)} (`lmms-eval --tasks list` lists every name); "
                     f"{', '.join(asked)} not evaluated")  # fmt: skip
    return lines


def patch_match_tasks(module) -> None:
    """Wrap ``module.TaskManager.match_tasks`` (lmms_eval.tasks) once."""
    original = internal(module, "TaskManager.match_tasks", "a misspelt task name is not answered with ours")
    if original is None or getattr(original, "_lmms_spatial", False):
        return

    def match_tasks(self, task_list):
        matched = original(self, task_list)
        try:
            requested = [task_list] if isinstance(task_list, str) else list(task_list)
            for line in check_names(requested, matched, getattr(self, "all_tasks", ()) or ()):
                failures.add_line(line)
        except Exception:  # never worse than lmms-eval's own answer
            pass
        return matched

    match_tasks._lmms_spatial = True
    match_tasks.__wrapped__ = original
    module.TaskManager.match_tasks = match_tasks


class UnknownTaskError(KeyError):
    """A task name lmms-eval has no task for, said as the CLI says it (``no task named mmsi_vanila: did you mean
    mmsi_vanilla?``). A ``KeyError``, as lmms-eval's own, so code that caught that still catches this."""

    def __str__(self) -> str:  # KeyError's own quotes the message as a key
        return str(self.args[0]) if self.args else ""


def unknown_task_error(exc: KeyError, task_list: object, task_manager: object) -> UnknownTaskError | None:
    """The error to raise instead of ``exc`` (lmms-eval's ``KeyError: '<name>'`` from ``get_task_dict``), when
    ``<name>`` is a name given in ``task_list`` that no task has and :func:`check_names` has a line for it; None
    otherwise (a ``KeyError`` from inside a task, or a name nowhere near ours: lmms-eval's own error stays)."""
    requested = [task_list] if isinstance(task_list, str) else list(task_list or [])
    names = [n for n in requested if isinstance(n, str)]
    all_names = set(getattr(task_manager, "all_tasks", ()) or ())
    key = exc.args[0] if exc.args else None
    if key not in names or key in all_names:
        return None
    try:
        lines = check_names(names, [n for n in names if n in all_names], all_names)
    except Exception:  # never worse than lmms-eval's own error
        return None
    if not lines:
        return None
    return UnknownTaskError("; ".join(line.removeprefix("lmms-spatial: ") for line in lines))
