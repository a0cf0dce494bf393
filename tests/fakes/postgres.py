"""A real PostgreSQL for the tests: one ``pgserver`` per test session, a fresh database per test.

The server is the PostgreSQL that the ``pgserver`` wheel ships, started in a temporary directory and
reached over its Unix socket. A template database is migrated once (``ask-fable db upgrade``'s
code); each test gets a copy of it, so it starts from the current schema with no rows.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.fake_cli import is_alive

TEMPLATE = "ask_fable_template"
#: What each session's server directory under the temporary directory is called.
PREFIX = "ask-fable-pg-"
#: The file in that directory naming the test process the server belongs to.
OWNER_FILE = "owner.pid"
#: How long a directory naming no owner must have been left alone before a later session removes it.
IDLE_S = 600
_numbers = itertools.count()


def database_url(server_url: str, name: str) -> str:
    """``server_url`` (``postgresql://postgres:@/postgres?host=…``) pointed at database ``name``."""
    head, _, query = server_url.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{name}" + (f"?{query}" if query else "")


@dataclass
class PostgresServer:
    """A running server: its admin URL and the template every test database is copied from."""

    url: str
    handle: Any
    created: list[str] = field(default_factory=list)

    def admin(self) -> Any:
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def fresh_database(self) -> str:
        """A new database with the current schema and no rows; returns its URL."""
        name = f"t_{os.getpid()}_{next(_numbers)}"
        with self.admin() as conn:
            conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
        return database_url(self.url, name)

    def empty_database(self) -> str:
        """A new database with no schema at all (for migration tests); returns its URL."""
        name = f"e_{os.getpid()}_{next(_numbers)}"
        with self.admin() as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return database_url(self.url, name)

    def stop(self) -> None:
        """Stop the server (``pg_ctl stop -m fast``: open sessions are cut, new ones refused)."""
        from pgserver._commands import pg_ctl  # type: ignore[import-not-found, unused-ignore]

        handle = self.handle
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=handle.pgdata, user=handle.system_user, timeout=60)

    def start(self) -> None:
        """Start it again on the same data directory and socket."""
        self.handle.ensure_postgres_running()

    def processes(self) -> list[int]:
        """The server's processes: the postmaster (``postmaster.pid``) and every child it started."""
        postmaster = int((Path(self.handle.pgdata) / "postmaster.pid").read_text().split()[0])
        children = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The parent's pid follows the command name (in parentheses) and the state.
            if int(stat.rsplit(")", 1)[1].split()[1]) == postmaster:
                children.append(int(entry.name))
        return [postmaster, *children]

    @contextmanager
    def hung(self) -> Iterator[None]:
        """The server stopped with SIGSTOP for the body (connections accepted, nothing answered, as a
        hung database or a dead network looks), then resumed with SIGCONT whatever happens."""
        import signal

        stopped = self.processes()
        try:
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
            yield
        finally:
            for pid in stopped:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

    def drop(self, url: str) -> None:
        """Drop the database ``url`` names, ending its sessions."""
        name = url.partition("?")[0].rsplit("/", 1)[1]
        with self.admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def running_server() -> Iterator[PostgresServer]:
    """Start pgserver in a new temporary directory with a migrated template database; stop it and
    remove the directory after."""
    stop_abandoned_servers(Path(tempfile.gettempdir()))
    directory = Path(tempfile.mkdtemp(prefix=PREFIX))
    (directory / OWNER_FILE).write_text(str(os.getpid()))
    # pgserver asks platformdirs for a runtime directory when it is imported.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(directory))
    import pgserver

    from ask_fable.config import load_settings
    from ask_fable.stores.schema import upgrade

    handle = pgserver.get_server(directory / "data", cleanup_mode="stop")
    server = PostgresServer(handle.get_uri(), handle)
    with server.admin() as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE}")
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    upgrade(load_settings(database_url=database_url(server.url, TEMPLATE)))
    try:
        yield server
    finally:
        handle.cleanup()
        shutil.rmtree(directory, ignore_errors=True)


def stop_abandoned_servers(temp: Path) -> list[Path]:
    """Stop the server of each earlier session whose test process is gone (a run killed before its
    finalizers ran) and remove its directory; the directories removed."""
    removed = []
    for directory in temp.glob(f"{PREFIX}*"):
        try:
            owner = int((directory / OWNER_FILE).read_text())
        except (OSError, ValueError):
            # No owner named: removed only once long idle and holding no database (what a library's
            # runtime files left in it after the session).
            with suppress(OSError):
                if not (directory / "data").exists() and time.time() - directory.stat().st_mtime > IDLE_S:
                    shutil.rmtree(directory, ignore_errors=True)
                    removed.append(directory)
            continue
        if is_alive(owner):
            continue
        with suppress(OSError, ValueError, IndexError):
            postmaster = int((directory / "data" / "postmaster.pid").read_text().split()[0])
            command = Path(f"/proc/{postmaster}/cmdline").read_bytes()
            if b"postgres" in command and str(directory).encode() in command:
                os.kill(postmaster, signal.SIGQUIT)  # PostgreSQL's immediate shutdown
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
    return removed
