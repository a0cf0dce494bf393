"""Council fan-out overhead: wall time of a council over (one member's latency + synthesis latency).

Every member is a fake oracle answering in 300 ms and the synthesizer answers in 300 ms, so a
perfectly parallel council takes 600 ms. The ratio printed is wall / 600 ms; the target is ≤ 1.10.
``max_parallel`` is set to the council size (the default bound of 6 would serialize an 8-member
council into two waves, which measures the bound, not the fan-out).

Run: python benchmarks/bench_council.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.fake_oracle import FakeOracle, FakeResolver, make_mctx

from ask_fable.core.modes.council import run_council

LATENCY = 0.3
SIZES = (3, 5, 8)
REPEATS = 5
TARGET = 1.10


async def one_council(size: int) -> float:
    """Wall seconds of one council of ``size`` fake members plus a fake synthesis."""
    members = [f"ollama:bench-{i}" for i in range(size)]
    resolver = FakeResolver()
    for token in members:
        resolver.add(FakeOracle(token)).enqueue("An answer.", recommendation="apply", delay=LATENCY)
    resolver.add(FakeOracle("fable")).enqueue("The synthesis.", recommendation="apply", delay=LATENCY)
    mctx, _ = make_mctx(max_parallel=size, quiet=True)
    started = time.perf_counter()
    await run_council("How should the cache be invalidated?", "", members, mctx, resolver=resolver)
    return time.perf_counter() - started


async def main() -> int:
    """Run each size several times and print the median ratio; exit 1 when a ratio misses the target."""
    ideal = 2 * LATENCY
    worst = 0.0
    print(f"council fan-out: member {LATENCY * 1000:.0f} ms + synthesis {LATENCY * 1000:.0f} ms "
          f"(ideal {ideal * 1000:.0f} ms), median of {REPEATS}")
    for size in SIZES:
        walls = [await one_council(size) for _ in range(REPEATS)]
        wall = statistics.median(walls)
        ratio = wall / ideal
        worst = max(worst, ratio)
        print(f"  {size} members: wall {wall * 1000:7.1f} ms  ratio {ratio:.3f}")
    verdict = "ok" if worst <= TARGET else "MISSED"
    print(f"worst ratio {worst:.3f} (target <= {TARGET:.2f}): {verdict}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
