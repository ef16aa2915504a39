"""ODI-Bench open-ended scoring: an LLM judge gives 0 / 0.5 / 1 with per-task-family rules.

Source: ODI-Bench App. E.3 (seed 000). The paper scores open-ended answers with GPT-4o as an
"LLM-based evaluator (Yu et al., 2023)" — the MM-Vet evaluator — with task-specific prompts
holding fully correct (1.0), incorrect (0.0) and partially correct (0.5) examples (Fig. 14).
The figure's text did not survive extraction, so the prompt below is a reconstruction: the
MM-Vet layout (instruction, a ``Question | Ground truth | Prediction | Correctness`` table of
few-shot rows, "just complete the last space") with the scale restricted to 0 / 0.5 / 1 and
the family rules stated in App. E.3 transcribed as closely as the text allows:

* counting, existence ("answers with a unique ground truth"): strict, 1 or 0;
* OCR: "correctly recognized characters but in an incorrect order" = 0.5;
* attributes (object / human attribute and the other free-text tasks): "rated based on the
  similarity between the key content and the ground truth", the question taken into account;
* direction-based output (egocentric / allocentric view orientation, relative direction):
  "deviates from the ground-truth orientation by 45 degrees" = 0.5, exact = 1, else 0.

Item fields: ``task``, ``question``, ``answer_text`` (open-ended ground truth), ``response``.

Rule-based fallback (``LMMS_SPATIAL_JUDGE=none``), by family:

* counting: first integer (digits or number word) of response == that of the ground truth -> 1, else 0;
* existence: first yes/no word of response == that of the ground truth -> 1, else 0;
* direction: both texts mapped onto an 8-direction compass / clock circle
  (:func:`~lmms_spatial.metrics.rubrics._text.direction_degrees`); 0° apart -> 1, up to 45° -> 0.5, else 0;
* OCR (case-insensitive, punctuation ignored): ground-truth text appears in the response -> 1;
  all ground-truth words present but in another order, or a response word that is an anagram
  of a one-word ground truth (right characters, wrong order) -> 0.5; else 0;
* attributes / other: recall of the ground truth's content words in the response
  (stopwords dropped, number words as digits, naive singular): >= 0.8 -> 1, >= 0.5 -> 0.5, else 0.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from . import _text
from .base import Judgement, Messages, Rubric, UnparsedReply, as_text, one_line

NAME = "odi_open"
VERSION = "1.0"

STRICT_TASKS = frozenset({"counting", "existence"})
OCR_TASKS = frozenset({"ocr"})
DIRECTION_TASKS = frozenset({"egocentric_view_orientation", "allocentric_view_orientation", "relative_direction"})
FULL_CREDIT_RECALL = 0.8
HALF_CREDIT_RECALL = 0.5


def task_family(task: str) -> str:
    """The task's rule family: strict, ocr, direction, or attribute (the default for free-text tasks)."""
    key = str(task).strip().lower().replace(" ", "_").replace("-", "_")
    if key in STRICT_TASKS:
        return "strict"
    if key in OCR_TASKS:
        return "ocr"
    if key in DIRECTION_TASKS:
        return "direction"
    return "attribute"


INSTRUCTION = (
    "Compare the ground truth and prediction from AI models, to give a correctness score for the prediction. "
    "The questions are asked about an omnidirectional (360-degree, ERP-formatted) image; take the question into "
    "account when judging. {rule} The correctness score is 0.0 (totally wrong), 0.5 (partially correct), or "
    "1.0 (totally right). Just complete the last space of the correctness score."
)

FAMILY_RULES = {
    "strict": (
        "This question has a unique ground truth: the prediction is totally right only when its key answer strictly "
        "aligns with the ground truth, otherwise it is totally wrong. Never give 0.5 for this question."
    ),
    "ocr": (
        "This is a text-recognition (OCR) question: the prediction is totally right when it recognizes the "
        "ground-truth characters in the correct order; if it recognizes the correct characters but in an incorrect "
        "order, it is partially correct (0.5); otherwise it is totally wrong."
    ),
    "attribute": (
        "Rate the prediction by the similarity between its key content and the ground truth: totally right when the "
        "key content matches, partially correct (0.5) when it is only partly consistent with the ground truth, "
        "totally wrong when the key content is wrong or missing."
    ),
    "direction": (
        "The answer is an orientation or direction: if the predicted orientation is exactly the ground-truth "
        "orientation, the score is 1.0; if it deviates from the ground-truth orientation by 45 degrees (for example "
        "front-left or front-right when the ground truth is front), the score is 0.5; otherwise the score is 0.0."
    ),
}

