"""The database every store runs on: :class:`Database`, one store's tables on a SQLAlchemy engine.

Stores build queries with SQLAlchemy Core (``stores/tables.py``) and run them inside
:meth:`Database.read` or :meth:`Database.write`, on the store's SQLite file or, when
``database_url`` is set, on its schema (``ask_fable_<store>``) in a shared PostgreSQL database.
Transactions are begun and committed on the driver; a body that runs ``Connection.execute`` has
SQLAlchemy begin one of its own, committed through it. Store methods block: the server calls them
in a worker thread (``App.run_store``), and a cancelled call waits for its transaction to end.

SQLite: a write begins with ``BEGIN IMMEDIATE``, retried with jitter up to :data:`LOCK_WAIT_S`;
the schema is brought to this release's Alembic head on first use of each file.

PostgreSQL: reads run ``REPEATABLE READ READ ONLY``, writes ``READ COMMITTED``. A serving process
never migrates: a schema not at this release's head is :class:`~ask_fable.errors.SchemaMismatch`.
A database that cannot be reached or stops answering fails the call as
:class:`~ask_fable.errors.Unavailable` within ``database_connect_timeout`` +
``database_statement_timeout``. :meth:`Database.run_write` runs a body again when PostgreSQL aborts
it for a deadlock or a serialization failure.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from ask_fable.errors import Unavailable
from ask_fable.stores.driver import StoreConnection, Target, raise_as_sqlalchemy, statement_target
from ask_fable.stores.engines import (
    ANSWERED,
    Engines,
    Watch,
    answered,
    connection_failure,
    is_statement_timeout,
    report_up,
    unanswered,
    unusable_file,
)
from ask_fable.stores.tables import schema_name

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine, Table
    from sqlalchemy.dialects.postgresql import Insert as PostgresInsert
    from sqlalchemy.dialects.sqlite import Insert as SqliteInsert

    from ask_fable.config import Settings

T = TypeVar("T")
S = TypeVar("S")
P = ParamSpec("P")

Dialect = Literal["sqlite", "postgres"]

#: Upper bound on the whole wait for SQLite's write lock, busy timeout rounds included.
LOCK_WAIT_S = 60.0
#: SQLSTATEs of a transaction PostgreSQL aborted for a conflict with another one: serialization
#: failure and deadlock. Running the transaction again is the documented remedy.
CONFLICT_STATES = frozenset({"40001", "40P01"})
#: Attempts :meth:`Database.run_write` makes at a body that keeps conflicting on PostgreSQL.
WRITE_ATTEMPTS = 6
#: First and longest pause between those attempts (jittered, doubling).
RETRY_DELAY_S = (0.01, 0.2)
#: Default bound on one PostgreSQL transaction when no settings name one.
STATEMENT_TIMEOUT_S = 5.0
#: ``psycopg.IsolationLevel.REPEATABLE_READ`` (psycopg is imported only for PostgreSQL).
_REPEATABLE_READ = 3
#: How long past ``statement_timeout`` the watchdog waits before it cuts a silent connection.
WATCHDOG_GRACE_S = 1.0


class _Silent(Exception):
    """A database that did not answer a transaction at all within its bound."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the database did not answer within {seconds:g} s")


def is_busy_error(exc: BaseException) -> bool:
    """True for SQLITE_BUSY / SQLITE_LOCKED, the errors contention produces."""
    error = getattr(exc, "orig", None) or exc
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return True
    message = str(error).lower()
    return "locked" in message or "busy" in message


def is_conflict(exc: BaseException) -> bool:
    """Whether PostgreSQL aborted a transaction for a conflict with another (deadlock, serialization)."""
    error = getattr(exc, "orig", None) or exc
    return getattr(error, "sqlstate", None) in CONFLICT_STATES


def is_unreachable(exc: BaseException) -> bool:
    """Whether a store failed because its database could not be used (so a fallback may help)."""
    return isinstance(exc, sqlite3.Error | OSError | Unavailable | DBAPIError)


def database_for(settings: Settings, store: str, path: str | os.PathLike[str] | None, *,
                 engines: Engines | None = None) -> Database:
    """The database ``store`` runs on: PostgreSQL when ``settings.database_url`` is set, else the
    SQLite file at ``path`` (a store without one, such as the answer archive, needs PostgreSQL)."""
    url = settings.database_url
    if url:
        return Database.postgres(url, store, engines=engines,
                                 connect_timeout=settings.database_connect_timeout,
                                 pool_size=settings.database_pool_size,
                                 statement_timeout=settings.database_statement_timeout)
    if path is None:
        raise ValueError(f"the {store} store keeps no SQLite file; it needs database_url")
    return Database.sqlite(path, store, engines=engines)


