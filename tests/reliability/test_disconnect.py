"""A client that leaves or cancels mid-call: the server exits cleanly or keeps serving, no orphans remain."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import ask_fable_command, child_env
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis, is_alive
from tests.reliability.stdio_peer import StdioPeer

QUESTION = "Why does the worker pool deadlock on shutdown?"
ROUNDS = 3


@pytest.fixture
def fakes(tmp_path: Path) -> FakeCLIs:
    """Fake CLIs; mmx sleeps long and forks a child that holds its pipes."""
    handle = install_fake_clis(tmp_path / "bin", names=["mmx"])
    handle.behave("mmx", sleep=60, spawn_child=True)
    return handle


def _env(fakes: FakeCLIs) -> dict[str, str]:
    return child_env(
        PATH=f"{fakes.bin_dir}{os.pathsep}{os.environ['PATH']}",
        ASK_FABLE_TOOLSETS="default,single",
        ASK_FABLE_CACHE="false",
    )


def _wait_for_runs(fakes: FakeCLIs, count: int, timeout: float = 20) -> None:
    """Block until mmx has started ``count`` times and forked its children (bounded)."""
    deadline = time.monotonic() + timeout
    while len(fakes.child_pids("mmx")) < count:
        assert time.monotonic() < deadline, "mmx never started"
        time.sleep(0.02)


def _survivors(pids: list[int], grace: float = 5) -> list[int]:
    deadline = time.monotonic() + grace
    while any(is_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return [p for p in pids if is_alive(p)]


def _pids(fakes: FakeCLIs) -> list[int]:
    return [c["pid"] for c in fakes.calls("mmx")] + fakes.child_pids("mmx")


# A client process that starts the server on pipes, asks something slow, reports the server's pid
# and waits to be killed: its death closes both ends of the server's stdio at once.
CLIENT = """
import json, subprocess, sys, time
server = subprocess.Popen(json.loads(sys.argv[1]), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=open(sys.argv[3], "ab"))
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "doomed", "version": "1"}}}
server.stdin.write((json.dumps(init) + "\\n").encode()); server.stdin.flush()
server.stdout.readline()
for message in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "ask_m3", "arguments": {"question": sys.argv[2]}}}):
    server.stdin.write((json.dumps(message) + "\\n").encode())
server.stdin.flush()
print(server.pid, flush=True)
time.sleep(3600)
"""


def test_client_closing_stdin_mid_call_ends_the_server_and_its_children(fakes: FakeCLIs) -> None:
    """Repeatedly: a stdio client closes the pipe while ask_m3 runs → the server exits 0, 0 orphans."""
    exits = []
    for round_no in range(1, ROUNDS + 1):
        peer = StdioPeer(_env(fakes))
        try:
            peer.initialize()
            peer.request("tools/call", {"name": "ask_m3", "arguments": {"question": QUESTION}})
            _wait_for_runs(fakes, round_no)
            exits.append(peer.close(timeout=20))
        finally:
            if peer.proc.poll() is None:
                peer.proc.kill()
        assert "Traceback" not in bytes(peer.stderr).decode(errors="replace")
    pids = _pids(fakes)
    survivors = _survivors(pids)
    print(
        f"stdin closed mid-call x{ROUNDS}: server exit codes {exits}, {len(pids)} CLI pids, "
        f"{len(survivors)} survivors"
    )
    assert exits == [0] * ROUNDS
    assert len(pids) == 2 * ROUNDS and survivors == []


def test_client_killed_mid_call_ends_the_server_and_its_children(fakes: FakeCLIs, tmp_path: Path) -> None:
    """Repeatedly: the client process is SIGKILLed mid-call → the server exits, 0 orphan processes."""
    servers = []
    server_stderr = tmp_path / "server-stderr.log"
    for round_no in range(1, ROUNDS + 1):
        argv = [sys.executable, "-c", CLIENT, json.dumps(ask_fable_command()), QUESTION, str(server_stderr)]
        client = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=_env(fakes))
        try:
            assert client.stdout is not None
            servers.append(int(client.stdout.readline()))
            _wait_for_runs(fakes, round_no)
        finally:
            client.kill()
            client.wait()
    pids = [*servers, *_pids(fakes)]
    survivors = _survivors(pids, grace=15)
    tracebacks = server_stderr.read_text(errors="replace").count("Traceback (most recent call last)")
    print(
        f"client SIGKILLed mid-call x{ROUNDS}: {len(servers)} servers + {len(pids) - len(servers)} CLI pids, "
        f"{len(survivors)} survivors; tracebacks on the servers' stderr: {tracebacks}"
    )
    assert len(pids) == 3 * ROUNDS
    assert survivors == []
    assert tracebacks == 0, server_stderr.read_text(errors="replace")[-4000:]


def test_cancelled_calls_leave_the_server_serving_and_no_orphans(fakes: FakeCLIs) -> None:
    """Repeatedly cancel an in-flight ask_m3: the CLI group is ended and the next good call is answered."""
    peer = StdioPeer(_env(fakes))
    try:
        peer.initialize()
        for round_no in range(1, ROUNDS + 1):
            request_id = peer.request("tools/call", {"name": "ask_m3", "arguments": {"question": QUESTION}})
            _wait_for_runs(fakes, round_no)
            peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id, "reason": "client gave up"},
                }
            )
            survivors = _survivors(_pids(fakes))
            assert survivors == [], f"round {round_no}: {survivors} still alive after the cancel"
            answer = peer.call_tool("ask_fable_help", {"topic": "sidecar"})
            assert answer["result"]["structuredContent"]["status"] == "ok"
            assert peer.proc.poll() is None
        print(f"{ROUNDS} cancellations: server still serving, {len(_pids(fakes))} CLI pids all gone")
    finally:
        code = peer.close()
    assert code == 0
