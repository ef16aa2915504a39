"""MMSI-Bench task adapter: documents -> prompts, responses -> score records.

Three settings, all on Hub ``RunsenXu/MMSI-Bench`` (or ``$LMMS_SPATIAL_MMSI_PATH``):

- ``mmsi_vanilla``: the official prompt (images first, then ``question + "\\n" + POST_PROMPT``)
  and the official extraction (``mmsi_official``), so numbers reproduce the paper.
- ``mmsi_circular``: each question asked four times with its options re-lettered
  (ABCD/BCDA/CDAB/DABC); a question counts only if all four are right.
- ``mmsi_cot``: zero-shot chain of thought; the answer is read from the end of the reply.

All three set ``reasoning_tags: none``: the official evaluation reads the model's prediction
as returned, ``<think>`` blocks included. The official extraction accepts any letter A-D,
whatever the options' style (``D: x``, ``D) x``, ``(D) x``); options are counted in every
style for the chance level. Rows are checked before a run (``process_docs``): the answer is
one upper-case letter among the question's options, ids are unique, the columns exist.

Every document yields an ``accuracy`` record carrying the parsed letter and the reason,
plus per-category scores, ``unparsed_rate`` and ``chance_level``.
"""

from __future__ import annotations

from typing import Any

from loguru import logger

from lmms_spatial.conditions import TaskNeeds
from lmms_spatial.data.images import BadDocumentError, load_images, require, undecoded
from lmms_spatial.data.loading import documents_of
from lmms_spatial.metrics import aggregation as agg
from lmms_spatial.metrics.extraction import extract_choice
from lmms_spatial.metrics.mmsi import (
    CIRCULAR_ORDERS,
    POST_PROMPT,
    circular_summary,
    count_options,
    normalise_category,
    option_parse_shortfall,
)
from lmms_spatial.metrics.mmsi import rotate as rotate_question

REQUIRED_COLUMNS = ("id", "images", "question", "answer")
OFFICIAL_LETTERS = 4  # the official regex reads A-D whatever the question's options

COT_POST_PROMPT = (
    "Think step by step about the spatial relations across the images. "
    "Then, on the last line, give the final answer as the option's letter enclosed within ``."
)

POST_PROMPTS = {"vanilla": POST_PROMPT, "cot": COT_POST_PROMPT}


def _kwargs(lmms_eval_specific_kwargs: dict | None) -> dict:
    """Prompt options: ``variant`` (vanilla or cot) picks the post-prompt; both can be overridden."""
    kw = {"pre_prompt": "", "variant": "vanilla", **(lmms_eval_specific_kwargs or {})}
    kw.setdefault("post_prompt", POST_PROMPTS[kw["variant"]])
    return kw


def doc_to_visual(doc: dict) -> list:
    return load_images(doc, "images")


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kw = _kwargs(lmms_eval_specific_kwargs)
    question = str(require(doc, "question")).strip()
    text = f"{kw['pre_prompt']}{question}"
    return f"{text}\n{kw['post_prompt']}" if kw["post_prompt"] else text


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list[dict]:
    """Images first, then the text: the order of the official VLMEvalKit prompt."""
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in doc_to_visual(doc)]
    content.append({"type": "text", "text": doc_to_text(doc, lmms_eval_specific_kwargs)})
    return [{"role": "user", "content": content}]


def doc_to_target(doc: dict) -> str:
    return str(doc.get("answer", ""))


def score_record(doc: dict, response: str, strategy: str) -> dict[str, Any]:
    """Score one response: parsed letter, reason, category, option count."""
    n_options = count_options(doc["question"])
    letters = OFFICIAL_LETTERS if strategy == "mmsi_official" else n_options
    extraction = extract_choice(response, n_options=letters, strategy=strategy)
    answer = gold_letter(doc["answer"])
    return {
        "id": doc.get("id"),
        "category": normalise_category(doc.get("question_type", "")),
        "answer": answer,
        "parsed": extraction.value,
        "reason": extraction.reason,
        "score": 1.0 if extraction.value == answer else 0.0,
        "n_options": n_options,
    }


def _metrics(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "accuracy": record,
        record["category"]: record["score"],
        "unparsed_rate": 1.0 if record["parsed"] is None else 0.0,
        "chance_level": 1.0 / record["n_options"],
    }


def process_results(doc: dict, results: list, lmms_eval_specific_kwargs: dict | None = None) -> dict[str, Any]:
    return _metrics(score_record(doc, results[0] if results else "", "mmsi_official"))


def process_results_cot(doc: dict, results: list) -> dict[str, Any]:
    return _metrics(score_record(doc, results[0] if results else "", "final"))


def aggregate_accuracy(records: list[dict]) -> float:
    return agg.accuracy(records)


def aggregate_mean(values: list[float]) -> float:
    return agg.mean(values)


# --- circular evaluation ---------------------------------------------------------------


def _rotate_batch(questions, answers, ids, indices):
    """Row ``i`` of the repeated dataset is rotation ``i % 4`` of its question."""
    n = len(CIRCULAR_ORDERS)
    out: dict[str, list] = {"question": [], "answer": [], "circular_rotation": [], "circular_question_id": []}
    for question, answer, doc_id, index in zip(questions, answers, ids, indices, strict=True):
        rotation = index % n
        rotated = rotate_question(question, str(answer).strip(), rotation)
        if rotated is None:  # options not parseable: asked once (-1), reported, not scored
            out["question"].append(question)
            out["answer"].append(answer)
            out["circular_rotation"].append(-1 if rotation == 0 else -2)
        else:
            out["question"].append(rotated[0])
            out["answer"].append(rotated[1])
            out["circular_rotation"].append(rotation)
        out["circular_question_id"].append(str(doc_id))
    return out


