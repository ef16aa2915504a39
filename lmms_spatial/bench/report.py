"""The report of ``lmms-spatial bench``: the checks against each budget, the text, and two runs compared."""

from __future__ import annotations

import statistics
from typing import Any

from lmms_spatial.bench.end_to_end import STEADY_NOTE, STEADY_SHARE_BUDGET
from lmms_spatial.bench.odi_decode import ODI_MAX_MEAN_ABS_DIFF, ODI_MIN_PSNR_DB, ODI_MIN_SPEEDUP
from lmms_spatial.bench.osr import OSR_BUDGET_S
from lmms_spatial.bench.tasks import NON_ODI_BUDGET_MS


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """Each section's figure against its budget (``ok``), so a run says at a glance what is over."""
    rows = report.get("tasks", {})
    non_odi = {t: r["our_cpu_ms_per_doc"] for t, r in rows.items() if r["benchmark"] != "odi_bench"}
    checks: dict[str, Any] = {}
    if non_odi:
        worst = max(non_odi, key=non_odi.get)
        checks["non_odi_max_cpu_ms_per_doc"] = {"task": worst, "ms": non_odi[worst], "budget_ms": NON_ODI_BUDGET_MS,
                                                "ok": non_odi[worst] <= NON_ODI_BUDGET_MS}  # fmt: skip
    if "odi_decode" in report:
        d = report["odi_decode"]
        checks["odi_decode"] = {"speedup": d["speedup"], "min": ODI_MIN_SPEEDUP,
                                "ok": (d["speedup"] or 0) >= ODI_MIN_SPEEDUP and d["within_tolerance"]}  # fmt: skip
    if "osr_scoring" in report:
        s = report["osr_scoring"]
        checks["osr_scoring"] = {"total_s": s["total_s"], "budget_s": OSR_BUDGET_S, "ok": s["total_s"] < OSR_BUDGET_S}
    if "osr_calls" in report and "ok" in report["osr_calls"]:
        checks["osr_calls"] = {"calls_per_image": report["osr_calls"]["calls_per_image"],
                               "ok": report["osr_calls"]["ok"]}  # fmt: skip
    e2e = report.get("end_to_end", {})
    if e2e.get("steady"):
        share = e2e.get("our_share_of_steady")
        checks["end_to_end_steady"] = {
            "our_share_of_steady": share,
            "marginal_ms_per_doc": e2e.get("marginal_ms_per_doc"),
            "budget": STEADY_SHARE_BUDGET,
            "ok": None if share is None else share <= STEADY_SHARE_BUDGET,
            "note": STEADY_NOTE if share is not None else e2e.get("steady_reason"),
        }
    return checks


def format_report(report: dict[str, Any]) -> str:
    lines = []
    rows = report.get("tasks", {})
    sizes = report.get("image_sizes")
    if sizes:
        mode = report["meta"].get("image_size", "demo")
        lines.append(f"images ({mode}): " + "; ".join(f"{key} {_sizes_text(info)}" for key, info in sizes.items()))
    if rows:
        width = max(len(t) for t in rows)
        lines.append(f"{'task':<{width}} {'docs':>5} {'load s':>7} {'row':>6} {'visual':>8} {'prompt':>7} "
                     f"{'messages':>9} {'score':>7} {'ours/doc':>9}  (CPU ms per doc)")  # fmt: skip
        for task, r in rows.items():
            lines.append(
                f"{task:<{width}} {r['n_docs_in_dataset']:>5} {r['load_s']:>7.3f} {r['row_cpu_ms_per_doc']:>6.2f} "
                f"{r['visual_cpu_ms_per_doc']:>8.2f} "
                f"{r['prompt_cpu_ms_per_doc']:>7.3f} {r['messages_cpu_ms_per_doc']:>9.2f} "
                f"{r['score_cpu_ms_per_doc']:>7.3f} {r['our_cpu_ms_per_doc']:>9.2f}"
            )
        by_bench: dict[str, list[float]] = {}
        for r in rows.values():
            by_bench.setdefault(r["benchmark"], []).append(r["our_cpu_ms_per_doc"])
        lines.append("")
        lines.append("per benchmark, our CPU ms/doc (median / max over tasks):")
        for bench, values in sorted(by_bench.items()):
            lines.append(f"  {bench:<14} {statistics.median(values):7.2f} / {max(values):7.2f}  ({len(values)} tasks)")
    if "odi_decode" in report:
        d = report["odi_decode"]
        lines.append(
            f"\nODI decode {d['image']} -> {d['output_size'][0]}x{d['output_size'][1]} (max_pixels {d['max_pixels']}): "
            f"naive {d['naive_cpu_s']:.3f} s, ours {d['ours_cpu_s']:.3f} s, speed-up {d['speedup']}x; "
            f"mean |diff| {d['mean_abs_diff']}, max |diff| {d['max_abs_diff']}, PSNR {d['psnr_db']} dB "
            f"(tolerance: mean <= {ODI_MAX_MEAN_ABS_DIFF}, PSNR >= {ODI_MIN_PSNR_DB}: "
            f"{'ok' if d['within_tolerance'] else 'FAIL'})"
        )
    if "osr_scoring" in report:
        s = report["osr_scoring"]
        lines.append(
            f"OSR scoring from samples files: {s['maps']} maps in {s['osr_cogmap_standard_s']} s, "
            f"{s['questions']} QAs in {s['osr_qa_standard_vanilla_s']} s, total {s['total_s']} s"
        )
    if "osr_calls" in report:
        c = report["osr_calls"]
        if "error" in c:
            lines.append(f"OSR calls per image: error {c['error'][-300:]}")
        else:
            lines.append(
                f"OSR {c['task']}: {c['base_model_calls']} base-model calls for {c['images']} images / "
                f"{c['questions']} questions = {c['calls_per_image']} per image "
                f"(1 + questions = {c['expected_calls_per_image']}; naive 2x = {c['naive_calls_per_image']})"
            )
    if "end_to_end" in report:
        e = report["end_to_end"]
        if "error" in e:
            lines.append(f"end to end: error {e['error'][-300:]}")
        else:
            lines.append(
                f"end to end ({e['model']}, batch {e['batch_size']}): {e['docs']} docs in {e['wall_s']} s = "
                f"{e['docs_per_s']} docs/s; our CPU {e['our_cpu_ms_per_doc']} ms/doc = "
                f"{100 * (e['our_share_of_wall'] or 0):.2f}% of wall/doc; child peak RSS {e['child_peak_rss_mb']} MB"
            )
            if e.get("steady"):
                lines.append(_steady_text(e))
    runners = report.get("runners")
    if runners:
        from lmms_spatial.bench.runners import format_runner_table

        lines.append("\n" + (f"runners: {runners['error']}" if "error" in runners else format_runner_table(runners)))
    lines.append(f"\npeak RSS of the harness: {report['meta']['peak_rss_mb']} MB")
    for key, value in report.get("summary", {}).items():
        lines.append(f"check {key}: {value}")
    return "\n".join(lines)


