"""Limits the HTTP server enforces beneath the application: connections, header time, JSON nesting.

- :func:`limited_protocol` is uvicorn's h11 protocol with two additions, kept in a shared
  :class:`ConnectionTable`:

  * a *header timeout*: a connection must deliver a request's complete headers within
    ``header_timeout`` seconds of connecting (on a kept-alive connection, of the first byte of its
    next request), however it trickles them; uvicorn's ``timeout_keep_alive`` only covers a
    connection idle after a response, and any byte received cancels it;
  * a *connection bound*: past ``max_connections`` the oldest connection with no request in
    flight is closed to make room, and when every one is busy the newcomer is closed at once.
    uvicorn's ``limit_concurrency`` would instead answer every request, health checks included,
    with 503 once that many sockets are open, idle ones too.

- :func:`fit_open_file_limit` raises the process's open-file limit to hold the connection bound
  plus a reserve for stores, CLI pipes and upstream connections, and lowers the bound when the
  limit cannot be raised.
- :func:`nesting_exceeds` measures how deep a JSON body nests without recursing, so a body built
  to blow the parser's stack is refused before any parser sees it.
"""

from __future__ import annotations

import itertools
import operator
import re
import resource
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio

    from uvicorn.protocols.http.h11_impl import H11Protocol

#: File descriptors kept free beyond the connection bound (stores, CLI pipes, upstream sockets).
FD_RESERVE = 64
#: The bound is never lowered below this many connections, whatever the open-file limit.
MIN_CONNECTIONS = 16
#: Deepest nesting of arrays and objects a request body may have (MCP messages need a handful).
MAX_JSON_DEPTH = 64

#: (kind, line) sink for what the limits did, printed at most once per interval.
Note = Callable[[str, str], None]


class Connection(Protocol):
    """What the table needs of a connection."""

    @property
    def idle(self) -> bool:
        """No request in flight."""
        ...

    def shed(self) -> None:
        """Close it to make room."""
        ...


class ConnectionTable:
    """The open connections of one server, oldest first, with the limits they live under."""

    def __init__(self, *, max_connections: int, header_timeout: float, note: Note | None = None) -> None:
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self._note = note
        self._open: OrderedDict[Connection, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, connection: Connection) -> bool:
        """Room for ``connection``: closes the oldest idle ones past the bound; False when all are busy."""
        while len(self._open) >= self.max_connections:
            if not self.shed_oldest_idle():
                self._report("refused", f"refused a connection: all {len(self._open)} open connections "
                             "have a request in flight (ASK_FABLE_HTTP_MAX_CONNECTIONS)")
                return False
            self._report("shed", f"closed the oldest idle connection: {self.max_connections} connections "
                         "open (ASK_FABLE_HTTP_MAX_CONNECTIONS)")
        self._open[connection] = None
        return True

    def leave(self, connection: Connection) -> None:
        """Forget a closed connection."""
        self._open.pop(connection, None)

    def shed_oldest_idle(self) -> bool:
        """Close the oldest connection with no request in flight (to free its descriptor); False if none."""
        victim = next((c for c in self._open if c.idle), None)
        if victim is None:
            return False
        self.leave(victim)
        victim.shed()
        return True

    def _report(self, kind: str, line: str) -> None:
        if self._note is not None:
            self._note(kind, line)


def limited_protocol(table: ConnectionTable) -> type[H11Protocol]:
    """uvicorn's h11 protocol bound to ``table``: header timeout and connection bound (module doc)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class LimitedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _timed_cycle: object = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if not table.admit(self):
                transport.close()
                return
            self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            table.leave(self)
            self._disarm_header_timer()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._header_timer is None and self.idle and not self.transport.is_closing():
                self._arm_header_timer()  # the first byte of the next request on a kept-alive connection
            super().data_received(data)
            if self._header_timer is not None and self.cycle is not self._timed_cycle:
                self._disarm_header_timer()  # a new request's headers are complete

        @property
        def idle(self) -> bool:
            """No request in flight: still sending headers, or kept alive between requests."""
            return self.cycle is None or self.cycle.response_complete

        def shed(self) -> None:
            """Close this connection to make room (it has no request in flight)."""
            self._disarm_header_timer()
            if not self.transport.is_closing():
                self.transport.close()

        def _arm_header_timer(self) -> None:
            self._timed_cycle = self.cycle
            self._header_timer = self.loop.call_later(table.header_timeout, self._headers_too_slow)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return LimitedH11Protocol


def fit_open_file_limit(max_connections: int) -> tuple[int, int | None]:
    """The connection bound this process can hold, and its open-file limit (None: unlimited).

    The soft limit is raised (up to the hard one) to hold ``max_connections`` plus
    :data:`FD_RESERVE`; if it cannot be, the bound is lowered to fit (never below
    :data:`MIN_CONNECTIONS`).
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = max_connections + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return max_connections, None
    return min(max_connections, max(MIN_CONNECTIONS, soft - FD_RESERVE)), soft


# A JSON string, escapes included, matched without backtracking (possessive quantifiers).
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def nesting_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON text ``body`` nests arrays and objects deeper than ``limit``.

    Counted without recursion, in time linear in the body: strings are removed first (brackets in
    them do not count), then the running depth of the remaining brackets is folded in C. Malformed
    text is measured the same way; a parser rejects it later.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False  # not enough opening brackets to go deeper
    steps = _STRING.sub(b"", body).translate(None, _NOT_BRACKET).translate(_STEP)
    # After the i-th bracket the depth is (2 × openings so far) − i: an opening adds 2, a closing 0.
    depths = map(operator.sub, itertools.accumulate(steps), itertools.count(1))
    return max(depths, default=0) > limit
