"""A broken installation ends a run of ours with one line naming the package, the version found and the fix
(lmms_spatial.environment, lmms_spatial.plugin.run.refuse_broken_environment, lmms_spatial.plugin.failures), and
``lmms-spatial doctor`` says the same before the run.

The breakages are made in the subprocess only, by a ``sitecustomize`` on ``PYTHONPATH``: filelock as 4.x ships it
(version 4.3.1 in its metadata, no ``filelock._api`` module), and a package whose module cannot be found.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

FILELOCK_LINE = (
    "lmms-spatial: filelock 4.3.1: lmms-eval {lmms_eval} imports filelock._api (evaluator._enable_reentrant_"
    "filelocks), which filelock 4 removed; every evaluation stops before its first document: pip install 'filelock<4'"
)


def shim(folder: Path, *, filelock_4: bool = False, hidden: str | None = None) -> Path:
    """A folder for PYTHONPATH whose sitecustomize breaks the installation the way a fresh resolution can."""
    folder.mkdir(parents=True, exist_ok=True)
    code = ["import importlib.abc, sys", "GONE = set()"]
    if filelock_4:
        code += ["import filelock", "sys.modules.pop('filelock._api', None)", "GONE.add('filelock._api')"]
        meta = folder / "filelock-4.3.1.dist-info"
        meta.mkdir(exist_ok=True)
        (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: filelock\nVersion: 4.3.1\n")
    if hidden:
        code += [f"GONE.add({hidden!r})"]
    code += [
        textwrap.dedent(
            """
            class Gone(importlib.abc.MetaPathFinder):
                def find_spec(self, name, path=None, target=None):
                    if name in GONE:
                        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                    return None

            sys.meta_path.insert(0, Gone())
            """
        )
    ]
    (folder / "sitecustomize.py").write_text("\n".join(code) + "\n")
    return folder


def lmms_eval_version() -> str:
    from importlib.metadata import version

    return version("lmms-eval")


def test_filelock_4_ends_a_run_of_ours_with_one_line_naming_it_and_the_fix(lmms_eval, offline_env, tmp_path):
    env = {"PYTHONPATH": str(shim(tmp_path / "shim", filelock_4=True))}
    run = lmms_eval("--model", "random_choice", "--tasks", "mmsi_vanilla", "--limit", "2", env=env,
                    expect_results=False)  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == FILELOCK_LINE.format(lmms_eval=lmms_eval_version())
    assert "Traceback" not in run.stderr  # stopped before lmms-eval's handler could print one
    # and doctor says the same before any run
    doctor = subprocess.run([sys.executable, "-m", "lmms_spatial.cli", "doctor", "--no-judge"], capture_output=True,
                            text=True, env={**offline_env, **env}, timeout=300)  # fmt: skip
    assert doctor.returncode == 1
    fix = [line for line in doctor.stdout.splitlines() if line.startswith("FIX")]
    expected = FILELOCK_LINE.format(lmms_eval=lmms_eval_version()).removeprefix("lmms-spatial: ")
    assert fix == ["FIX  filelock: " + expected]
    assert doctor.stdout.splitlines()[-1] == "1 to fix"


def test_a_model_class_whose_import_fails_ends_the_run_naming_the_package(lmms_eval, tmp_path):
    """lmms-eval's qwen2_5_vl imports decord at the top of its module: with decord's module gone the run names
    decord, its installed version, and the reinstall."""
    from importlib.metadata import version

    env = {"PYTHONPATH": str(shim(tmp_path / "shim", hidden="decord"))}
    run = lmms_eval("--model", "qwen2_5_vl", "--model_args", "pretrained=/nonexistent/model", "--tasks",
                    "mmsi_vanilla", "--limit", "1", env=env, expect_results=False)  # fmt: skip
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == (
        f"lmms-spatial: decord {version('decord')}: lmms-eval imports decord, which cannot be found although its "
        f"metadata is installed: pip install --force-reinstall decord"
    )
