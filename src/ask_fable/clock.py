"""The clock every time-dependent part reads: wall time for records, a monotonic clock for intervals.

The breaker's cooldown, the catalog cache's age, the answer cache's TTL, the hub's staleness, the
stats windows and the trace timeline read the App's :class:`Clock` instead of the ``time`` module,
so a test (or a replica that must agree with its peers) hands in its own clock.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Where the time comes from."""

    def now(self) -> float:
        """Wall-clock seconds since the epoch (what records store)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (what intervals and deadlines use)."""
        ...


class SystemClock:
    """The machine's clocks."""

    def now(self) -> float:
        """``time.time()``."""
        return time.time()

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()


#: The clock used when none is handed in.
SYSTEM_CLOCK: Clock = SystemClock()


def local_time(value: float | str) -> str:
    """A Unix time (or an ISO-8601 string) as local ISO-8601 with its UTC offset, to the second: how
    a command shows a time to a person."""
    from datetime import datetime

    moment = datetime.fromisoformat(value) if isinstance(value, str) else datetime.fromtimestamp(value)
    return moment.astimezone().isoformat(timespec="seconds")
