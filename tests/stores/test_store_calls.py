"""How the server calls its stores: one worker-thread hop per store call, on SQLite and PostgreSQL
alike; a cancelled call's transaction is rolled back whole and its connection returned."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest
from mcp import Client
from sqlalchemy import text

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.errors import Unavailable
from ask_fable.stores.context import context_store_for
from ask_fable.stores.engines import Engines
from ask_fable.surface.server import build_server
from tests.e2e.helpers import TEST_KEY, structured
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.postgres import PostgresServer


async def test_tool_calls_on_postgresql_keep_every_record(
        fp: FakeProvider, pg_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Context, a kept conversation, traces, stats: each store call of a tool reaches PostgreSQL."""
    monkeypatch.setenv("ASK_FABLE_GLM_API_KEY", TEST_KEY)
    monkeypatch.setenv("ASK_FABLE_GLM_BASE_URL", fp.base_url)
    url = pg_server.fresh_database()
    app = App(load_settings(database_url=url, cache=True))
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            with anyio.fail_after(60):
                written = await structured(client, "context_write", {"key": "plan", "value": "v1"})
                read = await structured(client, "context_read", {"key": "plan"})
                first = await structured(client, "ask", {"model": "glm", "session": "s",
                                                         "question": "Is the plan sound overall?"})
                second = await structured(client, "ask", {"model": "glm", "session": "s",
                                                          "question": "And what would you change?"})
                trace = await structured(client, "trace_get", {"trace_id": second["trace_id"]})
                stats = await structured(client, "stats", {"window": "24h"})
                listed = await structured(client, "trace_list", {"limit": 5})
        assert written["status"] == "ok" and read["value"] == "v1"
        assert first["status"] == "ok" and second["status"] == "ok" and second["turn"] == 2, second
        assert trace["trace"]["trace_id"] == second["trace_id"]
        assert stats["totals"]["calls"] >= 2
        assert second["trace_id"] in [t["trace_id"] for t in listed["traces"]]
    finally:
        await app.aclose()
        pg_server.drop(url)


async def test_a_cancelled_store_call_rolls_back_and_returns_its_connection(
        pg_server: PostgresServer) -> None:
    """A call cancelled while its transaction waits on the database leaves nothing written and its
    connection back in the pool: the next call on a one-connection pool goes through."""
    url = pg_server.fresh_database()
    settings = load_settings(database_url=url, database_pool_size=1, database_statement_timeout=1)
    app = App(settings)
    store = context_store_for(settings, engines=app.resources.engines)
    started = threading.Event()
    failed: list[BaseException] = []

    def slow_write() -> None:
        try:
            with store.db.write() as conn:
                conn.exec_driver_sql("CREATE TABLE half_done (x INTEGER)")
                started.set()
                conn.execute(text("SELECT pg_sleep(30)"))
        except Unavailable as exc:  # the server cancelled the query past its statement timeout
            failed.append(exc)

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(app.run_store, slow_write)
                while not started.is_set():
                    await anyio.sleep(0.01)
                group.cancel_scope.cancel()
            await app.run_store(store.write, "local", "after", "v")
            got = await app.run_store(store.read, "local", "after")

            def half_done() -> object:
                with store.db.read() as conn:
                    return conn.scalar(text("SELECT to_regclass('half_done')"))

            assert await app.run_store(half_done) is None
        assert got is not None and got.value == "v"
        assert app.resources.engines.open_count <= 1
        assert len(failed) == 1 and "ran past 1 s" in failed[0].detail
    finally:
        await app.aclose()
        pg_server.drop(url)


def test_callers_on_many_threads_see_each_others_writes(pg_server: PostgresServer) -> None:
    url = pg_server.fresh_database()
    engines = Engines()
    store = context_store_for(load_settings(database_url=url, database_pool_size=3), engines=engines)
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            store.write("local", f"k{n}", f"v{n}")
            assert store.read("local", f"k{(n + 1) % 8}") is None or True
        except BaseException as exc:  # collected for the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not failures
        assert sorted(store.keys("local")) == sorted(f"k{n}" for n in range(8))
        assert engines.open_count <= 3
    finally:
        engines.close()
        pg_server.drop(url)


