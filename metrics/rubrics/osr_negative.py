"""OSR-Bench LLM evaluator: binary score + confidence, built for negative sampling.

Source: the official ``evaluation/llm_evaluator.py`` of ``UUUserna/OSR-Bench-code`` (commit 0be3fda; the
paper's App. C.3 prints the same three meta-prompts, typeset): META_PROMPT_OBJECT_COUNTING,
META_PROMPT_RELATIVE_DISTANCE and META_PROMPT_RELATIVE_DIRECTION character for character, the ``#`` comments
inside the JSON sketch included (version 1.0 of this rubric used the paper's typesetting: no blank lines
between the fields, no bullets, no comments). As in the official code, an answer holding ``<answer>`` tags is
reduced to its first such span (:func:`official_answer`) before it is put into the prompt, and the template is
sent as a single user message. The paper used DeepSeek-V3 (official code:
``deepseek-chat``, temperature 0.1, ``response_format=json_object``); this layer defaults to
temperature 0 so re-runs agree.

Item fields: ``skill`` (object_counting, relative_distance, relative_direction), ``question``,
``answer`` (ground truth), ``response``.

Rule-based fallback (``LMMS_SPATIAL_JUDGE=none``): the paper's regex rules (official
``evaluation/metric.py::evaluation_re``) on the lower-cased, stripped answer —

* counting: first ``\\d+`` of the response vs the ground truth, partial credit
  ``max(0, 1 - |pred - gt| / max(pred, gt))`` (no integer -> 0);
* relative distance: exact match of the object name;
* relative direction: exact match after mapping "front left" / "front-left" (etc.) to one form;
* plus, for the negative-sampling ground truths (the four fixed strings below), which the
  official regex scorer only matches verbatim: the response scores 1 if it states the same
  thing — "not unique" (not unique / more than one / multiple) for the not-unique string,
  "not found" (not found / not present / not visible / no such / cannot find / does not exist
  / none of the candidates ...) for the three not-found strings — and 0 otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from lmms_spatial.metrics.extraction import first_tag_content
from lmms_spatial.metrics.osr_bench import counting_score, score_qa  # noqa: F401 (re-exported)

from .base import Judgement, Messages, Rubric, UnparsedReply, as_text, extract_json_object

NAME = "osr_negative"
VERSION = "2.0"  # 2.0: the official code's templates (1.0 typeset the paper's App. C.3)

POSITIONING_NOT_FOUND = "The positioning object is not found in the picture."
POSITIONING_NOT_UNIQUE = "The positioning object is not unique in the picture."
NO_CANDIDATE_FOUND = "None of the candidates were found in the picture."
ORIENTING_OR_QUERYING_NOT_FOUND = "The orienting object or querying object is not found in the picture."
SPECIAL_ANSWERS = (POSITIONING_NOT_FOUND, POSITIONING_NOT_UNIQUE, NO_CANDIDATE_FOUND, ORIENTING_OR_QUERYING_NOT_FOUND)

SKILLS = ("object_counting", "relative_distance", "relative_direction")

# The official templates of evaluation/llm_evaluator.py (OSR-Bench-code 0be3fda), character for character: the
# leading newline, the blank lines, the indented `*` bullets, the `#` comments inside the JSON sketch and the
# trailing space after "counting answer." included; `{{`/`}}` are str.format's braces, as there.
META_PROMPT_OBJECT_COUNTING = (
    "\n"
    "You are evaluating an object counting answer. \n"
    "\n"
    "Question: {question}\n"
    "Ground Truth: {ground_truth}\n"
    "Model Answer: {model_answer}\n"
    "\n"
    "Evaluation rules:\n"
    "- The answer must be an integer (including 0)\n"
    "- Correct if the model's integer exactly matches the ground truth\n"
    "- Also correct if the model answer contains additional text but has the correct number\n"
    "\n"
    "Please respond in JSON format:\n"
    "{{\n"
    '    "score": 0 or 1,  # 0 for incorrect, 1 for correct\n'
    '    "confidence": "high" or "middle" or "low"  # Your confidence level\n'
    "}}\n"
)

META_PROMPT_RELATIVE_DISTANCE = (
    "\n"
    "You are evaluating a relative distance answer.\n"
    "\n"
    "Question: {question}\n"
    "Ground Truth: {ground_truth}\n"
    "Model Answer: {model_answer}\n"
    "\n"
    "Evaluation rules:\n"
    "- Normal answers are object names\n"
    "- Special case answers may be one of these error messages:\n"
    '    * "The positioning object is not found in the picture."\n'
    '    * "The positioning object is not unique in the picture."\n'
    '    * "None of the candidates were found in the picture."\n'
    "- When the ground truth is one of these special error messages, the model answer must match exactly\n"
    "- When the ground truth is an object name, the model answer is correct if it contains the matching object name (case insensitive)\n"  # noqa: E501
    "\n"
    "Please respond in JSON format:\n"
    "{{\n"
    '    "score": 0 or 1,  # 0 for incorrect, 1 for correct\n'
    '    "confidence": "high" or "middle" or "low"  # Your confidence level\n'
    "}}\n"
)

META_PROMPT_RELATIVE_DIRECTION = (
    "\n"
    "You are evaluating a relative direction answer.\n"
    "\n"
    "Question: {question}\n"
    "Ground Truth: {ground_truth}\n"
    "Model Answer: {model_answer}\n"
    "\n"
    "Evaluation rules:\n"
    '- Normal answers are direction words: "Front", "Back", "Left", "Right", "Front-Left", "Front-Right", "Back-Left", "Back-Right"\n'  # noqa: E501
    '- Direction words are case insensitive, and hyphens are optional (e.g., "front left" equals "Front-Left")\n'
    "- Special case answers may be one of these error messages:\n"
    '    * "The positioning object is not found in the picture."\n'
    '    * "The positioning object is not unique in the picture."\n'
    '    * "The orienting object or querying object is not found in the picture."\n'
    "- When the ground truth is one of these special error messages, the model answer must match exactly\n"
    "\n"
    "Please respond in JSON format:\n"
    "{{\n"
    '    "score": 0 or 1,  # 0 for incorrect, 1 for correct\n'
    '    "confidence": "high" or "middle" or "low"  # Your confidence level\n'
    "}}\n"
)

META_PROMPTS = {
    "object_counting": META_PROMPT_OBJECT_COUNTING,
    "relative_distance": META_PROMPT_RELATIVE_DISTANCE,
    "relative_direction": META_PROMPT_RELATIVE_DIRECTION,
}

CONFIDENCE_LEVELS = {"high": "high", "middle": "middle", "medium": "middle", "low": "low"}


def _skill(item: Mapping[str, Any]) -> str:
    skill = str(item["skill"]).strip().lower()
    if skill not in META_PROMPTS:
        raise ValueError(f"osr_negative: unknown skill {item['skill']!r}; known: {SKILLS}")
    return skill


def official_answer(response: Any) -> str:
    """The answer as the official evaluator puts it into the prompt: when the reply holds both ``<answer>``
    and ``</answer>`` (lower case), the first such span, stripped (``re.search(r'<answer>(.*?)</answer>',
    ..., re.DOTALL)``); otherwise the reply unchanged. Applied in every mode, as there."""
    text = as_text(response)
    inside = first_tag_content(text, "<answer>", "</answer>")  # None unless both tags, in this order
    return text if inside is None else inside.strip()


def build_messages(item: Mapping[str, Any]) -> Messages:
    """The skill's meta-prompt with {question}, {ground_truth}, {model_answer} filled in."""
    template = META_PROMPTS[_skill(item)]
    model_answer = official_answer(item["response"])
    prompt = template.format(question=item["question"], ground_truth=item["answer"], model_answer=model_answer)
    return [{"role": "user", "content": prompt}]


