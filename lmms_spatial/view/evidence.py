"""What the page shows of one samples line: the score record, the outcome, and the evidence blocks.

Everything here is read from the samples line (and, for a benchmark's hook, the dataset row of the same
document): nothing is recomputed that the run did not record. Generic keys cover what several benchmarks or
models share:

- the score record: the first dict-valued metric of the line that holds ``score``, ``parsed`` or ``failed``;
- ``parsed`` / ``reason`` (``rule_reason``): the parsed answer and why; ``answer`` / ``answer_text``: the truth;
- ``options`` (+ ``option_seed``): the options in the order the model saw them (DORI: the run's option seed);
- ``judge`` / ``rubric`` / ``judge_reply`` / ``fallback`` / ``failed``: the judge's verdict;
- ``omni_cot.crops[].box`` (normalised ``[x1, y1, x2, y2]``, ``kept``): the crops Omni-CoT chose, drawn on the ERP.

A benchmark adds its own evidence in ``tasks/<key>/view.py`` (found by its folder, like the report's layouts):
``DATA_COLUMNS`` (dataset columns its hook reads), ``data_config(task) -> str | None`` (the data subfolder of a
task's rows), ``evidence(line, record, row) -> list[dict]`` (blocks such as ``{"type": "grid", ...}``) and
``truth(line, record) -> str | None`` (the ground truth where the record does not name it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import Any

# samples fields that are the run's plumbing, not metrics
_PLUMBING = frozenset({"doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "doc_hash", "prompt_hash",
                       "target_hash", "input", "token_counts"})  # fmt: skip
CATEGORY_KEYS = ("category", "skill", "task", "question_type")  # the record field a sample's category is read from
OUTCOMES = ("right", "wrong", "unparsed", "judge_failure", "not_scored")


@cache
def hook(benchmark: str | None) -> ModuleType | None:
    """The benchmark's ``view`` part (None when its ``BENCHMARK`` names none, or it is not a benchmark of ours)."""
    from lmms_spatial.data.registry import BENCHMARKS

    bench = BENCHMARKS.get(benchmark or "")
    return bench.load("view") if bench is not None else None


def score_record(line: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(metric name, record) of the line's first per-document score record ((None, {}) when it has none)."""
    for key, value in line.items():
        if key not in _PLUMBING and isinstance(value, Mapping) and {"score", "parsed", "failed"} & set(value):
            return key, dict(value)
    return None, {}


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)


def outcome(line: Mapping[str, Any], record: Mapping[str, Any]) -> str:
    """right / wrong / unparsed / judge_failure / not_scored, from what the run recorded.

    A judge failure is a record the run marked ``failed`` (no verdict: never scored); unparsed is a record whose
    ``parsed`` is None (or a line whose ``unparsed_rate`` is 1); right is a score of 1 (a partial score, such as
    OSR-Bench's counting credit or a map's F1 below 1, is wrong).
    """
    if record.get("failed") is True:
        return "judge_failure"
    score = number(record.get("score"))
    if ("parsed" in record and record.get("parsed") is None) or number(line.get("unparsed_rate")) == 1.0:
        return "unparsed"
    if score is None:
        score = next((n for k in ("accuracy", "score") if (n := number(line.get(k))) is not None), None)
    if score is None:
        return "not_scored"
    return "right" if score >= 1.0 - 1e-9 else "wrong"


def reply_text(line: Mapping[str, Any]) -> str:
    """The reply as scored (``filtered_resps``; ``resps`` when there is none)."""
    for key in ("filtered_resps", "resps"):
        value = line.get(key)
        while isinstance(value, list) and value:
            value = value[0]
        if value is not None and value != []:
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return ""


def prompt_text(line: Mapping[str, Any]) -> str:
    """The request as one text (what the list shows and searches): ``input``; chat messages (:func:`conversation`)
    as their turns' texts, ``role: text``, an image as ``<image>``; else ``arguments`` as JSON."""
    turns = conversation(line)
    if turns is not None:
        return "\n\n".join(t["role"] + ": " + " ".join(map(_part_text, t["parts"])) for t in turns)
    value = line.get("input")
    if value is None:
        value = line.get("arguments")
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


IMAGE_PARTS = frozenset({"image", "image_url", "input_image"})  # content parts of a chat message that are images
_TOKEN_KEYS = (("input", ("input_tokens", "prompt_tokens")), ("output", ("output_tokens", "completion_tokens")),
               ("reasoning", ("reasoning_tokens",)))  # fmt: skip


