"""DORI task adapter: documents -> structured prompts, responses -> score records.

One lmms-eval task per question type (7 tasks x coarse/granular), all reading the same
normalised dataset (Hub ``appledora/DORI-Benchmark`` converted by ``lmms-spatial convert dori``,
or ``$LMMS_SPATIAL_DORI_PATH``); ``process_docs`` keeps the rows of the task's question type.

Prompts:

- ``structured`` (default; Fig. 2 / App. I): TASK, CONTEXT, numbered steps, OPTIONS, FORMAT
  (``"answer": "<letter>", "reasoning": "..."``), EXAMPLES. Parsed with the
  ``json_then_robust`` strategy: the ``"answer"`` field first, the shared robust extractor
  (letters, then option text) as fallback.
- ``unstructured`` (App. C, Table 7): the TASK line and the options only - no context,
  steps, format block or examples - with one line asking for the letter; robust parsing.

Option order: as stored, unless ``LMMS_SPATIAL_DORI_SEED`` is set (App. K used 42, 1998 and
107983): then each question's options are shuffled with ``Random(f"{seed}:{id}")`` and the
answer letter is remapped. Every record carries the seed, so runs with different seeds are
pooled by ``lmms-spatial dori-report`` into mean and std/sqrt(n).

Records (``accuracy``; ``soft_accuracy`` on granular types) carry the question type, the
options, the parsed letter and the reason, so the error analysis works from samples files
without re-running the model.
"""

from __future__ import annotations

import os
import random
import re
from typing import Any

from lmms_spatial import run_options
from lmms_spatial.conditions import TaskNeeds
from lmms_spatial.data.images import BadDocumentError, load_images, require, undecoded
from lmms_spatial.data.loading import documents_of
from lmms_spatial.metrics import aggregation as agg
from lmms_spatial.metrics.dori import GRANULARITIES, TASKS, letter_index, soft_score
from lmms_spatial.metrics.extraction import LETTERS, extract_choice

SEED_ENV = "LMMS_SPATIAL_DORI_SEED"
PAPER_SEEDS = (42, 1998, 107983)
FORMAT_BLOCK = (
    "FORMAT YOUR RESPONSE AS:\n"
    '"answer": "Letter/number of chosen option",\n'
    '"reasoning": "Step-by-step explanation citing specific visual evidence"'
)
UNSTRUCTURED_SUFFIX = "Answer with the letter of the correct option."
STRATEGIES = {"structured": "json_then_robust", "unstructured": "robust"}
_NUMBERING = re.compile(r"^\s*(?:\d+\s*[.)]|[-*•])\s*")


def _kwargs(lmms_eval_specific_kwargs: dict | None) -> dict:
    kw = {"prompt": "structured", **(lmms_eval_specific_kwargs or {})}
    if kw["prompt"] not in STRATEGIES:
        raise ValueError(f"DORI prompt must be one of {sorted(STRATEGIES)}, got {kw['prompt']!r}")
    return kw


def option_seed() -> str:
    """The option-shuffle seed of this run ("original" when options keep their stored order)."""
    value = os.environ.get(SEED_ENV, "").strip()
    if not value or value.lower() in {"none", "original"}:
        return "original"
    try:
        return str(int(value))
    except ValueError:
        raise ValueError(f"{SEED_ENV} must be an integer seed, got {value!r}") from None


def shuffle_options(options: list[str], answer: str, seed: str, doc_id: Any) -> tuple[list[str], str]:
    """Options in a seeded order and the answer letter that follows its option."""
    if seed == "original":
        return list(options), answer
    order = list(range(len(options)))
    random.Random(f"{seed}:{doc_id}").shuffle(order)
    index = letter_index(answer, len(options))
    return [options[i] for i in order], LETTERS[order.index(index)]


# --- documents -----------------------------------------------------------------------


def _check_columns(dataset, needed: tuple[str, ...]) -> None:
    missing = [c for c in needed if c not in dataset.column_names]
    if missing:
        raise BadDocumentError(
            "<dataset>",
            ",".join(missing),
            f"column missing (have {dataset.column_names}). The tasks read the normalised layout of "
            "hub_cards/dori/README.md: convert the official release with `lmms-spatial convert dori RELEASE OUT` "
            "and point LMMS_SPATIAL_DORI_PATH at OUT",
        )


