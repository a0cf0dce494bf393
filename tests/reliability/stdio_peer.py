"""A raw JSON-RPC peer for a spawned ``ask-fable`` stdio server: send lines, wait for answers by id."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
from typing import Any

from tests.e2e.helpers import ask_fable_command

PROTOCOL = "2025-11-25"


class StdioPeer:
    """Spawns ``ask-fable`` and speaks newline-delimited JSON-RPC to it; every stdout line is kept raw."""

    def __init__(self, env: dict[str, str], args: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [*ask_fable_command(), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.lines: list[bytes] = []
        self.stderr = bytearray()
        self._answers: dict[Any, dict[str, Any]] = {}
        self._arrived = threading.Condition()
        self._next_id = 0
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                continue  # kept in self.lines; purity checks report it
            if isinstance(message, dict) and "id" in message and ("result" in message or "error" in message):
                with self._arrived:
                    self._answers[message["id"]] = message
                    self._arrived.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := self.proc.stderr.read1(65536):  # type: ignore[attr-defined]
            self.stderr.extend(chunk)

    def send(self, message: dict[str, Any]) -> None:
        """Write one message line."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def send_raw(self, data: bytes) -> None:
        """Write raw bytes (for malformed input)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request and return its id."""
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_id

    def wait_for(self, request_id: int, timeout: float = 30) -> dict[str, Any]:
        """The response to ``request_id`` (other messages are skipped)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while request_id not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer to request {request_id} within {timeout}s")
                self._arrived.wait(left)
            return self._answers[request_id]

    def initialize(self) -> dict[str, Any]:
        """The legacy handshake most clients use today."""
        answer = self.wait_for(
            self.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "reliability", "version": "1"},
                },
            )
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call_tool(self, name: str, arguments: Any, timeout: float = 30) -> dict[str, Any]:
        """tools/call and wait for its response message."""
        return self.wait_for(self.request("tools/call", {"name": name, "arguments": arguments}), timeout)

    def close(self, timeout: float = 20) -> int:
        """Close stdin (the client leaves) and wait for the server to exit; kill it if it does not."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
