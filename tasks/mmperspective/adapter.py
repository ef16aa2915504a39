"""MMPerspective task adapter: documents -> prompts, responses -> score records.

Tasks (all read the layout of ``hub_cards/mmperspective/README.md`` from
``$LMMS_SPATIAL_MMPERSPECTIVE_PATH``; the data is not public yet, so there is no Hub default):

- ``mmperspective_<task>`` for the 9 tasks (``vpp`` ... ``vpc``): the accuracy rows
  (``robust_group`` null) of that task; metrics ``accuracy``, ``unparsed_rate``, ``chance_level``.
- ``mmperspective_robust``: every row with a ``robust_group``; ``binary_robustness`` and
  ``graded_robustness`` over complete groups, ``complete_robust_groups``,
  ``incomplete_robust_groups``, per-variant accuracy ``variant_<perturbation>``.
- groups ``mmperspective_perception`` (``accuracy`` = PAcc), ``mmperspective_reasoning``
  (``accuracy`` = RAcc), ``mmperspective`` (``accuracy`` = Overall, the 9-task mean) and the
  same tree with ``_cot`` (chain of thought, Table 2). See ``lmms_spatial.metrics.mmperspective``.

The paper gives no prompt text: the question, then the options as ``A. text`` lines, then an
instruction to answer with the letter (parsed with the ``robust`` strategy); the CoT variant
asks for step-by-step reasoning and an ``Answer: X`` last line (parsed with ``final``). Images
come first, in order (PTS: the two images of the pair).
"""

from __future__ import annotations

from typing import Any

from loguru import logger

from lmms_spatial.conditions import TaskNeeds
from lmms_spatial.data.images import BadDocumentError, doc_id_of, load_images, require, undecoded
from lmms_spatial.data.loading import documents_of
from lmms_spatial.metrics import aggregation as agg
from lmms_spatial.metrics.extraction import LETTERS, extract_choice
from lmms_spatial.metrics.mmperspective import (
    N_IMAGES,
    ORIGINAL,
    PERTURBATIONS,
    TASKS,
    normalise_perturbation,
    normalise_task,
    robustness_summary,
)
from lmms_spatial.tasks.mmperspective.schema import check_dataset, is_robust

KEY = "mmperspective"

POST_PROMPT = "Answer with the option's letter from the given choices directly."
COT_POST_PROMPT = (
    "Think step by step about the perspective geometry in the image (vanishing points, horizon line, "
    "converging lines, line of sight). Then, on the last line, give the final answer as "
    '"Answer: X", where X is the option\'s letter.'
)
POST_PROMPTS = {"direct": POST_PROMPT, "cot": COT_POST_PROMPT}


# --- documents -----------------------------------------------------------------------------


def _is_task_row(task: Any, group: Any, wanted: str) -> bool:
    return normalise_task(task) == wanted and not is_robust(group)


def _docs_of_task(wanted: str):
    def process_docs(dataset):
        check_dataset(dataset)
        docs = undecoded(dataset, "images").filter(
            _is_task_row, input_columns=["task", "robust_group"], fn_kwargs={"wanted": wanted}, desc=f"{KEY} {wanted}"
        )
        if len(docs) == 0:
            raise ValueError(f"MMPerspective data has no {wanted} accuracy rows (task={wanted!r}, robust_group null)")
        return docs

    process_docs.__name__ = f"process_docs_{wanted.lower()}"
    return documents_of(KEY)(process_docs)


process_docs_vpp, process_docs_clp, process_docs_vap, process_docs_ldp = map(_docs_of_task, TASKS[:4])
process_docs_ptr, process_docs_lrr, process_docs_ovr, process_docs_pts, process_docs_vpc = map(_docs_of_task, TASKS[4:])


def _add_variants(groups: list, expected: dict[str, list[str]]) -> dict[str, list]:
    return {"robust_variants": [expected[str(g).strip()] for g in groups]}


@documents_of(KEY)
def process_docs_robust(dataset):
    """Rows with a ``robust_group``, each told the variants its group must have (whole file)."""
    expected = check_dataset(dataset)
    docs = undecoded(dataset, "images").filter(is_robust, input_columns=["robust_group"], desc=f"{KEY} robust")
    if len(docs) == 0:
        raise ValueError("MMPerspective data has no robustness rows (no row has a robust_group)")
    return docs.map(
        _add_variants,
        batched=True,
        input_columns=["robust_group"],
        fn_kwargs={"expected": expected},
        desc=f"{KEY} robust variants",
    )


def _kwargs(lmms_eval_specific_kwargs: dict | None) -> dict:
    kw = {"pre_prompt": "", "variant": "direct", **(lmms_eval_specific_kwargs or {})}
    kw.setdefault("post_prompt", POST_PROMPTS[kw["variant"]])
    return kw


def doc_to_visual(doc: dict) -> list:
    images = load_images(doc, "images")
    task = normalise_task(require(doc, "task"))
    expected = N_IMAGES.get(task, 1)
    if len(images) != expected:
        raise BadDocumentError(
            doc_id_of(doc), "images", f"a {task} question needs {expected} image(s), got {len(images)}"
        )
    return images


