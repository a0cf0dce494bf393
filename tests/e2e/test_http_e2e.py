"""Streamable HTTP end to end: the mcp SDK's HTTP client against a server started on 127.0.0.1,
with HTTP backends on the loopback fake provider."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ask_fable.config import config_file_path, load_settings
from ask_fable.core.app import App
from ask_fable.stores.keys import KeyStore
from ask_fable.surface.http_app import HttpOptions, build_http_app
from ask_fable.surface.http_runner import serve_in_thread
from ask_fable.surface.server import build_server
from tests.fakes.fake_provider import FakeProvider

BACKEND_KEY = "sk-backend-glm-0123456789abcdef"
MAX_BODY = 64 * 1024


@dataclass
class Served:
    url: str
    keys: KeyStore
    write_key: str
    read_key: str
    fake: FakeProvider


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """An HTTP server on an ephemeral loopback port serving every tool, GLM on the fake provider."""
    with FakeProvider() as fake:
        # Loads beyond a key's default quota of calls in flight, and of requests in progress: both
        # are raised here.
        settings = load_settings(glm_api_key=BACKEND_KEY, glm_base_url=f"{fake.base_url}/api/anthropic",
                                 cache=False, hub=False, key_concurrent=0)
        keys = KeyStore(tmp_path / "keys.db")
        _, write_key = keys.create("writer", "ask", "team")
        _, read_key = keys.create("reader", "read", "team")
        app = build_http_app(build_server(App(settings), toolsets=["all"]), keys,
                             HttpOptions(port=0, max_body_bytes=MAX_BODY, max_key_requests=128))
        with serve_in_thread(app) as url:
            yield Served(url=url, keys=keys, write_key=write_key, read_key=read_key, fake=fake)


@asynccontextmanager
async def connect(url: str, key: str | None, mode: str = "legacy") -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
        yield client


def _rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_write_key_lists_and_calls_tools(served: Served, mode: str) -> None:
    async with connect(served.url, served.write_key, mode) as client:
        listing = await client.list_tools()
        result = await client.call_tool("ask_fable_help", {"topic": "modes"})
    assert "ask_council" in {tool.name for tool in listing.tools}
    assert not result.is_error
    assert result.structured_content["status"] == "ok"
    assert "ask_council" in result.structured_content["text"]


async def test_requests_without_a_valid_key_get_401(served: Served) -> None:
    record = served.keys.get(1)
    revoked_record, revoked = served.keys.create("gone", "ask")
    served.keys.revoke(revoked_record.id)
    body = _rpc("tools/list")
    async with httpx2.AsyncClient(base_url=served.url, headers=MCP_HEADERS) as http:
        none = await http.post("/mcp", json=body)
        wrong = await http.post("/mcp", json=body, headers={"Authorization": "Bearer afk_" + "w" * 32})
        gone = await http.post("/mcp", json=body, headers={"Authorization": f"Bearer {revoked}"})
        in_query = await http.post(f"/mcp?api_key={served.write_key}", json=body)
        good = await http.post("/mcp", json=body, headers={"Authorization": f"Bearer {served.write_key}"})
    assert [r.status_code for r in (none, wrong, gone, in_query)] == [401, 401, 401, 401]
    assert all(r.headers["www-authenticate"].startswith("Bearer") for r in (none, wrong, gone, in_query))
    assert good.status_code == 200
    assert record is not None


async def test_the_sdk_client_cannot_connect_without_a_key(served: Served) -> None:
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 as its own error type
        async with connect(served.url, None) as client:
            await client.list_tools()


async def test_a_read_key_cannot_spend_and_an_ask_key_cannot_configure(served: Served) -> None:
    async with connect(served.url, served.read_key) as client:
        read_listing = await client.list_tools()
        looked_up = await client.call_tool("trace_list", {})
        with pytest.raises(Exception, match="needs ask scope") as asked:
            await client.call_tool("ask_glm", {"question": "Is this lock ordering safe?"})
    async with connect(served.url, served.write_key) as client:
        listing = await client.list_tools()
        with pytest.raises(Exception, match="needs admin scope") as configured:
            await client.call_tool("configure_ollama_council", {"models": ["glm-5.2"]})
    assert "trace_list" in {tool.name for tool in read_listing.tools}
    assert "ask_glm" not in {tool.name for tool in read_listing.tools}
    annotations = {tool.name: tool.annotations for tool in listing.tools}
    assert annotations["ask_glm"].read_only_hint is True and annotations["ask_glm"].open_world_hint is True
    assert "configure_ollama_council" not in annotations
    assert looked_up.structured_content["status"] == "ok"
    assert "ask_glm" in str(asked.value) and "configure_ollama_council" in str(configured.value)
    assert served.fake.requests_for("anthropic") == []
    assert not config_file_path().exists()


async def test_a_read_key_gets_http_403_with_a_clear_message(served: Served) -> None:
    body = _rpc("tools/call", {"name": "context_write", "arguments": {"key": "k", "value": "v"}})
    async with httpx2.AsyncClient(base_url=served.url, headers=MCP_HEADERS) as http:
        response = await http.post("/mcp", json=body, headers={"Authorization": f"Bearer {served.read_key}"})
    assert response.status_code == 403
    error = response.json()["error"]
    assert "read scope" in error["message"] and "'context_write' needs ask scope" in error["message"]
    assert "keys create --scope ask" in error["message"]
    assert error["data"] == {"required_scope": "ask", "key_scope": "read", "tool": "context_write"}


async def test_hostile_host_and_origin_are_refused(served: Served) -> None:
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {served.write_key}"}
    async with httpx2.AsyncClient(base_url=served.url) as http:
        host = await http.post("/mcp", json=_rpc("tools/list"), headers={**auth, "Host": "attacker.example"})
        origin = await http.post("/mcp", json=_rpc("tools/list"),
                                 headers={**auth, "Origin": "https://attacker.example"})
    assert host.status_code == 421
    assert origin.status_code == 403


async def test_an_oversized_body_gets_413(served: Served) -> None:
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {served.write_key}"}
    question = "x" * (MAX_BODY + 1)
    body = _rpc("tools/call", {"name": "ask_glm", "arguments": {"question": question}})
    async with httpx2.AsyncClient(base_url=served.url) as http:
        response = await http.post("/mcp", json=body, headers=auth)
    assert response.status_code == 413
    assert served.fake.requests_for("anthropic") == []


async def test_fifty_concurrent_help_calls_from_ten_clients(served: Served) -> None:
    results: list[Any] = []

    async def one_client() -> None:
        async with connect(served.url, served.write_key) as client, anyio.create_task_group() as group:
            for _ in range(5):
                async def call() -> None:
                    results.append(await client.call_tool("ask_fable_help", {"topic": "modes"}))
                group.start_soon(call)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(one_client)
    assert len(results) == 50
    assert all(not r.is_error and r.structured_content["status"] == "ok" for r in results)


async def test_fifty_concurrent_asks_on_the_fake_provider_never_leak_the_client_key(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="ask_fable.http")
    served.fake.enqueue("anthropic", times=None, delay=0.05)
    results: list[Any] = []

    async with connect(served.url, served.write_key) as client:
        async def ask(i: int) -> None:
            results.append(await client.call_tool(
                "ask_glm", {"question": f"Question {i}: should this cache key include the locale?"}))

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for i in range(50):
                    group.start_soon(ask, i)

    assert len(results) == 50
    errors = [r.structured_content for r in results if r.is_error or r.structured_content["status"] != "ok"]
    assert errors == []
    requests = served.fake.requests_for("anthropic")
    assert len(requests) == 50
    for request in requests:
        wire = request.path + "".join(f"{k}: {v}" for k, v in request.headers.items()) + request.body.decode()
        assert served.write_key not in wire
        assert served.write_key[4:] not in wire
        assert BACKEND_KEY in wire  # the backend's own key is what goes upstream
    assert "/mcp" in caplog.text
    assert served.write_key not in caplog.text


async def test_a_key_in_the_url_is_not_logged(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    """Neither in the query string nor in the path."""
    caplog.set_level(logging.DEBUG)
    async with httpx2.AsyncClient(base_url=served.url, headers=MCP_HEADERS) as http:
        in_query = await http.post(f"/mcp?token={served.write_key}", json=_rpc("tools/list"))
        in_path = await http.post(f"/mcp/{served.write_key}", json=_rpc("tools/list"))
    assert (in_query.status_code, in_path.status_code) == (401, 401)
    server = ("ask_fable", "uvicorn", "mcp")

    def server_lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name.startswith(server)]

    # The access line is written once the response has gone out, on the server's thread.
    with anyio.fail_after(10):
        while sum("/mcp" in line for line in server_lines()) < 2:
            await anyio.sleep(0.01)
    assert all(served.write_key not in line for line in server_lines())


async def test_healthz(served: Served) -> None:
    async with httpx2.AsyncClient(base_url=served.url) as http:
        response = await http.get("/healthz")
        head = await http.head("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert head.status_code == 200 and head.content == b""


async def test_each_api_key_is_its_own_caller(served: Served) -> None:
    """Calls are attributed to the key that made them, not to whichever client came first; a read key
    of the same tenant sees them all."""
    _, second_key = served.keys.create("second", "ask", "team")
    for key in (served.write_key, second_key):
        async with connect(served.url, key) as client:
            result = await client.call_tool("ask_glm", {"question": "Is this retry loop bounded?"})
            assert result.structured_content["status"] == "ok"
    async with connect(served.url, served.read_key) as client:
        listed = (await client.call_tool("trace_list", {"tool": "ask_glm"})).structured_content
    agents = {trace["agent_id"] for trace in listed["traces"]}
    assert agents == {"key:writer", "key:second"}
    assert {trace["tenant"] for trace in listed["traces"]} == {"team"}


async def test_two_tenants_on_the_same_session_and_model_hold_two_conversations(served: Served) -> None:
    """ask(model="glm", session="s") from keys of two tenants: a follow-up carries only its own
    tenant's turn."""
    _, other_key = served.keys.create("outsider", "ask", "other")
    for key, who in ((served.write_key, "writer"), (other_key, "outsider")):
        async with connect(served.url, key) as client:
            result = await client.call_tool("ask", {"question": f"Question from the {who}?", "model": "glm",
                                                    "session": "s"})
            assert (result.structured_content["status"], result.structured_content["turn"]) == ("ok", 1)
    async with connect(served.url, served.write_key) as client:
        again = await client.call_tool("ask", {"question": "A follow-up?", "model": "glm", "session": "s"})
    assert again.structured_content["turn"] == 2
    carried = str(served.fake.last_json("anthropic")["messages"])
    assert "Question from the writer?" in carried and "Question from the outsider?" not in carried


def test_conversations_are_private_to_a_tenant() -> None:
    from types import SimpleNamespace

    from ask_fable.surface.context import ToolContext

    def ctx_for(key: Any) -> ToolContext:
        request = SimpleNamespace(scope={"ask_fable.api_key": key} if key else {})
        mcp = SimpleNamespace(request_context=SimpleNamespace(request=request))
        return ToolContext(App(load_settings()), mcp)

    keys = ((1, "alice", "alice"), (2, "ci", "alice"), (3, "bob", "bob"))
    alice, alice_ci, bob = (SimpleNamespace(id=n, name=name, tenant=tenant, scope="ask")
                            for n, name, tenant in keys)
    assert ctx_for(alice).session_space("fable") != ctx_for(bob).session_space("fable")
    assert ctx_for(alice).session_space("fable") == ctx_for(alice_ci).session_space("fable")
    assert ctx_for(None).session_space("fable") == "fable"
    assert ToolContext(App(load_settings())).session_space("fable") == "fable"
