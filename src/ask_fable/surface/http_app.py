"""Streamable HTTP: the registry's server at ``/mcp`` (stateless, JSON responses) plus ``/healthz``.

One ASGI guard sits in front of the MCP app and checks, in order:

1. ``Host`` against the allowed hosts (421) and ``Origin`` against the allowed origins (403), on
   every bind address — DNS rebinding does not care which interface we listen on;
2. ``/healthz`` is the readiness check (no key): ``200 {"status": "ok"}`` while the store answers,
   ``503 {"status": "unavailable", "reason": ...}`` while it does not (see :class:`Readiness`);
3. no credential in the query string (401: keys travel only in ``Authorization``);
4. ``Authorization: Bearer <key>`` names an active key (401 otherwise; 503 with ``kind:
   "unavailable"`` when the key store cannot be asked);
5. the body fits ``max_body_bytes`` (413);
6. the key's scope allows every tool it calls (403 with a JSON-RPC error naming the scope needed):
   each tool's scope comes from its declared effects (``ToolSpec.scope``), and a ``tenant``
   argument naming anyone but the key's own tenant needs ``admin``.

The ``Authorization`` header is removed before the request reaches the MCP app, so nothing
downstream (tools, backends, traces) can see or forward the client's key. Access log lines carry
the path only, never the query string.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from ask_fable.access import SCOPE_MEANS, scope_allows, stronger
from ask_fable.access import Scope as KeyScope

if TYPE_CHECKING:
    import anyio
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ask_fable.stores.interfaces import ApiKeyStore
    from ask_fable.stores.records import ApiKey
    from ask_fable.surface.server import AskFableServer

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"
HEALTH_PATH = "/healthz"
LOCAL_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
LOCAL_ORIGINS: tuple[str, ...] = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
WILDCARD_BINDS: frozenset[str] = frozenset({"0.0.0.0", "::", ""})
#: Query parameters that look like someone put a credential in the URL.
CREDENTIAL_PARAMS: frozenset[str] = frozenset(
    {"key", "api_key", "apikey", "api-key", "token", "access_token", "auth", "authorization", "bearer"}
)
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

log = logging.getLogger("ask_fable.http")


@dataclass(frozen=True)
class HttpOptions:
    """How the HTTP surface binds and what it accepts."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int = 4_194_304

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


def _split_host(value: str) -> tuple[str, str | None]:
    """``name``/``port`` of a Host header or allow-list entry (IPv6 literals keep their brackets)."""
    text = value.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end == -1:
            return text, None
        rest = text[end + 1 :]
        return text[: end + 1], rest[1:] if rest.startswith(":") else None
    name, sep, port = text.rpartition(":")
    if sep and ":" not in name and (port.isdigit() or port == "*"):
        return name, port
    return text, None


def host_allowed(host: str | None, allowed: list[str]) -> bool:
    """Whether a Host header matches an entry (``name`` or ``name:*`` = any port, ``name:port``, ``*``)."""
    if not host:
        return False
    name, port = _split_host(host)
    for entry in allowed:
        if entry.strip() == "*":
            return True
        entry_name, entry_port = _split_host(entry)
        if entry_name == name and (entry_port in (None, "*") or entry_port == port):
            return True
    return False


def origin_allowed(origin: str | None, allowed: list[str]) -> bool:
    """Absent Origin (not a browser) passes; otherwise exact, ``scheme://host:*`` or ``*`` match."""
    if not origin:
        return True
    origin = origin.strip().lower().rstrip("/")
    for entry in allowed:
        entry = entry.strip().lower().rstrip("/")
        if entry == "*" or entry == origin:
            return True
        if entry.endswith(":*"):
            base = entry[:-2]
            if origin == base or (origin.startswith(base + ":") and origin[len(base) + 1 :].isdigit()):
                return True
    return False


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
            calls.append(ToolCall(message.get("id"), str(params.get("name")),
                                  None if tenant is None else str(tenant)))
    return calls


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
    and no second probe starts until it does, so a hung database cannot pile up threads.
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

    def _run_probe(self) -> bool:
        try:
            return self.probe()
        finally:
            self._in_flight = False

    async def ready(self) -> bool:
        """The store's answer, probed afresh when the last one is older than ``fresh_s``."""
        import anyio

        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if time.monotonic() - self._answered_at < self.fresh_s:
                return self._answer
            answer = False
            if not self._in_flight:
                self._in_flight = True
                with anyio.move_on_after(self.timeout_s):
                    answer = await anyio.to_thread.run_sync(self._run_probe, abandon_on_cancel=True)
            self._answer, self._answered_at = answer, time.monotonic()
            return answer


