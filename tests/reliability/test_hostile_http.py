"""The real ``ask-fable serve --http`` under hostile load: slow and idle sockets, floods at the
open-file limit, malformed bodies, endless streams and too many requests at once.

Each test opens its sockets against the installed command in its own process and prints the
figures it measured next to what the attack achieved before (see each docstring).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.e2e.helpers import child_env
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis, is_alive
from tests.reliability.http_server import (
    MCP_HEADERS,
    HttpServer,
    closed_by_peer,
    connect,
    create_key,
    http_server,
    read_now,
)
from tests.ui.server import state_env

PARTIAL_REQUEST = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
QUESTION = "Why does the worker pool deadlock on shutdown?"


def _env(**extra: str) -> dict[str, str]:
    return child_env(ASK_FABLE_TOOLSETS="all", ASK_FABLE_CACHE="false", **extra)


@dataclass
class DefaultServer:
    """A server started with the default settings, and a key of each scope."""

    server: HttpServer
    keys: dict[str, str]


@pytest.fixture(scope="module")
def default_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DefaultServer]:
    """One server with the defaults for the module's tests that change no setting and need no
    server of their own."""
    home = tmp_path_factory.mktemp("hostile-http-home")
    env = {**state_env(home), "ASK_FABLE_TOOLSETS": "all", "ASK_FABLE_CACHE": "false"}
    keys = {scope: create_key(env, scope, scope) for scope in ("read", "write")}
    with http_server(env, home / "stderr.log") as server:
        yield DefaultServer(server, keys)


def _rpc(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})}


async def _health(url: str, timeout: float = 10) -> int:
    async with httpx2.AsyncClient(timeout=timeout) as http:
        return (await http.get(f"{url}/healthz")).status_code


async def _list_tools(url: str, key: str) -> int:
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(f"{url}/mcp", json=_rpc("tools/list"),
                                   headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"})
        return response.status_code


async def _all_closed(sockets: list[socket.socket], within: float) -> list[socket.socket]:
    """Wait (bounded) until the server closed every socket; returns those still open."""
    with anyio.move_on_after(within):
        while any(not closed_by_peer(s) for s in sockets):
            await anyio.sleep(0.1)
    return [s for s in sockets if not closed_by_peer(s)]


def _open_partial(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = connect(port)
        sock.sendall(PARTIAL_REQUEST)
        sockets.append(sock)
    return sockets


def _close_all(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()


async def test_a_slow_loris_flood_at_the_open_file_limit_is_shed(tmp_path: Path) -> None:
    """Before: 1,100 sockets holding partial headers (no key) were kept for ≥ 60 s; at the open-file
    limit /healthz timed out, an authenticated call hit a 120 s read timeout and accept errors wrote
    735 MB of tracebacks in 2 minutes. Now, at the same limit (1024), health checks and keyed calls are
    answered during the flood, the server holds no more sockets than its connection bound, every
    slow socket is closed within the header timeout, and stderr stays small and traceback-free."""
    env = _env()
    key = create_key(env, "reader", "read")
    with http_server(env, tmp_path / "stderr.log", open_files=1024) as server:
        sockets = _open_partial(server.port, 1100)
        try:
            with anyio.fail_after(30):
                health = await _health(server.url)
                listed = await _list_tools(server.url, key)
            held = server.open_sockets()
            left_open = await _all_closed(sockets, within=5 + 10)
        finally:
            _close_all(sockets)
        stderr = server.stderr()
    print(f"1,100 slow-loris sockets at a 1024 open-file limit: /healthz {health}, "
          f"keyed tools/list {listed}, "
          f"server sockets {held} (bound 512), {len(left_open)} still open after the header timeout, "
          f"stderr {len(stderr.encode())} bytes")
    assert (health, listed) == (200, 200)
    assert held <= 512 + 8
    assert left_open == []
    assert "Traceback" not in stderr
    assert len(stderr.encode()) < 16_384


async def test_a_connection_trickling_its_headers_is_closed_at_the_header_timeout(tmp_path: Path) -> None:
    """A client that keeps sending one header byte at a time (first request, or the next request on a
    kept-alive connection) never resets the clock: it is closed once the header timeout passes."""
    env = _env(ASK_FABLE_HTTP_HEADER_TIMEOUT="2", ASK_FABLE_HTTP_KEEPALIVE_TIMEOUT="60")
    with http_server(env, tmp_path / "stderr.log") as server:
        fresh = connect(server.port)
        reused = connect(server.port)
        reused.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert b"200 OK" in reused.recv(4096)
        request = PARTIAL_REQUEST + b"X-Padding: " + b"a" * 200
        try:
            with anyio.fail_after(2 + 10):
                for index in range(len(request)):
                    alive = [s for s in (fresh, reused) if not closed_by_peer(s)]
                    if not alive:
                        break
                    for sock in alive:
                        sock.sendall(request[index:index + 1])
                    await anyio.sleep(0.05)
            sent = index
        finally:
            _close_all([fresh, reused])
    print(f"trickling one header byte every 50 ms: both connections closed after {sent} bytes")
    assert sent < len(request) - 1


async def test_an_idle_keep_alive_connection_is_closed(tmp_path: Path) -> None:
    """After its response, a kept-alive connection that sends nothing is closed after the keep-alive
    timeout."""
    env = _env(ASK_FABLE_HTTP_KEEPALIVE_TIMEOUT="1")
    with http_server(env, tmp_path / "stderr.log") as server:
        sock = connect(server.port)
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert b"200 OK" in sock.recv(4096)
            left_open = await _all_closed([sock], within=1 + 10)
        finally:
            sock.close()
    assert left_open == []


async def test_a_body_that_stalls_gets_408(tmp_path: Path) -> None:
    """Headers promise 100 bytes, 10 arrive, then nothing: 408 once the body timeout passes, and the
    connection is closed."""
    env = _env(ASK_FABLE_HTTP_BODY_TIMEOUT="1")
    key = create_key(env, "writer", "write")
    with http_server(env, tmp_path / "stderr.log") as server:
        sock = connect(server.port)
        try:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Accept: application/json, text/event-stream\r\n"
                         + f"Authorization: Bearer {key}\r\n".encode() + b"Content-Length: 100\r\n\r\n"
                         + b'{"jsonrpc"')
            reply = b""
            with anyio.fail_after(1 + 10):
                while (data := read_now(sock)) is not None:
                    reply += data
                    await anyio.sleep(0.05)
        finally:
            sock.close()
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]


@pytest.fixture
def slow_cli(tmp_path: Path) -> FakeCLIs:
    """A fake mmx that sleeps long after forking a child that holds its pipes."""
    handle = install_fake_clis(tmp_path / "bin", names=["mmx"])
    handle.behave("mmx", sleep=60, spawn_child=True)
    return handle


async def test_requests_past_the_bound_get_503_while_health_checks_answer(
    tmp_path: Path, slow_cli: FakeCLIs
) -> None:
    """With two requests allowed at once and two slow calls in flight (one key each: a key may hold at
    most half the slots), a third gets 503 with Retry-After, /healthz still answers, and once the slow
    calls' clients leave, calls are served again."""
    env = _env(ASK_FABLE_HTTP_MAX_REQUESTS="2", PATH=f"{slow_cli.bin_dir}{os.pathsep}{os.environ['PATH']}")
    key = create_key(env, "writer", "write")
    other_key = create_key(env, "other writer", "write")
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
    call = _rpc("tools/call", {"name": "ask_m3", "arguments": {"question": QUESTION}})
    with http_server(env, tmp_path / "stderr.log") as server:
        async with httpx2.AsyncClient(base_url=server.url, timeout=60) as http:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    async def slow_call(key: str) -> None:
                        keyed = {**headers, "Authorization": f"Bearer {key}"}
                        await http.post("/mcp", json=call, headers=keyed)

                    for each in (key, other_key):
                        group.start_soon(slow_call, each)
                    while len(slow_cli.child_pids("mmx")) < 2:
                        await anyio.sleep(0.02)
                    async with httpx2.AsyncClient(base_url=server.url, timeout=10) as other:
                        third = await other.post("/mcp", json=_rpc("tools/list"), headers=headers)
                        health = await other.get("/healthz")
                    group.cancel_scope.cancel()  # the two slow clients leave
            pids = [c["pid"] for c in slow_cli.calls("mmx")] + slow_cli.child_pids("mmx")
            with anyio.fail_after(10):
                while any(is_alive(p) for p in pids):
                    await anyio.sleep(0.05)
            with anyio.fail_after(30):
                after = await http.post("/mcp", json=_rpc("tools/list"), headers=headers)
    assert third.status_code == 503 and third.headers.get("retry-after")
    assert "requests at once" in third.json()["error"]["message"]
    assert health.status_code == 200
    assert after.status_code == 200


