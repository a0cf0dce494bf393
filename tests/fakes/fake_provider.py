"""A loopback model provider for wire tests: Anthropic Messages, OpenAI chat, Ollama and JSON catalogs.

``FakeProvider`` is a real HTTP/1.1 server on 127.0.0.1 (ephemeral port) served from a background
thread, one thread per connection, so many concurrent clients never serialize. It records every
request and answers from per-route queues of scripted :class:`Reply` specs::

    with FakeProvider() as fp:
        fp.enqueue("anthropic", text="hello", usage={"input_tokens": 3, "output_tokens": 1})
        fp.enqueue("openai", status=429, retry_after=1)
        fp.set_json("GET", "/api/v1/models", {"data": []})
        ...  # point a client at fp.base_url (any path prefix works for the model routes)
        assert fp.last_json("anthropic")["model"] == "claude-fable-5"

Routes (matched on the path without its query string):

- ``anthropic``: ``POST .../v1/messages`` (any prefix, e.g. ``/api/anthropic/v1/messages?beta=true``)
- ``anthropic_count_tokens``: ``POST .../v1/messages/count_tokens`` (always answers, no queue)
- ``openai``: ``POST .../chat/completions`` (with or without ``/v1``, any prefix)
- ``ollama``: ``POST .../api/chat``; ``ollama_tags``: ``GET .../api/tags`` (payload ``fp.ollama_tags``)
- ``json``: whatever :meth:`FakeProvider.set_json` registered (checked first, exact path)
- ``unknown``: anything else, answered 404 with a JSON body (and still recorded)

Streaming follows each provider: Anthropic and OpenAI stream when the body has ``"stream": true``;
Ollama streams NDJSON unless the body has ``"stream": false`` (the real daemon's default). A reply
with ``endless=True`` streams text deltas forever, until the client closes the connection (then the
recorded request's ``client_closed`` is set).

A reply that waits (``hang``, ``delay``, ``chunk_delay``) watches its connection meanwhile: when the
client closes it first, the request ends there with ``client_closed`` set, as a real server would
notice. So a client that abandons a call (a cancelled council member) leaves no open request.

Inspection: ``fp.requests`` (snapshot), ``fp.requests_for(route)``, ``fp.last_json(route)``,
``fp.wait_for(n, route)`` (block until n requests arrived, e.g. before stopping a hung call),
``fp.open_requests()`` and ``fp.wait_until_idle()`` (requests neither answered nor abandoned by
their client) and ``fp.clear()``. The pytest fixture and a Claude Code CLI environment builder live in
``tests.fakes.fixtures``.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Route = Literal["anthropic", "openai", "ollama"]
MODEL_ROUTES: tuple[Route, ...] = ("anthropic", "openai", "ollama")

DEFAULT_SIDECAR: dict[str, Any] = {"recommendation": "apply", "confidence": "high", "needs_context": []}
DEFAULT_ANSWER = "The change is sound: apply it as written."
DEFAULT_TEXT = f"{DEFAULT_ANSWER}\n\n```sidecar\n{json.dumps(DEFAULT_SIDECAR)}\n```"
GARBAGE_BODY = b"<html><body>502 Bad Gateway: upstream sent something that is not JSON</body></html>"

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 408: "timeout_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 503: "overloaded_error", 529: "overloaded_error",
}
_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 402: "insufficient_quota",
    403: "permission_error", 404: "not_found_error", 408: "timeout", 429: "rate_limit_exceeded",
}
_STOP_TO_OPENAI = {"end_turn": "stop", "max_tokens": "length", "stop_sequence": "stop"}


@dataclass(frozen=True)
class Reply:
    """One scripted answer for a model route.

    ``usage`` keys: ``input_tokens``, ``output_tokens`` and, for the OpenAI shape, ``cost`` (dollars,
    as OpenRouter reports it) and ``reasoning_tokens``. Unset token counts are derived from the sizes
    of the request body and of the answer. ``match`` restricts the reply to requests whose ``model``
    equals it; ``times`` is how many requests it serves (``None``: every matching request forever).
    """

    text: str = DEFAULT_TEXT
    thinking: str | None = None
    usage: Mapping[str, float] | None = None
    model: str | None = None
    stop_reason: str = "end_turn"
    #: Non-200 status answered with an error body in the provider's shape.
    status: int = 200
    error: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    #: Seconds before the first byte of the response.
    delay: float = 0.0
    #: Seconds between body chunks (stream events, or slices of a plain JSON body).
    chunk_delay: float = 0.0
    #: Never answer; the connection is dropped only when the server stops.
    hang: bool = False
    #: Answer only once this event is set (or drop the connection when the server stops).
    hold: threading.Event | None = None
    #: Status 200 with a body that is not JSON.
    garbage: bool = False
    #: Raw body bytes sent as-is (with ``status``), overriding every shape.
    body: bytes | None = None
    #: Close the connection abruptly (TCP RST) without any response.
    reset: bool = False
    #: Stream this many body chunks, then reset the connection.
    cut_after: int | None = None
    #: Stream text deltas forever (never a final event) until the client goes away.
    endless: bool = False
    #: Seconds a stream stays open after its final event before the body ends.
    linger: float = 0.0
    #: OpenAI shape: the field carrying reasoning (``reasoning`` for OpenRouter, ``reasoning_content``).
    reasoning_key: str = "reasoning"
    #: Approximate characters per streamed text/thinking delta.
    chunk_chars: int = 24
    match: str | None = None
    times: int | None = 1


@dataclass
class RecordedRequest:
    """One request the fake received, recorded before it was answered."""

    method: str
    #: Path including the query string, as sent.
    path: str
    #: Header names lowercased (the last value wins for repeated headers).
    headers: dict[str, str]
    body: bytes
    json: Any
    route: str
    #: ``time.monotonic()`` when the request was read.
    received_at: float
    #: ``time.monotonic()`` just before the last bytes of the answer were written (so it is set by the
    #: time a client holds the whole answer), or when the connection was dropped; ``None`` while pending.
    finished_at: float | None = None
    #: The client closed the connection before the answer was fully written.
    client_closed: bool = False
    #: The client's port: requests with the same one came over the same connection.
    client_port: int = 0

    @property
    def model(self) -> str | None:
        """The ``model`` field of a JSON object body, if any."""
        return self.json.get("model") if isinstance(self.json, dict) else None

    @property
    def stream(self) -> bool | None:
        """The ``stream`` field of a JSON object body, if any."""
        return self.json.get("stream") if isinstance(self.json, dict) else None


@dataclass
class _JsonEndpoint:
    payload: Any
    status: int
    headers: Mapping[str, str]
    delay: float


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024
    allow_reuse_address = True
    fake: FakeProvider


class FakeProvider:
    """A scripted loopback model provider; see the module docstring for routes and usage."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._requests: list[RecordedRequest] = []
        self._queues: dict[str, list[Reply]] = {route: [] for route in MODEL_ROUTES}
        self._json: dict[tuple[str, str], _JsonEndpoint] = {}
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0
        #: Reply used when a route's queue has nothing for a request; assign to change it.
        self.default_reply: dict[str, Reply] = {route: Reply() for route in MODEL_ROUTES}
        #: Payload of ``GET .../api/tags`` (Ollama's local model list) unless ``set_json`` overrides it.
        self.ollama_tags: Any = {"models": [_ollama_tag("llama3.2:latest")]}

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> FakeProvider:
        """Bind 127.0.0.1 on an ephemeral port and serve from a daemon thread."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: hanging replies are released, open connections closed, the port freed."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def hang_up_idle(self) -> int:
        """End every open connection from the server's side, as a provider closing its idle
        keep-alive connections does; returns how many were open."""
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        return len(connections)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound TCP port."""
        if self._server is None:
            raise RuntimeError("FakeProvider is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    # -- scripting -------------------------------------------------------------------------------

    def enqueue(self, route: Route, reply: Reply | None = None, **spec: Any) -> Reply:
        """Queue a reply for ``route`` (a :class:`Reply`, or its fields as keywords); returns it.

        Replies are consumed first-in first-out; a request takes the first queued reply whose
        ``match`` equals its model, else the first one without ``match``, else the route's default.
        """
        if route not in self._queues:
            raise ValueError(f"unknown route {route!r}; expected one of {MODEL_ROUTES}")
        item = replace(reply, **spec) if reply is not None else Reply(**spec)
        with self._lock:
            self._queues[route].append(item)
        return item

    def set_json(self, method: str, path: str, payload: Any, *, status: int = 200,
                 headers: Mapping[str, str] | None = None, delay: float = 0.0) -> None:
        """Serve ``payload`` as JSON for ``method`` on exactly ``path`` (query string ignored)."""
        with self._lock:
            self._json[(method.upper(), _strip_query(path))] = _JsonEndpoint(payload, status, headers or {},
                                                                           delay)

    def pending(self, route: Route) -> int:
        """How many queued replies ``route`` still holds."""
        with self._lock:
            return len(self._queues[route])

    def clear(self) -> None:
        """Forget recorded requests and queued replies (defaults and JSON endpoints stay)."""
        with self._lock:
            self._requests.clear()
            for queue in self._queues.values():
                queue.clear()

    # -- inspection ------------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, route: str) -> list[RecordedRequest]:
        """The recorded requests that went to ``route``."""
        with self._lock:
            return [r for r in self._requests if r.route == route]

    def last_json(self, route: str) -> Any:
        """The parsed body of the latest request to ``route``; ``LookupError`` when there is none."""
        found = self.requests_for(route)
        if not found:
            raise LookupError(f"no request reached route {route!r}")
        return found[-1].json

    def wait_for(self, count: int, route: str | None = None, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least ``count`` requests (to ``route`` if given) arrived; return them."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                found = [r for r in self._requests if route is None or r.route == route]
                if len(found) >= count:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{len(found)} of {count} requests arrived within {timeout}s")
                self._lock.wait(remaining)

    def open_requests(self) -> list[RecordedRequest]:
        """Requests still open: not fully answered, and their client still connected."""
        with self._lock:
            return [r for r in self._requests if r.finished_at is None]

    def wait_until_idle(self, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until no request is open or ``timeout`` passed; return the ones still open."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                still_open = [r for r in self._requests if r.finished_at is None]
                remaining = deadline - time.monotonic()
                if not still_open or remaining <= 0:
                    return still_open
                self._lock.wait(remaining)

    # -- internals used by the handler -----------------------------------------------------------

    def _finish(self, request: RecordedRequest) -> None:
        with self._lock:
            if request.finished_at is None:
                request.finished_at = time.monotonic()
            self._lock.notify_all()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()

    def _take(self, route: str, model: str | None) -> Reply:
        with self._lock:
            queue = self._queues[route]
            index = next((i for i, r in enumerate(queue) if r.match is not None and r.match == model), None)
            if index is None:
                index = next((i for i, r in enumerate(queue) if r.match is None), None)
            if index is None:
                return self.default_reply[route]
            reply = queue[index]
            if reply.times is None:
                return reply
            if reply.times <= 1:
                del queue[index]
            else:
                queue[index] = replace(reply, times=reply.times - 1)
            return reply

    def _json_endpoint(self, method: str, path: str) -> _JsonEndpoint | None:
        with self._lock:
            return self._json.get((method, path))

    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def _track(self, conn: socket.socket, alive: bool) -> None:
        with self._lock:
            if alive:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)


class _Reset(Exception):
    """Raised inside the handler to drop the connection with a TCP reset."""


class _ClientGone(Exception):
    """Raised inside the handler when the client closed the connection while the reply waited."""

#: How often a waiting reply looks at its connection.
_WATCH_INTERVAL = 0.02


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, delayed ACKs add ~40 ms per reply.
    disable_nagle_algorithm = True
    server: _Server
    _current: RecordedRequest

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, True)

    def finish(self) -> None:
        self.server.fake._track(self.connection, False)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    # -- dispatch --------------------------------------------------------------------------------

    @property
    def fake(self) -> FakeProvider:
        return self.server.fake

    def _serve(self) -> None:
        body = self._read_body()
        parsed: Any = None
        if body:
            with contextlib.suppress(ValueError):
                parsed = json.loads(body)
        path = _strip_query(self.path)
        method = self.command
        endpoint = self.fake._json_endpoint(method, path)
        route = "json" if endpoint is not None else _route_for(method, path)
        record = RecordedRequest(method=method, path=self.path,
                                 headers={k.lower(): v for k, v in self.headers.items()},
                                 body=body, json=parsed, route=route, received_at=time.monotonic(),
                                 client_port=self.client_address[1])
        self.fake._record(record)
        self._current = record
        try:
            if endpoint is not None:
                self._sleep(endpoint.delay)
                self._send_json(endpoint.status, endpoint.payload, endpoint.headers)
            elif route in MODEL_ROUTES:
                self._answer_model(route, record)
            elif route == "anthropic_count_tokens":
                self._send_json(200, {"input_tokens": max(1, len(body) // 4)})
            elif route == "ollama_tags":
                self._send_json(200, self.fake.ollama_tags)
            else:
                self._send_json(404, {"type": "error", "error": {
                    "type": "not_found_error", "message": f"{method} {path} is not served here"}})
        except _Reset:
            self._reset()
        except _ClientGone:
            self.close_connection = True
            record.client_closed = True
        except OSError:  # the client went away mid-answer, or the server is stopping
            self.close_connection = True
            record.client_closed = not self.fake._stopping.is_set()
        finally:
            self._mark_finished()

    def _mark_finished(self) -> None:
        self.fake._finish(self._current)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _answer_model(self, route: str, record: RecordedRequest) -> None:
        request = record.json if isinstance(record.json, dict) else {}
        reply = self.fake._take(route, record.model)
        if reply.reset:
            raise _Reset
        if reply.hang:
            self._wait(None)
        while reply.hold is not None and not reply.hold.is_set():
            self._wait(0.05)
        self._sleep(reply.delay)
        headers = dict(reply.headers)
        if reply.retry_after is not None:
            headers.setdefault("Retry-After", _number(reply.retry_after))
        if reply.body is not None or reply.garbage:
            raw = reply.body if reply.body is not None else GARBAGE_BODY
            status = reply.status if reply.body is not None else 200
            self._send_bytes(status, raw, "text/html", headers)
            return
        if reply.status >= 400:
            self._send_json(reply.status, _error_body(route, reply), headers)
            return
        model = reply.model or record.model or "fake-model"
        usage = _usage(reply, record)
        number = self.fake._next_id()
        if reply.endless:
            content_type = "application/x-ndjson" if route == "ollama" else "text/event-stream"
            self._stream(content_type, _endless(route, reply, model, usage, number), reply, headers)
        elif route == "anthropic":
            if request.get("stream") is True:
                events = _anthropic_events(reply, model, usage, number)
                self._stream("text/event-stream", events, reply, headers)
            else:
                self._send_json(200, _anthropic_message(reply, model, usage, number), headers,
                                chunk_delay=reply.chunk_delay)
        elif route == "openai":
            if request.get("stream") is True:
                self._stream("text/event-stream", _openai_events(reply, model, usage, number), reply, headers)
            else:
                self._send_json(200, _openai_completion(reply, model, usage, number), headers,
                                chunk_delay=reply.chunk_delay)
        elif request.get("stream", True) is not False:
            self._stream("application/x-ndjson", _ollama_lines(reply, model, usage), reply, headers)
        else:
            self._send_json(200, _ollama_response(reply, model, usage), headers,
                            chunk_delay=reply.chunk_delay)

    # -- writing ---------------------------------------------------------------------------------

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._wait(seconds)

    def _wait(self, seconds: float | None) -> None:
        """Wait ``seconds`` (``None``: until the server stops) watching the connection: :class:`_Reset`
        when the server stops first, :class:`_ClientGone` when the client closes the connection."""
        until = None if seconds is None else time.monotonic() + seconds
        watching = True
        while True:
            left = _WATCH_INTERVAL if until is None else min(_WATCH_INTERVAL, until - time.monotonic())
            if left <= 0:
                return
            if not watching:
                if self.fake._stopping.wait(left):
                    raise _Reset
                continue
            if self.fake._stopping.is_set():
                raise _Reset
            try:
                readable, _, _ = select.select([self.connection], [], [], left)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    raise _ClientGone
            except OSError as exc:
                raise _ClientGone from exc
            # Bytes from a client that is still there (a pipelined request): stop watching.
            watching = not readable

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None,
                   chunk_delay: float = 0.0) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers or {}, chunk_delay)

    def _send_bytes(self, status: int, raw: bytes, content_type: str, headers: Mapping[str, str],
                    chunk_delay: float = 0.0) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(raw)))
        self.send_header("request-id", f"req_fake_{self.fake._next_id():06d}")
        for name, value in headers.items():
            self.send_header(name, value)
        if self.command == "HEAD" or chunk_delay <= 0:
            self._mark_finished()
        self.end_headers()
        if self.command == "HEAD":
            return
        if chunk_delay <= 0:
            self.wfile.write(raw)
            return
        step = max(1, len(raw) // 8)
        for start in range(0, len(raw), step):
            if start:
                self._sleep(chunk_delay)
            if start + step >= len(raw):
                self._mark_finished()
            self.wfile.write(raw[start:start + step])

    def _stream(self, content_type: str, chunks: Iterator[bytes], reply: Reply,
                headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", f"req_fake_{self.fake._next_id():06d}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        items = iter(chunks)  # read lazily: an endless stream never ends
        chunk = next(items, None)
        sent = 0
        while chunk is not None:
            following = next(items, None)
            if reply.cut_after is not None and sent >= reply.cut_after:
                raise _Reset
            if sent:
                self._sleep(reply.chunk_delay)
            frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
            if following is None and reply.linger:
                self._mark_finished()
                self.wfile.write(frame)
                self._sleep(reply.linger)  # the answer is whole; the body has not ended
                frame = b"0\r\n\r\n"
            elif following is None:
                # the last event and the end of the chunked body leave in one write
                self._mark_finished()
                frame += b"0\r\n\r\n"
            self.wfile.write(frame)
            chunk, sent = following, sent + 1

    def _reset(self) -> None:
        """Drop the connection with RST: linger 0, then close every reference to the socket."""
        self.close_connection = True
        conn = self.connection
        with contextlib.suppress(OSError):
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with contextlib.suppress(OSError):
            self.rfile.close()
        with contextlib.suppress(OSError):
            conn.close()


# -- routing ---------------------------------------------------------------------------------------

def _strip_query(path: str) -> str:
    return path.split("?", 1)[0]


def _route_for(method: str, path: str) -> str:
    path = path.rstrip("/")
    if method == "POST":
        if path.endswith("/v1/messages"):
            return "anthropic"
        if path.endswith("/v1/messages/count_tokens"):
            return "anthropic_count_tokens"
        if path.endswith("/chat/completions"):
            return "openai"
        if path.endswith("/api/chat"):
            return "ollama"
    if method == "GET" and path.endswith("/api/tags"):
        return "ollama_tags"
    return "unknown"


# -- shared pieces ---------------------------------------------------------------------------------

def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _pieces(text: str, size: int) -> list[str]:
    """Split text into deltas of about ``size`` characters, on word boundaries when possible."""
    out: list[str] = []
    current = ""
    for token in re.findall(r"\S+\s*|\s+", text):
        if current and len(current) + len(token) > size:
            out.append(current)
            current = ""
        current += token
    if current:
        out.append(current)
    return out


def _usage(reply: Reply, record: RecordedRequest) -> dict[str, float]:
    given = dict(reply.usage or {})
    given.setdefault("input_tokens", max(1, len(record.body) // 4))
    given.setdefault("output_tokens", max(1, (len(reply.text) + len(reply.thinking or "")) // 4))
    return given


def _error_body(route: str, reply: Reply) -> Any:
    status = reply.status
    message = reply.error or f"fake provider error {status}"
    if route == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}
    if route == "openai":
        kind = _OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        return {"error": {"message": message, "type": kind, "code": status}}
    return {"error": message}


def _sse(event: str | None, payload: Any) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()


# -- Anthropic Messages ----------------------------------------------------------------------------

def _anthropic_usage(usage: Mapping[str, float], output: bool) -> dict[str, Any]:
    return {"input_tokens": int(usage["input_tokens"]), "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0, "output_tokens": int(usage["output_tokens"]) if output else 1}


def _signature(number: int) -> str:
    return f"ZmFrZS1zaWduYXR1cmUt{number:08d}"


def _anthropic_message(reply: Reply, model: str, usage: Mapping[str, float], number: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.thinking is not None:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": _signature(number)})
    content.append({"type": "text", "text": reply.text})
    return {"id": f"msg_fake_{number:06d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": reply.stop_reason, "stop_sequence": None,
            "usage": _anthropic_usage(usage, output=True)}


def _anthropic_events(reply: Reply, model: str, usage: Mapping[str, float], number: int) -> Iterator[bytes]:
    start = _anthropic_message(reply, model, usage, number)
    start.update(content=[], stop_reason=None, usage=_anthropic_usage(usage, output=False))
    yield _sse("message_start", {"type": "message_start", "message": start})
    yield _sse("ping", {"type": "ping"})
    index = 0
    if reply.thinking is not None:
        yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": {"type": "thinking", "thinking": "",
                                                             "signature": ""}})
        for piece in _pieces(reply.thinking, reply.chunk_chars):
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "thinking_delta", "thinking": piece}})
        yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                           "delta": {"type": "signature_delta",
                                                     "signature": _signature(number)}})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    yield _sse("content_block_start", {"type": "content_block_start", "index": index,
                                       "content_block": {"type": "text", "text": ""}})
    for piece in _pieces(reply.text, reply.chunk_chars):
        yield _sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                           "delta": {"type": "text_delta", "text": piece}})
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _sse("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                                 "usage": {"output_tokens": int(usage["output_tokens"])}})
    yield _sse("message_stop", {"type": "message_stop"})


def _endless(route: str, reply: Reply, model: str, usage: Mapping[str, float],
             number: int) -> Iterator[bytes]:
    """A stream that opens like ``route``'s and then sends text deltas forever."""
    piece = (reply.text or "more ") * 4
    if route == "anthropic":
        opening = list(_anthropic_events(replace(reply, thinking=None), model, usage, number))[:3]
        yield from opening  # message_start, ping, content_block_start
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
        event = _sse("content_block_delta", delta)
    elif route == "openai":
        base = {"id": f"chatcmpl-fake{number:06d}", "object": "chat.completion.chunk", "model": model}
        choice = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
        event = _sse(None, {**base, "choices": [choice]})
    else:
        event = (json.dumps({"model": model, "message": {"role": "assistant", "content": piece},
                             "done": False}) + "\n").encode()
    while True:
        yield event


# -- OpenAI chat completions -----------------------------------------------------------------------

def _openai_usage(usage: Mapping[str, float]) -> dict[str, Any]:
    prompt, completion = int(usage["input_tokens"]), int(usage["output_tokens"])
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}
    if "reasoning_tokens" in usage:
        out["completion_tokens_details"] = {"reasoning_tokens": int(usage["reasoning_tokens"])}
    if "cost" in usage:
        out["cost"] = usage["cost"]
    return out


