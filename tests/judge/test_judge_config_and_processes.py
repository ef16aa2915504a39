"""Configuration from the environment, lazy construction, thread-safe stats, and two processes on one cache."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from lmms_spatial.judge import JudgeConfig, JudgeStats
from lmms_spatial.judge.cache import CACHE_FILENAME
from tools.fake_judge import FakeJudgeServer, osr_item, osr_reply, score_items_in_process


def test_config_reads_every_documented_variable() -> None:
    env = {
        "LMMS_SPATIAL_JUDGE": "Qwen/Qwen2.5-72B-Instruct",
        "LMMS_SPATIAL_JUDGE_BASE_URL": "http://gpu-node:8000/v1",
        "LMMS_SPATIAL_JUDGE_API_KEY": "dummy",
        "LMMS_SPATIAL_JUDGE_CONCURRENCY": "32",
        "LMMS_SPATIAL_JUDGE_TIMEOUT": "12.5",
        "LMMS_SPATIAL_JUDGE_MAX_RETRIES": "7",
        "LMMS_SPATIAL_JUDGE_CACHE": "/tmp/judge-cache",
    }
    config = JudgeConfig.from_env(env)
    assert (config.model, config.base_url, config.api_key) == (
        "Qwen/Qwen2.5-72B-Instruct",
        "http://gpu-node:8000/v1",
        "dummy",
    )
    assert (config.concurrency, config.timeout, config.max_retries, config.cache_dir) == (
        32,
        12.5,
        7,
        "/tmp/judge-cache",
    )


def test_config_defaults_and_openai_fallback_variables() -> None:
    config = JudgeConfig.from_env({"OPENAI_BASE_URL": "http://b/v1", "OPENAI_API_KEY": "k"})
    assert (config.model, config.base_url, config.api_key, config.concurrency) == (None, "http://b/v1", "k", 8)
    assert config.resolved_cache_dir == os.path.expanduser("~/.cache/lmms_spatial/judge")
    both = JudgeConfig.from_env({"OPENAI_API_URL": "http://a/v1", "OPENAI_BASE_URL": "http://b/v1"})
    assert both.base_url == "http://a/v1"  # OPENAI_API_URL (lmms-eval's name) first


def test_overrides_win_over_the_environment_and_unknown_options_raise() -> None:
    config = JudgeConfig.from_env(
        {"LMMS_SPATIAL_JUDGE": "gpt-4o", "LMMS_SPATIAL_JUDGE_CONCURRENCY": "2"}, concurrency=16
    )
    assert (config.model, config.concurrency) == ("gpt-4o", 16)
    with pytest.raises(TypeError, match="concurency"):
        JudgeConfig.from_env({}, concurency=3)
    with pytest.raises(ValueError, match="LMMS_SPATIAL_JUDGE_CONCURRENCY"):
        JudgeConfig.from_env({"LMMS_SPATIAL_JUDGE_CONCURRENCY": "many"})


@pytest.mark.parametrize("value", ["none", "None", " NONE "])
def test_judge_none_is_recognised(value: str) -> None:
    assert JudgeConfig.from_env({"LMMS_SPATIAL_JUDGE": value}).is_none


@pytest.mark.parametrize("value", ["off", "none", "0", ""])
def test_cache_variable_can_switch_the_cache_off(value: str) -> None:
    assert JudgeConfig.from_env({"LMMS_SPATIAL_JUDGE_CACHE": value}).resolved_cache_dir is None


def test_importing_the_judge_package_needs_no_key_network_or_openai() -> None:
    code = (
        "import sys, lmms_spatial.judge as j\n"
        "judge = j.get_judge('odi_open')\n"
        "assert judge._client is None and judge._cache is None\n"
        "assert 'openai' not in sys.modules, 'openai imported at import time'\n"
        "print('ok')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LMMS_SPATIAL_JUDGE", "OPENAI_"))}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_stats_counters_are_exact_under_threads() -> None:
    stats = JudgeStats("m", "r", "1")

    def bump() -> None:
        for _ in range(1000):
            stats.add(judge_calls=1, cache_hits=2)

    threads = [threading.Thread(target=bump) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (stats.judge_calls, stats.cache_hits) == (8000, 16000)
    with pytest.raises(AttributeError):
        stats.add(judge_model=1)


def test_two_processes_sharing_one_cache_keep_it_consistent(tmp_path: Path) -> None:
    counter = 0
    lock = threading.Lock()

    def numbered(request: dict[str, Any]) -> str:
        nonlocal counter
        with lock:
            counter += 1
            n = counter
        # every request gets a distinct raw reply, so a duplicate row would be visible
        return osr_reply(request)[:-1] + f', "request_number": {n}}}'

    cache_dir = tmp_path / "shared-cache"
    with FakeJudgeServer(numbered, latency=0.005) as server:
        config = {
            "model": "fake-judge",
            "base_url": server.base_url,
            "api_key": "k",
            "concurrency": 4,
            "timeout": 10.0,
            "backoff_base": 0.01,
            "cache_dir": str(cache_dir),
            "progress": False,
        }
        first, second = list(range(0, 30)), list(range(15, 45))  # items 15..29 in both
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(2) as pool:
            out_a, out_b = pool.starmap(
                score_items_in_process,
                [
                    ("osr_negative", config, [osr_item(i) for i in first]),
                    ("osr_negative", config, [osr_item(i) for i in second]),
                ],
            )
        requests = server.request_count

    verdicts_a = dict(zip(first, out_a[:-1], strict=True))
    verdicts_b = dict(zip(second, out_b[:-1], strict=True))
    for i, verdict in [*verdicts_a.items(), *verdicts_b.items()]:
        assert verdict["score"] == (0.0 if i % 3 == 0 else 1.0)
    for i in range(15, 30):  # both processes report the one stored verdict (first writer wins)
        assert verdicts_a[i]["raw_reply"] == verdicts_b[i]["raw_reply"]
    assert 45 <= requests <= 60
    with sqlite3.connect(cache_dir / CACHE_FILENAME) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        keys = [row[0] for row in conn.execute("SELECT key FROM verdicts")]
    assert len(keys) == len(set(keys)) == 45
    assert out_a[-1]["stats"]["items"] == 30 and out_b[-1]["stats"]["items"] == 30
