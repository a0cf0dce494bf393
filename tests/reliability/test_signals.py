"""Signals and departures mid-call, on the real servers: SIGTERM, SIGHUP and SIGINT end either server
within a few seconds with every CLI process group gone and the stores closed, and an HTTP client
that hangs up cancels its backend work (CLI group killed, upstream request closed)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.helpers import child_env
from tests.fakes.fake_cli import FakeCLIs
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.http_server import MCP_HEADERS, HttpServer, connect, create_key, http_server
from tests.reliability.processes import cli_running, survivors_of, unflushed_logs
from tests.reliability.stdio_peer import StdioPeer

QUESTION = "Why does the worker pool deadlock on shutdown?"
#: Seconds a server may take from the signal to its exit (the CLI gets SIGTERM, then SIGKILL after 2 s).
EXIT_WITHIN = 10
SIGNALS = {"SIGTERM": (signal.SIGTERM, 0), "SIGHUP": (signal.SIGHUP, 0), "SIGINT": (signal.SIGINT, 130)}


def _env(fakes: FakeCLIs, **extra: str) -> dict[str, str]:
    return child_env(PATH=f"{fakes.bin_dir}{os.pathsep}{os.environ['PATH']}", ASK_FABLE_TOOLSETS="all",
                     ASK_FABLE_CACHE="false", **extra)


def _raw_call(key: str, tool: str) -> bytes:
    """One HTTP/1.1 POST of ``tools/call`` for ``tool`` with the test question, as raw bytes."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool, "arguments": {"question": QUESTION}}}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


async def _exit_code(proc: Any, within: float = EXIT_WITHIN) -> int | None:
    with anyio.move_on_after(within):
        while proc.poll() is None:
            await anyio.sleep(0.02)
    return proc.poll()  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", list(SIGNALS))
async def test_a_signal_ends_the_stdio_server_mid_call_with_no_orphans(fakes: FakeCLIs, name: str) -> None:
    """Before: SIGTERM or SIGHUP mid-call left the CLI and its grandchild running (2 of 2). Now the call
    is cancelled, both are gone, the stores are closed and the server exits (0; 130 for SIGINT)."""
    sig, expected = SIGNALS[name]
    peer = StdioPeer(_env(fakes))
    try:
        peer.initialize()
        helped = peer.call_tool("ask_fable_help", {"topic": "modes"})
        assert helped["result"]["structuredContent"]["status"] == "ok"
        peer.request("tools/call", {"name": "ask_m3", "arguments": {"question": QUESTION}})
        pids = await cli_running(fakes)
        peer.proc.send_signal(sig)
        code = await _exit_code(peer.proc)
        survivors = await survivors_of(pids)
    finally:
        if peer.proc.poll() is None:
            peer.proc.kill()
            peer.proc.wait()
    stderr = bytes(peer.stderr).decode(errors="replace")
    print(f"stdio {name} mid-call: exit {code}, {len(pids)} CLI processes before, {len(survivors)} after")
    assert code == expected, stderr
    assert len(pids) == 2 and survivors == []
    assert unflushed_logs() == []
    assert "Traceback" not in stderr


@pytest.mark.parametrize("name", list(SIGNALS))
async def test_a_signal_ends_the_http_server_mid_call_with_no_orphans(
    fakes: FakeCLIs, tmp_path: Path, name: str
) -> None:
    """SIGTERM, SIGHUP or SIGINT to ``serve --http`` mid-call: the caller gets a 503 saying the server
    is stopping, the CLI and its grandchild are gone, the stores are closed and the server exits."""
    sig, expected = SIGNALS[name]
    env = _env(fakes)
    key = create_key(env, "writer", "write")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "ask_m3", "arguments": {"question": QUESTION}}}
    replies: list[httpx2.Response] = []
    server = HttpServer(env, tmp_path / "stderr.log")
    try:
        server.wait_started()
        async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http, \
                anyio.create_task_group() as group:
            async def in_flight() -> None:
                replies.append(await http.post("/mcp", json=call, headers=headers))

            group.start_soon(in_flight)
            pids = await cli_running(fakes)
            server.signal(sig)
            code = await _exit_code(server.proc)
        survivors = await survivors_of(pids)
    finally:
        server.close()
    stderr = server.stderr()
    print(f"http {name} mid-call: exit {code}, reply {[r.status_code for r in replies]}, "
          f"{len(pids)} CLI processes before, {len(survivors)} after")
    assert code == expected, stderr
    assert len(pids) == 2 and survivors == []
    assert [r.status_code for r in replies] == [503]
    assert "stopping" in replies[0].json()["error"]["message"]
    assert unflushed_logs() == []
    assert "Traceback" not in stderr


