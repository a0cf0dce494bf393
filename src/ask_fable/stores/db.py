"""The database every store runs on: the :class:`Database` protocol and its SQLite implementation.

Each store writes its SQL once, in the subset SQLite and PostgreSQL share (``?`` placeholders,
``INSERT … ON CONFLICT … DO UPDATE``, ``RETURNING``, no ``rowid`` or ``PRAGMA``), and runs it on
whichever :class:`Database` :func:`database_for` opens: :class:`SqliteDatabase` (a file under the
state directory, the embedded default) or, when ``database_url`` is set,
``stores.postgres.PostgresDatabase`` (one schema per store in a shared PostgreSQL database).

Connections are per thread and per process: a :class:`Connections` pool keeps one connection per
thread and database file (re-opened if the file is replaced, dropped after a fork), so a
``Database`` object is safe to share across threads and server processes. The App hands one pool
to all its stores and closes it when it ends; a ``Database`` given none keeps its own, closed by
:meth:`Database.close`. Reusing connections matters: closing the last connection to a WAL
database checkpoints and deletes the WAL, which made every short-lived connection cost
milliseconds of disk syncs. Do not nest ``read()``/``write()`` of the same file on one thread
(they share the thread's connection).

A store whose write transaction could conflict with another runs it as
:meth:`Database.run_write` (a function of the connection, run again whole when PostgreSQL aborts it
for a deadlock or a serialization failure); :meth:`Database.write` is for the rest.

Writes run inside ``BEGIN IMMEDIATE``: a deferred transaction that reads then writes gets
"database is locked" at once under contention, whatever the busy timeout. Taking the write
lock is retried with jittered backoff up to a bound, so ordinary multi-process contention never
reaches a caller as an error.

Migrations are a list of SQL scripts; script ``i`` moves ``PRAGMA user_version`` from ``i`` to
``i + 1``. Pending ones are applied on first use, together, in one transaction; a file whose
version is beyond the scripts this release knows is refused (:class:`~ask_fable.errors.SchemaMismatch`).

A read-only pool (``Connections(read_only=True)``) opens existing files with ``mode=ro`` and never
creates, migrates or writes one: a file that does not exist yet reads as an empty database of the
current schema (in memory), and every write fails with SQLite's read-only error. It serves readers
that must leave the state as they found it.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from ask_fable.errors import SchemaMismatch, Unavailable
from ask_fable.files import FILE_MODE, ensure_private_dir

if TYPE_CHECKING:
    from ask_fable.config import Settings
    from ask_fable.stores.postgres import PostgresPool

T = TypeVar("T")

Dialect = Literal["sqlite", "postgres"]


class Cursor(Protocol):
    """What a store reads back from a statement (``sqlite3.Cursor`` or a psycopg cursor)."""

    @property
    def rowcount(self) -> int:
        """Rows the statement changed."""
        ...

    def fetchone(self) -> Any:
        """The next row (indexable by position and by column name), or ``None``."""
        ...

    def fetchall(self) -> list[Any]:
        """Every remaining row."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """The remaining rows, one by one."""
        ...


class Connection(Protocol):
    """A connection inside one transaction, as a store's SQL sees it (``?`` placeholders)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor:
        """Run one statement."""
        ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        """Run one statement once per parameter row."""
        ...


class Database(Protocol):
    """One store's tables, on SQLite or PostgreSQL: transactions and the dialect they speak."""

    dialect: Dialect

    def read(self) -> AbstractContextManager[Connection]:
        """A connection inside a read transaction (a consistent snapshot)."""
        ...

    def write(self) -> AbstractContextManager[Connection]:
        """A connection inside a write transaction, committed when the body ends, rolled back if it raises."""
        ...

    def run_write(self, body: Callable[[Connection], T]) -> T:
        """``body(conn)`` inside a write transaction, its result once committed; the whole transaction
        runs again when the database aborts it for a conflict with another one (a deadlock or a
        serialization failure on PostgreSQL; SQLite, whose writers take turns, runs it once).
        ``body`` must do nothing but its SQL: it may run more than once."""
        ...

    def close(self) -> None:
        """Close what this database opened for itself."""
        ...


