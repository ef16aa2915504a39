"""What a results file says about the software that produced it, and the known breakages named with their fix
(lmms_spatial.environment)."""

from __future__ import annotations

import sys
from importlib.metadata import version

import pytest

from lmms_spatial import environment
from lmms_spatial.environment import Problem


def test_a_snapshot_names_python_lmms_spatial_and_the_packages_that_move_numbers():
    snap = environment.snapshot()
    assert snap["python"] == ".".join(map(str, sys.version_info[:3]))
    assert snap["lmms-spatial"]["version"] == version("lmms-spatial")
    for name in ("lmms-eval", "transformers", "torch", "datasets", "pillow", "numpy"):
        assert snap["packages"][name] == version(name)
    assert "vllm" not in snap["packages"]  # recorded only when the run imported it
    assert "gpu" not in snap and "cuda" not in snap  # CUDA was never initialised here


def test_a_checkout_records_its_commit(monkeypatch):
    """lmms-spatial installed from this checkout (editable) names the commit it runs."""
    import subprocess
    from pathlib import Path

    top = Path(environment.__file__).resolve().parent.parent
    if not (top / ".git").exists():
        pytest.skip("not installed from a git checkout")
    head = subprocess.run(["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert environment.source_commit()["commit"] == head.strip()
    assert isinstance(environment.source_commit()["dirty"], bool)


def test_compared_versions_and_their_description():
    env = {"packages": {"lmms-eval": "0.7.3", "transformers": "5.24.0", "torch": "2.14.1", "numpy": "2.4.6"},
           "cuda": "12.8", "gpu": "NVIDIA H100 80GB HBM3"}  # fmt: skip
    assert environment.compared(env) == (("lmms-eval", "0.7.3"), ("transformers", "5.24.0"), ("torch", "2.14.1"))
    assert environment.describe(env) == (
        "lmms-eval 0.7.3, transformers 5.24.0, torch 2.14.1 (CUDA 12.8, NVIDIA H100 80GB HBM3)"
    )
    assert environment.describe(None) == "software not recorded"
    assert environment.compared({}) == ()


# --- the tested set ---------------------------------------------------------------------------------------------


def test_a_constraints_file_round_trips_and_drift_lists_each_difference_by_name():
    text = environment.freeze({"torch": "2.14.1", "filelock": "3.32.7", "pillow": "13.0.0"}, ["made by hand"])
    assert text == "# made by hand\nfilelock==3.32.7\npillow==13.0.0\ntorch==2.14.1\n"
    tested = environment.read_constraints(text + "Flash_Attn==2.8.0 ; sys_platform == 'linux'\n-e .\n")
    assert tested == {"filelock": "3.32.7", "pillow": "13.0.0", "torch": "2.14.1", "flash-attn": "2.8.0"}
    now = {"filelock": "4.3.1", "pillow": "13.0.0", "torch": "2.14.1", "flash-attn": "2.8.0", "uv": "0.9.1"}
    del tested["flash-attn"]
    rows = environment.drift(tested, now)
    assert rows == [("filelock", "3.32.7", "4.3.1"), ("flash-attn", None, "2.8.0"), ("uv", None, "0.9.1")]
    assert environment.drift(now, now) == []
    assert environment.drift_lines(rows, "constraints/tested.txt") == [
        "3 packages differ from constraints/tested.txt (tested -> installed):",
        "  filelock    3.32.7 -> 4.3.1",
        "  flash-attn  (not in the tested set) -> 2.8.0",
        "  uv          (not in the tested set) -> 0.9.1",
    ]
    assert environment.drift_lines([], "x.txt") == ["every installed package has the version of x.txt"]


def test_installed_lists_every_distribution_but_lmms_spatial_and_pip_under_its_canonical_name():
    found = environment.installed()
    assert found["lmms-eval"] == version("lmms-eval")
    assert found["pillow"] == version("pillow")  # the distribution is named "Pillow"
    assert "lmms-spatial" not in found and "pip" not in found


def test_the_committed_tested_set_pins_the_packages_a_run_depends_on():
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "constraints" / "tested.txt"
    pinned = environment.read_constraints(path.read_text())
    for name in ("lmms-eval", "filelock", "transformers", "torch", "datasets", "pillow", "numpy", "pytest"):
        assert name in pinned, name
    assert int(pinned["filelock"].split(".")[0]) < 4  # the tested set itself must run


# --- breakages named with their fix ---------------------------------------------------------------------------


def test_filelock_without_its_api_module_is_named_when_lmms_eval_imports_it(monkeypatch):
    monkeypatch.setattr(environment, "_lmms_eval_file", lambda _: "    import filelock._api as _fl_api\n")
    monkeypatch.setattr(environment, "_module_exists", lambda name: name != "filelock._api")
    versions = {"filelock": "4.3.1", "lmms-eval": "0.7.3"}
    monkeypatch.setattr(environment, "version_of", versions.get)
    assert environment.filelock_problem() == Problem(
        "filelock", "4.3.1",
        "lmms-eval 0.7.3 imports filelock._api (evaluator._enable_reentrant_filelocks), which filelock 4 removed; "
        "every evaluation stops before its first document",
        "pip install 'filelock<4'",
    )  # fmt: skip
    monkeypatch.setattr(environment, "_module_exists", lambda name: True)  # filelock 3: no problem
    assert environment.filelock_problem() is None
    monkeypatch.setattr(environment, "_module_exists", lambda name: False)
    monkeypatch.setattr(environment, "_lmms_eval_file", lambda _: "import filelock\n")  # a fixed lmms-eval
    assert environment.filelock_problem() is None


@pytest.mark.parametrize("found, ok", [("0.7.0", True), ("0.7.3", True), ("0.7.10", True), ("0.6.9", False),
                                       ("0.8.0", False), ("1.0.0rc1", False)])  # fmt: skip
def test_lmms_eval_outside_the_supported_range_is_named_with_the_install_line(monkeypatch, found, ok):
    monkeypatch.setattr(environment, "version_of", {"lmms-eval": found}.get)
    problem = environment.lmms_eval_problem()
    if ok:
        assert problem is None
    else:
        assert problem.line() == (
            f"lmms-spatial: lmms-eval {found}: our tasks and run fixes support lmms-eval>=0.7,<0.8 only: "
            "pip install 'lmms-eval>=0.7,<0.8'"
        )


def test_no_lmms_eval_at_all_is_named(monkeypatch):
    monkeypatch.setattr(environment, "version_of", lambda name: None)
    assert environment.lmms_eval_problem().line() == (
        "lmms-spatial: lmms-eval (not installed): lmms-spatial runs inside lmms-eval: pip install 'lmms-eval>=0.7,<0.8'"
    )


def test_a_module_that_is_not_installed_is_named_with_its_pip_name(monkeypatch):
    monkeypatch.setattr(environment, "distribution_of", lambda module: None)
    problem = environment.import_problem(ModuleNotFoundError("No module named 'decord'", name="decord"))
    assert problem.line() == "lmms-spatial: decord (not installed): lmms-eval imports decord: pip install decord"
    pil = environment.import_problem(ModuleNotFoundError("No module named 'PIL'", name="PIL"), "our loader")
    assert pil.line() == "lmms-spatial: pillow (not installed): our loader imports PIL: pip install pillow"


def test_a_name_a_newer_transformers_dropped_is_answered_with_the_tested_versions():
    exc = ImportError("cannot import name 'Qwen2_5_VLForConditionalGeneration' from 'transformers' "
                      "(/venv/lib/python3.11/site-packages/transformers/__init__.py)")  # fmt: skip
    problem = environment.import_problem(exc, "lmms-eval's model qwen2_5_vl")
    assert problem.line() == (
        f"lmms-spatial: transformers {version('transformers')}: lmms-eval's model qwen2_5_vl imports "
        "Qwen2_5_VLForConditionalGeneration from transformers, which this version lacks: install the tested "
        "versions: pip install -e . -c constraints/tested.txt"
    )


def test_a_submodule_an_installed_package_lacks_is_answered_with_the_tested_versions():
    exc = ModuleNotFoundError("No module named 'transformers.models.qwen9'", name="transformers.models.qwen9")
    assert environment.import_problem(exc).line() == (
        f"lmms-spatial: transformers {version('transformers')}: lmms-eval imports transformers.models.qwen9, which "
        "this version lacks: install the tested versions: pip install -e . -c constraints/tested.txt"
    )


def test_other_exceptions_are_no_import_problem():
    assert environment.import_problem(ValueError("cannot import name 'x' from 'y'")) is None
    assert environment.import_problem(ImportError("something else")) is None
