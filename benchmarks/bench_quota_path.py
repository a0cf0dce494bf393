"""The quota path alone: what admitting and settling a call costs this process, on SQLite and PostgreSQL.

One ``App`` per store, its key quotas counted as on a team server (``local_quota`` on, limits raised
so that nothing is refused). A round is ``CALLS`` calls arriving over ``SPREAD_S`` (as requests reach
a busy server), each admitted (``core/quotas.admit``: its estimate reserved), held for 200 ms (the
provider's answer), then settled with its cost — through the server's own ``QuotaBatcher``, so the
calls that arrive together share one store transaction. The same round with the quota off (nothing
admitted or settled) is the baseline, and the two take turns, ``ROUNDS`` rounds each.

Printed per store: this process's CPU per call with the quota counted and without (the difference
is the quota path: batching, the worker-thread hop, SQLAlchemy, the driver), the transactions per
hundred calls, the CPU one transaction takes in its worker thread, and on PostgreSQL the CPU its
server processes spent per call. The PostgreSQL server is the ``pgserver`` wheel's
(``tests/fakes/postgres.py``), the SQLite file in a fresh state directory.

Target: the quota path under 10 % of the server CPU one call costs (``bench_http_concurrency``: about
5 ms), i.e. at most 0.5 ms of CPU per call on either store.

Run: python benchmarks/bench_quota_path.py [rounds]
"""

from __future__ import annotations

import os
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
SPREAD_S = 0.05
HOLD_S = 0.2
ROUNDS = 6
RESERVE_USD = 0.01
COST_USD = 0.004
TARGET_MS = 0.5


def _postgres_cpu(pids: Callable[[], list[int]]) -> float:
    """CPU seconds the PostgreSQL server's processes have used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / ticks


class Counted:
    """The quota store's ``apply`` with the transactions and their worker-thread CPU counted."""

    def __init__(self, apply: Callable[..., Any]) -> None:
        self.apply, self.batches, self.cpu = apply, 0, 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return self.apply(*args, **kwargs)
        finally:
            self.cpu += time.thread_time() - started
            self.batches += 1


async def measure(database_url: str | None, rounds: int,
                  postgres_pids: Callable[[], list[int]] | None) -> dict[str, float]:
    """One store's figures (see the module docstring)."""
    from ask_fable.config import load_settings
    from ask_fable.core import quotas
    from ask_fable.core.app import App

    extra: dict[str, Any] = {"database_url": database_url} if database_url else {}
    app = App(load_settings(key_rpm=10**7, key_concurrent=10**6, key_daily_usd=10**6, local_quota=True,
                            **extra))
    quota = quotas.key_quota(None, "local", app.settings)
    assert quota is not None
    counted = Counted(app.quotas.apply)
    app.quotas.apply = counted  # type: ignore[method-assign]

    async def one(i: int, counting: bool) -> None:
        await anyio.sleep(SPREAD_S * i / CALLS)
        hold = await quotas.admit(app, quota if counting else None, reserve=RESERVE_USD)
        await anyio.sleep(HOLD_S)
        if hold is not None:
            assert await hold.settle(COST_USD)

    async def round_(counting: bool) -> float:
        started = time.process_time()
        async with anyio.create_task_group() as group:
            for i in range(CALLS):
                group.start_soon(one, i, counting)
        return time.process_time() - started

    await round_(True)  # warm-up: the schema, the connections, the statements' compiled forms
    await round_(False)
    counted.batches, counted.cpu = 0, 0.0
    on: list[float] = []
    off: list[float] = []
    pg_before = _postgres_cpu(postgres_pids) if postgres_pids else 0.0
    for number in range(rounds):
        for counting in ((True, False) if number % 2 == 0 else (False, True)):
            (on if counting else off).append(await round_(counting))
    pg_spent = _postgres_cpu(postgres_pids) - pg_before if postgres_pids else 0.0
    await app.aclose()
    calls = rounds * CALLS
    return {"on_ms": statistics.median(on) / CALLS * 1000, "off_ms": statistics.median(off) / CALLS * 1000,
            "batches_per_100": counted.batches / calls * 100,
            "batch_ms": counted.cpu / counted.batches * 1000 if counted.batches else float("nan"),
            "postgres_ms": pg_spent / calls * 1000}


def report(name: str, figures: dict[str, float]) -> float:
    """Print one store's line; return the quota path's CPU per call in ms."""
    path = figures["on_ms"] - figures["off_ms"]
    postgres = (f"; PostgreSQL's own CPU {figures['postgres_ms']:.3f} ms/call" if figures["postgres_ms"]
                else "")
    print(f"  {name:<10} CPU per call {figures['on_ms']:.3f} ms counted, {figures['off_ms']:.3f} ms off: "
          f"quota path {path:.3f} ms/call; {figures['batches_per_100']:.1f} transactions per 100 calls, "
          f"{figures['batch_ms']:.3f} ms CPU each in the worker thread{postgres}")
    return path


def main(argv: list[str]) -> int:
    """Measure SQLite, then PostgreSQL when ``pgserver`` is installed; print both and the verdict."""
    numbers = [a for a in argv if a.isdigit()]
    rounds = int(numbers[0]) if numbers else ROUNDS
    with throwaway_home():
        print(f"{CALLS} calls a round over {SPREAD_S * 1000:.0f} ms, each admitted, held "
              f"{HOLD_S * 1000:.0f} ms and settled; median of {rounds} rounds, quota counted and off in turn")
        paths = [report("SQLite", anyio.run(measure, None, rounds, None))]
        try:
            from tests.fakes.postgres import running_server
        except ImportError:
            running_server = None  # type: ignore[assignment]
        try:
            import pgserver  # noqa: F401
        except ImportError:
            print("  PostgreSQL: skipped (pip install pgserver)")
        else:
            assert running_server is not None
            with running_server() as server:
                paths.append(report("PostgreSQL", anyio.run(measure, server.fresh_database(), rounds,
                                                            server.processes)))
    worst = max(paths)
    met = worst <= TARGET_MS
    print(f"worst quota path {worst:.3f} ms of CPU per call (target ≤ {TARGET_MS} ms): "
          f"{'met' if met else 'missed'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
