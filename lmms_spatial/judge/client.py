"""The judge: rubric prompts -> OpenAI-compatible chat completions -> cached verdicts.

One :class:`Judge` per (rubric, config), shared by every thread of a process through
:func:`get_judge`. Design points:

* **Lazy.** Constructing a judge reads no key and opens nothing; the ``openai`` client (and
  the cache database) are created on the first item that needs them, so task modules can
  build judges at import time and ``LMMS_SPATIAL_JUDGE=none`` runs never import ``openai``.
* **Cached.** The cache key is the sha256 of the judge model, rubric name and version, the
  exact messages and the sampling parameters (:meth:`Judge.cache_key`); a finished run is
  re-scored for free, an interrupted one resumes where it stopped.
* **Bounded concurrency.** A semaphore caps requests in flight at ``config.concurrency`` per
  judge, whether they come from :meth:`Judge.score_many`'s thread pool or from lmms-eval's
  ``process_results`` threads; identical requests in flight at once are sent only once.
* **Retries** (``tenacity``). 429 / 408 / 409 / 5xx, timeouts and connection errors are retried with
  exponential backoff (``backoff_base * 2**attempt``, capped at ``backoff_max``, times
  ``1 + jitter * U[0, 1)`` from a per-judge RNG seeded with ``config.seed``, and at least a
  429's ``Retry-After``). When retries run out — or the endpoint refuses the request (401,
  403, 404, 400) — :class:`JudgeUnavailableError` names the base URL and the model: a run
  never turns an unreachable judge into zeros. After an outage, uncached items fail at once
  for ``config.unavailable_cooldown`` seconds rather than each waiting through the retries. An
  outage is a fact about the endpoint, so every judge of the process that sends to the same base
  URL (one per rubric: ODI open answers, OSR negatives, MMSI diagnosis) shares it: a run with its
  judge server down waits through the retries once, not once per rubric.
* **Malformed responses** (an HTTP 200 whose body is HTML, truncated JSON, no ``choices`` or no
  message content: a proxy or server fault, not a verdict) are retried like a 5xx and, when
  retries run out, raise :class:`JudgeUnavailableError` naming the URL: counted as a judge
  failure, never scored, never cached.
* **Secrets**: the API key is redacted from every message we raise or record, also when the
  server echoes it in an error body.
* **Unparsable replies** are re-asked ``config.parse_retries`` times (the bad reply and the
  rubric's re-ask message appended to the conversation); then the verdict has reason
  ``judge_unparsed`` (score 0), is counted in :attr:`JudgeStats.unparsed` (the first such reply kept
  as :attr:`JudgeStats.example_unparsed`) and cached like any verdict. What it counts for is the
  task's rule: ODI-Bench leaves it out of its means, OSR-Bench keeps its official evaluator's 0.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from lmms_spatial import run_state
from lmms_spatial.conditions import FALLBACK_JUDGE, UNPARSED_REASON  # the names score records carry
from lmms_spatial.metrics.rubrics import Rubric, UnparsedReply, get_rubric

from .cache import CacheEntry, VerdictCache
from .config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, JudgeConfig
from .errors import JudgeNotConfiguredError, JudgeUnavailableError
from .stats import JudgeStats

RETRY_STATUS = frozenset({408, 409, 425, 429})
_THINK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)


class _Skipped(Exception):
    """An item of :meth:`Judge.score_many` not started because an earlier one failed."""


@dataclass(frozen=True)
class Verdict:
    """One judged item. ``judge`` is the model name, or ``"none (rule-based fallback)"``."""

    score: float
    reason: str
    raw_reply: str | None
    judge: str
    rubric: str
    rubric_version: str
    cached: bool
    label: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for per-sample logs."""
        out = asdict(self)
        out["details"] = dict(self.details)
        return out


def strip_reasoning(reply: str) -> str:
    """Drop ``<think>...</think>`` blocks (reasoning judges) before parsing; raw replies keep them."""
    text = _THINK.sub("", reply)
    if "</think>" in text:  # an opening tag swallowed by the chat template
        text = text.rsplit("</think>", 1)[1]
    return text.strip()


class MalformedResponse(Exception):
    """The endpoint answered 200 with something that is not a chat completion."""


