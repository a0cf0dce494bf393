"""Council fan-out under the default settings: the wall time of a council over its floor.

Every member is an Ollama model on the loopback fake provider answering in 300 ms, and the
synthesizer (GLM, on the same provider) answers in 300 ms too, so a council can finish no sooner
than one member plus the synthesis. The baseline, measured in the same run through the same MCP
client, is exactly that floor: one ``ask_ollama`` call followed by one ``ask_glm`` call. Every
setting is the default (only the keys and endpoints point at the fake, and the cache is off), so
the default bound on members at once is what is measured. The ratio printed is median(council) /
median(baseline) for 3, 5 and 8 members, with the peak number of requests in flight; the target
is ≤ 1.10.

Run: python benchmarks/bench_council.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_call_overhead import isolate
from mcp import Client
from tests.fakes.fake_provider import FakeProvider, RecordedRequest, Reply

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import build_server

LATENCY = 0.3
SIZES = (3, 5, 8)
REPEATS = 5
TARGET = 1.10
QUESTION = "How should the cache be invalidated?"
KEY = "bench-key-0123456789"

Progress = Callable[[float, float | None, str | None], Any]


@asynccontextmanager
async def fake_and_client(latency: float = LATENCY) -> AsyncIterator[tuple[FakeProvider, Client]]:
    """An isolated home, the fake provider answering every model request after ``latency`` seconds,
    and an in-memory MCP client of a server with default settings pointed at it."""
    with tempfile.TemporaryDirectory() as home, FakeProvider() as fp:
        isolate(Path(home))
        fp.default_reply["ollama"] = Reply(delay=latency)
        fp.default_reply["anthropic"] = Reply(delay=latency)
        settings = load_settings(glm_api_key=KEY, glm_base_url=fp.base_url, ollama_base_url=fp.base_url,
                                 cache=False, hub=False)
        async with Client(build_server(App(settings), toolsets=["all"])) as client:
            yield fp, client


async def timed(client: Client, tool: str, arguments: dict[str, Any],
                progress: Progress | None = None) -> tuple[float, dict[str, Any]]:
    """Wall seconds of one tool call and its structured result (which must not be an error)."""
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments, progress_callback=progress)
    wall = time.perf_counter() - started
    payload = result.structured_content or {}
    if payload.get("status") != "ok":
        raise SystemExit(f"{tool} did not answer: {payload}")
    return wall, payload


def peak_in_flight(requests: Iterable[RecordedRequest]) -> int:
    """The most requests the provider was answering at the same moment."""
    seen = list(requests)
    edges = sorted([(r.received_at, 1) for r in seen] + [(r.finished_at or r.received_at, -1) for r in seen])
    peak = current = 0
    for _, step in edges:
        current += step
        peak = max(peak, current)
    return peak


async def baseline(client: Client) -> float:
    """The floor of a council: one member's call, then one synthesizer's call."""
    member, _ = await timed(client, "ask_ollama", {"question": QUESTION, "model": "bench-0"})
    judge, _ = await timed(client, "ask_glm", {"question": QUESTION})
    return member + judge


async def council(client: Client, fp: FakeProvider, size: int) -> tuple[float, int]:
    """Wall seconds of one council of ``size`` members, and its peak requests in flight."""
    fp.clear()
    models = [f"ollama:bench-{i}" for i in range(size)]
    wall, result = await timed(client, "ask_council", {"question": QUESTION, "models": models,
                                                      "synthesizer": "glm"})
    if result.get("quorum") != f"{size}/{size}" or result.get("synthesizer") != "glm":
        raise SystemExit(f"the council of {size} degraded: quorum {result.get('quorum')}, "
                         f"synthesizer {result.get('synthesizer')}")
    return wall, peak_in_flight(fp.requests)


async def main() -> int:
    """Print each size's median ratio to the baseline; exit 1 when one misses the target."""
    async with fake_and_client() as (fp, client):
        await baseline(client)  # warm-up: imports, pooled connections
        floor = statistics.median([await baseline(client) for _ in range(REPEATS)])
        print(f"council fan-out, default settings: members and synthesis at {LATENCY * 1000:.0f} ms each; "
              f"baseline (ask_ollama then ask_glm) {floor * 1000:.1f} ms, median of {REPEATS}")
        worst = 0.0
        for size in SIZES:
            runs = [await council(client, fp, size) for _ in range(REPEATS)]
            wall = statistics.median(run[0] for run in runs)
            ratio = wall / floor
            worst = max(worst, ratio)
            print(f"  {size} members: wall {wall * 1000:7.1f} ms  peak in flight {max(r[1] for r in runs)}  "
                  f"ratio {ratio:.3f}")
    verdict = "ok" if worst <= TARGET else "MISSED"
    print(f"worst ratio {worst:.3f} (target <= {TARGET:.2f}): {verdict}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
