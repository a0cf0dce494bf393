"""Running the guarded HTTP app under uvicorn: connection limits, quiet failures, an orderly stop.

:class:`HttpRunner` serves one :class:`~ask_fable.surface.http_app.HttpGuard` with uvicorn's h11
protocol bound to a :class:`~ask_fable.surface.http_limits.ConnectionTable` (header timeout,
connection bound), uvicorn's own ``timeout_keep_alive`` for idle kept-alive connections and h11's
cap on a request's head. ``X-Forwarded-Proto`` and ``X-Forwarded-For`` are believed from the
options' trusted proxies only (uvicorn's proxy headers): behind a TLS proxy the request's scheme is
``https``, which makes the web view's session cookie ``Secure``.

What goes wrong below the application (``accept()`` out of descriptors, garbage instead of HTTP,
connections shed) is printed through one :class:`~ask_fable.surface.log_limits.RateLimitedLog`:
one line per kind and interval, with a count, never a traceback; an ``accept()`` out of
descriptors also closes idle connections to free some.

:meth:`HttpRunner.stop` may be called from a signal handler. The server then stops listening,
cancels every request in flight, web view pages included (each caller gets 503, each call's CLI
process groups are ended and its upstream requests closed), closes its connections and runs the
app's shutdown, which writes the keys' last use and closes the stores: an idle or busy server is
gone within a second or so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import time
from collections.abc import Generator, Iterator
from typing import Any

import uvicorn

from ask_fable.surface.http_app import HttpGuard, HttpOptions
from ask_fable.surface.http_limits import ConnectionTable, limited_protocol
from ask_fable.surface.log_limits import (
    LoopErrorDescriber,
    RateLimitedLog,
    RateLimitFilter,
    describe_loop_error,
    loop_exception_handler,
)
from ask_fable.surface.terminal import debug_requested, say

#: Bytes of a request line plus headers (h11's default, stated here: larger heads get 400).
MAX_HEAD_BYTES = 16 * 1024
#: Connections the kernel queues before the server accepts them.
BACKLOG = 2048
#: Seconds a stopping server waits for its connections to finish their last response. By then the
#: guard has cancelled every request it was serving (each answered 503), so this bounds only the
#: writing of those answers; uvicorn cancels whatever is left after it.
GRACEFUL_SECONDS = 1


def bind_socket(options: HttpOptions) -> socket.socket:
    """A socket listening on the options' host and port; OSError (with its reason) when it cannot be.

    It listens at once, so clients that connect while the server starts wait in the backlog.
    """
    family, kind, proto, _, address = socket.getaddrinfo(
        options.host or None, options.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def _accept_errors_free_descriptors(table: ConnectionTable) -> LoopErrorDescriber:
    """Describe event-loop errors; each ``accept()`` out of descriptors also closes the oldest idle
    connection, so the connections waiting in the backlog get their turn."""

    def describe(context: dict[str, Any]) -> tuple[str, str]:
        if not str(context.get("message", "")).startswith("socket.accept()"):
            return describe_loop_error(context)
        table.shed_oldest_idle()
        exc = context.get("exception")
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"accept|{reason}", (f"cannot accept connections: {reason}; closing idle ones "
                                    "(raise the open-file limit or lower ASK_FABLE_HTTP_MAX_CONNECTIONS)")

    return describe


class GuardedServer(uvicorn.Server):
    """uvicorn's server without its own signal handling, cancelling the requests in flight on stop."""

    def __init__(self, config: uvicorn.Config, guard: HttpGuard) -> None:
        super().__init__(config)
        self.guard = guard

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        """Nothing: signals belong to the command (``terminal.stop_on_signals``), which calls stop."""
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Cancel the requests in flight (each answers 503), then uvicorn's own shutdown."""
        self.guard.stop()
        await super().shutdown(sockets=sockets)


class HttpRunner:
    """One uvicorn server for ``guard``, on ``sock`` (or the options' host and port)."""

    def __init__(self, guard: HttpGuard, options: HttpOptions, sock: socket.socket | None = None) -> None:
        self.guard = guard
        self.sock = sock
        self.log = RateLimitedLog(say)
        self.table = ConnectionTable(max_connections=options.max_connections,
                                     header_timeout=options.header_timeout, note=self.log.report)
        config = uvicorn.Config(
            guard, host=options.host, port=options.port, access_log=False, log_level="warning",
            lifespan="on", timeout_graceful_shutdown=GRACEFUL_SECONDS, server_header=False,
            proxy_headers=True, forwarded_allow_ips=list(options.trusted_proxies),
            limit_concurrency=None, backlog=BACKLOG, http=limited_protocol(self.table), ws="none",
            timeout_keep_alive=options.keepalive_timeout, h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        )
        self.server = GuardedServer(config, guard)

    @property
    def started(self) -> bool:
        """Whether the server listens."""
        return bool(self.server.started)

    def stop(self) -> None:
        """Ask the server to stop (safe from a signal handler or another thread)."""
        self.server.should_exit = True

    def run(self) -> None:
        """Serve until :meth:`stop`; uvicorn's warnings pass through the rate-limited log (unless
        ``ASK_FABLE_DEBUG`` asks for them whole)."""
        quiet = RateLimitFilter(self.log)
        uvicorn_log = logging.getLogger("uvicorn.error")
        if not debug_requested():  # ASK_FABLE_DEBUG keeps uvicorn's own lines, tracebacks included
            uvicorn_log.addFilter(quiet)
        try:
            asyncio.run(self._serve())
        finally:
            uvicorn_log.removeFilter(quiet)
            self.log.flush()

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        self.log.set_scheduler(loop.call_later)
        describe = _accept_errors_free_descriptors(self.table)
        loop.set_exception_handler(loop_exception_handler(self.log, describe))
        await self.server.serve(sockets=[self.sock] if self.sock is not None else None)


@contextlib.contextmanager
def serve_in_thread(guard: HttpGuard, options: HttpOptions | None = None) -> Iterator[str]:
    """Serve ``guard`` on an ephemeral loopback port in a background thread; yields the base URL."""
    options = options or HttpOptions(port=0)
    sock = bind_socket(options)
    port = sock.getsockname()[1]
    runner = HttpRunner(guard, options, sock)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not runner.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the HTTP server did not start")
        time.sleep(0.01)
    try:
        yield f"http://{options.host}:{port}"
    finally:
        runner.stop()
        thread.join(timeout=10)
        sock.close()
