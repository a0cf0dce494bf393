"""Streamable HTTP under load: 100 concurrent asks at 200 ms backend latency.

A server on an ephemeral loopback port serves every tool; ``ask_glm`` is pointed at the loopback
fake provider, which answers each request after 200 ms. 100 calls are made at once (10 clients ×
10 calls, each client with its own API key header), every question distinct so the cache never
answers. Printed: total wall, the ratio wall / 200 ms, per-call p50 / p95 latency and the error
count. Target: no errors. The ratio is reported, not enforced: client and server share one process
and two cores here, and the mcp SDK's per-request work (≈ 13 ms of CPU for a trivial call over
HTTP) dominates once 100 calls arrive at once.

Run: python benchmarks/bench_http_concurrency.py
"""

from __future__ import annotations

import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.fake_provider import FakeProvider

LATENCY = 0.2
CLIENTS = 10
CALLS_PER_CLIENT = 10


async def run_load(url: str, key: str) -> tuple[float, list[float], list[Any]]:
    """Fire every call at once; returns wall seconds, per-call latencies and the failures."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []
    failures: list[Any] = []

    async def one_client(index: int) -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http, \
                Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client:
            async def call(j: int) -> None:
                started = time.perf_counter()
                try:
                    result = await client.call_tool(
                        "ask_glm", {"question": f"Client {index}, call {j}: is this retry policy safe?"})
                except Exception as exc:
                    failures.append(repr(exc))
                    return
                latencies.append(time.perf_counter() - started)
                if result.is_error or (result.structured_content or {}).get("status") != "ok":
                    failures.append(result.structured_content)

            async with anyio.create_task_group() as group:
                for j in range(CALLS_PER_CLIENT):
                    group.start_soon(call, j)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(CLIENTS):
            group.start_soon(one_client, index)
    return time.perf_counter() - started, latencies, failures


def main() -> int:
    """Start the fake provider and the server, run the load once, print the numbers."""
    logging.disable(logging.INFO)  # the SDK logs every request at INFO; that is not what is measured
    with tempfile.TemporaryDirectory(prefix="ask-fable-bench-") as tmp:
        os.environ.update({"HOME": tmp, "XDG_STATE_HOME": f"{tmp}/state", "XDG_CONFIG_HOME": f"{tmp}/config",
                           "ASK_FABLE_QUIET": "1"})
        from ask_fable.config import load_settings
        from ask_fable.core.app import App
        from ask_fable.stores.keys import KeyStore
        from ask_fable.surface.http_app import HttpOptions, build_http_app, serve_in_thread
        from ask_fable.surface.server import build_server

        with FakeProvider() as fake:
            fake.enqueue("anthropic", times=None, delay=LATENCY)
            settings = load_settings(glm_api_key="sk-bench-0123456789",
                                     glm_base_url=f"{fake.base_url}/api/anthropic", cache=False, hub=False)
            keys = KeyStore(Path(tmp) / "keys.db")
            _, key = keys.create("bench", "write")
            app = build_http_app(build_server(App(settings), toolsets=["all"]), keys, HttpOptions(port=0))
            with serve_in_thread(app) as url:
                wall, latencies, failures = anyio.run(run_load, url, key)
            upstream = len(fake.requests_for("anthropic"))
    total = CLIENTS * CALLS_PER_CLIENT
    ratio = wall / LATENCY
    p50 = statistics.median(latencies) if latencies else float("nan")
    p95 = statistics.quantiles(latencies, n=20)[18] if len(latencies) >= 20 else float("nan")
    print(f"{total} concurrent ask_glm over Streamable HTTP, backend latency {LATENCY * 1000:.0f} ms")
    print(f"  wall {wall * 1000:.0f} ms (ratio {ratio:.2f} of one backend call)")
    print(f"  per call p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms")
    print(f"  errors {len(failures)}, upstream requests {upstream}")
    for failure in failures[:5]:
        print(f"    {failure}")
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
