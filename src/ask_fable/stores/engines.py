"""The SQLAlchemy engines the stores run on: one per SQLite file and one per PostgreSQL URL.

:class:`Engines` (the App's ``Resources.engines``) opens each engine on first use and closes them
all on :meth:`Engines.close`; a forked child drops its parent's without closing them. The engines
carry no connection events, so SQLAlchemy dispatches none per statement.

SQLite: a small bounded pool per file (:data:`SQLITE_POOL_SIZE` + :data:`SQLITE_POOL_OVERFLOW`),
whatever the number of worker threads; up to :data:`SQLITE_POOL_SIZE` connections stay checked out
between transactions (:meth:`Engines.sqlite_release`), so a transaction skips the pool's checkout,
reset and return. Transactions are begun on the driver (``BEGIN``, or ``BEGIN IMMEDIATE`` for a
write). Connections run in WAL with ``synchronous=NORMAL``, foreign keys on and a busy timeout; a
file is created ``0600``, and one replaced under a kept connection is reopened.

PostgreSQL: psycopg 3 on a ``QueuePool`` of ``database_pool_size`` connections, no overflow. A
connection leaving the pool is pinged unless it answered within :data:`PING_IDLE_S` and its socket
has nothing to read. Queries are bounded by the server's ``statement_timeout`` and, for a server
that stops answering altogether, by :class:`Watchdog`, which shuts the socket of a transaction that
outlives its bound so the call fails and the pool opens a fresh connection.
"""

from __future__ import annotations

import logging
import math
import os
import select
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ask_fable.errors import NotConfigured, Unavailable
from ask_fable.files import FILE_MODE, ensure_private_dir
from ask_fable.redact import redact

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine
    from sqlalchemy.engine import URL

    from ask_fable.stores.driver import StoreConnection, Target

#: Connections one SQLite file keeps pooled, and how many more may be open at a peak.
SQLITE_POOL_SIZE = 4
SQLITE_POOL_OVERFLOW = 8
BUSY_TIMEOUT_MS = 5_000
#: How long a store call waits for a pooled PostgreSQL connection while every one is in use.
POOL_BUSY_WAIT_S = 10.0
INSTALL_HINT = "pip install 'ask-fable[postgres]'"
#: A pooled PostgreSQL connection idle longer than this is pinged as it leaves the pool; one whose
#: transaction failed, or whose socket has something to read, is pinged whatever its age.
PING_IDLE_S = 2.0
#: Where a PostgreSQL connection's record keeps when it last answered (``time.monotonic``).
ANSWERED = "ask_fable_answered"
#: Where it keeps a ``select.poll`` on its socket, for the checkout's look at what came in.
POLLER = "ask_fable_poller"

#: Where an outage is reported: a line as the database stops answering, one as it answers again.
outage_log = logging.getLogger("ask_fable.database")
_outages: set[str] = set()
_outages_lock = threading.Lock()


# --- PostgreSQL URLs -----------------------------------------------------------------------------
def postgres_url(url: str) -> URL:
    """``url`` (a ``postgresql://`` URL or a libpq ``key=value`` string) as SQLAlchemy's URL for
    psycopg 3; :class:`NotConfigured` for anything else (a typo, another database), named as such."""
    from sqlalchemy.engine import URL, make_url
    from sqlalchemy.exc import ArgumentError

    shown = redact(url, [url_password_of(url)])
    fix = ("fix ASK_FABLE_DATABASE_URL (or database_url in the config file), or unset it to keep the "
           "stores in SQLite files")
    if "://" not in url:
        try:
            from psycopg.conninfo import conninfo_to_dict

            parts = {key: str(value) for key, value in conninfo_to_dict(url).items()}
        except Exception as exc:  # psycopg missing, or not a key=value string
            raise NotConfigured(f"database_url {shown!r} is not a URL; expected postgresql://USER:PASSWORD@"
                                "HOST:PORT/DATABASE", hint=fix) from exc
        port = parts.pop("port", None)
        return URL.create("postgresql+psycopg", username=parts.pop("user", None),
                          password=parts.pop("password", None), host=parts.pop("host", None),
                          port=int(port) if port and port.isdigit() else None,
                          database=parts.pop("dbname", None), query=parts)
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise NotConfigured(f"database_url {shown!r} is not a URL; expected postgresql://USER:PASSWORD@HOST"
                            ":PORT/DATABASE", hint=fix) from exc
    backend, _, driver = parsed.drivername.partition("+")
    if backend not in ("postgresql", "postgres") or driver not in ("", "psycopg"):
        raise NotConfigured(f"database_url names {parsed.drivername!r}; ask-fable stores run on PostgreSQL "
                            "(postgresql://…) or, with no database_url, on SQLite files",
                            hint="set ASK_FABLE_DATABASE_URL to a postgresql:// URL, or unset it")
    return parsed.set(drivername="postgresql+psycopg")


