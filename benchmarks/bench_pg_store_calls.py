"""Store calls on PostgreSQL through the stores' SQLAlchemy layer (what the server does) next to the
same statements hand-written on the bare psycopg 3 driver, measured in one run.

The store is the context bus (``stores/context.py``), its schema in a fresh database of the
PostgreSQL that the ``pgserver`` wheel ships (migrated by Alembic, as ``ask-fable db upgrade``
leaves it). A call is one ``write`` (under the default tenant caps: a transaction of four
statements) then one ``read`` (one statement in a ``REPEATABLE READ READ ONLY`` transaction). Three
ways to run it, each call in an anyio worker thread:

- **SQLAlchemy store** (what the server does): ``context_store_for(settings, engines=Engines())``
  on PostgreSQL, each store method called through ``anyio.to_thread.run_sync`` (``App.run_store``):
  statements described in SQLAlchemy Core, compiled by SQLAlchemy once per dialect and schema and
  run on the driver of a connection from SQLAlchemy's ``QueuePool`` of psycopg 3 connections
  (``stores/driver.py``), the transaction begun and committed on the driver, a liveness ping as a
  connection idle for more than ``PING_IDLE_S`` leaves the pool, the watchdog armed around each
  transaction, the key checked and the value redacted;
- **bare psycopg** (the baseline): the same statements, with the same parameters, the same
  transaction modes and the same ping rule (a connection idle for more than ``PING_IDLE_S`` is
  pinged), written out by hand on plain sync ``psycopg.Connection``s taken from a fixed set of
  ``POOL_SIZE`` (a ``queue.Queue``); no SQLAlchemy, no redaction, no key check, no watchdog. Both
  send the server the same round trips (write: ``BEGIN``, four statements, ``COMMIT``; read:
  ``BEGIN``, one statement, ``COMMIT``; calls follow each other closely, so no ping), so the ratio
  is the layer's own cost in this process. (Before the stores pinged only idle connections, both
  pinged every connection as it left the pool: one more round trip per transaction.)
- **SQLite**: the same store on a SQLite file in WAL mode (``context_store_for`` without a
  database URL), for scale;
- **SQLite, no caps**: ``ContextStore(path)`` with no tenant caps, so a write is one upsert and one
  read-back (what the previous release's script measured as its SQLite: its figure compares with
  this one, not with the row above, whose write also counts the tenant's entries and bytes).

Each runs ``SEQUENTIAL`` calls one after another (mean per call, and this process's CPU per call)
and ``CONCURRENT`` calls at once (wall time), with a pool of ``POOL_SIZE`` connections; the modes
take turns for ``ROUNDS`` rounds, so a busy moment of the machine hits each, and the medians are
printed with their ratio to the baseline's.

Target: the SQLAlchemy store within 15 % of the bare driver (ratio ≤ 1.15 on the one-call and the
200-at-once figures). Both sides make the same six and three round trips to the server; what the
store adds in this process is finding each statement's compiled form (a dict lookup), SQLAlchemy's
pool checkout, the watchdog, and the store's own checks (tenant, key, redaction, the returned
models). Through ``Connection.execute`` with SQLAlchemy's transaction objects, before
``stores/driver.py``, the execution context, cursor result and transaction objects cost about
0.07 ms of CPU per statement and per transaction; the printed CPU per call shows what is left
(``benchmarks/README.md``, row 10).

Run: python benchmarks/bench_pg_store_calls.py
"""

from __future__ import annotations

import queue
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SEQUENTIAL = 300
CONCURRENT = 200
POOL_SIZE = 10
ROUNDS = 3
TARGET = 1.15
BASELINE = "bare psycopg"
#: The stores' rule (``stores/engines.PING_IDLE_S``), kept here so the script runs on older trees too.
PING_IDLE_S = 2.0
SERVER = "SQLAlchemy store"

