"""The processes a stopped or abandoned server must leave behind (none) and the stores it must leave
flushed, for the reliability tests that signal or hang up on the real servers."""

from __future__ import annotations

import contextlib
import os
import signal

import anyio

from ask_fable.config import state_dir
from tests.fakes.fake_cli import FakeCLIs, is_alive


def cli_pids(fakes: FakeCLIs) -> list[int]:
    """The fake CLI's processes and the grandchildren they forked."""
    return [c["pid"] for c in fakes.calls("mmx")] + fakes.child_pids("mmx")


async def cli_running(fakes: FakeCLIs, count: int = 1) -> list[int]:
    """Wait (bounded) until ``count`` CLI runs forked their child; returns every pid, all alive."""
    with anyio.fail_after(30):
        while len(fakes.child_pids("mmx")) < count:
            await anyio.sleep(0.02)
    pids = cli_pids(fakes)
    assert all(is_alive(pid) for pid in pids)
    return pids


async def survivors_of(pids: list[int], within: float = 5) -> list[int]:
    """The pids still alive after a bounded wait; they are killed, so no test leaves them behind."""
    with anyio.move_on_after(within):
        while any(is_alive(pid) for pid in pids):
            await anyio.sleep(0.02)
    alive = [pid for pid in pids if is_alive(pid)]
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return alive


def unflushed_logs() -> list[str]:
    """SQLite write-ahead logs still holding pages under the state directory (a closed store has none)."""
    return [str(path) for path in state_dir().rglob("*-wal") if path.stat().st_size > 0]