class HttpGuard:
    """The ASGI middleware in front of the MCP app (see the module docstring for the checks)."""

    def __init__(self, app: ASGIApp, *, keys: ApiKeyStore, tool_scopes: dict[str, KeyScope],
                 options: HttpOptions, mcp_path: str = MCP_PATH, readiness: Readiness | None = None) -> None:
        self.app = app
        self.keys = keys
        self.readiness = readiness or Readiness(store_probe(keys))
        #: The scope each served tool needs (``ToolSpec.scope``).
        self.tool_scopes = tool_scopes
        self.options = options
        self.allowed_hosts = options.host_allowlist()
        self.allowed_origins = options.origin_allowlist()
        self.mcp_path = mcp_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the request, then hand it (without its Authorization header) to the MCP app."""
        if scope["type"] == "websocket":  # nothing here speaks WebSocket; refuse before any check
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan: runs the MCP session manager
            await self.app(scope, receive, send)
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
            # The path only: a query string could carry a credential someone pasted into a URL.
            log.info("%s %s %s %.0fms", scope.get("method"), scope.get("path"),
                     status_seen[0] if status_seen else "-", (time.monotonic() - started) * 1000)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        if not host_allowed(_header(headers, b"host"), self.allowed_hosts):
            await _respond(send, 421, b"Invalid Host header (add it with --allowed-host)", "text/plain")
            return
        if not origin_allowed(_header(headers, b"origin"), self.allowed_origins):
            await _respond(send, 403, b"Invalid Origin header (add it with --allowed-origin)", "text/plain")
            return
        path = scope.get("path", "")
        if path.rstrip("/") == HEALTH_PATH:
            await self._health(scope, send)
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
        import anyio

        try:
            record = await anyio.to_thread.run_sync(self.keys.verify, presented)
        except Exception as exc:  # the store did not answer: say so, never how (it may name hosts)
            log.warning("key check failed: the store did not answer (%s)", type(exc).__name__)
            await self._unavailable(send)
            return
        if record is None:
            await self._unauthorized(send, "invalid or revoked API key", error="invalid_token")
            return
        try:
            body = await self._read_body(headers, receive)
        except _BodyTooLarge:
            await _respond(send, 413, _rpc_error(-32600, f"request body larger than "
                                                         f"{self.options.max_body_bytes} bytes"),
                           "application/json")
            return
        if scope.get("method") == "POST":
            refusal = self._scope_refusal(body, record)
            if refusal is not None:
                await _respond(send, 403, refusal, "application/json")
                return
        inner_scope = dict(scope)
        inner_scope["headers"] = [(n, v) for n, v in headers if n.lower() != b"authorization"]
        inner_scope["ask_fable.api_key"] = record
        await self.app(inner_scope, _replay(body, receive), send)

    async def _health(self, scope: Scope, send: Send) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed", "text/plain", [(b"allow", b"GET, HEAD")])
            return
        ready = await self.readiness.ready()
        status = 200 if ready else 503
        body = (b'{"status":"ok"}' if ready
                else json.dumps({"status": "unavailable", "reason": STORE_DOWN_REASON}).encode())
        extra = [] if ready else [(b"retry-after", str(RETRY_AFTER_S).encode())]
        if scope.get("method") == "HEAD":
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"), *extra]})
            await send({"type": "http.response.body", "body": b""})
            return
        await _respond(send, status, body, "application/json", extra)

    async def _unavailable(self, send: Send) -> None:
        """503 with a JSON-RPC error whose data is the structured ``unavailable`` result."""
        detail = f"{STORE_DOWN_REASON}; the call was not run"
        data = {"status": "error", "kind": "unavailable", "detail": detail,
                "hint": "retry in a few seconds; /healthz says when this server is ready again"}
        await _respond(send, 503, _rpc_error(UNAVAILABLE_CODE, detail, data=data), "application/json",
                       [(b"retry-after", str(RETRY_AFTER_S).encode())])

    async def _unauthorized(self, send: Send, message: str, error: str | None = None) -> None:
        challenge = 'Bearer realm="ask-fable"' + (f', error="{error}"' if error else "")
        await _respond(send, 401, _rpc_error(UNAUTHORIZED_CODE, message), "application/json",
                       [(b"www-authenticate", challenge.encode())])

    async def _read_body(self, headers: list[tuple[bytes, bytes]], receive: Receive) -> bytes:
        limit = self.options.max_body_bytes
        declared = _header(headers, b"content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise _BodyTooLarge
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _BodyTooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    def _scope_refusal(self, body: bytes, record: ApiKey) -> bytes | None:
        try:
            payload = json.loads(body)
        except ValueError:
            return None  # not a tool call; the MCP app answers the parse error
        for call in tool_calls(payload):
            needed, why = needed_scope(call, self.tool_scopes, record.tenant)
            if scope_allows(record.scope, needed):
                continue
            return _rpc_error(
                FORBIDDEN_CODE,
                f"API key {record.prefix}… ({record.name!r}, tenant {record.tenant!r}) has {record.scope} "
                f"scope, which may {SCOPE_MEANS[record.scope]}; {why}, which may {SCOPE_MEANS[needed]}. "
                f"Use a key made with `ask-fable keys create --scope {needed}`",
                call.request_id,
                data={"required_scope": needed, "key_scope": record.scope, "tool": call.name},
            )
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields the already-read body once, then defers to the real one."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def build_http_app(server: AskFableServer, keys: ApiKeyStore, options: HttpOptions | None = None) -> ASGIApp:
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
    return HttpGuard(inner, keys=keys, tool_scopes=scopes, options=options)


def _uvicorn_config(app: ASGIApp, options: HttpOptions) -> Any:
    import uvicorn

    return uvicorn.Config(
        app, host=options.host, port=options.port, access_log=False, log_level="warning",
        lifespan="on", timeout_graceful_shutdown=5, server_header=False,
        limit_concurrency=None, backlog=2048,
    )


def bind_socket(options: HttpOptions) -> socket.socket:
    """A socket bound to the options' host and port; OSError (with its reason) when it cannot be."""
    family, kind, proto, _, address = socket.getaddrinfo(
        options.host or None, options.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def serve(app: ASGIApp, options: HttpOptions, sock: socket.socket | None = None) -> None:
    """Run ``app`` with uvicorn until interrupted (on ``sock`` when already bound)."""
    import uvicorn

    uvicorn.Server(_uvicorn_config(app, options)).run(sockets=[sock] if sock is not None else None)


@contextmanager
def serve_in_thread(app: ASGIApp, options: HttpOptions | None = None) -> Iterator[str]:
    """Serve ``app`` on an ephemeral loopback port in a background thread; yields the base URL."""
    import uvicorn

    options = options or HttpOptions(port=0)
    sock = bind_socket(options)
    port = sock.getsockname()[1]
    server = uvicorn.Server(_uvicorn_config(app, options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the HTTP server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{options.host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
