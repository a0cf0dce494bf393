"""Server CPU per call on each database: calls one after another through one real
``ask-fable serve --http``, on SQLite and on PostgreSQL, next to a bare forwarding ``MCPServer``.

Three servers run side by side, each in its own process on a loopback port, against one loopback
fake provider that answers at once:

- **SQLite**: the installed ``ask-fable serve --http --toolsets all`` on a fresh state directory
  (``tests/replicas/harness.py`` starts it, with its default settings: audit, trace, hub, cache);
- **PostgreSQL**: the same, its stores in a fresh database of the PostgreSQL that the ``pgserver``
  wheel ships (skipped when this build has no PostgreSQL stores or the wheel is missing);
- **bare**: ``bench_http_concurrency``'s bare ``MCPServer`` forwarding ``ask_glm`` to the same
  fake provider (no key, no records), the floor the MCP SDK and the HTTP stack set.

One MCP client per server makes ``CALLS`` ``ask_glm`` calls one after another (every question
distinct, so the cache never answers) after ``WARM`` unmeasured ones; the servers take turns for
``ROUNDS`` rounds, so a busy moment of the machine falls on each. Printed, medians of the rounds:
the server process's CPU seconds per call (all its threads, user + system, from
``/proc/<pid>/stat`` before and after), for PostgreSQL also the CPU its server processes spent (the
postmaster and every backend), and the wall per call; with the ratio of each to the bare
forwarder's CPU. No target: this is a before/after measure, run in each tree.

The script imports the tree it runs in: the working directory when it is a checkout of ask-fable
(``src/ask_fable`` and ``tests/`` in it), else the checkout holding this file, and starts the
``ask-fable`` installed next to the interpreter. To measure another tree, run its interpreter from
its directory: ``cd OTHER && .venv/bin/python /path/to/bench_store_cpu.py`` (PostgreSQL's own CPU is
read through ``tests/fakes/postgres.PostgresServer.processes``, which a tree from before this script
lacks: copy that method into it for such a run).

Run: python benchmarks/bench_store_cpu.py [calls] [rounds]
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve()
ROOT = Path.cwd() if (Path.cwd() / "src" / "ask_fable").is_dir() and (Path.cwd() / "tests").is_dir() \
    else HERE.parents[1]
sys.path.insert(0, str(ROOT))

CALLS = 100
ROUNDS = 3
WARM = 20


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far, all its threads (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu(server: Any) -> float:
    """CPU seconds the PostgreSQL server's live processes have spent (backends that exited are lost,
    but the servers' pooled connections stay open through a round)."""
    total = 0.0
    for pid in server.processes():
        with suppress(OSError):  # a backend that has just exited
            total += cpu_seconds(pid)
    return total


@dataclass
class Target:
    """One server under test and its measured rounds."""

    name: str
    pid: int
    url: str
    key: str | None
    #: CPU seconds of the database's own processes so far (PostgreSQL only).
    db_cpu: Callable[[], float] | None = None
    cpu: list[float] = field(default_factory=list)
    db: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    async def round(self, calls: int, measured: bool) -> None:
        """``calls`` asks one after another from one MCP client."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        tag = uuid.uuid4().hex[:8]
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http, \
                Client(streamable_http_client(f"{self.url}/mcp", http_client=http), mode="legacy") as client:
            await client.list_tools()
            await client.call_tool("ask_glm", {"question": f"{tag} warm: safe?"})
            cpu, db = cpu_seconds(self.pid), self.db_cpu() if self.db_cpu else 0.0
            started = time.perf_counter()
            for i in range(calls):
                result = await client.call_tool("ask_glm", {"question": f"{tag} call {i}: is this safe?"})
                status = (result.structured_content or {}).get("status")
                if result.is_error or status != "ok":
                    self.errors.append(str(result.structured_content)[:200])
            wall = time.perf_counter() - started
            cpu_after, db_after = cpu_seconds(self.pid), self.db_cpu() if self.db_cpu else 0.0
        if measured:
            self.cpu.append((cpu_after - cpu) / calls * 1000)
            self.db.append((db_after - db) / calls * 1000)
            self.wall.append(wall / calls * 1000)


@contextmanager
def bare_forwarder(upstream: str) -> Iterator[Target]:
    """``bench_http_concurrency``'s bare forwarding ``MCPServer``, in its own process (the measured
    tree's script when it has one)."""
    from bench_http_concurrency import free_port, running

    port = free_port()
    script = ROOT / "benchmarks" / "bench_http_concurrency.py"
    if not script.exists():
        script = HERE.with_name("bench_http_concurrency.py")
    command = [sys.executable, str(script), "--serve-bare", str(port), upstream]
    with running(command, dict(os.environ), port) as proc:
        yield Target("bare", proc.pid, f"http://127.0.0.1:{port}", None)


