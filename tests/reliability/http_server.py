"""The installed ``ask-fable serve --http`` in its own process, for tests that attack it from outside.

:class:`HttpServer` starts the real command on an ephemeral loopback port (read from the start line
the server prints), its stderr kept in a file the test can read and measure, optionally under a
lower open-file limit. Keys are created with the real ``ask-fable keys create``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.e2e.helpers import ask_fable_command, command_output

START_LINE = re.compile(r"serving \d+ tools at http://(?P<host>[^\s/]+):(?P<port>\d+)/mcp")
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
               "Content-Type": "application/json"}


def create_key(env: dict[str, str], name: str, scope: str, tenant: str | None = None) -> str:
    """A new API key made by ``ask-fable keys create``'s own code (its tenant made from ``name`` unless
    given)."""
    argv = ["keys", "create", "--name", name, "--scope", scope, "--json"]
    if tenant is not None:
        argv += ["--tenant", tenant]
    key = json.loads(command_output(argv, env))["key"]
    assert isinstance(key, str)
    return key


def _open_file_limit(limit: int | None) -> Callable[[], None] | None:
    if limit is None:
        return None

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return apply


class HttpServer:
    """One ``ask-fable serve --http`` process (``args`` after ``serve --http``)."""

    def __init__(self, env: dict[str, str], stderr_path: Path, *, args: tuple[str, ...] = (),
                 open_files: int | None = None) -> None:
        self.stderr_path = stderr_path
        stderr = stderr_path.open("ab")
        try:
            self.proc = subprocess.Popen(
                [*ask_fable_command(), "serve", "--http", "--port", "0", *args],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, env=env,
                preexec_fn=_open_file_limit(open_files),
            )
        finally:
            stderr.close()
        self.host = "127.0.0.1"
        self.port = 0

    @property
    def url(self) -> str:
        """The base URL (no path)."""
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.proc.pid

    def stderr(self) -> str:
        """Everything the server wrote on stderr so far."""
        return self.stderr_path.read_text(errors="replace")

    def stderr_bytes(self) -> int:
        """How many bytes the server wrote on stderr so far."""
        return self.stderr_path.stat().st_size

    def wait_started(self, timeout: float = 60) -> None:
        """Block until the start line names the bound port and /healthz answers (so every start
        warning is out); bounded, and fails if the server exits."""
        deadline = time.monotonic() + timeout
        while True:
            found = START_LINE.search(self.stderr())
            if found and self._healthy(int(found["port"])):
                self.port = int(found["port"])
                return
            if self.proc.poll() is not None:
                code = self.proc.returncode
                raise AssertionError(f"the server exited with {code}: {self.stderr()[-2000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the server did not start: {self.stderr()[-2000:]}")
            time.sleep(0.02)

    @staticmethod
    def _healthy(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                return sock.recv(64).startswith(b"HTTP/1.1 200")
        except OSError:
            return False

    def open_fds(self) -> int:
        """File descriptors the server process holds now."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def open_sockets(self) -> int:
        """Sockets the server process holds now (the listener and upstream connections included)."""
        count = 0
        for name in os.listdir(f"/proc/{self.pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{self.pid}/fd/{name}").startswith("socket:"):
                    count += 1
        return count

    def signal(self, sig: int) -> None:
        """Send ``sig`` to the server process."""
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        """The exit status, waiting at most ``timeout`` seconds."""
        return self.proc.wait(timeout=timeout)

    def close(self) -> None:
        """Stop the server if it still runs (SIGTERM, then SIGKILL)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextlib.contextmanager
def http_server(env: dict[str, str], stderr_path: Path, *, args: tuple[str, ...] = (),
                open_files: int | None = None) -> Iterator[HttpServer]:
    """A started :class:`HttpServer`, stopped after the block."""
    server = HttpServer(env, stderr_path, args=args, open_files=open_files)
    try:
        server.wait_started()
        yield server
    finally:
        server.close()


def connect(port: int) -> socket.socket:
    """A blocking TCP connection to the server on loopback."""
    return socket.create_connection(("127.0.0.1", port), timeout=10)


@contextlib.contextmanager
def _non_blocking(sock: socket.socket) -> Iterator[None]:
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        yield
    finally:
        sock.settimeout(timeout)


def read_now(sock: socket.socket) -> bytes | None:
    """The bytes waiting on ``sock`` without blocking (``b""`` when none), None once the peer closed it."""
    with _non_blocking(sock):
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            return b""
        except OSError:
            return None
    return data or None


def closed_by_peer(sock: socket.socket) -> bool:
    """Whether the other end closed ``sock`` (EOF or reset), without blocking; waiting bytes are dropped."""
    while (data := read_now(sock)) is not None:
        if not data:
            return False
    return True
