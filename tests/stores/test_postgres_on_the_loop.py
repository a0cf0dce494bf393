"""PostgreSQL stores on psycopg's asyncio connections: the server's store calls are awaited on its
event loop, blocking callers elsewhere still work, and a cancelled call gives its connection back."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from mcp import Client

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.errors import Unavailable
from ask_fable.stores.context import context_store_for
from ask_fable.stores.db import Connections
from ask_fable.stores.loop_bridge import await_io, call_blocking, run_blocking
from ask_fable.surface.server import build_server
from tests.e2e.helpers import TEST_KEY, structured
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.postgres import PostgresServer


@asynccontextmanager
async def every_worker_thread_taken() -> AsyncIterator[None]:
    """Hold every token of this loop's worker-thread limiter: a call that needs a thread waits."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens = 1
    holder = object()
    await limiter.acquire_on_behalf_of(holder)
    try:
        yield
    finally:
        limiter.release_on_behalf_of(holder)


async def test_tool_calls_on_postgresql_need_no_worker_thread(
        fp: FakeProvider, pg_server: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Context, a kept conversation, traces, stats and saved settings all complete while no worker
    thread can be had: their store calls are awaited on the server's event loop."""
    monkeypatch.setenv("ASK_FABLE_GLM_API_KEY", TEST_KEY)
    monkeypatch.setenv("ASK_FABLE_GLM_BASE_URL", fp.base_url)
    url = pg_server.fresh_database()
    app = App(load_settings(database_url=url, cache=True))
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            await structured(client, "context_write", {"key": "warm", "value": "up"})  # opens the pool
            with anyio.fail_after(60):
                async with every_worker_thread_taken():
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
    settings = load_settings(database_url=url, database_pool_size=1)
    pools = Connections()
    store = context_store_for(settings, connections=pools)
    started = threading.Event()

    def slow_write() -> None:
        with store.db.write() as conn:
            conn.execute("CREATE TABLE half_done (x INTEGER)")
            started.set()
            conn.execute("SELECT pg_sleep(30)")

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(run_blocking, slow_write)
                while not started.is_set():
                    await anyio.sleep(0.01)
                group.cancel_scope.cancel()
            await run_blocking(store.write, "local", "after", "v")
            got = await run_blocking(store.read, "local", "after")

            def half_done() -> object:
                with store.db.read() as conn:
                    return conn.execute("SELECT to_regclass('half_done')").fetchone()[0]

            assert await run_blocking(half_done) is None
        assert got is not None and got["value"] == "v"
    finally:
        await pools.aclose()
        pg_server.drop(url)


def test_blocking_callers_share_the_io_loop_and_see_each_others_writes(pg_server: PostgresServer) -> None:
    """Commands and worker threads call stores as plain blocking code: from several threads at once,
    each write is read back by another thread, statement by statement or a whole call in one hop."""
    url = pg_server.fresh_database()
    pools = Connections()
    store = context_store_for(load_settings(database_url=url), connections=pools)
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            store.write("local", f"k{n}", f"v{n}")
            call_blocking(store.write, "local", f"h{n}", f"w{n}")
        except BaseException as exc:  # collected for the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert not failures
        wanted = [f"k{n}" for n in range(8)] + [f"h{n}" for n in range(8)]
        assert sorted(store.keys("local")) == sorted(wanted)
    finally:
        pools.close()
        pg_server.drop(url)


async def test_what_the_blocking_code_raises_is_raised_to_the_awaiting_caller() -> None:
    """An error inside a store call run on the loop reaches its caller as raised, and a query's own
    error reaches the blocking code that awaited it."""

    async def failing_query() -> None:
        raise Unavailable("the database is gone")

    def store_call() -> str:
        try:
            await_io(failing_query())
        except Unavailable as exc:
            return f"caught: {exc}"
        return "not raised"

    def broken_call() -> None:
        raise ValueError("a bug in the store")

    assert await run_blocking(store_call) == "caught: the database is gone"
    with pytest.raises(ValueError, match="a bug in the store"):
        await run_blocking(broken_call)


def test_an_unreachable_database_fails_a_blocking_caller_as_unavailable(tmp_path: Path) -> None:
    """Outside any loop (a command), a store on a database that does not answer fails as
    ``unavailable``, never hangs or leaks a traceback."""
    url = f"postgresql://ask:secret-pw@/nowhere?host={tmp_path}"
    pools = Connections()
    try:
        with pytest.raises(Unavailable) as down:
            context_store_for(load_settings(database_url=url, database_connect_timeout=1),
                              connections=pools).list("local")
        assert "secret-pw" not in str(down.value.to_result())
    finally:
        pools.close()
