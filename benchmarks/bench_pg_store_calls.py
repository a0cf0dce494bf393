"""Store calls on PostgreSQL: awaited on the event loop (what the server does) next to the same store
code on a sync ``psycopg_pool.ConnectionPool`` in worker threads, measured in one run.

The store is the context bus (``stores/context.py``), one schema in a fresh database of the
PostgreSQL that the ``pgserver`` wheel ships. A call is one ``write`` (a transaction of three
statements) then one ``read``. Four ways to run the same store code:

- **loop**: ``stores/loop_bridge.run_blocking`` on the server's event loop, psycopg's asyncio pool
  (``App.run_store`` on PostgreSQL);
- **threads + sync pool** (the baseline): the store's ``Database`` on a sync psycopg pool, each call
  in an anyio worker thread;
- **threads + I/O loop**: the asyncio store called from worker threads, each query a hop to the
  process's I/O loop (how commands and daemon threads call it);
- **SQLite**: a SQLite file in WAL mode, each call in a worker thread (for scale).

Each runs ``SEQUENTIAL`` calls one after another (mean per call) and ``CONCURRENT`` calls at once
(wall time), with a pool of ``POOL_SIZE`` connections. Printed: each figure and its ratio to the
baseline's. Target: the loop no slower than the baseline (ratio ≤ 1.10 on both figures).

Run: python benchmarks/bench_pg_store_calls.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

T = TypeVar("T")
SEQUENTIAL = 300
CONCURRENT = 200
POOL_SIZE = 10
ROUNDS = 3


class SyncPgDatabase:
    """The context store's schema through a sync ``psycopg_pool.ConnectionPool``: the same
    transactions as ``PostgresDatabase`` (a checked connection, ``SET LOCAL search_path``), blocking."""

    dialect = "postgres"

    def __init__(self, url: str, store: str, size: int) -> None:
        from psycopg_pool import ConnectionPool

        from ask_fable.stores.postgres import schema_name

        self.pool: ConnectionPool[Any] = ConnectionPool(url, min_size=0, max_size=size, open=True)
        self.schema = schema_name(store)

    @contextmanager
    def _transaction(self, read_only: bool) -> Iterator[Any]:
        import psycopg

        conn = self.pool.getconn()
        try:
            self.pool.check_connection(conn)
            conn.read_only = read_only
            conn.isolation_level = (psycopg.IsolationLevel.REPEATABLE_READ if read_only
                                    else psycopg.IsolationLevel.READ_COMMITTED)
            conn.execute(f"SET LOCAL search_path TO {self.schema}")
            yield _SyncConnection(conn)
            conn.commit()
        except BaseException:
            conn.rollback()
            raise
        finally:
            self.pool.putconn(conn)

    def read(self) -> Any:
        """A read-only transaction."""
        return self._transaction(True)

    def write(self) -> Any:
        """A write transaction."""
        return self._transaction(False)

    def run_write(self, body: Callable[[Any], T]) -> T:
        """``body`` in a write transaction."""
        with self._transaction(False) as conn:
            return body(conn)

    def close(self) -> None:
        """Close the pool."""
        self.pool.close()


class _SyncConnection:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        from ask_fable.stores.postgres import _row_factory, translate

        cursor = self._conn.cursor(row_factory=_row_factory)
        cursor.execute(translate(sql), tuple(parameters))
        return cursor


Runner = Callable[[Callable[..., Any], Any], Awaitable[Any]]


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await anyio.to_thread.run_sync(lambda: fn(*args))


async def _one_call(run: Callable[..., Awaitable[Any]], store: Any, n: int) -> None:
    await run(store.write, "local", f"k{n % 50}", f"value {n}")
    await run(store.read, "local", f"k{n % 50}")


async def _measure(run: Callable[..., Awaitable[Any]], store: Any) -> tuple[float, float]:
    """(mean ms per sequential call, wall ms of the concurrent burst)."""
    for n in range(20):  # warm: connections opened, schema checked
        await _one_call(run, store, n)
    started = time.perf_counter()
    for n in range(SEQUENTIAL):
        await _one_call(run, store, n)
    sequential = (time.perf_counter() - started) * 1000 / SEQUENTIAL
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for n in range(CONCURRENT):
            group.start_soon(_one_call, run, store, n)
    return sequential, (time.perf_counter() - started) * 1000


async def _run() -> int:
    from tests.fakes.postgres import running_server

    from ask_fable.config import load_settings
    from ask_fable.stores.context import ContextStore, context_store_for
    from ask_fable.stores.db import Connections
    from ask_fable.stores.loop_bridge import run_blocking

    results: dict[str, list[tuple[float, float]]] = {}
    with running_server() as server, tempfile.TemporaryDirectory() as tmp:
        url = server.fresh_database()
        pools = Connections()
        async_store = context_store_for(load_settings(database_url=url, database_pool_size=POOL_SIZE),
                                        connections=pools)
        sync_store = ContextStore(SyncPgDatabase(url, "context", POOL_SIZE))  # type: ignore[arg-type]
        sqlite_store = ContextStore(Path(tmp) / "context.db")
        modes: dict[str, tuple[Callable[..., Awaitable[Any]], Any]] = {
            "threads + sync pool": (_in_thread, sync_store),
            "loop": (run_blocking, async_store),
            "threads + I/O loop": (_in_thread, async_store),
            "SQLite": (_in_thread, sqlite_store),
        }
        for _ in range(ROUNDS):  # interleaved, so a busy moment of the machine hits every mode
            for name, (run, store) in modes.items():
                results.setdefault(name, []).append(await _measure(run, store))
        await pools.aclose()
        sync_store.db.close()
        server.drop(url)

    base_seq = statistics.median(r[0] for r in results["threads + sync pool"])
    base_wall = statistics.median(r[1] for r in results["threads + sync pool"])
    print(f"context store calls (write + read), {SEQUENTIAL} one after another and {CONCURRENT} at once, "
          f"pool of {POOL_SIZE}, median of {ROUNDS} rounds")
    ratios: dict[str, tuple[float, float]] = {}
    for name, rounds in results.items():
        seq = statistics.median(r[0] for r in rounds)
        wall = statistics.median(r[1] for r in rounds)
        ratios[name] = (seq / base_seq, wall / base_wall)
        print(f"  {name:20} one call {seq:6.2f} ms (ratio {seq / base_seq:4.2f}), "
              f"{CONCURRENT} at once {wall:8.1f} ms (ratio {wall / base_wall:4.2f})")
    met = max(ratios["loop"]) <= 1.10
    print(f"verdict: {'met' if met else 'missed'} (target: the loop's ratios to threads + sync pool ≤ 1.10)")
    return 0


def main() -> int:
    """Run the benchmark and print its table."""
    from tests.replicas.harness import postgres_available

    if (reason := postgres_available()) is not None:
        print(f"skipped: {reason}")
        return 0
    return anyio.run(_run)


if __name__ == "__main__":
    raise SystemExit(main())