# Few-shot rows (question, ground truth, prediction, correctness) per family.
EXAMPLES: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "strict": (
        ("How many chairs are there in the room?", "4", "There are four chairs in the room.", "1.0"),
        ("How many chairs are there in the room?", "4", "There are 5 chairs around the table.", "0.0"),
        ("Is there a television in the scene?", "Yes", "Yes, a television is mounted on the wall.", "1.0"),
        ("Is there a television in the scene?", "Yes", "No, there is no television.", "0.0"),
    ),
    "ocr": (
        ("What is written on the sign above the door?", "EXIT ONLY", 'The sign says "EXIT ONLY".', "1.0"),
        ("What is written on the sign above the door?", "EXIT ONLY", 'It reads "ONLY EXIT".', "0.5"),
        ("What is written on the sign above the door?", "EXIT ONLY", 'The sign says "ENTRANCE".', "0.0"),
    ),
    "attribute": (
        ("What color is the sofa?", "dark blue", "The sofa is dark blue.", "1.0"),
        ("What color is the sofa?", "dark blue with white cushions", "The sofa is blue.", "0.5"),
        ("What color is the sofa?", "dark blue", "It is a red leather sofa.", "0.0"),
    ),
    "direction": (
        ("In which direction is the window relative to you?", "front-left", "The window is at my front-left.", "1.0"),
        ("In which direction is the window relative to you?", "front-left", "The window is in front of me.", "0.5"),
        ("In which direction is the window relative to you?", "front-left", "The window is on my right.", "0.0"),
    ),
}

_TABLE_HEADER = "Question | Ground truth | Prediction | Correctness\n--- | --- | --- | ---"


def _cell(text: Any) -> str:
    return one_line(as_text(text)).replace("|", "/")


def build_messages(item: Mapping[str, Any]) -> Messages:
    """One user message: instruction with the family rule, few-shot table, the item's row left open."""
    family = task_family(item["task"])
    rows = [" | ".join(row) for row in EXAMPLES[family]]
    rows.append(f"{_cell(item['question'])} | {_cell(item['answer_text'])} | {_cell(item['response'])} | ")
    prompt = INSTRUCTION.format(rule=FAMILY_RULES[family]) + "\n\n" + _TABLE_HEADER + "\n" + "\n".join(rows)
    return [{"role": "user", "content": prompt}]


_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?|\.\d+)(?!\.?\d)(?![A-Za-z_])")
_LABELLED = re.compile(r"(?:correctness|score)\W{0,20}?(\d+(?:\.\d+)?|\.\d+)", re.IGNORECASE)
ALLOWED_SCORES = (0.0, 0.5, 1.0)


def _as_allowed(token: str) -> float | None:
    value = float(token)
    return value if value in ALLOWED_SCORES else None


def parse_reply(reply: str, item: Mapping[str, Any] | None = None) -> Judgement:
    """The correctness score: the reply's leading number, else the one after "correctness"/"score",
    else the only number in the reply. It must be 0, 0.5 or 1 (strict tasks: 0 or 1)."""
    text = reply.strip().strip("`*").strip()
    candidates: list[str] = []
    lead = _NUMBER.match(text)
    if lead:
        candidates.append(lead.group(1))
    candidates += _LABELLED.findall(text)
    numbers = _NUMBER.findall(text)
    if len(numbers) == 1:
        candidates.append(numbers[0])
    for token in candidates:
        value = _as_allowed(token)
        if value is None:
            continue
        if value == 0.5 and item is not None and task_family(item.get("task", "")) == "strict":
            raise UnparsedReply("0.5 is not allowed for counting / existence")
        return Judgement(value, f"judge_score_{value:g}")
    raise UnparsedReply(f"no correctness score in {{0, 0.5, 1}} in reply {one_line(reply)[:80]!r}")


# ---------------------------------------------------------------------------------------
# rule-based fallback
# ---------------------------------------------------------------------------------------


