"""The record writer runs every call's writes before that call goes on, one write at a time, and a
write that fails costs only its own call."""

from __future__ import annotations

import threading
import time

import anyio

from ask_fable.core.app import App
from ask_fable.core.record_writer import RecordWriter


async def test_concurrent_writes_all_finish_one_at_a_time_and_a_failure_stays_with_its_call() -> None:
    writer = RecordWriter(App())
    running = 0
    overlap = False
    done: list[int] = []
    failures: list[int] = []
    lock = threading.Lock()

    def job(i: int) -> None:
        nonlocal running, overlap
        with lock:
            running += 1
            overlap = overlap or running > 1
        try:
            time.sleep(0.002)  # long enough for a second writer, if there were one, to overlap
            if i == 7:
                raise OSError("disk full")
            done.append(i)
        finally:
            with lock:
                running -= 1

    async def call(i: int) -> None:
        try:
            await writer.run(lambda: job(i))
        except OSError:
            failures.append(i)
            return
        assert i in done  # written before the call goes on

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            for i in range(40):
                group.start_soon(call, i)
    assert sorted(done) == [i for i in range(40) if i != 7]
    assert failures == [7]
    assert not overlap


async def test_a_cancelled_call_still_has_its_records_written() -> None:
    writer = RecordWriter(App())
    written = threading.Event()

    with anyio.CancelScope() as scope:
        scope.cancel()
        await writer.run(written.set)
    assert written.is_set()
