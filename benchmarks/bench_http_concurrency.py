"""Streamable HTTP under load: 100 concurrent asks at 200 ms backend latency, beside a bare forwarder.

Two servers run side by side, each in its own process on a loopback port, against one loopback
fake provider that answers every request after 200 ms:

- **ours**: the installed ``ask-fable serve --http --toolsets single`` (cache and hub off; every
  per-call duty on: key check, the key's quotas counted with their limits raised so that 100 calls
  at once on one key are admitted, guard, cost estimate, audit, trace, redaction, result validation);
- **bare**: a bare ``MCPServer`` (stateless Streamable HTTP, JSON responses, on uvicorn) whose one
  tool, ``ask_glm``, forwards the question to the same fake provider with a pooled ``httpx2``
  client and returns the answer text — the floor the MCP SDK and the HTTP stack set.

Each round, ten clients connect to a server and list its tools (as MCP hosts do at start); then
100 calls (10 per client, every question distinct) are released at once and timed. A warm-up
round on each server comes first; then rounds alternate between the two, so the machine's load
falls on both alike. Printed: each server's median wall, per-call p50 / p95, server CPU time per
call (all its threads, and how much of it the kernel spent), its peak memory, errors, and the ratio
of the medians. Target: ours ≤ 1.2× bare, no errors.

``--profile DIR`` attaches ``py-spy`` (``pip install py-spy``; root or ptrace rights) to our server
and then to the bare forwarder, for as many extra rounds, sampling each thread only while it holds
the GIL (so the sums come close to the CPU time; time in SQLite or socket calls that release the
GIL is not counted), writes the raw folded stacks to
``DIR/ours.folded`` and ``DIR/bare.folded`` and prints, per category (key check, guard, records,
redaction, result, settings, backend, SDK, HTTP server, event loop), each server's busy time per call.

``--quotas-off`` adds a third server taking its turn in the same rounds: ours again, on the same state
directory, with the key's quotas off (``ASK_FABLE_KEY_RPM``, ``_CONCURRENT`` and ``_DAILY_USD`` 0), so
what counting them costs is measured beside the rest.

``--against SRC`` adds another server taking its turn in the same rounds: ours, quotas counted, run from
the package sources in ``SRC`` (another tree's ``src``, e.g. from ``git archive REV src``) on the same
state directory, so a change is measured beside the tree before it under the same load.

Run: python benchmarks/bench_http_concurrency.py [rounds] [--profile DIR] [--quotas-off] [--against SRC]
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.sandbox import home_env
from tests.fakes.fake_provider import FakeProvider

LATENCY = 0.2
CLIENTS = 10
CALLS_PER_CLIENT = 10
ROUNDS = 5
TARGET_RATIO = 1.2
PROFILE_RATE = 250
GLM_KEY = "sk-bench-0123456789"


# --- the bare forwarder (runs in its own process: ``--serve-bare PORT UPSTREAM``) -------------------
class Answer(BaseModel):
    """The bare tool's structured result."""

    status: str
    answer: str


def serve_bare(port: int, upstream: str) -> None:
    """A bare MCPServer with one tool forwarding to ``upstream``'s Anthropic Messages endpoint."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer
    from mcp.server.transport_security import TransportSecuritySettings

    server = MCPServer("bare-forwarder", log_level="WARNING")
    # The pool ask-fable's HTTP backends use (backends/http_client.py).
    limits = httpx2.Limits(max_connections=256, max_keepalive_connections=32)
    client = httpx2.AsyncClient(timeout=120, limits=limits)
    url = f"{upstream}/v1/messages"
    headers = {"x-api-key": GLM_KEY, "anthropic-version": "2023-06-01"}

    @server.tool()
    async def ask_glm(question: str) -> Answer:
        """Forward one question to the provider."""
        body = {"model": "glm-bench", "max_tokens": 8192, "messages": [{"role": "user", "content": question}]}
        response = await client.post(url, json=body, headers=headers)
        response.raise_for_status()
        text = "".join(part.get("text", "") for part in response.json()["content"])
        return Answer(status="ok", answer=text)

    app = server.streamable_http_app(
        stateless_http=True, json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    uvicorn.run(app, host="127.0.0.1", port=port, access_log=False, log_level="warning", backlog=2048)


# --- load ----------------------------------------------------------------------------------------------
async def run_load(url: str, key: str | None) -> tuple[float, list[float], list[Any]]:
    """Connect every client (initialize + tools/list, as any MCP host does at start), then fire all
    calls at once; returns the wall seconds of the calls, per-call latencies and the failures."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    latencies: list[float] = []
    failures: list[Any] = []
    ready = 0
    go = anyio.Event()
    all_ready = anyio.Event()
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    async def one_client(index: int) -> None:
        nonlocal ready
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http, \
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

    async with anyio.create_task_group() as group:
        for index in range(CLIENTS):
            group.start_soon(one_client, index)
        await all_ready.wait()
        started = time.perf_counter()
        go.set()
    wall = time.perf_counter() - started
    return wall, latencies, failures


