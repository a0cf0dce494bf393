"""A council that must not wait for a hung member, under the default settings.

Three Ollama members on the loopback fake provider, every request taking 300 ms: one answers, one
answers HTTP 500 every time, one never answers. With the default settings the council returns the
healthy answer once the 500 has been given up on (its failure leaves one answer as the quorum) and
the hung member has had its straggler wait. The baseline, measured in the same run through the same
MCP client, is one call to the healthy model. Targets, each run: the answer within 5 s of the start,
the hung member reported as ``straggler``, the failing one as an error after at most 3 requests, and
no request left open at the provider after the call.

Run: python benchmarks/bench_stragglers.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_council import QUESTION, fake_and_client, timed
from mcp import Client
from tests.fakes.fake_provider import FakeProvider

REPEATS = 3
TARGET_S = 5.0
MAX_REQUESTS = 3
MEMBERS = ["ollama:healthy", "ollama:failing", "ollama:hung"]


async def one_council(fp: FakeProvider, client: Client) -> tuple[float, dict[str, str], int, int, list[str]]:
    """(wall seconds, status per member, requests to the failing member, requests left open, cut notices)."""
    fp.clear()
    fp.enqueue("ollama", status=500, error="overloaded", match="failing:cloud", times=None, delay=0.3)
    fp.enqueue("ollama", hang=True, match="hung:cloud")
    notices: list[str] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        if message and message.startswith("cut as stragglers"):
            notices.append(message)

    wall, result = await timed(client, "ask_council", {"question": QUESTION, "models": MEMBERS,
                                                      "synthesizer": "glm"}, on_progress)
    statuses = {s["token"]: f"{s['status']}" + (f"/{s['kind']}" if s.get("kind") else "")
                for s in result["sources"]}
    failing = len([r for r in fp.requests_for("ollama") if r.model == "failing:cloud"])
    still_open = len(fp.wait_until_idle(timeout=5))
    return wall, statuses, failing, still_open, notices


async def main() -> int:
    """Run the council a few times and print each run; exit 1 when a run misses a target."""
    async with fake_and_client() as (fp, client):
        await timed(client, "ask_ollama", {"question": QUESTION, "model": "healthy"})  # warm-up
        floor = statistics.median([(await timed(client, "ask_ollama", {"question": QUESTION,
                                                                        "model": "healthy"}))[0]
                                   for _ in range(REPEATS)])
        print(f"council of 3 (one answers, one HTTP 500 every time, one hangs), default settings, "
              f"requests at 300 ms; baseline (the healthy member alone) {floor * 1000:.0f} ms")
        met = True
        walls = []
        for run in range(1, REPEATS + 1):
            wall, statuses, failing, still_open, notices = await one_council(fp, client)
            walls.append(wall)
            ok = (wall <= TARGET_S and statuses.get("ollama:hung:cloud") == "straggler/straggler"
                  and statuses.get("ollama:failing:cloud") == "error/upstream_error"
                  and failing <= MAX_REQUESTS and still_open == 0)
            met = met and ok
            print(f"  run {run}: wall {wall:5.2f} s ({wall / floor:4.1f}x baseline)  {statuses}  "
                  f"failing member: {failing} requests  open after: {still_open}  {'ok' if ok else 'MISSED'}")
            for notice in notices:
                print(f"         progress: {notice}")
    verdict = "ok" if met else "MISSED"
    print(f"worst wall {max(walls):.2f} s (target <= {TARGET_S:.0f} s, straggler, error after <= "
          f"{MAX_REQUESTS} requests, 0 open): {verdict}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