def _openai_completion(reply: Reply, model: str, usage: Mapping[str, float], number: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.thinking is not None:
        message[reply.reasoning_key] = reply.thinking
    return {"id": f"chatcmpl-fake{number:06d}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message,
                                         "finish_reason": _STOP_TO_OPENAI.get(reply.stop_reason,
                                                                              reply.stop_reason)}],
            "usage": _openai_usage(usage)}


def _openai_events(reply: Reply, model: str, usage: Mapping[str, float], number: int) -> Iterator[bytes]:
    base = {"id": f"chatcmpl-fake{number:06d}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.thinking or "", reply.chunk_chars):
        yield chunk({"content": None, reply.reasoning_key: piece})
    for piece in _pieces(reply.text, reply.chunk_chars):
        yield chunk({"content": piece})
    yield chunk({}, _STOP_TO_OPENAI.get(reply.stop_reason, reply.stop_reason))
    yield _sse(None, {**base, "choices": [], "usage": _openai_usage(usage)})
    yield _sse(None, "[DONE]")


# -- Ollama ----------------------------------------------------------------------------------------

def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _ollama_final(reply: Reply, model: str, usage: Mapping[str, float]) -> dict[str, Any]:
    return {"model": model, "created_at": _now_iso(),
            "done": True, "done_reason": "length" if reply.stop_reason == "max_tokens" else "stop",
            "total_duration": 1_000_000, "load_duration": 100_000,
            "prompt_eval_count": int(usage["input_tokens"]), "prompt_eval_duration": 200_000,
            "eval_count": int(usage["output_tokens"]), "eval_duration": 700_000}


def _ollama_response(reply: Reply, model: str, usage: Mapping[str, float]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.thinking is not None:
        message["thinking"] = reply.thinking
    out = _ollama_final(reply, model, usage)
    out["message"] = message
    return out


def _ollama_lines(reply: Reply, model: str, usage: Mapping[str, float]) -> Iterator[bytes]:
    def line(payload: dict[str, Any]) -> bytes:
        return (json.dumps(payload) + "\n").encode()

    for piece in _pieces(reply.thinking or "", reply.chunk_chars):
        yield line({"model": model, "created_at": _now_iso(),
                    "message": {"role": "assistant", "content": "", "thinking": piece}, "done": False})
    for piece in _pieces(reply.text, reply.chunk_chars):
        yield line({"model": model, "created_at": _now_iso(),
                    "message": {"role": "assistant", "content": piece}, "done": False})
    final = _ollama_final(reply, model, usage)
    final["message"] = {"role": "assistant", "content": ""}
    yield line(final)


def _ollama_tag(name: str) -> dict[str, Any]:
    return {"name": name, "model": name, "modified_at": "2026-01-01T00:00:00Z", "size": 2_019_393_189,
            "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
            "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B",
                        "quantization_level": "Q4_K_M"}}