def url_password_of(url: str) -> str:
    """The password in ``url`` (empty when it has none or is no URL), for redaction."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).password or ""
    except (ArgumentError, ValueError):
        return ""


def require_driver() -> None:
    """:class:`NotConfigured` naming the install step when psycopg is missing."""
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise NotConfigured(f"database_url names PostgreSQL but its driver is not installed; run "
                            f"{INSTALL_HINT}", hint=INSTALL_HINT) from exc


# --- failures ------------------------------------------------------------------------------------
#: SQLSTATEs and message fragments of a connection refused for its configuration, not an outage.
_CONFIG_STATES = {"28P01": "authentication failed", "28000": "authentication failed",
                  "3D000": "no such database"}
_CONFIG_TEXT = (("password authentication failed", "authentication failed"),
                ("role \"", "authentication failed"),
                ("no password supplied", "authentication failed"),
                ("does not exist", "no such database"),
                ("invalid connection option", "not a valid connection string"),
                ("invalid dsn", "not a valid connection string"),
                ("missing \"=\"", "not a valid connection string"))
_OUTAGE_TEXT = (("connection refused", "connection refused"),
                ("no such file or directory", "connection refused"),
                ("timeout expired", "no answer (timed out)"),
                ("could not translate host name", "unknown host"),
                ("server closed the connection", "connection lost"),
                ("connection is lost", "connection lost"),
                ("consuming input failed", "connection lost"),
                ("terminating connection", "connection lost"),
                ("canceling statement due to statement timeout", "query timed out"),
                ("did not answer within", "no answer (timed out)"))


def _driver_error(exc: BaseException) -> BaseException:
    return getattr(exc, "orig", None) or exc


def failure_cause(exc: BaseException) -> tuple[str, bool]:
    """What went wrong reaching PostgreSQL, in a few words, and whether it is the configuration's
    fault (wrong password or role, no such database: retrying cannot help) rather than an outage."""
    error = _driver_error(exc)
    state = getattr(error, "sqlstate", None)
    if state in _CONFIG_STATES:
        return _CONFIG_STATES[state], True
    text = str(error).lower()
    if "does not exist" in text and "role" in text:
        return "authentication failed", True
    for fragment, cause in _CONFIG_TEXT:
        if fragment in text:
            return cause, True
    for fragment, cause in _OUTAGE_TEXT:
        if fragment in text:
            return cause, False
    return type(error).__name__, False


def is_statement_timeout(exc: BaseException) -> bool:
    """Whether the server cancelled a query that ran past ``statement_timeout`` (the database answers;
    the query was slow: no outage)."""
    return getattr(_driver_error(exc), "sqlstate", None) == "57014"


def reason(exc: BaseException, url: str) -> str:
    """``exc`` in one line for a caller: its cause and the driver's first line, the password removed."""
    error = _driver_error(exc)
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    cause, _config = failure_cause(exc)
    return f"{cause}: {redact(first, [url, url_password_of(url)])[:300]}"


