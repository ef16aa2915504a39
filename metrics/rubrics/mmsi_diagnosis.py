"""MMSI-Bench automated error diagnosis: which failure mode a model's reasoning shows.

Source: MMSI-Bench (seed 003, a summary of the paper). The paper's pipeline gives an LLM judge
the question, the ground-truth answer, the human reference reasoning (``thought``) and the
model's response, and labels the failure with one of four error types — grounding errors,
overlap-matching and scene-reconstruction errors, situation-transformation reasoning errors,
spatial-logic errors — reporting that the human reasoning chain lifts labelling accuracy from
53% to 78%. It also reports "reasoning accuracy" (reasoning judged correct, below option
accuracy: a right letter can come from wrong reasoning). The seed gives no prompt text, so
the prompt below is ours: it defines the four error types as the paper names them, adds a
``correct_reasoning`` outcome for reasoning accuracy, and asks for JSON.

Item fields: ``question`` (options embedded), ``answer`` (ground-truth letter), ``thought``
(human reasoning chain), ``response`` (the model's full output).

Verdict: ``label`` is one of :data:`LABELS`; ``score`` is 1.0 for ``correct_reasoning``
(so the mean of ``score`` is reasoning accuracy) and 0.0 for an error type.

Rule-based fallback (``LMMS_SPATIAL_JUDGE=none``): no diagnosis is possible without a judge;
label ``undiagnosed``, score 0.0. Tasks must leave ``undiagnosed`` items out of error-type
shares and out of reasoning accuracy rather than count them as errors.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .base import Judgement, Messages, Rubric, UnparsedReply, as_text, extract_json_object

NAME = "mmsi_diagnosis"
VERSION = "1.0"

CORRECT = "correct_reasoning"
ERROR_TYPES = ("grounding", "overlap_matching_scene_reconstruction", "situation_transformation", "spatial_logic")
LABELS = (CORRECT, *ERROR_TYPES)
UNDIAGNOSED = "undiagnosed"

SYSTEM_PROMPT = (
    "You are an expert in 3D vision and spatial reasoning. You diagnose the reasoning of a multimodal model on "
    "multi-image spatial reasoning questions, using a human expert's reference reasoning as the standard."
)

USER_TEMPLATE = """You are given a multiple-choice question about a set of images, the correct answer, the human reference reasoning that leads to the correct answer, and a model's response.

Question:
{question}

Correct answer: {answer}

Human reference reasoning:
{thought}

Model response:
{response}

Decide whether the model's reasoning is correct. The reasoning is correct only if it reaches the correct answer through steps consistent with the human reference reasoning; a correct final option reached by wrong or missing reasoning is NOT correct reasoning.
If the reasoning is not correct, identify the first critical error and classify it as exactly one of these error types:
- grounding: the model fails to recognize or localize the relevant objects, regions or visual details in an image (misses, misidentifies or misreads something that is visible).
- overlap_matching_scene_reconstruction: the model fails to match the same object, region or view across different images (finding their overlap), or fails to reconstruct the overall scene layout from the multiple images.
- situation_transformation: the model fails to transform between reference frames or viewpoints, e.g. between the camera's and an object's perspective, between different camera positions, or between egocentric and allocentric descriptions.
- spatial_logic: the model's spatial relations and reasoning steps are illogical or hallucinated, e.g. wrong transitive inference, self-contradictory or unsupported spatial claims, or a conclusion that does not follow from its own observations.

Respond in JSON format:
{{
"label": "correct_reasoning" or "grounding" or "overlap_matching_scene_reconstruction" or "situation_transformation" or "spatial_logic",
"explanation": "one or two sentences"
}}"""  # noqa: E501  (prompt paragraphs kept on one line each)


def build_messages(item: Mapping[str, Any]) -> Messages:
    """A system message (the judge's role) and a user message with the four fields."""
    user = USER_TEMPLATE.format(
        question=as_text(item["question"]).strip(),
        answer=as_text(item["answer"]).strip(),
        thought=as_text(item["thought"]).strip(),
        response=as_text(item["response"]).strip(),
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


_ALIASES = {
    "correct_reasoning": CORRECT,
    "correct": CORRECT,
    "reasoning_correct": CORRECT,
    "no_error": CORRECT,
    "grounding": "grounding",
    "grounding_error": "grounding",
    "grounding_errors": "grounding",
    "overlap_matching_scene_reconstruction": "overlap_matching_scene_reconstruction",
    "overlap_matching_and_scene_reconstruction": "overlap_matching_scene_reconstruction",
    "overlap_matching_and_scene_reconstruction_errors": "overlap_matching_scene_reconstruction",
    "overlap_matching_and_scene_reconstruction_error": "overlap_matching_scene_reconstruction",
    "overlap_matching": "overlap_matching_scene_reconstruction",
    "scene_reconstruction": "overlap_matching_scene_reconstruction",
    "situation_transformation": "situation_transformation",
    "situation_transformation_reasoning": "situation_transformation",
    "situation_transformation_error": "situation_transformation",
    "situation_transformation_reasoning_error": "situation_transformation",
    "situation_transformation_reasoning_errors": "situation_transformation",
    "spatial_logic": "spatial_logic",
    "spatial_logic_error": "spatial_logic",
    "spatial_logic_errors": "spatial_logic",
}


def normalise_label(text: str) -> str | None:
    """Map a label as a judge may write it ("Spatial-logic errors") onto :data:`LABELS`."""
    key = re.sub(r"[^a-z]+", "_", str(text).lower()).strip("_")
    return _ALIASES.get(key)


def parse_reply(reply: str, item: Mapping[str, Any] | None = None) -> Judgement:
    """``{"label": ..., "explanation": ...}``; a bare label (and nothing else) is accepted too."""
    try:
        data = extract_json_object(reply)
    except UnparsedReply:
        label = normalise_label(reply.strip().strip("`\"'*. "))
        explanation = ""
    else:
        label = normalise_label(str(data.get("label", "")))
        explanation = str(data.get("explanation", "")).strip()
    if label is None:
        raise UnparsedReply(f"no label among {LABELS}")
    score = 1.0 if label == CORRECT else 0.0
    return Judgement(score, f"judge_{label}", label=label, details={"explanation": explanation})


def fallback(item: Mapping[str, Any]) -> Judgement:
    """No rule can diagnose reasoning: ``undiagnosed`` (see the module docstring)."""
    return Judgement(0.0, "fallback_undiagnosed", label=UNDIAGNOSED)


RUBRIC = Rubric(
    name=NAME,
    version=VERSION,
    required_fields=("question", "answer", "thought", "response"),
    build_messages=build_messages,
    parse_reply=parse_reply,
    fallback=fallback,
    max_tokens=512,
    source="MMSI-Bench error diagnosis (four failure modes); prompt written for this package",
)
