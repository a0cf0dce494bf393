"""What only the PostgreSQL side has: migrations by ``db upgrade``, refusals, outages, the driver."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ask_fable.config import load_settings
from ask_fable.config_sources import shown
from ask_fable.errors import AskFableError, NotConfigured, SchemaMismatch, Unavailable
from ask_fable.stores import schema
from ask_fable.stores.context import context_store_for
from ask_fable.stores.engines import Engines
from ask_fable.stores.views import ContextEntry
from tests.e2e.helpers import ask_fable_command, child_env, run_in_process
from tests.fakes.postgres import IDLE_S, OWNER_FILE, PREFIX, PostgresServer, stop_abandoned_servers


@pytest.fixture
def empty_url(pg_server: PostgresServer) -> str:
    """A database with no ask-fable schema at all."""
    url = pg_server.empty_database()
    yield url
    pg_server.drop(url)


def test_one_statement_runs_with_percent_signs_and_question_marks_in_values(
        store_backend: object, tmp_path: Path) -> None:
    pools = Engines()
    store = context_store_for(load_settings(), engines=pools)
    store.write("local", "100%-sure?", "is it 100% done? 'yes' ?", "a % b")
    got = store.read("local", "100%-sure?")
    assert got is not None and got.value == "is it 100% done? 'yes' ?" and got.description == "a % b"
    assert store.resolve("local", ["100%-sure?", "nope?"]).missing == ["nope?"]
    pools.close()


def test_upgrade_from_nothing_is_idempotent_and_two_at_once_take_turns(empty_url: str) -> None:
    settings = load_settings(database_url=empty_url)
    assert {v.state for v in schema.status(settings)} == {"behind"}
    with pytest.raises(SchemaMismatch, match="ask-fable db upgrade"):
        schema.check(settings)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            schema.upgrade(settings)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert {v.state for v in schema.status(settings)} == {"current"}
    schema.check(settings)
    again = schema.upgrade(settings)
    assert all(v.found == v.wanted for v in again)


def test_a_store_refuses_a_schema_behind_or_ahead_of_this_release(empty_url: str) -> None:
    settings = load_settings(database_url=empty_url)
    pools = Engines()
    with pytest.raises(SchemaMismatch) as behind:
        context_store_for(settings, engines=pools).list("local")
    assert behind.value.kind == "unavailable" and "ask-fable db upgrade" in behind.value.detail
    schema.upgrade(settings)
    import psycopg

    with psycopg.connect(empty_url, autocommit=True) as conn:
        conn.execute("UPDATE ask_fable_context.alembic_version SET version_num = 'f00dfeed'")
    pools.close()
    with pytest.raises(SchemaMismatch, match="newer than this ask-fable"):
        context_store_for(settings, engines=pools).list("local")
    with pytest.raises(SchemaMismatch, match="newer than this ask-fable"):
        schema.check(settings)
    pools.close()


def test_the_server_refuses_to_start_on_a_schema_it_does_not_serve(empty_url: str) -> None:
    """``ask-fable serve`` exits non-zero naming ``ask-fable db upgrade``; after that upgrade,
    ``db status`` says current."""
    env = child_env(ASK_FABLE_DATABASE_URL=empty_url)
    refused = subprocess.run([*ask_fable_command(), "serve"], env=env, capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
    assert refused.returncode == 1 and "ask-fable db upgrade" in refused.stderr and refused.stdout == ""
    upgraded = run_in_process(["db", "upgrade"], env)
    assert upgraded.returncode == 0 and "context" in upgraded.stdout and "upgraded none →" in upgraded.stdout
    status = run_in_process(["db", "status", "--json"], env)
    assert status.returncode == 0 and '"state": "behind"' not in status.stdout
    assert '"database": "postgresql"' in status.stdout


@pytest.mark.parametrize("seen", [True, False], ids=["a-call-saw-it-down", "no-call-saw-it"])
def test_after_a_restart_the_first_call_goes_through(pg_server: PostgresServer, seen: bool) -> None:
    """Every pooled connection dies with the server. A call while it is down is ``unavailable``,
    and the first call once it is back succeeds on fresh connections, within a one-second connect
    timeout (no reconnection backoff to wait out, no dead connection tried after another). When no
    call saw it go, the next call finds its connection dead on its first round trip, before
    anything of its transaction ran, and goes through on a fresh one: the restart costs no call."""
    url = pg_server.fresh_database()
    settings = load_settings(database_url=url, database_connect_timeout=1)
    pools = Engines()
    store = context_store_for(settings, engines=pools)
    store.write("local", "before", "v")
    pooled = threading.Barrier(4, timeout=30)

    def reader() -> None:
        with store.db.read() as conn:
            conn.exec_driver_sql("SELECT 1")
            pooled.wait()  # four transactions at once: four pooled connections

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    try:
        pg_server.stop()
        try:
            if seen:
                with pytest.raises(Unavailable):
                    store.read("local", "before")
        finally:
            pg_server.start()
        got = store.read("local", "before")
        store.write("local", "after", "w")
        assert got is not None and got.value == "v"
        assert sorted(store.keys("local")) == ["after", "before"]
    finally:
        pools.close()
        pg_server.drop(url)


def test_a_call_waits_for_a_busy_pool_past_the_connect_timeout_and_runs(pg_server: PostgresServer) -> None:
    """One pooled connection, held by a long transaction: another call outwaits the connect timeout
    (the database answers; the pool is only busy) and runs once the connection is free."""
    url = pg_server.fresh_database()
    settings = load_settings(database_url=url, database_connect_timeout=1, database_pool_size=1)
    pools = Engines()
    store = context_store_for(settings, engines=pools)
    store.write("local", "k", "v")
    holding, release = threading.Event(), threading.Event()
    got: list[object] = []

    def hold() -> None:
        with store.db.read():
            holding.set()
            release.wait(60)

    def call() -> None:
        try:
            got.append(store.read("local", "k"))
        except Exception as exc:  # collected for the assertion below
            got.append(exc)

    holder, caller = threading.Thread(target=hold), threading.Thread(target=call)
    try:
        holder.start()
        assert holding.wait(30)
        caller.start()
        caller.join(settings.database_connect_timeout * 2)
        assert caller.is_alive() and not got  # still waiting for the one connection, past the timeout
        release.set()
        holder.join(30)
        caller.join(30)
        assert len(got) == 1 and isinstance(got[0], ContextEntry) and got[0].value == "v"
    finally:
        release.set()
        pools.close()
        pg_server.drop(url)


def test_an_unreachable_database_is_unavailable_then_reconnected_without_a_restart(
        pg_server: PostgresServer) -> None:
    """Connections to the database are cut and refused: a store call fails as ``unavailable``; once
    connections are allowed again the same store object's next call works."""
    url = pg_server.fresh_database()
    name = url.partition("?")[0].rsplit("/", 1)[1]
    settings = load_settings(database_url=url, database_connect_timeout=1)
    pools = Engines()
    store = context_store_for(settings, engines=pools)
    store.write("local", "before", "v")
    try:
        with pg_server.admin() as admin:
            admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                          (name,))
        with pytest.raises(Unavailable) as down:
            store.read("local", "before")
        assert down.value.to_result()["kind"] == "unavailable" and down.value.to_result()["hint"]
        with pg_server.admin() as admin:
            admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        # No reconnection backoff to wait out: the first call after the database is back succeeds.
        got = store.read("local", "before")
        assert got is not None and got.value == "v"
    finally:
        pools.close()
        pg_server.drop(url)


