"""OSR-Bench task adapter: cognitive maps and spatial QA on panoramas, with and without the map.

Data: the normalised layout of ``hub_cards/osr_bench/README.md`` (one row per question, the
image's ground-truth map and object pool on every row), configs ``standard`` and
``negative`` as two folders (``$LMMS_SPATIAL_OSR_PATH/{standard,negative}``).

Three protocols, prompts verbatim from the official runner (``UUUserna/OSR-Bench-code``,
``evaluation/model_run/open_model_run.py``; App. C):

- ``osr_cogmap_<config>``: one document per image, the App. C.1 map prompt filled with the
  image's object pool; scored by :func:`lmms_spatial.metrics.osr_bench.score_cogmap`.
- ``osr_qa_<config>_<mode>``: each question alone: ``"<pre-prompt> <question> <post-prompt>"``.
- ``osr_qa_cogmap_<config>_<mode>``: the map turn first (image + map prompt), the model's own
  map as the assistant turn, then ``"<question> <post-prompt>"``. The map is a *stage* output:
  :class:`lmms_spatial.models.staged.Staged` generates it once per image and model and reuses it
  for every question of that image (``--model staged --model_args base=<chat model>,...``).

Modes: ``vanilla`` or ``think`` (``<think>...</think><answer>...</answer>``, scored on the
answer tag). Every OSR task sets ``reasoning_tags: none`` (in ``_default.yaml``): the official
scorer reads the raw reply, and a map is scored on the same text whether it is the map task's
reply or the map a QA task was answered with (``--model staged`` keeps stage outputs raw).
``relative_direction_lenient`` (opt-in reading, its own metric) accepts spellings the official
rule does not ("front_left"); ``accuracy`` and ``relative_direction`` are the official rule.
Negative-config QA is also scored by the LLM evaluator of App. C.3 (rubric ``osr_negative``
of the judge layer; ``LMMS_SPATIAL_JUDGE=none`` uses its documented rules), next to the rules.
A verdict the evaluator wrote but no rule can read scores 0, as the official
``evaluation/llm_evaluator.py`` scores it (``json.loads`` fails or ``score`` is missing: 0), and is
counted in ``judge_unparsed``.

**Never a with-map number without a map.** A chat model draws its own map in a run of ours
(:mod:`lmms_spatial.plugin.maps`; ``--model staged`` does it explicitly). An answer of an
``osr_qa_cogmap_*`` task whose conversation held no map (a model that draws none: ``random_choice``,
any simple model; samples replayed from such a run) is not scored: its record has no ``score`` and the reason
:data:`NO_MAP_REASON`, every score metric of the task is NaN (``chance_level`` stays), the LLM
evaluator is not asked, and ``answers_without_map`` counts it. The run's last lines say how to get
the maps (:mod:`lmms_spatial.plugin.conditions`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from loguru import logger

from lmms_spatial import run_state
from lmms_spatial.conditions import TaskNeeds
from lmms_spatial.data.images import BadDocumentError, DecodedImageCache, require, undecoded
from lmms_spatial.data.loading import documents_of
from lmms_spatial.metrics import aggregation as agg
from lmms_spatial.metrics.osr_bench import (
    DIRECTIONS,
    SKILLS,
    lenient_direction_score,
    official_overall,
    score_cogmap,
    score_qa,
)
from lmms_spatial.models.stages import stage_placeholder, stage_result

COGMAP_PROMPT = (
    "[Task] This PANORAMA captures an indoor scene. Your objective is to identify specific objects within the "
    "panorama, understand the spatial arrangement of the scene, and estimate the center point of each object, "
    "assuming the entire scene is represented by a 10x10 grid. [Rule] 1. We provide the categories to care about "
    "in this scene: {{{pool}}}. Focus ONLY on these categories. 2. Estimate the center location of each instance "
    "within the provided categories, assuming the entire scene is represented by a 10x10 grid. 3. If a category "
    "contains multiple instances, include all of them. 4. Each object’s estimated location should accurately "
    "reflect its real position in the scene, preserving the relative spatial relationships among all objects. "
    "5. Consider object distance from camera when positioning them. Closer objects should be placed near the "
    "center of the grid, while distant objects should be placed toward the edges. 6. If an object is partially "
    "visible or occluded, estimate its full position based on the visible parts. [Output] Present the estimated "
    "center locations for each object as a list within a dictionary. STRICTLY follow this JSON format And use "
    'INTEGERS with 10 to represent the coordinates: {{"category name": [[x_1, y_1], ...], ...}}'
)
PRE_PROMPT = "According to the PANORAMA and the predicted objects' center locations, answer the following question:"


def _official_block(lines: list[str]) -> str:
    """The official runner's triple-quoted prompt: leading newline, 4-space indent, trailing indent."""
    return "\n" + "".join(f"    {line}\n" for line in lines) + "    "