_SCHEMA = "ask_fable_context"
_META = "tenant, key, description, size_chars, created_at, updated_at"
# The statements the context store sends (from the server's statement log), schema-qualified as
# SQLAlchemy's schema_translate_map writes them.
_LOCK_TENANT = (f"INSERT INTO {_SCHEMA}.context_tenants (tenant, writes) VALUES (%s, %s) "
                f"ON CONFLICT (tenant) DO UPDATE SET writes = ({_SCHEMA}.context_tenants.writes + %s)")
_COUNT_OTHERS = (f"SELECT count(*) AS count_1, coalesce(sum(size_bytes), %s) AS coalesce_1 "
                 f"FROM {_SCHEMA}.context WHERE tenant = %s AND key != %s")
_UPSERT = (f"INSERT INTO {_SCHEMA}.context (tenant, key, value, description, size_chars, created_at, "
           f"updated_at, size_bytes) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
           f"ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value, description = "
           f"excluded.description, size_chars = excluded.size_chars, updated_at = excluded.updated_at, "
           f"size_bytes = excluded.size_bytes")
_SELECT_META = f"SELECT {_META} FROM {_SCHEMA}.context WHERE tenant = %s AND key = %s"
_SELECT_ENTRY = f"SELECT value, {_META} FROM {_SCHEMA}.context WHERE tenant = %s AND key = %s"


class BareContextStore:
    """The context store's ``write`` and ``read`` as the bare driver runs them: a fixed set of sync
    psycopg connections, the same statements and transaction modes, nothing else."""

    def __init__(self, url: str, size: int) -> None:
        import psycopg
        from psycopg.rows import dict_row

        self._free: queue.Queue[Any] = queue.Queue()
        for _ in range(size):
            # Autocommit, with each transaction begun and committed explicitly: the ping then runs
            # outside a transaction, as the engine's does.
            self._free.put(psycopg.connect(url, row_factory=dict_row, autocommit=True))
        self._isolation = psycopg.IsolationLevel
        self._answered: dict[int, float] = {}

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        conn = self._free.get()
        try:
            if time.monotonic() - self._answered.get(id(conn), 0.0) >= PING_IDLE_S:
                conn.execute(";")  # the same liveness check the engine makes at checkout
            conn.read_only = not write
            conn.isolation_level = (self._isolation.READ_COMMITTED if write
                                    else self._isolation.REPEATABLE_READ)
            with conn.transaction():
                yield conn
            self._answered[id(conn)] = time.monotonic()
        finally:
            self._free.put(conn)

    def write(self, tenant: str, key: str, value: str, description: str = "") -> dict[str, Any]:
        """Upsert ``value`` under the tenant's ``key`` after the cap check; its metadata."""
        now = time.time()
        size = len(value.encode("utf-8", "surrogatepass"))
        with self._transaction(True) as conn:
            conn.execute(_LOCK_TENANT, (tenant, 1, 1))
            conn.execute(_COUNT_OTHERS, (0, tenant, key)).fetchone()
            conn.execute(_UPSERT, (tenant, key, value, description, len(value), now, now, size))
            row: dict[str, Any] = conn.execute(_SELECT_META, (tenant, key)).fetchone()
        return row

    def read(self, tenant: str, key: str) -> dict[str, Any] | None:
        """The tenant's entry under ``key``, or ``None``."""
        with self._transaction(False) as conn:
            row: dict[str, Any] | None = conn.execute(_SELECT_ENTRY, (tenant, key)).fetchone()
        if row is not None:
            row["age_s"] = round(max(0.0, time.time() - row["updated_at"]), 3)
        return row

    def close(self) -> None:
        """Close every connection."""
        while not self._free.empty():
            self._free.get_nowait().close()


