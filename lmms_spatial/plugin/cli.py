"""lmms-eval's command-line flags with our tasks: what cannot work is refused before anything loads, in one line.

The one wrapper of ``lmms_eval.__main__.cli_evaluate_single``, the function that runs one run of the command line
(or one entry of a ``--config`` file) with the arguments argparse or the config file gave it. For a run that names a
task of ours it first checks those arguments (docs/running.md, "lmms-eval's flags", has the whole table):

- **refused**, exit 1, one line naming the fix (:func:`refusals`): a ``--config`` value lmms-eval would misread
  (``tasks:`` as a YAML list: lmms-eval calls ``.split(",")`` on it and exits 0 after a traceback; ``seed: 42``:
  it indexes the four seeds out of it), few-shot prompting (the papers are zero-shot and the releases have no
  few-shot split), ``--apply_chat_template`` (a text-only tasks' feature: lmms-eval reads ``lm.chat_template``,
  which its vision model classes and ours lack, and our tasks hand chat models their messages), a
  ``--system_instruction`` (glued in front of the paper's prompt with no separator for simple model classes,
  dropped for chat ones), ``--check_integrity`` (it runs lmms-eval's own tests, which a pip-installed lmms-eval
  does not ship), ``--launcher_args`` (it starts lmms-eval's judge server, which our judge does not use),
  ``--repeats`` above 1 (our scorers read one reply per question), ``--baseline`` (lmms-eval scores the
  baseline's samples by exact match of reply and target, not with our scorers) and ``--cache_requests true``
  (requests saved under the task's name, not the data they were built from);
- **Hub logging** that asks to push (``push_results_to_hub`` / ``push_samples_to_hub``) is checked now, not after
  every answer has been generated (:func:`hub_problem`): a token, ``HF_HUB_OFFLINE`` unset, the Hub reachable.
  A push that fails after all ends the run with exit 1, the results written, and the command that pushes them;
- **said**, and run: an ``--output_path`` ending in ``.json`` (lmms-eval makes it a folder) and
  ``--log_samples_suffix`` (lmms-eval 0.7.3 names samples files without it).

Runs with none of our tasks are left exactly as lmms-eval runs them.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
from typing import Any
from urllib.parse import urlparse

from lmms_spatial.conditions import parse_model_args
from lmms_spatial.plugin import failures
from lmms_spatial.plugin.run import names_ours, task_entries

HUB_PUSH_KEYS = ("push_results_to_hub", "push_samples_to_hub")
_TRUE = {"1", "true", "yes", "on"}
JUDGE_DOC = "LMMS_SPATIAL_JUDGE, LMMS_SPATIAL_JUDGE_BASE_URL (docs/judge.md)"


def _config_name(args: Any) -> str:
    return f"--config {args.config}" if getattr(args, "config", None) else "the command line"


def config_mistakes(args: Any) -> list[str]:
    """Values a ``--config`` file gives (argparse never saw them) that lmms-eval would misread."""
    where = _config_name(args)
    found = []
    tasks = getattr(args, "tasks", None)
    if tasks is not None and not isinstance(tasks, str):
        joined = ",".join(task_entries(tasks)) or "<task>,<task>"
        found.append(
            f"tasks: in {where} is a YAML {type(tasks).__name__}; lmms-eval reads a comma-separated "
            f'string (it calls .split on it): write tasks: "{joined}"'
        )
    seed = getattr(args, "seed", None)
    if not (isinstance(seed, (list, tuple)) and len(seed) == 4):
        found.append(
            f"seed: {seed!r} in {where} is not the four seeds lmms-eval indexes (python's random, numpy, "
            "torch, few-shot sampling): write seed: [0, 1234, 1234, 1234] (or drop it for those defaults)"
        )
    return found


def flag_mistakes(args: Any) -> list[str]:
    """Flags lmms-eval accepts that cannot give a paper's protocol on our tasks: each with why and what to do."""
    found = []
    fewshot = getattr(args, "num_fewshot", None)
    asked = [f"--num_fewshot {fewshot}"] if isinstance(fewshot, int) and fewshot > 0 else []
    asked += ["--fewshot_as_multiturn"] if getattr(args, "fewshot_as_multiturn", False) else []
    if asked:
        found.append(
            f"{' '.join(asked)}: our tasks are zero-shot, as their papers, and the releases have no few-shot "
            "split: drop it"
        )
    if getattr(args, "apply_chat_template", False):
        found.append(
            "--apply_chat_template is for lmms-eval's text-only tasks (it reads the model's chat_template, "
            "which lmms-eval's vision model classes and ours lack); each model class applies its own chat "
            "template to our tasks' messages: drop the flag"
        )
    if getattr(args, "system_instruction", None):
        found.append(
            "--system_instruction is glued in front of the paper's prompt with no separator by simple model "
            "classes and dropped by chat ones, so the run would not be the paper's protocol: drop it (a "
            "system prompt of your own belongs in a task YAML of yours that includes ours, docs/running.md)"
        )
    if getattr(args, "check_integrity", False):
        found.append(
            "--check_integrity runs lmms-eval's own test suite, which a pip-installed lmms-eval does not ship "
            "(it fails for every task): drop it; our tasks' checks are `pytest` in a checkout of lmms-spatial"
        )
    if getattr(args, "launcher_args", None):
        found.append(
            f"--launcher_args starts lmms-eval's judge server, which our tasks do not use: our judge is "
            f"set with {JUDGE_DOC}; run lmms-eval's own tasks that need it separately"
        )
    if str(getattr(args, "cache_requests", None) or "").lower() == "true":
        found.append(
            "--cache_requests true reuses the requests lmms-eval saved under a task's name, shots, rank and offset "
            "only, not the data read (another release, revision or local copy) nor our run options: a later run "
            "would evaluate another run's questions: drop it (our tasks' requests build in seconds; the answers are "
            "kept by the answer store)"
        )
    repeats = getattr(args, "repeats", None)
    if isinstance(repeats, int) and repeats > 1:
        found.append(
            f"-n/--repeats {repeats}: our scorers read one reply per question, as the papers do, so lmms-eval's "
            "stability metrics (EA, CA, IV, CR) are not computed and the other replies go unscored: drop it; "
            "for several sampled runs give each its --seed, and lmms-spatial report pools them"
        )
    if getattr(args, "baseline", None):
        found.append(
            f"--baseline {args.baseline}: lmms-eval scores the baseline's samples by matching the raw reply "
            "to the target, not with our tasks' scorers, so its paired test would compare unlike scores: "
            "compare runs with lmms-spatial report <run> <run> (each row with its 95% CI)"
        )
    return found