async def test_accept_errors_are_one_line_per_interval_with_a_count(tmp_path: Path) -> None:
    """Under an open-file limit too low for the connection bound, a flood makes accept() fail: the
    server says so at start, logs one line per interval with a count (no tracebacks), frees idle
    connections, and health checks are answered again."""
    env = _env(ASK_FABLE_HTTP_HEADER_TIMEOUT="2")
    with http_server(env, tmp_path / "stderr.log", open_files=24) as server:
        sockets: list[socket.socket] = []
        try:
            for _ in range(300):
                try:
                    sock = connect(server.port)
                    sock.sendall(PARTIAL_REQUEST)
                except OSError:
                    break
                sockets.append(sock)
            with anyio.fail_after(30):
                while True:
                    try:
                        if await _health(server.url, timeout=2) == 200:
                            break
                    except httpx2.HTTPError:
                        await anyio.sleep(0.1)
            await _all_closed(sockets, within=2 + 10)
        finally:
            _close_all(sockets)
        with anyio.fail_after(30):  # the count line comes at the end of the interval
            while "times in the last" not in server.stderr():
                await anyio.sleep(0.2)
        stderr = server.stderr()
    accept_lines = [line for line in stderr.splitlines() if "cannot accept" in line]
    print(f"{len(sockets)} sockets at a 24 open-file limit: {len(accept_lines)} accept lines, "
          f"stderr {len(stderr.encode())} bytes:\n{stderr}")
    assert "open-file limit" in stderr  # the warning at start
    assert 1 <= len(accept_lines) <= 6
    assert "Traceback" not in stderr
    assert len(stderr.encode()) < 16_384


