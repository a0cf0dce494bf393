"""Key scopes by what a call can do, walked over every tool and every scope against a real
``ask-fable serve --http``.

A call a key may make reaches its tool: here with an argument no tool takes, so every allowed call
is answered ``bad_args`` by the tool layer and nothing runs. A call it may not make is refused with
HTTP 403 and a JSON-RPC error naming the scope it needs.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2

from ask_fable.surface.registry import all_tools
from tests.e2e.helpers import ask_fable_command, child_env
from tests.spec_tools import ALL_SPEC_TOOLS

#: The contract: what a read key may call (local look-ups of its own data), and what only an admin
#: may. Every other tool spends (a model, a CLI, a catalog) or writes, and needs an ask key.
READ_TOOLS = frozenset({"ask_fable_help", "context_read", "context_list", "trace_list", "trace_get", "stats",
                        "session_list", "session_peek", "session_stats"})
ADMIN_TOOLS = frozenset({"configure_ollama_council", "configure_atlas_council",
                         "configure_openrouter_council", "configure_tracing"})
SCOPES = ("read", "ask", "admin")
#: The tools that take a ``tenant`` argument (another tenant's data, or "*" for every tenant's).
TENANT_TOOLS = ("context_read", "context_list", "context_delete", "trace_list", "trace_get", "stats",
                "session_list", "session_peek", "session_stats")
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def expected_scope(tool: str) -> str:
    """The scope the contract says ``tool`` needs."""
    if tool in READ_TOOLS:
        return "read"
    return "admin" if tool in ADMIN_TOOLS else "ask"


@dataclass
class Server:
    url: str
    keys: dict[str, str]


def _create_key(scope: str) -> str:
    created = subprocess.run(
        [*ask_fable_command(), "keys", "create", "--name", f"{scope} key", "--scope", scope,
         "--tenant", "team", "--json"],
        env=child_env(), capture_output=True, text=True, timeout=60, check=True,
    )
    record = json.loads(created.stdout)
    assert (record["scope"], record["tenant"]) == (scope, "team")
    return str(record["key"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def serving() -> AsyncIterator[Server]:
    """``ask-fable serve --http --toolsets all`` on a free loopback port, with one key per scope."""
    keys = {scope: _create_key(scope) for scope in SCOPES}
    port = _free_port()
    process = await anyio.open_process(
        [*ask_fable_command(), "serve", "--http", "--toolsets", "all", "--port", str(port)],
        env=child_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient(base_url=url) as http:
            with anyio.fail_after(60):
                while True:
                    try:
                        if (await http.get("/healthz")).status_code == 200:
                            break
                    except httpx2.TransportError:
                        assert process.returncode is None, "the server exited before it answered"
                    await anyio.sleep(0.05)
        yield Server(url, keys)
    finally:
        process.terminate()
        with anyio.fail_after(30):
            await process.wait()
        await process.aclose()


async def _call(http: httpx2.AsyncClient, key: str, tool: str, arguments: dict[str, Any]) -> httpx2.Response:
    params = {"name": tool, "arguments": arguments}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    return await http.post("/mcp", json=body, headers={**HEADERS, "Authorization": f"Bearer {key}"})


def _reached_the_tool(response: httpx2.Response) -> bool:
    """Whether the call got through to the tool layer (which refused the probe argument)."""
    if response.status_code != 200:
        return False
    result = response.json()["result"]["structuredContent"]
    assert (result["status"], result["kind"]) == ("error", "bad_args"), result
    return True


def _refused_for(response: httpx2.Response, scope: str, held: str, tool: str) -> None:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["id"] == 7 and body["error"]["code"] == -32003
    assert body["error"]["data"] == {"required_scope": scope, "key_scope": held, "tool": tool}
    assert f"needs {scope} scope" in body["error"]["message"]
    assert f"--scope {scope}" in body["error"]["message"]


def test_the_contract_names_every_tool() -> None:
    assert set(ALL_SPEC_TOOLS) >= READ_TOOLS | ADMIN_TOOLS
    declared = {spec.name: spec.scope for spec in all_tools()}
    assert declared == {name: expected_scope(name) for name in ALL_SPEC_TOOLS}


async def test_every_tool_with_every_scope_over_http() -> None:
    """Every tool × every scope: a key reaches exactly the tools its scope allows, and is refused the
    rest with 403 naming the scope needed."""
    tools = [spec.name for spec in all_tools()]
    assert sorted(tools) == sorted(ALL_SPEC_TOOLS)
    reached: dict[str, set[str]] = {scope: set() for scope in SCOPES}
    async with serving() as server, httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
        for tool in tools:
            needed = expected_scope(tool)
            for held in SCOPES:
                response = await _call(http, server.keys[held], tool, {"probe_unknown_argument": True})
                if SCOPES.index(held) >= SCOPES.index(needed):
                    assert _reached_the_tool(response), (tool, held, response.text)
                    reached[held].add(tool)
                else:
                    _refused_for(response, needed, held, tool)
    assert reached["read"] == READ_TOOLS
    assert reached["ask"] == set(tools) - ADMIN_TOOLS
    assert reached["admin"] == set(tools)


async def test_only_an_admin_key_names_another_tenant() -> None:
    """Reading or cleaning up another tenant's data (or every tenant's) needs admin scope, whatever
    the tool's own scope; naming one's own tenant needs nothing more."""
    async with serving() as server, httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
        for tenant in ("*", "someone-else"):
            for tool in TENANT_TOOLS:
                for held in ("read", "ask"):
                    response = await _call(http, server.keys[held], tool, {"tenant": tenant, "probe": 1})
                    _refused_for(response, "admin", held, tool)
                    assert "another tenant's data" in response.json()["error"]["message"]
                admin = await _call(http, server.keys["admin"], tool, {"tenant": tenant, "probe": 1})
                assert _reached_the_tool(admin)
        own = await _call(http, server.keys["read"], "trace_list", {"tenant": "team", "probe": 1})
        assert _reached_the_tool(own)