def options_of(doc: dict) -> list[str]:
    options = require(doc, "options")
    if isinstance(options, str) or not isinstance(options, (list, tuple)) or len(options) < 2:
        raise BadDocumentError(doc_id_of(doc), "options", f"expected a list of option texts, got {options!r}")
    return [str(o) for o in options]


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kw = _kwargs(lmms_eval_specific_kwargs)
    question = str(require(doc, "question")).strip()
    lines = [f"{LETTERS[i]}. {text}" for i, text in enumerate(options_of(doc))]
    text = "\n".join([f"{kw['pre_prompt']}{question}", *lines])
    return f"{text}\n{kw['post_prompt']}" if kw["post_prompt"] else text


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list[dict]:
    """Images first (PTS: both, in order), then the text."""
    content: list[dict[str, Any]] = [{"type": "image", "url": image} for image in doc_to_visual(doc)]
    content.append({"type": "text", "text": doc_to_text(doc, lmms_eval_specific_kwargs)})
    return [{"role": "user", "content": content}]


def doc_to_target(doc: dict) -> str:
    return str(doc.get("answer", "")).strip().upper()


# --- scoring -------------------------------------------------------------------------------


def score_record(doc: dict, response: Any, strategy: str) -> dict[str, Any]:
    """One response scored: parsed letter and reason; never raises on model output."""
    options = options_of(doc)
    answer = str(require(doc, "answer")).strip().upper()
    extraction = extract_choice(response, options=options, strategy=strategy)
    return {
        "id": doc.get("id"),
        "task": normalise_task(doc.get("task")),
        "answer": answer,
        "parsed": extraction.value,
        "reason": extraction.reason,
        "score": 1.0 if extraction.value == answer else 0.0,
        "n_options": len(options),
    }


def _first(results: list) -> Any:
    return results[0] if results else ""


def _metrics(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "accuracy": record,
        "unparsed_rate": 1.0 if record["parsed"] is None else 0.0,
        "chance_level": 1.0 / record["n_options"],
    }


def process_results(doc: dict, results: list) -> dict[str, Any]:
    return _metrics(score_record(doc, _first(results), "robust"))


def process_results_cot(doc: dict, results: list) -> dict[str, Any]:
    return _metrics(score_record(doc, _first(results), "final"))


ROBUST_GROUP_METRICS = ("binary_robustness", "graded_robustness", "complete_robust_groups", "incomplete_robust_groups")


def _robust_metrics(doc: dict, record: dict[str, Any]) -> dict[str, Any]:
    variants = require(doc, "robust_variants")
    record.update(
        robust_group=str(require(doc, "robust_group")).strip(),
        perturbation=normalise_perturbation(doc.get("perturbation")) or ORIGINAL,
        robust_variants=list(variants),
    )
    metrics: dict[str, Any] = {name: record for name in ROBUST_GROUP_METRICS}
    metrics.update({f"variant_{v}": record for v in PERTURBATIONS})
    metrics["unparsed_rate"] = 1.0 if record["parsed"] is None else 0.0
    metrics["chance_level"] = 1.0 / record["n_options"]
    return metrics


def process_results_robust(doc: dict, results: list) -> dict[str, Any]:
    return _robust_metrics(doc, score_record(doc, _first(results), "robust"))


def process_results_robust_cot(doc: dict, results: list) -> dict[str, Any]:
    return _robust_metrics(doc, score_record(doc, _first(results), "final"))


# --- aggregation ---------------------------------------------------------------------------


def aggregate_accuracy(records: list[dict]) -> float:
    return agg.accuracy(records)


def aggregate_mean(values: list[float]) -> float:
    return agg.mean(values)


def aggregate_binary(records: list[dict]) -> float:
    return robustness_summary(records)["binary"]


def aggregate_graded(records: list[dict]) -> float:
    return robustness_summary(records)["graded"]


def aggregate_complete(records: list[dict]) -> int:
    return robustness_summary(records)["complete_groups"]


def aggregate_incomplete(records: list[dict]) -> int:
    summary = robustness_summary(records)
    if summary["incomplete_groups"]:
        ids = summary["incomplete_group_ids"]
        logger.warning(
            f"MMPerspective robustness: {len(ids)} incomplete group(s) not scored (a variant was not "
            f"answered, e.g. --limit): {ids[:10]}{' ...' if len(ids) > 10 else ''}"
        )
    return summary["incomplete_groups"]


def _variant_aggregator(variant: str):
    def aggregate(records: list[dict]) -> float:
        return robustness_summary(records)["per_variant"][variant]

    aggregate.__name__ = f"aggregate_variant_{variant}"
    return aggregate


(
    aggregate_variant_original,
    aggregate_variant_crop,
    aggregate_variant_flip,
    aggregate_variant_mask,
    (aggregate_variant_rotate),
) = map(_variant_aggregator, PERTURBATIONS)


# what a run of these tasks records about them (exported by utils.py, read by name:
# lmms_spatial.conditions.needs_of): no judge, no map, the default run options
TASK_NEEDS = TaskNeeds()
