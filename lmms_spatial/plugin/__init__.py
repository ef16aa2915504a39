"""What lmms-spatial changes in lmms-eval, imported only once lmms-eval itself is (see :mod:`lmms_spatial_startup`).

- :mod:`.tasks`: our task folder on lmms-eval's task index; which task a failed build belongs to.
- :mod:`.samples`: samples files written whatever a reply holds.
- :mod:`.outputs`: each run's own results and samples files; a file that could not be written fails the run.
- :mod:`.run`: the run-level wrapper (``simple_evaluate`` / ``get_task_dict`` / ``evaluate``): which runs are
  ours (by the tasks lmms-eval resolved), the judge check before generation, decoding ahead of the model, the
  exit status and its last line.
- :mod:`.names`: a task name lmms-eval cannot find that is near one of ours is answered with ours.
- :mod:`.resume`: every answer on disk as soon as its chunk is done, and re-runs that ask only for the rest;
  :mod:`.owners`: which live process writes where in the answer store.
- :mod:`.isolation`: one task's scoring failure does not cost the other tasks their results.
- :mod:`.empty_tasks`: a task of ours with no documents in the release is left out by name; the rest runs.
- :mod:`.ours`: which tasks and runs are ours, by the code they run.

What the wrappers learn about the run (the call, the run of ours, the model evaluated and its API-image rule) is
kept in :mod:`lmms_spatial.run_state`, the one place code below the plugin reads it: nothing below the plugin
imports it (``tests/test_import_direction.py``). ``docs/plugin.md`` lists every patch.

Runs with none of our tasks are left exactly as lmms-eval runs them. The patches are installed by the startup
hook (:mod:`lmms_spatial_startup`); with it switched off, when lmms-eval first builds a task of ours
(:func:`lmms_spatial_startup.install_late`).
"""

from __future__ import annotations

import functools
import sys

# the lmms-eval versions these patches were written against: lmms_spatial.environment holds the range (the doctor
# and the environment check read it there, below the plugin)
from lmms_spatial.environment import LMMS_EVAL_BELOW, LMMS_EVAL_MIN, SUPPORTED_RANGE, version_tuple

# with the startup hook off, the data layer patches lmms-eval when it first builds a task of ours: it calls the
# hook module, never this package (lmms_spatial_startup.install_late)
from lmms_spatial_startup import install_late, late_installed


def lmms_eval_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lmms-eval")
    except PackageNotFoundError:
        return "unknown"


@functools.cache  # once per process: the installed lmms-eval does not change under it, and the line is said once
def supported() -> bool:
    """Whether the installed lmms-eval is in :data:`SUPPORTED_RANGE`; outside it, one line says so (once)."""
    found = lmms_eval_version()
    ok = found == "unknown" or LMMS_EVAL_MIN <= version_tuple(found) < LMMS_EVAL_BELOW
    if not ok:
        print(
            f"lmms-spatial: lmms-eval {found} is not supported (supported: lmms-eval{SUPPORTED_RANGE}); our tasks "
            f"and run fixes are not installed. Install a supported version: "
            f"pip install 'lmms-eval{SUPPORTED_RANGE}'",
            file=sys.stderr,
        )
    return ok


def internal(module, path: str, loss: str):
    """``module.<path>`` (e.g. ``"ConfigurableTask.process_results"``), or ``None`` after one stderr line saying
    that this lmms-eval lacks it and what is lost: a patch never fails inside lmms-eval's changed internals."""
    found = module
    for part in path.split("."):
        found = getattr(found, part, None)
        if found is None:
            name = getattr(module, "__name__", type(module).__name__)
            print(f"lmms-spatial: this lmms-eval has no {name}.{path}; {loss}", file=sys.stderr)
            return None
    return found


__all__ = [
    "SUPPORTED_RANGE",
    "install_late",
    "internal",
    "late_installed",
    "lmms_eval_version",
    "supported",
]
