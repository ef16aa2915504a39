"""A loopback OpenAI-compatible chat-completions server for tests and benchmarks.

:class:`FakeJudgeServer` listens on ``127.0.0.1`` (a free port), answers
``POST /v1/chat/completions`` with replies computed by a handler function of the request
JSON, and records every request and the largest number handled at once. Handlers return
the reply text, or a :class:`FakeReply` to script a status code, a delay (to trigger client
timeouts) or a malformed body. Nothing here is used by the judge itself: it is workshop code (``tools/``, not
installed), shared by the tests and :mod:`tools.bench_judge`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "FakeJudgeServer",
    "FakeReply",
    "last_user_content",
    "osr_item",
    "osr_reply",
    "score_items_in_process",
]


@dataclass
class FakeReply:
    """A scripted response: ``content`` with ``status`` 200, or an error status; ``delay`` seconds
    before answering; ``body`` (bytes) replaces the whole response body when given."""

    content: str | None = None
    status: int = 200
    delay: float = 0.0
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[dict[str, Any]], "FakeReply | str"]


def last_user_content(request: Mapping[str, Any]) -> str:
    """The text of the last user message of a chat-completions request."""
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content", "")
            if isinstance(content, list):
                return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content)
    return ""


_GT = re.compile(r"^Ground Truth: (.*)$", re.MULTILINE)
_MODEL = re.compile(r"^Model Answer: (.*)$", re.MULTILINE)


def osr_reply(request: Mapping[str, Any]) -> str:
    """A judge for ``osr_negative`` prompts: score 1 iff the model answer equals the ground truth
    (case-insensitive). Lets tests know the right verdict of every item by hand."""
    text = last_user_content(request)
    for message in request.get("messages", []):
        if message.get("role") == "user" and "Ground Truth:" in str(message.get("content", "")):
            text = str(message["content"])
            break
    gt, model = _GT.search(text), _MODEL.search(text)
    if gt is None or model is None:
        return "I cannot evaluate this."
    score = int(gt.group(1).strip().lower() == model.group(1).strip().lower())
    return json.dumps({"score": score, "confidence": "high"})


def osr_item(i: int, *, correct: bool | None = None) -> dict[str, Any]:
    """A distinct ``osr_negative`` relative-distance item; by default every third response is wrong,
    so under :func:`osr_reply` item ``i`` scores ``0.0`` iff ``i % 3 == 0``."""
    ok = (i % 3 != 0) if correct is None else correct
    return {
        "skill": "relative_distance",
        "question": f"Which object is the closest to lamp number {i}?",
        "answer": f"chair{i}",
        "response": f"chair{i}" if ok else "table",
    }


class FakeJudgeServer:
    """Threaded HTTP server speaking the chat-completions protocol on 127.0.0.1.

    ``handler(request_json)`` gives each reply (default :func:`osr_reply`); ``latency`` is
    added before every reply; with ``api_key`` every request not sent with that key is refused with HTTP 401,
    as ``vllm serve --api-key`` does. Use as a context manager or call :meth:`start` / :meth:`stop`.
    """

    def __init__(self, handler: Handler | None = None, *, latency: float = 0.0, model: str = "fake-judge",
                 api_key: str | None = None) -> None:  # fmt: skip
        self.handler: Handler = handler or osr_reply
        self.api_key = api_key
        self.latency = latency
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeJudgeServer:
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; without TCP_NODELAY, Nagle's algorithm
            # and the client's delayed ACK add ~40 ms to every keep-alive request.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def _refused(self) -> bool:
                if owner.api_key is None or self.headers.get("Authorization") == f"Bearer {owner.api_key}":
                    return False
                self._send(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})
                return True

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                if self._refused():
                    return
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": owner.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self._refused():
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                try:
                    request = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
                    return
                owner._enter(request)
                try:
                    reply = owner.handler(request)
                    if isinstance(reply, str):
                        reply = FakeReply(content=reply)
                    delay = owner.latency + reply.delay
                    if delay > 0:
                        time.sleep(delay)
                    if reply.body is not None:
                        self._send_bytes(reply.status, reply.body, reply.headers)
                    elif reply.status != 200:
                        message = reply.content or f"scripted HTTP {reply.status}"
                        self._send(reply.status, {"error": {"message": message, "type": "server_error"}}, reply.headers)
                    else:
                        self._send(200, owner.completion(request, reply.content or ""), reply.headers)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    self.close_connection = True
                finally:
                    owner._leave()

            def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
                self._send_bytes(status, json.dumps(payload).encode("utf-8"), headers)

            def _send_bytes(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
                self.send_response(status)
                if "Content-Type" not in (headers or {}):
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

        class _Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 128

            def handle_error(self, request: Any, client_address: Any) -> None:  # quiet on client aborts
                pass

        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-judge", daemon=True
        )
        self._thread.start()
        from lmms_spatial.judge.client import forget_outage

        forget_outage(self.base_url)  # an outage seen earlier at this port was another server's
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeJudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- facts for assertions ----------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def reset_counts(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    def _enter(self, request: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def completion(self, request: Mapping[str, Any], content: str) -> dict[str, Any]:
        """A chat.completion response body carrying ``content``."""
        with self._lock:
            n = len(self.requests)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in request.get("messages", []))
        completion_tokens = len(content.split())
        return {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def score_items_in_process(
    rubric: str, config_overrides: Mapping[str, Any], items: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Score ``items`` in a fresh process (a ``multiprocessing`` target; must be importable: a spawned child
    is given the parent's ``sys.path``, where pytest's ``pythonpath`` put the repository root).

    Returns the verdicts as dicts plus this process's stats under ``"stats"`` in the last entry.
    """
    from lmms_spatial.judge.client import Judge
    from lmms_spatial.judge.config import JudgeConfig

    judge = Judge(rubric, JudgeConfig(**dict(config_overrides)))
    try:
        verdicts = [v.as_dict() for v in judge.score_many(items, progress=False)]
        return [*verdicts, {"stats": judge.stats.as_dict()}]
    finally:
        judge.close()
