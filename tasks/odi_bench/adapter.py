"""ODI-Bench task adapter: documents -> prompts and ERP images, responses -> score records.

Data: Hub ``LiuYang66/ODI-Bench`` converted to the normalised layout
(``lmms-spatial convert odi_bench``, ``hub_cards/odi_bench/README.md``) or ``$LMMS_SPATIAL_ODI_PATH``.
One leaf task per (setting, ODI task); ``process_docs`` keeps the task's rows and leaves the
image column undecoded, so only :func:`doc_to_visual` decodes an image, once, at the capped
resolution (:mod:`lmms_spatial.data.erp_image`).

Prompts (Fig. 12, decoded in SPEC §3.4), lines joined by newlines::

    close, multiple choice: <prefix> / Question: <q> / Options: / A. .. / B. .. /
                            Answer ONLY with the option letter (e.g., A, B, C, or D).
    close, yes/no:          <prefix> / Question: <q> / Answer ONLY with Yes or No.
    open:                   <prefix> / Question: <q>
                            (+ "Your answer should contain the [orientation word]." for EVO, AVO, RD)
    cot (Table 8):          the close-ended question + a zero-shot CoT instruction in the R1 format

``<prefix>`` is Table 13's prompt variant: ``erp`` (default, "Answer the question based on the
provided ERP-formatted image."), ``panorama``, ``panorama_erp``, or literal text.

Task options (``lmms_eval_specific_kwargs``; environment variables override them for a run):

* ``prompt`` / ``LMMS_SPATIAL_ODI_PROMPT``: the prefix variant;
* ``max_pixels`` / ``LMMS_SPATIAL_ODI_MAX_PIXELS``: cap the pixels of the image sent to the model;
* ``resize`` / ``LMMS_SPATIAL_ODI_RESIZE``: exact ``HEIGHTxWIDTH`` (``512x1024`` = Table 11).

Neither set, an API-served model (``openai``, ``gemini``, ``litellm``, ...) gets the panorama
at the size its provider keeps, within the provider's byte limit (:mod:`lmms_spatial.data.api_images`;
``LMMS_SPATIAL_ODI_API_IMAGES`` picks the rule by name, ``none`` sends full resolution); the
rule applied is recorded in every sample's ``run_options``. Local models get full resolution.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loguru import logger

from lmms_spatial import run_options, run_state
from lmms_spatial.conditions import TaskNeeds
from lmms_spatial.data import api_images
from lmms_spatial.data.erp_image import FULL_RESOLUTION, ResolutionCap, decode_erp
from lmms_spatial.data.images import BadDocumentError, doc_id_of, require, undecoded
from lmms_spatial.data.loading import documents_of
from lmms_spatial.judge import FALLBACK_JUDGE, UNPARSED_REASON, get_judge
from lmms_spatial.metrics import odi_bench as odi
from lmms_spatial.metrics.extraction import LETTERS, Extraction, extract_choice, extract_yes_no

ENV_PROMPT = "LMMS_SPATIAL_ODI_PROMPT"

PROMPT_PREFIXES = {
    "erp": "Answer the question based on the provided ERP-formatted image.",
    "panorama": "This is a 360-degree panoramic image.",
    "panorama_erp": "This is a 360-degree panoramic image, the image is ERP-formatted.",
}
MCQ_SUFFIX = "Answer ONLY with the option letter (e.g., A, B, C, or D)."
YES_NO_SUFFIX = "Answer ONLY with Yes or No."
ORIENTATION_SUFFIX = "Your answer should contain the [orientation word]."
# Fig. 11 (zero-shot CoT) did not survive extraction; the paper says it follows Kojima et al.
# ("step by step") with the response format of DeepSeek-R1 (Guo et al., 2025).
COT_MCQ_SUFFIX = (
    "Let's think step by step. First write your reasoning within <think> </think> tags, then give the final "
    "answer, ONLY the option letter, within <answer> </answer> tags."
)
COT_YES_NO_SUFFIX = (
    "Let's think step by step. First write your reasoning within <think> </think> tags, then give the final "
    "answer, ONLY Yes or No, within <answer> </answer> tags."
)

JUDGE_RUBRIC = "odi_open"


# ---------------------------------------------------------------------------------------
# options and prompts
# ---------------------------------------------------------------------------------------


def _warn_once(key: str, message: str, level: str = "WARNING") -> None:
    """``message`` logged the first time ``key`` comes up in this process, not once per document that shares the
    trouble (the keys logged are the run state's: :func:`lmms_spatial.run_state.first_time`)."""
    if run_state.first_time(f"odi_bench: {key}"):
        logger.log(level, message)


def _info_once(key: str, message: str) -> None:
    _warn_once(key, message, "INFO")


def _kwargs(lmms_eval_specific_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    kw = {"prompt": "erp", "setting": "close", **(lmms_eval_specific_kwargs or {})}
    env_prompt = os.environ.get(ENV_PROMPT, "").strip()
    if env_prompt:
        kw["prompt"] = env_prompt
    return kw


def prompt_prefix(variant: str | None) -> str:
    """Table 13's prefix: a variant name, or the literal text when it is not one."""
    if variant is None or not str(variant).strip():
        return PROMPT_PREFIXES["erp"]
    return PROMPT_PREFIXES.get(str(variant).strip().lower(), str(variant).strip())


def options_of(doc: Mapping[str, Any]) -> list[str]:
    options = doc.get("options") or []
    return [str(o) for o in options]


def format_options(options: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {str(text).strip()}" for i, text in enumerate(options))


def task_of(doc: Mapping[str, Any]) -> str:
    return odi.normalise_task(require(doc, "task"))


def build_prompt(doc: Mapping[str, Any], setting: str = "close", prefix: str | None = None) -> str:
    """The text of one question in ``setting`` (close, open or cot); ``prefix`` as :func:`prompt_prefix`."""
    question = str(require(doc, "question")).strip()
    lines = [prompt_prefix(prefix), f"Question: {question}"]
    if setting == "open":
        if task_of(doc) in odi.ORIENTATION_TASKS:
            lines.append(ORIENTATION_SUFFIX)
        return "\n".join(lines)
    if setting not in ("close", "cot"):
        raise ValueError(f"unknown ODI-Bench setting {setting!r}; known: close, open, cot")
    cot = setting == "cot"
    if odi.is_yes_no(doc):
        lines.append(COT_YES_NO_SUFFIX if cot else YES_NO_SUFFIX)
    else:
        options = options_of(doc)
        if not options:
            raise ValueError(f"document {doc_id_of(doc)!r}, field 'options': empty for a non yes/no question")
        lines += ["Options:", format_options(options), COT_MCQ_SUFFIX if cot else MCQ_SUFFIX]
    return "\n".join(lines)


def doc_to_text(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> str:
    kw = _kwargs(lmms_eval_specific_kwargs)
    return build_prompt(doc, kw["setting"], kw["prompt"])


def api_image_rule(lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> api_images.ProviderImages | None:
    """The provider rule sizing the ERP sent to an API model; None for a local model, or when the
    user's ``max_pixels`` / ``resize`` (which win) are set."""
    if ResolutionCap.from_options(lmms_eval_specific_kwargs).active:
        return None
    return api_images.rule_in_effect()


def resolution_cap(lmms_eval_specific_kwargs: Mapping[str, Any] | None = None) -> ResolutionCap:
    """The user's cap if set, else the API provider's (:func:`api_image_rule`), else full resolution."""
    cap = ResolutionCap.from_options(lmms_eval_specific_kwargs)
    if cap.active:
        _check_against_provider(cap)
        return cap
    rule = api_images.rule_in_effect()
    model = api_images.current_model()
    if rule is None:
        if model is not None and model.provider is not None:  # LMMS_SPATIAL_ODI_API_IMAGES=none
            _warn_once(
                "api-none",
                f"ODI-Bench: {api_images.ENV_API_IMAGES}=none sends {model.model} full-resolution panoramas; "
                f"its provider may refuse them ({model.provider.describe()})",
            )
        return FULL_RESOLUTION
    unknown = model is not None and not model.recognised
    choices = "|".join([*api_images.PROVIDERS, api_images.NONE])
    _info_once(
        f"api-{rule.name}",
        f"ODI-Bench: panoramas for {model.model if model else 'the model'} are sized as {rule.describe()}"
        + ("; model name not recognised: OpenAI's rule, the reference of OpenAI-compatible APIs" if unknown else "")
        + f". LMMS_SPATIAL_ODI_MAX_PIXELS / LMMS_SPATIAL_ODI_RESIZE or {api_images.ENV_API_IMAGES}=<{choices}> choose.",
    )
    return rule.cap()


def _check_against_provider(cap: ResolutionCap) -> None:
    """Warn once when the user's cap may exceed the byte limit of the API provider in use."""
    rule = api_images.rule_in_effect()
    if rule is None:
        return
    pixels = cap.size[0] * cap.size[1] if cap.size is not None else cap.max_pixels
    if pixels is None or pixels > api_images.pixels_within(rule.max_image_bytes):
        message = f"ODI-Bench: the image cap set ({describe_cap(cap)}) may encode over the limit of {rule.describe()}"
        _warn_once(f"cap-{rule.name}", message)


def describe_cap(cap: ResolutionCap) -> str:
    if cap.size is not None:
        return f"{cap.size[1]}x{cap.size[0]} (height x width)"
    return f"at most {cap.max_pixels} px" if cap.max_pixels is not None else "full resolution"


def doc_to_visual(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list:
    """The ERP image, decoded once at the capped resolution (full resolution by default)."""
    cap = resolution_cap(lmms_eval_specific_kwargs)
    return [decode_erp(require(doc, "image"), cap, doc_id=doc_id_of(doc), field="image")]


def doc_to_messages(doc: dict, lmms_eval_specific_kwargs: dict | None = None) -> list[dict]:
    """The image, then the text."""
    content: list[dict[str, Any]] = [
        {"type": "image", "url": image} for image in doc_to_visual(doc, lmms_eval_specific_kwargs)
    ]
    content.append({"type": "text", "text": doc_to_text(doc, lmms_eval_specific_kwargs)})
    return [{"role": "user", "content": content}]


def doc_to_target(doc: dict) -> str:
    return str(doc.get("answer", ""))


def doc_to_target_open(doc: dict) -> str:
    return str(doc.get("answer_text", ""))


# ---------------------------------------------------------------------------------------
# documents
# ---------------------------------------------------------------------------------------


REQUIRED_COLUMNS = ("id", "image", "task", "question", "options", "answer", "answer_text")


def validate_rows(dataset) -> None:
    """Fail on a row that would be dropped or scored silently wrong, naming the document and field.

    An unknown task name (it would land in no task), options that are not a list of texts
    (a string would be read letter by letter), an answer that is not one of its options' letters
    (or Yes/No for a question without options), an empty open-ended answer, a duplicate id.
    """
    for field in REQUIRED_COLUMNS:
        if field not in dataset.column_names:
            raise BadDocumentError("<every row>", field, f"missing column (columns: {sorted(dataset.column_names)})")
    seen: set[str] = set()
    columns = (dataset[name] for name in ("id", "task", "options", "answer", "answer_text"))
    for doc_id, task, options, answer, answer_text in zip(*columns, strict=True):
        try:
            odi.normalise_task(task)
        except ValueError as exc:
            raise BadDocumentError(doc_id, "task", str(exc)) from None
        if str(doc_id) in seen:
            raise BadDocumentError(doc_id, "id", "duplicate id")
        seen.add(str(doc_id))
        if options is not None and not (isinstance(options, list) and all(isinstance(o, str) for o in options)):
            raise BadDocumentError(doc_id, "options", f"expected a list of option texts, got {type(options).__name__}")
        allowed = list(LETTERS[: len(options)]) if options else list(odi.YES_NO)
        if not isinstance(answer, str) or answer.strip().capitalize() not in allowed and answer.strip() not in allowed:
            raise BadDocumentError(doc_id, "answer", f"{answer!r} is not one of {allowed}")
        if answer_text is None or not str(answer_text).strip():
            raise BadDocumentError(doc_id, "answer_text", "empty (the open-ended ground truth)")


def process_docs_for(task: str) -> Callable:
    """``process_docs`` of one ODI task: rows checked (:func:`validate_rows`), its rows only, undecoded."""
    task = odi.normalise_task(task)

    def process_docs(dataset):
        validate_rows(dataset)
        dataset = undecoded(dataset, "image")
        return dataset.filter(
            lambda names: [odi.normalise_task(n) == task for n in names],
            batched=True,
            input_columns=["task"],
            desc=f"ODI-Bench {task}",
        )

    process_docs.__name__ = f"process_docs_{task}"
    return documents_of("odi_bench")(process_docs)


# ---------------------------------------------------------------------------------------
# close-ended scoring
# ---------------------------------------------------------------------------------------


def _first_text(results: Sequence[Any] | None) -> str:
    if not results:
        return ""
    value = results[0]
    while isinstance(value, (list, tuple)):
        value = value[0] if value else ""
    return "" if value is None else str(value)


def _yes_no_final(response: str) -> Extraction:
    """Chain-of-thought yes/no: the last line first, then the whole reply."""
    lines = [line for line in response.strip().splitlines() if line.strip()]
    if lines:
        last = extract_yes_no(lines[-1])
        if last.parsed:
            return Extraction(last.value, f"last_line:{last.reason}")
    return extract_yes_no(response)


def score_close(doc: Mapping[str, Any], response: str, strategy: str = "robust") -> dict[str, Any]:
    """Score record of one close-ended answer: parsed letter (or Yes/No), reason, score."""
    answer = str(require(doc, "answer")).strip()
    if odi.is_yes_no(doc):
        extraction = _yes_no_final(response) if strategy == "final" else extract_yes_no(response)
        answer, n_options = answer.capitalize(), 2
    else:
        options = options_of(doc)
        extraction = extract_choice(response, options=options, strategy=strategy)
        answer, n_options = answer.upper(), len(options)
    return {
        "id": str(doc_id_of(doc)),
        "task": task_of(doc),
        "answer": answer,
        "parsed": extraction.value,
        "reason": extraction.reason,
        "score": 1.0 if extraction.value == answer else 0.0,
        "n_options": n_options,
    }


def _close_metrics(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "accuracy": record,
        "unparsed_rate": 1.0 if record["parsed"] is None else 0.0,
        "chance_level": odi.chance_of(record),
    }


def with_method_artifacts(record: dict[str, Any], doc: Mapping[str, Any], setting: str) -> dict[str, Any]:
    """Add ``record["omni_cot"]``: the intermediate steps of ``--model omni_cot`` for this document
    (captions, boxes, crops, keep/drop decisions, first and final answer), when that model made them."""
    from lmms_spatial.models.omni_cot import lookup

    found = lookup(doc, setting)
    if found is not None:
        record["omni_cot"] = found
    return record


def options_in_effect() -> dict[str, str]:
    """The run options of ODI-Bench in effect, the API provider rule that sizes its images included
    (see :func:`api_image_rule`)."""
    options = run_options.in_effect("odi_bench")
    rule = api_image_rule()
    if rule is not None:
        options = dict(sorted({api_images.ENV_API_IMAGES: rule.name, **options}.items()))
    return options


def _recorded(record: dict[str, Any], doc: Mapping[str, Any], setting: str) -> dict[str, Any]:
    """The record with what else explains it: Omni-CoT's steps and the run options in effect
    (:func:`options_in_effect`)."""
    record = with_method_artifacts(record, doc, setting)
    record[run_options.RECORD_KEY] = options_in_effect()
    return record


def process_results(doc: dict, results: list) -> dict[str, Any]:
    return _close_metrics(_recorded(score_close(doc, _first_text(results), "robust"), doc, "close"))


def process_results_cot(doc: dict, results: list) -> dict[str, Any]:
    return _close_metrics(_recorded(score_close(doc, _first_text(results), "final"), doc, "cot"))


# ---------------------------------------------------------------------------------------
# open-ended scoring (LLM judge)
# ---------------------------------------------------------------------------------------


def judge_item(doc: Mapping[str, Any], response: str) -> dict[str, Any]:
    """The ``odi_open`` rubric's item for one answer."""
    return {
        "task": task_of(doc),
        "question": str(require(doc, "question")).strip(),
        "answer_text": str(require(doc, "answer_text")).strip(),
        "response": response,
    }


def score_open(doc: Mapping[str, Any], response: str, judge: Any = None) -> dict[str, Any]:
    """Score record of one open-ended answer, judged by the shared judge layer.

    Never raises on model output or judge trouble: an unreachable / unconfigured judge gives
    a record with ``failed=True``, the error as ``reason`` and no ``score`` (left out of the
    means, counted in ``judge_failures``). A verdict the judge wrote but no rule can read
    (reason ``judge_unparsed``, after the judge layer's re-asks) is a fault of the judge, not a 0
    of the model: the record keeps the judge's reply and has no ``score`` (left out of the means,
    counted in ``judge_unparsed``). ODI-Bench publishes no evaluator code that fixes another rule.
    """
    item = judge_item(doc, response)
    record: dict[str, Any] = {"id": str(doc_id_of(doc)), "task": item["task"], "answer_text": item["answer_text"]}
    try:
        if judge is None:
            judge = get_judge(JUDGE_RUBRIC)
        verdict = judge.score(item)
    except Exception as exc:  # JudgeUnavailableError, JudgeNotConfiguredError, anything else
        message = f"{type(exc).__name__}: {exc}"
        _warn_once(
            type(exc).__name__,
            f"ODI-Bench open-ended: judge failed ({message}); such items are not scored and are counted in "
            f"judge_failures. Re-run (e.g. --model replay) once the judge works.",
        )
        record.update(failed=True, reason=f"judge_failed:{message}"[:500], judge=None, cached=False)
        return record
    record.update(
        failed=False,
        reason=verdict.reason,
        judge=verdict.judge,
        rubric=verdict.rubric,
        rubric_version=verdict.rubric_version,
        cached=bool(verdict.cached),
        judge_reply=verdict.raw_reply,
        fallback=verdict.judge == FALLBACK_JUDGE,
    )
    if verdict.reason != UNPARSED_REASON:
        record["score"] = float(verdict.score)
    return record


def process_results_open(doc: dict, results: list) -> dict[str, Any]:
    record = _recorded(score_open(doc, _first_text(results)), doc, "open")
    return {
        "judge_score": record,
        "judge_failures": record,
        "judge_unparsed": record,
        "judge_cache_hits": record,
        "judge_fallback_share": record,
    }


# what a run of these tasks records about its judge and settings (exported by utils.py, read by name:
# lmms_spatial.conditions.needs_of): the open-ended tasks ask an LLM judge; every task's run options include the
# API image rule
TASK_NEEDS = TaskNeeds(judge={process_results_open.__name__: JUDGE_RUBRIC}, options=options_in_effect)


# ---------------------------------------------------------------------------------------
# aggregations
# ---------------------------------------------------------------------------------------


def aggregate_accuracy(records: list[dict]) -> float:
    return odi.mean_score(records)


def aggregate_mean(values: list[float]) -> float:
    return odi.mean(values)


def _answered(records: list[dict]) -> list[dict]:
    """Records the judge answered (scored or unreadable); judge failures excluded."""
    return [r for r in records if not r.get("failed")]


def aggregate_judge_score(records: list[dict]) -> float:
    answered = _answered(records)
    judges = sorted({f"{r.get('judge')} ({r.get('rubric')}@{r.get('rubric_version')})" for r in answered})
    failed, unparsed = odi.count_where(records, "failed"), aggregate_unparsed(records)
    if records:
        logger.info(
            f"ODI-Bench open-ended ({records[0].get('task')}): judged by {', '.join(judges) or 'nobody'}; "
            f"{len(odi.scored(records))} scored, {failed} judge failures, {unparsed} verdicts unreadable"
        )
    return odi.mean_score(records)


def aggregate_failures(records: list[dict]) -> int:
    return odi.count_where(records, "failed")


def aggregate_unparsed(records: list[dict]) -> int:
    """Verdicts the judge wrote that no rule could read (left out of ``judge_score``)."""
    return sum(1 for r in _answered(records) if r.get("reason") == UNPARSED_REASON)


def aggregate_cache_hits(records: list[dict]) -> int:
    return sum(1 for r in _answered(records) if r.get("cached"))


def aggregate_fallback_share(records: list[dict]) -> float:
    """Share of scored answers scored by the rule-based fallback (``LMMS_SPATIAL_JUDGE=none``): 1.0 = no LLM judge."""
    return odi.mean(1.0 if r.get("fallback") else 0.0 for r in odi.scored(records))


def group_sum(metrics: list, sizes: list, weight_by_size: bool = False) -> float:
    """Group aggregation of counts (judge failures, ...): the sum over the subtasks."""
    return float(sum(m for m in metrics if isinstance(m, (int, float))))
