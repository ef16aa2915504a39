"""``lmms-spatial doctor``: the environment checked before a long run, each line ``ok`` or the fix.

A run that dies on an import after the model has loaded, or whose judge is unreachable after hours of generation,
costs GPU time; each check here costs at most one import or one HTTP call. ``doctor`` exits 1 when any line is a
fix to make (``FIX``), 0 otherwise (``note`` lines are information: offline variables, drift from the tested set).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lmms_spatial import environment

OK, FIX, NOTE = "ok", "FIX", "note"
# what our own code imports at run time (pyproject's dependencies), by import name -> pip name
DEPENDENCIES = {"datasets": "datasets", "PIL": "pillow", "numpy": "numpy", "yaml": "pyyaml", "scipy": "scipy",
                "py360convert": "py360convert", "matplotlib": "matplotlib", "tenacity": "tenacity",
                "decord": "decord"}  # fmt: skip


@dataclass(frozen=True)
class Check:
    status: str  # OK, FIX or NOTE
    what: str
    detail: str

    def line(self) -> str:
        return f"{self.status:<4} {self.what}: {self.detail}"


def _version(name: str) -> str:
    return environment.version_of(name) or "?"


def check_python() -> Iterator[Check]:
    """The interpreter (pip refuses lmms-spatial below Python 3.10, so it is only reported)."""
    yield Check(OK, "python", ".".join(map(str, sys.version_info[:3])))


def check_packages() -> Iterator[Check]:
    """lmms-eval in the supported range, the known-bad versions of its dependencies, and our own imports."""
    problems = environment.problems()
    for problem in problems:
        yield Check(FIX, problem.package, problem.line().removeprefix("lmms-spatial: "))
    if not any(p.package == "lmms-eval" for p in problems):
        yield Check(OK, "lmms-eval", _version("lmms-eval"))
    for module, package in DEPENDENCIES.items():
        try:
            importlib.import_module(module)
        except Exception as exc:  # a broken install (a missing shared library) shows only on import
            found = environment.import_problem(exc, "lmms-spatial") if isinstance(exc, ImportError) else None
            detail = found.line().removeprefix("lmms-spatial: ") if found else f"{type(exc).__name__}: {exc}"
            yield Check(FIX, package, detail if found else f"{detail}: pip install --force-reinstall {package}")
        else:
            yield Check(OK, package, _version(package))


def check_model(model: str) -> Iterator[Check]:
    """The model class lmms-eval would load for ``--model``: its module and everything it imports."""
    try:
        from lmms_eval import models

        models.get_model(model)
    except Exception as exc:
        problem = environment.import_problem(exc, f"lmms-eval's model {model}")
        if problem is not None:
            yield Check(FIX, f"--model {model}", problem.line().removeprefix("lmms-spatial: "))
        else:
            yield Check(FIX, f"--model {model}", f"{type(exc).__name__}: {exc}")
        return
    yield Check(OK, f"--model {model}", "its class imports")


def check_cuda() -> Iterator[Check]:
    try:
        import torch
    except Exception as exc:
        yield Check(FIX, "torch", f"{type(exc).__name__}: {exc}: pip install torch")
        return
    if not torch.cuda.is_available():
        built = torch.version.cuda or "none (a CPU build)"
        yield Check(FIX, "CUDA", f"torch {torch.__version__} sees no GPU (CUDA build: {built}); install a CUDA build "
                    "of torch for this driver, or run on a machine with a GPU")  # fmt: skip
        return
    yield Check(OK, "CUDA", f"{torch.version.cuda}, {torch.cuda.device_count()} GPU(s): "
                f"{torch.cuda.get_device_name(0)}")  # fmt: skip


def check_flash_attention() -> Iterator[Check]:
    try:
        import flash_attn
    except Exception as exc:
        yield Check(FIX, "flash-attn", f"{type(exc).__name__}: {exc}: pip install -e \".[gpu]\" "
                    "(or drop attn_implementation=flash_attention_2)")  # fmt: skip
        return
    yield Check(OK, "flash-attn", getattr(flash_attn, "__version__", _version("flash-attn")))


def check_hub(env: dict[str, str]) -> Iterator[Check]:
    """Where the Hub cache is and whether it can be written; which offline variables are set."""
    from lmms_spatial.data.hub_cache import offline_because

    try:
        from huggingface_hub import constants

        cache = Path(constants.HF_HUB_CACHE)
    except Exception as exc:
        yield Check(FIX, "Hub cache", f"{type(exc).__name__}: {exc}: pip install huggingface_hub")
        return
    existing = next((p for p in (cache, *cache.parents) if p.exists()), None)
    if existing is None or not os.access(existing, os.W_OK):
        yield Check(FIX, "Hub cache", f"{cache} cannot be written: set HF_HOME to a folder you can write")
    else:
        yield Check(OK, "Hub cache", str(cache))
    offline = offline_because(env)  # the data layer's rule, which is huggingface_hub's and datasets'
    yield Check(
        NOTE,
        "offline",
        ", ".join(offline) + " set: only what is in the Hub cache or a local path can be read"
        if offline
        else "no offline variable set: data and weights missing from the cache are downloaded",
    )


def check_data(env: dict[str, str]) -> Iterator[Check]:
    """Each benchmark's local copy, where its variable names one, checked as the run checks it
    (``data.sources.local_gap``); offline, whether the release (or the published copy) a run would read is in the
    Hugging Face cache, by the run's own rule (``data.sources.offline_gap``)."""
    from lmms_spatial.data.hub_cache import offline
    from lmms_spatial.data.registry import BENCHMARKS
    from lmms_spatial.data.sources import local_gap, offline_gap

    for key, bench in BENCHMARKS.items():
        value = (env.get(bench.env_var) or "").strip()  # blank is unset, as the run reads it
        repo = (env.get(bench.repo_var) or "").strip()
        release = f"the published copy {repo} ({bench.repo_var})" if repo else f"the release {bench.hub_id}"
        if not value and not repo and not bench.hub_id:
            yield Check(NOTE, key, f"{bench.env_var} not set: no public release; its tasks need a local copy "
                        f"(lmms-spatial convert {key})")  # fmt: skip
        elif not value and not offline(env):
            yield Check(NOTE, key, f"{bench.env_var} not set: {release} is read from the Hub")
        elif not value:  # offline: its tasks stop at once unless what they read is in the cache
            gap = offline_gap(key)
            if gap is None:
                yield Check(OK, key, f"{bench.env_var} not set: offline, {release} is read from the Hugging Face cache")
            else:
                why = gap.removeprefix(f"{key}: ")
                yield Check(NOTE, key, f"{bench.env_var} not set, and its tasks stop at once: {why}")
        else:  # the run's own checks of a local copy: a line here is the line its tasks would stop with
            problem = local_gap(key, value)
            yield Check(FIX, key, problem) if problem else Check(OK, key, f"{bench.env_var}={value}")


