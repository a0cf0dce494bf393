"""One key cannot lock the other tenants out of the real ``ask-fable serve --http``.

Before: 257 connections, each sending complete headers with a valid read key and
``Content-Length: 100000`` but no body, took every request slot until the body timeout fired (30 s):
every other tenant's call got 503 meanwhile, and reopening the sockets repeated it. Now a request
waiting for its body counts against its key, a key has a bound on its requests in progress (well
below the server's), and a body that makes no progress for a few seconds is dropped.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import anyio

from tests.e2e.team_server import create_key, team_server
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.http_server import closed_by_peer, read_now

#: More sockets than the server has request slots (256 by default), fewer than its connections (512).
ATTACK_SOCKETS = 300
STALL_S = 2.0
QUESTION = "Is the retry budget per request or per client?"


def _hold_a_slot(port: int, key: str) -> socket.socket:
    """A connection that sends a complete request head for a 100,000-byte body, then nothing."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Accept: application/json, text/event-stream\r\n"
                 + f"Authorization: Bearer {key}\r\n".encode() + b"Content-Length: 100000\r\n\r\n")
    return sock


def _status(reply: bytes) -> int | None:
    """The status code of an HTTP/1.1 response head, once it arrived."""
    if not reply.startswith(b"HTTP/1.1 ") or len(reply) < 12:
        return None
    return int(reply[9:12])


class Attack:
    """``count`` connections that each hold a request slot (``open_one`` opens one), each reopened once
    the server closes it; the statuses of the replies they got are counted."""

    def __init__(self, open_one: Callable[[], socket.socket], count: int) -> None:
        self.open_one = open_one
        self.count = count
        self.open: list[tuple[socket.socket, bytearray]] = []
        self.statuses: dict[int, int] = {}
        self.reopened = 0

    def top_up(self) -> None:
        """Note the replies that arrived, drop closed sockets and open new ones up to the count."""
        alive = []
        for sock, reply in self.open:
            data = read_now(sock)
            if data:
                reply += data
            if data is None or closed_by_peer(sock):
                status = _status(bytes(reply))
                if status is not None:
                    self.statuses[status] = self.statuses.get(status, 0) + 1
                sock.close()
                continue
            alive.append((sock, reply))
        self.reopened += self.count - len(alive) if self.open else 0
        while len(alive) < self.count:
            alive.append((self.open_one(), bytearray()))
        self.open = alive

    def close(self) -> None:
        for sock, _ in self.open:
            sock.close()


async def test_a_key_holding_bodies_back_cannot_lock_out_another_tenant() -> None:
    """Mallory's read key keeps 300 connections waiting to send their bodies, reopening each one the
    server closes; meanwhile Alice's MCP client asks a model again and again: every one of her calls
    is answered, Mallory's requests past her key's bound are refused at once (429) and those within it
    are dropped (408) once their body has made no progress for the stall timeout."""
    with FakeProvider() as fp:
        fp.enqueue("anthropic", text="Per client.", times=None)
        env = {"ASK_FABLE_GLM_API_KEY": "sk-glm-lockout-0123456789abcdef",
               "ASK_FABLE_GLM_BASE_URL": fp.base_url, "ASK_FABLE_CACHE": "false",
               "ASK_FABLE_HTTP_BODY_STALL_TIMEOUT": str(STALL_S)}
        mallory = create_key("mallory", "--scope", "read", "--tenant", "mallory", env=env)["key"]
        alice = create_key("alice", "--scope", "ask", "--tenant", "alice", env=env)["key"]
        async with team_server(env) as server:
            port = int(server.url.rsplit(":", 1)[1])
            attack = Attack(lambda: _hold_a_slot(port, mallory), ATTACK_SOCKETS)
            answered: list[str] = []
            failed: list[str] = []
            latencies: list[float] = []
            try:
                attack.top_up()
                await anyio.sleep(0.3)  # every attacking request is in
                async with server.client(alice) as client:
                    deadline = time.monotonic() + 2 * STALL_S + 1.5
                    while time.monotonic() < deadline:
                        attack.top_up()
                        started = time.monotonic()
                        try:
                            with anyio.fail_after(20):
                                result = await client.call_tool("ask_glm", {"question": QUESTION})
                            content: Any = result.structured_content or {}
                            (answered if content.get("status") == "ok" else failed).append(str(content)[:200])
                        except Exception as exc:  # a refused request reaches the client as an error
                            failed.append(f"{type(exc).__name__}: {exc}"[:200])
                        latencies.append(time.monotonic() - started)
                        await anyio.sleep(0.1)
                    attack.top_up()
            finally:
                attack.close()
    print(f"{ATTACK_SOCKETS} slot-holding sockets of one read key, reopened {attack.reopened} times: "
          f"alice {len(answered)} answered, {len(failed)} failed, slowest {max(latencies):.2f}s; "
          f"mallory's statuses {attack.statuses}")
    assert failed == []
    assert len(answered) >= 5
    assert attack.statuses.get(429, 0) > 0 and attack.statuses.get(408, 0) > 0
    assert set(attack.statuses) <= {408, 429}


