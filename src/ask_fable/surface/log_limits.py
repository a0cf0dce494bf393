"""One line per interval for an error that repeats, with a count: a flood never floods stderr.

A server under attack sees the same failure thousands of times a second (``accept()`` out of file
descriptors, garbage instead of HTTP). :class:`RateLimitedLog` prints the first occurrence of each
kind at once, counts the repeats, and when the interval ends prints one line saying how many there
were. Nothing it prints carries a traceback. :func:`loop_exception_handler` routes the event
loop's own error reports through it, and :class:`RateLimitFilter` does the same for a logger's
records (uvicorn's).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Seconds one kind of error is reported at most once (plus one count line at the end).
DEFAULT_INTERVAL = 10.0


@dataclass
class _Window:
    started: float
    line: str
    repeats: int = 0


class RateLimitedLog:
    """Emit each kind of line at most once per ``interval``; repeats become one count line.

    ``schedule(delay, callback)`` arranges the count line at the end of the interval (on a server,
    the event loop's ``call_later``); without it the count is printed with the next occurrence
    after the interval, or by :meth:`flush`.
    """

    def __init__(self, emit: Callable[[str], None], *, interval: float = DEFAULT_INTERVAL,
                 schedule: Callable[[float, Callable[[], None]], object] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._emit = emit
        self.interval = interval
        self._schedule = schedule
        self._clock = clock
        self._windows: dict[str, _Window] = {}

    def set_scheduler(self, schedule: Callable[[float, Callable[[], None]], object]) -> None:
        """Print count lines at the end of each interval through ``schedule(delay, callback)``."""
        self._schedule = schedule

    def report(self, kind: str, line: str) -> None:
        """Print ``line`` unless ``kind`` was printed less than an interval ago (then count it)."""
        now = self._clock()
        window = self._windows.get(kind)
        if window is not None and now - window.started < self.interval:
            window.repeats += 1
            return
        if window is not None:
            self._close(kind)
        opened = self._windows[kind] = _Window(now, _one_line(line))
        self._emit(opened.line)
        if self._schedule is not None:
            self._schedule(self.interval, lambda: self._close(kind, opened))

    def _close(self, kind: str, window: _Window | None = None) -> None:
        """End ``kind``'s interval (only if it is still ``window``) and print its count, if any."""
        current = self._windows.get(kind)
        if current is None or (window is not None and current is not window):
            return
        del self._windows[kind]
        if current.repeats:
            self._emit(f"{current.line} ({current.repeats} more times in the last {self.interval:g}s)")

    def flush(self) -> None:
        """Print the count line of every open interval now."""
        for kind in list(self._windows):
            self._close(kind)


#: Longest line printed for one report.
MAX_LINE = 300


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


def describe_loop_error(context: dict[str, Any]) -> tuple[str, str]:
    """``(kind, line)`` for an event-loop error report: its message and exception, no traceback."""
    message = str(context.get("message") or "event loop error")
    exc = context.get("exception")
    if isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    elif exc is not None:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    else:
        reason = ""
    kind = f"{message}|{type(exc).__name__ if exc is not None else ''}|{getattr(exc, 'errno', '')}"
    return kind, f"{message}: {reason}" if reason else message


LoopErrorDescriber = Callable[[dict[str, Any]], tuple[str, str]]


def loop_exception_handler(log: RateLimitedLog, describe: LoopErrorDescriber = describe_loop_error
                           ) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An event-loop exception handler printing ``describe(context)`` through ``log``."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        kind, line = describe(context)
        log.report(kind, line)

    return handle


class RateLimitFilter(logging.Filter):
    """A logging filter passing each message template at most once per interval, without traceback;
    the repeats are counted into one line printed through ``log``."""

    def __init__(self, log: RateLimitedLog) -> None:
        super().__init__()
        self.log = log

    def filter(self, record: logging.LogRecord) -> bool:
        """Route ``record`` through the rate-limited log instead of the handler."""
        self.log.report(f"{record.name}|{record.msg}", record.getMessage())
        return False
