"""Per-call cost of OpenTelemetry traces: the same calls with spans recorded and exported, and not.

This machine's load swings by tens of percent between processes and minutes, more than the cost
measured here, so the comparison runs inside one process, interleaved: the server is built once with
the SDK's tracer provider and its batching OTLP/HTTP exporter, whose sampler is switched between
blocks of calls. Off, every span is dropped at its root (the call takes the path of a server without
traces: one check, no span built); on, every span is recorded, batched and exported, and each on
block ends by flushing its spans to the receiver, so the export's CPU (the SDK's thread encoding and
sending them) is charged to the calls that made them. Blocks alternate off / on, 20 of each; the
figure is the median CPU milliseconds per call of this whole process (all threads), wall time
beside it.

Three runs, each in a process of its own, in memory (``mcp.Client(server)``) against the loopback
fake provider (another process), cache off so every call takes the whole path, for ``ask_glm`` (one
model call: 5 spans) and a council of two with a synthesis (``ask_council``: 9 spans):

- ``collector up``: the exporter sends to an OTLP/HTTP receiver in the parent process (its decoding
  is not charged to the server);
- ``collector down``: the endpoint refuses connections (the on blocks are not flushed: the SDK's
  thread retries in the background, within ``OTEL_EXPORTER_OTLP_TIMEOUT``);
- ``no SDK``: without a tracer provider at all (the API's no-op, a server without ``ask-fable[otel]``
  or without an endpoint) against the same calls with the SDK installed and sampling off, in two
  processes alternated: what the SDK's presence costs when it records nothing.

Then what the no-op itself does per call, timed here with no tracer provider: the check each call's
trace makes (``recording_root``) and a step that opens no span, times the number of each a call
makes (two traces: the server's and the pipeline's; steps: guard, mode, model call, store write for
``ask_glm``, plus a member, the synthesis and its model call for a council of two).

Target: spans on cost at most 1.5× the CPU of spans off, collector up or down (the SDK builds, batches
and encodes every span in Python: roughly a tenth of a millisecond of CPU each).

Run: python benchmarks/bench_otel.py [blocks] [--calls-per-block N]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET = 1.5
QUESTION = "Is the retry loop in the fetcher bounded?"

CHILD = r"""
import asyncio, json, os, statistics, sys, time
sys.path.insert(0, {root!r})
from benchmarks.bench_call_overhead import start_fake_provider, stop_fake_provider

SDK = {sdk!r}   # "switch": the SDK with a switchable sampler; "none": no tracer provider
FLUSH = {flush!r}
BLOCKS, PER_BLOCK = {blocks!r}, {per_block!r}
CALLS = (("ask_glm", {{"question": {question!r}}}),
         ("ask_council", {{"question": {question!r}, "models": ["glm", "deepseek"], "synthesizer": "glm"}}))

async def main():
    fake, base_url = start_fake_provider({root!r})
    os.environ.update(ASK_FABLE_GLM_BASE_URL=base_url, ASK_FABLE_GLM_API_KEY="bench-key",
                      ASK_FABLE_DEEPSEEK_BASE_URL=base_url, ASK_FABLE_DEEPSEEK_API_KEY="bench-key",
                      ASK_FABLE_CACHE="false", ASK_FABLE_HUB="false")
    switch = provider = None
    if SDK == "switch":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        class Switch(Sampler):
            on = False
            def should_sample(self, *args, **kwargs):
                return SamplingResult(Decision.RECORD_AND_SAMPLE if self.on else Decision.DROP)
            def get_description(self):
                return "switch"

        switch = Switch()
        provider = TracerProvider(sampler=switch, shutdown_on_exit=False)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    from mcp import Client
    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server
    out = {{}}
    try:
        # As the serving command builds it: the heap frozen after each tool's first call.
        async with Client(build_server(App(), toolsets=["all"], settle_heap=True)) as client:
            for name, args in CALLS:
                async def one():
                    result = await client.call_tool(name, args)
                    payload = result.structured_content or {{}}
                    assert payload.get("status") == "ok", payload
                for _ in range(10):
                    await one()
                figures = {{"off": ([], []), "on": ([], [])}}
                for block in range(2 * BLOCKS):
                    mode = "on" if block % 2 else "off"
                    if switch is not None:
                        switch.on = mode == "on"
                    started, cpu_started = time.perf_counter(), time.process_time()
                    for _ in range(PER_BLOCK):
                        await one()
                    if mode == "on" and FLUSH and provider is not None:
                        provider.force_flush(5000)
                    figures[mode][0].append((time.perf_counter() - started) / PER_BLOCK * 1000)
                    figures[mode][1].append((time.process_time() - cpu_started) / PER_BLOCK * 1000)
                out[name] = {{mode: {{"wall_ms": statistics.median(w), "cpu_ms": statistics.median(c)}}
                             for mode, (w, c) in figures.items()}}
    finally:
        stop_fake_provider(fake)
    print(json.dumps(out))