def _hold_a_form(port: int) -> socket.socket:
    """A connection posting the web view's login form without a key, its body never sent."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\n")
    return sock


async def test_login_forms_held_back_without_a_key_cannot_take_every_connection() -> None:
    """Before: with no key at all, login form posts whose body never came held every connection the
    server keeps (here 64), so every new connection was closed at once: MCP clients failed until
    the body timeout. Now one address has at most its share of the web view's requests in
    progress; past it a post is answered 429 at once, those within it get 408 once their body made no
    progress for the stall timeout, and MCP calls are answered throughout."""
    with FakeProvider() as fp:
        fp.enqueue("anthropic", text="Per client.", times=None)
        env = {"ASK_FABLE_GLM_API_KEY": "sk-glm-lockout-0123456789abcdef",
               "ASK_FABLE_GLM_BASE_URL": fp.base_url, "ASK_FABLE_CACHE": "false",
               "ASK_FABLE_HTTP_MAX_CONNECTIONS": "64", "ASK_FABLE_HTTP_BODY_STALL_TIMEOUT": str(STALL_S)}
        alice = create_key("alice", "--scope", "ask", "--tenant", "alice", env=env)["key"]
        async with team_server(env) as server:
            port = int(server.url.rsplit(":", 1)[1])
            forms = Attack(lambda: _hold_a_form(port), 80)
            answered, failed = 0, []
            try:
                # The forms first, until the server has read them (the first ones past the address's
                # share are answered 429 at once): a kept-alive connection of Alice's opened before
                # them would be the oldest idle one, which the connection bound closes to make room.
                with anyio.fail_after(20):
                    while not forms.statuses.get(429):
                        forms.top_up()
                        await anyio.sleep(0.1)
                async with server.client(alice) as client:
                    deadline = time.monotonic() + 2 * STALL_S + 1
                    while time.monotonic() < deadline:
                        forms.top_up()
                        await anyio.sleep(0.2)
                        try:
                            with anyio.fail_after(20):
                                result = await client.call_tool("ask_glm", {"question": QUESTION})
                            content: Any = result.structured_content or {}
                            if content.get("status") == "ok":
                                answered += 1
                            else:
                                failed.append(str(content)[:200])
                        except Exception as exc:  # a closed connection reaches the client as an error
                            failed.append(f"{type(exc).__name__}: {exc}"[:200])
            finally:
                forms.close()
    print(f"80 keyless login forms held back at 64 connections: alice {answered} answered, "
          f"{len(failed)} failed; the forms' statuses {forms.statuses}")
    assert failed == []
    assert answered >= 3
    assert forms.statuses.get(429, 0) > 0 and forms.statuses.get(408, 0) > 0
