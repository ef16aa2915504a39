"""lmms-eval as a child process, as a user runs it: its results, wall seconds and its own peak RSS.

A run of our tasks keeps its answers as it goes (lmms_spatial.plugin.resume), which is the path users run,
so it is measured; each run gets a fresh answer folder, so no answer is ever served from an earlier run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_lmms_eval(args: list[str], env: dict[str, str], out: Path) -> tuple[dict | None, float, float, str]:
    """Run lmms-eval; returns (results or None, wall s, child's peak RSS MB, stderr tail)."""
    out.mkdir(parents=True, exist_ok=True)
    answers = tempfile.mkdtemp(prefix="answers-", dir=out)
    cmd = [sys.executable, "-m", "lmms_eval", *args, "--output_path", str(out), "--log_samples",
           "--verbosity", "WARNING", "--use_cache", answers]  # fmt: skip
    with open(out / "stdout.txt", "w") as so, open(out / "stderr.txt", "w") as se:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=so, stderr=se, cwd=out)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not all children's
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    files = sorted(out.rglob("*_results.json"))
    stderr = (out / "stderr.txt").read_text()[-4000:]
    return (json.loads(files[-1].read_text()) if files else None), wall, usage.ru_maxrss / 1024, stderr