def drop_tracebacks(exc: BaseException) -> None:
    """Forget the tracebacks of ``exc`` and the errors it was raised from. A connection attempt psycopg
    gave up on (``connect_timeout``) is left to the garbage collector, its socket still open, and the
    attempt's frames, kept alive by a traceback, would keep it open: the server it reached then
    finishes the handshake once it answers again and holds a session nobody uses."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending += [current.__cause__, current.__context__, getattr(current, "orig", None)]


def connection_failure(exc: BaseException, url: str) -> Unavailable | NotConfigured:
    """The caller-facing error for a PostgreSQL database that cannot be used: :class:`NotConfigured`
    when the URL itself is wrong (authentication, no such database: retrying cannot help), else
    :class:`Unavailable`, an outage, said once on :data:`outage_log` until it ends."""
    drop_tracebacks(exc)
    _cause, config = failure_cause(exc)
    if config:
        return NotConfigured(f"the PostgreSQL database refused ask-fable ({reason(exc, url)})",
                             hint="check the user, password, host and database name in "
                             "ASK_FABLE_DATABASE_URL")
    report_down(url, exc)
    return Unavailable(f"the PostgreSQL database is unavailable ({reason(exc, url)})",
                       hint="the call can be retried once the database answers")


def report_down(url: str, exc: BaseException) -> None:
    """Say once per outage, on :data:`outage_log`, that the database stopped answering."""
    with _outages_lock:
        first = url not in _outages
        _outages.add(url)
    if first:
        outage_log.warning("ask-fable: the PostgreSQL database is not answering (%s); calls fail as "
                           "unavailable until it does", reason(exc, url))


def report_up(url: str) -> None:
    """Say once, after an outage was reported, that the database answers again."""
    if url not in _outages:
        return
    with _outages_lock:
        was_down = url in _outages
        _outages.discard(url)
    if was_down:
        outage_log.warning("ask-fable: the PostgreSQL database answers again; calls go through")


# --- the watchdog --------------------------------------------------------------------------------
class Watch:
    """One watched socket: :attr:`cut` says whether the watchdog had to shut it."""

    __slots__ = ("cut", "deadline", "fd")

    def __init__(self, fd: int, deadline: float) -> None:
        self.fd = fd
        self.deadline = deadline
        self.cut = False


class Watchdog:
    """Cuts the socket of a PostgreSQL connection whose transaction outlived its deadline, so a call
    blocked on a stopped server fails (its kernel still acknowledges what is sent, so no TCP timeout
    fires). The thread sleeps until the earliest deadline and is woken only by one due sooner."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._live: set[Watch] = set()
        #: When the thread next looks at the watches (``inf``: not until one is added).
        self._wake_at = math.inf
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def watch(self, fd: int, seconds: float) -> Watch:
        """Cut ``fd`` unless :meth:`release` is called with the returned watch within ``seconds``."""
        entry = Watch(fd, time.monotonic() + seconds)
        with self._lock:
            if self._thread is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._live = set()
                self._wake_at = math.inf
                self._thread = threading.Thread(target=self._run, name="ask-fable-db-watchdog", daemon=True)
                self._thread.start()
            self._live.add(entry)
            if entry.deadline < self._wake_at:
                self._wake_at = entry.deadline
                self._wake.notify()
        return entry

    def release(self, entry: Watch) -> None:
        """The watched transaction ended: leave its socket alone."""
        with self._lock:
            self._live.discard(entry)

    @contextmanager
    def watching(self, fd: int, seconds: float) -> Iterator[Watch]:
        """Watch ``fd`` for the body's duration."""
        entry = self.watch(fd, seconds)
        try:
            yield entry
        finally:
            self.release(entry)

    def _run(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                due = [entry for entry in self._live if entry.deadline <= now]
                if not due:
                    self._wake_at = min((entry.deadline for entry in self._live), default=math.inf)
                    self._wake.wait(None if self._wake_at == math.inf else self._wake_at - now)
                    continue
                for entry in due:
                    self._live.discard(entry)
                    entry.cut = True
            for entry in due:
                _shut(entry.fd)


def _shut(fd: int) -> None:
    """Shut the socket behind ``fd`` down: a read blocked on it returns at once."""
    with suppress(OSError):
        sock = socket.socket(fileno=os.dup(fd))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()


# --- the registry --------------------------------------------------------------------------------
class Engines:
    """The process's engines, by SQLite file and PostgreSQL URL, opened on first use.

    ``read_only`` opens existing SQLite files with ``mode=ro`` (never creating, migrating or writing
    one) and makes every PostgreSQL transaction read-only.
    """

    def __init__(self, *, read_only: bool = False) -> None:
        self.read_only = read_only
        self._lock = threading.Lock()
        self._engines: dict[tuple[str, str], Engine] = {}
        self._pid = os.getpid()
        self.watchdog = Watchdog()
        #: Raised by every :meth:`close`: a database holding an engine from before asks again.
        self.generation = 0
        #: Stores whose schema was found (or made) current, by engine key: checked once per engine.
        self.prepared: set[tuple[str, str, str | int]] = set()
        #: Per SQLite engine, connections kept checked out between transactions (at most
        #: :data:`SQLITE_POOL_SIZE`), so a transaction takes one without a pool checkout.
        self._idle: dict[Engine, list[StoreConnection]] = {}
        #: A forked parent's idle connections, never closed or collected in the child.
        self._abandoned: list[object] = []

    def _held(self) -> dict[tuple[str, str], Engine]:
        if self._pid != os.getpid():  # a forked child: the parent's connections are not its own
            for engine in self._engines.values():
                engine.dispose(close=False)
            self._abandoned.append(self._idle)
            self._pid, self._engines, self._idle = os.getpid(), {}, {}
            self.prepared = set()
        return self._engines

    def sqlite(self, path: Path) -> Engine:
        """The engine of the SQLite file at ``path``."""
        key = ("sqlite", str(path))
        with self._lock:
            held = self._held()
            engine = held.get(key)
            if engine is None:
                engine = held[key] = _sqlite_engine(path, read_only=self.read_only)
                self._idle[engine] = []
            return engine

    def sqlite_connect(self, engine: Engine, path: str | Path,
                       target: Target | None = None) -> tuple[StoreConnection, int]:
        """A connection of ``engine`` to the file now at ``path`` (its statements compiled for
        ``target``, when given), and the file's inode: one opened on a file since replaced or
        removed is closed and another opened (and the old file's schema forgotten)."""
        from ask_fable.stores.driver import StoreConnection

        idle = self._idle.get(engine)
        try:
            conn = idle.pop() if idle else StoreConnection(engine, target)
        except IndexError:  # taken by another thread meanwhile
            conn = StoreConnection(engine, target)
        inode = _inode(path)
        while conn.pool_info.get("inode") != inode:
            # The new file may even reuse the old one's inode number once this connection closes:
            # whatever was checked of the old file holds no more.
            self._forget_file(path)
            conn.invalidate()
            conn.close()
            conn = StoreConnection(engine, target)
            inode = _inode(path)
        return conn, inode

    def sqlite_release(self, engine: Engine, conn: StoreConnection) -> None:
        """Roll back what is left of ``conn``'s transaction and keep it for the next one (up to
        :data:`SQLITE_POOL_SIZE` per file), else return it to its pool."""
        driver = conn.driver
        if driver is not None and len(self._idle.get(engine, ())) < SQLITE_POOL_SIZE:
            try:
                if conn.in_transaction():
                    conn.rollback()
                elif driver.in_transaction:
                    driver.rollback()
            except Exception:
                conn.close()
                return
            with self._lock:
                idle = self._idle.get(engine)
                if idle is not None and conn.driver is not None:
                    idle.append(conn)
                    return
        conn.close()

    def postgres(self, url: str, *, connect_timeout: float, pool_size: int,
                 statement_timeout: float) -> Engine:
        """The engine of the PostgreSQL database at ``url`` (one pool, shared by every store)."""
        key = ("postgres", url)
        with self._lock:
            held = self._held()
            engine = held.get(key)
            if engine is None:
                engine = held[key] = _postgres_engine(url, connect_timeout=connect_timeout,
                                                      pool_size=pool_size,
                                                      statement_timeout=statement_timeout,
                                                      watchdog=self.watchdog)
            return engine

    def _forget_file(self, path: str | Path) -> None:
        """Forget that the file at ``path`` was prepared: it was replaced."""
        with self._lock:
            self.prepared = {marker for marker in self.prepared if marker[1] != str(path)}

    @property
    def open_count(self) -> int:
        """Connections checked out or pooled now, over every engine."""
        with self._lock:
            engines = list(self._engines.values())
        total = 0
        for engine in engines:
            pool: Any = engine.pool
            with suppress(AttributeError, NotImplementedError):
                total += int(pool.checkedin()) + int(pool.checkedout())
        return total

    def close(self) -> None:
        """Close every connection of every engine; the registry stays usable and reopens on use."""
        with self._lock:
            engines = list(self._held().values())
            idle, self._idle = self._idle, {}
            self._engines = {}
            self.prepared = set()
            self.generation += 1
        for conns in idle.values():
            while conns:
                conns.pop().close()
        for engine in engines:
            engine.dispose()

    async def aclose(self) -> None:
        """:meth:`close`, from the event loop (closing a connection may wait on its server)."""
        import anyio

        await anyio.to_thread.run_sync(self.close)


# --- SQLite --------------------------------------------------------------------------------------
def _inode(path: str | Path) -> int:
    try:
        return os.stat(path).st_ino
    except FileNotFoundError:
        return -1


def _open_sqlite(path: Path, read_only: bool) -> sqlite3.Connection:
    """A connection to ``path``: created ``0600`` first when missing (never for a reader)."""
    if read_only:
        return sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
    if not path.exists():
        ensure_private_dir(path.parent)
        # Created here so it is 0600 from the first byte; SQLite gives its -wal and -shm companions
        # the database file's permissions.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE))
    return sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                           check_same_thread=False)


