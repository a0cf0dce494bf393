"""Key scopes by what a call can do, walked over every tool and every scope against a real
``ask-fable serve --http``.

A call a key may make reaches its tool: here with an argument no tool takes, so every allowed call
is answered ``bad_args`` by the tool layer and nothing runs. A call it may not make is refused with
HTTP 403 and a JSON-RPC error naming the scope it needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from ask_fable.surface.registry import all_tools
from ask_fable.surface.server import build_server
from tests.e2e.team_server import HEADERS, TeamServer, create_key, list_keys, shared_team_server, team_server
from tests.spec_tools import ALL_SPEC_TOOLS
from tests.ui.server import state_env

#: The contract: what a read key may call (local look-ups of its own data), and what only an admin
#: may. Every other tool spends (a model, a CLI, a catalog) or writes, and needs an ask key.
READ_TOOLS = frozenset({"ask_fable_help", "context_read", "context_list", "trace_list", "trace_get", "stats",
                        "session_list", "session_peek", "session_stats", "key_usage"})
ADMIN_TOOLS = frozenset({"configure_ollama_council", "configure_atlas_council",
                         "configure_openrouter_council", "configure_tracing"})
SCOPES = ("read", "ask", "admin")
#: The tools that take a ``tenant`` argument (another tenant's data, or "*" for every tenant's).
TENANT_TOOLS = ("context_read", "context_list", "context_delete", "trace_list", "trace_get", "stats",
                "session_list", "session_peek", "session_stats", "key_usage")


def expected_scope(tool: str) -> str:
    """The scope the contract says ``tool`` needs."""
    if tool in READ_TOOLS:
        return "read"
    return "admin" if tool in ADMIN_TOOLS else "ask"


@dataclass
class Server:
    url: str
    keys: dict[str, str]


def _create_key(scope: str, env: dict[str, str] | None = None) -> str:
    record = create_key(f"{scope} key", "--scope", scope, "--tenant", "team", env=env)
    assert (record["scope"], record["tenant"]) == (scope, "team")
    return str(record["key"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``ask-fable serve --http --toolsets all`` on a free loopback port, with one key per scope, for
    the module's tests, which only read what it serves."""
    env = state_env(tmp_path_factory.mktemp("key-scopes-home"))
    keys = {scope: _create_key(scope, env) for scope in SCOPES}
    with shared_team_server(env) as running:
        yield Server(running.url, keys)


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


async def test_every_tool_with_every_scope_over_http(server: Server) -> None:
    """Every tool × every scope: a key reaches exactly the tools its scope allows, and is refused the
    rest with 403 naming the scope needed."""
    tools = [spec.name for spec in all_tools()]
    assert sorted(tools) == sorted(ALL_SPEC_TOOLS)
    reached: dict[str, set[str]] = {scope: set() for scope in SCOPES}
    async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
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


async def test_a_key_lists_only_the_tools_its_scope_may_call(server: Server) -> None:
    """Real MCP clients over HTTP: a read key lists the local look-ups only, an ask key every tool but
    the admin ones, an admin key every tool; what each lists is exactly what it may call. (Before,
    every key listed all 40, and a read key then had most of its calls refused.)"""
    listed: dict[str, set[str]] = {}
    for held in SCOPES:
        async with TeamServer(server.url).client(server.keys[held]) as client:
            listed[held] = {tool.name for tool in (await client.list_tools()).tools}
    assert listed["read"] == READ_TOOLS
    assert listed["ask"] == set(ALL_SPEC_TOOLS) - ADMIN_TOOLS
    assert listed["admin"] == set(ALL_SPEC_TOOLS)
    async with Client(build_server(toolsets=["all"])) as local:  # no key: the local server lists all
        assert {tool.name for tool in (await local.list_tools()).tools} == set(ALL_SPEC_TOOLS)


