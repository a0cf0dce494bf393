"""A client that leaves or cancels mid-call: the server exits cleanly or keeps serving, no orphans remain."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import child_env
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
    return child_env(PATH=f"{fakes.bin_dir}{os.pathsep}{os.environ['PATH']}", ASK_FABLE_TOOLSETS="default,single",
                     ASK_FABLE_CACHE="false")


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


@pytest.mark.parametrize("how", ["close-stdin", "close-both-pipes"])
def test_client_leaving_mid_call_ends_the_server_and_its_children(fakes: FakeCLIs, how: str) -> None:
    """Repeatedly: a stdio client goes away while ask_m3 runs → the server exits, 0 orphan processes."""
    exits = []
    for round_no in range(1, ROUNDS + 1):
        peer = StdioPeer(_env(fakes))
        try:
            peer.initialize()
            peer.request("tools/call", {"name": "ask_m3", "arguments": {"question": QUESTION}})
            _wait_for_runs(fakes, round_no)
            if how == "close-both-pipes":
                assert peer.proc.stdout is not None
                peer.proc.stdout.close()
            exits.append(peer.close(timeout=20))
        finally:
            if peer.proc.poll() is None:
                peer.proc.kill()
    pids = _pids(fakes)
    survivors = _survivors(pids)
    print(f"{how}: {ROUNDS} disconnects, server exit codes {exits}, {len(pids)} CLI pids, "
          f"{len(survivors)} survivors")
    assert len(pids) == 2 * ROUNDS
    assert survivors == []
    assert "Traceback" not in bytes(peer.stderr).decode(errors="replace")


def test_cancelled_calls_leave_the_server_serving_and_no_orphans(fakes: FakeCLIs) -> None:
    """Repeatedly cancel an in-flight ask_m3: the CLI group is ended and the next good call is answered."""
    peer = StdioPeer(_env(fakes))
    try:
        peer.initialize()
        for round_no in range(1, ROUNDS + 1):
            request_id = peer.request("tools/call", {"name": "ask_m3", "arguments": {"question": QUESTION}})
            _wait_for_runs(fakes, round_no)
            peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": request_id, "reason": "client gave up"}})
            survivors = _survivors(_pids(fakes))
            assert survivors == [], f"round {round_no}: {survivors} still alive after the cancel"
            answer = peer.call_tool("ask_fable_help", {"topic": "sidecar"})
            assert answer["result"]["structuredContent"]["status"] == "ok"
            assert peer.proc.poll() is None
        print(f"{ROUNDS} cancellations: server still serving, {len(_pids(fakes))} CLI pids all gone")
    finally:
        code = peer.close()
    assert code == 0