def gold_letter(answer: Any) -> str:
    """The gold answer as the letter it names: ``" b "`` is ``"B"`` (one letter, case unambiguous: options
    are lettered A-D); anything else is returned stripped, as it is (validation refuses it)."""
    text = str(answer).strip()
    return text.upper() if len(text) == 1 and text.isascii() and text.isalpha() else text


def validate_rows(dataset) -> list[str]:
    """Fail on a row that would score silently wrong, naming the document and the field; return the ids whose
    answer is a lower-case letter (normalised by :func:`process_docs`).

    A missing column, a duplicate id (circular evaluation would merge two questions), an answer
    that is not one letter among the question's options (null, "E", 2, "e").
    Questions whose options the official ``X:`` parser undercounts are logged (warning).
    """
    for field in REQUIRED_COLUMNS:
        if field not in dataset.column_names:
            raise BadDocumentError("<every row>", field, f"missing column (columns: {sorted(dataset.column_names)})")
    seen: set[str] = set()
    shortfalls: list[str] = []
    lower_case: list[str] = []
    for doc_id, question, answer in zip(dataset["id"], dataset["question"], dataset["answer"], strict=True):
        if str(doc_id) in seen:
            raise BadDocumentError(doc_id, "id", "duplicate id: circular evaluation would merge two questions")
        seen.add(str(doc_id))
        if question is None or not str(question).strip():
            raise BadDocumentError(doc_id, "question", "empty")
        letters = "ABCD"[: count_options(question)]
        if not isinstance(answer, str) or not answer.strip() or gold_letter(answer) not in list(letters):
            raise BadDocumentError(doc_id, "answer", f"{answer!r} is not one of the option letters {list(letters)}")
        if answer.strip() != gold_letter(answer):
            lower_case.append(str(doc_id))
        if option_parse_shortfall(question) is not None:
            shortfalls.append(str(doc_id))
    if shortfalls:
        logger.warning(
            f"MMSI-Bench: {len(shortfalls)} question(s) write options in a style the official parser does not read "
            f"(e.g. 'D) x'); vanilla scoring accepts every letter A-D, circular evaluation skips them as unrotatable: "
            f"ids {', '.join(shortfalls[:10])}{' ...' if len(shortfalls) > 10 else ''}"
        )
    return lower_case


@documents_of("mmsi")
def process_docs(dataset):
    """Rows checked (:func:`validate_rows`), lower-case gold letters upper-cased (said once), then left
    undecoded: images decoded once per request."""
    lower_case = validate_rows(dataset)
    if lower_case:
        logger.warning(
            f"MMSI-Bench: {len(lower_case)} gold answer(s) written as a lower-case letter, read as the upper-case "
            f"option letter: ids {', '.join(lower_case[:10])}{' ...' if len(lower_case) > 10 else ''}"
        )
        dataset = dataset.map(lambda a: {"answer": gold_letter(a)}, input_columns=["answer"], desc="MMSI answers")
    return undecoded(dataset, "images")


@documents_of("mmsi")
def process_docs_circular(dataset):
    """Four consecutive rows per question, options re-lettered; images are not copied.

    ``select`` repeats row indices without touching the image bytes, and ``map`` with
    ``input_columns`` only rewrites the text columns.
    """
    n = len(CIRCULAR_ORDERS)
    dataset = process_docs(dataset)
    repeated = dataset.select([i for i in range(len(dataset)) for _ in range(n)])
    rotated = repeated.map(
        _rotate_batch,
        batched=True,
        with_indices=True,
        input_columns=["question", "answer", "id"],
        desc="MMSI circular rotations",
    )
    # a question whose options cannot be parsed is asked once (-1); drop its copies (-2)
    return rotated.filter(lambda r: r != -2, input_columns=["circular_rotation"])


def process_results_circular(doc: dict, results: list) -> dict[str, Any]:
    record = score_record(doc, results[0] if results else "", "mmsi_official")
    record.update(question_id=doc["circular_question_id"], rotation=int(doc["circular_rotation"]))
    if record["rotation"] < 0:
        return {"unrotatable_questions": record}
    cat = record["category"]
    return {
        "circular_accuracy": record,
        "vanilla_accuracy": record,
        f"{cat} (circular)": record,
        f"{cat} (vanilla)": record,
        "incomplete_questions": record,
        "unparsed_rate": 1.0 if record["parsed"] is None else 0.0,
        "chance_level": 1.0 / record["n_options"],
    }


def aggregate_circular(records: list[dict]) -> float:
    return circular_summary(records)["circular"]


def aggregate_vanilla(records: list[dict]) -> float:
    return circular_summary(records)["vanilla"]


def aggregate_incomplete(records: list[dict]) -> int:
    return circular_summary(records)["incomplete_questions"]


def aggregate_count(records: list[dict]) -> int:
    return len(records)


# what a run of these tasks records about them (exported by utils.py, read by name:
# lmms_spatial.conditions.needs_of): no judge, no map, the default run options
TASK_NEEDS = TaskNeeds()
