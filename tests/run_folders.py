"""Where a test run keeps what its xdist workers share (a module of its own: a test cannot import ``conftest``,
whose name each conftest.py of the suite takes in turn)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def shared_folder(base: Path, config: Any) -> Path:
    """The folder of one run that its workers share, for a run whose base temp folder is ``base``: an xdist worker's
    is ``<run>/popen-gwN`` (its parent is the run's), any other pytest's is the run's own."""
    return base.parent if hasattr(config, "workerinput") else base
