"""What each HTTP call's bookkeeping still guarantees now that it is cheap: a key revoked from
another process is refused on the very next request, a key's last use reaches the database
(periodically and when the server stops) without a write per request, and every answered call is in
the audit log by the time its answer arrives, however many calls finish together."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ask_fable.config import Settings, load_settings
from ask_fable.core.app import App
from ask_fable.stores.keys import KeyStore
from ask_fable.surface.http_app import HttpOptions, build_http_app
from ask_fable.surface.http_runner import serve_in_thread
from ask_fable.surface.server import build_server
from tests.e2e.helpers import ask_fable_command, child_env
from tests.fakes.fake_provider import FakeProvider

BACKEND_KEY = "sk-backend-glm-0123456789abcdef"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


@dataclass
class Served:
    url: str
    settings: Settings
    key_id: int
    key: str


@contextmanager
def served(fp: FakeProvider, *, flush_seconds: float = 3600.0) -> Iterator[Served]:
    """The HTTP server on the settings' own keys database (the one ``ask-fable keys`` uses)."""
    # Bursts of calls on one key: its call quotas are off here, and its requests in progress raised.
    settings = load_settings(glm_api_key=BACKEND_KEY, glm_base_url=f"{fp.base_url}/api/anthropic",
                             cache=False, hub=False, key_rpm=0, key_concurrent=0)
    keys = KeyStore(settings.keys_db)
    record, key = keys.create("ci", "ask", "team")
    app = build_http_app(build_server(App(settings), toolsets=["single"]), keys,
                         HttpOptions(port=0, key_use_flush_seconds=flush_seconds, max_key_requests=128))
    with serve_in_thread(app) as url:
        yield Served(url, settings, record.id, key)


def last_used(settings: Settings, key_id: int) -> str | None:
    """``last_used_at`` as another process would read it: a store of its own on the same file."""
    store = KeyStore(settings.keys_db)
    try:
        found = store.get(key_id)
        return None if found is None else found.last_used_at
    finally:
        store.db.close()


async def list_tools(url: str, key: str) -> int:
    async with httpx2.AsyncClient(base_url=url, headers=MCP_HEADERS) as http:
        response = await http.post("/mcp", json=INIT, headers={"Authorization": f"Bearer {key}"})
    return response.status_code


async def test_a_key_revoked_by_the_cli_in_another_process_is_refused_on_the_next_request(
    fp: FakeProvider,
) -> None:
    with served(fp) as server:
        assert await list_tools(server.url, server.key) == 200
        assert await list_tools(server.url, server.key) == 200  # the key is known by now
        revoked = subprocess.run([*ask_fable_command(), "keys", "revoke", str(server.key_id)],
                                 env=child_env(), capture_output=True, text=True, timeout=60)
        assert revoked.returncode == 0, revoked.stderr
        assert await list_tools(server.url, server.key) == 401


async def test_a_keys_last_use_is_written_periodically_not_by_each_request(fp: FakeProvider) -> None:
    with served(fp, flush_seconds=0.2) as server:
        assert await list_tools(server.url, server.key) == 200
        with anyio.fail_after(20):
            while last_used(server.settings, server.key_id) is None:
                await anyio.sleep(0.05)


async def test_a_keys_last_use_is_written_when_the_server_stops(fp: FakeProvider) -> None:
    with served(fp) as server:
        assert await list_tools(server.url, server.key) == 200
        assert last_used(server.settings, server.key_id) is None  # no write on the request itself
    assert last_used(server.settings, server.key_id) is not None


async def test_every_answered_call_is_in_the_audit_log_when_its_answer_arrives(fp: FakeProvider) -> None:
    fp.enqueue("anthropic", times=None, delay=0.05)
    missing: list[str] = []
    answered: list[str] = []
    with served(fp) as server:
        audit = server.settings.audit_file

        async def ask(client: Any, i: int) -> None:
            result = await client.call_tool("ask_glm", {"question": f"Call {i}: is this lock order safe?"})
            assert result.structured_content["status"] == "ok", result.structured_content
            trace_id = result.structured_content["trace_id"]
            answered.append(trace_id)
            # Another call's line may be half written at this instant: only whole lines are read.
            whole = audit.read_text().rpartition("\n")[0]
            logged = {json.loads(line)["trace_id"] for line in whole.splitlines()}
            if trace_id not in logged:
                missing.append(trace_id)

        headers = {"Authorization": f"Bearer {server.key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
                Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
            with anyio.fail_after(120):
                async with anyio.create_task_group() as group:
                    for i in range(40):
                        group.start_soon(ask, client, i)
    assert len(answered) == 40
    assert missing == []