def conversation(line: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The request as chat turns, where the line logs it as messages (``input`` a list of ``{"role", "content"}``,
    content a text or a list of parts): ``[{"role", "parts": [{"text": ...} | {"image": k} | {"other": type}]}]``,
    ``k`` counting the image parts in order (the k-th image of the document). None where the line logs the request
    as one text, as lmms-eval 0.7 does (``input`` is the context string): the page then shows one user turn, the
    document's images then the text, the order of our tasks' ``doc_to_messages``."""
    messages = line.get("input")
    if not isinstance(messages, list) or not messages:
        return None
    if not all(isinstance(m, Mapping) and isinstance(m.get("role"), str) for m in messages):
        return None
    turns: list[dict[str, Any]] = []
    images = 0
    for message in messages:
        content = message.get("content")
        parts: list[dict[str, Any]] = []
        for part in content if isinstance(content, list) else [content]:
            kind = part.get("type") if isinstance(part, Mapping) else None
            if isinstance(part, str):
                parts.append({"text": part})
            elif kind == "text" or (kind is None and isinstance(part, Mapping) and isinstance(part.get("text"), str)):
                parts.append({"text": text(part.get("text"))})
            elif kind in IMAGE_PARTS:
                parts.append({"image": images})
                images += 1
            elif part is not None:
                parts.append({"other": str(kind) if kind else type(part).__name__})
        turns.append({"role": message["role"], "parts": parts})
    return turns


def _part_text(part: Mapping[str, Any]) -> str:
    return part["text"] if "text" in part else "<image>" if "image" in part else f"<{part['other']}>"


def token_counts(line: Mapping[str, Any]) -> dict[str, Any] | None:
    """The tokens lmms-eval recorded for the line (``token_counts``, lmms-eval 0.7: one entry per request, each
    null, ``{}`` or ``{"input_tokens", "output_tokens", "reasoning_tokens"}`` less the ones its model did not
    report; a single dict is read as one request): ``{"requests", "recorded", "input", "output", "reasoning"}``,
    each count summed over the requests that report it (None where none does); ``recorded`` 0: the model
    reported none. None where the line has no ``token_counts`` (lmms-eval before 0.7)."""
    if "token_counts" not in line:
        return None
    value = line["token_counts"]
    entries = value if isinstance(value, list) else [value]
    flat = [e for entry in entries for e in (entry if isinstance(entry, list) else [entry])]
    out: dict[str, Any] = {"requests": len(flat), "recorded": 0, "input": None, "output": None, "reasoning": None}
    for entry in flat:
        if not isinstance(entry, Mapping):
            continue
        found = False
        for name, keys in _TOKEN_KEYS:
            n = next((v for k in keys if (v := number(entry.get(k))) is not None and v >= 0), None)
            if n is not None:
                out[name] = (out[name] or 0) + int(n)
                found = True
        out["recorded"] += found
    return out


def category(record: Mapping[str, Any]) -> str:
    return next((str(record[k]) for k in CATEGORY_KEYS if record.get(k) not in (None, "")), "")


def truth(line: Mapping[str, Any], record: Mapping[str, Any], benchmark: str | None = None) -> str:
    """The ground truth as the record names it (``answer_text``, ``answer``), a benchmark hook's ``truth`` (e.g. a
    map task, whose truth is a grid), else the line's ``target``."""
    mod = hook(benchmark)
    if mod is not None and hasattr(mod, "truth"):
        found = mod.truth(line, record)
        if found is not None:
            return found
    for key in ("answer_text", "answer"):
        if record.get(key) not in (None, ""):
            return str(record[key])
    target = line.get("target")
    return "" if target is None else target if isinstance(target, str) else json.dumps(target, ensure_ascii=False)


def text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def generic_blocks(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Options in the order shown, the judge's verdict and Omni-CoT's crops, where the record holds them."""
    blocks: list[dict[str, Any]] = []
    options = record.get("options")
    if isinstance(options, list) and options and all(isinstance(o, str) for o in options):
        seed = record.get("option_seed")
        letters = [chr(ord("A") + i) for i in range(len(options))]
        blocks.append({
            "type": "options",
            "title": "Options as the model saw them" + (f" (option seed {seed})" if seed is not None else ""),
            "items": [{"letter": letter, "text": o, "truth": letter == record.get("answer"),
                       "parsed": letter == record.get("parsed")} for letter, o in zip(letters, options, strict=True)],
        })  # fmt: skip
    if "judge" in record or "rubric" in record or str(record.get("reason", "")).startswith("judge_"):
        blocks.append({
            "type": "judge",
            "title": "Judge verdict",
            "items": [[k, text(record.get(k))] for k in ("judge", "rubric", "rubric_version", "reason", "failed",
                                                            "fallback", "cached", "score", "judge_reply")
                      if k in record],
        })  # fmt: skip
    omni = record.get("omni_cot")
    if isinstance(omni, Mapping):
        crops = [c for c in omni.get("crops") or [] if isinstance(c, Mapping) and _box(c.get("box"))]
        blocks.append({
            "type": "crops",
            "title": f"Omni-CoT: {len(crops)} crops, {sum(bool(c.get('kept')) for c in crops)} kept",
            "image": 0,
            "items": [{"box": _box(c.get("box")), "kept": bool(c.get("kept")), "label": f"crop {i + 1}: "
                       + " ".join(text(c.get(k)) for k in ("direction", "relevance") if c.get(k) is not None)}
                      for i, c in enumerate(crops)],
            "notes": [[k, text(omni.get(k))] for k in ("first_answer", "final_answer", "refined", "grounding_reply")
                      if k in omni],
        })  # fmt: skip
    return blocks


def _box(value: Any) -> list[float] | None:
    if isinstance(value, (list, tuple)) and len(value) == 4 and all(number(v) is not None for v in value):
        return [round(float(v), 4) for v in value]
    return None


def blocks(benchmark: str | None, line: Mapping[str, Any], record: Mapping[str, Any],
           row: Mapping[str, Any] | None) -> list[dict[str, Any]]:  # fmt: skip
    """The generic blocks, then the benchmark hook's (a hook that fails on a line shows why, not a crash)."""
    out = generic_blocks(record)
    mod = hook(benchmark)
    if mod is not None and hasattr(mod, "evidence"):
        try:
            out.extend(mod.evidence(line, record, row))
        except Exception as exc:  # noqa: BLE001 - one odd line must not stop the page; the block says why
            out.append({"type": "note", "title": "Evidence", "text": f"tasks/{benchmark}/view.py failed: {exc!r}"})
    return out


def data_columns(benchmark: str | None) -> tuple[str, ...]:
    mod = hook(benchmark)
    return tuple(getattr(mod, "DATA_COLUMNS", ())) if mod is not None else ()


def data_config(benchmark: str | None, task: str) -> str | None:
    mod = hook(benchmark)
    return mod.data_config(task) if mod is not None and hasattr(mod, "data_config") else None
