"""Replicas on one database: 300 concurrent asks at 200 ms backend latency through 1 and 3 replicas,
and the per-call cost of the store on PostgreSQL next to SQLite, all in one run.

Each replica is the installed ``ask-fable serve --http --toolsets all`` in its own process, as in
a deployment (``tests/replicas/harness.py`` starts them); ``ask_glm`` points at the loopback fake
provider, which answers each request after 200 ms. For each database (SQLite files in one shared
state directory; PostgreSQL from the ``pgserver`` wheel when the PostgreSQL stores and driver are
installed) and each replica count (1, 3):

- **load**: ten clients per replica count, each with its own key (one key may have only its share
  of a replica's requests in progress) and holding one MCP client per replica, handing
  calls to them in turn, list the tools, then release 300 ``ask_glm`` calls at once (every
  question distinct, so the cache never answers). Printed: wall time, its ratio to one backend
  call, the calls refused as busy (a replica serves ``ASK_FABLE_HTTP_MAX_REQUESTS``, 256, at once
  and answers the rest 503 with ``Retry-After``) and any other errors.
- **store cost** (1 replica, one client, calls one after another): ``context_write`` (one stored
  write on top of what every call stores: its trace and audit, the key check) and
  ``ask_fable_help(topic="sidecar")`` (only what every call stores), mean per call. Printed:
  PostgreSQL's figure over SQLite's.

Target: no errors, and three replicas refuse none as busy. The walls are not a target: they depend
on the machine (clients, replicas and the database share its cores here, so three replicas cannot
beat one on CPU).

Run: python benchmarks/bench_replicas.py [calls]
"""

from __future__ import annotations

import logging
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.fake_provider import FakeProvider
from tests.replicas.harness import (
    Cluster,
    PostgresStore,
    RoundRobin,
    SharedStore,
    SqliteStore,
    at_once,
    postgres_available,
    running_cluster,
)

LATENCY = 0.2
CALLS = 300
CLIENTS = 10
STORE_CALLS = 150


@dataclass
class Load:
    replicas: int
    wall: float
    #: Calls refused because the replica was serving ASK_FABLE_HTTP_MAX_REQUESTS already (503).
    busy: int
    errors: list[str]


@dataclass
class StoreCost:
    write_ms: float
    help_ms: float


async def run_load(cluster: Cluster, keys: list[str], calls: int) -> Load:
    """``calls`` asks at once from :data:`CLIENTS` clients spread over every replica, each with its own
    key (one key may have only its share of a replica's requests in progress)."""
    errors: list[str] = []
    busy = 0
    tag = uuid.uuid4().hex[:8]
    async with AsyncExitStack() as stack:
        robins: list[RoundRobin] = [await stack.enter_async_context(cluster.clients(key)) for key in keys]
        for robin in robins:
            for client in robin.clients:
                await client.list_tools()

        async def ask(i: int) -> None:
            nonlocal busy
            try:
                result = await robins[i % CLIENTS].call("ask_glm", {"question": f"{tag} call {i}: safe?"})
            except MCPError as exc:
                if "ASK_FABLE_HTTP_MAX_REQUESTS" in exc.message:
                    busy += 1
                else:
                    errors.append(repr(exc)[:200])
                return
            if result["status"] != "ok":
                errors.append(str(result)[:200])

        started = time.perf_counter()
        await at_once(calls, ask, timeout=300)
        wall = time.perf_counter() - started
    return Load(len(cluster.live), wall, busy, errors)


async def store_cost(cluster: Cluster, key: str) -> StoreCost:
    """Mean per-call latency of a stored write and of a call storing only its own records."""
    async with cluster.clients(key, cluster.live[:1]) as robin:
        for i in range(10):  # warm the connections and the replica's imports
            await robin.call("context_write", {"key": f"warm-{i}", "value": "v"})
            await robin.call("ask_fable_help", {"topic": "sidecar"})
        writes, helps = [], []
        for i in range(STORE_CALLS):
            started = time.perf_counter()
            await robin.call("context_write", {"key": f"k-{i}", "value": f"fact {i}"})
            writes.append(time.perf_counter() - started)
            started = time.perf_counter()
            await robin.call("ask_fable_help", {"topic": "sidecar"})
            helps.append(time.perf_counter() - started)
    return StoreCost(statistics.mean(writes) * 1000, statistics.mean(helps) * 1000)


