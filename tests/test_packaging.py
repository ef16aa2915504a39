"""The wheel: what a non-editable ``pip install`` puts on a user's machine.

The repository's layout is mapped (``tasks/``, ``metrics/``, ``hub_cards/`` install inside ``lmms_spatial``:
setup.py) and much of what the package reads is data, not Python: task YAMLs, published rows, BibTeX, hub
cards, the page's assets, the scaffold's templates. setuptools copies data only for declared packages, and
warned on every install (12 blocks, setuptools 84) that it would stop copying the hub cards, the page's assets
and the templates, whose folders were not declared. The wheel is built once here, from this checkout, with the
environment's setuptools (no download).
"""

from __future__ import annotations

import ast
import fnmatch
import re
import runpy
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import setuptools

from lmms_spatial.paths import tasks_dir

REPO = Path(tasks_dir()).parent
# repository folder -> where it installs
INSTALLED_AS = {"lmms_spatial": "lmms_spatial", "tasks": "lmms_spatial/tasks", "metrics": "lmms_spatial/metrics",
                "hub_cards": "lmms_spatial/hub_cards"}  # fmt: skip


class Wheel:
    def __init__(self, path: Path, build_output: str, sources: list[str]) -> None:
        self.path = path
        self.build_output = build_output
        self.sources = sources  # the checkout's files it was built from (:func:`_checkout_files`)
        with zipfile.ZipFile(path) as archive:
            self.files = {name for name in archive.namelist() if ".dist-info/" not in name}