def open_database(location: str | os.PathLike[str] | Database, store: str, *,
                  engines: Engines | None = None) -> Database:
    """``location`` itself when it is a :class:`Database`, else ``store``'s SQLite file it names."""
    if isinstance(location, str | os.PathLike):
        return Database.sqlite(location, store, engines=engines)
    return location


class Database:
    """One store's tables on SQLite or PostgreSQL: transactions, and the schema made current first."""

    def __init__(self, engines: Engines, store: str, dialect: Dialect, *, path: Path | None = None,
                 url: str | None = None, engine_for: Callable[[], Engine], owned: bool,
                 statement_timeout: float = STATEMENT_TIMEOUT_S) -> None:
        self.engines = engines
        self.store = store
        self.dialect: Dialect = dialect
        self.path = path
        self.url = url
        self._engine_for = engine_for
        self._owned = owned
        self.statement_timeout = statement_timeout
        self.schema = schema_name(store) if dialect == "postgres" else None
        self._prepare_lock = threading.Lock()
        self._memory: Engine | None = None
        #: The engine this database last used, with the registry generation it came from.
        self._held: tuple[int, Engine, Target] | None = None
        #: The PostgreSQL pool with this store's schema translation, with the registry generation and
        #: the process it was found in, the engine it came from, and what its statements compile for.
        self._in_schema: tuple[int, int, Engine, Engine, Target] | None = None
        self._file = str(self.path) if self.path is not None else ""
        self._schema_marker = ("postgres", url or "", store)

    @classmethod
    def sqlite(cls, path: str | os.PathLike[str], store: str, *, engines: Engines | None = None) -> Database:
        """``store``'s tables in the SQLite file at ``path``."""
        pool = engines if engines is not None else Engines()
        absolute = Path(os.path.abspath(Path(path).expanduser()))
        return cls(pool, store, "sqlite", path=absolute, engine_for=lambda: pool.sqlite(absolute),
                   owned=engines is None)

    @classmethod
    def postgres(cls, url: str, store: str, *, engines: Engines | None = None, connect_timeout: float,
                 pool_size: int, statement_timeout: float) -> Database:
        """``store``'s schema in the PostgreSQL database at ``url``."""
        from ask_fable.stores.engines import postgres_url, require_driver

        postgres_url(url)  # an unusable URL fails here, at start, not at the first call
        require_driver()
        pool = engines if engines is not None else Engines()
        return cls(pool, store, "postgres", url=url, owned=engines is None,
                   statement_timeout=statement_timeout,
                   engine_for=lambda: pool.postgres(url, connect_timeout=connect_timeout, pool_size=pool_size,
                                                    statement_timeout=statement_timeout))

    @property
    def location(self) -> str:
        """Where this store's rows live, as a result may name it (no credentials)."""
        return f"postgresql:{self.store}" if self.dialect == "postgres" else str(self.path)

    # --- transactions --------------------------------------------------------------------------
    def read(self) -> AbstractContextManager[Connection]:
        """A connection inside a read transaction: a consistent snapshot, never blocking writers."""
        return self._transaction(write=False)

    def write(self) -> AbstractContextManager[Connection]:
        """A connection inside a write transaction, committed when the body ends, rolled back if it
        raises. A body that may conflict with another transaction on PostgreSQL belongs in
        :meth:`run_write`; here such a conflict fails the call as :class:`Unavailable`."""
        return self._transaction(write=True, conflicts_fail=True)

    def run_write(self, body: Callable[[Connection], T]) -> T:
        """``body(conn)`` inside a write transaction, its result once committed. PostgreSQL aborting
        it for a conflict with another transaction runs it again whole, up to :data:`WRITE_ATTEMPTS`
        times (SQLite's writers take turns, so it runs once). ``body`` must do nothing but its
        queries: it may run more than once."""
        delay, longest = RETRY_DELAY_S
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with self._transaction(write=True) as conn:
                    return body(conn)
            except Exception as exc:
                if not is_conflict(exc):
                    raise
                if attempt == WRITE_ATTEMPTS:
                    raise self._conflicted(exc) from exc
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, longest)
        raise AssertionError("unreachable")  # the loop returns or raises

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` of the file (``"ok"`` for a sound one); PostgreSQL keeps
        its own consistency and answers ``"ok"``."""
        if self.dialect != "sqlite":
            return "ok"
        with self.read() as conn:
            return "\n".join(str(row[0]) for row in conn.exec_driver_sql("PRAGMA integrity_check"))

    def close(self) -> None:
        """Close the connections this database opened for itself (shared engines are the App's)."""
        if self._memory is not None:
            self._memory.dispose()
            self._memory = None
        if self._owned:
            self.engines.close()

    def _conflicted(self, exc: BaseException) -> Unavailable:
        from ask_fable.stores.engines import reason

        return Unavailable(f"a PostgreSQL write kept conflicting with other writes "
                           f"({reason(exc, self.url or '')})", hint="the call can be retried")

    def _transaction(self, *, write: bool,
                     conflicts_fail: bool = False) -> AbstractContextManager[Connection]:
        """A transaction on this database. With ``conflicts_fail`` (:meth:`write`), PostgreSQL aborting
        it for a conflict with another transaction fails it as :class:`Unavailable`; without, the
        conflict is raised as it is (:meth:`run_write` runs the body again)."""
        if self.dialect == "sqlite":
            return _SqliteTransaction(self, write)
        if write:
            scope: JoinedWrites | None = getattr(_joined, "scope", None)
            if scope is not None and scope.engines is self.engines and not self.engines.read_only:
                return self._joined_write(scope, conflicts_fail)
        return _PostgresTransaction(self, write, conflicts_fail)

    # --- SQLite --------------------------------------------------------------------------------
    def _sqlite_engine(self) -> tuple[Engine, Target | None]:
        """The file's engine, and what its statements compile for; for a reader, a file not made yet
        reads as an empty database of the current schema, in memory."""
        assert self.path is not None
        if self.engines.read_only and not self.path.exists():
            return self._empty_schema(), None
        held = self._held
        if held is not None and held[0] == self.engines.generation:
            return held[1], held[2]
        engine = self._engine_for()
        self._held = (self.engines.generation, engine, statement_target(engine))
        return engine, self._held[2]

    def _prepare_sqlite(self, conn: Connection, inode: int) -> None:
        """Bring the file ``conn`` was opened on (``inode``) to the head, once per file (a file
        replaced under the pool is a new one: the checkout noticed, and ``conn`` is on the new file)."""
        marker = ("sqlite", self._file, inode)
        if marker in self.engines.prepared or self.engines.read_only:
            return
        with self._prepare_lock:
            if marker not in self.engines.prepared:
                self._retry_busy(self._upgrade_sqlite, conn)
                self.engines.prepared.add(marker)

    def _upgrade_sqlite(self, conn: Connection) -> None:
        from ask_fable.stores.schema import upgrade_sqlite_file

        upgrade_sqlite_file(conn, self.store, self._file)

    def _empty_schema(self) -> Engine:
        if self._memory is None:
            from sqlalchemy import create_engine
            from sqlalchemy.pool import StaticPool

            from ask_fable.stores.tables import METADATA

            memory = create_engine("sqlite://", poolclass=StaticPool,
                                   connect_args={"check_same_thread": False})
            METADATA[self.store].create_all(memory)
            self._memory = memory
        return self._memory

    def _begin_sqlite(self, engine: Engine, target: Target | None, write: bool) -> StoreConnection:
        if engine is self._memory:  # a reader's stand-in for a file not made yet
            conn, inode = StoreConnection(engine), -1
        else:
            conn, inode = self.engines.sqlite_connect(engine, self._file, target)
        try:
            if ("sqlite", self._file, inode) not in self.engines.prepared:
                self._prepare_sqlite(conn, inode)
            # On the driver: a SQLAlchemy transaction object would cost more than the statements.
            statement = "BEGIN IMMEDIATE" if write else "BEGIN"
            try:
                conn.driver.execute(statement)
            except Exception as exc:
                raise_as_sqlalchemy(conn, exc, statement, None)
        except BaseException:
            conn.close()
            raise
        return conn

    def _retry_busy(self, action: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``action(*args, **kwargs)`` run until it stops failing with busy/locked, within
        :data:`LOCK_WAIT_S`."""
        deadline = time.monotonic() + LOCK_WAIT_S
        delay = 0.005
        while True:
            try:
                return action(*args, **kwargs)
            except Exception as exc:
                if not is_busy_error(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.25)

    def _unusable(self, exc: BaseException) -> Unavailable:
        assert self.path is not None
        return unusable_file(self.path, exc)

    # --- PostgreSQL ----------------------------------------------------------------------------
    def _checkout(self) -> StoreConnection:
        """A pooled connection (pinged on its way out) whose statements name this store's schema,
        or the caller-facing error."""
        held = self._in_schema
        pid = os.getpid()
        if held is None or held[0] != self.engines.generation or held[1] != pid:
            engine = self._engine_for()
            if held is not None and held[2] is engine:
                held = self._in_schema = (self.engines.generation, pid, *held[2:])
            else:
                # The same pool, with the schema translation set once rather than on every connection.
                in_schema = engine.execution_options(schema_translate_map={None: self.schema})
                held = self._in_schema = (self.engines.generation, pid, engine, in_schema,
                                          statement_target(in_schema))
        try:
            return StoreConnection(held[3], held[4])
        except PoolTimeout as exc:
            raise Unavailable(f"every PostgreSQL connection of this server is in use (pool of "
                              f"{held[2].pool.size()})",  # type: ignore[attr-defined]
                              hint="raise ASK_FABLE_DATABASE_POOL_SIZE, or the call can be retried") from exc
        except DBAPIError as exc:
            raise connection_failure(exc, self.url or "") from exc

    def _watch(self, conn: StoreConnection) -> Watch:
        """Watch ``conn``'s socket for this database's bound. The server cancels a slow query itself
        (``statement_timeout``); the watchdog, a little later, only ever fires for a server that
        stopped answering altogether."""
        return self.engines.watchdog.watch(conn.driver.fileno(), self.statement_timeout + WATCHDOG_GRACE_S)

    def _named(self, exc: BaseException, watch: Watch, conflicts_fail: bool = False) -> BaseException:
        """A driver error of a transaction as the caller should see it: a conflict as raised (for
        :meth:`run_write`) or, with ``conflicts_fail``, as :class:`Unavailable`; a cancelled slow
        query, a silent or lost database as ``Unavailable``; a refused login as ``NotConfigured``.
        Anything else is ``exc`` itself."""
        if not isinstance(exc, DBAPIError):
            return exc
        url = self.url or ""
        if is_conflict(exc):
            return self._conflicted(exc) if conflicts_fail else exc
        if watch.cut:
            bound = self.statement_timeout + WATCHDOG_GRACE_S
            return connection_failure(_Silent(bound), url)
        if is_statement_timeout(exc):
            return Unavailable(
                f"a PostgreSQL query ran past {self.statement_timeout:g} s and was cancelled",
                hint="the call can be retried; raise ASK_FABLE_DATABASE_STATEMENT_TIMEOUT if this "
                "store's queries are slow")
        if exc.connection_invalidated or _is_connection_error(exc):
            return connection_failure(exc, url)
        return exc

    @contextmanager
    def _failures_named(self, watch: Watch) -> Iterator[None]:
        """The body's driver errors as :meth:`_named` says the caller should see them."""
        try:
            yield
        except Exception as exc:
            named = self._named(exc, watch)
            if named is exc:
                raise
            raise named from exc

    @contextmanager
    def _joined_write(self, scope: JoinedWrites, conflicts_fail: bool) -> Iterator[Connection]:
        conn, watch = scope.enter(self)
        try:
            yield conn
        except BaseException as exc:
            scope.failed = True
            named = self._named(exc, watch, conflicts_fail)
            if named is exc:
                raise
            raise named from exc

    def _check_schema(self, conn: Connection, *, in_transaction: bool = False) -> None:
        """Refuse a schema other than this release's head (checked once per engine and store)."""
        marker = self._schema_marker
        if marker in self.engines.prepared:
            return
        from ask_fable.stores.schema import require_current

        if in_transaction:
            require_current(conn, self.store, self.schema)
        else:
            with conn.begin():
                require_current(conn, self.store, self.schema)
        self.engines.prepared.add(marker)


class _SqliteTransaction:
    """One transaction on a SQLite file: ``BEGIN`` (``BEGIN IMMEDIATE`` for a writer) on a pooled
    connection, committed when the body ends; whatever is not committed is rolled back as the
    connection returns to its pool."""

    __slots__ = ("conn", "db", "write")

    def __init__(self, db: Database, write: bool) -> None:
        self.db = db
        self.write = write

    def __enter__(self) -> Connection:
        db = self.db
        try:
            engine, target = db._sqlite_engine()
            conn = self.conn = db._retry_busy(db._begin_sqlite, engine, target, self.write)
        except OSError as exc:
            raise db._unusable(exc) from exc
        except DBAPIError as exc:
            if is_busy_error(exc) or db.engines.read_only:  # contention, or a reader that tried to write
                raise
            raise db._unusable(exc) from exc
        return conn

    def __exit__(self, _kind: type[BaseException] | None, exc: BaseException | None,
                 _tb: TracebackType | None) -> None:
        conn = self.conn
        try:
            if exc is None and self.write:
                self.db._retry_busy(_commit, conn)
        finally:
            self.db.engines.sqlite_release(conn.engine, conn)  # rolls back what was not committed


class _PostgresTransaction:
    """One transaction on PostgreSQL: a pooled connection, its socket watched, the schema checked
    once, the modes set on the driver (psycopg sends them with its ``BEGIN``) and the commit made
    there. A failure rolls back, has the connection pinged at its next checkout, and reaches the
    caller as :meth:`Database._named` says."""

    __slots__ = ("conflicts_fail", "conn", "db", "watch", "write")

    def __init__(self, db: Database, write: bool, conflicts_fail: bool) -> None:
        self.db = db
        self.write = write
        self.conflicts_fail = conflicts_fail

    def __enter__(self) -> Connection:
        db = self.db
        conn = self.conn = db._checkout()
        try:
            self.watch = db._watch(conn)
        except BaseException:
            unanswered(conn)
            conn.close()
            raise
        try:
            if db._schema_marker not in db.engines.prepared:
                db._check_schema(conn)
            if self.write:
                set_modes(conn.driver, None, True if db.engines.read_only else None)
            else:
                set_modes(conn.driver, _REPEATABLE_READ, True)
        except BaseException as exc:
            self._fail(exc)
            raise
        return conn

    def __exit__(self, _kind: type[BaseException] | None, exc: BaseException | None,
                 _tb: TracebackType | None) -> None:
        if exc is not None:
            self._fail(exc)
            return
        conn = self.conn
        try:
            _commit(conn)
        except BaseException as failure:
            self._fail(failure)
            raise
        self.db.engines.watchdog.release(self.watch)
        conn.pool_info[ANSWERED] = time.monotonic()  # engines.answered, for the pool's next checkout
        conn.close()
        report_up(self.db.url or "")

    def _fail(self, exc: BaseException) -> None:
        """Roll back and return the connection after ``exc``; raise what the caller should see
        instead, when that is not ``exc`` itself."""
        conn = self.conn
        try:
            driver = conn.driver
            if driver is not None:  # a lost connection is invalidated, not reused
                with suppress(Exception):
                    driver.rollback()
            unanswered(conn)
        finally:
            self.db.engines.watchdog.release(self.watch)
            conn.close()
        named = self.db._named(exc, self.watch, self.conflicts_fail)
        if named is not exc:
            raise named from exc


_joined = threading.local()


@contextmanager
def joined_writes(engines: Engines) -> Iterator[None]:
    """Every PostgreSQL write this thread's stores on ``engines`` make in the body joins one
    transaction, committed when the body ends (rolled back if it raises): what a finished call
    leaves (audit, trace and its events, hub turn, saved answer) costs one commit instead of one per
    store. Should any store's write fail, the transaction is rolled back whole and the body ends with
    :class:`JoinedWritesFailed`, so the caller writes each store on its own and only the one that
    fails loses its rows (no savepoint per store: each would cost two more round trips). Reads,
    SQLite files and a nested use are untouched."""
    if getattr(_joined, "scope", None) is not None:
        yield
        return
    scope = JoinedWrites(engines)
    _joined.scope = scope
    try:
        yield
        if scope.failed:
            raise JoinedWritesFailed("a store's write failed inside the shared transaction; nothing of "
                                     "it was kept", hint="each store is written on its own")
        scope.finish(commit=True)
    except BaseException:
        scope.finish(commit=False)
        raise
    finally:
        _joined.scope = None


class JoinedWritesFailed(Unavailable):
    """A store's write failed inside :func:`joined_writes`: the shared transaction was rolled back."""


class JoinedWrites:
    """The one transaction of :func:`joined_writes`: opened by the first store that writes."""

    def __init__(self, engines: Engines) -> None:
        self.engines = engines
        #: A store's write failed: the transaction is rolled back, and no other store joins it.
        self.failed = False
        self._conn: Connection | None = None
        self._owner: Database | None = None
        self._watch: Watch | None = None

    def enter(self, db: Database) -> tuple[Connection, Watch]:
        """The shared connection, pointed at ``db``'s schema (begun, and checked, on first use)."""
        if self.failed:
            raise JoinedWritesFailed("an earlier write of the shared transaction failed")
        if self._conn is None:
            conn = db._checkout()
            watch = db._watch(conn)
            self._conn, self._owner, self._watch = conn, db, watch
            # Begun by psycopg with the first statement, committed on the driver (db.commit).
            with db._failures_named(watch):
                set_modes(conn.driver, None, None)
        assert self._watch is not None
        if self._owner is not None and self._owner.url != db.url:
            raise ValueError("joined writes span one PostgreSQL database")
        self._conn.execution_options(schema_translate_map={None: db.schema})
        with db._failures_named(self._watch):
            db._check_schema(self._conn, in_transaction=True)
        return self._conn, self._watch

    def finish(self, *, commit: bool) -> None:
        """Commit (or roll back) what the stores wrote, and return the connection."""
        if self._conn is None or self._owner is None or self._watch is None:
            return
        conn, owner, watch = self._conn, self._owner, self._watch
        self._conn = None
        try:
            if commit:
                with owner._failures_named(watch):
                    _commit(conn)
                answered(conn)
            else:
                unanswered(conn)
                if conn.in_transaction():
                    conn.rollback()
                elif not conn.invalidated:
                    with suppress(Exception):  # a lost connection: the pool discards it on return
                        conn.connection.dbapi_connection.rollback()  # type: ignore[union-attr]
        except BaseException:
            unanswered(conn)
            raise
        finally:
            self.engines.watchdog.release(watch)
            conn.close()
        if commit:
            report_up(owner.url or "")


def set_modes(driver: Any, isolation: int | None, read_only: bool | None) -> None:
    """Give the next transaction of a psycopg connection these modes (``None``: the server's
    default), changing only those it does not have: a pooled connection keeps the modes of its
    last transaction, and psycopg's setters cost more than the look."""
    if driver.isolation_level != isolation:
        driver.isolation_level = isolation
    if driver.read_only != read_only:
        driver.read_only = read_only


def _commit(conn: Connection) -> None:
    """Commit ``conn``'s transaction: through SQLAlchemy when a ``Connection.execute`` began one
    there, else on the driver, which began it."""
    if conn.in_transaction():
        conn.commit()
        return
    driver = conn.driver if isinstance(conn, StoreConnection) else None
    try:
        (driver if driver is not None else conn.connection.dbapi_connection).commit()  # type: ignore[union-attr]
    except Exception as exc:
        raise_as_sqlalchemy(conn, exc, "COMMIT", None)


def _is_connection_error(exc: BaseException) -> bool:
    from sqlalchemy.exc import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError)


def upsert(conn: Connection | str, table: Table) -> SqliteInsert | PostgresInsert:
    """``INSERT`` into ``table`` in the dialect of ``conn`` (or the dialect named), so
    ``on_conflict_do_update`` / ``on_conflict_do_nothing`` and ``excluded`` are available (the two
    dialects spell them alike)."""
    dialect = conn if isinstance(conn, str) else conn.dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgres_insert

        return postgres_insert(table)
    from sqlalchemy.dialects.sqlite import insert as sqlite_insert

    return sqlite_insert(table)


def per_dialect(build: Callable[[str], S]) -> Callable[[Connection], S]:
    """Decorates ``build(dialect name)``, a statement that differs by dialect (an upsert), into
    ``statement(conn)``: built once per dialect and reused, so SQLAlchemy computes its cache key
    once rather than per call."""
    built: dict[str, S] = {}

    def statement(conn: Connection) -> S:
        name = conn.dialect.name
        found = built.get(name)
        if found is None:
            found = built[name] = build(name)
        return found

    return statement
