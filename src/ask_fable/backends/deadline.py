"""A deadline a mode shares with the backend calls it starts, which may move earlier while they run.

A council gives each member a :class:`SharedDeadline` (the end of the members' share of its
bound) through :func:`bounded_by`; once a quorum has answered it moves that deadline earlier, to
the straggler cut. Backends read it with :func:`current_deadline` where they decide whether to
wait: the HTTP retry loop never starts a backoff that would end past it, and a backoff already
under way is re-judged the moment the deadline moves. Cancelling the call at the deadline stays
the mode's job (its cancel scope); this object only tells a backend how much time is left.

Times are ``anyio.current_time()`` values.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import anyio


class SharedDeadline:
    """The latest moment calls under it may use, and what sets it (named in error details)."""

    def __init__(self, at: float, reason: str) -> None:
        self.at = at
        self.reason = reason
        self._moved = anyio.Event()

    def remaining(self) -> float:
        """Seconds left before the deadline (negative once it passed)."""
        return self.at - anyio.current_time()

    def tighten(self, at: float, reason: str) -> None:
        """Move the deadline to ``at`` when that is earlier, and wake every wait under it."""
        if at >= self.at:
            return
        self.at, self.reason = at, reason
        moved, self._moved = self._moved, anyio.Event()
        moved.set()

    async def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds``; return False at once (or as soon as the deadline moves) when the sleep
        would end at or past the deadline, True when it ran its course."""
        wake = anyio.current_time() + seconds
        while wake < self.at:
            moved = self._moved
            with anyio.move_on_after(wake - anyio.current_time()):
                await moved.wait()
                continue
            return True
        return False


_CURRENT: ContextVar[SharedDeadline | None] = ContextVar("ask_fable_shared_deadline", default=None)


@contextmanager
def bounded_by(deadline: SharedDeadline) -> Iterator[SharedDeadline]:
    """Run the calls started in this block (and the tasks it starts) under ``deadline``."""
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def current_deadline() -> SharedDeadline | None:
    """The shared deadline the running call is under, if a mode set one."""
    return _CURRENT.get()
