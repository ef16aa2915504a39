"""LLM-judge layer: cached, concurrent, resumable scoring with the papers' rubrics.

Typical use inside a task's ``process_results`` (thread-safe; one shared judge per process)::

    from lmms_spatial.judge import get_judge

    judge = get_judge("odi_open")                # config from LMMS_SPATIAL_JUDGE* env vars
    verdict = judge.score({"task": "counting", "question": q, "answer_text": gt, "response": out})
    verdict.score, verdict.reason, verdict.cached
    judge.stats.as_dict()                        # goes into the task's results

or, for a whole list at once, ``judge.score_many(items)`` (``concurrency`` requests in flight,
tqdm bar, results in input order). Options can be passed as overrides,
``get_judge("osr_negative", model="deepseek-chat", concurrency=16)``.

Environment variables (details in :mod:`lmms_spatial.judge.config` and ``docs/judge.md``):
``LMMS_SPATIAL_JUDGE`` (model name, or ``none`` for the rule-based fallbacks),
``LMMS_SPATIAL_JUDGE_BASE_URL`` (else ``OPENAI_API_URL`` / ``OPENAI_BASE_URL``),
``LMMS_SPATIAL_JUDGE_API_KEY`` (else ``OPENAI_API_KEY``; a dummy key is fine for local vLLM),
``LMMS_SPATIAL_JUDGE_CONCURRENCY`` (8), ``LMMS_SPATIAL_JUDGE_TIMEOUT`` (60 s),
``LMMS_SPATIAL_JUDGE_MAX_RETRIES`` (5), ``LMMS_SPATIAL_JUDGE_CACHE`` (``~/.cache/lmms_spatial/judge``).

Importing this package needs no key and no network and does not import ``openai``; the
client is built on the first judged item.
"""

from __future__ import annotations

from lmms_spatial.metrics.rubrics import RUBRICS, Judgement, Rubric, get_rubric

from .cache import VerdictCache
from .client import FALLBACK_JUDGE, UNPARSED_REASON, Judge, Verdict, get_judge, reset_judges
from .config import JudgeConfig
from .errors import JudgeError, JudgeNotConfiguredError, JudgeUnavailableError
from .stats import JudgeStats

__all__ = [
    "FALLBACK_JUDGE",
    "RUBRICS",
    "UNPARSED_REASON",
    "Judge",
    "JudgeConfig",
    "JudgeError",
    "JudgeNotConfiguredError",
    "JudgeStats",
    "JudgeUnavailableError",
    "Judgement",
    "Rubric",
    "Verdict",
    "VerdictCache",
    "get_judge",
    "get_rubric",
    "reset_judges",
]