POST_PROMPTS = {
    "vanilla": _official_block(
        [
            "Please answer the question with a brief response following these guidelines:",
            "- For counting questions: Respond with only an integer (including 0 if none are present).",
            "- For closest object questions: Respond with just the name of the closest object, "
            "or the exact error message if applicable.",
            "- For directional questions: Respond with only the direction (front, back, left, right, front-left, "
            "front-right, back-left, or back-right), capitalized correctly, or the exact error message if applicable.",
            "Do not include explanations or additional text in your answer. ",
        ]
    ),
    "think": _official_block(
        [
            "Please think step by step and enclose your complete reasoning process in <think> </think> tags. ",
            "Within your thinking process:",
            "- For counting questions: Identify all instances of the queried object(s) one by one.",
            "- For closest object questions: Identify the positioning object and all candidate objects, "
            "then compare their relative distances.",
            "- For directional questions: Locate the referenced objects and determine spatial relationships carefully.",
            "After your thinking, provide ONLY your final answer within <answer> </answer> tags using:",
            "- For counting questions: Just an integer (including 0 if none are present).",
            "- For closest object questions: Only the name of the closest object, "
            "or the exact error message if applicable.",
            "- For directional questions: Only the direction (Front, Back, Left, Right, Front-Left, Front-Right, "
            "Back-Left, or Back-Right) with correct capitalization, or the exact error message if applicable.",
        ]
    ),
}
COGMAP_STAGE = "osr_cogmap"
JUDGE_RUBRIC = "osr_negative"
NO_MAP_REASON = "no_map: no map of this image was in the conversation (the model draws none: not a chat model)"
SKILL_METRICS = ("object_counting", "relative_distance", "relative_direction")
# the keys of the warnings logged once per process (lmms_spatial.run_state.first_time)
NO_MAP_WARNING = "osr_bench: an answer without a map"
JUDGE_WARNING = "osr_bench: the LLM evaluator failed"


def _kwargs(lmms_eval_specific_kwargs: dict | None) -> dict:
    kw = {"protocol": "qa", "mode": "vanilla", "config": "standard", **(lmms_eval_specific_kwargs or {})}
    if kw["protocol"] not in {"cogmap", "qa", "qa_cogmap"} or kw["mode"] not in POST_PROMPTS:
        raise ValueError(f"OSR-Bench: unknown protocol/mode {kw['protocol']!r}/{kw['mode']!r}")
    return kw


# --- documents -----------------------------------------------------------------------


def validate_rows(dataset) -> None:
    """Fail on a row no rule can score, naming it: unknown skill, empty answer, a count that is no integer.

    (Negative-sampling error messages are answers of the distance and direction skills only.)
    """
    for field in ("id", "skill", "answer", "question", "scene_id"):
        if field not in dataset.column_names:
            raise BadDocumentError("<every row>", field, f"missing column (columns: {sorted(dataset.column_names)})")
    seen: set[str] = set()
    for doc_id, skill, answer in zip(dataset["id"], dataset["skill"], dataset["answer"], strict=True):
        if doc_id in seen:
            raise BadDocumentError(doc_id, "id", "duplicate id: two questions would be merged")
        seen.add(doc_id)
        if skill not in SKILLS:
            raise BadDocumentError(doc_id, "skill", f"{skill!r} is not one of {list(SKILLS)}")
        text = "" if answer is None else str(answer).strip()
        if not text:
            raise BadDocumentError(doc_id, "answer", "empty")
        if skill == "object_counting" and not (text.isascii() and text.isdigit()):
            raise BadDocumentError(doc_id, "answer", f"{text[:40]!r} is not a count (a non-negative integer)")


def undecoded_images(dataset):
    """``process_docs`` of the QA tasks: rows checked, panoramas left as bytes for :func:`doc_to_visual`."""
    validate_rows(dataset)
    return undecoded(dataset, "image")