def reply_text(response: Any) -> str:
    """The completion's text; :class:`MalformedResponse` when the body is no chat completion.

    An empty string is a legitimate (empty) reply; a body without ``choices``, without a message
    or with a non-text content is a protocol fault (an HTML error page, a proxy's stub).
    """
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        shown = response if isinstance(response, str) else type(response).__name__
        raise MalformedResponse(f"no choices in the response ({str(shown)[:120]!r})")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if not isinstance(content, str):
        raise MalformedResponse(f"no message content in the first choice ({type(content).__name__})")
    return content


def _is_retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, (MalformedResponse, json.JSONDecodeError, openai.APIResponseValidationError)):
        return True  # a body that is no completion: a transient proxy / server fault
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUS or exc.status_code >= 500
    return False


def _pause(seconds: float) -> None:
    """The wait between two attempts (a module function, so a test can record the waits instead of sleeping)."""
    time.sleep(seconds)


def _retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    value = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _sendable(value: Any) -> Any:
    """``value`` with every text encodable as UTF-8: a lone surrogate (models do emit them in replies) becomes
    U+FFFD. Without this the request cannot be sent at all and a working judge fails the item; texts without
    surrogates are unchanged (so are their cache keys)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, list):
        return [_sendable(v) for v in value]
    if isinstance(value, dict):
        return {k: _sendable(v) for k, v in value.items()}
    return value


# the end of every "judge unavailable" message: the two ways on
_UNAVAILABLE_FIX = (
    f"Check that the server is up and {ENV_BASE_URL} / {ENV_API_KEY}, or set {ENV_MODEL}=none to score with the "
    "rule-based fallback."
)


class Judge:
    """Scores items with one rubric. Thread-safe; see the module docstring."""

    def __init__(self, rubric: str | Rubric, config: JudgeConfig | None = None) -> None:
        self.rubric = get_rubric(rubric)
        self.config = config if config is not None else JudgeConfig.from_env()
        self.judge_name = FALLBACK_JUDGE if self.config.is_none else (self.config.model or "<not configured>")
        self.stats = JudgeStats(self.judge_name, self.rubric.name, self.rubric.version)
        self._lock = threading.Lock()
        self._client: Any = None
        self._cache: VerdictCache | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._semaphore = threading.BoundedSemaphore(self.config.concurrency)
        self._inflight: dict[str, Future[Verdict]] = {}
        self._rng = random.Random(self.config.seed)

    def __repr__(self) -> str:
        return f"Judge(rubric={self.rubric.name!r}@{self.rubric.version}, judge={self.judge_name!r})"

    # -- requests and keys ---------------------------------------------------------------

    def request_for(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """The chat-completion request for ``item`` (model, messages, sampling parameters)."""
        self.rubric.check_item(item)
        messages = _sendable(self.rubric.build_messages(item))
        request: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if self.config.temperature is not None:
            request["temperature"] = self.config.temperature
        max_tokens = self.config.max_tokens if self.config.max_tokens is not None else self.rubric.max_tokens
        if max_tokens:  # 0 = let the endpoint decide (reasoning models reject max_tokens)
            request["max_tokens"] = max_tokens
        return request

    def cache_key(self, request: Mapping[str, Any]) -> str:
        """sha256 over judge model, rubric name + version, exact messages and sampling parameters."""
        payload = {
            "judge_model": request["model"],
            "rubric": self.rubric.name,
            "rubric_version": self.rubric.version,
            "messages": request["messages"],
            "sampling": {k: v for k, v in request.items() if k not in ("model", "messages")},
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    # -- lazily built resources --------------------------------------------------------

    def _get_cache(self) -> VerdictCache | None:
        directory = self.config.resolved_cache_dir
        if directory is None:
            return None
        if self._cache is None:
            with self._lock:
                if self._cache is None:
                    self._cache = VerdictCache(directory)
        return self._cache

    def _get_client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import openai

                    self._client = openai.OpenAI(
                        base_url=self.config.base_url,
                        api_key=self.config.api_key or "EMPTY",
                        timeout=self.config.timeout,
                        max_retries=0,  # retries are ours: counted, with our backoff and error message
                    )
        return self._client

    def _get_executor(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        self.config.concurrency, thread_name_prefix="lmms-spatial-judge"
                    )
        return self._executor

    def close(self) -> None:
        """Release the thread pool, HTTP client and cache connections (a later call rebuilds them)."""
        with self._lock:
            executor, self._executor = self._executor, None
            client, self._client = self._client, None
            cache, self._cache = self._cache, None
        if executor is not None:
            executor.shutdown(wait=True)
        if client is not None:
            client.close()
        if cache is not None:
            cache.close()

    # -- scoring -----------------------------------------------------------------------

    def _verdict(self, entry: CacheEntry, *, cached: bool) -> Verdict:
        return Verdict(
            score=entry.score,
            reason=entry.reason,
            raw_reply=entry.raw_reply,
            judge=self.judge_name,
            rubric=self.rubric.name,
            rubric_version=self.rubric.version,
            cached=cached,
            label=entry.label,
            details=entry.details,
        )

    def _count(self, verdict: Verdict) -> Verdict:
        if verdict.reason == UNPARSED_REASON:
            self.stats.note_unparsed(verdict.raw_reply)
        self.stats.add(
            items=1,
            cache_hits=int(verdict.cached),
            unparsed=int(verdict.reason == UNPARSED_REASON),
            fallback=int(self.config.is_none),
        )
        return verdict

    def score(self, item: Mapping[str, Any]) -> Verdict:
        """Judge one item (cache first). Raises :class:`JudgeUnavailableError` if the judge is unreachable."""
        if self.config.is_none:
            self.rubric.check_item(item)
            result = self.rubric.fallback(item)
            entry = CacheEntry(result.score, result.reason, None, result.label, dict(result.details))
            return self._count(self._verdict(entry, cached=False))
        if self.config.model is None:
            raise JudgeNotConfiguredError(
                f"no judge model configured for rubric {self.rubric.name!r}: set {ENV_MODEL} to a model name served "
                f"at {self.config.display_base_url} (or pass model=...), or to 'none' for the rule-based fallback",
                base_url=self.config.display_base_url,
                model=None,
            )
        request = self.request_for(item)
        key = self.cache_key(request)
        cache = self._get_cache()
        if cache is not None and (entry := cache.get(key)) is not None:
            return self._count(self._verdict(entry, cached=True))

        with self._lock:
            pending = self._inflight.get(key)
            if pending is None:
                pending = self._inflight[key] = Future()
                owner = True
            else:
                owner = False
        if not owner:  # the same request is already on its way: share its verdict
            return self._count(replace(pending.result(), cached=True))
        try:
            verdict = self._score_uncached(request, item, key, cache)
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        else:
            pending.set_result(verdict)
        finally:
            with self._lock:
                self._inflight.pop(key, None)
        return self._count(verdict)

    def _score_uncached(
        self, request: dict[str, Any], item: Mapping[str, Any], key: str, cache: VerdictCache | None
    ) -> Verdict:
        if cache is not None and (entry := cache.get(key)) is not None:  # finished while we registered
            return self._verdict(entry, cached=True)
        entry = self._ask(request, item)
        if cache is not None:
            meta = {"judge_model": self.judge_name, "rubric": self.rubric.name, "rubric_version": self.rubric.version}
            if not cache.put(key, entry, request=request, **meta):
                stored = cache.get(key)  # another process stored it first: everyone reports that one
                if stored is not None:
                    return self._verdict(stored, cached=True)
        return self._verdict(entry, cached=False)

    def _ask(self, request: dict[str, Any], item: Mapping[str, Any]) -> CacheEntry:
        """Send, parse, re-ask up to ``parse_retries`` times; ``judge_unparsed`` after that."""
        messages = list(request["messages"])
        replies: list[str] = []
        error = ""
        for _ in range(1 + self.config.parse_retries):
            reply = self._complete({**request, "messages": messages})
            replies.append(reply)
            try:
                result = self.rubric.parse_reply(strip_reasoning(reply), item)
            except UnparsedReply as exc:
                error = str(exc)
                messages = [
                    *request["messages"],
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": self.rubric.reask_message},
                ]
                continue
            details = dict(result.details)
            if len(replies) > 1:
                details["earlier_replies"] = replies[:-1]
            return CacheEntry(result.score, result.reason, reply, result.label, details)
        details = {"parse_error": error, "attempts": len(replies), "earlier_replies": replies[:-1]}
        return CacheEntry(0.0, UNPARSED_REASON, replies[-1], None, details)

    def _wait(self, state: Any) -> float:
        """Seconds before the next attempt (tenacity ``wait``): exponential, capped, seeded jitter, Retry-After.

        ``backoff_base * 2**attempt`` capped at ``backoff_max`` (tenacity's ``wait_exponential``), times
        ``1 + jitter * U[0, 1)`` from this judge's RNG (seeded: the same run waits the same), and at least
        a 429's ``Retry-After`` (itself capped at ``backoff_max``).
        """
        import tenacity

        delay = tenacity.wait_exponential(multiplier=self.config.backoff_base, max=self.config.backoff_max)(state)
        with self._lock:
            delay *= 1.0 + self.config.jitter * self._rng.random()
        hinted = _retry_after(state.outcome.exception())
        if hinted is not None:
            delay = max(delay, min(hinted, self.config.backoff_max))
        return delay

    def _redact(self, text: str) -> str:
        """``text`` without the API key (servers echo it in error bodies)."""
        key = self.config.api_key
        return text.replace(key, "[redacted]") if key and len(key) >= 4 else text

    def _complete(self, request: dict[str, Any]) -> str:
        """One chat completion with retries; the reply text ("" if the endpoint sent an empty one)."""
        import openai
        import tenacity

        down = run_state.STATE.judges.outages.get(self._endpoint)
        if down is not None and time.monotonic() - down[0] < self.config.unavailable_cooldown:
            ago = time.monotonic() - down[0]
            raise JudgeUnavailableError(
                f"{down[1]} [judge marked unavailable {ago:.0f} s ago; not retrying for "
                f"{self.config.unavailable_cooldown:g} s]",
                base_url=down[1].base_url,
                model=down[1].model,
            ) from down[1]
        client = self._get_client()
        base_url = str(client.base_url)
        attempts = self.config.max_retries + 1

        def send() -> str:
            with self._semaphore:
                response = client.chat.completions.create(**request)
            return reply_text(response)

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception(_is_retryable),
            before_sleep=lambda _state: self.stats.add(retries=1),  # a retry is counted when it is decided
            sleep=_pause,
            reraise=True,  # the last attempt's own exception, not tenacity.RetryError
        )
        try:
            text = retrying(send)
        except Exception as exc:
            if _is_retryable(exc):  # every attempt failed
                raise self._mark_unavailable(exc, attempts, base_url) from None  # the cause's text may hold the key
            if isinstance(exc, openai.APIStatusError):
                if exc.status_code in (401, 403):
                    run_state.STATE.judges.refused_keys[base_url] = exc.status_code
                raise JudgeUnavailableError(
                    self._redact(
                        f"judge endpoint {base_url} refused the request for model {self.config.model!r} "
                        f"with HTTP {exc.status_code}: {exc.message}"
                        + (f" (set {ENV_API_KEY} to a key it accepts)" if exc.status_code in (401, 403) else "")
                    ),
                    base_url=base_url,
                    model=self.config.model,
                ) from None  # the cause's text may hold the key
            raise
        self.stats.add(judge_calls=1)
        run_state.STATE.judges.outages.pop(self._endpoint, None)
        return text

    def _mark_unavailable(self, last: BaseException, attempts: int, base_url: str) -> JudgeUnavailableError:
        """The error after the last attempt (redacted text of ``last`` in it); starts the cooldown."""
        error = JudgeUnavailableError(
            self._redact(
                f"judge unavailable: {attempts} attempt(s) to reach {base_url} with model {self.config.model!r} "
                f"failed (last error: {type(last).__name__}: {last}). {_UNAVAILABLE_FIX}"
            ),
            base_url=base_url,
            model=self.config.model,
        )
        run_state.STATE.judges.outages[self._endpoint] = (time.monotonic(), error)
        return error

    @property
    def _endpoint(self) -> str:
        return _endpoint(self.config.base_url)

    def score_many(
        self, items: Iterable[Mapping[str, Any]], *, progress: bool | None = None, desc: str | None = None
    ) -> list[Verdict]:
        """Judge many items, ``config.concurrency`` at a time, with a tqdm bar; results in input order.

        The first :class:`JudgeUnavailableError` cancels the items not yet started and is raised;
        verdicts finished before it are cached, so a rerun only asks for the rest.
        """
        items = list(items)
        if not items:
            return []
        if self.config.is_none:
            return [self.score(item) for item in items]
        from tqdm.auto import tqdm

        show = self.config.progress if progress is None else progress
        abort = threading.Event()

        def run(item: Mapping[str, Any]) -> Verdict:
            if abort.is_set():  # an earlier item failed: do not start new requests
                raise _Skipped()
            try:
                return self.score(item)
            except BaseException:
                abort.set()  # set in the worker, before it can pick up the next item
                raise

        executor = self._get_executor()
        futures = [executor.submit(run, item) for item in items]
        label = desc or f"judge {self.rubric.name} ({self.judge_name})"
        try:
            with tqdm(total=len(items), desc=label, disable=not show, unit="item") as bar:
                for done in as_completed(futures):
                    if isinstance(done.exception(), _Skipped):
                        continue
                    done.result()
                    bar.update(1)
        except BaseException as exc:
            abort.set()
            for future in futures:
                future.cancel()
            if isinstance(exc, Exception):  # let requests already on the wire finish (and be cached)
                wait(futures)
            raise
        return [future.result() for future in futures]


# the shared judges (get_judge): one client, connection pool and concurrency limit per rubric and config in the
# process. What their servers said (an outage, a refused key) is in the run state (run_state.JudgeEndpoints,
# shared by every judge sending there; single-key reads and writes of a dict are atomic: no lock needed).
_JUDGES: dict[tuple[Rubric, JudgeConfig], Judge] = {}
_JUDGES_LOCK = threading.Lock()


def refused_keys() -> dict[str, int]:
    """The endpoints that refused the API key of a judged item in this process, with the HTTP status."""
    return dict(run_state.STATE.judges.refused_keys)


def _endpoint(base_url: str | None) -> str:
    """What an outage is a fact about: the configured base URL ("" = the openai default)."""
    return base_url or ""


def forget_outage(base_url: str | None) -> None:
    """Forget an outage seen at ``base_url``: another server listens there now (the tests' fake judge server,
    ``tools.fake_judge``, calls this when it starts on a port an earlier one used)."""
    run_state.STATE.judges.outages.pop(_endpoint(base_url), None)


def note_unreachable(config: JudgeConfig, what: str) -> None:
    """Record that ``config``'s endpoint did not answer just now (the run's probe before generation, ``what``
    happened): for the cooldown that follows, its judges fail uncached items at once, as after an outage
    seen while judging, instead of waiting through the retries for a server the run has already named."""
    error = JudgeUnavailableError(
        f"judge unavailable: {what} when the run started. {_UNAVAILABLE_FIX}",
        base_url=config.display_base_url,
        model=config.model,
    )
    run_state.STATE.judges.outages[_endpoint(config.base_url)] = (time.monotonic(), error)


def get_judge(rubric: str | Rubric, config: JudgeConfig | None = None, **overrides: Any) -> Judge:
    """The shared judge for ``rubric`` with ``config`` (default: :meth:`JudgeConfig.from_env` with ``overrides``).

    Calls with the same rubric and the same resolved config return the same object, so the
    threads and tasks of a process share one client, one cache connection pool, one
    concurrency limit and one :class:`JudgeStats`.
    """
    resolved_rubric = get_rubric(rubric)
    if config is None:
        config = JudgeConfig.from_env(**overrides)
    elif overrides:
        config = replace(config, **overrides)
    key = (resolved_rubric, config)
    with _JUDGES_LOCK:
        judge = _JUDGES.get(key)
        if judge is None:
            judge = _JUDGES[key] = Judge(resolved_rubric, config)
        return judge


def reset_judges() -> None:
    """Close and forget every shared judge and every outage seen (tests; long-lived processes changing settings)."""
    with _JUDGES_LOCK:
        judges = list(_JUDGES.values())
        _JUDGES.clear()
        run_state.STATE.judges = run_state.JudgeEndpoints()
    for judge in judges:
        judge.close()
