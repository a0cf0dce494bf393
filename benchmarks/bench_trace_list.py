"""Benchmark: `trace_list` over 100,000 traces (target ≤ 150 ms), as a ratio to a trivial query.

Run: /tmp/venv/bin/python benchmarks/bench_trace_list.py [N]
Fills a temp TraceStore with N traces (default 100,000; 3 events each) in bulk, then times
TraceStore.list with each filter and with paging, against a baseline point lookup by primary
key on the same database in the same run. Prints milliseconds and ratios; exits non-zero when
the slowest listing is over the target.
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time

from ask_fable.config import load_settings
from ask_fable.stores.traces import TraceStore

TARGET_S = 0.150
TOOLS = ["ask", "ask_glm", "ask_kimi", "ask_council", "ask_chain", "ask_codex", "ask_atlas"]
PROVIDERS = ["claude", "glm", "kimi", "deepseek", "codex", "atlas", "ollama"]


def fill(store: TraceStore, n: int) -> list[str]:
    rng = random.Random(3)
    start = time.time() - 30 * 86400
    ids = []
    traces, providers, events = [], [], []
    for i in range(n):
        ts = start + i * (30 * 86400 / n)
        trace_id = f"{int(ts * 1000):012x}{i:012x}"
        ids.append(trace_id)
        chosen = rng.sample(PROVIDERS, 3 if i % 7 == 0 else 1)
        status = "error" if rng.random() < 0.03 else "ok"
        traces.append((trace_id, ts, rng.choice(TOOLS), "single", status, None, f"s{i % 300}", f"p{i % 4}",
                       "agent", rng.uniform(100, 9000), json.dumps(chosen), json.dumps(["m"]), 0))
        providers.extend((p, ts, trace_id) for p in chosen)
        steps = enumerate(("start", "model", "end"))
        events.extend((trace_id, seq, seq * 10.0, name, "{}") for seq, name in steps)
    with store.db.write() as conn:
        conn.executemany(
            "INSERT INTO traces (trace_id, ts, tool, mode, status, kind, session, project, agent_id, "
            "elapsed_ms, providers, models, cached) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            traces,
        )
        conn.executemany("INSERT INTO trace_providers (provider, ts, trace_id) VALUES (?,?,?)", providers)
        conn.executemany(
            "INSERT INTO trace_events (trace_id, seq, t_ms, name, attrs) VALUES (?,?,?,?,?)", events
        )
    return ids


def best_of(fn, runs: int = 5) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_STATE_HOME"] = tmp
        store = TraceStore(load_settings())
        ids = fill(store, n)
        middle = ids[n // 2]

        def baseline() -> None:
            with store.db.read() as conn:
                conn.execute("SELECT trace_id FROM traces WHERE trace_id = ?", (middle,)).fetchone()

        base = best_of(baseline)
        print(f"traces={store.count()} baseline point lookup: {base * 1000:.3f} ms")
        cases = {
            "newest 20": lambda: store.list("local"),
            "limit 200": lambda: store.list("local", limit=200),
            "tool": lambda: store.list("local", tool="ask_council"),
            "status=error": lambda: store.list("local", status="error"),
            "provider": lambda: store.list("local", provider="deepseek"),
            "session": lambda: store.list("local", session="s17"),
            "project+tool": lambda: store.list("local", project="p1", tool="ask_glm"),
            "before (page)": lambda: store.list("local", before=middle),
            "provider+before": lambda: store.list("local", provider="glm", before=middle),
            "rare status+tool": lambda: store.list("local", status="error", tool="ask_chain",
                                                   provider="ollama"),
            "get (3 events)": lambda: store.get("local", middle),
        }
        worst = 0.0
        for name, fn in cases.items():
            took = best_of(fn)
            worst = max(worst, took)
            print(f"{name:<18} {took * 1000:8.3f} ms  ratio {took / base:8.1f}x")
        print(f"worst {worst * 1000:.1f} ms (target ≤ {TARGET_S * 1000:.0f} ms)")
        return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
