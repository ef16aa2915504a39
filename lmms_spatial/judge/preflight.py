"""Before generation: say when tasks of the run need an LLM judge that is not there.

A run whose tasks score with a judge (every such task reports ``judge_failures``) and that has none
configured, or whose judge server does not answer one probe, still completes: judge metrics come out NaN
(never 0) and every item is counted in ``judge_failures``. That is only worth hours of GPU time if the
user knows before the model starts, so the run says it once, before generation, with the two ways on.
``LMMS_SPATIAL_JUDGE=none`` (the papers' rule-based fallbacks) is a choice, not a problem: no notice.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .config import API_KEY_FALLBACKS, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, JudgeConfig

if TYPE_CHECKING:
    from lmms_spatial.conditions import TaskRecord

PROBE_TIMEOUT = 5.0
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_SHOWN = 6


def probe(config: JudgeConfig, timeout: float = PROBE_TIMEOUT) -> str | None:
    """``None`` if the judge's server answers ``GET <base_url>/models``; else what went wrong, in a few words.

    Any HTTP answer means the server is up, except 401/403 (the key is refused, as every judged item would be).
    A server that does not answer is recorded as an outage of its endpoint
    (:func:`~lmms_spatial.judge.client.note_unreachable`): items judged within the cooldown that follows fail at
    once rather than waiting through the retries again.
    """
    url = (config.base_url or DEFAULT_BASE_URL).rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {config.api_key or 'EMPTY'}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout):
            return None
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return f"{url} refused the API key (HTTP {exc.code})"
        return None
    except Exception as exc:  # refused, unreachable, timed out, bad URL
        from .client import note_unreachable

        reason = getattr(exc, "reason", exc)
        failure = f"{url} does not answer ({type(reason).__name__}: {reason})"
        note_unreachable(config, failure)
        return failure


def missing_key(config: JudgeConfig) -> str | None:
    """What is missing when the judge is the OpenAI API (no base URL set) and no key is set: it refuses every
    request without one, so this is said without asking it (a local server takes any key, or none)."""
    if config.base_url is None and not config.api_key:
        return f"no API key is set for {DEFAULT_BASE_URL}"
    return None


def _listed(tasks: list[str]) -> str:
    shown = ", ".join(tasks[:_SHOWN])
    return shown + (f" and {len(tasks) - _SHOWN} more" if len(tasks) > _SHOWN else "")


def notice(tasks: list[str], env: Mapping[str, str] | None = None, timeout: float = PROBE_TIMEOUT) -> str | None:
    """The text to show before generation, or ``None`` when the tasks' judge is there (or not needed)."""
    if not tasks:
        return None
    config = JudgeConfig.from_env(dict(env) if env is not None else None)
    if config.is_none:
        return None
    fix = f"set {ENV_MODEL}=<model> (with {ENV_BASE_URL} for a local server)"
    if config.model is None:
        problem = f"no LLM judge is configured ({ENV_MODEL} is not set)"
    elif missing := missing_key(config):
        problem = f"the LLM judge {config.model} cannot be used: {missing}"
        fix = f"set {KEY_VARIABLES} to your key"
    else:
        failure = probe(config, timeout)
        if failure is None:
            return None
        problem = f"the LLM judge {config.model} cannot be reached: {failure}"
        if "refused the API key" in failure:
            problem = f"the LLM judge {config.model} cannot be used: {failure}"
            fix = f"set {KEY_VARIABLES} to a key that server accepts"
    return (
        f"lmms-spatial: {problem}, and {len(tasks)} task(s) of this run score with one: {_listed(tasks)}.\n"
        "  The run goes on: their judge metrics (judge_score, llm_accuracy) will be NaN and each item is counted "
        "in judge_failures; answers are kept, and `--model replay` scores them later.\n"
        f"  To judge now, stop here and {fix}, or {ENV_MODEL}=none for the papers' rule-based fallback."
    )


KEY_VARIABLES = f"{ENV_API_KEY} (or {' / '.join(API_KEY_FALLBACKS)})"


def unjudged_line(tasks: Mapping[str, TaskRecord]) -> str | None:
    """After a run: the closing line when an LLM judge left items unjudged (its server stopped answering midway,
    or never answered), else ``None``. ``tasks``: the ``tasks`` of the run's conditions
    (:class:`lmms_spatial.conditions.RunConditions`), whose judge counts cover every rank. A refused key has its own
    line (:func:`refused_key_line`)."""
    from .client import refused_keys

    if refused_keys():
        return None
    failed: dict[str, tuple[int, int]] = {}
    model = None
    for task, entry in sorted(tasks.items()):
        judge = entry.judge
        if judge is not None and judge.kind == "llm" and judge.failures:
            model = judge.model
            asked = judge.failures + (judge.scored or 0) + (judge.unparsed or 0)
            failed[task] = (judge.failures, asked)
    if not failed:
        return None
    total, asked = sum(n for n, _ in failed.values()), sum(m for _, m in failed.values())
    where = JudgeConfig.from_env().display_base_url
    listed = ", ".join(f"{task} {n} of {m}" for task, (n, m) in failed.items())
    return (
        f"lmms-spatial: the LLM judge {model} at {where} did not answer for {total} of {asked} judged items "
        f"({listed}): they are left out of the judge metrics (counted in judge_failures), the model's answers are "
        "kept; once the judge answers, run the same command again: the answers come from the store and only the "
        "unjudged items go to the judge"
    )


def refused_key_line(tasks: list[str]) -> str | None:
    """After a run: the last line when the judge refused the API key of some judged item (HTTP 401/403), else
    ``None``. Those items are judge failures (NaN, counted); the key is the fix, and the answers are kept."""
    from .client import refused_keys

    refused = refused_keys()
    if not refused:
        return None
    url, status = sorted(refused.items())[0]
    return (
        f"lmms-spatial: the LLM judge at {url} refused the API key (HTTP {status}), so the judged items of "
        f"{_listed(tasks)} were not judged (NaN, counted in judge_failures): set {KEY_VARIABLES} to a key it "
        "accepts, then score the kept answers again with --model replay"
    )