def _check_question_types(dataset) -> None:
    """Every row must belong to a question type: a misspelt ``task`` would land in no task, silently."""
    seen: set[tuple] = set()
    for doc_id, task, granularity in zip(dataset["id"], dataset["task"], dataset["granularity"], strict=True):
        if task not in TASKS:
            raise BadDocumentError(doc_id, "task", f"{task!r} is not one of {list(TASKS)}")
        if granularity not in GRANULARITIES:
            raise BadDocumentError(doc_id, "granularity", f"{granularity!r} is not one of {list(GRANULARITIES)}")
        if (task, granularity, doc_id) in seen:  # one question type's documents are told apart by id
            raise BadDocumentError(doc_id, "id", f"duplicate id in {task}/{granularity} (replay keys questions by id)")
        seen.add((task, granularity, doc_id))


def _prepare_batch(ids, options_batch, answers, seed: str) -> dict[str, list]:
    out: dict[str, list] = {"options": [], "answer": [], "option_seed": []}
    for doc_id, options, answer in zip(ids, options_batch, answers, strict=True):
        if not options or not isinstance(options, list):
            raise BadDocumentError(doc_id, "options", "missing or empty")
        if len(options) > len(LETTERS):
            raise BadDocumentError(doc_id, "options", f"{len(options)} options; at most {len(LETTERS)} are lettered")
        answer = str(answer).strip().upper()
        if letter_index(answer, len(options)) is None:
            raise BadDocumentError(doc_id, "answer", f"{answer!r} is not one of the {len(options)} option letters")
        shuffled, letter = shuffle_options([str(o) for o in options], answer, seed, doc_id)
        out["options"].append(shuffled)
        out["answer"].append(letter)
        out["option_seed"].append(seed)
    return out


def docs_for(task: str, granularity: str):
    """``process_docs`` for one question type: keep its rows, validate, apply the option seed."""
    if task not in TASKS or granularity not in GRANULARITIES:
        raise ValueError(f"unknown DORI question type {task}/{granularity}")

    def process_docs(dataset):
        _check_columns(dataset, ("id", "task", "granularity", "question", "options", "answer"))
        _check_question_types(dataset)
        rows = undecoded(dataset, "images").filter(
            lambda t, g: t == task and g == granularity,
            input_columns=["task", "granularity"],
            desc=f"DORI {task}/{granularity}",
        )
        seed = option_seed()
        return rows.map(
            lambda ids, options, answers: _prepare_batch(ids, options, answers, seed),
            batched=True,
            input_columns=["id", "options", "answer"],
            desc="DORI options",
        )

    process_docs.__name__ = f"process_docs_{task}_{granularity}"
    return documents_of("dori")(process_docs)


# process_docs of each question type, docs_<task>_<granularity>, as the YAMLs name them
def docs_view_parallelism_coarse(dataset: Any) -> Any:
    return docs_for("view_parallelism", "coarse")(dataset)


def docs_view_parallelism_granular(dataset: Any) -> Any:
    return docs_for("view_parallelism", "granular")(dataset)


def docs_directional_facing_coarse(dataset: Any) -> Any:
    return docs_for("directional_facing", "coarse")(dataset)


def docs_directional_facing_granular(dataset: Any) -> Any:
    return docs_for("directional_facing", "granular")(dataset)


def docs_single_axis_rotation_coarse(dataset: Any) -> Any:
    return docs_for("single_axis_rotation", "coarse")(dataset)


def docs_single_axis_rotation_granular(dataset: Any) -> Any:
    return docs_for("single_axis_rotation", "granular")(dataset)


def docs_compound_rotation_coarse(dataset: Any) -> Any:
    return docs_for("compound_rotation", "coarse")(dataset)


def docs_compound_rotation_granular(dataset: Any) -> Any:
    return docs_for("compound_rotation", "granular")(dataset)


def docs_inter_object_direction_coarse(dataset: Any) -> Any:
    return docs_for("inter_object_direction", "coarse")(dataset)


def docs_inter_object_direction_granular(dataset: Any) -> Any:
    return docs_for("inter_object_direction", "granular")(dataset)


def docs_viewer_scene_direction_coarse(dataset: Any) -> Any:
    return docs_for("viewer_scene_direction", "coarse")(dataset)


def docs_viewer_scene_direction_granular(dataset: Any) -> Any:
    return docs_for("viewer_scene_direction", "granular")(dataset)


