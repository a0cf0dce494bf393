"""Faults of a shared PostgreSQL database the stores must survive, against the real ``pgserver``
PostgreSQL: a database that stops answering, and a wrong ``database_url``."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from ask_fable.config import load_settings
from ask_fable.errors import Unavailable
from ask_fable.stores.context import context_store_for
from ask_fable.stores.engines import Engines
from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.fakes.postgres import PostgresServer, database_url


def _connections(server: PostgresServer, url: str) -> int:
    name = url.partition("?")[0].rsplit("/", 1)[1]
    with server.admin() as admin:
        row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)).fetchone()
    return int(row[0]) if row else 0


def _connections_held(server: PostgresServer, url: str, bound: int) -> int:
    """:func:`_connections`, read again for up to a second while it is above ``bound``: a backend whose
    client has just closed its socket (a connection replaced) is listed until it has exited."""
    count = _connections(server, url)
    for _attempt in range(20):
        if count <= bound:
            break
        time.sleep(0.05)
        count = _connections(server, url)
    return count


def test_a_hung_database_fails_calls_within_their_bound_and_the_store_recovers_by_itself(
        pg_server: PostgresServer) -> None:
    """The server is stopped (SIGSTOP) under load: every call fails as ``unavailable`` while it is still
    stopped (none waits for it to come back), the pool never holds more than its size, and once the
    server continues (SIGCONT) the same store answers again with no restart."""
    url = pg_server.fresh_database()
    settings = load_settings(database_url=url, database_connect_timeout=1, database_statement_timeout=1,
                             database_pool_size=3)
    engines = Engines()
    store = context_store_for(settings, engines=engines)
    store.write("local", "kept", "v")
    outcomes: list[object] = []
    peak: list[int] = []

    def call() -> None:
        try:
            outcomes.append(store.read("local", "kept"))
        except Exception as exc:  # collected for the assertions below
            outcomes.append(exc)
        peak.append(engines.open_count)

    try:
        with pg_server.hung():
            callers = [threading.Thread(target=call, daemon=True) for _ in range(8)]
            for caller in callers:
                caller.start()
            for caller in callers:
                caller.join(60)
            still_waiting = [caller for caller in callers if caller.is_alive()]
            assert not still_waiting, "a call waited on the stopped database"
        assert len(outcomes) == 8 and all(isinstance(o, Unavailable) for o in outcomes), outcomes
        assert max(peak) <= settings.database_pool_size
        recovered = None
        for _attempt in range(60):
            try:
                recovered = store.read("local", "kept")
                break
            except Unavailable:
                time.sleep(0.5)
        assert recovered is not None and recovered.value == "v"
        store.write("local", "after", "w")
        # Attempts the client gave up on while the server was stopped end once it runs again and
        # finds their sockets closed: what stays is the pool, never more.
        for _attempt in range(120):
            if _connections(pg_server, url) <= settings.database_pool_size:
                break
            time.sleep(0.25)
        assert _connections(pg_server, url) <= settings.database_pool_size
    finally:
        engines.close()
        pg_server.drop(url)


def test_one_process_keeps_one_pool_of_its_size(pg_server: PostgresServer) -> None:
    """Stores, threads and a query that waits: the process's connections to the database never
    exceed ``database_pool_size``."""
    url = pg_server.fresh_database()
    settings = load_settings(database_url=url, database_pool_size=4)
    engines = Engines()
    context = context_store_for(settings, engines=engines)
    start = threading.Barrier(16)
    seen: list[int] = []

    def work(n: int) -> None:
        start.wait()
        for i in range(5):
            context.write("local", f"k{n}-{i}", "v")
            with context.db.read() as conn:
                conn.execute(text("SELECT pg_sleep(0.01)"))
            seen.append(_connections_held(pg_server, url, settings.database_pool_size))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(16)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert len(context.keys("local")) == 80
        assert max(seen) <= settings.database_pool_size
    finally:
        engines.close()
        pg_server.drop(url)


def _run(*argv: str, url: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``ask-fable ARGV`` on the database at ``url``: ``serve`` started as the installed command, any
    other command by its entry point in this process."""
    env = child_env(ASK_FABLE_DATABASE_URL=url, ASK_FABLE_DATABASE_CONNECT_TIMEOUT="1", HOME=str(home),
                    XDG_STATE_HOME=str(home / "state"), XDG_CONFIG_HOME=str(home / "config"))
    if argv[0] != "serve":
        return run_in_process(argv, env)
    return subprocess.run([*ask_fable_command(), *argv], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("case", ["unknown role", "no such database", "garbage", "mysql"])
def test_a_wrong_database_url_names_its_cause_and_stops_serve_and_commands(
        pg_server: PostgresServer, tmp_path: Path, case: str) -> None:
    """A configuration error is no outage: ``serve`` exits non-zero at start naming the cause, and
    ``keys create`` and ``db upgrade`` fail the same way, never falling back to SQLite files."""
    head, _, query = pg_server.url.partition("?")
    url, cause = {
        "unknown role": (f"postgresql://nobody_here@/{head.rsplit('/', 1)[1]}?{query}",
                         "authentication failed"),
        "no such database": (database_url(pg_server.url, "no_such_db"), "no such database"),
        "garbage": ("this is not a database", "not a URL"),
        "mysql": ("mysql://team:pw@db.internal/askfable", "postgresql://"),
    }[case]
    for argv in (["serve"], ["keys", "create", "--name", "ci"], ["db", "upgrade"], ["db", "status"]):
        done = _run(*argv, url=url, home=tmp_path)
        assert done.returncode != 0, (argv, done.stdout, done.stderr)
        assert cause in done.stderr, (argv, done.stderr)
        assert "Traceback" not in done.stderr and done.stdout == "", (argv, done.stdout)
    state = tmp_path / "state" / "ask_fable"
    assert not (state / "keys.db").exists(), "a key was written to this machine's SQLite files"


def test_a_refused_database_is_an_outage_said_once(tmp_path: Path) -> None:
    """Nothing listens at the URL: the cause is named (connection refused), and ``db status`` fails."""
    done = _run("db", "status", url=f"postgresql://ask@/nowhere?host={tmp_path}", home=tmp_path)
    assert done.returncode == 1 and "connection refused" in done.stderr, done.stderr


def test_db_status_exits_non_zero_while_a_store_is_behind(pg_server: PostgresServer, tmp_path: Path) -> None:
    url = pg_server.empty_database()
    try:
        behind = _run("db", "status", url=url, home=tmp_path)
        assert behind.returncode == 1 and "behind" in behind.stdout
        assert _run("db", "upgrade", url=url, home=tmp_path).returncode == 0
        current = _run("db", "status", "--json", url=url, home=tmp_path)
        assert current.returncode == 0 and '"state": "current"' in current.stdout
    finally:
        pg_server.drop(url)