# --- servers -------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("a server exited at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("a server did not start")


def _peak_rss_mb(pid: int) -> float:
    """The most memory a process has held so far (``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU time of a process so far, all threads (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


@dataclass
class Server:
    """One server under test and what its measured rounds gave."""

    name: str
    proc: subprocess.Popen[bytes]
    url: str
    key: str | None
    walls: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    failures: list[Any] = field(default_factory=list)
    cpu: float = 0.0
    #: The most memory the server held, read after the measured rounds.
    peak_rss_mb: float = float("nan")
    #: The part of ``cpu`` spent in the kernel (sockets, files, thread wake-ups).
    system: float = 0.0
    calls: int = 0

    def round(self, measured: bool) -> None:
        """One round of load; recorded when ``measured``."""
        user_before, system_before = _cpu_seconds(self.proc.pid)
        wall, latencies, failures = anyio.run(run_load, self.url, self.key)
        user_after, system_after = _cpu_seconds(self.proc.pid)
        if measured:
            self.walls.append(wall)
            self.latencies += latencies
            self.failures += failures
            self.cpu += user_after + system_after - user_before - system_before
            self.system += system_after - system_before
            self.calls += CLIENTS * CALLS_PER_CLIENT

    def line(self) -> str:
        """The server's figures, one line."""
        p50 = statistics.median(self.latencies) if self.latencies else float("nan")
        p95 = statistics.quantiles(self.latencies, n=20)[18] if len(self.latencies) >= 20 else float("nan")
        cpu_ms = self.cpu_per_call * 1000
        system_ms = self.system / self.calls * 1000 if self.calls else float("nan")
        rounds = ", ".join(f"{w * 1000:.0f}" for w in self.walls)
        wall = statistics.median(self.walls) * 1000
        return (f"  {self.name:<5} wall median {wall:5.0f} ms (rounds {rounds}); "
                f"per call p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms; "
                f"server CPU {cpu_ms:.2f} ms/call ({system_ms:.2f} in the kernel); "
                f"peak RSS {self.peak_rss_mb:.0f} MB; errors {len(self.failures)}")

    @property
    def cpu_per_call(self) -> float:
        """Server CPU seconds per measured call."""
        return self.cpu / self.calls if self.calls else float("nan")


@contextmanager
def running(command: list[str], env: dict[str, str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    """``command`` started with ``env``, once it listens on ``port``; stopped when the block ends."""
    proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- profile -------------------------------------------------------------------------------------------
#: (category, frame markers) of our own per-call duties: a sample counts for the first of these
#: whose marker occurs in a frame of the task (or worker thread) it was taken in.
DUTIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("key verification (hash, lookup, last_used_at)", ("ask_fable/stores/keys.py",)),
    ("records (audit, trace, stats, hub)", ("ask_fable/stores/recorders.py", "ask_fable/core/call_records.py",
                                            "_record_trace (", "_persist (ask_fable/core/pipeline.py")),
    ("guard", ("ask_fable/core/guard",)),
    ("redaction", ("ask_fable/redact.py",)),
    ("result validation and serialization", ("_result (ask_fable/surface/server.py",
                                             "ask_fable/contract.py")),
    ("settings reads", ("ask_fable/config", "App.settings (", "_file_stamp (")),
    ("backend client (request, stream, parse)", ("ask_fable/backends/", "serve_bare.<locals>.ask_glm")),
)
#: Otherwise the innermost frame of one of these decides.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("pipeline, tools and server, other", ("ask_fable/",)),
    ("MCP SDK", ("mcp/",)),
    ("HTTP server (uvicorn, starlette)", ("uvicorn/", "starlette/")),
)
EVENT_LOOP = "event loop, sockets, thread hand-offs, other"
#: Innermost frames of a thread that waits: py-spy without blocking the process may still sample them.
_WAITING = ("Condition.wait (threading.py", "Event.wait (threading.py", "Queue.get (queue.py",
            "EpollSelector.select (selectors.py")
