"""Benchmark: `stats` over 100,000 audit records (target ≤ 0.5 s), as a ratio to plain JSON parsing.

Run: /tmp/venv/bin/python benchmarks/bench_stats.py [N]
Writes N records (default 100,000) through AuditLog into a temp dir (rotation included), then
times, against a baseline that only reads the same files and json-parses every line, the path the
stats tool takes (AuditTrail.stats: the summary index, then SQL): cold (building the index from
nothing), then warm (index up to date, the steady state), then after 1,000 new records.
Prints milliseconds and ratios; exits non-zero when a warm query is over the target.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

from ask_fable.stores.audit import AuditLog
from ask_fable.stores.audit_index import AuditIndex
from ask_fable.stores.audit_trail import AuditTrail

TARGET_S = 0.5
PROVIDERS = [("glm", "glm-5.2"), ("kimi", "kimi-code/k3"), ("deepseek", "deepseek-v4-pro"),
             ("claude", "claude-fable-5-1"), ("codex", "gpt-5.6-sol")]


def make_record(i: int, now: float, rng: random.Random) -> dict:
    provider, model = rng.choice(PROVIDERS)
    status = rng.choices(["ok", "error", "refused"], weights=[90, 7, 3])[0]
    record = {
        "ts": now - rng.uniform(0, 10 * 86400), "trace_id": f"{i:024x}", "tool": f"ask_{provider}",
        "mode": "single", "status": status, "kind": "timeout" if status == "error" else None,
        "allowed": status != "refused", "stage": "model", "model": model, "provider": provider,
        "session": f"s{i % 50}", "project": f"p{i % 5}", "agent_id": "agent",
        "elapsed_ms": rng.uniform(50, 9000), "cached": rng.random() < 0.1,
        "question_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "question_len": 420,
        "context_sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "context_len": 18000,
    }
    if i % 5 == 0:
        record.update(mode="council", tool="ask_council", model="claude-fable-5-1", provider="claude",
                      quorum="3/4", consensus="agree", synth_fallback=False,
                      members=[{"provider": p, "model": m, "status": "ok", "kind": None,
                                "elapsed_ms": rng.uniform(50, 9000)} for p, m in PROVIDERS[:4]])
    return record


def best_of(fn, runs: int = 3) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def report(label: str, took: float, base: float) -> None:
    print(f"{label:<38}: {took * 1000:6.0f} ms  ratio {took / base:5.2f}x")


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rng = random.Random(7)
    now = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        log = AuditLog(Path(tmp) / "decisions.jsonl", max_bytes=20 * 1024 * 1024)
        for i in range(n):
            log.append(make_record(i, now, rng))
        files = log.files()

        def baseline() -> None:
            for path in files:
                with open(path, "rb") as handle:
                    for line in handle:
                        json.loads(line)

        base = best_of(baseline)
        print(f"records={n} files={len(files)} baseline json parse: {base * 1000:.0f} ms")
        trail = AuditTrail(log)
        started = time.perf_counter()
        AuditIndex(log).refresh()
        cold = time.perf_counter() - started
        report("index build (cold, once)", cold, base)
        worst = 0.0
        for window, by in (("all", "model"), ("all", "provider"), ("all", "day"), ("24h", "model")):
            took = best_of(lambda w=window, b=by: trail.stats("local", window=w, by=b))
            worst = max(worst, took)
            report(f"stats window={window:>3} by={by:<8}", took, base)
        for i in range(n, n + 1000):
            log.append(make_record(i, now, rng))
        started = time.perf_counter()
        trail.stats("local", window="all", by="model")
        fresh = time.perf_counter() - started
        worst = max(worst, fresh)
        report("stats after 1,000 new records", fresh, base)
        print(f"worst warm {worst * 1000:.0f} ms (target ≤ {TARGET_S * 1000:.0f} ms)")
        return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