def _sqlite_engine(path: Path, *, read_only: bool) -> Engine:
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import QueuePool

    # Named parameters: the stores' driver hands a call's own parameters to sqlite3 as they are.
    engine = create_engine("sqlite://", creator=lambda: _open_sqlite(path, read_only), poolclass=QueuePool,
                           pool_size=SQLITE_POOL_SIZE, max_overflow=SQLITE_POOL_OVERFLOW, pool_timeout=60,
                           paramstyle="named")

    # Only a pool event, run once per new connection: an engine with no connection events lets
    # SQLAlchemy skip their dispatch on every statement, begin and commit.
    @event.listens_for(engine, "connect")
    def configure(dbapi_connection: sqlite3.Connection, record: Any) -> None:
        record.info["inode"] = _inode(path)
        dbapi_connection.isolation_level = None  # transactions are begun by begin_sqlite, not the driver
        dbapi_connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        dbapi_connection.execute("PRAGMA foreign_keys = ON")
        if read_only:
            dbapi_connection.execute("PRAGMA query_only = ON")
            return
        dbapi_connection.execute("PRAGMA synchronous = NORMAL")
        if str(dbapi_connection.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            dbapi_connection.execute("PRAGMA journal_mode = WAL")

    return engine


def begin_sqlite(conn: Connection, *, immediate: bool) -> None:
    """Begin ``conn``'s transaction on SQLite: ``BEGIN``, or ``BEGIN IMMEDIATE`` for a writer, which
    takes the file's write lock before it reads. SQLAlchemy's own begin sends nothing on this
    driver; the statement goes straight to it (``sqlite3`` commits and rolls back what it began)."""
    from sqlalchemy.exc import DBAPIError

    statement = "BEGIN IMMEDIATE" if immediate else "BEGIN"
    transaction = conn.begin()
    driver: Any = conn.connection.driver_connection
    try:
        driver.execute(statement)
    except BaseException as exc:
        transaction.rollback()
        if isinstance(exc, sqlite3.Error):  # raised as a statement run through SQLAlchemy would be
            raise DBAPIError.instance(statement, None, exc, sqlite3.Error) from exc
        raise


def unusable_file(path: Path, exc: BaseException) -> Unavailable:
    """The error for a SQLite file that cannot be opened where it should be (its directory is a
    file, or cannot be created or written)."""
    error = getattr(exc, "orig", None) or exc
    why = getattr(error, "strerror", None) or str(error) or type(error).__name__
    return Unavailable(f"cannot open {path} ({why})",
                       hint=f"ask-fable keeps its data in {path.parent}: make it a directory this user can "
                       "write, or set XDG_STATE_HOME to one")


# --- PostgreSQL ----------------------------------------------------------------------------------
def _postgres_engine(url: str, *, connect_timeout: float, pool_size: int, statement_timeout: float,
                     watchdog: Watchdog) -> Engine:
    from sqlalchemy import create_engine, event
    from sqlalchemy.exc import DisconnectionError

    require_driver()
    quiet_driver_logs()
    statement_ms = max(1, int(statement_timeout * 1000))
    engine = create_engine(
        postgres_url(url),
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=max(POOL_BUSY_WAIT_S, connect_timeout),
        # Checked below as each connection leaves the pool, under the watchdog.
        pool_pre_ping=False,
        connect_args={
            "connect_timeout": max(1, math.ceil(connect_timeout)),
            "application_name": "ask-fable",
            "options": f"-c statement_timeout={statement_ms} "
                       f"-c idle_in_transaction_session_timeout={statement_ms * 4}",
        },
    )
    dialect = engine.dialect

    @event.listens_for(engine, "connect")
    def opened(dbapi_connection: Any, record: Any) -> None:
        record.info[ANSWERED] = time.monotonic()  # it just answered the handshake
        poller = select.poll()
        poller.register(dbapi_connection.fileno(), select.POLLIN)
        record.info[POLLER] = poller

    @event.listens_for(engine, "checkout")
    def ping(dbapi_connection: Any, record: Any, proxy: Any) -> None:
        # A connection that does not answer a trivial query within the connect timeout (the server
        # restarted, or stopped answering) is discarded, and the pool opens another. One that
        # answered moments ago, with nothing come in since, is taken as it is.
        info = record.info
        if time.monotonic() - info.get(ANSWERED, -math.inf) < PING_IDLE_S:
            poller = info.get(POLLER)
            if poller is not None and not poller.poll(0):
                return
        try:
            with watchdog.watching(dbapi_connection.fileno(), connect_timeout):
                dialect.do_ping(dbapi_connection)
        except Exception as exc:
            raise DisconnectionError(str(exc)) from exc

    return engine


def answered(conn: Connection) -> None:
    """Note that ``conn``'s transaction went through: its next checkout needs no ping for a while."""
    conn.info[ANSWERED] = time.monotonic()


def unanswered(conn: Connection) -> None:
    """Note that ``conn``'s transaction failed: its next checkout pings it first (an invalidated
    connection is replaced by a new one anyway; asking it for its record would reopen it)."""
    if not conn.invalidated and not conn.closed:
        conn.info.pop(ANSWERED, None)


class _PoolChatter(logging.Filter):
    """Drops psycopg's warning that a connection ended mid-pipeline: the call that met it fails as
    unavailable, and the outage is reported once."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Let through anything but that warning."""
        return not str(record.msg).startswith("error ignored terminating")


_CHATTER = _PoolChatter()


def quiet_driver_logs() -> None:
    """Keep psycopg's own warnings about lost connections off stderr (outages are reported once)."""
    driver_log = logging.getLogger("psycopg")
    if _CHATTER not in driver_log.filters:
        driver_log.addFilter(_CHATTER)
