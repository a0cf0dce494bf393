"""The pooled client's network streams: the pool's idle-connection check at the cost of one ``poll``.

Each time a request enters or leaves the connection pool, ``httpcore2`` checks every idle
connection for a server that hung up (its socket readable while no request is on it). It asks
the stream for its raw socket each time, and anyio answers that by building the stream's whole
table of attributes (local and remote address, family, socket) for each connection: with dozens
of idle connections and a hundred calls in flight, most of the pool's CPU per call. The streams
made here answer ``is_readable`` from the socket they remember since the connection was opened,
with the same ``poll``; everything else goes to the stream underneath.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # pragma: no cover
    import socket

    import httpcore2
    import httpx2


@functools.cache
def _stream_class() -> Callable[[httpcore2.AsyncNetworkStream], httpcore2.AsyncNetworkStream]:
    import httpcore2
    from httpcore2._utils import is_socket_readable

    class QuickCheckStream(httpcore2.AsyncNetworkStream):
        """A network stream whose readability check polls the socket it was opened on."""

        def __init__(self, inner: httpcore2.AsyncNetworkStream) -> None:
            self._inner = inner
            # On asyncio a transport's socket is a ``TransportSocket``, which polls as a socket does.
            found = inner.get_extra_info("socket")
            self._socket = cast("socket.socket", found) if hasattr(found, "fileno") else None

        async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return await self._inner.read(max_bytes, timeout)

        async def write(self, buffer: bytes, timeout: float | None = None) -> None:
            await self._inner.write(buffer, timeout)

        async def aclose(self) -> None:
            await self._inner.aclose()

        async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                            timeout: float | None = None) -> httpcore2.AsyncNetworkStream:
            return QuickCheckStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

        def get_extra_info(self, info: str) -> Any:
            if info == "is_readable" and self._socket is not None:
                return is_socket_readable(self._socket)
            return self._inner.get_extra_info(info)

    return QuickCheckStream


@functools.cache
def _backend_class() -> type[httpcore2.AsyncNetworkBackend]:
    import httpcore2
    from httpcore2._backends.auto import AutoBackend

    stream = _stream_class()

    class QuickCheckBackend(httpcore2.AsyncNetworkBackend):
        """httpcore2's own backend (anyio or trio), its streams wrapped in ``QuickCheckStream``."""

        def __init__(self) -> None:
            self._inner = AutoBackend()

        async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                              local_address: str | None = None,
                              socket_options: Iterable[Any] | None = None) -> httpcore2.AsyncNetworkStream:
            opened = await self._inner.connect_tcp(host, port, timeout=timeout, local_address=local_address,
                                                   socket_options=socket_options)
            return stream(opened)

        async def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
        ) -> httpcore2.AsyncNetworkStream:
            opened = await self._inner.connect_unix_socket(path, timeout=timeout,
                                                           socket_options=socket_options)
            return stream(opened)

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    return QuickCheckBackend


def quick_idle_checks(client: httpx2.AsyncClient) -> httpx2.AsyncClient:
    """``client`` with its default transport's pool opening :class:`QuickCheckStream` streams (a
    transport or pool of another kind, e.g. a test's, is left as it is)."""
    import httpcore2
    import httpx2

    transport = getattr(client, "_transport", None)
    pool = getattr(transport, "_pool", None) if isinstance(transport, httpx2.AsyncHTTPTransport) else None
    if isinstance(pool, httpcore2.AsyncConnectionPool) and hasattr(pool, "_network_backend"):
        # An httpcore2 laid out otherwise keeps its own checks.
        with contextlib.suppress(ImportError, AttributeError):
            pool._network_backend = _backend_class()()
    return client