#: The frame an asyncio callback or task step runs under: what lies below it is the task's work.
_LOOP_STEP = "Handle._run (asyncio/events.py"


def _category(frames: list[str]) -> str:
    steps = [i for i, frame in enumerate(frames) if frame.startswith(_LOOP_STEP)]
    task = frames[steps[-1] + 1:] if steps else frames
    for name, markers in DUTIES:
        if any(marker in frame for frame in task for marker in markers):
            return name
    for frame in reversed(task):
        for name, markers in LAYERS:
            if any(marker in frame for marker in markers):
                return name
    return EVENT_LOOP


def categorize(folded: str) -> Counter[str]:
    """Samples per category in py-spy's raw output (``[thread;]frame;frame;... count`` lines)."""
    counts: Counter[str] = Counter()
    for line in folded.splitlines():
        stack, _, number = line.rpartition(" ")
        if not number.isdigit():
            continue
        frames = stack.split(";")
        if frames and frames[0].startswith("thread "):
            frames = frames[1:]
        if not frames or frames[-1].startswith(_WAITING):
            continue
        counts[_category(frames)] += int(number)
    return counts


@contextmanager
def _profiling(pid: int, out: Path) -> Iterator[None]:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    # --gil: a thread is sampled only while it holds the GIL, so a thread waiting for it (the event
    # loop while the record writer runs, or the reverse) is not counted twice.
    command = [spy, "record", "--pid", str(pid), "--format", "raw", "--rate", str(PROFILE_RATE),
               "--nonblocking", "--gil", "--threads", "--output", str(out)]
    recorder = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # py-spy attaches before the load starts
    try:
        yield
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=30)


def print_profile(directory: Path, calls: int) -> None:
    """Where each server's busy samples fell, by category, as CPU milliseconds per call."""
    ours, bare = (categorize((directory / f"{name}.folded").read_text()) for name in ("ours", "bare"))
    per_call = 1000 / PROFILE_RATE / calls
    print(f"  busy time per call by category, sampled at {PROFILE_RATE} Hz over {calls} calls "
          f"(raw stacks in {directory}):")
    print(f"    {'':<46} {'ours':>7} {'bare':>7}")
    for name, _ in (ours + bare).most_common():
        print(f"    {name:<46} {ours[name] * per_call:5.2f}ms {bare[name] * per_call:5.2f}ms")
    print(f"    {'total':<46} {ours.total() * per_call:5.2f}ms {bare.total() * per_call:5.2f}ms")


