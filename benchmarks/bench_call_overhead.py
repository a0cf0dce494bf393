"""Per-call overhead: an ``ask``-family call with an instant backend against a trivial tool.

The trivial tool is ``ask_fable_help`` on one fixed topic (``sidecar``: constant text, not the
manual built from the registries), which still records its trace like every result. The ask call
is ``ask_glm`` against the loopback fake provider answering at once (run in its own process, so its
threads do not share our GIL), with the cache off so every call takes the full path: guard, mode,
HTTP round trip, sidecar parsing, audit, trace. Both go through the same transport: in memory
(``mcp.Client(server)``) and over stdio (the ``ask-fable`` command). The ratio printed is
median(ask_glm) / median(ask_fable_help) per transport; the target is ≤ 1.5.

The in-memory figures also come as CPU time of this process per call (client and server; the fake
provider runs apart), which moves far less than wall time on a loaded machine.

For where the time goes, the same ``ask_glm`` backend is also timed on its own (the oracle's
``ask`` straight against the fake, no MCP and no pipeline), and ``ask_m3`` with a fake ``mmx``
that answers at once shows the cost of one CLI spawn.

Run: python benchmarks/bench_call_overhead.py [calls]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp import Client, StdioServerParameters
from tests.fakes.fake_cli import install_fake_clis

TARGET = 1.5
CALLS = 60
WARMUP = 5
QUESTION = "Is the retry loop in the fetcher bounded?"

FAKE_SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.fake_provider import FakeProvider
with FakeProvider() as fp:
    fp.enqueue("anthropic", times=None)
    print(fp.base_url, flush=True)
    sys.stdin.read()
"""


