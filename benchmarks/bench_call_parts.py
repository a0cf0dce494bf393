"""Where a served ``ask_glm`` spends its CPU beyond a bare forwarder's, one part at a time, in process.

``bench_http_concurrency`` compares whole servers; on a shared machine its rounds scatter by
± 0.3 ms of CPU a call, more than most single changes move. This one measures the two parts of
the gap on their own, in one process with the garbage collector off during the measured rounds
(its share is the servers' business, measured there), each variant taking its turn in every round
so that the machine's load falls on all alike, and prints the median CPU per call:

- **backend**: against the loopback fake provider (its own process, answering at once), 20 calls
  at once on one pooled ``httpx2`` client: the JSON body the bare forwarder reads; the same answer
  as an event stream read as bytes only; parsed into events (``httpx2.EventSource``); parsed and
  each event's JSON decoded; and ask-fable's GLM oracle (``oracle.ask``: request body, retry loop,
  reply bound, event stream, usage and the rest of a reply);
- **pipeline**: an in-memory MCP client calling ``ask_glm`` on ask-fable's server (default settings,
  cache and hub off, ``--toolsets single``) whose GLM oracle answers at once with the fake's reply,
  beside a bare ``MCPServer`` tool returning the same answer: the guard, estimate, trace, records,
  result and server layers, without the network. The client's own check of each result against
  the tool's output schema is skipped (it is the client's cost, not the server's). Printed with
  the event loop thread's part (the rest is the record writes' worker threads).

No target: a before/after measure. To measure another tree, put its sources first:
``PYTHONPATH=OTHER/src python benchmarks/bench_call_parts.py``.

Run: python benchmarks/bench_call_parts.py [calls] [rounds]
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_call_overhead import isolate, start_fake_provider, stop_fake_provider
from tests.fakes.fake_provider import DEFAULT_TEXT

CALLS = 200
ROUNDS = 7
AT_ONCE = 20
QUESTION = "Is the retry loop in the fetcher bounded?"
HEADERS = {"x-api-key": "bench-key-0123456789", "anthropic-version": "2023-06-01"}


class Answer(BaseModel):
    """The bare tool's structured result."""

    status: str
    answer: str