def test_a_database_that_does_not_answer_is_unavailable_and_not_ready(tmp_path: Path) -> None:
    url = f"postgresql://ask:pw-not-shown-123@/nowhere?host={tmp_path}"
    settings = load_settings(database_url=url, database_connect_timeout=1)
    pools = Engines()
    with pytest.raises(Unavailable) as down:
        context_store_for(settings, engines=pools).list("local")
    pools.close()
    assert "pw-not-shown-123" not in str(down.value.to_result())
    assert schema.ping(settings) is False


def test_the_database_password_is_never_shown() -> None:
    url = "postgresql://team:s3cret-pass-word@db.internal:5432/askfable"
    settings = load_settings(database_url=url)
    assert "s3cret-pass-word" in settings.secret_values()
    assert shown("database_url", url) == "set, not shown"
    from ask_fable.redact import redact

    assert "s3cret-pass-word" not in redact(f"could not connect to {url}")


def test_without_the_driver_a_database_url_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what an install without the extra looks like
    settings = load_settings(database_url="postgresql://team@db/askfable")
    with pytest.raises(NotConfigured, match=r"pip install 'ask-fable\[postgres\]'"):
        context_store_for(settings, engines=Engines())
    from ask_fable.cli import stores_refusal

    monkeypatch.setenv("ASK_FABLE_DATABASE_URL", "postgresql://team@db/askfable")
    assert "pip install 'ask-fable[postgres]'" in (stores_refusal() or "")


def test_store_errors_are_part_of_the_error_tree() -> None:
    assert issubclass(SchemaMismatch, Unavailable) and issubclass(Unavailable, AskFableError)
    assert Unavailable("x").counts_as_failure is False


def test_doctor_and_a_refused_start_never_print_the_database_password(tmp_path: Path) -> None:
    url = f"postgresql://team:s3cret-pass-word@/askfable?host={tmp_path}"
    env = child_env(ASK_FABLE_DATABASE_URL=url, ASK_FABLE_DATABASE_CONNECT_TIMEOUT="1")
    for argv in (["doctor", "--no-probe", "--json"], ["db", "status"], ["keys", "list"]):
        done = run_in_process(argv, env)
        assert "s3cret-pass-word" not in done.stdout + done.stderr, argv
    down = subprocess.run([*ask_fable_command(), "db", "status"], env=env, capture_output=True, text=True,
                          timeout=60)  # the installed command, as a deploy script runs it
    assert down.returncode == 1 and "unavailable" in down.stderr and "Traceback" not in down.stderr