_SCORE_FIELD = re.compile(r'"?score"?\s*:\s*"?\s*([01](?:\.0+)?)\b', re.IGNORECASE)
_CONFIDENCE_FIELD = re.compile(r'"?confidence"?\s*:\s*"?\s*(high|middle|medium|low)\b', re.IGNORECASE)


def parse_reply(reply: str, item: Mapping[str, Any] | None = None) -> Judgement:
    """``{"score": 0|1, "confidence": "high"|"middle"|"low"}``; confidence may be missing."""
    try:
        data = extract_json_object(reply)
        raw_score, raw_conf = data.get("score"), data.get("confidence")
    except UnparsedReply:
        score_match = _SCORE_FIELD.search(reply.translate(str.maketrans("\u201c\u201d", '""')))
        if score_match is None:
            raise
        conf_match = _CONFIDENCE_FIELD.search(reply.translate(str.maketrans("\u201c\u201d", '""')))
        raw_score, raw_conf = score_match.group(1), conf_match.group(1) if conf_match else None
    try:
        score = float(raw_score)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UnparsedReply(f"score {raw_score!r} is not 0 or 1") from None
    if score not in (0.0, 1.0):
        raise UnparsedReply(f"score {raw_score!r} is not 0 or 1")
    confidence = CONFIDENCE_LEVELS.get(str(raw_conf).strip().lower()) if raw_conf is not None else None
    reason = f"judge_score_{score:g}" + (f"_confidence_{confidence}" if confidence else "")
    return Judgement(score, reason, details={"confidence": confidence})


