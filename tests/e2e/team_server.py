"""A real ``ask-fable serve --http`` for tests: keys made with ``ask-fable keys create``, an MCP client
over Streamable HTTP, and raw JSON-RPC posts."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.helpers import ask_fable_command, child_env, command_output

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``ask-fable ARGS`` to completion (checked) with the test's environment plus ``env``."""
    return subprocess.run([*ask_fable_command(), *args], env=child_env(**env), capture_output=True, text=True,
                          timeout=60, check=True)


def create_key(name: str, *options: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``ask-fable keys create --name NAME OPTIONS --json``: the new key's record with its ``key``."""
    record: dict[str, Any] = json.loads(command_output(["keys", "create", "--name", name, *options, "--json"],
                                                       child_env(**(env or {}))))
    return record


def list_keys(env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """``ask-fable keys list --json``."""
    listed: list[dict[str, Any]] = json.loads(command_output(["keys", "list", "--json"],
                                                             child_env(**(env or {}))))
    return listed


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class TeamServer:
    url: str
    #: The server's exit status, once the ``team_server`` block has stopped it.
    exit_code: int | None = None
    #: The server process's id (tests kill it).
    pid: int | None = None

    @asynccontextmanager
    async def client(self, key: str, mode: str = "auto") -> AsyncIterator[Client]:
        """An MCP client over Streamable HTTP with ``key`` as its bearer token (``mode="legacy"``: it
        opens with the ``initialize`` handshake; by default with ``server/discover``)."""
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http, \
                Client(streamable_http_client(f"{self.url}/mcp", http_client=http), mode=mode) as client:
            yield client

    async def post(self, key: str, body: bytes | dict[str, Any]) -> httpx2.Response:
        """POST one JSON-RPC message (or raw bytes) to ``/mcp`` with ``key``."""
        headers = {**HEADERS, "Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with httpx2.AsyncClient(base_url=self.url, timeout=60) as http:
            return await http.post("/mcp", content=content, headers=headers)


@asynccontextmanager
async def team_server(env: dict[str, str] | None = None,
                      args: Sequence[str] = ()) -> AsyncIterator[TeamServer]:
    """``ask-fable serve --http --toolsets all`` on a free loopback port, with ``env`` and ``args`` added."""
    port = free_port()
    process = await anyio.open_process(
        [*ask_fable_command(), "serve", "--http", "--toolsets", "all", "--port", str(port), *args],
        env=child_env(**(env or {})), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
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
        server = TeamServer(url, pid=process.pid)
        yield server
    finally:
        if process.returncode is None:
            process.terminate()
        with anyio.fail_after(30):
            await process.wait()
        await process.aclose()
    server.exit_code = process.returncode


@contextmanager
def shared_team_server(env: dict[str, str], args: Sequence[str] = ()) -> Iterator[TeamServer]:
    """:func:`team_server` for a synchronous fixture (one server for a whole module): its process is
    watched from an event loop of its own. ``env`` must name the server's HOME and XDG dirs, since a
    module's fixture starts before a test's environment is isolated."""
    with start_blocking_portal() as portal, \
            portal.wrap_async_context_manager(team_server(env, args)) as server:
        yield server
