"""A stopped team server exits within a couple of seconds, on SQLite and on PostgreSQL, whatever its
connections are doing: idle, one call in flight (its CLI and the CLI's child killed), or a browser
half-way through posting the web view's login form. Nothing acknowledged is lost on the way: the
keys' last use, written in the background, is flushed before the stores close."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.e2e.helpers import ask_fable_command, child_env
from tests.fakes.db_relay import DatabaseRelay
from tests.fakes.fake_cli import FakeCLIs
from tests.reliability.http_server import MCP_HEADERS, HttpServer, connect, create_key
from tests.reliability.processes import cli_running, survivors_of, unflushed_logs

#: A generous bound on the exit (the test asserts no timing: a server that waits out uvicorn's
#: graceful-shutdown timeout or a backstop deadline fails it).
EXIT_BOUND_S = 5
CASES = ["idle", "mid-call", "half-sent login form"]
QUESTION = "Why does the worker pool deadlock on shutdown?"


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The settings of the server's stores: the test's state directory, or a fresh PostgreSQL
    database (its URL passed to the server process)."""
    if request.param == "sqlite":
        yield {}
        return
    server: Any = request.getfixturevalue("pg_server")
    url = server.fresh_database()
    try:
        yield {"ASK_FABLE_DATABASE_URL": url}
    finally:
        server.drop(url)


def _key_record(env: dict[str, str], name: str) -> dict[str, Any]:
    listed = subprocess.run([*ask_fable_command(), "keys", "list", "--json"], env=env, capture_output=True,
                            text=True, check=True, timeout=60)
    keys: list[dict[str, Any]] = json.loads(listed.stdout)
    return next(k for k in keys if k["name"] == name)


def _half_sent_login(port: int) -> socket.socket:
    """A connection that sent the login form's headers and a few bytes of its body, then nothing."""
    sock = connect(port)
    sock.sendall(b"POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 200\r\n\r\nkey=afk_")
    return sock


@pytest.mark.parametrize("case", CASES)
async def test_a_stopped_team_server_exits_promptly_with_its_stores_flushed(
    store_env: dict[str, str], fakes: FakeCLIs, tmp_path: Path, case: str
) -> None:
    """Before: a request the server did not cancel (a page whose form never finished arriving) held
    the stop for uvicorn's 5 s graceful timeout. Now SIGTERM ends every request at once: exit 0 well
    within the bound, the key's use written, no CLI process left, no traceback."""
    env = child_env(PATH=f"{fakes.bin_dir}{os.pathsep}{os.environ['PATH']}", ASK_FABLE_TOOLSETS="all",
                    ASK_FABLE_CACHE="false", **store_env)
    key = create_key(env, "stopper", "ask")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
    server = HttpServer(env, tmp_path / "stderr.log")
    held: list[socket.socket] = []
    pids: list[int] = []
    code: int | None = None
    try:
        server.wait_started()
        async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http, \
                anyio.create_task_group() as group:
            help_call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "ask_fable_help", "arguments": {"topic": "modes"}}}
            answered = await http.post("/mcp", json=help_call, headers=headers)
            assert answered.json()["result"]["structuredContent"]["status"] == "ok"
            if case == "mid-call":
                call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "ask_m3", "arguments": {"question": QUESTION}}}

                async def in_flight() -> None:
                    await http.post("/mcp", json=call, headers=headers)

                group.start_soon(in_flight)
                pids = await cli_running(fakes)
            elif case == "half-sent login form":
                held.append(_half_sent_login(server.port))
                await anyio.sleep(0.2)  # the server has read the headers and waits for the body
            started = time.monotonic()
            server.signal(signal.SIGTERM)
            with anyio.fail_after(EXIT_BOUND_S):
                while (code := server.proc.poll()) is None:
                    await anyio.sleep(0.02)
            took = time.monotonic() - started
    finally:
        for sock in held:
            sock.close()
        server.close()
    survivors = await survivors_of(pids)
    stderr = server.stderr()
    print(f"{case} on {'postgres' if store_env else 'sqlite'}: exit {code} after {took:.2f}s")
    assert code == 0, stderr
    assert survivors == []
    assert _key_record(env, "stopper")["last_used_at"] is not None
    assert unflushed_logs() == []
    assert "Traceback" not in stderr and "Exception in ASGI" not in stderr


async def test_a_stopped_server_does_not_wait_on_a_database_that_does_not_answer(
    pg_server: Any, tmp_path: Path
) -> None:
    """A readiness probe and a call's key check waiting on a database that stopped answering (a
    partition: connections accepted, nothing answered) are cancelled by SIGTERM like any request: each
    gets 503, and the server exits 0 within the bound. (Before, their threads, blocked on the database,
    held the process past the stop until it was killed.)"""
    url = pg_server.fresh_database()
    relay = DatabaseRelay(url)
    code: int | None = None
    answers: dict[str, int] = {}
    try:
        async with anyio.create_task_group() as group:
            await group.start(relay.run)
            key = create_key(child_env(ASK_FABLE_DATABASE_URL=url), "prober", "read")
            server = HttpServer(child_env(ASK_FABLE_DATABASE_URL=relay.url), tmp_path / "stderr.log")
            try:
                await anyio.to_thread.run_sync(server.wait_started)  # the relay serves meanwhile
                relay.freeze()
                async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:

                    async def probe() -> None:
                        status = 200
                        while status == 200:  # a fresh answer may come from before the freeze
                            status = (await http.get("/healthz")).status_code
                        answers["probe"] = status

                    async def call() -> None:
                        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
                        headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
                        answers["call"] = (await http.post("/mcp", json=body, headers=headers)).status_code

                    group.start_soon(probe)
                    group.start_soon(call)
                    with anyio.fail_after(30):
                        while relay.held < 2:  # both wait on the database
                            await anyio.sleep(0.02)
                    server.signal(signal.SIGTERM)
                    # Held, the process would never exit (the database never answers): a loaded
                    # machine gets a wider bound than the other cases.
                    with anyio.fail_after(EXIT_BOUND_S * 4):
                        while (code := server.proc.poll()) is None or len(answers) < 2:
                            await anyio.sleep(0.02)
            finally:
                server.close()
                group.cancel_scope.cancel()
    finally:
        pg_server.drop(url)
    stderr = server.stderr()
    assert code == 0, stderr
    assert answers == {"probe": 503, "call": 503}
    assert "Traceback" not in stderr and "Exception in ASGI" not in stderr
