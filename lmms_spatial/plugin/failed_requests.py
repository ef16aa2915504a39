"""A failed request is not an answer: never kept, never scored as the model's, counted, and asked again.

lmms-eval's API model classes turn a request that failed after their own retries into a reply text (read in
lmms-eval 0.7.3's ``models/``): ``[LMMS_EVAL_REQUEST_FAILED after 5 retries] <error>`` (``openai``, the chat
``openai``, ``async_openai``, ``gemini``), ``[LMMS_EVAL_BUDGET_EXCEEDED]`` (a request left when the run's
token budget ran out), ``[GENERATION_FAILED] <error>`` and ``[ERROR] <why>`` (the generation-API and world-model
classes). lmms-eval's response cache keeps them like any reply, and the scorer counts them wrong. In a run of
ours (:mod:`lmms_spatial.plugin.run`):

- such a reply is never written to the answer store (:mod:`.resume`): not stored in SQLite, logged in the audit
  log without a cache key (so no read-back puts it back), and one an earlier version stored is not served;
- it is not scored: the document's record is ``{"lmms_spatial_error": "request failed: <reply>"}`` (no metric,
  the reply kept in the sample), so no mean counts it as a wrong answer;
- the run counts them per task (``requests_failed`` in ``results["lmms_spatial"]``; counted from the records
  lmms-eval gathered from every rank) and exits 1 with one line naming how many, the endpoint and the error;
  the same command asks exactly them again (nothing else is missing from the store);
- a server that is down stops the run early: once :data:`STOP_AFTER` requests in a row failed (checked when a
  chunk of ``LMMS_SPATIAL_SAVE_EVERY`` requests returns, so at most one chunk is spent on a dead server) the
  run ends with one line, the answers it got kept.
"""

from __future__ import annotations

import os
from typing import Any

from lmms_spatial import run_state

MARKERS = ("[LMMS_EVAL_REQUEST_FAILED", "[LMMS_EVAL_BUDGET_EXCEEDED]", "[GENERATION_FAILED]", "[ERROR] ")
PREFIX = "request failed: "  # the start of a failed document's lmms_spatial_error
STOP_AFTER = 8  # consecutive failed requests after which a chunked run stops: the server is down
ENDPOINT_VARIABLES = ("OPENAI_API_BASE", "AZURE_OPENAI_API_BASE")


def failure_text(response: Any) -> str | None:
    """The reply text when ``response`` is a model class's failure marker (a string, a ``GenerationResult``, or
    a list holding one), else ``None``."""
    if isinstance(response, (list, tuple)):
        for item in response:
            found = failure_text(item)
            if found is not None:
                return found
        return None
    text = getattr(response, "text", response)
    if isinstance(text, str) and text.lstrip().startswith(MARKERS):
        return text.strip()
    return None


def error_of(text: str) -> str:
    """The error a marker carries (``Connection error.``), else the marker itself."""
    head, sep, rest = text.partition("] ")
    return rest.strip() if sep and rest.strip() else text


def record(text: str) -> dict[str, str]:
    """A failed document's record: no metric, only why."""
    from lmms_spatial.plugin.failures import ERROR_KEY

    return {ERROR_KEY: PREFIX + " ".join(text.split())[:300]}


def counted(sample_metrics: Any) -> tuple[int, str | None]:
    """How many documents of one task's gathered records failed their request, and the first one's reply."""
    from lmms_spatial.plugin.failures import ERROR_KEY

    most, first = 0, None
    for (metric, _filter), items in dict(sample_metrics or {}).items():
        if metric != ERROR_KEY:
            continue
        failed = [item for item in items if isinstance(item, str) and item.startswith(PREFIX)]
        if len(failed) > most:
            most, first = len(failed), failed[0][len(PREFIX) :]
    return most, first


def note_task(task: str, sample_metrics: Any) -> None:
    """Called as a task's records are aggregated (rank 0, all ranks gathered): the run state's count for it."""
    number, first = counted(sample_metrics)
    run_state.STATE.failed_requests[task] = (number, first)


def counts() -> dict[str, int]:
    return {task: number for task, (number, _) in run_state.STATE.failed_requests.items()}


def reset() -> None:
    """Forget the counts (an evaluation of ours starts)."""
    run_state.STATE.failed_requests = {}


def endpoint(lm: Any) -> str:
    """Where the model's requests went: the client's base URL, a ``base_url`` argument, the environment, or the
    model's name."""
    client = getattr(lm, "client", None)
    for value in (getattr(client, "base_url", None), getattr(lm, "base_url", None)):
        if value:
            return str(value).rstrip("/")
    for name in ENDPOINT_VARIABLES:
        if os.environ.get(name):
            return f"{os.environ[name].rstrip('/')} ({name})"
    for attribute in ("model_version", "model_name", "model"):
        value = getattr(lm, attribute, None)
        if isinstance(value, str) and value:
            return f"the {value} API"
    return f"the {type(lm).__name__} model's server"


def closing_line(lm: Any, documents: dict[str, int]) -> str | None:
    """The run's last line when requests failed; ``documents``: each task's documents evaluated."""
    failed = {task: n for task, n in sorted(run_state.STATE.failed_requests.items()) if n[0]}
    if not failed:
        return None
    total = sum(n for n, _ in failed.values())
    first = next(reply for _, reply in failed.values() if reply)
    per_task = ", ".join(f"{task} {n} of {documents.get(task, '?')}" for task, (n, _) in failed.items())
    return (
        f"lmms-spatial: {total} requests to the model failed after its retries ({per_task}) at {endpoint(lm)}: "
        f"{error_of(first or '')}; they were neither kept nor scored (the numbers above leave them out): "
        "run the same command again to ask only them"
    )


def stop(lm: Any, in_a_row: int, last: str, kept: str | None) -> BaseException:
    """The exception that ends a run whose server stopped answering: its message is the run's last line."""
    from lmms_spatial.plugin.failures import RunRefused

    where = f"; the answers it gave are kept in {kept}" if kept else ""
    return RunRefused(
        f"the model's server is not answering: the last {in_a_row} requests failed after its retries at "
        f"{endpoint(lm)}: {error_of(last)}{where}; start it (or fix the address) and run the same command again: "
        "it asks only the missing answers"
    )
