"""The guard's blocking store calls on daemon threads: results and errors come back, a wait is
cancellable, and the threads are bounded."""

from __future__ import annotations

import threading

import anyio
import pytest

from ask_fable.surface.daemon_workers import DaemonWorkers


async def test_a_call_returns_its_result_or_raises_its_error() -> None:
    workers = DaemonWorkers(2, "test-workers")
    assert await workers.run(lambda: 41 + 1) == 42
    with pytest.raises(ZeroDivisionError):
        await workers.run(lambda: 1 // 0)


async def test_a_call_that_never_returns_is_abandoned_on_a_daemon_thread() -> None:
    """Cancelling the wait returns at once; the blocked thread is a daemon, so it holds no exit."""
    workers = DaemonWorkers(1, "test-stuck")
    release = threading.Event()
    with anyio.move_on_after(0.2) as waited:
        await workers.run(release.wait)
    assert waited.cancelled_caught
    stuck = [t for t in threading.enumerate() if t.name.startswith("test-stuck")]
    assert stuck and all(t.daemon for t in stuck)
    release.set()
    with anyio.fail_after(10):  # the thread, free again, serves the next call
        assert await workers.run(lambda: "again") == "again"


async def test_calls_past_the_bound_wait_for_a_free_thread() -> None:
    workers = DaemonWorkers(2, "test-bounded")
    release = threading.Event()
    results: list[object] = []

    async def blocked() -> None:
        results.append(await workers.run(release.wait))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(blocked)
            while len([t for t in threading.enumerate() if t.name.startswith("test-bounded")]) < 2:
                await anyio.sleep(0.01)
            release.set()
    assert results == [True, True, True]
    assert len([t for t in threading.enumerate() if t.name.startswith("test-bounded")]) == 2
