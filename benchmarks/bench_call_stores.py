"""What a served call's store work costs: the CPU its store calls take in their worker threads.

One ``App`` per store (SQLite files in a fresh state directory, then a fresh database of the
``pgserver`` wheel's PostgreSQL, ``tests/fakes/postgres.py``), the local caller's quotas counted
with limits raised (``local_quota``: every call admitted, estimated and settled), cache and hub off,
``--toolsets single``. An in-process MCP client makes ``CALLS`` concurrent ``ask_glm`` calls a round
against the fake provider (answering after 50 ms), ``ROUNDS`` rounds after two warm-up rounds.

Printed per store: the worker-thread CPU of every store call (``App.run_store``: admissions, the
records and settlements of the calls that finish together) per call, how many store calls (thread
hops) a hundred calls take, and the part of that CPU each store's write takes (the audit log or
table, the traces, the quota ledger); the process's CPU per call (client included) for scale. The
worker-thread figures move far less with the machine's load than a wall or a whole process's CPU.

No target: a before/after measure. To measure another tree, put its sources first:
``PYTHONPATH=OTHER/src python benchmarks/bench_call_stores.py``.

Run: python benchmarks/bench_call_stores.py [rounds] [--sqlite-only]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.sandbox import throwaway_home

CALLS = 100
ROUNDS = 8
LATENCY = 0.05


class StoreClock:
    """Worker-thread CPU of the App's store calls, and of each store's write among them."""

    def __init__(self) -> None:
        self.on = False
        self.hops = 0
        self.cpu = 0.0
        self.parts: dict[str, float] = {}

    def reset(self) -> None:
        """Start counting (after the warm-up)."""
        self.on, self.hops, self.cpu, self.parts = True, 0, 0.0, {}

    def install(self) -> None:
        """Time ``App.run_store`` and the stores' group writes (this process only)."""
        from ask_fable.core.app import App
        from ask_fable.stores import audit, audit_index, quotas, traces

        clock = self
        run_store = App.run_store

        async def timed_run_store(app: App, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            def timed() -> Any:
                started = time.thread_time()
                try:
                    return fn(*args, **kwargs)
                finally:
                    if clock.on:
                        clock.cpu += time.thread_time() - started
                        clock.hops += 1
            return await run_store(app, timed)

        App.run_store = timed_run_store  # type: ignore[method-assign]
        for owner, name, label in ((audit_index.AuditTable, "append_many", "audit table"),
                                   (audit.AuditLog, "append_many", "audit log"),
                                   (traces.TraceStore, "record_many", "traces"),
                                   (quotas.QuotaLedger, "apply", "quotas")):
            self._time(owner, name, label)

    def _time(self, owner: type, name: str, label: str) -> None:
        method = getattr(owner, name)
        clock = self

        def timed(store: object, *args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return method(store, *args, **kwargs)
            finally:
                if clock.on:
                    clock.parts[label] = clock.parts.get(label, 0.0) + time.thread_time() - started

        setattr(owner, name, timed)


async def measure(database_url: str | None, rounds: int, clock: StoreClock) -> str:
    """One store's line (see the module docstring)."""
    from mcp import Client
    from tests.e2e.test_mode_tools import answer, http_settings
    from tests.fakes.fake_provider import FakeProvider

    from ask_fable.config import load_settings
    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server

    extra: dict[str, Any] = {"database_url": database_url} if database_url else {}
    with FakeProvider() as fp:
        fp.enqueue("anthropic", text=answer("Use a queue."), match="glm-5.2", times=None, delay=LATENCY)
        app = App(load_settings(**http_settings(fp, local_quota=True, key_rpm=10**7, key_concurrent=10**6,
                                                key_daily_usd=10**6, **extra)))
        process: list[float] = []
        async with Client(build_server(app, toolsets=["single"])) as client:
            async def one(i: int) -> None:
                asked = await client.call_tool("ask_glm", {"question": f"Poll or queue, {i}?"})
                result = asked.structured_content
                assert result is not None and result["status"] == "ok", result

            async def round_() -> None:
                async with anyio.create_task_group() as group:
                    for i in range(CALLS):
                        group.start_soon(one, i)

            await round_()
            await round_()
            clock.reset()
            for _ in range(rounds):
                started = time.process_time()
                await round_()
                process.append((time.process_time() - started) / CALLS)
            clock.on = False
        await app.aclose()
    calls = rounds * CALLS
    parts = ", ".join(f"{label} {cpu / calls * 1000:.3f}" for label, cpu in sorted(clock.parts.items()))
    return (f"worker-thread store CPU {clock.cpu / calls * 1000:.3f} ms/call ({parts}); "
            f"{clock.hops / calls * 100:.1f} store calls per 100 calls; process CPU (client included) "
            f"median {statistics.median(process) * 1000:.2f} ms/call")


def main(argv: list[str]) -> int:
    """SQLite, then PostgreSQL when ``pgserver`` is installed."""
    numbers = [a for a in argv if a.isdigit()]
    rounds = int(numbers[0]) if numbers else ROUNDS
    with throwaway_home():
        import ask_fable

        clock = StoreClock()
        clock.install()
        print(f"{CALLS} concurrent ask_glm a round at {LATENCY * 1000:.0f} ms, {rounds} rounds after two; "
              f"ask_fable from {Path(ask_fable.__file__).parent}")
        print(f"  SQLite      {anyio.run(measure, None, rounds, clock)}")
        if "--sqlite-only" in argv:
            return 0
        try:
            import pgserver  # noqa: F401
        except ImportError:
            print("  PostgreSQL: skipped (pip install pgserver)")
            return 0
        from tests.fakes.postgres import running_server

        with running_server() as server:
            print(f"  PostgreSQL  {anyio.run(measure, server.fresh_database(), rounds, clock)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
