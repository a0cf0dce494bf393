"""Streamable HTTP under load: 100 concurrent asks at 200 ms backend latency.

The installed ``ask-fable serve --http --toolsets single`` runs in its own process on a loopback
port; ``ask_glm`` is pointed at the loopback fake provider, which answers each request after
200 ms. Ten clients (each with its own API key header) connect and list the tools first, as MCP
hosts do at start; then 100 calls (10 per client, every question distinct so the cache never
answers) are released at once and timed. Printed: total wall, the ratio wall / 200 ms, per-call
p50 / p95 latency and the error count. Targets: wall ≤ 1.5 s, no errors. Only errors fail the
run: the wall depends on the machine (client and server share two cores here).

Run: python benchmarks/bench_http_concurrency.py
"""

from __future__ import annotations

import json
import logging
import os
import socket
import statistics
import subprocess
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
    """Connect every client (initialize + tools/list, as any MCP host does at start), then fire all
    calls at once; returns the wall seconds of the calls, per-call latencies and the failures."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []
    failures: list[Any] = []
    ready = 0
    go = anyio.Event()
    all_ready = anyio.Event()

    async def one_client(index: int) -> None:
        nonlocal ready
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http, \
                Client(streamable_http_client(f"{url}/mcp", http_client=http), mode="legacy") as client:
            await client.list_tools()
            ready += 1
            if ready == CLIENTS:
                all_ready.set()
            await go.wait()

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

    wall = 0.0
    async with anyio.create_task_group() as group:
        for index in range(CLIENTS):
            group.start_soon(one_client, index)
        await all_ready.wait()
        started = time.perf_counter()
        go.set()
    wall = time.perf_counter() - started
    return wall, latencies, failures


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the HTTP server exited at start")
        try:
            if httpx2.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            time.sleep(0.05)
    raise RuntimeError("the HTTP server did not start")


def main() -> int:
    """Start the fake provider and `ask-fable serve --http` as its own process, run the load once."""
    logging.disable(logging.INFO)  # the SDK logs every request at INFO; that is not what is measured
    command = [str(Path(sys.executable).with_name("ask-fable"))]
    if not Path(command[0]).exists():
        command = [sys.executable, "-m", "ask_fable"]
    with tempfile.TemporaryDirectory(prefix="ask-fable-bench-") as tmp, FakeProvider() as fake:
        fake.enqueue("anthropic", times=None, delay=LATENCY)
        env = {**os.environ, "HOME": tmp, "XDG_STATE_HOME": f"{tmp}/state",
               "XDG_CONFIG_HOME": f"{tmp}/config", "ASK_FABLE_QUIET": "1",
               "ASK_FABLE_GLM_API_KEY": "sk-bench-0123456789",
               "ASK_FABLE_GLM_BASE_URL": f"{fake.base_url}/api/anthropic", "ASK_FABLE_CACHE": "0",
               "ASK_FABLE_HUB": "0"}
        created = subprocess.run(
            [*command, "keys", "create", "--name", "bench", "--scope", "write", "--json"],
            env=env, capture_output=True, text=True, check=True,
        )
        key = json.loads(created.stdout)["key"]
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        # The server runs in its own process, as in production; the load comes from this one.
        server = subprocess.Popen([*command, "--toolsets", "single", "serve", "--http", "--port", str(port)],
                                  env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_healthy(url, server)
            wall, latencies, failures = anyio.run(run_load, url, key)
        finally:
            server.terminate()
            server.wait(timeout=10)
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