def database_for(settings: Settings, store: str, path: str | os.PathLike[str] | None,
                 migrations: Sequence[str], *, connections: Connections | None = None) -> Database:
    """The database ``store`` runs on: PostgreSQL when ``settings.database_url`` is set, else the
    SQLite file at ``path`` (a store without one, such as the answer archive, needs PostgreSQL)."""
    url = settings.database_url
    if url:
        from ask_fable.stores.postgres import PostgresDatabase

        pools = connections if connections is not None else Connections()
        pool = pools.postgres(url, settings.database_connect_timeout, settings.database_pool_size)
        return PostgresDatabase(pool, store, migrations, owned=connections is None, read_only=pools.read_only)
    if path is None:
        raise ValueError(f"the {store} store keeps no SQLite file; it needs database_url")
    return SqliteDatabase(path, migrations, connections=connections)

#: Connections one thread keeps open (least recently used beyond this are closed).
MAX_THREAD_CONNECTIONS = 16

BUSY_TIMEOUT_MS = 5_000
#: Upper bound on the whole wait for the write lock, busy timeout rounds included.
LOCK_WAIT_S = 60.0


def is_busy_error(exc: BaseException) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED, the errors contention produces."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return True
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def split_statements(script: str) -> list[str]:
    """Split a SQL script into complete statements (semicolons inside strings and triggers are kept)."""
    statements: list[str] = []
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\r\n;"):
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip(" \t\r\n;"):
        statements.append(buffer.strip())
    return statements


def open_database(location: str | os.PathLike[str] | Database, migrations: Sequence[str], *,
                  connections: Connections | None = None) -> Database:
    """``location`` itself when it is a :class:`Database`, else the SQLite file it names."""
    if isinstance(location, str | os.PathLike):
        return SqliteDatabase(location, migrations, connections=connections)
    return location


def is_unreachable(exc: BaseException) -> bool:
    """Whether a store failed because its database could not be used (so a fallback may help)."""
    from ask_fable.errors import Unavailable

    return isinstance(exc, sqlite3.Error | OSError | Unavailable)


class Connections:
    """Per-thread SQLite connections, by file, and which files have their migrations applied; and
    the PostgreSQL connection pool, by URL.

    Each thread keeps up to :data:`MAX_THREAD_CONNECTIONS` SQLite connections (least recently used
    beyond that are closed). :meth:`close` closes every connection any thread opened and every
    PostgreSQL pool; the object stays usable and reopens on next use.
    """

    def __init__(self, *, read_only: bool = False) -> None:
        #: Open existing files read-only; never create, migrate or write one.
        self.read_only = read_only
        self._local = threading.local()
        self._lock = threading.Lock()
        # Every connection opened, from any thread, so close() can reach them all.
        self._opened: set[sqlite3.Connection] = set()
        self._ready: set[tuple[str, int, int]] = set()
        # Held while a file's migrations run (which may drop a connection, taking _lock).
        self._ready_lock = threading.Lock()
        self._generation = 0
        self._pg_pools: dict[str, PostgresPool] = {}

    def postgres(self, url: str, connect_timeout: float, size: int) -> PostgresPool:
        """The PostgreSQL pool for ``url`` (opened on first use, shared by every store)."""
        with self._lock:
            pool = self._pg_pools.get(url)
            if pool is None:
                from ask_fable.stores.postgres import PostgresPool

                pool = self._pg_pools[url] = PostgresPool(url, connect_timeout=connect_timeout, size=size)
            return pool

    def thread_map(self) -> OrderedDict[str, tuple[sqlite3.Connection, int]]:
        """This thread's connections by file key, with the inode each was opened on."""
        local = self._local
        current = (os.getpid(), self._generation)
        if getattr(local, "owner", None) != current:
            # After a fork, inherited connections must be abandoned, never used or closed; after
            # close() they are gone.
            local.owner = current
            local.conns = OrderedDict()
        conns: OrderedDict[str, tuple[sqlite3.Connection, int]] = local.conns
        return conns

    def track(self, conn: sqlite3.Connection) -> None:
        """Remember ``conn`` so :meth:`close` closes it."""
        with self._lock:
            self._opened.add(conn)

    def drop(self, conn: sqlite3.Connection) -> None:
        """Close ``conn`` and stop tracking it."""
        with self._lock:
            self._opened.discard(conn)
        with suppress(sqlite3.Error):
            conn.close()

    def is_ready(self, marker: tuple[str, int, int]) -> bool:
        """Whether the file (key, inode, migration count) was prepared through this pool."""
        return marker in self._ready

    @contextmanager
    def preparing(self) -> Iterator[set[tuple[str, int, int]]]:
        """The set of prepared files, held under the pool's migration lock."""
        with self._ready_lock:
            yield self._ready

    def forget_ready(self, key: str) -> None:
        """Forget that ``key``'s file was prepared (it was replaced)."""
        with self._ready_lock:
            for marker in [m for m in self._ready if m[0] == key]:
                self._ready.discard(marker)

    @property
    def open_count(self) -> int:
        """Connections open now, across threads."""
        with self._lock:
            return len(self._opened)

    def _take_all(self) -> tuple[set[sqlite3.Connection], list[PostgresPool]]:
        with self._lock:
            opened, self._opened = self._opened, set()
            pools, self._pg_pools = list(self._pg_pools.values()), {}
            self._generation += 1
        with self._ready_lock:
            self._ready.clear()
        for conn in opened:
            with suppress(sqlite3.Error):
                conn.close()
        return opened, pools

    def close(self) -> None:
        """Close every connection opened through this pool, in any thread."""
        for pool in self._take_all()[1]:
            pool.close()

    async def aclose(self) -> None:
        """Close every connection opened through this pool, waiting for the PostgreSQL connections of
        the running event loop to close."""
        for pool in self._take_all()[1]:
            await pool.aclose()


