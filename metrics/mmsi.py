"""MMSI-Bench scoring rules (seed 003; official code: the VLMEvalKit fork).

- 11 categories; the Hub data spells positional pairs with an en dash ("Cam.–Obj."),
  some copies with a hyphen: :func:`normalise_category` maps every spelling to the
  canonical en-dash name.
- Circular evaluation (``MMSI_Bench_Circular``): options are parsed out of the question
  text, re-lettered in the four orders ABCD/BCDA/CDAB/DABC, and a question counts only if
  all four are answered correctly. The unrotated order gives the "vanilla" score.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from lmms_spatial.metrics.aggregation import mean

CATEGORIES = (
    "Positional Relationship (Cam.–Cam.)",
    "Positional Relationship (Cam.–Obj.)",
    "Positional Relationship (Cam.–Reg.)",
    "Positional Relationship (Obj.–Obj.)",
    "Positional Relationship (Obj.–Reg.)",
    "Positional Relationship (Reg.–Reg.)",
    "Attribute (Meas.)",
    "Attribute (Appr.)",
    "Motion (Cam.)",
    "Motion (Obj.)",
    "MSR",
)

POST_PROMPT = "Answer with the option's letter from the given choices directly. Enclose the option's letter within ``."

CIRCULAR_ORDERS = ("ABCD", "BCDA", "CDAB", "DABC")

_DASHES = re.compile(r"\s*[-‐‑‒–—−]\s*")


def normalise_category(name: str) -> str:
    """Canonical category name: any dash between two parts becomes an en dash."""
    text = " ".join(str(name).split())
    return _DASHES.sub("–", text)


_OPTION = re.compile(r"([A-D])\s*:\s*(.*?)(?=\s+[A-D]\s*:|,\s*[A-D]\s*:|$)", re.DOTALL)


def split_options(question: str) -> tuple[str, dict[str, str]]:
    """(stem, {letter: option text}) from a question with ``Options: A: ..., B: ...``.

    Same pattern as the official ``extract_options_from_question``.
    """
    parts = str(question).split("Options:", 1)
    if len(parts) < 2:
        return str(question).strip(), {}
    stem, options_text = parts[0].strip(), parts[1].strip()
    options = {letter: text.strip() for letter, text in _OPTION.findall(options_text)}
    return stem, options


# An option letter in any style the releases use: "A: x", "A. x", "A) x", "(A) x", at the start
# of the options text or after a separator. Used to count options, never to rotate them.
_ANY_OPTION_LETTER = re.compile(r"(?:^|[\s,;])\(?([A-D])\s*[:.)]\s")


def option_letters(question: str) -> list[str]:
    """Letters of the options written after ``Options:``, in any of the styles above, in order."""
    parts = str(question).split("Options:", 1)
    if len(parts) < 2:
        return []
    return list(dict.fromkeys(_ANY_OPTION_LETTER.findall(parts[1].strip() + " ")))


def count_options(question: str) -> int:
    """Number of options embedded in the question, whatever their style (4 when none can be read).

    ``D) back`` and ``(D) back`` count as ``D: back`` does: the official circular parser only
    reads the ``D:`` style (:func:`split_options`), which undercounts the other two.
    """
    return max(len(split_options(question)[1]), len(option_letters(question))) or 4


def option_parse_shortfall(question: str) -> tuple[int, int] | None:
    """(options the official ``X:`` parser reads, letters seen) when the first is smaller, else None."""
    official, seen = len(split_options(question)[1]), len(option_letters(question))
    return (official, seen) if official < seen else None


def rotate(question: str, answer: str, rotation: int) -> tuple[str, str] | None:
    """The question re-lettered in ``CIRCULAR_ORDERS[rotation]`` and its new answer.

    None when the options cannot be parsed or the answer is not among them (the
    official code skips such questions; we report how many).
    """
    stem, options = split_options(question)
    if not options or answer not in options:
        return None
    order = CIRCULAR_ORDERS[rotation]
    new_options = {new: options[old] for new, old in zip("ABCD", order, strict=True) if old in options}
    new_answer = "ABCD"[order.index(answer)] if answer in order else answer
    options_str = "Options: " + ", ".join(f"{k}: {v}" for k, v in new_options.items())
    return f"{stem}\n{options_str}", new_answer


def circular_summary(records: Iterable[Mapping[str, Any]], by: str | None = None) -> dict[str, Any]:
    """Circular and vanilla accuracy over questions with all four rotations present.

    ``records`` hold ``question_id``, ``rotation`` and ``score``. A question with fewer
    than four rotations (``--limit`` cut it) is *incomplete*: reported, never scored.
    """
    groups: dict[Any, dict[int, float]] = {}
    keys: dict[Any, Any] = {}
    for r in records:
        groups.setdefault(r["question_id"], {})[int(r["rotation"])] = float(r["score"])
        if by is not None:
            keys[r["question_id"]] = r[by]
    complete = {q: rots for q, rots in groups.items() if len(rots) == len(CIRCULAR_ORDERS)}
    summary: dict[str, Any] = {
        "circular": mean(1.0 if all(s == 1.0 for s in rots.values()) else 0.0 for rots in complete.values()),
        "vanilla": mean(rots[0] for rots in complete.values()),
        "complete_questions": len(complete),
        "incomplete_questions": len(groups) - len(complete),
    }
    if by is not None:
        per: dict[Any, list[Any]] = {}
        for q in complete:
            per.setdefault(keys[q], []).append(q)
        summary["by_" + by] = {
            k: {
                "circular": mean(1.0 if all(s == 1.0 for s in complete[q].values()) else 0.0 for q in qs),
                "vanilla": mean(complete[q][0] for q in qs),
            }
            for k, qs in sorted(per.items(), key=lambda kv: str(kv[0]))
        }
    return summary
