"""The folder the workers of one run share, never every run's (tests/run_folders.py; conftest's ``shared_dir``)."""

from __future__ import annotations

import types
from pathlib import Path

from run_folders import shared_folder


def test_an_xdist_worker_shares_its_runs_folder():
    worker = types.SimpleNamespace(workerinput={"workerid": "gw1"})
    assert shared_folder(Path("/tmp/pytest-of-u/pytest-7/popen-gw1"), worker) == Path("/tmp/pytest-of-u/pytest-7")


def test_a_pytest_started_by_a_worker_keeps_its_own_folder_though_it_inherits_the_workers_variable(monkeypatch):
    """Its ``PYTEST_XDIST_WORKER`` is inherited; read as "a worker", the folder was ``pytest-of-u``: every run's."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    alone = types.SimpleNamespace()  # no workerinput: not a worker of this run
    assert shared_folder(Path("/tmp/pytest-of-u/pytest-8"), alone) == Path("/tmp/pytest-of-u/pytest-8")