class SqliteDatabase:
    """One SQLite file: private permissions, WAL, migrations applied on open, retried writes."""

    dialect: Dialect = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str],
        migrations: Sequence[str],
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        lock_wait_s: float = LOCK_WAIT_S,
        synchronous: str = "NORMAL",
        connections: Connections | None = None,
    ) -> None:
        self.path = Path(os.path.abspath(Path(path).expanduser()))
        # The App's pool when given; otherwise this database owns its connections.
        self._owns_pool = connections is None
        self._pool = connections if connections is not None else Connections()
        self.migrations = list(migrations)
        self._busy_timeout_ms = busy_timeout_ms
        self._lock_wait_s = lock_wait_s
        # WAL + NORMAL survives a killed process with every committed transaction intact; only a
        # power loss can roll back the last commits, and never corrupts the file.
        self._synchronous = synchronous
        self._key = str(self.path)

    # --- connections -------------------------------------------------------------------------
    def _raw_connect(self) -> sqlite3.Connection:
        if self._pool.read_only:
            return self._configure(self._read_only_connect())
        if not self.path.exists():
            ensure_private_dir(self.path.parent)
            # Create the file ourselves so it is 0600 from the first byte; SQLite gives its
            # -wal and -shm companions the database file's permissions.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
            os.close(fd)
            self._forget_ready()
        conn = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        return self._configure(conn)

    def _read_only_connect(self) -> sqlite3.Connection:
        if self.path.exists():
            conn = sqlite3.connect(
                f"{self.path.as_uri()}?mode=ro",
                uri=True,
                timeout=self._busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        else:
            # Nothing stored yet: read an empty database of the current schema, created nowhere.
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            for script in self.migrations:
                for statement in split_statements(script):
                    conn.execute(statement)
        conn.execute("PRAGMA query_only = ON")
        return conn

    def _configure(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection to the file, opened (and the schema migrated) on first use."""
        pool = self._pool
        conns = pool.thread_map()
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            inode = -1
        except OSError as exc:
            raise self._unusable(exc) from exc
        cached = conns.get(self._key)
        if cached is not None and cached[1] == inode:
            conn = cached[0]
            conns.move_to_end(self._key)
        else:
            if cached is not None:
                conns.pop(self._key, None)
                pool.drop(cached[0])
                # Closing may free the old inode for a new file at this path: forget its schema.
                self._forget_ready()
            try:
                conn = self._retry(self._raw_connect)
            except OSError as exc:
                raise self._unusable(exc) from exc
            pool.track(conn)
            try:
                inode = os.stat(self.path).st_ino
            except FileNotFoundError:  # a read-only pool reading a file not created yet
                inode = -1
            conns[self._key] = (conn, inode)
            if len(conns) > MAX_THREAD_CONNECTIONS:
                idle = [k for k, (c, _i) in conns.items() if not c.in_transaction and k != self._key]
                for key in idle[: len(conns) - MAX_THREAD_CONNECTIONS]:
                    pool.drop(conns.pop(key)[0])
        marker = (self._key, inode, len(self.migrations))
        if not pool.is_ready(marker):
            with pool.preparing() as ready:
                if marker not in ready:
                    try:
                        self._retry(lambda: self._prepare(conn))
                    except BaseException:
                        self._discard(conn)
                        raise
                    ready.add(marker)
        return conn

    def _forget_ready(self) -> None:
        self._pool.forget_ready(self._key)

    def _discard(self, conn: sqlite3.Connection) -> None:
        """Forget a connection left in an unknown state."""
        conns = self._pool.thread_map()
        cached = conns.get(self._key)
        if cached is not None and cached[0] is conn:
            conns.pop(self._key, None)
        self._pool.drop(conn)

    def close(self) -> None:
        """Close this database's connections: every thread's when it owns them, else this thread's."""
        if self._owns_pool:
            self._pool.close()
            return
        conns = self._pool.thread_map()
        if self._key in conns:
            self._pool.drop(conns.pop(self._key)[0])

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL and apply pending migrations in one transaction (a read-only pool: neither)."""
        if self._pool.read_only:
            return
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > len(self.migrations):
                raise SchemaMismatch.newer(str(self.path), version, len(self.migrations))
            for number in range(version, len(self.migrations)):
                for statement in split_statements(self.migrations[number]):
                    conn.execute(statement)
            if version < len(self.migrations):
                conn.execute(f"PRAGMA user_version = {len(self.migrations)}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _unusable(self, exc: OSError) -> Unavailable:
        """The error for a file that cannot be opened where it should be (its directory is a file,
        cannot be created or written)."""
        return Unavailable(f"cannot open {self.path} ({exc.strerror or type(exc).__name__})",
                           hint=f"ask-fable keeps its data in {self.path.parent}: make it a directory this "
                           "user can write, or set XDG_STATE_HOME to one")

    def _retry(self, action: Callable[[], T]) -> T:
        """Run ``action`` until it stops failing with busy/locked, within the wait bound."""
        deadline = time.monotonic() + self._lock_wait_s
        delay = 0.005
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not is_busy_error(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.25)

    # --- public API ----------------------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        """The ``user_version`` of the file (migrations applied first)."""
        with self.read() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A connection inside a read transaction: a consistent snapshot, never blocking writers."""
        conn = self._connection()
        self._retry(lambda: conn.execute("BEGIN"))
        try:
            yield conn
        finally:
            self._end(conn, "ROLLBACK")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back if the body raises).

        The write lock is taken with retries, so contention from other processes waits instead of
        failing. Keep the body short: it holds the database's single write lock.
        """
        conn = self._connection()
        self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            yield conn
        except BaseException:
            self._end(conn, "ROLLBACK")
            raise
        try:
            self._retry(lambda: conn.execute("COMMIT"))
        except BaseException:
            self._end(conn, "ROLLBACK")
            raise

    def run_write(self, body: Callable[[Connection], T]) -> T:
        """``body`` inside :meth:`write`: SQLite's writers hold the file's one write lock in turn, so
        no transaction is ever aborted for a conflict and there is nothing to run again."""
        with self.write() as conn:
            return body(conn)

    def _end(self, conn: sqlite3.Connection, statement: str) -> None:
        if not conn.in_transaction:
            return
        try:
            conn.execute(statement)
        except sqlite3.Error:
            self._discard(conn)

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``: ``"ok"`` for a sound file."""
        with self.read() as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)