@contextmanager
def database(kind: str, root: Path, server: Any) -> Iterator[SharedStore]:
    """A fresh store of ``kind`` under ``root`` (PostgreSQL: a database on ``server``)."""
    yield SqliteStore(root) if kind == "sqlite" else PostgresStore(server)


def measure(kind: str, provider: FakeProvider, server: Any, calls: int) -> tuple[list[Load], StoreCost]:
    """Every figure for one database."""
    loads: list[Load] = []
    cost: StoreCost | None = None
    for replicas in (1, 3):
        with tempfile.TemporaryDirectory(prefix=f"ask-fable-bench-{kind}-") as tmp, \
                database(kind, Path(tmp), server) as store, \
                running_cluster(Path(tmp), store, provider.base_url, replicas,
                                ASK_FABLE_HUB="0") as cluster:
            keys = [cluster.create_key(f"bench {n}")[1] for n in range(CLIENTS)]
            loads.append(anyio.run(run_load, cluster, keys, calls))
            if replicas == 1:
                cost = anyio.run(store_cost, cluster, keys[0])
    assert cost is not None
    return loads, cost


def main() -> int:
    """Run the load and the store cost on each available database; print the ratios."""
    logging.disable(logging.INFO)
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else CALLS
    kinds = ["sqlite"]
    reason = postgres_available()
    if reason is None:
        kinds.append("postgres")
    results: dict[str, tuple[list[Load], StoreCost]] = {}
    with FakeProvider() as provider:
        provider.enqueue("anthropic", times=None, delay=LATENCY)
        if reason is None:
            from tests.fakes.postgres import running_server

            server_context: Any = running_server()
        else:
            server_context = nullcontext(None)
        with server_context as server:
            for kind in kinds:
                results[kind] = measure(kind, provider, server, calls)
    failed = False
    shed = False
    print(f"{calls} concurrent ask_glm through replicas on one database, backend latency "
          f"{LATENCY * 1000:.0f} ms, {CLIENTS} clients")
    for kind, (loads, _cost) in results.items():
        for load in loads:
            print(f"  {kind:<8} {load.replicas} replica{'s' if load.replicas > 1 else ' '}: wall "
                  f"{load.wall * 1000:,.0f} ms (ratio {load.wall / LATENCY:.2f} of one backend call), "
                  f"refused as busy {load.busy}, errors {len(load.errors)}")
            for error in load.errors[:3]:
                print(f"      {error}")
            failed = failed or bool(load.errors)
            shed = shed or (load.replicas > 1 and load.busy > 0)
        one, three = loads
        print(f"  {kind:<8} 3 replicas / 1 replica: ratio {three.wall / one.wall:.2f}")
    print(f"per-call store cost, 1 replica, {STORE_CALLS} calls each, one after another")
    for kind, (_loads, cost) in results.items():
        print(f"  {kind:<8} context_write {cost.write_ms:.1f} ms, "
              f"ask_fable_help(sidecar) {cost.help_ms:.1f} ms")
    if "postgres" in results:
        sqlite, postgres = results["sqlite"][1], results["postgres"][1]
        print(f"  PostgreSQL / SQLite: context_write ratio {postgres.write_ms / sqlite.write_ms:.2f}, "
              f"ask_fable_help ratio {postgres.help_ms / sqlite.help_ms:.2f}")
    else:
        print(f"  PostgreSQL not measured: {reason}")
    met = not failed and not shed
    print(f"verdict: {'met' if met else 'missed'} (target: no errors; 3 replicas refuse none as busy)")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
