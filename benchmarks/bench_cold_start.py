"""Cold start: spawn → ``initialize`` result of ``ask-fable`` (stdio) against a bare MCPServer.

Both servers are spawned the same way (the venv's interpreter, a fresh process, stdio pipes) and
timed from ``Popen`` to the line carrying the ``initialize`` result. The baseline is an
``MCPServer`` with one trivial tool. The ratio printed is median(ask-fable) / median(bare); the
target is ≤ 1.15. Beside it, the CPU each process used from spawn to exit (``initialize``, then
stdin closed: start-up, the session's end and the interpreter's exit), median(ask-fable) /
median(bare), reported with no target. A second pass spawns ``ask-fable`` under
``python -X importtime`` and lists the heavy modules imported by the time ``initialize`` was
answered (the Agent SDK, provider SDKs, the HTTP backends and catalogs must not be among them).

Run: python benchmarks/bench_cold_start.py [repeats]
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.15
REPEATS = 9

BARE_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("bare")


@server.tool()
def ping() -> str:
    return "pong"


server.run("stdio")
"""

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench-cold-start", "version": "1"},
    },
}

# Top-level packages / modules that must wait for the first call that needs them.
HEAVY = (
    "claude_agent_sdk",
    "anthropic",
    "openai",
    "ask_fable.backends.http_client",
    "ask_fable.backends.http_oracles",
    "ask_fable.backends.catalogs",
    "ask_fable.backends.claude_sdk",
    "ask_fable.backends.anthropic_api",
    "ask_fable.backends.openai_api",
    "ask_fable.backends.ollama",
    "ask_fable.backends.cli_oracles",
    "ask_fable.stores.db",
    "sqlite3",
    "hypothesis",
    "pyinstrument",
)


def ask_fable_argv(python: list[str] | None = None) -> list[str]:
    """``ask-fable`` as the installed console script would run it, on this interpreter."""
    return [*(python or [sys.executable]), "-m", "ask_fable"]


def child_env(home: Path) -> dict[str, str]:
    """An isolated environment: own HOME and XDG dirs, no ASK_FABLE_* settings from the shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_FABLE_")}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        ASK_FABLE_QUIET="1",
    )
    return env


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def time_to_initialize(argv: list[str], env: dict[str, str]) -> tuple[float, str, float]:
    """Seconds from spawn to the ``initialize`` result line, the child's stderr, and the CPU seconds
    it used from spawn to exit."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(json.dumps(INITIALIZE) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    reply = json.loads(line)
    if "result" not in reply:
        raise RuntimeError(f"initialize failed: {line!r}")
    try:  # communicate() closes stdin, which ends the stdio session
        _, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
    return elapsed, stderr, _children_cpu() - cpu_before


def imported_at_start(env: dict[str, str]) -> list[str]:
    """Modules ``ask-fable`` imported before answering ``initialize`` (from ``-X importtime``)."""
    _, stderr, _ = time_to_initialize(ask_fable_argv([sys.executable, "-X", "importtime"]), env)
    names = []
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.append(name)
    return names


def main() -> int:
    """Alternate the two servers ``repeats`` times, print medians and the ratio; exit 1 on a miss."""
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else REPEATS
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = child_env(home)
        bare_script = home / "bare_server.py"
        bare_script.write_text(BARE_SERVER, encoding="utf-8")
        bare_argv = [sys.executable, str(bare_script)]
        ours_argv = ask_fable_argv()
        # One unmeasured spawn of each warms the page cache and the .pyc files.
        time_to_initialize(bare_argv, env)
        time_to_initialize(ours_argv, env)
        bare, ours, bare_cpu, ours_cpu = [], [], [], []
        for _ in range(repeats):  # interleaved, so machine noise hits both alike
            for argv, times, cpus in ((bare_argv, bare, bare_cpu), (ours_argv, ours, ours_cpu)):
                elapsed, _, cpu = time_to_initialize(argv, env)
                times.append(elapsed)
                cpus.append(cpu)
        modules = imported_at_start(env)
    bare_ms, ours_ms = statistics.median(bare) * 1000, statistics.median(ours) * 1000
    ratio = ours_ms / bare_ms
    print(f"cold start (spawn -> initialize result), median of {repeats}")
    rows = (("bare MCPServer, one tool:", bare_ms, bare), ("ask-fable (stdio):", ours_ms, ours))
    for label, median_ms, runs in rows:
        print(f"  {label:26}{median_ms:7.1f} ms  (min {min(runs) * 1000:.1f}, max {max(runs) * 1000:.1f})")
    bare_cpu_ms, ours_cpu_ms = statistics.median(bare_cpu) * 1000, statistics.median(ours_cpu) * 1000
    print(f"  CPU from spawn to exit: bare {bare_cpu_ms:.0f} ms, ask-fable {ours_cpu_ms:.0f} ms "
          f"({ours_cpu_ms / bare_cpu_ms:.2f}x)")
    heavy = sorted({m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)})
    ours_pkgs = sorted({m for m in modules if m.startswith("ask_fable")})
    print(f"  modules imported at start: {len(modules)} ({len(ours_pkgs)} from ask_fable)")
    print(f"  heavy modules imported at start: {', '.join(heavy) if heavy else 'none'}")
    met = ratio <= TARGET and not heavy
    print(f"ratio {ratio:.3f} (target <= {TARGET:.2f}): {'ok' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
