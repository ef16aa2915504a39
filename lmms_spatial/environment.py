"""Which software a run ran on, and the known ways an installation stops lmms-eval from running at all.

Numbers move with the software underneath them (a transformers release changes a model's preprocessing, a torch
release its kernels), so every results file of ours names it (:func:`snapshot`, recorded under
``results["lmms_spatial"]["environment"]``) and ``lmms-spatial report`` warns when compared rows differ in it.

A fresh ``pip install`` resolves the newest release of ~180 packages; one of them can break lmms-eval before its
first document (filelock 4 removed ``filelock._api``, which lmms-eval 0.7.3's evaluator imports). Such breakage is
named in one line with the command that fixes it (:func:`problems`, checked when a run of ours starts and by
``lmms-spatial doctor``), and the exact versions of the last fully green resolution are kept in
``constraints/tested.txt`` (:func:`freeze`; :func:`drift` lists what differs from it).

Cheap to import: nothing here imports lmms-eval, torch or transformers; versions come from package metadata.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import importlib.util
import json
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# the packages whose versions can move a number, recorded with every run (distribution names as pip spells them);
# vllm only when the run imported it
RECORDED = ("lmms-eval", "transformers", "torch", "accelerate", "datasets", "pillow", "numpy", "flash-attn", "vllm")
# the ones a report compares between rows: a difference here is named in a warning and keeps runs apart
COMPARED = ("lmms-eval", "transformers", "torch")
OWN = "lmms-spatial"
TESTED_FILE = Path("constraints") / "tested.txt"
INSTALL_TESTED = "pip install -e . -c constraints/tested.txt"


def version_of(distribution: str) -> str | None:
    """The installed version of ``distribution`` (pip's name), None when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``Pillow`` == ``pillow``, ``flash_attn`` == ``flash-attn``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --- what produced a run ---------------------------------------------------------------------------------


def source_commit() -> dict[str, Any]:
    """The git commit of the lmms-spatial that runs, when it is installed from a checkout (``{"commit", "dirty"}``)
    or from a git URL (PEP 610 ``direct_url.json``: ``{"commit"}``); ``{}`` for a release."""
    try:
        direct = metadata.distribution(OWN).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        direct = None
    if direct:
        try:
            vcs = json.loads(direct).get("vcs_info") or {}
        except ValueError:
            vcs = {}
        if vcs.get("commit_id"):
            return {"commit": str(vcs["commit_id"])}
    top = Path(__file__).resolve().parent.parent
    if not (top / ".git").exists():
        return {}
    try:
        head = subprocess.run(["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return {}
        status = subprocess.run(["git", "-C", str(top), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[str, Any] = {"commit": head.stdout.strip()}
    if status.returncode == 0:
        found["dirty"] = bool(status.stdout.strip())
    return found


def accelerator() -> dict[str, str]:
    """CUDA's version and the GPU's name, when this process used CUDA (torch imported and CUDA initialised)."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is None or not cuda.is_initialized():
            return {}
        return {"cuda": str(torch.version.cuda), "gpu": str(cuda.get_device_name(cuda.current_device()))}
    except Exception:  # a broken driver costs the record, never the run
        return {}


def snapshot() -> dict[str, Any]:
    """The ``environment`` of the conditions: python, lmms-spatial (version, commit), the :data:`RECORDED`
    packages that are installed (vllm only when imported), and CUDA and the GPU when used."""
    packages = {}
    for name in RECORDED:
        if name == "vllm" and "vllm" not in sys.modules:
            continue
        found = version_of(name)
        if found is not None:
            packages[name] = found
    own = {"version": version_of(OWN), **source_commit()}
    return {"python": platform.python_version(), "platform": f"{platform.system()}-{platform.machine()}",
            OWN: own, "packages": packages, **accelerator()}  # fmt: skip


def compared(environment: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """The :data:`COMPARED` versions of an ``environment`` entry (empty when the run recorded none)."""
    packages = (environment or {}).get("packages") or {}
    return tuple((name, str(packages[name])) for name in COMPARED if packages.get(name))


def describe(environment: Mapping[str, Any] | None) -> str:
    """``lmms-eval 0.7.3, transformers 5.24.0, torch 2.14.1 (CUDA 12.8, NVIDIA H100)`` for a report's Runs list."""
    if not environment:
        return "software not recorded"
    text = ", ".join(f"{name} {version}" for name, version in compared(environment)) or "no package versions"
    if environment.get("gpu"):
        text += f" (CUDA {environment.get('cuda')}, {environment['gpu']})"
    return text


# --- what stops lmms-eval ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """An installed package that stops lmms-eval from running: the one line that says so names the fix."""

    package: str
    found: str | None
    why: str
    fix: str

    def line(self) -> str:
        found = f"{self.package} {self.found}" if self.found else f"{self.package} (not installed)"
        return f"lmms-spatial: {found}: {self.why}: {self.fix}"


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _lmms_eval_file(relative: str) -> str:
    """The text of one of the installed lmms-eval's source files ("" when it has no such file)."""
    spec = importlib.util.find_spec("lmms_eval")
    if spec is None or not spec.submodule_search_locations:
        return ""
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def filelock_problem() -> Problem | None:
    """lmms-eval 0.7.3's ``evaluator._enable_reentrant_filelocks`` (run by every ``simple_evaluate``) imports
    ``filelock._api``, which filelock 4 removed: the run stops before its first document."""
    if "filelock._api" not in _lmms_eval_file("evaluator.py") or _module_exists("filelock._api"):
        return None
    lmms_eval = version_of("lmms-eval")
    return Problem("filelock", version_of("filelock"),
                   f"lmms-eval {lmms_eval} imports filelock._api (evaluator._enable_reentrant_filelocks), which "
                   "filelock 4 removed; every evaluation stops before its first document",
                   "pip install 'filelock<4'")  # fmt: skip


# the lmms-eval versions whose internals our patches (lmms_spatial.plugin) were written against and are tested on in
# CI (0.7.0 and 0.7.3); later 0.7.x releases are allowed, and each patch says in one line when an internal it needs
# has changed instead of failing inside it
SUPPORTED_RANGE = ">=0.7,<0.8"
LMMS_EVAL_MIN, LMMS_EVAL_BELOW = (0, 7), (0, 8)


def version_tuple(text: str) -> tuple[int, ...]:
    """``"0.7.3"`` -> ``(0, 7, 3)``; the leading digits of each of the first three parts (``"0.7rc1"`` -> (0, 7))."""
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def lmms_eval_problem() -> Problem | None:
    """lmms-eval missing, or outside the range our patches support (:data:`SUPPORTED_RANGE`)."""
    found = version_of("lmms-eval")
    fix = f"pip install 'lmms-eval{SUPPORTED_RANGE}'"
    if found is None:
        return Problem("lmms-eval", None, "lmms-spatial runs inside lmms-eval", fix)
    if not LMMS_EVAL_MIN <= version_tuple(found) < LMMS_EVAL_BELOW:
        return Problem("lmms-eval", found, f"our tasks and run fixes support lmms-eval{SUPPORTED_RANGE} only", fix)
    return None


def problems() -> list[Problem]:
    """Every known breakage of the installed packages (cheap: metadata and one source file read, no import)."""
    return [p for p in (lmms_eval_problem(), filelock_problem()) if p is not None]


@functools.cache
def _distributions_by_module() -> Mapping[str, list[str]]:
    """{top-level module: the distributions that provide it}, read once per process (every installed package's
    metadata: the installed packages do not change under a running process)."""
    return metadata.packages_distributions()


def distribution_of(module: str) -> str | None:
    """The installed distribution that provides the top-level module of ``module`` (``PIL.Image`` -> Pillow)."""
    names = _distributions_by_module().get(module.split(".")[0]) or []
    return names[0] if names else None


# pip names of modules whose import name differs, for a module that is not installed at all (nothing to look up)
_PIP_NAMES = {"PIL": "pillow", "cv2": "opencv-python-headless", "sklearn": "scikit-learn", "yaml": "pyyaml",
              "flash_attn": "flash-attn", "qwen_vl_utils": "qwen-vl-utils"}  # fmt: skip
_CANNOT_IMPORT = re.compile(r"cannot import name '([^']+)' from '([^']+)'")


def import_problem(exc: BaseException, what: str = "lmms-eval") -> Problem | None:
    """The :class:`Problem` behind an ``ImportError`` raised while ``what`` was imported: a module that is not
    installed (``pip install decord``), or a name an installed package no longer has (transformers too new for a
    model class: install the tested versions). None for other exceptions."""
    if not isinstance(exc, ImportError):
        return None
    problem = next((p for p in problems() if p.package == "filelock"), None)
    if problem is not None and "filelock" in str(exc):
        return problem
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        installed = distribution_of(top)
        if "." not in exc.name:  # the package itself cannot be found
            if installed is None:
                package = _PIP_NAMES.get(top, top)
                return Problem(package, None, f"{what} imports {exc.name}", f"pip install {package}")
            return Problem(
                installed,
                version_of(installed),
                f"{what} imports {exc.name}, which cannot be found although its metadata is installed",
                f"pip install --force-reinstall {installed}",
            )
        return Problem(installed or top, version_of(installed or top),
                       f"{what} imports {exc.name}, which this version lacks",
                       f"install the tested versions: {INSTALL_TESTED}")  # fmt: skip
    match = _CANNOT_IMPORT.search(str(exc))
    if match:
        name, module = match.groups()
        package = distribution_of(module) or module.split(".")[0]
        return Problem(package, version_of(package), f"{what} imports {name} from {module}, which this version lacks",
                       f"install the tested versions: {INSTALL_TESTED}")  # fmt: skip
    return None


# --- the tested set -------------------------------------------------------------------------------------------


def installed() -> dict[str, str]:
    """{canonical distribution name: version} of every installed distribution but lmms-spatial itself and pip (the
    installer, not part of what runs)."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and canonical(name) not in (OWN, "pip"):
            found.setdefault(canonical(name), dist.version)
    return found


def freeze(versions: Mapping[str, str], header: Iterable[str] = ()) -> str:
    """A pip constraints file pinning ``versions`` exactly (``name==version`` a line, sorted)."""
    lines = [f"# {line}" if line else "#" for line in header]
    lines += [f"{name}=={version}" for name, version in sorted(versions.items())]
    return "\n".join(lines) + "\n"


def read_constraints(text: str) -> dict[str, str]:
    """{canonical name: version} of a constraints file's ``name==version`` lines (comments and others ignored)."""
    found = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        name, sep, version = line.partition("==")
        if sep and name.strip() and version.strip():
            found[canonical(name.strip().split("[")[0])] = version.strip().split(";")[0].strip()
    return found


def drift(tested: Mapping[str, str], now: Mapping[str, str]) -> list[tuple[str, str | None, str | None]]:
    """(package, tested version, installed version) for each package whose version differs, sorted by name;
    a package the tested set lacks has tested None, one no longer installed has installed None."""
    names = sorted(set(tested) | set(now))
    return [(n, tested.get(n), now.get(n)) for n in names if tested.get(n) != now.get(n)]


def drift_lines(rows: list[tuple[str, str | None, str | None]], source: str) -> list[str]:
    if not rows:
        return [f"every installed package has the version of {source}"]
    width = max(len(name) for name, _, _ in rows)
    out = [f"{len(rows)} packages differ from {source} (tested -> installed):"]
    out += [f"  {name:<{width}}  {old or '(not in the tested set)'} -> {new or '(not installed)'}"
            for name, old, new in rows]  # fmt: skip
    return out