def one_per_image(dataset):
    """``process_docs`` of the map tasks: the first row of every scene (input order kept), undecoded."""
    validate_rows(dataset)
    seen: set[str] = set()
    keep = []
    for i, scene in enumerate(dataset["scene_id"]):
        if scene not in seen:
            seen.add(scene)
            keep.append(i)
    return undecoded(dataset.select(keep), "image")


# process_docs of each config's tasks; a config is a folder of the normalised layout (<root>/standard, /negative)
undecoded_images_standard = documents_of("osr_bench", "standard")(undecoded_images)
undecoded_images_negative = documents_of("osr_bench", "negative")(undecoded_images)
one_per_image_standard = documents_of("osr_bench", "standard")(one_per_image)
one_per_image_negative = documents_of("osr_bench", "negative")(one_per_image)


def cogmap_prompt(doc: dict) -> str:
    pool = require(doc, "object_pool")
    return COGMAP_PROMPT.format(pool=", ".join(str(p) for p in pool))


def question_prompt(doc: dict, mode: str, with_map: bool) -> str:
    query = f"{str(require(doc, 'question')).strip()} {POST_PROMPTS[mode]}"
    return query if with_map else f"{PRE_PROMPT} {query}"


def stage_key(doc: dict, config: str) -> str:
    """The map of one image under one object pool (the negative pool differs)."""
    return f"{config}:{require(doc, 'scene_id')}"


# every question row embeds its panorama: a decode per image, not per question, when the
# questions of one image are read together (``--model staged`` reads them in document order)
PANORAMAS = DecodedImageCache(capacity=8)


def doc_to_visual(doc: dict) -> list:
    return [PANORAMAS.load(require(doc, "image"), doc_id=doc.get("id"), field="image")]


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    """The prompt text, as logged in ``input`` (the map protocol needs a chat model: ``doc_to_messages``).

    Under the map protocol it is the map prompt, a blank line, then the question: the user turns
    of the conversation. lmms-eval's chat models sort requests by this text, so the final turns
    of one image's questions (same object pool, same map prompt) reach the model back to back:
    a prefix-caching server sees their shared prefix together.
    """
    kw = _kwargs(lmms_eval_specific_kwargs)
    if kw["protocol"] == "cogmap":
        return cogmap_prompt(doc)
    if kw["protocol"] == "qa_cogmap":
        return f"{cogmap_prompt(doc)}\n\n{question_prompt(doc, kw['mode'], with_map=True)}"
    return question_prompt(doc, kw["mode"], with_map=False)


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list[dict]:
    kw = _kwargs(lmms_eval_specific_kwargs)
    image = {"type": "image", "url": doc_to_visual(doc)[0]}
    if kw["protocol"] == "cogmap":
        return [{"role": "user", "content": [image, {"type": "text", "text": cogmap_prompt(doc)}]}]
    if kw["protocol"] == "qa":
        text = question_prompt(doc, kw["mode"], with_map=False)
        return [{"role": "user", "content": [image, {"type": "text", "text": text}]}]
    return [
        {"role": "user", "content": [image, {"type": "text", "text": cogmap_prompt(doc)}]},
        stage_placeholder(COGMAP_STAGE, stage_key(doc, kw["config"])),
        {"role": "user", "content": [{"type": "text", "text": question_prompt(doc, kw["mode"], with_map=True)}]},
    ]


def doc_to_target(doc: dict) -> str:
    return str(doc.get("answer", ""))


# --- scoring -------------------------------------------------------------------------


def process_results_cogmap(doc: dict, results: list) -> dict[str, Any]:
    try:
        truth = json.loads(require(doc, "cogmap"))
    except ValueError as exc:
        raise BadDocumentError(doc.get("id"), "cogmap", f"not a JSON grid ({exc})") from exc
    record = score_cogmap(truth, results[0] if results else "")
    record.pop("per_class")
    record.update(id=doc.get("id"), scene_id=doc.get("scene_id"), score=record["f1"])
    record["parsed"] = "map" if record["format_ok"] else None
    return {
        "cogmap_f1": record,
        "cogmap_precision": record["precision"],
        "cogmap_recall": record["recall"],
        "avg_distance": record["avg_distance"],
        "chair_s": record["chair_s"],
        "chair_i": record["chair_i"],
        "chair_instance": record["chair_instance"],
        "format_success_rate": 1.0 if record["format_ok"] else 0.0,
        "unparsed_rate": 0.0 if record["format_ok"] else 1.0,
    }