async def at_once(call: Callable[[], Awaitable[object]], calls: int) -> None:
    """``calls`` runs of ``call``, :data:`AT_ONCE` at a time."""
    for _ in range(calls // AT_ONCE):
        async with anyio.create_task_group() as group:
            for _ in range(AT_ONCE):
                group.start_soon(call)


async def measure(variants: dict[str, Callable[[], Awaitable[object]]], calls: int,
                  rounds: int) -> dict[str, tuple[float, float]]:
    """Median (process CPU, this thread's CPU) milliseconds per call of each variant, taking turns."""
    for call in variants.values():
        await at_once(call, AT_ONCE * 3)
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        cpu: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        for number in range(rounds):
            order = list(variants.items())
            for name, call in order if number % 2 == 0 else order[::-1]:
                started, thread_started = time.process_time(), time.thread_time()
                await at_once(call, calls)
                cpu[name].append(((time.process_time() - started) * 1000 / calls,
                                  (time.thread_time() - thread_started) * 1000 / calls))
    finally:
        gc.enable()
        gc.unfreeze()
    return {name: (statistics.median(p for p, _ in runs), statistics.median(t for _, t in runs))
            for name, runs in cpu.items()}


async def backend_parts(base_url: str, calls: int, rounds: int) -> dict[str, tuple[float, float]]:
    """The backend variants against the fake at ``base_url``."""
    from ask_fable.backends.base import EventSink, OracleRequest
    from ask_fable.backends.providers.glm import make_glm_oracle
    from ask_fable.backends.resources import Resources
    from ask_fable.config import load_settings

    resources = Resources()
    oracle = make_glm_oracle(load_settings(glm_base_url=base_url, glm_api_key=HEADERS["x-api-key"]),
                             resources=resources)
    request = OracleRequest(system="You review code.", prompt=QUESTION, timeout=30)
    limits = httpx2.Limits(max_connections=256, max_keepalive_connections=32)
    url = f"{base_url}/v1/messages"

    def body(stream: bool) -> dict[str, Any]:
        return {"model": "glm-bench", "max_tokens": 8192, "stream": stream,
                "messages": [{"role": "user", "content": QUESTION}]}

    async with httpx2.AsyncClient(timeout=60, limits=limits) as client:
        async def json_body() -> None:
            response = await client.post(url, json=body(False), headers=HEADERS)
            response.raise_for_status()
            "".join(part.get("text", "") for part in response.json()["content"])

        async def stream_bytes() -> None:
            async with client.stream("POST", url, json=body(True), headers=HEADERS) as response:
                async for _ in response.aiter_raw():
                    pass

        async def stream_events() -> None:
            async with client.stream("POST", url, json=body(True), headers=HEADERS) as response:
                async for _ in httpx2.EventSource(response):
                    pass

        async def stream_events_json() -> None:
            async with client.stream("POST", url, json=body(True), headers=HEADERS) as response:
                async for event in httpx2.EventSource(response):
                    json.loads(event.data)

        async def glm_oracle() -> None:
            await oracle.ask(request, EventSink())

        try:
            return await measure({
                "JSON body (the bare forwarder's read)": json_body,
                "event stream, bytes only": stream_bytes,
                "event stream, parsed (httpx2.EventSource)": stream_events,
                "event stream, parsed, each event's JSON decoded": stream_events_json,
                "ask-fable's GLM oracle (oracle.ask)": glm_oracle,
            }, calls, rounds)
        finally:
            await resources.aclose()


async def pipeline_parts(calls: int, rounds: int) -> dict[str, tuple[float, float]]:
    """``ask_glm`` on ask-fable's server with an instant GLM oracle, beside a bare tool."""
    from mcp import Client
    from mcp.client.session import ClientSession
    from mcp.server.mcpserver import MCPServer

    from ask_fable.backends.anthropic_api import AnthropicMessagesOracle
    from ask_fable.backends.base import EventSink, OracleRequest, Reply
    from ask_fable.backends.http_client import usage_from
    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server

    async def instant(self: AnthropicMessagesOracle, request: OracleRequest, sink: EventSink) -> Reply:
        await anyio.lowlevel.checkpoint()
        return Reply(text=DEFAULT_TEXT, model=self.model, provider=self.provider,
                     usage=usage_from(347, 32))

    async def unchecked(self: ClientSession, name: str, result: object) -> None:
        return None

    AnthropicMessagesOracle.ask = instant  # type: ignore[method-assign]
    ClientSession.validate_tool_result = unchecked  # type: ignore[method-assign]
    bare = MCPServer("bare", log_level="WARNING")

    @bare.tool()
    async def ask_glm(question: str) -> Answer:
        """Answer at once."""
        await anyio.lowlevel.checkpoint()
        return Answer(status="ok", answer=DEFAULT_TEXT)

    async with Client(build_server(App())) as ours, Client(bare) as floor:
        def caller(client: Client) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                result = await client.call_tool("ask_glm", {"question": QUESTION})
                if (result.structured_content or {}).get("status") != "ok":
                    raise RuntimeError(f"ask_glm answered {result.structured_content}")
            return call

        return await measure({"ask-fable's server, ask_glm, instant oracle": caller(ours),
                              "bare MCPServer tool": caller(floor)}, calls, rounds)


async def main() -> int:
    """Print each part's CPU per call."""
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else CALLS
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else ROUNDS
    import ask_fable

    with tempfile.TemporaryDirectory() as tmp:
        isolate(Path(tmp))
        os.environ.update({"ASK_FABLE_CACHE": "false", "ASK_FABLE_HUB": "0", "ASK_FABLE_TOOLSETS": "single",
                           "ASK_FABLE_GLM_API_KEY": HEADERS["x-api-key"]})
        fake, base_url = start_fake_provider(str(Path(__file__).resolve().parents[1]))
        try:
            os.environ["ASK_FABLE_GLM_BASE_URL"] = base_url
            backend = await backend_parts(base_url, calls, rounds)
        finally:
            stop_fake_provider(fake)
        pipeline = await pipeline_parts(calls, rounds)
    print(f"CPU per call, median of {rounds} rounds of {calls} calls ({AT_ONCE} at once), garbage collector "
          f"off; ask_fable from {Path(ask_fable.__file__).parent}")
    print("  backend, against the loopback fake (its process apart):")
    floor = next(iter(backend.values()))[0]
    for name, (cpu, _thread) in backend.items():
        print(f"    {name:<50} {cpu:6.3f} ms  ({cpu - floor:+.3f})")
    print("  pipeline and server, in memory (client included, its output check skipped):")
    (ours, ours_loop), (bare, _) = pipeline.values()
    print(f"    ask-fable's server, ask_glm, instant oracle        {ours:6.3f} ms  (event loop thread "
          f"{ours_loop:.3f}, record writes' worker threads {ours - ours_loop:.3f})")
    print(f"    bare MCPServer tool                                {bare:6.3f} ms")
    print(f"    ask-fable over bare                                {ours - bare:+6.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