def _checkout_files() -> list[str]:
    """The files of this checkout that git tracks or would (not ignored: a benchmark just scaffolded counts), as
    they are in the working tree (one deleted and not yet committed is not)."""
    command = ["git", "ls-files", "--cached", "--others", "--exclude-standard"]
    listed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True).stdout.splitlines()
    return sorted(name for name in set(listed) if (REPO / name).is_file())


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Wheel:
    """Built from a copy of :func:`_checkout_files`: a build in the checkout itself reuses its ``build/lib``, which
    keeps every file an earlier build copied there (a YAML deleted since still went into the wheel)."""
    source, dist = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    sources = _checkout_files()
    for name in sources:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)]
    build = subprocess.run([*pip_wheel, str(source)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    return Wheel(next(dist.glob("lmms_spatial-*.whl")), build.stdout + build.stderr, sources)


def _shipped_sources(sources: list[str]) -> set[str]:
    """Every file of ``sources`` (the checkout's) in the package's folders, at its installed path; the benchmarks'
    README.md files (``tasks/<key>/README.md``: for contributors, on GitHub) are not read by the package and stay
    out."""
    shipped = set()
    for name in sources:
        folder, _, rest = name.partition("/")
        if name != "lmms_spatial_startup.py" and folder not in INSTALLED_AS:
            continue
        if folder == "tasks" and rest.count("/") == 1 and rest.endswith("/README.md"):
            continue
        shipped.add(f"{INSTALLED_AS[folder]}/{rest}" if rest else name)
    return shipped


@pytest.mark.slow
@pytest.mark.xdist_group("wheel")
def test_the_wheel_holds_every_file_the_package_reads_and_nothing_else(wheel):
    # the startup hook's .pth is written by the build (pyproject's data files), not tracked
    assert wheel.files == _shipped_sources(wheel.sources) | {"lmms_spatial_startup.pth"}
    for data in ("lmms_spatial/hub_cards/dori/README.md", "lmms_spatial/view/assets/app.js",
                 "lmms_spatial/scaffold/templates/metrics/__name__.py.tmpl", "lmms_spatial/tasks/mmsi/CITATION.bib",
                 "lmms_spatial/data/placeholder.jsonl"):  # fmt: skip
        assert data in wheel.files


# Workshop code (issue 64): the mutation check, fake servers, test helpers. It lives in tools/ (not installed, run from
# a checkout: `python -m tools.mutation`) or tests/, never in a folder the wheel is made of.
WORKSHOP_MODULES = ("test_*.py", "*_test.py", "conftest.py", "*mutation*.py", "testing.py", "fake*.py")
WORKSHOP_FOLDERS = ("tools", "tests", "mutation")


def _discovered_packages(monkeypatch) -> list[str]:
    """The packages setup.py hands to setuptools (its discovery run, setup() itself not: no build, no network)."""
    found: dict[str, object] = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: found.update(kwargs))
    monkeypatch.chdir(REPO)
    runpy.run_path(str(REPO / "setup.py"))
    return list(found["packages"])


def _folder_of(package: str) -> Path:
    """Where a discovered package's files are in the checkout (pyproject.toml's package-dir, the longest match)."""
    parts = package.split(".")
    for n in range(len(parts), 0, -1):
        mapped = {v: k for k, v in INSTALLED_AS.items()}.get("/".join(parts[:n]))
        if mapped is not None:
            return REPO.joinpath(mapped, *parts[n:])
    raise AssertionError(f"{package} is outside the package's folders")


def test_package_discovery_finds_no_workshop_code(monkeypatch):
    packages = _discovered_packages(monkeypatch)
    assert "lmms_spatial.metrics" in packages and "lmms_spatial.judge" in packages  # the discovery ran
    assert [p for p in packages if p.split(".")[0] != "lmms_spatial"] == []  # no tools, tests, mutation package
    folders = {_folder_of(p) for p in packages}
    assert not any(f.is_relative_to(REPO / w) for f in folders for w in WORKSHOP_FOLDERS)
    shipped = sorted(
        path.relative_to(REPO).as_posix()
        for folder in folders
        for path in folder.glob("*.py")
        if any(fnmatch.fnmatch(path.name, pattern) for pattern in WORKSHOP_MODULES)
    )
    assert shipped == []
    # and the workshop code is where the tests and CI run it from (so the checks above are not vacuous)
    assert {"mutation.py", "mutation_lock.py", "fake_judge.py"} <= {p.name for p in (REPO / "tools").glob("*.py")}


def test_no_installed_module_imports_the_workshop_code(monkeypatch):
    """What is not installed cannot be imported by what is: a wheel install has no tools/ or tests/."""
    offenders = {}
    for folder in {_folder_of(p) for p in _discovered_packages(monkeypatch)}:
        for path in sorted(folder.glob("*.py")):
            names = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names.add(node.module)
            bad = sorted(n for n in names if n.split(".")[0] in WORKSHOP_FOLDERS)
            if bad:
                offenders[path.relative_to(REPO).as_posix()] = bad
    assert offenders == {}


@pytest.mark.slow
@pytest.mark.xdist_group("wheel")
def test_the_wheel_holds_no_workshop_code(wheel):
    workshop = sorted(
        name
        for name in wheel.files
        if name.split("/")[0] in WORKSHOP_FOLDERS
        or (name.endswith(".py") and any(fnmatch.fnmatch(name.rpartition("/")[2], p) for p in WORKSHOP_MODULES))
    )
    assert workshop == []
    assert any(name.startswith("lmms_spatial/judge/") for name in wheel.files)  # the judge itself is installed


@pytest.mark.slow
@pytest.mark.xdist_group("wheel")
def test_building_the_wheel_prints_no_warning_to_the_user(wheel):
    """A user's ``pip install`` shows the build backend's warnings: there were 12 blocks of ~40 lines each."""
    warnings = re.findall(r"\w*Warning: .*", wheel.build_output)
    assert warnings == []


def _hook_import_us(python: str) -> int:
    """Cumulative import time (µs) of the startup hook at interpreter start, from ``-X importtime``."""
    proc = subprocess.run([python, "-X", "importtime", "-c", "pass"], capture_output=True, text=True, timeout=60)
    lines = [line for line in proc.stderr.splitlines() if line.rstrip().endswith(" lmms_spatial_startup")]
    times = [int(line.split("|")[1]) for line in lines]
    assert len(times) == 1, proc.stderr[-2000:]
    return times[0]


@pytest.mark.slow
@pytest.mark.xdist_group("wheel")
def test_the_startup_hook_costs_at_most_1_ms_at_interpreter_start_in_a_wheel_install(wheel, tmp_path):
    """Every Python process of the environment runs the hook; in a wheel install (no editable finder) it
    imports nothing but itself and our empty package. Best of 7 starts, as a loaded CI machine jitters."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    install = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site,
                              str(wheel.path)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert install.returncode == 0, install.stderr[-3000:]
    assert (Path(site) / "lmms_spatial_startup.pth").is_file()
    assert min(_hook_import_us(python) for _ in range(7)) <= 1000
