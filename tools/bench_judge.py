"""Benchmark the judge layer against a loopback chat-completions server with a fixed latency.

Scores N distinct ``osr_negative`` items at each concurrency (fresh cache each time), then
re-scores the last run's items from its cache with a new judge object (what a re-run of a
finished evaluation does), and prints items/s. Every verdict is checked against the score
the fake judge must give, so a fast but wrong run cannot pass as a result.

    python -m tools.bench_judge                     # 400 items, 10 ms latency, concurrency 1 and 16
    python -m tools.bench_judge --items 1000 --concurrency 1 8 32 --latency 0.05

The ``openai`` import (~0.5 s, paid once per process) happens before timing starts; building
the client and the cache database is inside the timed region.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lmms_spatial.judge import Judge, JudgeConfig
from tools.fake_judge import FakeJudgeServer, osr_item


def _config(server: FakeJudgeServer, cache_dir: Path, concurrency: int) -> JudgeConfig:
    return JudgeConfig(
        model="fake-judge",
        base_url=server.base_url,
        api_key="bench",
        concurrency=concurrency,
        timeout=30.0,
        cache_dir=str(cache_dir),
        progress=False,
    )


def _check(verdicts: list[Any], n: int) -> None:
    wrong = [i for i, v in enumerate(verdicts) if v.score != (0.0 if i % 3 == 0 else 1.0)]
    if len(verdicts) != n or wrong:
        raise SystemExit(f"benchmark produced wrong verdicts for items {wrong[:10]}")


def run(n_items: int, latency: float, concurrencies: list[int]) -> dict[str, Any]:
    import openai  # noqa: F401  (import cost kept out of the timings)

    items = [osr_item(i) for i in range(n_items)]
    report: dict[str, Any] = {"items": n_items, "latency_s": latency, "runs": []}
    with FakeJudgeServer(latency=latency) as server, tempfile.TemporaryDirectory() as tmp:
        last_cache: Path | None = None
        last_concurrency = concurrencies[-1]
        for concurrency in concurrencies:
            cache_dir = Path(tmp) / f"cache-c{concurrency}"
            judge = Judge("osr_negative", _config(server, cache_dir, concurrency))
            server.reset_counts()
            start = time.perf_counter()
            verdicts = judge.score_many(items)
            elapsed = time.perf_counter() - start
            judge.close()
            _check(verdicts, n_items)
            report["runs"].append(
                {
                    "concurrency": concurrency,
                    "seconds": round(elapsed, 3),
                    "items_per_s": round(n_items / elapsed, 1),
                    "http_requests": server.request_count,
                    "server_max_in_flight": server.max_in_flight,
                }
            )
            last_cache, last_concurrency = cache_dir, concurrency

        assert last_cache is not None
        server.reset_counts()
        judge = Judge("osr_negative", _config(server, last_cache, last_concurrency))
        start = time.perf_counter()
        verdicts = judge.score_many(items)
        elapsed = time.perf_counter() - start
        judge.close()
        _check(verdicts, n_items)
        if server.request_count or not all(v.cached for v in verdicts):
            raise SystemExit("cache re-score sent HTTP requests")
        report["cache_rescore"] = {
            "concurrency": last_concurrency,
            "seconds": round(elapsed, 4),
            "items_per_s": round(n_items / elapsed, 1),
            "http_requests": 0,
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.010, help="fake judge reply latency in seconds")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = run(args.items, args.latency, args.concurrency)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['items']} items, fake judge latency {report['latency_s'] * 1000:.0f} ms")
    for r in report["runs"]:
        print(
            f"  concurrency {r['concurrency']:>3}: {r['items_per_s']:>8.1f} items/s  ({r['seconds']:.2f} s, "
            f"{r['http_requests']} requests, server saw at most {r['server_max_in_flight']} at once)"
        )
    c = report["cache_rescore"]
    print(f"  cache re-score : {c['items_per_s']:>8.1f} items/s  ({c['seconds']:.4f} s, 0 requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