def docs_canonical_orientation_coarse(dataset: Any) -> Any:
    return docs_for("canonical_orientation", "coarse")(dataset)


def docs_canonical_orientation_granular(dataset: Any) -> Any:
    return docs_for("canonical_orientation", "granular")(dataset)


# --- prompts -------------------------------------------------------------------------


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    return [_NUMBERING.sub("", str(v)).strip() for v in value if str(v).strip()]


def options_block(options: list[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(options))


def structured_prompt(doc: dict) -> str:
    n_images = len(doc.get("images") or []) or 1
    parts = [f"TASK: {str(require(doc, 'question')).strip()}"]
    context = str(doc.get("context") or "").strip()
    if context:
        parts.append(f"CONTEXT: {context}")
    steps = _lines(doc.get("instructions"))
    if steps:
        subject = "this image" if n_images == 1 else "these images"
        parts.append(f"Please analyze {subject} using these steps:")
        parts.extend(f"{i}. {step}" for i, step in enumerate(steps, 1))
    parts.append("OPTIONS:")
    parts.append(options_block(require(doc, "options")))
    parts.append(FORMAT_BLOCK)
    examples = _lines(doc.get("examples"))
    if examples:
        parts.append("EXAMPLES:")
        parts.extend(f"- {example}" for example in examples)
    return "\n".join(parts)


def unstructured_prompt(doc: dict) -> str:
    question = str(require(doc, "question")).strip()
    return f"{question}\n{options_block(require(doc, 'options'))}\n{UNSTRUCTURED_SUFFIX}"


def doc_to_visual(doc: dict) -> list:
    return load_images(doc, "images")


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kw = _kwargs(lmms_eval_specific_kwargs)
    return structured_prompt(doc) if kw["prompt"] == "structured" else unstructured_prompt(doc)


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list[dict]:
    """Images first (marked objects as given), then the prompt."""
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in doc_to_visual(doc)]
    content.append({"type": "text", "text": doc_to_text(doc, lmms_eval_specific_kwargs)})
    return [{"role": "user", "content": content}]


def doc_to_target(doc: dict) -> str:
    return str(doc.get("answer", ""))


# --- scoring -------------------------------------------------------------------------


def score_record(doc: dict, response: str, prompt: str = "structured") -> dict[str, Any]:
    options = [str(o) for o in doc["options"]]
    extraction = extract_choice(response, options=options, strategy=STRATEGIES[prompt])
    answer = str(doc["answer"])
    record = {
        "id": doc.get("id"),
        "task": doc["task"],
        "granularity": doc["granularity"],
        "options": options,
        "answer": answer,
        "parsed": extraction.value,
        "reason": extraction.reason,
        "score": 1.0 if extraction.value == answer else 0.0,
        "option_seed": doc.get("option_seed", "original"),
        "prompt": prompt,
    }
    run_options.attach(record, "dori")
    if doc["granularity"] == "granular":
        record["soft_score"], record["soft_reason"] = soft_score(doc["task"], options, answer, extraction.value)
    return record


def _metrics(record: dict[str, Any]) -> dict[str, Any]:
    metrics: dict[str, Any] = {
        "accuracy": record,
        "unparsed_rate": 1.0 if record["parsed"] is None else 0.0,
        "chance_level": 1.0 / len(record["options"]),
    }
    if "soft_score" in record:
        metrics["soft_accuracy"] = record
    return metrics


def process_results(doc: dict, results: list) -> dict[str, Any]:
    """Structured prompt (lmms-eval does not pass task kwargs here: one function per prompt)."""
    return _metrics(score_record(doc, results[0] if results else "", "structured"))


def process_results_unstructured(doc: dict, results: list) -> dict[str, Any]:
    return _metrics(score_record(doc, results[0] if results else "", "unstructured"))


def aggregate_accuracy(records: list[dict]) -> float:
    return agg.accuracy(records)


def aggregate_soft_accuracy(records: list[dict]) -> float:
    return agg.accuracy(records, "soft_score")


def aggregate_mean(values: list[float]) -> float:
    return agg.mean(values)


# what a run of these tasks records about them (exported by utils.py, read by name:
# lmms_spatial.conditions.needs_of): no judge, no map, the default run options
TASK_NEEDS = TaskNeeds()
