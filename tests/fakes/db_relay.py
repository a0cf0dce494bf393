"""A loopback TCP front for the test PostgreSQL that can stop answering, as a database behind a
network partition does: once frozen it still accepts connections, but holds every byte both ways."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import anyio
from anyio.abc import ByteStream, SocketAttribute, TaskStatus


class DatabaseRelay:
    """Relays TCP connections on loopback to the PostgreSQL Unix socket a ``host=`` URL names."""

    def __init__(self, url: str) -> None:
        head, _, query = url.partition("?")
        directory = Path(parse_qs(query)["host"][0])
        self.socket_path = next(p for p in directory.glob(".s.PGSQL.*") if not p.name.endswith(".lock"))
        self.database = head.rsplit("/", 1)[1]
        self.port = 0
        self.frozen = False
        #: How many connections and messages reached the relay after :meth:`freeze` (and were held).
        self.held = 0

    @property
    def url(self) -> str:
        """The database's URL through the relay."""
        return f"postgresql://postgres:@127.0.0.1:{self.port}/{self.database}"

    def freeze(self) -> None:
        """Stop answering: connections are still accepted, but nothing passes either way."""
        self.frozen = True

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled (started once it listens)."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
        self.port = listener.extra(SocketAttribute.local_port)
        task_status.started()
        await listener.serve(self._relay)

    async def _hold(self) -> None:
        self.held += 1
        await anyio.sleep_forever()

    async def _relay(self, client: ByteStream) -> None:
        async with client:
            if self.frozen:
                await self._hold()
            async with await anyio.connect_unix(self.socket_path) as upstream, \
                    anyio.create_task_group() as group:
                group.start_soon(self._pipe, client, upstream)
                group.start_soon(self._pipe, upstream, client)

    async def _pipe(self, source: ByteStream, sink: ByteStream) -> None:
        try:
            async for chunk in source:
                if self.frozen:
                    await self._hold()
                await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
            pass
        finally:
            await sink.aclose()