@functools.lru_cache(maxsize=8192)
def map_f1(cogmap: str, output: str) -> float:
    """F1 of one image's map, computed once however many of its questions carry it."""
    return score_cogmap(json.loads(cogmap), output)["f1"]


def _chance(doc: dict) -> float | None:
    """Chance of a uniform guess: 1/8 for directions, 1/candidates for the closest object."""
    if doc["skill"] == "relative_direction":
        return 1.0 / len(DIRECTIONS)
    if doc["skill"] == "relative_distance":
        question = str(doc["question"])
        inside = question[question.find("(") + 1 : question.find(")")] if "(" in question else ""
        candidates = [c for c in inside.split(",") if c.strip()]
        return 1.0 / len(candidates) if candidates else None
    return None


def _qa(doc: dict, results: list, mode: str, config: str, with_map: bool) -> dict[str, Any]:
    response = results[0] if results else ""
    skill = require(doc, "skill")
    record = score_qa(skill, str(require(doc, "answer")), response, think=mode == "think")
    record.update(id=doc.get("id"), scene_id=doc.get("scene_id"), skill=skill, answer=str(doc["answer"]))
    if with_map:
        stage = stage_result(COGMAP_STAGE, stage_key(doc, config))
        record["stage_outputs"] = {COGMAP_STAGE: stage}
        if stage is None:
            return _without_map(record, doc, config)
        record["map_key"] = stage["key"]  # the map this answer was given, scored once more for the overall
        record["map_f1"] = map_f1(require(doc, "cogmap"), stage["output"])
    metrics: dict[str, Any] = {
        "accuracy": record,
        "overall": record,
        skill: record["score"],
        "unparsed_rate": float(record["parsed"] is None),
    }
    if skill == "relative_direction":
        record["lenient_score"] = lenient_direction_score(str(doc["answer"]), response, think=mode == "think")
        metrics["relative_direction_lenient"] = record["lenient_score"]
    chance = _chance(doc)
    if chance is not None:
        metrics["chance_level"] = chance
    if with_map:
        metrics["answers_without_map"] = 0.0
    if config == "negative":
        judged = _judge(skill, doc, response)
        record["judge"] = judged
        metrics["llm_accuracy"] = judged
        metrics["judge_failures"] = judged
        metrics["judge_unparsed"] = judged
    return metrics


def _without_map(record: dict[str, Any], doc: dict, config: str) -> dict[str, Any]:
    """An answer given with no map in the conversation: kept, not scored (see the module doc)."""
    if run_state.first_time(NO_MAP_WARNING):
        logger.warning(f"osr_qa_cogmap: {NO_MAP_REASON}; the with-map tasks are left unscored")
    skill = record["skill"]
    record["rule_reason"] = record.pop("reason")
    record.pop("score")
    record["reason"] = NO_MAP_REASON
    nan = float("nan")
    metrics: dict[str, Any] = {"accuracy": record, "overall": record, skill: nan, "unparsed_rate": nan}
    if skill == "relative_direction":
        metrics["relative_direction_lenient"] = nan
    chance = _chance(doc)
    if chance is not None:
        metrics["chance_level"] = chance
    metrics["answers_without_map"] = 1.0
    if config == "negative":  # not asked: there is no with-map answer to judge
        unjudged = {"failed": False, "reason": NO_MAP_REASON}
        record["judge"] = unjudged
        metrics["llm_accuracy"] = metrics["judge_failures"] = metrics["judge_unparsed"] = unjudged
    return metrics


def _judge(skill: str, doc: dict, response: str) -> dict[str, Any]:
    """The App. C.3 evaluator's verdict; a judge failure is recorded, warned once, never raised."""
    from lmms_spatial.judge import get_judge

    item = {"skill": skill, "question": doc["question"], "answer": doc["answer"], "response": response}
    try:
        verdict = get_judge("osr_negative").score(item)
    except Exception as exc:  # not configured, unreachable, ...: the rule score still stands
        message = f"{type(exc).__name__}: {exc}"
        if run_state.first_time(JUDGE_WARNING):
            logger.warning(f"OSR-Bench LLM evaluator failed ({message}); llm_accuracy leaves such items out")
        # no "score": lmms-eval reads the "score" of every record for its standard error, and a failed
        # verdict has none (llm_accuracy leaves it out; judge_failures counts it)
        return {"failed": True, "reason": f"judge_failed:{message}"[:500]}
    return {"failed": False, **verdict.as_dict()}


