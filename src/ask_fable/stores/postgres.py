"""PostgreSQL behind the stores' :class:`~ask_fable.stores.db.Database` protocol.

Every store keeps its tables in a schema of its own (``ask_fable_<store>``), so the stores' SQL,
written once for both dialects, runs unchanged: each transaction starts with
``SET LOCAL search_path``. ``?`` placeholders become ``%s`` here, and the migrations' SQLite column
types their PostgreSQL equivalents (:func:`postgres_ddl`). Rows read back answer by position and
by column name, as ``sqlite3.Row`` does.

The stores' methods are blocking code, written once for SQLite and PostgreSQL; here each of their
statements is a query of a psycopg ``AsyncConnection``, awaited through
``stores/loop_bridge.await_io``. The server calls a store from its event loop through
``loop_bridge.run_blocking`` (``App.run_store``): the store's code runs in a greenlet on that loop
and its queries are awaited there, with no thread. A blocking caller anywhere else (a command, a
worker thread) has its queries run on the process's I/O loop. Each event loop that uses the
database gets a ``psycopg_pool.AsyncConnectionPool`` of its own (``database_pool_size``), shared
by every store; a pool left behind by a loop that ended has its connections closed.

Pooled connections are in autocommit mode and run their transactions explicitly: ``BEGIN`` and
``SET LOCAL search_path`` travel with a transaction's first statement, in one round trip (pipeline
mode), and ``COMMIT`` is one more. No check costs a round trip before each use: a pooled connection
found dead by that first round trip means the server restarted and took every pooled connection
with it, so the pool is dropped and the transaction, none of which ran yet, begins again on a fresh
one. A database found gone fails the call as :class:`~ask_fable.errors.Unavailable`; until a direct
connection succeeds again, each store call first tries one (refused at once while the server is
down), never waiting out the pool's reconnection backoff, and the first call after the database is
back gets a fresh pool. A pool whose attempts to connect are refused fails a call at once, one that
cannot connect fails it within ``database_connect_timeout``; a pool merely busy (every connection
in use, the database answering) makes it wait, up to :data:`POOL_BUSY_WAIT_S`. A call cancelled
mid-transaction still has its transaction rolled back and its connection returned.

Writes whose transactions can conflict run through :meth:`PostgresDatabase.run_write`, which runs
the whole body again when PostgreSQL aborts it with a deadlock (``40P01``) or a serialization
failure (``40001``), with a short jittered backoff, a bounded number of times.

A :class:`Listener` holds a connection of its own, outside the pool, to ``LISTEN`` on a channel
(the saved settings' change notices), reconnecting after the database went away.

Migrations are never applied by a serving process: ``ask-fable db upgrade`` (``stores/schema.py``)
applies them, and a store whose recorded version (``ask_fable.schema_migrations``) differs from
its migrations refuses to run (:class:`~ask_fable.errors.SchemaMismatch`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import anyio

from ask_fable.errors import NotConfigured, SchemaMismatch, Unavailable
from ask_fable.redact import redact

try:  # greenlet comes with the postgres extra, as psycopg does
    from ask_fable.stores.loop_bridge import await_io
except ImportError:  # pragma: no cover - an install without the extra (see _import_psycopg)
    _BRIDGE = False
else:
    _BRIDGE = True

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    from ask_fable.stores.db import Connection, Dialect

T = TypeVar("T")

#: Where an outage is reported: a line as the database stops answering, one as it answers again.
outage_log = logging.getLogger("ask_fable.database")
#: Databases (by URL) reported down on :data:`outage_log` and not yet back: every pool of the process
#: (the start checks', the App's) reports one outage once.
_outages: set[str] = set()
_outages_lock = threading.Lock()

INSTALL_HINT = "pip install 'ask-fable[postgres]'"
#: Where the version of every store's schema is kept.
MIGRATIONS_TABLE = "ask_fable.schema_migrations"
#: ``pg_advisory_xact_lock`` key held while migrations run, so two upgrades never interleave.
MIGRATION_LOCK = 0x61736B66  # "askf"
#: How long a store call waits for a connection while every one of a healthy pool's is in use
#: (a database that refuses connections fails the call within ``database_connect_timeout``).
POOL_BUSY_WAIT_S = 30.0
#: While a pool has no connection yet, how often a call waiting for its first one looks whether the
#: pool's attempts failed (a refused connection then fails the call at once).
FIRST_CONNECTION_POLL_S = 0.05
#: SQLSTATEs of a transaction PostgreSQL aborted for a conflict with another one: serialization
#: failure and deadlock. Running the transaction again is the documented remedy.
CONFLICT_STATES = frozenset({"40001", "40P01"})
#: Attempts :meth:`PostgresDatabase.run_write` makes at a body that keeps conflicting.
WRITE_ATTEMPTS = 6
#: First and longest pause between attempts (jittered, doubling).
RETRY_DELAY_S = (0.01, 0.2)


def schema_name(store: str) -> str:
    """The PostgreSQL schema holding ``store``'s tables."""
    if not re.fullmatch(r"[a-z_]+", store):
        raise ValueError(f"invalid store name: {store!r}")
    return f"ask_fable_{store}"


@lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """``sql`` with ``?`` placeholders as ``%s`` and literal ``%`` doubled (psycopg's format)."""
    out: list[str] = []
    quoted = False
    for char in sql:
        if char == "'":
            quoted = not quoted
            out.append(char)
        elif char == "%":
            out.append("%%")
        elif char == "?" and not quoted:
            out.append("%s")
        else:
            out.append(char)
    return "".join(out)


_DDL = [
    (re.compile(r"\bINTEGER PRIMARY KEY(?: AUTOINCREMENT)?", re.I),
     "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    (re.compile(r"\bREAL\b", re.I), "DOUBLE PRECISION"),
    (re.compile(r"\bINTEGER\b", re.I), "BIGINT"),
    (re.compile(r"\bBLOB\b", re.I), "BYTEA"),
    (re.compile(r"\)\s*WITHOUT ROWID", re.I), ")"),
]


def postgres_ddl(script: str) -> str:
    """A migration written for SQLite, with its column types as PostgreSQL spells them (``REAL`` is
    ``DOUBLE PRECISION``, an ``INTEGER PRIMARY KEY`` an identity column, ``BLOB`` ``BYTEA``)."""
    for pattern, replacement in _DDL:
        script = pattern.sub(replacement, script)
    return script


class _PoolChatter(logging.Filter):
    """Drops ``psycopg_pool``'s own log lines: while the database is down it writes one per connection
    attempt (``error connecting in 'ask-fable': …``, ``discarding closed connection``), a stream on the
    server's stderr. :class:`PostgresPool` reports the outage instead, once as it starts and once as
    it ends."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Never let a record through."""
        return False


_POOL_CHATTER = _PoolChatter()


class _LostPipelineChatter(logging.Filter):
    """Drops psycopg's warning that a pipeline ended on a lost connection: the transaction that met
    it is begun again on a fresh connection, or fails as unavailable, and the outage is reported."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Let through anything but that warning."""
        return not str(record.msg).startswith("error ignored terminating")


_PIPELINE_CHATTER = _LostPipelineChatter()


def _import_psycopg() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool

        if not _BRIDGE:
            import greenlet  # noqa: F401  # raises the ImportError that names what is missing
    except ImportError as exc:
        raise NotConfigured(
            f"database_url names PostgreSQL but its driver is not installed; run {INSTALL_HINT}",
            hint=INSTALL_HINT,
        ) from exc
    pool_log = logging.getLogger("psycopg.pool")
    if _POOL_CHATTER not in pool_log.filters:
        pool_log.addFilter(_POOL_CHATTER)
    driver_log = logging.getLogger("psycopg")
    if _PIPELINE_CHATTER not in driver_log.filters:
        driver_log.addFilter(_PIPELINE_CHATTER)
    return psycopg, psycopg_pool


def is_conflict(exc: BaseException) -> bool:
    """Whether PostgreSQL aborted a transaction for a conflict with another (deadlock, serialization)."""
    return getattr(exc, "sqlstate", None) in CONFLICT_STATES


def _reason(exc: BaseException, url: str) -> str:
    """``exc`` in one line, for a caller (the URL's password removed)."""
    reason = redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, [url])
    return f"{type(exc).__name__}: {reason[:300]}"


