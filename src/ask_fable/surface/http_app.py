"""Streamable HTTP: the registry's server at ``/mcp`` (stateless, JSON responses) plus ``/healthz``.

One ASGI guard sits in front of the MCP app and checks, in order:

1. ``Host`` against the allowed hosts (421) and ``Origin`` against the allowed origins (403), on
   every bind address — DNS rebinding does not care which interface we listen on;
2. ``/healthz`` is the readiness check (no key, never counted against the request bound), and
   ``GET /`` says where the MCP endpoint, the web view and the readiness check are:
   ``200 {"status": "ok"}`` while the store answers, ``503 {"status": "unavailable", "reason":
   ...}`` while it does not (see :class:`Readiness`);
3. no credential in the query string (401: keys travel only in ``Authorization``);
4. ``Authorization: Bearer <key>`` names an active key (401 otherwise; 503 with ``kind:
   "unavailable"`` when the key store does not answer);
5. ``/mcp`` takes POST only (405): the server is stateless and answers in JSON, so it never has a
   message of its own to send on a GET event stream, which would only hold a connection open;
6. fewer than ``max_requests`` requests are in flight (503 with ``Retry-After`` otherwise), and
   fewer than :attr:`HttpOptions.key_request_bound` of them are the key's (429 with
   ``Retry-After``): a request counts from the moment its key is checked, while it still waits for
   its body too, so no one key can hold every slot;
7. the body arrives within ``body_timeout`` seconds, never going ``body_stall_timeout`` seconds
   without a byte (408), and fits ``max_body_bytes`` (413);
8. the body nests JSON no deeper than :data:`~ask_fable.surface.http_limits.MAX_JSON_DEPTH`
   (400, measured before anything parses it);
9. the key's scope allows every tool it calls (403 with a JSON-RPC error naming the scope needed):
   each tool's scope comes from its declared effects (``ToolSpec.scope``), and a ``tenant``
   argument naming anyone but the key's own tenant needs ``admin``.

The ``Authorization`` header is removed before the request reaches the MCP app, so nothing
downstream (tools, backends, traces) can see or forward the client's key. Access log lines carry
the path only, never the query string.

A request in flight runs in its own cancel scope: a client that hangs up cancels it at once (its
CLI process groups are ended and its upstream requests closed), and :meth:`HttpGuard.stop`
cancels every one when the server stops, web view pages, key checks and readiness probes waiting
on the store included, answering each caller 503: no request holds a stopping server. Those waits
run on daemon threads (``surface/daemon_workers.py``), so a database that never answers cannot
hold the stopped process either.

``/ui`` is the web view of traces and stats (``surface/ui``), handed over by the guard to
:func:`ui_app` (not counted against ``max_requests``, but one client address may have no more of its
requests in progress than a key may: 429 past it, so login forms whose body never comes cannot hold
every connection), which checks Host and Origin against the same lists (also accepting its own
pages' origin behind a proxy) and logs users in with a form (a key of ``read`` scope or higher
exchanged for a session cookie) instead of a bearer header.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import parse_qsl

import anyio

from ask_fable.access import SCOPE_MEANS, scope_allows, stronger
from ask_fable.access import Scope as KeyScope
from ask_fable.errors import Unavailable
from ask_fable.redact import redact
from ask_fable.surface.daemon_workers import DaemonWorkers
from ask_fable.surface.http_common import API_KEY_SCOPE, UI_PATH, host_allowed, origin_allowed
from ask_fable.surface.http_limits import MAX_JSON_DEPTH, nesting_exceeds

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ask_fable.stores.interfaces import ApiKeyStore
    from ask_fable.stores.records import ApiKey
    from ask_fable.surface.server import AskFableServer

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
#: What ``GET /`` answers, without a key: where everything is.
ROOT_TEXT = (
    "ask-fable team server\n"
    "  {mcp}       the MCP endpoint: POST JSON-RPC with `Authorization: Bearer <key>` (ask-fable init "
    "claude --http <this URL>{mcp} registers it)\n"
    f"  {UI_PATH}        the web view of traces and stats: log in with a key of read scope or higher\n"
    f"  {HEALTH_PATH}   readiness: 200 while the server's store answers, 503 while it does not\n"
)
LOCAL_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
LOCAL_ORIGINS: tuple[str, ...] = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
WILDCARD_BINDS: frozenset[str] = frozenset({"0.0.0.0", "::", ""})
#: Query parameters that look like someone put a credential in the URL.
CREDENTIAL_PARAMS: frozenset[str] = frozenset(
    {"key", "api_key", "apikey", "api-key", "token", "access_token", "auth", "authorization", "bearer"}
)
#: How often the keys' last use is written by default: a request itself never writes.
KEY_USE_FLUSH_SECONDS = 30.0
FORBIDDEN_CODE = -32003
UNAUTHORIZED_CODE = -32001
UNAVAILABLE_CODE = -32002
#: How long ``/healthz`` waits for the store before calling the replica not ready.
HEALTH_TIMEOUT_S = 2.0
#: A readiness answer is reused for this long, so frequent probes cost the store one query.
HEALTH_FRESH_S = 0.5
#: Seconds a client is asked to wait before retrying when the store does not answer.
RETRY_AFTER_S = 2
STORE_DOWN_REASON = "the database is not answering"
STOPPING_REASON = "the server is stopping"
#: Threads at most checking keys against a store that blocks (PostgreSQL); past it, checks queue.
STORE_WORKERS = 32

log = logging.getLogger("ask_fable.http")
T = TypeVar("T")


def _setting_default(name: str) -> Any:
    """The default of setting ``name``: the limits below default to what the settings say."""
    from ask_fable.config import Settings

    return Settings.model_fields[name].get_default(call_default_factory=True)


@dataclass(frozen=True)
class HttpOptions:
    """How the HTTP surface binds and what it accepts (limits default to their settings' defaults)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    #: Peers whose ``X-Forwarded-Proto`` / ``X-Forwarded-For`` are believed (the request's scheme and
    #: client then come from them: the web view's cookie is ``Secure`` behind a TLS proxy).
    trusted_proxies: tuple[str, ...] = field(
        default_factory=lambda: tuple(_setting_default("http_trusted_proxies")))
    max_body_bytes: int = field(default_factory=lambda: _setting_default("http_max_body_bytes"))
    #: Open connections at most (the oldest idle one is closed past it).
    max_connections: int = field(default_factory=lambda: _setting_default("http_max_connections"))
    #: Requests in flight at most (503 past it; health checks excepted).
    max_requests: int = field(default_factory=lambda: _setting_default("http_max_requests"))
    #: Seconds a connection has to deliver a request's headers.
    header_timeout: float = field(default_factory=lambda: _setting_default("http_header_timeout"))
    #: Seconds a client has to deliver a request's body once its headers arrived.
    body_timeout: float = field(default_factory=lambda: _setting_default("http_body_timeout"))
    #: Seconds a request's body may go without a byte arriving (before its first byte too).
    body_stall_timeout: float = field(default_factory=lambda: _setting_default("http_body_stall_timeout"))
    #: Requests of one key in progress at most, waiting for their body included (429 past it).
    max_key_requests: int = field(default_factory=lambda: _setting_default("http_max_key_requests"))
    #: Seconds an idle kept-alive connection stays open.
    keepalive_timeout: int = field(default_factory=lambda: _setting_default("http_keepalive_timeout"))
    #: Seconds between writes of the keys' ``last_used_at`` (also written when the server stops).
    key_use_flush_seconds: float = KEY_USE_FLUSH_SECONDS

    @property
    def key_request_bound(self) -> int:
        """Requests one key may have in progress: its setting, never more than half of every slot."""
        return max(1, min(self.max_key_requests, self.max_requests // 2))

    def host_allowlist(self) -> list[str]:
        """Loopback names, the bind address when it is a specific one, then the configured hosts."""
        hosts = list(LOCAL_HOSTS)
        bind = self.host.strip()
        if bind not in WILDCARD_BINDS:
            hosts.append(f"[{bind}]" if ":" in bind and not bind.startswith("[") else bind)
        return list(dict.fromkeys([*hosts, *self.allowed_hosts]))

    def origin_allowlist(self) -> list[str]:
        """Loopback origins (any port), then the configured origins."""
        return list(dict.fromkeys([*LOCAL_ORIGINS, *self.allowed_origins]))


def query_has_credential(query_string: bytes) -> bool:
    """Whether the URL carries something that looks like a key (a credential param or an ``afk_`` value)."""
    if not query_string:
        return False
    text = query_string.decode("latin-1")
    if "afk_" in text.lower():
        return True
    pairs = parse_qsl(text, keep_blank_values=True)
    return any(name.strip().lower() in CREDENTIAL_PARAMS for name, _ in pairs)


def _bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def _header(headers: list[tuple[bytes, bytes]], wanted: bytes) -> str | None:
    for name, value in headers:
        if name.lower() == wanted:
            return value.decode("latin-1")
    return None


async def _respond(send: Send, status: int, body: bytes, content_type: str,
                   extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": body})


def _rpc_error(code: int, message: str, request_id: Any = None, data: dict[str, Any] | None = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


@dataclass(frozen=True)
class ToolCall:
    """One ``tools/call`` of a request, as far as access is concerned."""

    request_id: Any
    name: str
    #: The ``tenant`` argument, when the call names one.
    tenant: str | None


def tool_calls(payload: Any) -> list[ToolCall]:
    """Every ``tools/call`` in a JSON-RPC message or batch."""
    messages = payload if isinstance(payload, list) else [payload]
    calls = []
    for message in messages:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params")
            params = params if isinstance(params, dict) else {}
            arguments = params.get("arguments")
            tenant = arguments.get("tenant") if isinstance(arguments, dict) else None
            # A tenant that is not text names no tenant: the tool refuses it as bad_args.
            calls.append(ToolCall(message.get("id"), str(params.get("name")),
                                  tenant if isinstance(tenant, str) else None))
    return calls


def _valid_id(value: Any) -> bool:
    """Whether ``value`` is a JSON-RPC id MCP accepts: a string or an integer."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def message_problem(payload: Any) -> str | None:
    """What keeps ``payload`` (a parsed body) from being one JSON-RPC message this server can answer,
    said so that a client author knows what to send; None when it is one."""
    if isinstance(payload, list):
        return ("a batch (a JSON array) is not accepted: send one JSON-RPC message per request, "
                "as MCP asks")
    if not isinstance(payload, dict):
        return 'the body must be one JSON-RPC message: an object with "jsonrpc": "2.0" and a "method"'
    if payload.get("jsonrpc") != "2.0":
        return '"jsonrpc" must be "2.0"'
    if "method" in payload and not isinstance(payload["method"], str):
        return '"method" must be a string naming the MCP method (e.g. "tools/call")'
    if "id" in payload and not _valid_id(payload["id"]):
        return '"id" must be a string or an integer'
    params = payload.get("params")
    if params is not None and not isinstance(params, dict):
        return '"params" must be an object'
    if payload.get("method") == "tools/call" and isinstance(params, dict):
        if not isinstance(params.get("name"), str):
            return 'tools/call needs "params.name": the tool\'s name as a string'
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            return 'tools/call "params.arguments" must be an object of the tool\'s arguments'
    return None


def needed_scope(call: ToolCall, tool_scopes: dict[str, KeyScope], tenant: str) -> tuple[KeyScope, str]:
    """The scope ``call`` needs from a key of ``tenant``, and why.

    An unknown tool needs nothing here: the server answers it with ``unknown_tool`` and runs nothing.
    """
    needed: KeyScope = tool_scopes.get(call.name, "read")
    why = f"{call.name!r} needs {needed} scope"
    if call.tenant is not None and call.tenant.strip() not in ("", tenant):
        needed = stronger(needed, "admin")
        why = f"{call.name!r} with tenant={call.tenant!r} (another tenant's data) needs admin scope"
    return needed, why


class _BodyTooLarge(Exception):
    pass


class _BodyLate(Exception):
    """The body stalled, or did not arrive in time (the message says which)."""


def store_probe(keys: ApiKeyStore) -> Callable[[], bool]:
    """A readiness probe: whether the key store answers a query (every request needs it first)."""

    def probe() -> bool:
        try:
            keys.get(0)
        except Exception:  # any failure to answer means not ready; the reason is not disclosed
            return False
        return True

    return probe


class Readiness:
    """Whether the replica can serve: its store answers, within :data:`HEALTH_TIMEOUT_S`.

    One probe runs at a time and its answer is shared for :data:`HEALTH_FRESH_S`; a probe that
    outlives the timeout is left to finish on its own thread (the replica is not ready meanwhile),
    and no second probe starts until it does, so a hung database cannot pile up threads. That thread
    is a daemon (``surface/daemon_workers.py``): a database that never answers cannot keep a stopped
    server's process alive.
    """

    def __init__(self, probe: Callable[[], bool], *, timeout_s: float = HEALTH_TIMEOUT_S,
                 fresh_s: float = HEALTH_FRESH_S) -> None:
        self.probe = probe
        self.timeout_s = timeout_s
        self.fresh_s = fresh_s
        self._answer = False
        self._answered_at = -float("inf")
        self._in_flight = False
        self._lock: anyio.Lock | None = None
        self._worker = DaemonWorkers(1, "ask-fable-readiness")

    def _run_probe(self) -> bool:
        try:
            return self.probe()
        finally:
            self._in_flight = False

    async def ready(self) -> bool:
        """The store's answer, probed afresh when the last one is older than ``fresh_s``."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if time.monotonic() - self._answered_at < self.fresh_s:
                return self._answer
            answer = False
            if not self._in_flight:
                self._in_flight = True
                with anyio.move_on_after(self.timeout_s):
                    answer = await self._worker.run(self._run_probe)
            self._answer, self._answered_at = answer, time.monotonic()
            return answer


class _ClientGone(Exception):
    pass


K = TypeVar("K")


class InProgress(Generic[K]):
    """How many requests each holder (a key, a client address) has in progress."""

    def __init__(self) -> None:
        self._held: dict[K, int] = {}

    def enter(self, holder: K, bound: int) -> bool:
        """Count one more request of ``holder``, unless it already has ``bound`` (then False)."""
        held = self._held.get(holder, 0)
        if held >= bound:
            return False
        self._held[holder] = held + 1
        return True

    def leave(self, holder: K) -> None:
        """Count one request of ``holder`` less."""
        left = self._held.pop(holder, 1) - 1
        if left > 0:
            self._held[holder] = left


class _Stopped(Exception):
    """The server stopped while the request waited on the store."""


class HttpGuard:
    """The ASGI middleware in front of the MCP app (see the module docstring for the checks)."""

    def __init__(self, app: ASGIApp, *, keys: ApiKeyStore, tool_scopes: dict[str, KeyScope],
                 options: HttpOptions, mcp_path: str = MCP_PATH, ui: ASGIApp | None = None,
                 readiness: Readiness | None = None) -> None:
        self.app = app
        #: The web view under :data:`UI_PATH`, which logs its users in by itself.
        self.ui = ui
        self.keys = keys
        self.readiness = readiness or Readiness(store_probe(keys))
        #: The scope each served tool needs (``ToolSpec.scope``).
        self.tool_scopes = tool_scopes
        self.options = options
        self.allowed_hosts = options.host_allowlist()
        self.allowed_origins = options.origin_allowlist()
        self.mcp_path = mcp_path
        from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS

        #: The MCP versions the app speaks (an ``MCP-Protocol-Version`` header naming another is 400).
        self.protocol_versions: tuple[str, ...] = tuple(SUPPORTED_PROTOCOL_VERSIONS)
        #: The cancel scope of every request being served (health checks aside).
        self._in_flight: set[anyio.CancelScope] = set()
        #: How many of those each key (by id) has in progress.
        self._per_key: InProgress[int] = InProgress()
        #: How many web view requests each client address has in progress (they carry no key).
        self._per_client: InProgress[str] = InProgress()
        #: The cancel scope of every web view request being served (not counted against ``max_requests``).
        self._pages: set[anyio.CancelScope] = set()
        #: The cancel scope of every request waiting on the store before it is served (its key
        #: check, a readiness probe).
        self._waiting: set[anyio.CancelScope] = set()
        #: Where those waits run: daemon threads, so a store that never answers holds no stopped process.
        self._store_workers = DaemonWorkers(STORE_WORKERS, "ask-fable-key-check")
        self.stopping = False

    def stop(self) -> None:
        """Stop serving: cancel every request in flight, readiness probes included (each caller gets
        503), and refuse new ones."""
        self.stopping = True
        for request in [*self._in_flight, *self._pages, *self._waiting]:
            request.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then hand it (without its Authorization header) to the MCP app."""
        if scope["type"] == "websocket":  # nothing here speaks WebSocket; refuse before any check
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan: runs the MCP session manager
            await self._lifespan(scope, receive, send)
            return
        started = time.monotonic()
        status_seen: list[int] = []

        async def logged_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_seen.append(int(message["status"]))
            await send(message)

        try:
            await self._handle(scope, receive, logged_send)
        finally:
            if log.isEnabledFor(logging.INFO):
                # The path only, redacted: a URL could carry a credential someone pasted into it.
                log.info("%s %s %s %.0fms", scope.get("method"), redact(str(scope.get("path", ""))),
                         status_seen[0] if status_seen else "-", (time.monotonic() - started) * 1000)

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The MCP app's lifespan, with the keys' last use written every ``key_use_flush_seconds``
        and once more when the server stops (before the app closes its stores)."""

        # The flusher's own scope, not its task group's: that one also holds the app's lifespan,
        # which on shutdown still waits for requests finishing their cancellation.
        flusher = anyio.CancelScope()

        async def flush_periodically() -> None:
            with flusher:
                while True:
                    await anyio.sleep(self.options.key_use_flush_seconds)
                    await anyio.to_thread.run_sync(self.keys.flush_usage)

        async def flushing_receive() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                flusher.cancel()
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self.keys.flush_usage)
            return message

        async with anyio.create_task_group() as group:
            group.start_soon(flush_periodically)
            try:
                await self.app(scope, flushing_receive, send)
            finally:
                flusher.cancel()

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if self.ui is not None and (path == UI_PATH or path.startswith(UI_PATH + "/")):
            # The web view checks Host and Origin itself, accepting its own pages' origin behind a proxy.
            if self.stopping:
                await self._unavailable(send)
                return
            client = scope.get("client")
            address = str(client[0]) if client else ""
            if not self._per_client.enter(address, self.options.key_request_bound):
                body = (f"{self.options.key_request_bound} requests from this address are already in "
                        "progress (ASK_FABLE_HTTP_MAX_KEY_REQUESTS); retry in a moment").encode()
                await _respond(send, 429, body, "text/plain; charset=utf-8",
                               [(b"retry-after", b"1")])
                return
            ui = self.ui
            try:
                await self._stoppable(self._pages, lambda tracked, _: ui(scope, receive, tracked), send)
            finally:
                self._per_client.leave(address)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        if not host_allowed(_header(headers, b"host"), self.allowed_hosts):
            await _respond(send, 421, b"Invalid Host header (add it with --allowed-host)", "text/plain")
            return
        if not origin_allowed(_header(headers, b"origin"), self.allowed_origins):
            await _respond(send, 403, b"Invalid Origin header (add it with --allowed-origin)", "text/plain")
            return
        if path.rstrip("/") == HEALTH_PATH:
            await self._health(scope, send)
            return
        if path in ("", "/") and scope.get("method") == "GET":
            where = ROOT_TEXT.format(mcp=self.mcp_path).encode()
            await _respond(send, 200, where, "text/plain; charset=utf-8")
            return
        if query_has_credential(scope.get("query_string", b"")):
            await self._unauthorized(send, "API keys are accepted only in the Authorization header, never in "
                                           "the URL; send `Authorization: Bearer <key>`")
            return
        presented = _bearer(headers)
        if presented is None:
            await self._unauthorized(send, "missing bearer token: send `Authorization: Bearer <key>` "
                                           "(create one with `ask-fable keys create`)")
            return
        try:
            # A local key store answers from memory or one SQLite pragma: no thread hop for that.
            if self.keys.blocking:
                record = await self._from_store(lambda: self.keys.verify(presented))
            else:
                record = self.keys.verify(presented)
        except _Stopped:
            await self._unavailable(send)
            return
        except Exception as exc:  # the store did not answer: say so, never how (it may name hosts)
            if not isinstance(exc, Unavailable):  # an outage is reported by the store, once
                log.warning("key check failed: the store did not answer (%s)", type(exc).__name__)
            await self._unavailable(send, store_down=True)
            return
        if record is None:
            await self._unauthorized(send, "invalid or revoked API key", error="invalid_token")
            return
        if path.rstrip("/") == self.mcp_path and scope.get("method") != "POST":
            await _respond(send, 405, _rpc_error(-32600, "this server answers POST only: it keeps no session "
                                                         "and sends no messages of its own"),
                           "application/json", [(b"allow", b"POST")])
            return
        if self.stopping or len(self._in_flight) >= self.options.max_requests:
            await self._unavailable(send)
            return
        if not self._per_key.enter(record.id, self.options.key_request_bound):
            await self._key_busy(send, record)
            return

        async def serve(tracked: Send, request: anyio.CancelScope) -> None:
            await self._serve(scope, headers, record, receive, tracked, request)

        try:
            await self._stoppable(self._in_flight, serve, send)
        finally:
            self._per_key.leave(record.id)

    async def _from_store(self, call: Callable[[], T]) -> T:
        """``call()`` on a daemon thread, in a cancel scope :meth:`stop` cancels (then :class:`_Stopped`)."""
        with anyio.CancelScope() as waiting:
            self._waiting.add(waiting)
            try:
                return await self._store_workers.run(call)
            finally:
                self._waiting.discard(waiting)
        raise _Stopped

    async def _stoppable(self, scopes: set[anyio.CancelScope],
                         serve: Callable[[Send, anyio.CancelScope], Awaitable[None]], send: Send) -> None:
        """Run ``serve`` (given the ``send`` to answer with and its cancel scope) in a cancel scope kept
        in ``scopes`` while it runs, which :meth:`stop` cancels; a request the stop cancelled before it
        answered gets 503."""
        started: list[bool] = []

        async def tracked_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(True)
            await send(message)

        with anyio.CancelScope() as request:
            scopes.add(request)
            try:
                await serve(tracked_send, request)
            finally:
                scopes.discard(request)
        if request.cancelled_caught and self.stopping and not started:
            await self._unavailable(send)

    async def _serve(self, scope: Scope, headers: list[tuple[bytes, bytes]], record: ApiKey, receive: Receive,
                     send: Send, request: anyio.CancelScope) -> None:
        """Read the body under its limits, check it, then run the MCP app until it answers or the
        client hangs up (which cancels ``request``)."""
        try:
            body = await self._read_body(headers, receive)
        except _BodyTooLarge:
            await _respond(send, 413, _rpc_error(-32600, f"request body larger than "
                                                         f"{self.options.max_body_bytes} bytes"),
                           "application/json")
            return
        except _BodyLate as late:
            await _respond(send, 408, _rpc_error(-32600, str(late)), "application/json",
                           [(b"connection", b"close")])
            return
        except _ClientGone:
            return
        if nesting_exceeds(body):
            await _respond(send, 400, _rpc_error(-32700, f"parse error: JSON nested deeper than "
                                                         f"{MAX_JSON_DEPTH} levels"), "application/json")
            return
        if scope.get("method") == "POST":
            refusal = self._refusal(headers, body, record)
            if refusal is not None:
                await _respond(send, refusal[0], refusal[1], "application/json")
                return
        inner_scope = dict(scope)
        inner_scope["headers"] = [(n, v) for n, v in headers if n.lower() != b"authorization"]
        inner_scope[API_KEY_SCOPE] = record
        gone = asyncio.Event()

        async def watch() -> None:
            # The body is read: what uvicorn delivers next is the end of the exchange, either the
            # client hanging up or our own response completing.
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            request.cancel()

        # A bare asyncio task rather than a task group (uvicorn serves on asyncio, and this runs for
        # every request): a task group costs ten times as much CPU to open and close.
        watcher = asyncio.get_running_loop().create_task(watch())
        try:
            await self.app(inner_scope, _replay(body, gone), send)
        finally:
            watcher.cancel()

    async def _health(self, scope: Scope, send: Send) -> None:
        """The readiness answer; a probe still waiting on the store when the server stops is cancelled
        and answered 503 (the server is stopping), like every other request."""
        if scope.get("method") not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed", "text/plain", [(b"allow", b"GET, HEAD")])
            return
        ready, reason = False, STOPPING_REASON
        if not self.stopping:
            with anyio.CancelScope() as probe:
                self._waiting.add(probe)
                try:
                    ready, reason = await self.readiness.ready(), STORE_DOWN_REASON
                finally:
                    self._waiting.discard(probe)
        status = 200 if ready else 503
        body = (b'{"status":"ok"}' if ready
                else json.dumps({"status": "unavailable", "reason": reason}).encode())
        extra = [] if ready else [(b"retry-after", str(RETRY_AFTER_S).encode())]
        if scope.get("method") == "HEAD":
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"), *extra]})
            await send({"type": "http.response.body", "body": b""})
            return
        await _respond(send, status, body, "application/json", extra)

    async def _unavailable(self, send: Send, *, store_down: bool = False) -> None:
        """503 with ``Retry-After`` and a JSON-RPC error whose data is the structured
        ``unavailable`` result: the store does not answer, the server is stopping, or it is full."""
        if store_down:
            detail = "the database is unavailable (not answering); the call was not run"
            hint = "retry in a few seconds; /healthz says when this server is ready again"
            retry_after = RETRY_AFTER_S
        elif self.stopping:
            detail, hint, retry_after = "the server is stopping", "retry in a moment", 1
        else:
            detail = (f"{self.options.max_requests} requests at once are being served "
                      "(ASK_FABLE_HTTP_MAX_REQUESTS)")
            hint, retry_after = "retry in a moment", 1
        data = {"status": "error", "kind": "unavailable", "detail": detail, "hint": hint}
        await _respond(send, 503, _rpc_error(UNAVAILABLE_CODE, f"{detail}; {hint}", data=data),
                       "application/json", [(b"retry-after", str(retry_after).encode())])

    async def _unauthorized(self, send: Send, message: str, error: str | None = None) -> None:
        challenge = 'Bearer realm="ask-fable"' + (f', error="{error}"' if error else "")
        await _respond(send, 401, _rpc_error(UNAUTHORIZED_CODE, message), "application/json",
                       [(b"www-authenticate", challenge.encode())])

    async def _key_busy(self, send: Send, record: ApiKey) -> None:
        """429 with ``Retry-After``: the key already has its bound of requests in progress."""
        bound = self.options.key_request_bound
        detail = (f"API key {record.prefix}… already has {bound} requests in progress, the most one key "
                  "may have (ASK_FABLE_HTTP_MAX_KEY_REQUESTS); requests still sending their body count too")
        hint = "retry once one of them is answered"
        data = {"status": "error", "kind": "quota_exceeded", "detail": detail, "hint": hint}
        await _respond(send, 429, _rpc_error(UNAVAILABLE_CODE, f"{detail}; {hint}", data=data),
                       "application/json", [(b"retry-after", b"1")])

    async def _read_body(self, headers: list[tuple[bytes, bytes]], receive: Receive) -> bytes:
        """The whole body: within ``body_timeout`` seconds, never ``body_stall_timeout`` without a
        byte (else :class:`_BodyLate`), and no larger than ``max_body_bytes`` (:class:`_BodyTooLarge`)."""
        limit = self.options.max_body_bytes
        declared = _header(headers, b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise _BodyTooLarge
        loop = asyncio.get_running_loop()
        total, stall = self.options.body_timeout, self.options.body_stall_timeout
        deadline = loop.time() + total
        chunks: list[bytes] = []
        size = 0
        while True:
            # asyncio's own timeout (uvicorn serves on asyncio) costs a third of anyio's here; one
            # per chunk, and a small body arrives in one.
            stalls = loop.time() + stall < deadline
            try:
                async with asyncio.timeout_at(min(deadline, loop.time() + stall)):
                    message = await receive()
            except TimeoutError:
                raise _BodyLate(f"the request body made no progress for {stall:g}s" if stalls else
                                f"the request body did not arrive within {total:g}s") from None
            if message["type"] == "http.disconnect":
                raise _ClientGone
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _refusal(self, headers: list[tuple[bytes, bytes]], body: bytes, record: ApiKey
                 ) -> tuple[int, bytes] | None:
        """The status and JSON-RPC error for a POST the MCP app should not see: not declared JSON
        (415), an MCP version this server does not speak or not one JSON-RPC message (400), or a
        call the key's scope does not allow (403)."""
        content_type = (_header(headers, b"content-type") or "").partition(";")[0].strip().lower()
        if content_type != "application/json":
            return 415, _rpc_error(-32600, f"send the JSON-RPC message with `Content-Type: application/json` "
                                           f"(this request's: {content_type[:60] or 'none'})")
        version = _header(headers, b"mcp-protocol-version")
        if version is not None and version.strip() not in self.protocol_versions:
            return 400, _rpc_error(-32600, f"MCP-Protocol-Version {version.strip()[:40]!r} is not one this "
                                           f"server speaks: {', '.join(self.protocol_versions)}")
        try:
            payload = json.loads(body)
        except ValueError:
            return None  # the MCP app answers the parse error
        scope_refusal = self._scope_refusal(payload, record)  # first: a batch may hide a forbidden call
        if scope_refusal is not None:
            return 403, scope_refusal
        problem = message_problem(payload)
        if problem is not None:
            request_id = payload.get("id") if isinstance(payload, dict) else None
            return 400, _rpc_error(-32600, problem, request_id if _valid_id(request_id) else None)
        return None

    def _scope_refusal(self, payload: Any, record: ApiKey) -> bytes | None:
        for call in tool_calls(payload):
            needed, why = needed_scope(call, self.tool_scopes, record.tenant)
            if scope_allows(record.scope, needed):
                continue
            return _rpc_error(
                FORBIDDEN_CODE,
                f"API key {record.prefix}… ({record.name!r}, tenant {record.tenant!r}) has {record.scope} "
                f"scope, which may {SCOPE_MEANS[record.scope]}; {why}, which may {SCOPE_MEANS[needed]}. "
                f"Use a key made with `ask-fable keys create --scope {needed}`",
                call.request_id if _valid_id(call.request_id) else None,
                data={"required_scope": needed, "key_scope": record.scope, "tool": call.name},
            )
        return None


def _replay(body: bytes, gone: asyncio.Event) -> Receive:
    """A ``receive`` that yields the already-read body once, then the disconnect once ``gone`` is set
    (the guard's watcher is the only reader of the real ``receive``)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    return replay


def build_http_app(server: AskFableServer, keys: ApiKeyStore,
                   options: HttpOptions | None = None) -> HttpGuard:
    """The guarded ASGI app serving ``server`` at ``/mcp`` (its lifespan runs the session manager)."""
    from mcp.server.transport_security import TransportSecuritySettings

    options = options or HttpOptions()
    inner = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=options.max_body_bytes,
        # Host and Origin are checked by HttpGuard on every bind address.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=options.host,
    )
    scopes = {name: spec.scope for name, spec in server.specs.items()}
    return HttpGuard(inner, keys=keys, tool_scopes=scopes, options=options,
                     ui=ui_app(server, keys, options))


def ui_app(server: AskFableServer, keys: ApiKeyStore, options: HttpOptions) -> ASGIApp:
    """The web view of traces and stats served under ``/ui`` (``surface/ui``): its pages are
    reached through a login form that takes a key of ``read`` scope or higher, not a bearer header."""
    from ask_fable.surface.ui.app import KeyLogin, build_ui, checked_host, secure_headers

    return checked_host(secure_headers(build_ui(server.app, KeyLogin(keys))), options.host_allowlist(),
                        options.origin_allowlist())
