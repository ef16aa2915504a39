"""Judge configuration: environment variables, with per-task overrides.

Environment variables (read by :meth:`JudgeConfig.from_env`; keyword overrides win):

==================================  ===================================================================
``LMMS_SPATIAL_JUDGE``              judge model name as the endpoint knows it (``gpt-4o``,
                                    ``deepseek-chat``, ``Qwen/Qwen2.5-72B-Instruct``), or ``none`` for
                                    the rubrics' rule-based fallbacks. Unset: no judge configured; the
                                    first judged item raises :class:`~.errors.JudgeNotConfiguredError`.
``LMMS_SPATIAL_JUDGE_BASE_URL``     OpenAI-compatible base URL (``http://host:8000/v1`` for vLLM /
                                    SGLang, an Azure ``.../openai/v1`` URL). Falls back to
                                    ``OPENAI_API_URL``, then ``OPENAI_BASE_URL``, then the OpenAI API.
``LMMS_SPATIAL_JUDGE_API_KEY``      API key; falls back to ``OPENAI_API_KEY``. Any dummy value works for
                                    a local vLLM server; with neither set, ``"EMPTY"`` is sent.
``LMMS_SPATIAL_JUDGE_CONCURRENCY``  requests in flight at once per process (default 8).
``LMMS_SPATIAL_JUDGE_TIMEOUT``      seconds per HTTP request (default 60).
``LMMS_SPATIAL_JUDGE_MAX_RETRIES``  retries after a 429 / 5xx / timeout / connection error (default 5).
``LMMS_SPATIAL_JUDGE_CACHE``        cache directory (default ``~/.cache/lmms_spatial/judge``);
                                    ``off`` / ``none`` / ``0`` disables the cache.
==================================  ===================================================================

Reading the environment never builds a client and never needs a key: a wrong setting only
surfaces when the first item is judged.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

ENV_MODEL = "LMMS_SPATIAL_JUDGE"
ENV_BASE_URL = "LMMS_SPATIAL_JUDGE_BASE_URL"
ENV_API_KEY = "LMMS_SPATIAL_JUDGE_API_KEY"
ENV_CONCURRENCY = "LMMS_SPATIAL_JUDGE_CONCURRENCY"
ENV_TIMEOUT = "LMMS_SPATIAL_JUDGE_TIMEOUT"
ENV_MAX_RETRIES = "LMMS_SPATIAL_JUDGE_MAX_RETRIES"
ENV_CACHE = "LMMS_SPATIAL_JUDGE_CACHE"
BASE_URL_FALLBACKS = ("OPENAI_API_URL", "OPENAI_BASE_URL")
API_KEY_FALLBACKS = ("OPENAI_API_KEY",)

NO_JUDGE = "none"
DEFAULT_CACHE_DIR = os.path.join("~", ".cache", "lmms_spatial", "judge")
DUMMY_API_KEY = "EMPTY"
_CACHE_OFF = {"", "off", "none", "0", "false", "no"}


@dataclass(frozen=True)
class JudgeConfig:
    """Everything that decides how items are judged. Frozen and hashable: ``get_judge`` shares
    one judge (client, cache, statistics) per (rubric, config).

    ``unavailable_cooldown``: after a judge was found unreachable, uncached items fail at once
    for this many seconds instead of waiting through the retries again (lmms-eval retries a
    failing ``process_results`` 5 times, in 4 threads).

    Only ``model`` and the sampling fields (``temperature``, ``max_tokens``) enter the cache key;
    transport settings (URL, key, timeouts, retries) do not, so the same judge served from a
    different host reuses its verdicts.
    """

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = dataclasses.field(default=None, repr=False)
    concurrency: int = 8
    timeout: float = 60.0
    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    jitter: float = 0.25
    seed: int = 0
    parse_retries: int = 2
    unavailable_cooldown: float = 60.0
    cache_dir: str | None = DEFAULT_CACHE_DIR
    temperature: float | None = 0.0
    max_tokens: int | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"judge concurrency must be >= 1, got {self.concurrency}")
        if self.max_retries < 0 or self.parse_retries < 0:
            raise ValueError("judge max_retries and parse_retries must be >= 0")
        if self.timeout <= 0:
            raise ValueError(f"judge timeout must be > 0 seconds, got {self.timeout}")

    @property
    def is_none(self) -> bool:
        """True when the user chose the rule-based fallback (``LMMS_SPATIAL_JUDGE=none``)."""
        return self.model is not None and self.model.strip().lower() == NO_JUDGE

    @property
    def display_base_url(self) -> str:
        return self.base_url or "https://api.openai.com/v1 (openai default)"

    @property
    def resolved_cache_dir(self) -> str | None:
        return os.path.abspath(os.path.expanduser(self.cache_dir)) if self.cache_dir else None

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> JudgeConfig:
        """Config from ``env`` (default ``os.environ``), then ``overrides`` (unknown names raise)."""
        env = dict(os.environ) if env is None else env
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown judge option(s) {unknown}; known: {sorted(known)}")

        def first(*names: str) -> str | None:
            for name in names:
                value = env.get(name, "").strip()
                if value:
                    return value
            return None

        values: dict[str, Any] = {
            "model": first(ENV_MODEL),
            "base_url": first(ENV_BASE_URL, *BASE_URL_FALLBACKS),
            "api_key": first(ENV_API_KEY, *API_KEY_FALLBACKS),
        }
        for name, field, convert in (
            (ENV_CONCURRENCY, "concurrency", int),
            (ENV_TIMEOUT, "timeout", float),
            (ENV_MAX_RETRIES, "max_retries", int),
        ):
            raw = first(name)
            if raw is not None:
                try:
                    values[field] = convert(raw)
                except ValueError:
                    raise ValueError(f"{name}={raw!r} is not a valid {convert.__name__}") from None
        if ENV_CACHE in env:
            raw_cache = env[ENV_CACHE].strip()
            values["cache_dir"] = None if raw_cache.lower() in _CACHE_OFF else raw_cache
        values.update(overrides)
        return cls(**values)
