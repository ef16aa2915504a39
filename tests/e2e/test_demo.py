"""``lmms-spatial demo``: every benchmark's demo tasks, offline, through the real CLI."""

import subprocess
import sys
from pathlib import Path

import pytest

from lmms_spatial.data.demo import build_demo_data, demo_tasks

pytestmark = pytest.mark.slow


def test_demo_runs_every_demo_task_and_prints_the_table(offline_env, tmp_path):
    cmd = [sys.executable, "-m", "lmms_spatial.cli", "demo", "--out", str(tmp_path / "demo")]
    proc = subprocess.run(cmd, env=offline_env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    table = proc.stdout
    for task in demo_tasks():
        assert f"\n{task} " in table, f"{task} missing from demo table:\n{table}"
    assert "unparsed" in table and "chance" in table


def test_demo_data_is_small(tmp_path):
    build_demo_data(tmp_path)
    size = sum(f.stat().st_size for f in Path(tmp_path).rglob("*") if f.is_file())
    assert size < 2 * 1024 * 1024