async def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``App.run_store``: one worker-thread hop per store call."""
    return await anyio.to_thread.run_sync(lambda: fn(*args))


async def _one_call(run: Callable[..., Awaitable[Any]], store: Any, n: int) -> None:
    await run(store.write, "local", f"k{n % 50}", f"value {n}")
    await run(store.read, "local", f"k{n % 50}")


async def _measure(run: Callable[..., Awaitable[Any]], store: Any) -> tuple[float, float, float]:
    """(mean ms per sequential call, this process's CPU ms per sequential call, wall ms of the burst)."""
    for n in range(20):  # warm: connections opened, schema checked, statements compiled
        await _one_call(run, store, n)
    started, cpu = time.perf_counter(), time.process_time()
    for n in range(SEQUENTIAL):
        await _one_call(run, store, n)
    sequential = (time.perf_counter() - started) * 1000 / SEQUENTIAL
    cpu_per_call = (time.process_time() - cpu) * 1000 / SEQUENTIAL
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for n in range(CONCURRENT):
            group.start_soon(_one_call, run, store, n)
    return sequential, cpu_per_call, (time.perf_counter() - started) * 1000


async def _run() -> int:
    from tests.fakes.postgres import running_server

    from ask_fable.config import load_settings
    from ask_fable.stores.context import ContextStore, context_store_for
    from ask_fable.stores.engines import Engines

    results: dict[str, list[tuple[float, float, float]]] = {}
    with running_server() as server, tempfile.TemporaryDirectory() as tmp:
        url = server.fresh_database()
        pg_engines, sqlite_engines = Engines(), Engines()
        server_store = context_store_for(load_settings(database_url=url, database_pool_size=POOL_SIZE),
                                         engines=pg_engines)
        bare_store = BareContextStore(url, POOL_SIZE)
        sqlite_store = context_store_for(load_settings(context_path=Path(tmp) / "context.db"),
                                         engines=sqlite_engines)
        uncapped = ContextStore(Path(tmp) / "uncapped.db", engines=sqlite_engines)
        modes: dict[str, Any] = {BASELINE: bare_store, SERVER: server_store, "SQLite": sqlite_store,
                                 "SQLite, no caps": uncapped}
        try:
            for _ in range(ROUNDS):  # interleaved, so a busy moment of the machine hits every mode
                for name, store in modes.items():
                    results.setdefault(name, []).append(await _measure(_in_thread, store))
        finally:
            await pg_engines.aclose()
            await sqlite_engines.aclose()
            bare_store.close()
            server.drop(url)

    base = [statistics.median(r[i] for r in results[BASELINE]) for i in range(3)]
    print(f"context store calls (write + read), {SEQUENTIAL} one after another and {CONCURRENT} at once, "
          f"pool of {POOL_SIZE}, each call in a worker thread, median of {ROUNDS} rounds")
    ratios: dict[str, tuple[float, float, float]] = {}
    for name, rounds in results.items():
        seq, cpu, wall = (statistics.median(r[i] for r in rounds) for i in range(3))
        ratios[name] = (seq / base[0], cpu / base[1], wall / base[2])
        every = " / ".join(f"{r[0]:.2f}" for r in rounds)
        print(f"  {name:17} one call {seq:6.2f} ms (ratio {ratios[name][0]:4.2f}; rounds {every}), "
              f"CPU {cpu:5.2f} ms (ratio {ratios[name][1]:4.2f}), "
              f"{CONCURRENT} at once {wall:7.1f} ms (ratio {ratios[name][2]:4.2f})")
    met = max(ratios[SERVER][0], ratios[SERVER][2]) <= TARGET
    print(f"verdict: {'met' if met else 'missed'} (target: the SQLAlchemy store's one-call and "
          f"{CONCURRENT}-at-once ratios to {BASELINE} ≤ {TARGET:.2f})")
    return 0 if met else 1


def main() -> int:
    """Run the benchmark and print its table."""
    from tests.replicas.harness import postgres_available

    if (reason := postgres_available()) is not None:
        print(f"skipped: {reason}")
        return 0
    return anyio.run(_run)


if __name__ == "__main__":
    raise SystemExit(main())