async def test_keys_listing_again_get_their_own_scope_and_the_settings_now_in_force(tmp_path: Path) -> None:
    """Hosts list the tools each time they connect: keys of different scopes listing in turn each get
    the tools of their own scope every time, and once the config file changes a model, the next
    listing describes the tool with the new one."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"glm_model": "glm-first-1"}))
    keys = {scope: _create_key(scope) for scope in ("read", "ask")}
    listed: dict[str, list[dict[str, str]]] = {"read": [], "ask": []}
    async with team_server({"ASK_FABLE_CONFIG_FILE": str(config)}) as server:
        for _ in range(2):
            for held in ("read", "ask"):
                async with server.client(keys[held]) as client:
                    tools = (await client.list_tools()).tools
                listed[held].append({tool.name: tool.description or "" for tool in tools})
        config.write_text(json.dumps({"glm_model": "glm-second-2"}))
        async with server.client(keys["ask"]) as client:
            changed = {tool.name: tool.description or "" for tool in (await client.list_tools()).tools}
    assert [set(names) for names in listed["read"]] == [READ_TOOLS, READ_TOOLS]
    assert [set(names) for names in listed["ask"]] == [set(ALL_SPEC_TOOLS) - ADMIN_TOOLS] * 2
    assert all("(glm-first-1)" in names["ask_glm"] for names in listed["ask"])
    assert "(glm-second-2)" in changed["ask_glm"] and set(changed) == set(ALL_SPEC_TOOLS) - ADMIN_TOOLS


async def test_the_help_a_key_reads_names_only_the_tools_it_may_call(server: Server) -> None:
    """ask_fable_help(topic="tools") over HTTP agrees with tools/list: a read key is told of the tools
    it may call and that its scope leaves the others out, an admin key of every tool."""
    helped: dict[str, dict[str, Any]] = {}
    for held in ("read", "admin"):
        async with TeamServer(server.url).client(server.keys[held]) as client:
            result = await client.call_tool("ask_fable_help", {"topic": "tools"})
            helped[held] = dict(result.structured_content or {})
    named = {held: {line.split(" — ")[0] for lines in help_["tools"].values() for line in lines}
             for held, help_ in helped.items()}
    assert named["read"] == READ_TOOLS
    assert "scope (read)" in helped["read"]["text"]
    assert "ask_council" not in helped["read"]["text"] and "ask(model" not in helped["read"]["text"]
    assert named["admin"] == set(ALL_SPEC_TOOLS)


def _tools_named(text: str) -> set[str]:
    """The tools a text names (as `tool` or `tool(`)."""
    import re

    return set(re.findall(r"`(\w+)[`(]", text)) & set(ALL_SPEC_TOOLS)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_instructions_a_key_reads_name_only_the_tools_it_may_call(mode: str,
                                                                           server: Server) -> None:
    """The standing instructions a client gets when it connects (``initialize``, or ``server/discover``)
    follow the key like tools/list: a read key is told of the look-ups it may call and what its scope
    leaves out, never to call ``ask``, ``ask_council`` or ``context_write``; an ask key of the reasoning
    modes. (Before, every key read instructions naming tools a read key is refused.)"""
    told: dict[str, str] = {}
    for held in SCOPES:
        async with TeamServer(server.url).client(server.keys[held], mode=mode) as client:
            told[held] = client.instructions or ""
    assert _tools_named(told["read"]) and _tools_named(told["read"]) <= READ_TOOLS
    assert "ask_fable_help" in _tools_named(told["read"])
    assert "scope (read)" in told["read"] and "--scope ask" in told["read"]
    assert "sidecar" not in told["read"]
    for held in ("ask", "admin"):
        assert {"ask", "ask_council", "ask_chain", "ask_debate", "context_write"} <= _tools_named(told[held])
    assert not _tools_named(told["ask"]) & ADMIN_TOOLS
    assert "--scope admin" in told["ask"] and "scope (" not in told["admin"]


async def test_only_an_admin_key_names_another_tenant(server: Server) -> None:
    """Reading or cleaning up another tenant's data (or every tenant's) needs admin scope, whatever
    the tool's own scope; naming one's own tenant needs nothing more."""
    async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
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


OLD_WRITE_KEY = "afk_" + "w" * 32
OLD_READ_KEY = "afk_" + "r" * 32


def _state_from_before_scopes() -> None:
    """A key database and a context bus as ask-fable left them before scopes meant money and before
    tenants: a ``write`` key, a ``read`` key, and one context entry."""
    import sqlite3

    from ask_fable.config import load_settings
    from ask_fable.stores import keys
    from tests.stores.legacy_databases import SCRIPTS

    settings = load_settings()
    old: list[tuple[Any, tuple[str, ...], list[str]]] = [
        (settings.keys_db, SCRIPTS["keys"][:1], [
            f"INSERT INTO api_keys (name, scope, prefix, key_hash, created_at) VALUES "
            f"('{name}', '{scope}', '{key[:10]}', '{keys.hash_key(key)}', '2026-01-01T00:00:00+00:00')"
            for name, scope, key in (("laptop", "write", OLD_WRITE_KEY), ("dashboard", "read", OLD_READ_KEY))
        ]),
        (settings.context_db, SCRIPTS["context"][:1],
         ["INSERT INTO context VALUES ('runbook', 'fail over to db-7', '', 17, 1.0, 1.0)"]),
    ]
    for path, scripts, statements in old:
        path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(path) as conn:
            for script in scripts:
                conn.executescript(script)
            conn.execute(f"PRAGMA user_version = {len(scripts)}")
            for statement in statements:
                conn.execute(statement)
        conn.close()


async def test_keys_made_before_scopes_keep_working_as_documented() -> None:
    """A former ``write`` key is an ``ask`` key and a ``read`` key stays ``read``, both in the local
    tenant: each still reads the entry written before, the former write key still writes, and
    neither may now configure the server or (the read key) spend."""
    _state_from_before_scopes()
    async with team_server() as server, httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
        async def structured(key: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            response = await _call(http, key, tool, arguments)
            assert response.status_code == 200, response.text
            result: dict[str, Any] = response.json()["result"]["structuredContent"]
            return result

        for key in (OLD_WRITE_KEY, OLD_READ_KEY):
            read = await structured(key, "context_read", {"key": "runbook"})
            assert (read["status"], read["value"]) == ("ok", "fail over to db-7"), read
        written = await structured(OLD_WRITE_KEY, "context_write", {"key": "notes", "value": "v"})
        assert (written["status"], written["tenant"]) == ("ok", "local")
        configure = await _call(http, OLD_WRITE_KEY, "configure_tracing", {"trace_mode": "full"})
        _refused_for(configure, "admin", "ask", "configure_tracing")
        diagnose = await _call(http, OLD_READ_KEY, "diagnose", {})
        _refused_for(diagnose, "ask", "read", "diagnose")
    listed = {k["name"]: (k["scope"], k["tenant"]) for k in list_keys()}
    assert listed == {"laptop": ("ask", "local"), "dashboard": ("read", "local")}