def test_an_unreachable_database_fails_a_caller_as_unavailable(tmp_path: Path) -> None:
    """A store on a database that does not answer fails as ``unavailable``, never hangs or leaks a
    traceback or the password."""
    url = f"postgresql://ask:secret-pw@/nowhere?host={tmp_path}"
    engines = Engines()
    try:
        with pytest.raises(Unavailable) as down:
            context_store_for(load_settings(database_url=url, database_connect_timeout=1),
                              engines=engines).list("local")
        assert "secret-pw" not in str(down.value.to_result())
        assert "connection refused" in down.value.detail
    finally:
        engines.close()


async def test_what_a_call_leaves_is_one_transaction_on_postgresql(
        fp: FakeProvider, pg_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """An answered call's audit record, trace with its events, hub turn and saved answer are
    committed together, once, and every one of them is there afterwards."""
    from sqlalchemy import event

    monkeypatch.setenv("ASK_FABLE_GLM_API_KEY", TEST_KEY)
    monkeypatch.setenv("ASK_FABLE_GLM_BASE_URL", fp.base_url)
    url = pg_server.fresh_database()
    app = App(load_settings(database_url=url, save=True, hub=True, trace_mode="full", cache=False))
    commits: list[str] = []
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            warm = await structured(client, "ask_glm", {"question": "Warm the pool: is the queue bounded?"})
            assert warm["status"] == "ok", warm
            s = app.settings
            engine = app.resources.engines.postgres(url, connect_timeout=s.database_connect_timeout,
                                                    pool_size=s.database_pool_size,
                                                    statement_timeout=s.database_statement_timeout)

            def committed(conn: object) -> None:
                commits.append("commit")

            event.listen(engine, "commit", committed)
            answered = await structured(client, "ask_glm",
                                        {"question": "Is the retry budget per call sound?"})
            event.remove(engine, "commit", committed)
            written = list(commits)
            trace = await structured(client, "trace_get", {"trace_id": answered["trace_id"]})
            stats = await structured(client, "stats", {"window": "24h"})
            turns = await structured(client, "session_stats", {})
        assert answered["status"] == "ok", answered
        assert written == ["commit"], written
        assert trace["trace"]["trace_id"] == answered["trace_id"] and trace["trace"]["events"]
        assert stats["totals"]["calls"] >= 2
        assert turns["status"] == "ok"
    finally:
        await app.aclose()
        pg_server.drop(url)


async def test_a_store_that_fails_inside_the_shared_transaction_loses_only_its_own_record(
        fp: FakeProvider, pg_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub's table refuses writes on PostgreSQL: the answered call's audit record and trace are
    still committed (the shared transaction is written again store by store), and the trace names
    the hub as the one store that failed."""
    monkeypatch.setenv("ASK_FABLE_GLM_API_KEY", TEST_KEY)
    monkeypatch.setenv("ASK_FABLE_GLM_BASE_URL", fp.base_url)
    url = pg_server.fresh_database()
    app = App(load_settings(database_url=url, hub=True, cache=False))
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            warm = await structured(client, "ask_glm", {"question": "Warm the pool: is the queue bounded?"})
            assert warm["status"] == "ok", warm
            with app.resources.engines.postgres(
                    url, connect_timeout=1, pool_size=app.settings.database_pool_size,
                    statement_timeout=app.settings.database_statement_timeout).begin() as conn:
                conn.execute(text("ALTER TABLE ask_fable_hub.turns ADD CONSTRAINT no_more CHECK (id < 0) "
                                  "NOT VALID"))
            answered = await structured(client, "ask_glm", {"question": "Is the retry budget sound?"})
            trace = await structured(client, "trace_get", {"trace_id": answered["trace_id"]})
            stats = await structured(client, "stats", {"window": "24h"})
        assert answered["status"] == "ok", answered
        errors = [e["attrs"] for e in trace["trace"]["events"] if e["name"] == "store.error"]
        assert errors == [{"store": "hub", "error": "IntegrityError"}], errors
        assert stats["totals"]["calls"] == 2, stats
    finally:
        await app.aclose()
        pg_server.drop(url)