def pushes(hub: dict[str, str]) -> bool:
    return any(hub.get(key, "").lower() in _TRUE for key in HUB_PUSH_KEYS)


def _reachable(endpoint: str, timeout: float = 5.0) -> str | None:
    """``None`` when a TCP connection to the Hub's host opens, else why not."""
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (80 if parsed.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"
    return None


def hub_problem(args: Any, environ: dict[str, str] | None = None) -> str | None:
    """Why a run asked to push its results to the Hub could not, known before any answer is generated."""
    environ = os.environ if environ is None else environ
    hub = parse_model_args(getattr(args, "hf_hub_log_args", ""))  # key=value,... as --model_args
    if not pushes(hub):
        return None
    flag = f"--hf_hub_log_args {getattr(args, 'hf_hub_log_args', '')}"
    if not (hub.get("token") or environ.get("HF_TOKEN")):
        return (
            f"{flag} pushes to the Hub, and HF_TOKEN is not set: export HF_TOKEN=<a token with write access>, or "
            "drop push_results_to_hub/push_samples_to_hub (the results are written locally either way)"
        )
    if environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return (
            f"{flag} pushes to the Hub, and HF_HUB_OFFLINE is set: unset it on a machine that reaches the Hub, "
            "or drop push_results_to_hub/push_samples_to_hub and push the results file later (hf upload)"
        )
    endpoint = environ.get("HF_ENDPOINT") or "https://huggingface.co"
    unreachable = _reachable(endpoint)
    if unreachable:
        return (
            f"{flag} pushes to the Hub, which cannot be reached from here ({unreachable}): run where it can, "
            "or drop push_results_to_hub/push_samples_to_hub and push the results file later (hf upload)"
        )
    return None


def refusals(args: Any, environ: dict[str, str] | None = None) -> list[str]:
    """Everything in ``args`` that ends a run of ours before it starts, each a line naming the fix."""
    found = config_mistakes(args) if getattr(args, "config", None) else []
    found += flag_mistakes(args)
    hub = hub_problem(args, environ)
    return found + ([hub] if hub else [])


def notices(args: Any) -> list[str]:
    """Flags that work but not as their name suggests: said as the run starts."""
    said = []
    output = str(getattr(args, "output_path", None) or "")
    if output.endswith(".json"):
        said.append(
            f"--output_path {output} is a folder for lmms-eval: the results and samples files go into "
            f"{output}/ (<date>_results.json, <date>_samples_<task>.jsonl)"
        )
    if getattr(args, "log_samples_suffix", None) not in (None, "", "model_outputs"):
        said.append(
            f"--log_samples_suffix {args.log_samples_suffix} does nothing in lmms-eval 0.7.x: samples files are "
            "named <date>_samples_<task>.jsonl"
        )
    return said


def push_command(tracker: Any, results_file: str) -> str:
    """The command that pushes a written results file where lmms-eval would have put it."""
    public = bool(getattr(tracker, "public_repo", False))
    repo = getattr(tracker, "results_repo" if public else "results_repo_private", None) or "<org>/<repo>"
    model = getattr(getattr(tracker, "general_config_tracker", None), "model_name", None) or ""
    inside = f"{model}/{os.path.basename(results_file)}" if model else os.path.basename(results_file)
    private = "" if public else " --private"
    return f"hf upload {repo} {results_file} {inside} --repo-type dataset{private}"


def _cli_evaluate_single(original):
    @functools.wraps(original)
    def cli_evaluate_single(args=None, *rest, **kwargs):
        if args is None or not names_ours(getattr(args, "tasks", None)):
            return original(args, *rest, **kwargs)
        from lmms_spatial import run_state

        run_state.STATE.written_for_hub, run_state.STATE.push_failure_said = None, False  # each run of a --config
        found = refusals(args)
        if found:
            for line in found:
                failures.add_line(f"lmms-spatial: {line}")
            raise SystemExit(1)  # not an Exception: lmms-eval's handler would print a traceback over the lines
        if int(os.environ.get("RANK", "0") or 0) == 0:
            for line in notices(args):
                print(f"lmms-spatial: {line}", file=sys.stderr, flush=True)
        try:
            return original(args, *rest, **kwargs)
        except Exception as exc:  # a push after the results were written (lmms-eval would exit 0)
            written = run_state.STATE.written_for_hub  # set only for a run that pushes (outputs._pushed_or_said)
            if not written:
                raise
            if not run_state.STATE.push_failure_said:  # one line for the push, however many of its steps failed
                failures.add_line(push_failed_line(written, exc))
            raise SystemExit(1) from None

    cli_evaluate_single._lmms_spatial = True
    return cli_evaluate_single


def push_failed_line(written: tuple[str, str], exc: BaseException) -> str:
    results_file, command = written
    return (
        f"lmms-spatial: the results are written ({results_file}) but were not pushed to the Hub "
        f"({failures.describe(exc)}): push them with {command}"
    )


def patch_cli(module) -> None:
    """The one wrapper of ``cli_evaluate_single`` (see the module doc; docs/plugin.md)."""
    from lmms_spatial.plugin import internal

    original = internal(module, "cli_evaluate_single", "lmms-eval's flags are not checked before a run of ours")
    if original is None or getattr(original, "_lmms_spatial", False):
        return
    module.cli_evaluate_single = _cli_evaluate_single(original)
