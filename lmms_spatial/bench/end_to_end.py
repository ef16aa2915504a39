"""End to end (``e2e`` section): lmms-eval on the tasks with ``--model``, and the steady state.

The single run gives docs/s and our share of the wall time (an upper bound: it includes start-up and
model load). The steady state runs ``--limit 2L`` and ``--limit L`` again (both warm) so start-up
and model load cancel in the marginal time per document.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from lmms_spatial.bench.lmms_eval_process import run_lmms_eval

STEADY_SHARE_BUDGET = 0.05  # our CPU per doc / the model's steady-state time per doc (7B model, one H100)
STEADY_NOTE = "budget for a 7B model on one GPU; with a tiny model or on CPU the flag is informative only"


def steady_state(wall_l: float, docs_l: dict[str, int], wall_2l: float, docs_2l: dict[str, int],
                 ours_ms: dict[str, float]) -> dict[str, Any]:  # fmt: skip
    """The marginal time per document from two runs with ``--limit L`` and ``--limit 2L``.

    ``marginal_ms_per_doc`` = 1000 (wall(2L) - wall(L)) / (docs(2L) - docs(L)): start-up and model load
    cancel. Our CPU ms/doc is weighted by each task's marginal documents (a task capped by its dataset
    size adds none), so it describes the same documents; ``our_share_of_steady`` is its ratio to the
    marginal. Both are None, with ``steady_reason``, when no document was added, when the wall time did
    not grow, or when a task that added documents has no CPU figure (``ours_ms``: task -> ms/doc).
    """
    marginal_docs = {t: docs_2l.get(t, 0) - docs_l.get(t, 0) for t in sorted(set(docs_l) | set(docs_2l))}
    added = sum(marginal_docs.values())
    out: dict[str, Any] = {
        "docs_2l": sum(docs_2l.values()),
        "marginal_docs": added,
        "marginal_wall_s": round(wall_2l - wall_l, 3),
        "marginal_ms_per_doc": None,
        "our_cpu_ms_per_marginal_doc": None,
        "our_share_of_steady": None,
        "steady_reason": None,
    }
    if added <= 0:
        out["steady_reason"] = (f"docs(2L) == docs(L) = {sum(docs_l.values())}: every task has at most L documents; "
                                "use a smaller --limit")  # fmt: skip
        return out
    if wall_2l <= wall_l:
        out["steady_reason"] = ("wall(2L) <= wall(L): run-to-run variation exceeds the extra documents' cost; "
                                "use a larger --limit")  # fmt: skip
        return out
    marginal = 1000 * (wall_2l - wall_l) / added
    out["marginal_ms_per_doc"] = round(marginal, 3)
    missing = sorted(t for t, n in marginal_docs.items() if n > 0 and t not in ours_ms)
    if missing:
        out["steady_reason"] = f"no CPU figure (tasks section) for {', '.join(missing)}"
        return out
    ours = sum(ours_ms[t] * n for t, n in marginal_docs.items() if n > 0) / added
    out["our_cpu_ms_per_marginal_doc"] = round(ours, 3)
    out["our_share_of_steady"] = round(ours / marginal, 5)
    return out


def _effective_docs(results: dict, tasks: list[str]) -> dict[str, int]:
    return {t: int(results.get("n-samples", {}).get(t, {}).get("effective", 0)) for t in tasks}


def bench_end_to_end(args: argparse.Namespace, tasks: list[str], env: dict[str, str], work: Path,
                     cpu_rows: dict[str, dict]) -> dict[str, Any]:  # fmt: skip
    from lmms_spatial.paths import tasks_dir

    cmd = ["--model", args.model, "--model_args", args.model_args, "--tasks", ",".join(tasks),
           "--include_path", tasks_dir(), "--batch_size", str(args.batch_size)]  # fmt: skip
    if args.gen_kwargs:
        cmd += ["--gen_kwargs", args.gen_kwargs]
    limit = ["--limit", str(args.limit)] if args.limit else []
    results, wall, rss, stderr = run_lmms_eval(cmd + limit, env, work / "end_to_end")
    if results is None:
        return {"error": f"lmms-eval wrote no results: {stderr}"}
    n_docs = _effective_docs(results, tasks)
    total = sum(n_docs.values())
    model_ms = 1000 * wall / total if total else None
    ours_ms = sum(cpu_rows[t]["our_cpu_ms_per_doc"] * n for t, n in n_docs.items() if t in cpu_rows) / max(total, 1)
    out = {
        "model": args.model,
        "model_args": args.model_args,
        "batch_size": args.batch_size,
        "limit": args.limit,
        "docs": total,
        "wall_s": round(wall, 2),
        "docs_per_s": round(total / wall, 3) if wall else None,
        "wall_ms_per_doc": round(model_ms, 2) if model_ms else None,
        "our_cpu_ms_per_doc": round(ours_ms, 3),
        # upper bound of our share: the wall time includes process start and model load
        "our_share_of_wall": round(ours_ms / model_ms, 4) if model_ms else None,
        "child_peak_rss_mb": round(rss, 1),
        "evaluation_time_s": results.get("total_evaluation_time_seconds"),
    }
    if getattr(args, "steady", True):
        out.update(_steady_runs(args, cmd, env, work, n_docs, cpu_rows))
    return out


def _steady_runs(args: argparse.Namespace, cmd: list[str], env: dict[str, str], work: Path,
                 docs_first: dict[str, int], cpu_rows: dict[str, dict]) -> dict[str, Any]:  # fmt: skip
    """``--limit 2L``, then ``--limit L`` again (both after the first, cache-warming run): the steady state."""
    out: dict[str, Any] = {"steady": True, "marginal_ms_per_doc": None, "our_share_of_steady": None}
    limit = args.limit
    if not limit:
        out["steady_reason"] = "needs --limit L (runs --limit 2L and --limit L)"
        return out
    if all(n < limit for n in docs_first.values()):  # every task already ran out of documents: 2L adds none
        state = steady_state(0.0, docs_first, 0.0, docs_first, {})
        state["steady_reason"] += " (every task ran out of documents at L: the 2L runs were skipped)"
        state["marginal_wall_s"] = None
        return {"steady": True, **state}
    runs = {}
    for name, n in (("2l", 2 * limit), ("l", limit)):
        results, wall, rss, stderr = run_lmms_eval([*cmd, "--limit", str(n)], env, work / f"end_to_end_steady_{name}")
        if results is None:
            out["steady_reason"] = f"the --limit {n} run wrote no results: {stderr[-1000:]}"
            return out
        runs[name] = (wall, _effective_docs(results, list(docs_first)), rss)
    (wall_2l, docs_2l, rss_2l), (wall_l, docs_l, _rss) = runs["2l"], runs["l"]
    ours = {t: r["our_cpu_ms_per_doc"] for t, r in cpu_rows.items()}
    state = steady_state(wall_l, docs_l, wall_2l, docs_2l, ours)
    return {
        **out,
        "limit_2l": 2 * limit,
        "wall_s_l_warm": round(wall_l, 2),
        "wall_s_2l": round(wall_2l, 2),
        "docs_l_warm": sum(docs_l.values()),
        **state,
        "child_peak_rss_mb_2l": round(rss_2l, 1),
    }
