"""A PostgreSQL outage as the operator of ``ask-fable serve --http`` reads it on stderr: one line when
the database stops answering and one when it answers again, never a stream of driver warnings."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.e2e.helpers import child_env
from tests.reliability.http_server import MCP_HEADERS, START_LINE, HttpServer, create_key

#: Calls and probes made while the database is down: each used to add lines of its own.
ATTEMPTS = 6
DOWN = "the PostgreSQL database is not answering"
BACK = "the PostgreSQL database answers again"


def _lines(stderr: str, text: str) -> list[str]:
    return [line for line in stderr.splitlines() if text in line]


async def test_an_outage_is_one_line_when_it_starts_and_one_when_it_ends(tmp_path: Path) -> None:
    """Stop the database under a serving replica, call it and probe it several times, start the
    database again: stderr says it went down once and came back once. (Before, every connection
    attempt wrote ``error connecting in 'ask-fable': …`` and every refused call a line of its own.)"""
    from tests.replicas.harness import postgres_available

    if (reason := postgres_available()) is not None:
        pytest.skip(reason)
    from tests.fakes.postgres import running_server

    with running_server() as database:  # a server of this test's own: it is stopped and started
        env = child_env(ASK_FABLE_DATABASE_URL=database.fresh_database())
        key = create_key(env, "operator", "read")
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        server = HttpServer(env, tmp_path / "stderr.log", args=("--quiet",))
        try:
            server.wait_started()
            async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
                assert (await http.post("/mcp", json=listing, headers=headers)).status_code == 200
                database.stop()
                refused = [await http.post("/mcp", json=listing, headers=headers) for _ in range(ATTEMPTS)]
                with anyio.fail_after(30):  # a probe answered just before the stop is reused briefly
                    while (await http.get("/healthz")).status_code != 503:
                        await anyio.sleep(0.1)
                probes = [(await http.get("/healthz")).status_code for _ in range(ATTEMPTS)]
                database.start()
                with anyio.fail_after(60):
                    while (await http.get("/healthz")).status_code != 200:
                        await anyio.sleep(0.1)
                served = await http.post("/mcp", json=listing, headers=headers)
        finally:
            server.close()
    stderr = server.stderr()
    assert all(r.status_code == 503 and r.json()["error"]["data"]["kind"] == "unavailable" for r in refused)
    assert set(probes) == {503} and served.status_code == 200, json.dumps(served.json())[:300]
    assert len(_lines(stderr, DOWN)) == 1, stderr
    assert len(_lines(stderr, BACK)) == 1, stderr
    assert stderr.index(DOWN) < stderr.index(BACK)
    assert "error connecting" not in stderr and "Traceback" not in stderr, stderr


async def test_a_server_started_while_the_database_is_down_says_so_once(tmp_path: Path) -> None:
    """Start ``serve --http`` with the database stopped: it comes up answering 503, stderr says the
    database is down once (its start checks and its first calls share that line), and once the
    database is back the server says so once and serves."""
    from tests.replicas.harness import postgres_available

    if (reason := postgres_available()) is not None:
        pytest.skip(reason)
    from tests.fakes.postgres import running_server

    with running_server() as database:
        env = child_env(ASK_FABLE_DATABASE_URL=database.fresh_database())
        key = create_key(env, "operator", "read")
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        database.stop()
        server = HttpServer(env, tmp_path / "stderr.log", args=("--quiet",))
        try:
            async with httpx2.AsyncClient(timeout=60) as http:
                with anyio.fail_after(60):
                    while (found := START_LINE.search(server.stderr())) is None:
                        assert server.proc.poll() is None, server.stderr()
                        await anyio.sleep(0.05)
                server.port = int(found["port"])
                probes = [(await http.get(f"{server.url}/healthz")).status_code for _ in range(ATTEMPTS)]
                refused = [await http.post(f"{server.url}/mcp", json=listing, headers=headers)
                           for _ in range(ATTEMPTS)]
                database.start()
                with anyio.fail_after(60):
                    while (await http.get(f"{server.url}/healthz")).status_code != 200:
                        await anyio.sleep(0.1)
                served = await http.post(f"{server.url}/mcp", json=listing, headers=headers)
        finally:
            server.close()
    stderr = server.stderr()
    assert set(probes) == {503}
    assert all(r.status_code == 503 for r in refused)
    assert served.status_code == 200
    assert len(_lines(stderr, DOWN)) == 1, stderr
    assert len(_lines(stderr, BACK)) == 1, stderr
    assert "Traceback" not in stderr, stderr