def test_a_read_only_reader_sees_what_was_stored_and_the_database_refuses_its_writes(
        store_backend: object) -> None:
    """A reader on read-only connections (the web view's) reads the stores, and any write it tried
    would be refused by the database itself, on PostgreSQL as on SQLite; nothing changes."""
    from sqlalchemy.exc import DBAPIError

    writer_pools = Engines()
    writer = context_store_for(load_settings(), engines=writer_pools)
    writer.write("local", "kept", "written by the server")
    reader_pools = Engines(read_only=True)
    reader = context_store_for(load_settings(), engines=reader_pools)
    found = reader.read("local", "kept")
    assert found is not None and found.value == "written by the server"
    with pytest.raises(DBAPIError, match=r"(?i)read-?only"):
        reader.write("local", "lost", "written by the reader")
    assert writer.read("local", "lost") is None
    reader_pools.close()
    writer_pools.close()


def test_reads_and_writes_taking_turns_on_one_connection_each_run_in_their_own_modes(
        pg_server: PostgresServer) -> None:
    """A pooled connection keeps the modes of its last transaction and each transaction sets those it
    needs: on a pool of one connection, whatever ran before, a read is ``REPEATABLE READ`` and
    read-only, a write (alone or joined with others) ``READ COMMITTED`` and writes."""
    from sqlalchemy import func, select

    from ask_fable.stores.db import Database, joined_writes
    from ask_fable.stores.driver import run

    url = pg_server.fresh_database()
    engines = Engines()
    db = Database.postgres(url, "context", engines=engines, connect_timeout=5, pool_size=1,
                           statement_timeout=5)
    store = context_store_for(load_settings(database_url=url, database_pool_size=1), engines=engines)
    modes = select(func.current_setting("transaction_isolation"),
                   func.current_setting("transaction_read_only"))
    reading, writing = ("repeatable read", "on"), ("read committed", "off")
    seen, wanted = [], []
    try:
        for kind in ("read", "write", "write", "read", "read", "joined", "read", "write"):
            if kind == "joined":
                with joined_writes(engines), db.write() as conn:
                    seen.append(tuple(run(conn, modes).one()))
            else:
                with db.read() if kind == "read" else db.write() as conn:
                    seen.append(tuple(run(conn, modes).one()))
            wanted.append(reading if kind == "read" else writing)
            store.write("local", f"after-{len(seen)}", kind)  # the one connection still writes
        assert seen == wanted
        assert len(store.keys("local")) == len(wanted)
    finally:
        engines.close()
        pg_server.drop(url)


def test_a_refused_connection_fails_the_call_at_once_not_after_the_connect_timeout(tmp_path: Path) -> None:
    """A database that refuses connections (stopped, nothing listening) fails a call as
    ``unavailable`` as soon as the pool's attempt is refused, not once ``database_connect_timeout``
    (here 30 s) has run out: the first call of a server started while the database is down, too."""
    url = f"postgresql://ask@/nowhere?host={tmp_path}"
    settings = load_settings(database_url=url, database_connect_timeout=30)
    pools = Engines()
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            context_store_for(settings, engines=pools).list("local")
        except BaseException as exc:  # collected for the assertion below
            outcome.append(exc)

    caller = threading.Thread(target=call, daemon=True)
    try:
        caller.start()
        caller.join(10)  # a third of the connect timeout: a call still waiting has waited it out
        assert not caller.is_alive(), "the call waited for the connect timeout"
        assert len(outcome) == 1 and isinstance(outcome[0], Unavailable), outcome
    finally:
        pools.close()



def test_a_server_a_killed_test_run_left_behind_is_stopped_and_removed_by_the_next(tmp_path: Path) -> None:
    """A run killed before its finalizers leaves its PostgreSQL running: the next session's start
    stops it (only a process that is that directory's postgres) and removes its directory, and leaves
    a live run's directory and anything not its own alone."""
    dead_owner = subprocess.Popen(["true"])
    dead_owner.wait()
    abandoned, live, idle, foreign = (tmp_path / f"{PREFIX}{name}" for name in ("a", "b", "c", "d"))
    for directory in (abandoned, live, idle):
        (directory / "data").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    shutil.rmtree(idle / "data")
    old = time.time() - 2 * IDLE_S
    os.utime(idle, (old, old))
    foreign.mkdir()
    # Stands in for the abandoned postmaster: its command line names postgres and its directory.
    postmaster = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "postgres",
                                   str(abandoned / "data")])
    try:
        (abandoned / "data" / "postmaster.pid").write_text(f"{postmaster.pid}\n{abandoned / 'data'}\n")
        (abandoned / OWNER_FILE).write_text(str(dead_owner.pid))
        (live / OWNER_FILE).write_text(str(os.getpid()))
        assert sorted(stop_abandoned_servers(tmp_path)) == sorted([abandoned, idle])
        assert postmaster.wait(timeout=10) != 0
    finally:
        postmaster.kill()
    assert live.is_dir() and foreign.is_dir() and (tmp_path / "other").is_dir()
    assert not abandoned.exists() and not idle.exists()