def start_fake_provider(root: str) -> tuple[subprocess.Popen[str], str]:
    """The fake provider in a child process answering every Anthropic request at once, and its URL."""
    fake = subprocess.Popen(
        [sys.executable, "-c", FAKE_SERVER.format(root=root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert fake.stdout is not None
    return fake, fake.stdout.readline().strip()


def stop_fake_provider(fake: subprocess.Popen[str]) -> None:
    """Stop a provider started by :func:`start_fake_provider`."""
    assert fake.stdin is not None
    fake.stdin.close()
    try:
        fake.wait(timeout=10)
    except subprocess.TimeoutExpired:
        fake.kill()
        fake.wait()


def isolate(home: Path) -> None:
    """Own HOME and XDG dirs for this process and its children; no ASK_FABLE_* from the shell."""
    for name in list(os.environ):
        if name.startswith("ASK_FABLE_"):
            del os.environ[name]
    os.environ.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        ASK_FABLE_QUIET="1",
    )


#: CPU milliseconds per call of this process (in memory: client and server; the fake provider runs
#: apart), by figure name, filled by :func:`median_ms`. Steadier than wall times on a loaded machine.
CPU_MS: dict[str, float] = {}


async def median_ms(call: Callable[[], Awaitable[Any]], calls: int, cpu_label: str | None = None) -> float:
    """Median milliseconds of ``calls`` runs of ``call`` after a short warm-up; with ``cpu_label``, the
    median CPU milliseconds of this process per run go into :data:`CPU_MS` under that name."""
    for _ in range(WARMUP):
        await call()
    times = []
    cpu = []
    for _ in range(calls):
        started, cpu_started = time.perf_counter(), time.process_time()
        await call()
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    if cpu_label is not None:
        CPU_MS[cpu_label] = statistics.median(cpu) * 1000
    return statistics.median(times) * 1000


async def over_client(client: Client, calls: int, cpu_prefix: str | None = None) -> dict[str, float]:
    """Median ms of the trivial tool, ask_glm and ask_m3 over one connected client (and, with
    ``cpu_prefix``, the first two's CPU per call in :data:`CPU_MS`)."""

    async def tool(name: str, args: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
        async def call() -> None:
            result = await client.call_tool(name, args)
            status = (result.structured_content or {}).get("status")
            if status != "ok":
                raise RuntimeError(f"{name} answered {result.structured_content}")

        return call

    def label(name: str) -> str | None:
        return f"{cpu_prefix} {name}" if cpu_prefix else None

    return {
        "help": await median_ms(await tool("ask_fable_help", {"topic": "sidecar"}), calls, label("help")),
        "ask_glm": await median_ms(await tool("ask_glm", {"question": QUESTION}), calls, label("ask_glm")),
        "ask_m3": await median_ms(await tool("ask_m3", {"question": QUESTION}), max(10, calls // 4)),
    }


async def backend_alone(base_url: str, calls: int) -> float:
    """Median ms of the glm oracle's ``ask`` against the fake: the floor under ask_glm, on pooled
    resources as a server's App has them."""
    from ask_fable.backends.base import EventSink, OracleRequest
    from ask_fable.backends.providers.glm import make_glm_oracle
    from ask_fable.backends.resources import Resources
    from ask_fable.config import load_settings

    resources = Resources()
    settings = load_settings(glm_base_url=base_url, glm_api_key="bench-key")
    oracle = make_glm_oracle(settings, resources=resources)
    request = OracleRequest(system="You review code.", prompt=QUESTION, timeout=30)

    async def call() -> None:
        await oracle.ask(request, EventSink())

    try:
        return await median_ms(call, calls, "backend")
    finally:
        await resources.aclose()


async def main() -> int:
    """Print per-transport medians and ratios; exit 1 when a ratio misses the target."""
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else CALLS
    root = str(Path(__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        isolate(home)
        clis = install_fake_clis(home / "bin", names=["mmx"])
        os.environ["PATH"] = f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}"
        fake, base_url = start_fake_provider(root)
        try:
            wiring = {
                "ASK_FABLE_GLM_BASE_URL": base_url,
                "ASK_FABLE_GLM_API_KEY": "bench-key",
                "ASK_FABLE_CACHE": "false",
                "ASK_FABLE_TOOLSETS": "default,single",
            }
            os.environ.update(wiring)
            from ask_fable.core.app import App
            from ask_fable.surface.server import build_server

            async with Client(build_server(App())) as client:
                memory = await over_client(client, calls, "in-memory")
            params = StdioServerParameters(
                command=sys.executable, args=["-m", "ask_fable"], env=dict(os.environ)
            )
            async with Client(params) as client:
                stdio = await over_client(client, calls)
            floor = await backend_alone(base_url, calls)
        finally:
            stop_fake_provider(fake)
    print(f"per-call overhead, median of {calls} calls (ask_m3: {max(10, calls // 4)})")
    worst = 0.0
    for label, figures in (("in-memory", memory), ("stdio", stdio)):
        ratio = figures["ask_glm"] / figures["help"]
        worst = max(worst, ratio)
        print(
            f"  {label:9}: ask_fable_help {figures['help']:6.2f} ms | ask_glm {figures['ask_glm']:6.2f} ms"
            f" | ask_m3 {figures['ask_m3']:6.2f} ms | ratio ask_glm/help {ratio:5.1f}x"
        )
    pipeline = memory["ask_glm"] - memory["help"] - floor
    print(f"  glm backend alone (HTTP round trip to the fake, no MCP, no pipeline): {floor:.2f} ms")
    print(
        f"  in-memory ask_glm = trivial tool {memory['help']:.2f} + backend {floor:.2f} "
        f"+ pipeline (guard, audit, trace, stores) {pipeline:.2f} ms"
    )
    cpu_help, cpu_glm, cpu_backend = CPU_MS["in-memory help"], CPU_MS["in-memory ask_glm"], CPU_MS["backend"]
    print(f"  in-memory CPU per call (client and server, this process): ask_fable_help {cpu_help:.2f} ms | "
          f"ask_glm {cpu_glm:.2f} ms (of which the backend alone {cpu_backend:.2f}) | "
          f"ratio {cpu_glm / cpu_help:.1f}x; ask_glm over help and backend "
          f"{cpu_glm - cpu_help - cpu_backend:.2f} ms")
    print(f"worst ratio {worst:.1f}x (target <= {TARGET:.1f}x): {'ok' if worst <= TARGET else 'MISSED'}")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
