"""Warm multi-turn Fable: the second ``ask`` turn of a session against the first.

Both turns go through the ``ask`` tool (in memory) and the real Claude Code CLI bundled with
claude-agent-sdk, pointed at the loopback fake provider (run in its own process) answering at
once. The first turn of a session starts the CLI; the second reuses the session's open CLI. Each
repetition uses a new session. The ratio printed is median(second turn) / median(first turn); the
target is ≤ 0.2.

Run: python benchmarks/bench_warm_fable.py [sessions]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_call_overhead import isolate, start_fake_provider, stop_fake_provider
from mcp import Client
from tests.fakes.fixtures import bundled_claude_cli, claude_cli_env

TARGET = 0.2
SESSIONS = 5


async def timed_ask(client: Client, question: str, session: str) -> tuple[float, dict[str, Any]]:
    """Seconds one ``ask`` call took, and its structured result."""
    started = time.perf_counter()
    result = await client.call_tool("ask", {"question": question, "session": session})
    elapsed = time.perf_counter() - started
    payload = result.structured_content or {}
    if payload.get("status") != "ok":
        raise RuntimeError(f"ask answered {payload}")
    return elapsed, payload


async def main() -> int:
    """Time first and second turns of several sessions; print medians and the ratio."""
    if bundled_claude_cli() is None:
        print("warm fable: skipped (claude-agent-sdk ships no CLI here)")
        return 0
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else SESSIONS
    root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        isolate(home)
        fake, base_url = start_fake_provider(root)
        try:
            os.environ.update(claude_cli_env(base_url, home / "claude"))
            os.environ["HOME"] = str(home)
            os.environ["ASK_FABLE_CACHE"] = "false"
            from ask_fable.core.app import App
            from ask_fable.surface.server import build_server

            firsts, seconds = [], []
            async with Client(build_server(App())) as client:
                await timed_ask(client, "Warm-up: is a bounded queue right here?", "warmup")
                for i in range(sessions):
                    session = f"s{i}"
                    first, one = await timed_ask(client, f"Session {i}: bound the queue?", session)
                    second, two = await timed_ask(client, f"Session {i}: how large should it be?", session)
                    if (one.get("turn"), two.get("turn")) != (1, 2):
                        raise RuntimeError(f"turns were {one.get('turn')} and {two.get('turn')}, not 1 and 2")
                    firsts.append(first)
                    seconds.append(second)
        finally:
            stop_fake_provider(fake)
    first_ms, second_ms = statistics.median(firsts) * 1000, statistics.median(seconds) * 1000
    ratio = second_ms / first_ms
    print(f"warm multi-turn Fable (ask tool, bundled Claude Code CLI, loopback fake), median of {sessions}")
    print(f"  first turn (starts the CLI): {first_ms:7.1f} ms  (min {min(firsts) * 1000:.1f})")
    print(f"  second turn (open session):  {second_ms:7.1f} ms  (min {min(seconds) * 1000:.1f})")
    print(f"ratio {ratio:.3f} (target <= {TARGET:.2f}): {'ok' if ratio <= TARGET else 'MISSED'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