# ---------------------------------------------------------------------------------------
# rule-based fallback
# ---------------------------------------------------------------------------------------

_NOT_UNIQUE_STATEMENT = re.compile(
    r"\b(not unique|more than one|multiple|several|two or more|ambiguous|not the only one)\b", re.IGNORECASE
)
_NOT_FOUND_STATEMENT = re.compile(
    r"\b(not (?:be )?(?:found|present|visible|seen|detected|shown|located|in the (?:picture|image|panorama|scene))"
    r"|(?:can ?not|can't|could not|couldn't|unable to) (?:be )?(?:find|found|see|seen|locate|located|identify|detect)"
    r"|(?:does|do|did) ?n[o']?t (?:exist|appear)|no such|there (?:is|are) no|none of the (?:candidates|objects))\b",
    re.IGNORECASE,
)


def _normalise_special(text: str) -> str:
    return " ".join(text.lower().strip().rstrip(".").split())


def _special(truth: str, answer: str) -> Judgement:
    if _normalise_special(answer) == _normalise_special(truth):
        return Judgement(1.0, "fallback_special_exact")
    if truth == POSITIONING_NOT_UNIQUE:
        ok = bool(_NOT_UNIQUE_STATEMENT.search(answer))
        return Judgement(float(ok), "fallback_states_not_unique" if ok else "fallback_missed_not_unique")
    ok = bool(_NOT_FOUND_STATEMENT.search(answer)) and not _NOT_UNIQUE_STATEMENT.search(answer)
    return Judgement(float(ok), "fallback_states_not_found" if ok else "fallback_missed_not_found")


def fallback(item: Mapping[str, Any]) -> Judgement:
    """Rule-based score for one item (see the module docstring)."""
    skill = _skill(item)
    raw_truth = as_text(item["answer"]).strip()
    answer = official_answer(item["response"]).strip()
    special = next((s for s in SPECIAL_ANSWERS if _normalise_special(s) == _normalise_special(raw_truth)), None)
    if special is not None:
        return _special(special, answer)
    # the paper's regex rules: one implementation, shared with the OSR-Bench tasks' rule scores
    result = score_qa(skill, raw_truth, answer)
    return Judgement(
        result["score"], f"fallback_{result['reason'].split(':')[0]}", details={"parsed": result["parsed"]}
    )


RUBRIC = Rubric(
    name=NAME,
    version=VERSION,
    required_fields=("skill", "question", "answer", "response"),
    build_messages=build_messages,
    parse_reply=parse_reply,
    fallback=fallback,
    max_tokens=64,
    source="OSR-Bench App. C.3 (META_PROMPT_OBJECT_COUNTING / _RELATIVE_DISTANCE / _RELATIVE_DIRECTION)",
    # evaluation/llm_evaluator.py: json.loads fails, or no "score": 0
    unparsed_rule="scored 0 in llm_accuracy, as the official OSR-Bench evaluator scores them",
)
