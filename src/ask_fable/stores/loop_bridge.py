"""Blocking store code over asyncio I/O: the bridge between the stores' synchronous SQL and
psycopg's asyncio connections.

Every store is written once, as plain blocking code against the ``Database`` protocol, for SQLite
and PostgreSQL alike. On PostgreSQL each query is a coroutine of an ``AsyncConnection``, and
:func:`await_io` is how the blocking code waits for one:

- Inside :func:`run_blocking` (how the server calls a store from its event loop) the store's code
  runs in a greenlet on that loop; :func:`await_io` suspends the greenlet, the loop awaits the
  query like any other coroutine (other calls run meanwhile, cancellation and timeouts apply as
  usual), and the greenlet resumes with the result. No thread is involved.
- Anywhere else (a command, a worker thread, a listener thread) the query runs on the process's
  I/O loop, a daemon thread of its own (:func:`io_loop`), and the calling thread waits for it.
  :func:`call_blocking` runs a whole store call there in one hop instead of one per query.

The code run by :func:`run_blocking` must not hold a thread lock across a query: another call on
the same loop thread taking it would block the loop.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import greenlet

P = ParamSpec("P")
T = TypeVar("T")


class _StoreGreenlet(greenlet.greenlet):
    """A store call running on an event loop; its parent is the task awaiting its queries."""


def await_io(coro: Coroutine[Any, Any, T]) -> T:
    """The result of ``coro``, waited for by blocking code: awaited by the event loop that runs this
    code through :func:`run_blocking`, else run on the I/O loop while this thread waits."""
    current = greenlet.getcurrent()
    if isinstance(current, _StoreGreenlet):
        parent = current.parent
        assert parent is not None
        result: T = parent.switch(coro)
        return result
    return io_loop().run(coro)


async def run_blocking(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` run on this event loop, each query it makes through :func:`await_io`
    awaited here: what ``fn`` raises is raised here, and a cancellation of this task is raised in
    ``fn`` where it waits (so its transaction is rolled back and its connection returned)."""
    parent = greenlet.getcurrent()
    child = _StoreGreenlet(functools.partial(fn, *args, **kwargs), parent)
    child.gr_context = parent.gr_context
    step: Any = child.switch()
    while not child.dead:
        try:
            value = await step
        except BaseException as exc:
            step = child.throw(exc)
        else:
            step = child.switch(value)
    result: T = step
    return result


def on_asyncio() -> bool:
    """Whether this thread runs an asyncio event loop (psycopg's async connections need one)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class IoLoop:
    """An asyncio event loop on a daemon thread of its own, running the queries of blocking callers."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="ask-fable-io", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on this loop and return its result (this thread waits for it)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("blocking store code ran on the I/O loop outside run_blocking")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


_io: tuple[int, IoLoop] | None = None
_io_lock = threading.Lock()


def io_loop() -> IoLoop:
    """The process's I/O loop, started on first use (and again in a forked child)."""
    global _io
    current = _io
    if current is not None and current[0] == os.getpid():
        return current[1]
    with _io_lock:
        if _io is None or _io[0] != os.getpid():
            _io = (os.getpid(), IoLoop())
        return _io[1]


def call_blocking(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` run whole on the I/O loop, in one hop from this thread rather than one
    per query (for a store call made from a worker thread)."""
    return io_loop().run(run_blocking(fn, *args, **kwargs))
