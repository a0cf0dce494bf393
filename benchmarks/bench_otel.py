"""Per-call cost of OpenTelemetry traces: the same calls with tracing off, on, and on with the
collector down.

Each configuration runs in a child process of its own (a process installs its tracer provider once),
in memory (``mcp.Client(server)``) against the loopback fake provider (a process of its own too),
cache off so every call takes the whole path:

- ``off``: no OTLP endpoint: the OpenTelemetry API's no-op tracer (what a server without the ``otel``
  extra, or without ``OTEL_EXPORTER_OTLP_ENDPOINT``, runs);
- ``on``: ``OTEL_EXPORTER_OTLP_ENDPOINT`` set to an OTLP/HTTP receiver in the parent process (its
  decoding is not charged to the server), SDK defaults otherwise: every span is built, batched and
  exported by the SDK's thread, which the figures include;
- ``down``: the endpoint refuses connections (a collector that is down);
- ``base`` (with ``--base REF``): the ``off`` run on the tree of commit ``REF`` (``git archive``), the
  code before spans existed, to show what the no-op costs.

Figures: median wall and CPU milliseconds per call of the child process, for ``ask_glm`` (one model
call: 5 spans) and a two-member council with a synthesis (``ask_council``: 9 spans). Configurations
alternate round by round so the machine's load falls on all alike; the figure is the median of the
rounds. Targets: tracing on costs ≤ 1.15× the CPU of tracing off; a collector that is down ≤ 1.15×.

Run: python benchmarks/bench_otel.py [calls] [--rounds N] [--base REF]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET = 1.15
QUESTION = "Is the retry loop in the fetcher bounded?"

CHILD = r"""
import asyncio, json, os, statistics, sys, time
sys.path.insert(0, {root!r})
from benchmarks.bench_call_overhead import start_fake_provider, stop_fake_provider

async def main():
    calls = {calls}
    fake, base_url = start_fake_provider({root!r})
    os.environ.update(ASK_FABLE_GLM_BASE_URL=base_url, ASK_FABLE_GLM_API_KEY="bench-key",
                      ASK_FABLE_DEEPSEEK_BASE_URL=base_url, ASK_FABLE_DEEPSEEK_API_KEY="bench-key",
                      ASK_FABLE_CACHE="false", ASK_FABLE_HUB="false")
    tracing = None
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        from ask_fable.surface.otel_setup import start_tracing
        tracing, _ = start_tracing()
        assert tracing is not None
    from mcp import Client
    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server
    out = {{}}
    try:
        async with Client(build_server(App(), toolsets=["all"])) as client:
            for name, args in (("ask_glm", {{"question": {question!r}}}),
                               ("ask_council", {{"question": {question!r}, "models": ["glm", "deepseek"],
                                                 "synthesizer": "glm"}})):
                for _ in range(5):
                    await client.call_tool(name, args)
                wall, cpu = [], []
                for _ in range(calls):
                    started, cpu_started = time.perf_counter(), time.process_time()
                    result = await client.call_tool(name, args)
                    wall.append(time.perf_counter() - started)
                    cpu.append(time.process_time() - cpu_started)
                    status = (result.structured_content or {{}}).get("status")
                    assert status == "ok", result.structured_content
                # The SDK's export thread runs beside the calls; CPU of the whole process per call.
                out[name] = {{"wall_ms": statistics.median(wall) * 1000,
                              "cpu_ms": statistics.median(cpu) * 1000}}
    finally:
        stop_fake_provider(fake)
        if tracing is not None:
            tracing.shutdown()
    print(json.dumps(out))

asyncio.run(main())
"""


def _closed_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _run(mode: str, calls: int, env: dict[str, str], src: Path | None) -> dict[str, dict[str, float]]:
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(("ASK_FABLE_", "OTEL_"))}
    child_env.update(env)
    if src is not None:
        child_env["PYTHONPATH"] = str(src)
    code = CHILD.format(root=str(ROOT), calls=calls, question=QUESTION)
    done = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True,
                          timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{done.stderr[-3000:]}")
    figures: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _tree(ref: str, into: Path) -> Path:
    """The ``src`` directory of commit ``ref``, unpacked under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main() -> int:
    """Print each configuration's medians and the ratios to ``off``; exit 1 when a target is missed."""
    from tests.fakes.otlp_receiver import OtlpReceiver

    parser = argparse.ArgumentParser()
    parser.add_argument("calls", type=int, nargs="?", default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base", help="also run tracing off on this commit's tree")
    args = parser.parse_args()
    results: dict[str, list[dict[str, dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory() as tmp, OtlpReceiver() as receiver:
        home = Path(tmp)
        isolated = {"HOME": str(home), "XDG_STATE_HOME": str(home / "state"),
                    "XDG_CONFIG_HOME": str(home / "config"), "ASK_FABLE_QUIET": "1"}
        configs: dict[str, tuple[dict[str, str], Path | None]] = {
            "off": (isolated, None),
            "on": ({**isolated, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}, None),
            "down": ({**isolated, "OTEL_EXPORTER_OTLP_ENDPOINT": _closed_endpoint()}, None),
        }
        if args.base:
            configs["base"] = (isolated, _tree(args.base, home / "base"))
        started = time.monotonic()
        for _ in range(args.rounds):
            for mode, (env, src) in configs.items():
                results.setdefault(mode, []).append(_run(mode, args.calls, env, src))
        spans = len(receiver.snapshot())
    print(f"OpenTelemetry per-call cost, in memory, median of {args.rounds} rounds of {args.calls} calls "
          f"({time.monotonic() - started:.0f}s; {spans} spans received while on)")

    def median(mode: str, tool: str, what: str) -> float:
        return statistics.median(run[tool][what] for run in results[mode])

    met = True
    for tool in ("ask_glm", "ask_council"):
        off_cpu, off_wall = median("off", tool, "cpu_ms"), median("off", tool, "wall_ms")
        for mode in results:
            cpu, wall = median(mode, tool, "cpu_ms"), median(mode, tool, "wall_ms")
            ratio = cpu / off_cpu
            line: dict[str, Any] = {"tool": tool, "mode": mode, "wall_ms": round(wall, 2),
                                    "cpu_ms": round(cpu, 2), "cpu_vs_off": round(ratio, 3),
                                    "wall_vs_off": round(wall / off_wall, 3)}
            if mode in ("on", "down") and ratio > TARGET:
                met = False
            print("  " + json.dumps(line))
    print(f"target: on and down ≤ {TARGET}x the CPU of off: {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