def _begin_statements(read_only: bool, schema: str | None) -> list[bytes]:
    """The statements that begin a transaction and point it at ``schema``: pooled connections are
    in autocommit mode and run their transactions explicitly."""
    begin = (b"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if read_only
             else b"BEGIN ISOLATION LEVEL READ COMMITTED")
    return [begin, f"SET LOCAL search_path TO {schema}".encode()] if schema else [begin]


def _report_down(url: str, exc: BaseException) -> None:
    with _outages_lock:
        first = url not in _outages
        _outages.add(url)
    if first:
        outage_log.warning("ask-fable: the PostgreSQL database is not answering (%s); calls fail as "
                           "unavailable until it does", _reason(exc, url))


def _report_up(url: str) -> None:
    with _outages_lock:
        was_down = url in _outages
        _outages.discard(url)
    if was_down:
        outage_log.warning("ask-fable: the PostgreSQL database answers again; calls go through")


def unavailable(exc: BaseException, url: str) -> Unavailable:
    """The caller-facing error for a database that cannot be reached."""
    return Unavailable(f"the PostgreSQL database is unavailable ({_reason(exc, url)})")


class _Row(tuple[Any, ...]):
    """A row readable by position and by column name (``row[0]``, ``row["key"]``, ``dict(row)``)."""

    _names: ClassVar[tuple[str, ...]] = ()
    _index: ClassVar[dict[str, int]] = {}

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._names)


@lru_cache(maxsize=256)
def _row_class(names: tuple[str, ...]) -> type[_Row]:
    return type("Row", (_Row,), {"_names": names, "_index": {n: i for i, n in enumerate(names)},
                                 "__slots__": ()})


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], _Row]:
    names = tuple(column.name for column in (cursor.description or ()))
    make = _row_class(names)

    def row(values: Sequence[Any]) -> _Row:
        return make(values)

    return row