def main(argv: list[str]) -> int:
    """Start the provider, the servers and the database; run the rounds; print the figures."""
    from tests.fakes.fake_provider import FakeProvider
    from tests.replicas.harness import PostgresStore, SqliteStore, postgres_available, running_cluster

    import ask_fable

    logging.disable(logging.INFO)
    calls = int(argv[0]) if argv else CALLS
    rounds = int(argv[1]) if len(argv) > 1 else ROUNDS
    reason = postgres_available()
    print(f"tree {ROOT} (ask_fable from {Path(ask_fable.__file__).parent})")
    with ExitStack() as stack:
        provider = stack.enter_context(FakeProvider())
        provider.enqueue("anthropic", times=None)
        targets: list[Target] = [stack.enter_context(bare_forwarder(f"{provider.base_url}/api/anthropic"))]
        stores: list[tuple[str, Any, Any]] = []
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ask-fable-bench-cpu-")))
        stores.append(("SQLite", SqliteStore(tmp / "sqlite"), None))  # its state lives under that root
        if reason is None:
            from tests.fakes.postgres import running_server

            server = stack.enter_context(running_server())
            stores.append(("PostgreSQL", PostgresStore(server), server))
        for name, store, server in stores:
            (tmp / name.lower()).mkdir()
            cluster = stack.enter_context(running_cluster(tmp / name.lower(), store, provider.base_url, 1))
            key = cluster.create_key("bench")[1]
            db_cpu = (lambda s=server: postgres_cpu(s)) if server is not None else None
            targets.append(Target(name, cluster.replicas[0].pid, cluster.replicas[0].url, key, db_cpu))
        for target in targets:
            anyio.run(target.round, WARM, False)
        for number in range(rounds):  # the servers take turns, in an order that changes each round
            order = targets if number % 2 == 0 else targets[::-1]
            for target in order:
                anyio.run(target.round, calls, True)
    print(f"ask_glm one call after another through one MCP client, {calls} calls a round, "
          f"median of {rounds} rounds after {WARM} warm-up calls")
    bare_cpu = statistics.median(targets[0].cpu)
    for target in targets:
        cpu = statistics.median(target.cpu)
        rounds_text = " / ".join(f"{c:.2f}" for c in target.cpu)
        line = (f"  {target.name:<10} server CPU {cpu:5.2f} ms/call (rounds {rounds_text}; "
                f"{cpu / bare_cpu:.2f}× bare, {cpu - bare_cpu:+.2f} ms)")
        if target.db_cpu is not None:
            db = statistics.median(target.db)
            line += f", PostgreSQL processes {db:.2f} ms/call"
        line += f", wall {statistics.median(target.wall):.2f} ms/call, errors {len(target.errors)}"
        print(line)
        for error in target.errors[:3]:
            print(f"      {error}")
    if reason is not None:
        print(f"  PostgreSQL not measured: {reason}")
    return 1 if any(t.errors for t in targets) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
