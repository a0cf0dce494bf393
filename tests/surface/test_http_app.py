"""The HTTP guard: Host/Origin checks, bearer keys, body cap and key scopes, ahead of the MCP app."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from ask_fable.stores.keys import KeyStore
from ask_fable.surface.http_app import (
    HttpGuard,
    HttpOptions,
    Readiness,
    ToolCall,
    query_has_credential,
    store_probe,
    tool_calls,
)
from ask_fable.surface.http_common import host_allowed, origin_allowed


class Recorder:
    """An inner ASGI app that records what reached it and answers 200."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.scopes.append(scope)
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"ok":true}'})


@pytest.fixture
def keys(tmp_path: Path) -> KeyStore:
    return KeyStore(tmp_path / "keys.db")


def _client(inner: Recorder, keys: KeyStore, **options: Any) -> httpx2.AsyncClient:
    scopes = {"ask_fable_help": "read", "trace_list": "read", "ask_council": "ask", "context_write": "ask",
              "configure_tracing": "admin"}
    guard = HttpGuard(inner, keys=keys, tool_scopes=scopes, options=HttpOptions(**options))
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=guard), base_url="http://127.0.0.1:8765")


def _call(name: str, request_id: int = 1, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def test_a_valid_key_reaches_the_mcp_app_without_its_authorization_header(keys: KeyStore) -> None:
    _, key = keys.create("ci", "ask")
    inner = Recorder()
    async with _client(inner, keys) as client:
        response = await client.post("/mcp", json=_call("ask_council"),
                                     headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200
    headers = dict(inner.scopes[0]["headers"])
    assert b"authorization" not in headers
    assert key.encode() not in b"".join(k + v for k, v in inner.scopes[0]["headers"])
    assert json.loads(inner.bodies[0])["params"]["name"] == "ask_council"
    assert inner.scopes[0]["ask_fable.api_key"].name == "ci"


@pytest.mark.parametrize("authorization",
                         [None, "Bearer", "Basic abc", "Bearer afk_" + "z" * 32, "Bearer nope"])
async def test_missing_or_wrong_keys_get_401(keys: KeyStore, authorization: str | None) -> None:
    keys.create("ci", "ask")
    inner = Recorder()
    headers = {"Authorization": authorization} if authorization else {}
    async with _client(inner, keys) as client:
        response = await client.post("/mcp", json=_call("ask_fable_help"), headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["error"]["message"]
    assert inner.scopes == []


async def test_a_revoked_key_gets_401(keys: KeyStore) -> None:
    record, key = keys.create("ci", "ask")
    keys.revoke(record.id)
    async with _client(Recorder(), keys) as client:
        response = await client.post("/mcp", json=_call("ask_fable_help"),
                                     headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]


@pytest.mark.parametrize("query", ["api_key={key}", "token={key}", "x={key}", "key=whatever"])
async def test_a_key_in_the_query_string_is_never_accepted(keys: KeyStore, query: str) -> None:
    _, key = keys.create("ci", "ask")
    inner = Recorder()
    async with _client(inner, keys) as client:
        alone = await client.post(f"/mcp?{query.format(key=key)}", json=_call("ask_fable_help"))
        with_header = await client.post(f"/mcp?{query.format(key=key)}", json=_call("ask_fable_help"),
                                        headers={"Authorization": f"Bearer {key}"})
    assert alone.status_code == 401 and with_header.status_code == 401
    assert "Authorization header" in with_header.json()["error"]["message"]
    assert key not in with_header.text
    assert inner.scopes == []


async def test_a_read_key_may_list_and_call_read_only_tools(keys: KeyStore) -> None:
    _, key = keys.create("viewer", "read")
    inner = Recorder()
    headers = {"Authorization": f"Bearer {key}"}
    async with _client(inner, keys) as client:
        listing = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                    headers=headers)
        read_only = await client.post("/mcp", json=_call("trace_list"), headers=headers)
    assert listing.status_code == 200 and read_only.status_code == 200
    assert len(inner.scopes) == 2


async def test_a_read_key_on_an_ask_tool_gets_403_naming_the_scope_needed(keys: KeyStore) -> None:
    _, key = keys.create("viewer", "read")
    inner = Recorder()
    headers = {"Authorization": f"Bearer {key}"}
    async with _client(inner, keys) as client:
        single = await client.post("/mcp", json=_call("ask_council", 7), headers=headers)
        batch = await client.post("/mcp", json=[_call("trace_list", 1), _call("context_write", 2)],
                                  headers=headers)
    assert single.status_code == 403
    error = single.json()
    assert error["id"] == 7
    message = error["error"]["message"]
    assert "read scope" in message and "'ask_council' needs ask scope" in message
    assert error["error"]["data"] == {"required_scope": "ask", "key_scope": "read", "tool": "ask_council"}
    assert batch.status_code == 403 and "context_write" in batch.json()["error"]["message"]
    assert inner.scopes == []


async def test_only_an_admin_key_configures_or_names_another_tenant(keys: KeyStore) -> None:
    _, asker = keys.create("alice", "ask")
    _, admin = keys.create("ops", "admin")
    inner = Recorder()
    async with _client(inner, keys) as client:
        async def post(key: str, body: dict[str, Any]) -> httpx2.Response:
            return await client.post("/mcp", json=body, headers={"Authorization": f"Bearer {key}"})

        configure = await post(asker, _call("configure_tracing"))
        foreign = await post(asker, _call("trace_list", tenant="bob"))
        every = await post(asker, _call("trace_list", tenant="*"))
        own = await post(asker, _call("trace_list", tenant="alice"))
        admin_calls = [await post(admin, body) for body in (
            _call("configure_tracing"), _call("trace_list", tenant="bob"), _call("trace_list", tenant="*"))]
    assert configure.status_code == 403 and configure.json()["error"]["data"]["required_scope"] == "admin"
    for refused in (foreign, every):
        assert refused.status_code == 403
        assert "another tenant's data) needs admin scope" in refused.json()["error"]["message"]
    assert own.status_code == 200
    assert [r.status_code for r in admin_calls] == [200, 200, 200]


@pytest.mark.parametrize("host",
                         ["evil.example", "evil.example:8765", "127.0.0.1.evil.example", "localhost.evil:80"])
async def test_a_hostile_host_gets_421(keys: KeyStore, host: str) -> None:
    _, key = keys.create("ci", "ask")
    async with _client(Recorder(), keys) as client:
        response = await client.post("/mcp", json=_call("ask_fable_help"),
                                     headers={"Authorization": f"Bearer {key}", "Host": host})
    assert response.status_code == 421


async def test_a_hostile_origin_gets_403(keys: KeyStore) -> None:
    _, key = keys.create("ci", "ask")
    async with _client(Recorder(), keys) as client:
        response = await client.post("/mcp", json=_call("ask_fable_help"),
                                     headers={"Authorization": f"Bearer {key}", "Origin": "http://evil.example"})
        local = await client.post("/mcp", json=_call("ask_fable_help"),
                                  headers={"Authorization": f"Bearer {key}", "Origin": "http://localhost:3000"})
    assert response.status_code == 403
    assert local.status_code == 200


async def test_host_checks_apply_on_a_wildcard_bind_too(keys: KeyStore) -> None:
    _, key = keys.create("ci", "ask")
    auth = {"Authorization": f"Bearer {key}"}
    inner = Recorder()
    guard = HttpGuard(inner, keys=keys, tool_scopes={},
                      options=HttpOptions(host="0.0.0.0", allowed_hosts=("mcp.example.com",),
                                          allowed_origins=("https://app.example.com",)))
    transport = httpx2.ASGITransport(app=guard)
    async with httpx2.AsyncClient(transport=transport, base_url="http://mcp.example.com") as client:
        ok = await client.post("/mcp", json=_call("x"), headers={**auth, "Origin": "https://app.example.com"})
        evil_host = await client.post("/mcp", json=_call("x"), headers={**auth, "Host": "10.0.0.5:8765"})
        evil_origin = await client.post("/mcp", json=_call("x"), headers={**auth, "Origin": "https://evil.example"})
    assert ok.status_code == 200
    assert evil_host.status_code == 421
    assert evil_origin.status_code == 403


async def test_an_oversized_body_gets_413(keys: KeyStore) -> None:
    _, key = keys.create("ci", "ask")
    inner = Recorder()
    auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    async def chunks() -> Any:
        for _ in range(8):
            yield b" " * 512

    async with _client(inner, keys, max_body_bytes=2048) as client:
        declared = await client.post("/mcp", content=b" " * 4096, headers=auth)
        streamed = await client.post("/mcp", content=chunks(), headers=auth)
        fits = await client.post("/mcp", json=_call("ask_fable_help"), headers=auth)
    assert declared.status_code == 413
    assert streamed.status_code == 413
    assert fits.status_code == 200
    assert len(inner.scopes) == 1


async def test_healthz_needs_no_key_and_says_nothing_else(keys: KeyStore) -> None:
    async with _client(Recorder(), keys) as client:
        response = await client.get("/healthz")
        post = await client.post("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert post.status_code == 405


def test_host_matching_rules() -> None:
    allowed = HttpOptions().host_allowlist()
    assert host_allowed("127.0.0.1:8765", allowed)
    assert host_allowed("localhost", allowed)
    assert host_allowed("[::1]:9000", allowed)
    assert not host_allowed("example.com", allowed)
    assert not host_allowed(None, allowed)
    assert host_allowed("mcp.example.com:443", ["mcp.example.com:443"])
    assert not host_allowed("mcp.example.com:8443", ["mcp.example.com:443"])
    assert "0.0.0.0" not in HttpOptions(host="0.0.0.0").host_allowlist()
    assert "10.1.2.3" in HttpOptions(host="10.1.2.3").host_allowlist()


def test_origin_matching_rules() -> None:
    allowed = HttpOptions(allowed_origins=("https://app.example.com",)).origin_allowlist()
    assert origin_allowed(None, allowed)
    assert origin_allowed("http://localhost:5173", allowed)
    assert origin_allowed("https://app.example.com", allowed)
    assert not origin_allowed("https://app.example.com.evil.io", allowed)
    assert not origin_allowed("http://localhost.evil.io:80", allowed)
    assert not origin_allowed("null", allowed)


def test_credential_detection_in_query_strings() -> None:
    assert query_has_credential(b"api_key=abc")
    assert query_has_credential(b"access_token=abc")
    assert query_has_credential(b"q=afk_" + b"a" * 32)
    assert not query_has_credential(b"")
    assert not query_has_credential(b"page=2")


def test_tool_calls_reads_single_messages_and_batches() -> None:
    assert tool_calls(_call("a", 3)) == [ToolCall(3, "a", None)]
    assert tool_calls(_call("a", 3, tenant="bob")) == [ToolCall(3, "a", "bob")]
    assert tool_calls([_call("a", 1), {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]) == [
        ToolCall(1, "a", None)]
    assert tool_calls({"method": "tools/call", "params": "junk"}) == [ToolCall(None, "None", None)]


class HangingKeys(KeyStore):
    """A key store whose look-ups block until released, as a database that stopped answering."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.release = threading.Event()
        self.lookups = 0

    def get(self, key_id: int | str) -> Any:
        self.lookups += 1
        self.release.wait(30)
        return super().get(key_id)


async def test_healthz_is_503_while_the_store_hangs_and_200_once_it_answers(tmp_path: Path) -> None:
    """A hung database makes the replica not ready within the health timeout; the probes that
    follow start no second look-up while the first still hangs; ready again once it answers."""
    keys = HangingKeys(tmp_path / "keys.db")
    readiness = Readiness(store_probe(keys), timeout_s=0.2, fresh_s=0)
    guard = HttpGuard(Recorder(), keys=keys, tool_scopes={}, options=HttpOptions(), readiness=readiness)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=guard),
                                  base_url="http://127.0.0.1:8765") as client:
        with anyio.fail_after(10):
            hung = [await client.get("/healthz") for _ in range(3)]
            head = await client.head("/healthz")
        keys.release.set()
        with anyio.fail_after(10):
            while (await client.get("/healthz")).status_code != 200:
                await anyio.sleep(0.01)
    assert [r.status_code for r in hung] == [503, 503, 503]
    assert hung[0].json() == {"status": "unavailable", "reason": "the database is not answering"}
    assert hung[0].headers["retry-after"]
    assert head.status_code == 503 and head.content == b""
    assert keys.lookups <= 2


async def test_a_call_the_key_store_cannot_check_is_503_unavailable_without_detail(tmp_path: Path) -> None:
    class BrokenKeys(KeyStore):
        def verify(self, presented: str, *, touch: bool = True) -> Any:
            raise OSError("could not connect to db.internal:5432 as admin:hunter2")

    async with _client(Recorder(), BrokenKeys(tmp_path / "keys.db")) as client:
        response = await client.post("/mcp", json=_call("ask_fable_help"),
                                     headers={"Authorization": "Bearer afk_" + "a" * 32})
    assert response.status_code == 503 and response.headers["retry-after"]
    error = response.json()["error"]
    assert error["data"]["kind"] == "unavailable" and error["data"]["status"] == "error"
    assert "db.internal" not in response.text and "hunter2" not in response.text


async def test_a_lifespan_that_waits_for_requests_still_finishing_shuts_down_cleanly(keys: KeyStore) -> None:
    """Before: the key-use flusher's cancel scope enclosed the app's lifespan, so stopping the flusher
    on ``lifespan.shutdown`` also cancelled the app while it waited for requests still finishing
    (the MCP session manager does, mid-call), and the server printed "Application shutdown failed"
    with a traceback. Now only the flusher stops; the app's shutdown runs to its end."""
    finished: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert (await receive())["type"] == "lifespan.startup"
        await send({"type": "lifespan.startup.complete"})
        assert (await receive())["type"] == "lifespan.shutdown"
        await anyio.sleep(0.05)  # a request task still unwinding its cancellation
        finished.append("shutdown")
        await send({"type": "lifespan.shutdown.complete"})

    guard = HttpGuard(app, keys=keys, tool_scopes={}, options=HttpOptions())
    to_app, from_server = anyio.create_memory_object_stream[dict[str, Any]](4)
    to_server, from_app = anyio.create_memory_object_stream[dict[str, Any]](4)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(guard, {"type": "lifespan"}, from_server.receive, to_server.send)
            await to_app.send({"type": "lifespan.startup"})
            assert (await from_app.receive())["type"] == "lifespan.startup.complete"
            await to_app.send({"type": "lifespan.shutdown"})
            assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
    assert finished == ["shutdown"]


def test_one_key_never_gets_more_than_half_of_the_request_slots() -> None:
    """The per-key bound is its setting, lowered to half the server's slots when that is smaller, so
    no one key holds them all (one slot each when the server has a single one)."""
    assert HttpOptions(max_requests=256, max_key_requests=32).key_request_bound == 32
    assert HttpOptions(max_requests=20, max_key_requests=32).key_request_bound == 10
    assert HttpOptions(max_requests=1, max_key_requests=32).key_request_bound == 1
    assert HttpOptions().key_request_bound < HttpOptions().max_requests