# --- main ----------------------------------------------------------------------------------------------
def main(argv: list[str]) -> int:
    """Start the fake provider, our server and the bare forwarder; run the rounds; print both."""
    if argv[:1] == ["--serve-bare"]:
        serve_bare(int(argv[1]), argv[2])
        return 0
    profile_dir = Path(argv[argv.index("--profile") + 1]) if "--profile" in argv else None
    quotas_off = "--quotas-off" in argv
    against = argv[argv.index("--against") + 1] if "--against" in argv else None
    numbers = [a for a in argv if a.isdigit() and a != against]
    rounds = int(numbers[0]) if numbers else ROUNDS
    logging.disable(logging.INFO)  # the SDK logs every request at INFO; that is not what is measured
    command = [str(Path(sys.executable).with_name("ask-fable"))]
    if not Path(command[0]).exists():
        command = [sys.executable, "-m", "ask_fable"]
    with tempfile.TemporaryDirectory(prefix="ask-fable-bench-") as tmp, FakeProvider() as fake:
        fake.enqueue("anthropic", times=None, delay=LATENCY)
        upstream = f"{fake.base_url}/api/anthropic"
        env = {**os.environ, **home_env(tmp),
               "ASK_FABLE_GLM_API_KEY": GLM_KEY, "ASK_FABLE_GLM_BASE_URL": upstream,
               "ASK_FABLE_CACHE": "0", "ASK_FABLE_HUB": "0",
               # 100 calls at once on one key: its quotas are counted as on every team server (admitted,
               # estimated, settled), with limits raised so that the load itself is not refused.
               "ASK_FABLE_KEY_RPM": "1000000", "ASK_FABLE_KEY_CONCURRENT": "100000",
               "ASK_FABLE_KEY_DAILY_USD": "1000000",
               "ASK_FABLE_HTTP_MAX_KEY_REQUESTS": "128"}
        created = subprocess.run(
            [*command, "keys", "create", "--name", "bench", "--scope", "ask", "--json"],
            env=env, capture_output=True, text=True, check=True,
        )
        key = json.loads(created.stdout)["key"]
        ours_port, bare_port, free_port_ = free_port(), free_port(), free_port()
        ours_cmd = [*command, "--toolsets", "single", "serve", "--http", "--port", str(ours_port)]
        bare_cmd = [sys.executable, __file__, "--serve-bare", str(bare_port), upstream]
        free_cmd = [*command, "--toolsets", "single", "serve", "--http", "--port", str(free_port_)]
        free_env = {**env, "ASK_FABLE_KEY_RPM": "0", "ASK_FABLE_KEY_CONCURRENT": "0",
                    "ASK_FABLE_KEY_DAILY_USD": "0"}
        prev_port = free_port()
        prev_cmd = [sys.executable, "-m", "ask_fable", "--toolsets", "single", "serve", "--http", "--port",
                    str(prev_port)]
        with ExitStack() as stack:
            ours_proc = stack.enter_context(running(ours_cmd, env, ours_port))
            bare_proc = stack.enter_context(running(bare_cmd, env, bare_port))
            ours = Server("ours", ours_proc, f"http://127.0.0.1:{ours_port}", key)
            bare = Server("bare", bare_proc, f"http://127.0.0.1:{bare_port}", None)
            servers = [bare, ours]
            if quotas_off:
                free_proc = stack.enter_context(running(free_cmd, free_env, free_port_))
                servers.append(Server("free", free_proc, f"http://127.0.0.1:{free_port_}", key))
            if against is not None:
                prev_env = {**env, "PYTHONPATH": str(Path(against).resolve())}
                prev_proc = stack.enter_context(running(prev_cmd, prev_env, prev_port))
                servers.append(Server("prev", prev_proc, f"http://127.0.0.1:{prev_port}", key))
            for server in servers:
                server.round(measured=False)
            for number in range(rounds):
                for server in (servers if number % 2 == 0 else servers[::-1]):
                    server.round(measured=True)
            for server in servers:
                server.peak_rss_mb = _peak_rss_mb(server.proc.pid)
            if profile_dir is not None:
                profile_dir.mkdir(parents=True, exist_ok=True)
                for server in (ours, bare):
                    with _profiling(server.proc.pid, profile_dir / f"{server.name}.folded"):
                        for _ in range(rounds):
                            server.round(measured=False)
        upstream_calls = len(fake.requests_for("anthropic"))
    ratio = statistics.median(ours.walls) / statistics.median(bare.walls)
    print(f"{CLIENTS * CALLS_PER_CLIENT} concurrent ask_glm over Streamable HTTP, backend latency "
          f"{LATENCY * 1000:.0f} ms, {rounds} rounds after a warm-up")
    print(ours.line())
    print(bare.line())
    print(f"  upstream requests {upstream_calls}; server CPU per call, ours / bare "
          f"{ours.cpu_per_call / bare.cpu_per_call:.2f}")
    others = servers[2:]
    for free in others:
        walls = statistics.median(ours.walls) / statistics.median(free.walls)
        if free.name == "prev":
            print(free.line() + f"  (ours from {against})")
            print(f"  ours / prev: wall {walls:.2f}, server CPU per call "
                  f"{ours.cpu_per_call / free.cpu_per_call:.2f} "
                  f"({(ours.cpu_per_call - free.cpu_per_call) * 1000:+.2f} ms); prev / bare "
                  f"{statistics.median(free.walls) / statistics.median(bare.walls):.2f}, CPU "
                  f"{free.cpu_per_call / bare.cpu_per_call:.2f}")
            continue
        print(free.line() + "  (ours, the key's quotas off)")
        print(f"  with quotas counted / off: wall {walls:.2f}, server CPU per call "
              f"{ours.cpu_per_call / free.cpu_per_call:.2f} "
              f"({(ours.cpu_per_call - free.cpu_per_call) * 1000:+.2f} ms); quotas off / bare "
              f"{statistics.median(free.walls) / statistics.median(bare.walls):.2f}")
    for failure in (ours.failures + bare.failures + [f for o in others for f in o.failures])[:5]:
        print(f"    {failure}")
    if profile_dir is not None:
        print_profile(profile_dir, rounds * CLIENTS * CALLS_PER_CLIENT)
    errors = len(ours.failures) + len(bare.failures) + sum(len(o.failures) for o in others)
    print(f"ratio ours / bare {ratio:.2f} (target ≤ {TARGET_RATIO}, 0 errors): "
          f"{'met' if ratio <= TARGET_RATIO and not errors else 'missed'}")
    return 0 if ratio <= TARGET_RATIO and not errors else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