asyncio.run(main())
"""


def _closed_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _run(env: dict[str, str], *, sdk: str, flush: bool, blocks: int, per_block: int) -> dict[str, Any]:
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("ASK_FABLE_", "OTEL_"))}
    child_env.update(env)
    code = CHILD.format(root=str(ROOT), sdk=sdk, flush=flush, blocks=blocks, per_block=per_block,
                        question=QUESTION)
    done = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True,
                          timeout=1200)
    if done.returncode != 0:
        raise SystemExit(f"benchmark child failed:\n{done.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def noop_us() -> tuple[float, float]:
    """Microseconds of one trace's check and of one step (opened and finished) with no tracer provider:
    the work tracing adds to a call when it is off."""
    import timeit

    from ask_fable.core.spans import recording_root
    from ask_fable.core.tracing import TraceRecorder

    trace = TraceRecorder("bench")

    def step() -> None:
        trace.step(None, "guard").finish(None)

    runs = 100_000
    return (min(timeit.repeat(recording_root, number=runs, repeat=5)) / runs * 1e6,
            min(timeit.repeat(step, number=runs, repeat=5)) / runs * 1e6)


def main() -> int:
    """Print each run's figures and ratios; exit 1 when a target is missed."""
    from tests.fakes.otlp_receiver import OtlpReceiver

    parser = argparse.ArgumentParser()
    parser.add_argument("blocks", type=int, nargs="?", default=20)
    parser.add_argument("--calls-per-block", type=int, default=10)
    args = parser.parse_args()
    sizes = {"blocks": args.blocks, "per_block": args.calls_per_block}
    with tempfile.TemporaryDirectory() as tmp, OtlpReceiver() as receiver:
        home = Path(tmp)
        isolated = {"HOME": str(home), "XDG_STATE_HOME": str(home / "state"),
                    "XDG_CONFIG_HOME": str(home / "config"), "ASK_FABLE_QUIET": "1",
                    "OTEL_EXPORTER_OTLP_TIMEOUT": "2"}
        started = time.monotonic()
        up = _run({**isolated, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}, sdk="switch",
                  flush=True, **sizes)
        down = _run({**isolated, "OTEL_EXPORTER_OTLP_ENDPOINT": _closed_endpoint()}, sdk="switch",
                    flush=False, **sizes)
        # No SDK against the SDK sampling nothing: two processes, alternated three times.
        bare: list[dict[str, Any]] = []
        dropping: list[dict[str, Any]] = []
        for _ in range(3):
            bare.append(_run(isolated, sdk="none", flush=False, **sizes))
            dropping.append(_run({**isolated, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint},
                                 sdk="switch", flush=False, **sizes))
        spans = len(receiver.snapshot())
    print(f"OpenTelemetry per-call cost, in memory: {args.blocks} blocks each of {args.calls_per_block} "
          f"calls with spans off and on, alternated ({time.monotonic() - started:.0f}s; {spans} spans "
          "received)")
    met = True
    for tool in ("ask_glm", "ask_council"):
        for label, figures in (("collector up", up), ("collector down", down)):
            off, on = figures[tool]["off"], figures[tool]["on"]
            ratio = on["cpu_ms"] / off["cpu_ms"]
            met = met and ratio <= TARGET
            print(f"  {tool:11} {label:14}: off {off['cpu_ms']:5.2f} ms CPU ({off['wall_ms']:5.2f} wall) "
                  f"| on {on['cpu_ms']:5.2f} ms CPU ({on['wall_ms']:5.2f} wall) | ratio on/off "
                  f"{ratio:.3f}x CPU, {on['wall_ms'] / off['wall_ms']:.3f}x wall")
        none_cpu = statistics.median(run[tool]["off"]["cpu_ms"] for run in bare)
        sdk_cpu = statistics.median(run[tool]["off"]["cpu_ms"] for run in dropping)
        print(f"  {tool:11} no SDK        : {none_cpu:5.2f} ms CPU | SDK installed, sampling off "
              f"{sdk_cpu:5.2f} ms CPU | ratio {sdk_cpu / none_cpu:.3f}x (separate processes: load noise)")
        check, step = noop_us()
        steps = 4 if tool == "ask_glm" else 7
        spent = 2 * check + steps * step
        print(f"  {tool:11} the no-op's own work: 2 checks × {check:.2f} µs + {steps} steps × {step:.2f} µs "
              f"= {spent:.1f} µs a call, {spent / 1000 / none_cpu:.2%} of its CPU with no SDK")
    print(f"target: spans on ≤ {TARGET}x the CPU of spans off, collector up and down: "
          f"{'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
