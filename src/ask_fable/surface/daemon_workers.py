"""Blocking calls the HTTP guard makes before a request is served (a key check, a readiness probe),
run on daemon threads.

A store that stops answering (a database hung, or behind a partition: connections accepted, nothing
answered) blocks the thread asking it for as long as it stays silent. On one of anyio's worker
threads that would hold a stopped server's process, since the interpreter waits for every
non-daemon thread at exit; here the caller's wait is cancellable like any request (the stop cancels
it and answers 503), and the silent thread is left to the process's end. The threads are bounded:
past ``size`` busy ones, calls queue until one is free.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the caller stopped waiting
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class DaemonWorkers:
    """At most ``size`` daemon threads running blocking calls for the event loop's tasks."""

    def __init__(self, size: int, name: str) -> None:
        self.size = size
        self.name = name
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    async def run(self, call: Callable[[], T]) -> T:
        """``call()``'s result (or exception) from a daemon thread; cancelling the wait abandons it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((call, loop, future))
        with self._lock:
            grow = self._threads < self.size and self._jobs.qsize() > self._idle
            if grow:
                self._threads += 1
        if grow:
            threading.Thread(target=self._work, name=f"{self.name}-{self._threads}", daemon=True).start()
        return await future

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            call, loop, future = self._jobs.get()
            with self._lock:
                self._idle -= 1
            if future.done():  # cancelled while queued
                continue
            result: Any = None
            error: BaseException | None = None
            try:
                result = call()
            except BaseException as exc:  # handed to the caller, who decides what it means
                error = exc
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
                loop.call_soon_threadsafe(_settle, future, result, error)