class _Result:
    """A statement's outcome, read back in full: its rows (by position and by name) and row count."""

    __slots__ = ("_next", "_rows", "rowcount")

    def __init__(self, rows: list[_Row], rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount

    def fetchone(self) -> _Row | None:
        """The next row, or ``None``."""
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[_Row]:
        """Every remaining row."""
        rows, self._next = self._rows[self._next:], len(self._rows)
        return rows

    def __iter__(self) -> Iterator[_Row]:
        return iter(self.fetchall())


async def _execute(conn: psycopg.AsyncConnection[Any], sql: str, parameters: tuple[Any, ...]) -> _Result:
    cursor = conn.cursor(row_factory=_row_factory)
    await cursor.execute(sql, parameters)
    rows = await cursor.fetchall() if cursor.description is not None else []
    return _Result(rows, cursor.rowcount)


async def _execute_many(conn: psycopg.AsyncConnection[Any], sql: str,
                        rows: list[tuple[Any, ...]]) -> _Result:
    cursor = conn.cursor(row_factory=_row_factory)
    if rows:
        await cursor.executemany(sql, rows)
    return _Result([], cursor.rowcount)


class PgConnection:
    """A transaction on a psycopg connection, speaking the stores' ``?`` SQL. Its methods block;
    each statement is one query awaited through :func:`~ask_fable.stores.loop_bridge.await_io`."""

    def __init__(self, transaction: _Transaction) -> None:
        self._transaction = transaction

    @property
    def connection(self) -> psycopg.AsyncConnection[Any]:
        """The asyncio connection underneath, its transaction begun."""
        return await_io(self._transaction.begun())

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> _Result:
        """Run one statement; its rows answer by position and by name."""
        return await_io(self._transaction.execute(translate(sql), tuple(parameters)))

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> _Result:
        """Run one statement per parameter row (nothing for none)."""
        return await_io(self._transaction.execute_many(translate(sql), [tuple(p) for p in parameters]))


class _Transaction:
    """One transaction on a pooled connection. Its ``BEGIN`` (with the store's ``search_path``)
    travels with its first statement, in one round trip (pipeline mode); a pooled connection found
    dead by that round trip (the server restarted since it was used) is replaced once, since
    nothing of the transaction ran yet."""

    def __init__(self, owner: PostgresPool, begin: list[bytes]) -> None:
        self.owner = owner
        #: What begins the transaction, until it is sent.
        self.pending: list[bytes] | None = begin
        self.pool: AsyncConnectionPool[Any] | None = None
        self.conn: psycopg.AsyncConnection[Any] | None = None
        self._replaced = False

    async def start(self, prepare: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]] | None) -> None:
        """Take a connection; with ``prepare``, begin at once and run it in the transaction."""
        psycopg, _pool = _import_psycopg()
        self.pool, self.conn = await self.owner._checkout(psycopg)
        if prepare is not None:
            await prepare(await self.begun())

    async def begun(self) -> psycopg.AsyncConnection[Any]:
        """The connection, its transaction begun (one round trip if it was not)."""
        if self.pending is not None:
            await self._first_round_trip(self._send_begin)
        assert self.conn is not None
        return self.conn

    async def _send_begin(self, conn: psycopg.AsyncConnection[Any]) -> None:
        assert self.pending is not None
        await conn.execute(b"; ".join(self.pending))

    async def execute(self, sql: str, parameters: tuple[Any, ...]) -> _Result:
        """One statement (the transaction's first goes out with its ``BEGIN``)."""
        if self.pending is None:
            assert self.conn is not None
            return await _execute(self.conn, sql, parameters)
        begin = self.pending

        async def first(conn: psycopg.AsyncConnection[Any]) -> _Result:
            async with conn.pipeline():
                for statement in begin:
                    await conn.execute(statement)
                cursor = conn.cursor(row_factory=_row_factory)
                await cursor.execute(sql, parameters)
            rows = await cursor.fetchall() if cursor.description is not None else []
            return _Result(rows, cursor.rowcount)

        return await self._first_round_trip(first)

    async def execute_many(self, sql: str, rows: list[tuple[Any, ...]]) -> _Result:
        """One statement per row."""
        return await _execute_many(await self.begun(), sql, rows)

    async def _first_round_trip(self, send: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
        psycopg, _pool = _import_psycopg()
        assert self.pool is not None and self.conn is not None
        try:
            result = await send(self.conn)
        except psycopg.Error as exc:
            if self._replaced or not self.conn.closed:
                raise
            self._replaced = True
            await self.owner._abort(self.pool, self.conn, exc)  # drops the pool: its connections are dead
            self.pool = self.conn = None
            self.pool, self.conn = await self.owner._checkout(psycopg)
            result = await send(self.conn)
        self.pending = None
        if _outages:
            _report_up(self.owner.url)
        return result

    async def commit(self) -> None:
        """Commit (nothing to send when no statement ran) and return the connection."""
        assert self.pool is not None and self.conn is not None
        if self.pending is None:
            try:
                await self.conn.execute(b"COMMIT")
            except BaseException as exc:
                failure = await self.abort(exc)
                if failure is not None:
                    raise failure from exc
                raise
        await self.pool.putconn(self.conn)

    async def abort(self, exc: BaseException) -> Unavailable | None:
        """Roll back and return the connection; the error to raise in place of ``exc``, if any."""
        if self.pool is None or self.conn is None:  # no connection was to be had
            return None
        if self.pending is not None:  # nothing was sent: nothing to roll back
            with anyio.CancelScope(shield=True):
                await self.pool.putconn(self.conn)
            return None
        return await self.owner._abort(self.pool, self.conn, exc)


@dataclass(eq=False)
class _LoopPool:
    """The connection pool serving one event loop, with every connection it opened (so they can
    still be closed should the loop end before the pool is closed)."""

    pool: AsyncConnectionPool[Any]
    loop: asyncio.AbstractEventLoop
    opened: weakref.WeakSet[psycopg.AsyncConnection[Any]] = field(default_factory=weakref.WeakSet)
    ready: bool = False

    def abandon(self) -> None:
        """Close the connections of a pool whose loop is gone (no coroutine can run on it)."""
        for conn in list(self.opened):
            with suppress(Exception):
                conn.pgconn.finish()


class PostgresPool:
    """The server's connections to one PostgreSQL database: an asyncio pool per event loop that uses
    it (the server's loop, the I/O loop of blocking callers), each opened on first use and reopened
    after :meth:`close` or after the database went away; remembers which stores' schema versions
    were checked."""

    def __init__(self, url: str, *, connect_timeout: float, size: int) -> None:
        self.url = url
        self.connect_timeout = float(connect_timeout)
        self.size = int(size)
        self._lock = threading.Lock()
        self._pools: dict[asyncio.AbstractEventLoop, _LoopPool] = {}
        self._pid = os.getpid()
        #: Set when the database was found gone; cleared by the next direct connection that succeeds.
        self._down = False
        #: Pools being closed in the background, kept referenced until they are.
        self._closing: set[asyncio.Task[None]] = set()
        #: Stores whose schema version was found current through this pool.
        self.checked: set[str] = set()
        _import_psycopg()  # a missing driver is a start error, not a first-call surprise

    async def _open(self) -> AsyncConnectionPool[Any]:
        """This event loop's pool (connections of pools whose loop has ended are closed first)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's connections are not its own
                self._pid, self._pools = os.getpid(), {}
            ended = [other for other in self._pools.values() if other.loop.is_closed()]
            for other in ended:
                del self._pools[other.loop]
            held = self._pools.get(loop) or self._pools.setdefault(loop, self._new_pool(loop))
        for gone in ended:
            gone.abandon()
        if not held.ready:
            await held.pool.open(wait=False)
            held.ready = True
        return held.pool

    def _new_pool(self, loop: asyncio.AbstractEventLoop) -> _LoopPool:
        _psycopg, psycopg_pool = _import_psycopg()
        opened: weakref.WeakSet[psycopg.AsyncConnection[Any]] = weakref.WeakSet()

        async def remember(conn: psycopg.AsyncConnection[Any]) -> None:
            opened.add(conn)

        pool = psycopg_pool.AsyncConnectionPool(
            self.url,
            min_size=0,
            max_size=self.size,
            open=False,
            timeout=self.connect_timeout,
            kwargs={"connect_timeout": max(1, math.ceil(self.connect_timeout)), "autocommit": True},
            configure=remember,
            # Checked here, not by the pool: its check sleeps with backoff between dead connections.
            check=None,
            reconnect_timeout=max(30.0, self.connect_timeout),
            name="ask-fable",
        )
        return _LoopPool(pool, loop, opened)

    @contextmanager
    def transaction(self, *, read_only: bool = False, schema: str | None = None,
                    prepare: Callable[[psycopg.AsyncConnection[Any]], Awaitable[None]] | None = None,
                    ) -> Iterator[PgConnection]:
        """A connection inside a transaction on ``schema`` (its ``search_path``), committed when the
        body ends (rolled back if it raises); ``prepare`` runs first, in the same transaction.

        An unreachable database, or one lost mid-transaction, raises :class:`Unavailable` (within
        the connect timeout); a conflict with another transaction (:func:`is_conflict`) is raised
        as PostgreSQL reported it, for the caller to run the transaction again.
        """
        transaction = _Transaction(self, _begin_statements(read_only, schema))
        try:
            await_io(transaction.start(prepare))
            yield PgConnection(transaction)
        except BaseException as exc:
            failure = await_io(transaction.abort(exc))
            if failure is not None:
                raise failure from exc
            raise
        await_io(transaction.commit())

    async def _abort(self, pool: AsyncConnectionPool[Any], conn: psycopg.AsyncConnection[Any],
                     exc: BaseException) -> Unavailable | None:
        """Roll back and return ``conn``, even when the call was cancelled (a database silent for
        ``connect_timeout`` costs the connection instead); the error to raise in place of ``exc``,
        if any."""
        psycopg, _pool = _import_psycopg()
        with anyio.move_on_after(self.connect_timeout, shield=True) as rolling_back:
            if not conn.closed:
                with suppress(psycopg.Error):
                    await conn.execute(b"ROLLBACK")
        with anyio.CancelScope(shield=True):
            if rolling_back.cancelled_caught:
                await conn.close()  # no round trip: the pool replaces a closed connection
            await pool.putconn(conn)
        if isinstance(exc, psycopg.Error) and conn.closed:
            self._lost(pool, exc)  # the server went away under this transaction
            return unavailable(exc, self.url)
        if isinstance(exc, psycopg.OperationalError) and not is_conflict(exc):
            return unavailable(exc, self.url)
        return None

    async def _checkout(self, driver: Any) -> tuple[AsyncConnectionPool[Any], psycopg.AsyncConnection[Any]]:
        """A pooled connection and its pool, or :class:`Unavailable`."""
        if self._down:
            await self._reconnect(driver)
        pool = await self._open()
        return pool, await self._wait_for(pool, driver)

    async def _wait_for(self, pool: AsyncConnectionPool[Any], driver: Any) -> psycopg.AsyncConnection[Any]:
        """A connection from ``pool``. A pool whose attempts to connect failed meanwhile means the
        database is gone (:class:`Unavailable` at once, the pool dropped), as does one that could not
        connect within ``connect_timeout``; a pool merely busy, every connection in use, is waited
        on up to :data:`POOL_BUSY_WAIT_S`."""
        failures = pool.get_stats().get("connections_errors", 0)
        started = time.monotonic()
        connect_deadline = started + self.connect_timeout
        busy_deadline = started + max(POOL_BUSY_WAIT_S, self.connect_timeout)
        while True:
            # Until the pool holds a connection, look at its attempts often; once it does, wait in
            # the pool's queue (leaving and rejoining it would lose the call its place).
            step = None if pool.get_stats().get("pool_size") else FIRST_CONNECTION_POLL_S
            try:
                conn: psycopg.AsyncConnection[Any] = await pool.getconn(timeout=step)
                return conn
            except driver.OperationalError as exc:  # PoolTimeout included
                stats, now = pool.get_stats(), time.monotonic()
                gone = stats.get("connections_errors", 0) > failures
                if not gone and not stats.get("pool_size"):
                    if now < connect_deadline:
                        continue  # the first connection is still being made
                    gone = True
                if gone:
                    self._lost(pool, exc)
                    raise unavailable(exc, self.url) from exc
                if now >= busy_deadline:
                    raise unavailable(exc, self.url) from exc

    async def _reconnect(self, driver: Any) -> None:
        """One direct connection to a database found gone: :class:`Unavailable` at once while it is
        still refused; once it connects, calls go through a fresh pool again."""
        try:
            conn = await driver.AsyncConnection.connect(
                self.url, connect_timeout=max(1, math.ceil(self.connect_timeout)), autocommit=True)
            await conn.close()
        except driver.Error as exc:
            raise unavailable(exc, self.url) from exc
        with self._lock:
            self._down = False
        _report_up(self.url)

    def _lost(self, pool: AsyncConnectionPool[Any], exc: BaseException) -> None:
        """Drop ``pool``, whose database went away (its connections are dead, and a pool kept through
        an outage would wait out its reconnection backoff after the database is back); the first
        time, say so on the outage log. Runs on ``pool``'s loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._down = True
            held = self._pools.get(loop)
            dropped = held is not None and held.pool is pool
            if dropped:
                del self._pools[loop]
        _report_down(self.url, exc)
        if dropped:
            self._close_later(pool)

    def _close_later(self, pool: AsyncConnectionPool[Any]) -> None:
        """Close ``pool`` in the background of the running loop (closing waits for its workers)."""
        task = asyncio.get_running_loop().create_task(pool.close(timeout=1.0))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def stats(self) -> dict[str, int]:
        """The open pools' counters and sizes (``psycopg_pool``'s ``get_stats``), added up; empty when
        none is open."""
        with self._lock:
            pools = [held.pool for held in self._pools.values()]
        total: dict[str, int] = {}
        for pool in pools:
            for name, value in pool.get_stats().items():
                total[name] = total.get(name, 0) + value
        return total

    def ping(self, timeout: float) -> bool:
        """Whether the database answers a trivial query within ``timeout`` seconds (a direct
        connection, for a readiness probe)."""
        psycopg, _pool = _import_psycopg()
        try:
            seconds = max(1, math.ceil(timeout))
            with psycopg.connect(self.url, connect_timeout=seconds, autocommit=True) as conn:
                conn.execute(f"SET statement_timeout = {max(1, int(timeout * 1000))}")
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def _take_all(self) -> list[_LoopPool]:
        with self._lock:
            held, self._pools = list(self._pools.values()), {}
            self.checked.clear()
        return held

    def close(self) -> None:
        """Close every pool; the next use opens new ones. A pool of a loop running in this thread is
        closed in that loop's background (:meth:`aclose` waits for it)."""
        for held in self._take_all():
            self._close_elsewhere(held)

    async def aclose(self) -> None:
        """Close every pool, waiting for the one of the running loop."""
        loop = asyncio.get_running_loop()
        for held in self._take_all():
            if held.loop is loop:
                with anyio.CancelScope(shield=True):
                    await held.pool.close(timeout=1.0)
            else:
                self._close_elsewhere(held)

    def _close_elsewhere(self, held: _LoopPool) -> None:
        loop = held.loop
        if loop.is_closed() or not loop.is_running():
            held.abandon()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._close_later(held.pool)
            return
        closing = asyncio.run_coroutine_threadsafe(held.pool.close(timeout=1.0), loop)
        with suppress(Exception):
            closing.result(timeout=5.0)


async def store_version(conn: psycopg.AsyncConnection[Any], store: str) -> int:
    """The migration version recorded for ``store`` (0 when none is, or the table does not exist)."""
    row = await (await conn.execute("SELECT to_regclass(%s)", (MIGRATIONS_TABLE,))).fetchone()
    if row is None or row[0] is None:
        return 0
    found = await (await conn.execute(f"SELECT version FROM {MIGRATIONS_TABLE} WHERE store = %s",
                                      (store,))).fetchone()
    return int(found[0]) if found else 0


def _conflicted(exc: BaseException, url: str) -> Unavailable:
    """The caller-facing error for a write that kept conflicting with other transactions."""
    return Unavailable(f"a PostgreSQL write kept conflicting with other writes ({_reason(exc, url)})",
                       hint="the call can be retried")


class PostgresDatabase:
    """One store's schema in a PostgreSQL database: the :class:`~ask_fable.stores.db.Database` of a
    team's replicas."""

    dialect: Dialect = "postgres"

    def __init__(self, pool: PostgresPool, store: str, migrations: Sequence[str], *,
                 owned: bool = False, read_only: bool = False) -> None:
        self.pool = pool
        self.store = store
        self.schema = schema_name(store)
        self.migrations = list(migrations)
        self._owned = owned
        #: Every transaction is ``READ ONLY`` (a reader such as the web view): PostgreSQL refuses writes.
        self.read_only = read_only

    @property
    def location(self) -> str:
        """Where this store's rows live, as a result may name it (no credentials)."""
        return f"postgresql:{self.store}"

    async def _check(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Refuse a schema other than this release's (checked once per pool)."""
        found, wanted = await store_version(conn, self.store), len(self.migrations)
        if found < wanted:
            raise SchemaMismatch.behind(f"PostgreSQL {self.store}", found, wanted)
        if found > wanted:
            raise SchemaMismatch.newer(f"PostgreSQL {self.store}", found, wanted)
        self.pool.checked.add(self.store)

    def _transaction(self, read_only: bool) -> AbstractContextManager[PgConnection]:
        return self.pool.transaction(read_only=read_only or self.read_only, schema=self.schema,
                                     prepare=None if self.store in self.pool.checked else self._check)

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        """A connection inside a read-only, repeatable-read transaction (a consistent snapshot)."""
        with self._transaction(True) as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[PgConnection]:
        """A connection inside a read-committed transaction, committed when the body ends.

        A body that may conflict with another transaction belongs in :meth:`run_write`; here a
        conflict fails the call as :class:`Unavailable`.
        """
        try:
            with self._transaction(False) as conn:
                yield conn
        except Exception as exc:
            if is_conflict(exc):
                raise _conflicted(exc, self.pool.url) from exc
            raise

    def run_write(self, body: Callable[[Connection], T]) -> T:
        """``body`` inside a write transaction, its result once committed; the whole transaction is
        run again when PostgreSQL aborts it for a conflict with another (deadlock, serialization
        failure), up to :data:`WRITE_ATTEMPTS` times with a short jittered backoff.

        ``body`` must do nothing but its SQL (it may run more than once); a conflict that outlasts
        the attempts fails as :class:`Unavailable`.
        """
        delay, longest = RETRY_DELAY_S
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with self._transaction(False) as conn:
                    return body(conn)
            except Exception as exc:
                if not is_conflict(exc):
                    raise
                if attempt == WRITE_ATTEMPTS:
                    raise _conflicted(exc, self.pool.url) from exc
            await_io(asyncio.sleep(delay * (0.5 + random.random())))
            delay = min(delay * 2, longest)
        raise AssertionError("unreachable")  # the loop returns or raises

    def close(self) -> None:
        """Close the pool when this database opened its own; a shared pool is the App's to close."""
        if self._owned:
            self.pool.close()


#: How long a listener waits for a notification before it looks at whether it should stop.
LISTEN_POLL_S = 0.5
#: First and longest pause before a listener connects again after losing the database.
LISTEN_RETRY_S = (0.1, 2.0)


class Listener:
    """``LISTEN channel`` on a connection of its own, in a daemon thread: ``on_change`` runs once the
    listen is in place (the first time and after every reconnection, since notifications sent while
    disconnected are lost) and after each notification, which ``on_notice`` is handed first (its
    payload) the moment it arrives. ``on_change`` failing (the database went away while it read) is
    tried again at the next poll.
    """

    def __init__(self, url: str, channel: str, on_change: Callable[[], None], *,
                 connect_timeout: float, on_notice: Callable[[str], None] | None = None) -> None:
        if not re.fullmatch(r"[a-z_]+", channel):
            raise ValueError(f"invalid channel name: {channel!r}")
        self.url = url
        self.channel = channel
        self.on_change = on_change
        self.on_notice = on_notice
        self.connect_timeout = connect_timeout
        self._stop = threading.Event()
        self._first = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start listening; returns once ``on_change`` ran the first time, or the database did not
        answer within the connect timeout (the thread keeps trying)."""
        self._thread = threading.Thread(target=self._run, name=f"ask-fable-listen-{self.channel}",
                                        daemon=True)
        self._thread.start()
        self._first.wait(self.connect_timeout + 1)

    def _run(self) -> None:
        psycopg, _pool = _import_psycopg()
        delay, longest = LISTEN_RETRY_S
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True,
                                     connect_timeout=max(1, math.ceil(self.connect_timeout))) as conn:
                    conn.execute(f"LISTEN {self.channel}")
                    delay = LISTEN_RETRY_S[0]
                    self._listen(conn)
            except psycopg.Error:
                pass
            self._first.set()
            self._stop.wait(delay * (0.5 + random.random()))
            delay = min(delay * 2, longest)

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        pending = True
        while not self._stop.is_set():
            if pending:
                pending = not self._changed()
                self._first.set()
            for notice in conn.notifies(timeout=LISTEN_POLL_S, stop_after=1):
                if self.on_notice is not None:
                    self.on_notice(notice.payload)
                pending = True

    def _changed(self) -> bool:
        if self._stop.is_set():
            return True
        try:
            self.on_change()
        except Exception:  # the database went away mid-read: tried again at the next poll
            return False
        return True

    def close(self) -> None:
        """Stop listening: the thread calls ``on_change`` no more and ends within
        :data:`LISTEN_POLL_S`, closing its connection (not waited for: a server stops at once)."""
        self._stop.set()
        self._thread = None
