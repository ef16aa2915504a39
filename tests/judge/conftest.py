"""Fixtures for the judge tests: a loopback chat-completions server and fast judge configs."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lmms_spatial.judge import JudgeConfig, reset_judges
from tools.fake_judge import FakeJudgeServer

_JUDGE_ENV_PREFIXES = ("LMMS_SPATIAL_JUDGE", "OPENAI_")


@pytest.fixture(autouse=True)
def _isolated_judge_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No judge setting leaks in from the developer's shell; shared judges are dropped after each test."""
    for name in list(os.environ):
        if name.startswith(_JUDGE_ENV_PREFIXES):
            monkeypatch.delenv(name)
    yield
    reset_judges()


@pytest.fixture
def server() -> Iterator[FakeJudgeServer]:
    """A running fake judge; set ``server.handler`` / ``server.latency`` in the test."""
    with FakeJudgeServer() as srv:
        yield srv


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "judge-cache"


@pytest.fixture
def make_config(server: FakeJudgeServer, cache_dir: Path) -> Callable[..., JudgeConfig]:
    """JudgeConfig pointed at ``server`` with test-sized timeouts and backoff (override freely)."""

    def make(**overrides: Any) -> JudgeConfig:
        values: dict[str, Any] = {
            "model": "fake-judge",
            "base_url": server.base_url,
            "api_key": "test-key",
            "concurrency": 4,
            "timeout": 5.0,
            "max_retries": 2,
            "backoff_base": 0.01,
            "backoff_max": 0.05,
            "jitter": 0.0,
            "cache_dir": str(cache_dir),
            "progress": False,
        }
        values.update(overrides)
        return JudgeConfig(**values)

    return make


@pytest.fixture
def caplog_loguru():
    """What loguru logs at WARNING and above during the test (``.text``)."""
    from types import SimpleNamespace

    from loguru import logger

    captured = SimpleNamespace(text="")

    def sink(message) -> None:
        captured.text += str(message)

    handler_id = logger.add(sink, level="WARNING")
    yield captured
    logger.remove(handler_id)
