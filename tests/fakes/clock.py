"""A clock a test moves by hand, for anything that reads the App's :class:`ask_fable.clock.Clock`."""

from __future__ import annotations

import time


class ManualClock:
    """Wall and monotonic time that start at the real ones and move only when told to."""

    def __init__(self, wall: float | None = None, mono: float = 1000.0) -> None:
        self.wall = time.time() if wall is None else wall
        self.mono = mono

    def now(self) -> float:
        """The wall time the test set."""
        return self.wall

    def monotonic(self) -> float:
        """The monotonic time the test set."""
        return self.mono

    def advance(self, seconds: float) -> None:
        """Move both clocks forward (a negative value moves them back, for back-dating a record)."""
        self.wall += seconds
        self.mono += seconds
