"""A fake Anthropic Messages API server for tests, bound to 127.0.0.1 only.

The real ``anthropic`` SDK talks to it over loopback HTTP via ``base_url``, so
no HTTP-mocking library is needed (the SDK uses ``httpx2``, which those
libraries do not patch). Nothing here ever touches the network beyond
loopback.

Typical use::

    with FakeAnthropicServer() as server:
        server.enqueue(FakeAnthropicServer.reply_text("hello"))
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url)
        ...

As a pytest fixture (in ``conftest.py``)::

    from fake_anthropic import fake_anthropic_server  # tests/ is on sys.path
    fake_api = pytest.fixture(name="fake_api")(fake_anthropic_server)

SDK retry timing (anthropic 2.x, ``_base_client.py``): between retries the
client sleeps for ``retry-after-ms`` (milliseconds) or else ``retry-after``
(seconds, float allowed, or an HTTP date) when the value is > 0; otherwise it
backs off exponentially from 0.5 s. :meth:`FakeAnthropicServer.reply_error`
therefore sends ``retry-after-ms: 1`` by default so retried tests stay fast.
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = [
    "BATCHES_PATH",
    "COUNT_TOKENS_PATH",
    "MESSAGES_PATH",
    "FakeAnthropicServer",
    "RecordedRequest",
    "Reply",
    "fake_anthropic_server",
    "server_sent_events",
]

MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
#: Message Batches: POST creates, GET ``/{id}`` retrieves, GET ``/{id}/results`` is JSONL.
BATCHES_PATH = "/v1/messages/batches"

#: Error ``type`` the real API uses for each HTTP status (used when
#: :meth:`FakeAnthropicServer.reply_error` is not given an explicit kind).
_ERROR_KIND_BY_STATUS: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_SLEEP_SLICE = 0.02  # seconds; granularity of delay / stop / disconnect checks
_message_ids = itertools.count(1)


@dataclass
class Reply:
    """One scripted HTTP response.

    ``body``: a dict is sent as JSON, a str is sent verbatim (e.g. to test
    malformed JSON), bytes are sent as they are (e.g. not UTF-8), ``None``
    sends an empty body. ``delay`` is slept (in slices, abandoned on server
    stop or client disconnect) before answering. ``drip``: when > 0, the whole
    response (status line, headers, body) is written one byte at a time, this
    many seconds apart — a server too slow to finish but never silent long
    enough for a per-read timeout. ``headers`` override the defaults
    (``content-type``, ``request-id``). ``endless``: after ``body``, the
    response goes on with spaces (no ``content-length``) until the client
    hangs up — an answer of unbounded size. ``declare_length``: the
    ``content-length`` sent (a lie: ``body`` is sent as it is).
    """

    status: int = 200
    body: dict[str, Any] | str | bytes | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    drip: float = 0.0
    endless: bool = False
    declare_length: int | None = None


@dataclass
class RecordedRequest:
    """A request as the fake server received it."""

    method: str
    path: str  # without query string
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON; the raw text if it was not JSON; None if empty
    query: str = ""  # raw query string, e.g. "beta=true"

    @property
    def api_key(self) -> str | None:
        """The credential sent, from ``x-api-key`` or ``authorization: Bearer``.

        anthropic 2.x sends ``api_key=`` as ``Authorization: Bearer <key>``;
        older SDKs sent ``x-api-key``. Accept either.
        """
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None


@dataclass
class FakeBatch:
    """A Message Batch the fake server holds: each request's result is decided when it is
    created; it reports ``in_progress`` to its first ``polls_in_progress`` retrievals."""

    id: str
    requests: list[dict[str, Any]]
    results: dict[str, dict[str, Any]]
    polls_left: int


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, owner: FakeAnthropicServer) -> None:
        self.owner = owner
        self._handler_threads: list[threading.Thread] = []
        self._threads_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Same as ThreadingMixIn.process_request, but remembers the thread so
        # stop() can briefly wait for handlers to close their sockets.
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            daemon=True,
            name="fake-anthropic-handler",
        )
        with self._threads_lock:
            self._handler_threads = [t for t in self._handler_threads if t.is_alive()]
            self._handler_threads.append(thread)
        thread.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Client went away / server stopping: nothing worth printing.
        pass

    def join_handlers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._threads_lock:
            threads = list(self._handler_threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "FakeAnthropic/1.0"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:  # BrokenPipe / ConnectionReset / timeouts: client went away
            self.close_connection = True

    def do_POST(self) -> None:
        self._dispatch()

    def do_GET(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_CONNECT(self) -> None:
        # A client told to use this server as its HTTPS proxy asks for a tunnel: recorded with
        # ``path`` "host:port" and refused (see FakeAnthropicServer._reply_for).
        self._dispatch()

    def _dispatch(self) -> None:
        owner = self.server.owner
        parts = urlsplit(self.path)
        path = self.path if self.command == "CONNECT" else parts.path
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        body: Any
        if not raw:
            body = None
        else:
            text = raw.decode("utf-8", errors="replace")
            try:
                body = json.loads(text)
            except ValueError:
                body = text
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = RecordedRequest(self.command, path, headers, body, parts.query)
        owner._record(request)

        reply = owner._reply_for(request)
        # One request per connection: keeps shutdown simple (no idle keep-alive
        # handler threads blocked reading the next request).
        self.close_connection = True
        if reply.delay > 0 and not self._wait(reply.delay):
            return  # server stopping or client gone: answer nothing

        if isinstance(reply.body, dict):
            payload = json.dumps(reply.body).encode("utf-8")
        elif isinstance(reply.body, str):
            payload = reply.body.encode("utf-8")
        elif isinstance(reply.body, bytes):
            payload = reply.body
        else:
            payload = b""
        out_headers: dict[str, str] = {
            "content-type": "application/json",
            "request-id": owner._new_request_id(),
        }
        for name, value in reply.headers.items():
            out_headers[name.lower()] = value
        out_headers["content-length"] = str(
            reply.declare_length if reply.declare_length is not None else len(payload)
        )
        out_headers["connection"] = "close"
        if reply.endless:
            del out_headers["content-length"]  # read until the connection closes

        if reply.drip > 0:
            self._drip(reply, out_headers, payload)
            return
        self.send_response(reply.status)
        for name, value in out_headers.items():
            self.send_header(name, value)
        self.end_headers()
        if payload:
            self.wfile.write(payload)
        self.wfile.flush()
        if reply.endless:
            self._endless()

    def _endless(self) -> None:
        """Spaces (valid between JSON tokens, and a JSONL line that never ends) until the
        client hangs up or the server stops."""
        chunk = b" " * 65536
        stop = self.server.owner._stop_event
        try:
            while not stop.is_set():
                self.wfile.write(chunk)
        except OSError:
            pass

    def _drip(self, reply: Reply, headers: dict[str, str], payload: bytes) -> None:
        """Write the response one byte at a time, ``reply.drip`` seconds apart."""
        head = f"HTTP/1.1 {reply.status} {self.responses.get(reply.status, ('',))[0]}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
        for byte in head.encode("latin-1") + payload:
            self.wfile.write(bytes([byte]))
            self.wfile.flush()
            if not self._wait(reply.drip):
                return  # server stopping or client gone

    def _wait(self, delay: float) -> bool:
        """Sleep ``delay`` seconds in slices; False if stopped or client left."""
        stop = self.server.owner._stop_event
        deadline = time.monotonic() + delay
        conn: socket.socket = self.connection
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            if stop.is_set():
                return False
            readable, _, _ = select.select([conn], [], [], min(_SLEEP_SLICE, remaining))
            if readable:
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":
                        return False  # orderly close by the client
                except OSError:
                    return False
                # Unexpected extra bytes (pipelining); just keep sleeping.
                time.sleep(min(_SLEEP_SLICE, max(0.0, deadline - time.monotonic())))


class FakeAnthropicServer:
    """Loopback fake of the Anthropic Messages API (``/v1/messages``,
    ``/v1/messages/count_tokens``) with per-path FIFO scripted replies."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Reply]] = {}
        self._stop_event = threading.Event()
        self._request_ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""
        #: Text answered to a Messages request (or a batch request's ``params``) when no reply
        #: is queued; None: "fake summary".
        self.answer: Callable[[Any], str] | None = None
        #: A batch request's result (``{"type": "succeeded", ...}``) from its ``custom_id`` and
        #: ``params``; None: succeeded with :attr:`answer`'s text.
        self.batch_result: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
        #: How many retrievals of a new batch answer ``in_progress`` before ``ended``.
        self.batch_polls_in_progress = 1
        #: What a batch's results URL answers, when set (a hostile server: not JSON, endless).
        self.results_reply: Reply | None = None
        #: What a look at a batch answers, when set (a hostile server: retry-after, a drip).
        self.poll_reply: Reply | None = None
        self.batches: dict[str, FakeBatch] = {}

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError("FakeAnthropicServer already started")
        self._stop_event.clear()
        server = _Server(self)
        host, port = server.server_address[:2]
        self.base_url = f"http://{host!s}:{port}"
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name="fake-anthropic-server",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; returns promptly even if a handler is mid-``delay``."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stop_event.set()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=2.0)
        server.join_handlers(timeout=1.0)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- scripting ---------------------------------------------------------

    def enqueue(self, *replies: Reply, path: str = MESSAGES_PATH) -> None:
        """Queue replies (FIFO) for ``path`` (query string ignored)."""
        key = urlsplit(path).path
        with self._lock:
            self._queues.setdefault(key, deque()).extend(replies)

    def pending(self, path: str = MESSAGES_PATH) -> int:
        """Number of scripted replies not yet consumed for ``path``."""
        with self._lock:
            return len(self._queues.get(urlsplit(path).path, ()))

    def requests_to(self, path: str) -> list[RecordedRequest]:
        """Recorded requests whose path (query ignored) equals ``path``."""
        key = urlsplit(path).path
        with self._lock:
            return [r for r in self.requests if r.path == key]

    @staticmethod
    def reply_text(
        text: str,
        *,
        model: str = "claude-fake",
        stop_reason: str = "end_turn",
        input_tokens: int = 10,
        output_tokens: int = 20,
    ) -> Reply:
        """A 200 Messages API response with a single text block."""
        return Reply(
            status=200,
            body={
                "id": f"msg_fake_{next(_message_ids):06d}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                },
            },
        )

    @staticmethod
    def reply_text_stream(
        text: str, *, model: str = "claude-fake", input_tokens: int = 10, output_tokens: int = 20
    ) -> Reply:
        """The same answer as :meth:`reply_text`, streamed the way the API answers a request
        with ``"stream": true`` (server-sent events: ``message_start``, one text block in one
        delta, ``message_delta`` with the stop reason and usage, ``message_stop``)."""
        body = FakeAnthropicServer.reply_text(
            text, model=model, input_tokens=input_tokens, output_tokens=0
        ).body
        assert isinstance(body, dict)
        message = {**body, "content": [], "stop_reason": None}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": message},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
            {"type": "message_stop"},
        ]
        return Reply(body=server_sent_events(events), headers={"content-type": "text/event-stream"})

    @staticmethod
    def reply_error(
        status: int,
        kind: str | None = None,
        message: str = "fake error",
        *,
        retry_after_ms: int | None = 1,
        retry_after: str | None = None,
        should_retry: bool | None = None,
        delay: float = 0.0,
    ) -> Reply:
        """An Anthropic-shaped error: ``{"type":"error","error":{...}}``.

        ``kind`` defaults to the API's error type for ``status`` (529 ->
        ``overloaded_error``, 429 -> ``rate_limit_error``, 500 -> ``api_error``
        ...; ``api_error`` if unknown). ``retry_after_ms`` (default 1 ms) sets
        the ``retry-after-ms`` header so SDK retries are near-instant; ``None``
        omits it (the SDK then backs off >= ~0.375 s). ``retry_after`` sets
        the ``retry-after`` header (seconds or an HTTP date) when given.
        ``x-should-retry`` is sent only if ``should_retry`` is not None.
        """
        headers: dict[str, str] = {}
        if retry_after_ms is not None:
            headers["retry-after-ms"] = str(retry_after_ms)
        if retry_after is not None:
            headers["retry-after"] = retry_after
        if should_retry is not None:
            headers["x-should-retry"] = "true" if should_retry else "false"
        return Reply(
            status=status,
            body={
                "type": "error",
                "error": {
                    "type": kind or _ERROR_KIND_BY_STATUS.get(status, "api_error"),
                    "message": message,
                },
            },
            delay=delay,
            headers=headers,
        )

    @staticmethod
    def batch_succeeded(text: str) -> dict[str, Any]:
        """A batch request's result that succeeded with ``text``."""
        body = FakeAnthropicServer.reply_text(text).body
        return {"type": "succeeded", "message": body}

    @staticmethod
    def batch_errored(kind: str = "invalid_request_error") -> dict[str, Any]:
        return {"type": "errored", "error": {"type": "error", "error": {"type": kind, "message": "fake"}}}

    @staticmethod
    def batch_expired() -> dict[str, Any]:
        return {"type": "expired"}

    @staticmethod
    def count_tokens_for(body: Any) -> int:
        """Deterministic fake token count the server reports for ``body``:
        ``max(1, len(compact sorted-key JSON of body) // 4)``."""
        compact = json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return max(1, len(compact) // 4)

    # -- internals (called from handler threads) ---------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _new_request_id(self) -> str:
        with self._lock:
            return f"req_fake_{next(self._request_ids):06d}"

    def _reply_for(self, request: RecordedRequest) -> Reply:
        """The reply to one request; a subclass serving more routes overrides this."""
        if request.method == "CONNECT":
            return Reply(status=403, body=f"fake server: no tunnel to {request.path}")
        return self._next_reply(request.path, request.body)

    def _next_reply(self, path: str, body: Any) -> Reply:
        with self._lock:
            queue = self._queues.get(path)
            if queue:
                return queue.popleft()
        if path == MESSAGES_PATH:
            text = self.answer(body) if self.answer else "fake summary"
            if isinstance(body, dict) and body.get("stream") is True:
                return self.reply_text_stream(text)
            return self.reply_text(text)
        if path.startswith(BATCHES_PATH):
            return self._batch_reply(path, body)
        if path == COUNT_TOKENS_PATH:
            return Reply(body={"input_tokens": self.count_tokens_for(body)})
        return self.reply_error(
            404,
            "not_found_error",
            f"fake server: no route for {path}",
            retry_after_ms=None,
        )

    def _batch_reply(self, path: str, body: Any) -> Reply:
        """Create (POST to the collection), retrieve, or read the results of a batch."""
        rest = path[len(BATCHES_PATH) :].strip("/")
        if not rest:
            requests = list(body["requests"])
            batch = FakeBatch(
                f"msgbatch_fake_{next(self._request_ids):06d}",
                requests,
                {r["custom_id"]: self._batch_result_for(r) for r in requests},
                self.batch_polls_in_progress,
            )
            with self._lock:
                self.batches[batch.id] = batch
            return Reply(body=self._batch_body(batch, ended=False))
        batch_id, _, tail = rest.partition("/")
        with self._lock:
            found = self.batches.get(batch_id)
        if found is None:
            return self.reply_error(404, message=f"no batch {batch_id}", retry_after_ms=None)
        if tail == "results":
            if self.results_reply is not None:
                return self.results_reply
            lines = [
                json.dumps({"custom_id": cid, "result": result}) for cid, result in found.results.items()
            ]
            return Reply(body="\n".join(lines) + "\n", headers={"content-type": "application/binary"})
        if self.poll_reply is not None:
            return self.poll_reply
        with self._lock:
            ended = found.polls_left <= 0
            found.polls_left -= 1
        return Reply(body=self._batch_body(found, ended=ended))

    def _batch_result_for(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.batch_result is not None:
            return self.batch_result(request["custom_id"], request["params"])
        text = self.answer(request["params"]) if self.answer else "fake summary"
        return self.batch_succeeded(text)

    def _batch_body(self, batch: FakeBatch, *, ended: bool) -> dict[str, Any]:
        kinds = [r["type"] for r in batch.results.values()]
        counts = {
            k: (kinds.count(k) if ended else 0) for k in ("succeeded", "errored", "expired", "canceled")
        }
        counts["processing"] = 0 if ended else len(kinds)
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": counts,
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T00:01:00Z" if ended else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.base_url}{BATCHES_PATH}/{batch.id}/results" if ended else None,
        }


def server_sent_events(events: list[dict[str, Any]]) -> str:
    """``events`` as a server-sent-event stream: ``event: TYPE`` and ``data: JSON`` per event."""
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


def fake_anthropic_server() -> Iterator[FakeAnthropicServer]:
    """Generator fixture body: yields a started server, stops it afterwards.

    Wire up in conftest: ``fake_api = pytest.fixture(name="fake_api")(fake_anthropic_server)``.
    """
    server = FakeAnthropicServer().start()
    try:
        yield server
    finally:
        server.stop()