def _strict(item: Mapping[str, Any], response: str, truth: str) -> Judgement:
    task = str(item["task"]).strip().lower()
    if task == "existence":
        gt, pred = _text.first_yes_no(truth), _text.first_yes_no(response)
        if gt is None:
            return Judgement(0.0, "fallback_unparsed_ground_truth")
        if pred is None:
            return Judgement(0.0, "fallback_no_yes_no_in_response")
        return Judgement(float(gt == pred), "fallback_yes_no_match" if gt == pred else "fallback_yes_no_mismatch")
    gt_n, pred_n = _text.first_integer(truth), _text.first_integer(response)
    if gt_n is None:
        return Judgement(0.0, "fallback_unparsed_ground_truth")
    if pred_n is None:
        return Judgement(0.0, "fallback_no_integer_in_response")
    ok = gt_n == pred_n
    return Judgement(float(ok), "fallback_count_match" if ok else "fallback_count_mismatch", details={"pred": pred_n})


def _direction(response: str, truth: str) -> Judgement:
    gt, pred = _text.direction_degrees(truth), _text.direction_degrees(response)
    if gt is None:
        return Judgement(0.0, "fallback_unparsed_ground_truth")
    if pred is None:
        return Judgement(0.0, "fallback_no_direction_in_response")
    diff = _text.angular_difference(gt[0], pred[0])
    details = {"ground_truth_term": gt[1], "response_term": pred[1], "degrees_off": diff}
    if diff < 1e-6:
        return Judgement(1.0, "fallback_direction_exact", details=details)
    if diff <= 45.0 + 1e-6:
        return Judgement(0.5, "fallback_direction_within_45", details=details)
    return Judgement(0.0, "fallback_direction_wrong", details=details)


def _ocr_norm(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _ocr(response: str, truth: str) -> Judgement:
    gt_words, resp_words = _ocr_norm(truth), _ocr_norm(response)
    if not gt_words:
        return Judgement(0.0, "fallback_unparsed_ground_truth")
    gt_line, resp_line = " ".join(gt_words), " ".join(resp_words)
    if re.search(rf"(?<![a-z0-9]){re.escape(gt_line)}(?![a-z0-9])", resp_line) or (
        len(gt_words) > 1 and "".join(gt_words) in resp_words
    ):
        return Judgement(1.0, "fallback_ocr_exact")
    if len(gt_words) > 1 and not Counter(gt_words) - Counter(resp_words):
        return Judgement(0.5, "fallback_ocr_words_wrong_order")
    target = sorted("".join(gt_words))
    if len(target) > 1 and any(sorted(word) == target for word in resp_words):
        return Judgement(0.5, "fallback_ocr_characters_wrong_order")
    return Judgement(0.0, "fallback_ocr_mismatch")


def _attribute(response: str, truth: str) -> Judgement:
    gt = _text.content_words(truth)
    if not gt:
        gt = set(_text.words(truth))
    if not gt:
        return Judgement(0.0, "fallback_unparsed_ground_truth")
    recall = len(gt & set(_text.words(response))) / len(gt)
    details = {"content_recall": round(recall, 4)}
    if recall >= FULL_CREDIT_RECALL:
        return Judgement(1.0, "fallback_overlap_full", details=details)
    if recall >= HALF_CREDIT_RECALL:
        return Judgement(0.5, "fallback_overlap_partial", details=details)
    return Judgement(0.0, "fallback_overlap_low", details=details)


def fallback(item: Mapping[str, Any]) -> Judgement:
    """Rule-based score for one item (see the module docstring for the rules)."""
    response, truth = as_text(item["response"]), as_text(item["answer_text"])
    family = task_family(item["task"])
    if not response.strip():
        return Judgement(0.0, "fallback_empty_response")
    if family == "strict":
        return _strict(item, response, truth)
    if family == "direction":
        return _direction(response, truth)
    if family == "ocr":
        return _ocr(response, truth)
    return _attribute(response, truth)


RUBRIC = Rubric(
    name=NAME,
    version=VERSION,
    required_fields=("task", "question", "answer_text", "response"),
    build_messages=build_messages,
    parse_reply=parse_reply,
    fallback=fallback,
    max_tokens=32,
    source="ODI-Bench App. E.3 / Fig. 14 (reconstructed in the MM-Vet evaluator layout)",
)