#: Bodies that must never reach a parser that can recurse, or that are not JSON-RPC at all.
MALFORMED: dict[str, bytes] = {
    "3000-deep arrays": b"[" * 3000 + b"]" * 3000,
    "3000-deep objects": b'{"a":' * 3000 + b"1" + b"}" * 3000,
    "3000 unclosed arrays": b"[" * 3000,
    "deep arguments": (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask_fable_help",'
                       b'"arguments":{"topic":' + b"[" * 3000 + b"]" * 3000 + b"}}}"),
    "not JSON": b"{not json",
    "5000-digit id": b'{"jsonrpc":"2.0","id":' + b"1" * 5000 + b',"method":"tools/list"}',
    "invalid UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
    "empty": b"",
    "null": b"null",
}


async def test_malformed_and_deeply_nested_bodies_get_400_never_500(default_server: DefaultServer) -> None:
    """Before: a read key posting 3,000-deep JSON got HTTP 500 (RecursionError). Now every malformed or
    too deeply nested body gets 400 with a JSON-RPC error, for read and write keys, under every
    protocol header, and nothing is logged as a traceback."""
    server = default_server.server
    statuses: dict[tuple[str, str, str], int] = {}
    async with httpx2.AsyncClient(base_url=server.url, timeout=30) as http:
        for version in ("2025-11-25", "2026-07-28", None):
            for scope, key in default_server.keys.items():
                headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
                if version is None:
                    headers.pop("MCP-Protocol-Version")
                else:
                    headers["MCP-Protocol-Version"] = version
                for name, body in MALFORMED.items():
                    response = await http.post("/mcp", content=body, headers=headers)
                    statuses[(str(version), scope, name)] = response.status_code
                    assert "error" in response.json(), (version, scope, name, response.text[:200])
    wrong = {case: status for case, status in statuses.items() if status != 400}
    print(f"{len(statuses)} malformed bodies: statuses {sorted(set(statuses.values()))}")
    assert wrong == {}
    assert "Traceback" not in server.stderr()