def check_judge(env: dict[str, str]) -> Iterator[Check]:
    """The LLM judge, with one ``GET /models`` when one is configured."""
    from lmms_spatial.judge.config import ENV_MODEL, JudgeConfig
    from lmms_spatial.judge.preflight import KEY_VARIABLES, missing_key, probe

    config = JudgeConfig.from_env(env)
    if config.is_none:
        yield Check(OK, "judge", f"{ENV_MODEL}=none: judged tasks use the papers' rule-based fallbacks")
        return
    if config.model is None:
        yield Check(
            NOTE,
            "judge",
            f"{ENV_MODEL} not set: judged tasks (ODI-Bench open, OSR-Bench) come out NaN; "
            f"set {ENV_MODEL}=<model> (and its server), or {ENV_MODEL}=none for the rule-based fallbacks",
        )
        return  # fmt: skip
    if missing := missing_key(config):
        yield Check(FIX, "judge", f"{config.model}: {missing}: set {KEY_VARIABLES} to your key")
        return
    failure = probe(config)
    if failure is not None:
        yield Check(FIX, "judge", f"{config.model}: {failure}: check LMMS_SPATIAL_JUDGE_BASE_URL and the API key")
    else:
        yield Check(OK, "judge", f"{config.model} answers at {config.base_url or 'the default endpoint'}")


def tested_file() -> Path | None:
    """``constraints/tested.txt`` of the checkout lmms-spatial runs from (None for an installed release)."""
    path = Path(__file__).resolve().parent.parent / environment.TESTED_FILE
    return path if path.is_file() else None


def check_tested_set(path: Path | None) -> Iterator[Check]:
    if path is None:
        return
    rows = environment.drift(environment.read_constraints(path.read_text(encoding="utf-8")), environment.installed())
    if not rows:
        yield Check(OK, "tested set", f"every package has the version of {path}")
        return
    shown = ", ".join(f"{name} {old or '-'} -> {new or '-'}" for name, old, new in rows[:6])
    more = f" and {len(rows) - 6} more" if len(rows) > 6 else ""
    yield Check(NOTE, "tested set", f"{len(rows)} packages differ from {path}: {shown}{more} (to install exactly "
                f"it: {environment.INSTALL_TESTED})")  # fmt: skip


def run_checks(model: str | None = None, cuda: bool = False, flash_attention: bool = False,
               env: dict[str, str] | None = None, judge: bool = True) -> list[Check]:  # fmt: skip
    env = dict(os.environ) if env is None else env
    groups: list[Callable[[], Iterator[Check]]] = [check_python, check_packages]
    if model:
        groups.append(lambda: check_model(model))
    if cuda or flash_attention:
        groups.append(check_cuda)
    if flash_attention:
        groups.append(check_flash_attention)
    groups += [lambda: check_hub(env), lambda: check_data(env)]
    if judge:
        groups.append(lambda: check_judge(env))
    groups.append(lambda: check_tested_set(tested_file()))
    return [check for group in groups for check in group()]


def main(model: str | None, cuda: bool, flash_attention: bool, judge: bool = True) -> int:
    checks = run_checks(model, cuda, flash_attention, judge=judge)
    for check in checks:
        print(check.line())
    fixes = sum(c.status == FIX for c in checks)
    print(f"{fixes} to fix" if fixes else "ready")
    return 1 if fixes else 0