async def test_an_http_client_that_hangs_up_mid_call_ends_its_cli_group(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """Before: the backend call ran on until its timeout. Now a client that closes its connection mid-call
    gets its CLI and the CLI's grandchild killed at once, and the server goes on serving."""
    env = _env(fakes)
    key = create_key(env, "writer", "write")
    with http_server(env, tmp_path / "stderr.log") as server:
        sock = connect(server.port)
        sock.sendall(_raw_call(key, "ask_m3"))
        pids = await cli_running(fakes)
        sock.close()
        survivors = await survivors_of(pids)
        async with httpx2.AsyncClient(base_url=server.url, timeout=30) as http:
            after = await http.post("/mcp", headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"},
                                    json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        stderr = server.stderr()
    print(f"client hung up mid ask_m3: {len(pids)} CLI processes before, {len(survivors)} after")
    assert len(pids) == 2 and survivors == []
    assert after.status_code == 200
    assert "Traceback" not in stderr


async def test_an_sdk_client_that_gives_up_mid_call_ends_its_cli_group(
    fakes: FakeCLIs, tmp_path: Path
) -> None:
    """The same through the MCP SDK's HTTP client in the stateless protocol era: the client task is
    cancelled mid-call, its connection closes, and the CLI and its grandchild are gone."""
    env = _env(fakes)
    key = create_key(env, "writer", "write")
    with http_server(env, tmp_path / "stderr.log") as server:
        async with anyio.create_task_group() as group:
            async def call() -> None:
                headers = {"Authorization": f"Bearer {key}"}
                async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
                    transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
                    async with Client(transport, mode="auto") as client:
                        await client.call_tool("ask_m3", {"question": QUESTION})

            group.start_soon(call)
            pids = await cli_running(fakes)
            group.cancel_scope.cancel()
        survivors = await survivors_of(pids)
    assert len(pids) == 2 and survivors == []


async def test_an_http_client_that_hangs_up_mid_call_closes_the_upstream_request(tmp_path: Path) -> None:
    """A client that leaves while ask_glm streams from its provider: the upstream connection is closed
    (the provider sees the hang-up) instead of being read until the backend timeout."""
    with FakeProvider() as fp:
        fp.enqueue("anthropic", endless=True, chunk_delay=0.05)
        env = child_env(ASK_FABLE_TOOLSETS="all", ASK_FABLE_CACHE="false", ASK_FABLE_TIMEOUT="120",
                        ASK_FABLE_GLM_API_KEY="sk-glm-hangup-0123456789abcdef",
                        ASK_FABLE_GLM_BASE_URL=fp.base_url)
        key = create_key(env, "writer", "write")
        with http_server(env, tmp_path / "stderr.log") as server:
            sock = connect(server.port)
            sock.sendall(_raw_call(key, "ask_glm"))
            with anyio.fail_after(30):
                while not fp.requests_for("anthropic"):
                    await anyio.sleep(0.02)
            [upstream] = fp.requests_for("anthropic")
            sock.close()
            with anyio.fail_after(5):
                while not upstream.client_closed:
                    await anyio.sleep(0.02)
    print("client hung up mid ask_glm: the provider saw the upstream connection closed")
    assert upstream.client_closed