async def test_get_on_mcp_is_405_at_once(default_server: DefaultServer) -> None:
    """Before: GET /mcp opened an event stream held open forever. This stateless server never sends a
    message of its own, so GET (and DELETE) answer 405 with ``Allow: POST`` at once."""
    headers = {"Authorization": f"Bearer {default_server.keys['read']}", "Accept": "text/event-stream",
               "MCP-Protocol-Version": "2025-11-25"}
    async with httpx2.AsyncClient(base_url=default_server.server.url, timeout=10) as http:
        with anyio.fail_after(20):
            get = await http.get("/mcp", headers=headers)
            delete = await http.delete("/mcp", headers=headers)
    assert (get.status_code, delete.status_code) == (405, 405)
    assert get.headers["allow"] == "POST"


async def test_a_flood_of_invalid_requests_logs_one_line_per_interval(default_server: DefaultServer) -> None:
    """Hundreds of connections sending garbage instead of HTTP: each gets 400, and the log says so in
    one line per interval with a count, not one line per request."""
    server = default_server.server
    for _ in range(300):
        with connect(server.port) as sock:
            sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            assert sock.recv(4096).startswith(b"HTTP/1.1 400")
    invalid = [line for line in server.stderr().splitlines() if "Invalid HTTP request" in line]
    print(f"300 invalid requests: {len(invalid)} log lines")
    assert 1 <= len(invalid) <= 3


def test_start_warns_about_a_public_bind_and_any_host(tmp_path: Path) -> None:
    """Binding beyond loopback (plain HTTP, so a TLS proxy must be in front) and accepting any Host
    header each get one warning line at start."""
    env = _env()
    server = HttpServer(env, tmp_path / "stderr.log", args=("--host", "0.0.0.0", "--allowed-host", "*"))
    try:
        server.wait_started()
    finally:
        server.close()
    lines = server.stderr().splitlines()
    plain = [line for line in lines if "TLS" in line]
    any_host = [line for line in lines if "any Host" in line]
    assert len(plain) == 1 and "0.0.0.0" in plain[0]
    assert len(any_host) == 1 and "DNS rebinding" in any_host[0]


def test_start_warns_when_any_peer_is_trusted_as_a_proxy(tmp_path: Path) -> None:
    """Trusting every peer's X-Forwarded-Proto/-For ('*') lets any client claim https and any address:
    one warning line at start names the setting to narrow."""
    env = {**_env(), "ASK_FABLE_HTTP_TRUSTED_PROXIES": "*"}
    server = HttpServer(env, tmp_path / "stderr.log")
    try:
        server.wait_started()
    finally:
        server.close()
    trusted = [line for line in server.stderr().splitlines() if "any peer" in line]
    assert len(trusted) == 1 and "ASK_FABLE_HTTP_TRUSTED_PROXIES" in trusted[0]


def test_a_loopback_bind_has_no_warning(default_server: DefaultServer) -> None:
    """The default bind (127.0.0.1) with the default hosts prints the start line and no warning."""
    lines = [line for line in default_server.server.stderr().splitlines() if line.strip()]
    assert [line for line in lines if "TLS" in line or "any Host" in line or "open-file" in line] == []