# process_results of each task: <qa|qa_cogmap>_<config>_<mode> (the YAMLs name them through utils.py)
def process_results_qa_standard_vanilla(doc: dict, results: list) -> dict[str, Any]:
    return _qa(doc, results, "vanilla", "standard", with_map=False)


def process_results_qa_standard_think(doc: dict, results: list) -> dict[str, Any]:
    return _qa(doc, results, "think", "standard", with_map=False)


def process_results_qa_negative_vanilla(doc: dict, results: list) -> dict[str, Any]:
    return _qa(doc, results, "vanilla", "negative", with_map=False)


def process_results_qa_negative_think(doc: dict, results: list) -> dict[str, Any]:
    return _qa(doc, results, "think", "negative", with_map=False)


def process_results_qa_cogmap_standard_vanilla(doc: dict, results: list) -> dict[str, Any]:
    return _qa(doc, results, "vanilla", "standard", with_map=True)


def process_results_qa_cogmap_standard_think(doc: dict, results: list) -> dict[str, Any]:
    return _qa(doc, results, "think", "standard", with_map=True)


def process_results_qa_cogmap_negative_vanilla(doc: dict, results: list) -> dict[str, Any]:
    return _qa(doc, results, "vanilla", "negative", with_map=True)


def process_results_qa_cogmap_negative_think(doc: dict, results: list) -> dict[str, Any]:
    return _qa(doc, results, "think", "negative", with_map=True)


PROCESSORS = {
    "qa_standard_vanilla": process_results_qa_standard_vanilla,
    "qa_standard_think": process_results_qa_standard_think,
    "qa_negative_vanilla": process_results_qa_negative_vanilla,
    "qa_negative_think": process_results_qa_negative_think,
    "qa_cogmap_standard_vanilla": process_results_qa_cogmap_standard_vanilla,
    "qa_cogmap_standard_think": process_results_qa_cogmap_standard_think,
    "qa_cogmap_negative_vanilla": process_results_qa_cogmap_negative_vanilla,
    "qa_cogmap_negative_think": process_results_qa_cogmap_negative_think,
}
# what a run of these tasks records about its judge and map (named by BENCHMARK.needs): negative sampling asks the
# LLM evaluator; the with-map questions follow the model's own cognitive map
TASK_NEEDS = TaskNeeds(
    judge={
        scorer.__name__: JUDGE_RUBRIC
        for scorer in (
            process_results_qa_negative_vanilla,
            process_results_qa_negative_think,
            process_results_qa_cogmap_negative_vanilla,
            process_results_qa_cogmap_negative_think,
        )
    },
    maps={
        scorer.__name__: COGMAP_STAGE
        for scorer in (
            process_results_qa_cogmap_standard_vanilla,
            process_results_qa_cogmap_standard_think,
            process_results_qa_cogmap_negative_vanilla,
            process_results_qa_cogmap_negative_think,
        )
    },
)


def aggregate_mean(values: list[float]) -> float:
    return agg.mean(values)


def _scored(records: list[dict]) -> list[dict]:
    """Records with a score (answers given without a map have none)."""
    return [r for r in records if r.get("score") is not None]


def aggregate_score(records: list[dict]) -> float:
    return agg.accuracy(_scored(records))


def aggregate_overall(records: list[dict]) -> float:
    return official_overall(_scored(records))


def aggregate_judged(records: list[dict]) -> float:
    """Mean verdict over the items the judge scored (failures are counted separately); an unreadable
    verdict is a 0, as the official evaluator scores it (counted in ``judge_unparsed``)."""
    return agg.mean(r["score"] for r in records if not r["failed"] and r.get("score") is not None)


def aggregate_failures(records: list[dict]) -> int:
    return sum(1 for r in records if r["failed"])


def aggregate_unparsed(records: list[dict]) -> int:
    """Verdicts the LLM evaluator wrote that no rule could read (scored 0 in ``llm_accuracy``)."""
    from lmms_spatial.judge import UNPARSED_REASON

    return sum(1 for r in records if not r["failed"] and r.get("reason") == UNPARSED_REASON)


def aggregate_sum(values: list[float]) -> int:
    return int(sum(values))