def _sizes_text(info: dict[str, Any]) -> str:
    """``1024x512 PNG 810 KB`` (the sizes written, or found when the images were kept)."""
    sizes = ", ".join(info.get("sizes", {})) or "?"
    formats = "/".join(info.get("formats", {}))
    kept = " (kept)" if info.get("kept") else ""
    kb = info.get("mean_image_kb")
    size = "" if kb is None else f" {kb:.0f} KB" if kb >= 10 else f" {kb:.1f} KB"
    return f"{sizes} {formats}{size}{kept}".strip()


def _steady_text(e: dict[str, Any]) -> str:
    if e.get("marginal_ms_per_doc") is None or e.get("our_share_of_steady") is None:
        marginal = e.get("marginal_ms_per_doc")
        got = f"marginal {marginal} ms/doc; " if marginal is not None else ""
        return f"  steady state (--limit {e.get('limit')} vs 2x): {got}no share: {e.get('steady_reason')}"
    share = e["our_share_of_steady"]
    verdict = "ok" if share <= STEADY_SHARE_BUDGET else "OVER"
    return (
        f"  steady state (--limit {e['limit']}: {e['docs_l_warm']} docs in {e['wall_s_l_warm']} s; "
        f"--limit {e['limit_2l']}: {e['docs_2l']} docs in {e['wall_s_2l']} s): marginal "
        f"{e['marginal_ms_per_doc']} ms/doc over {e['marginal_docs']} docs; our CPU {e['our_cpu_ms_per_marginal_doc']} "
        f"ms/doc = {100 * share:.3f}% of it (budget {100 * STEADY_SHARE_BUDGET:.0f}%: {verdict}; {STEADY_NOTE})"
    )


def compare(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Per task, our CPU ms/doc of two runs and the ratio new/old."""
    lines = []
    for label, report in (("old", old), ("new", new)):
        meta = report.get("meta", {})
        lines.append(f"{label}: {meta.get('command', '?')} (images: {meta.get('image_size', 'demo')})")
    lines.append(f"{'task':<50} {'old':>8} {'new':>8} {'new/old':>8}")
    for task in sorted(set(old.get("tasks", {})) & set(new.get("tasks", {}))):
        a, b = old["tasks"][task]["our_cpu_ms_per_doc"], new["tasks"][task]["our_cpu_ms_per_doc"]
        lines.append(f"{task:<50} {a:8.2f} {b:8.2f} {(b / a if a else float('nan')):8.2f}")
    for section, key in (("odi_decode", "ours_cpu_s"), ("osr_scoring", "total_s"),
                         ("end_to_end", "marginal_ms_per_doc"), ("end_to_end", "our_share_of_steady")):  # fmt: skip
        a, b = old.get(section, {}).get(key), new.get(section, {}).get(key)
        if a is not None and b is not None:
            lines.append(f"{section + '.' + key:<50} {a:8.3f} {b:8.3f} {(b / a if a else float('nan')):8.2f}")
    return "\n".join(lines)
