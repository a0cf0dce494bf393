"""The team server under hostile load: each attack that once held it, rerun against the real command.

Every figure is measured on the installed ``ask-fable`` in its own process (a temporary HOME, the
fake CLI and the loopback fake provider as backends) and printed next to what the same attack did
before these limits existed:

1. 1,100 sockets sending partial headers without a key, the server under a 1024 open-file limit:
   /healthz and a keyed call answered during the flood, sockets the server holds, seconds until the
   last slow socket is closed, bytes written on stderr;
2. a read key posting 3,000-deep nested JSON: the HTTP status;
3. GET /mcp: the status and how long it took;
4. SIGTERM, SIGHUP and SIGINT to the stdio and the HTTP server mid-call (a CLI that forked a child):
   seconds to exit, exit status, CLI processes left;
5. an HTTP client hanging up mid-call: seconds until its CLI and grandchild are gone, and until the
   model provider sees its request closed;
6. one read key holding 257 requests open (complete headers, ``Content-Length: 100000``, no body):
   how many of another tenant's calls are answered meanwhile, and their median time as a ratio to
   the same calls on the idle server, measured in the same run.

Exit 0 when every attack now fails, 1 otherwise. Run: python benchmarks/bench_hostile_http.py
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.helpers import child_env
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis, is_alive
from tests.fakes.fake_provider import FakeProvider
from tests.reliability.http_server import MCP_HEADERS, HttpServer, closed_by_peer, connect, create_key
from tests.reliability.stdio_peer import StdioPeer

QUESTION = "Why does the worker pool deadlock on shutdown?"
Row = tuple[str, str, str, bool]


def _until(done: Callable[[], bool], limit: float) -> float | None:
    """Seconds until ``done()`` holds (polled), None if it never did within ``limit``."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if done():
            return time.monotonic() - started
        time.sleep(0.01)
    return None


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} s"


def _call_body(tool: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool, "arguments": {"question": QUESTION}}}).encode()


def _raw_post(key: str, body: bytes) -> bytes:
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


def slow_loris(work: Path) -> list[Row]:
    """Attack 1."""
    env = child_env(ASK_FABLE_TOOLSETS="all")
    key = create_key(env, "reader", "read")
    server = HttpServer(env, work / "loris.log", open_files=1024)
    try:
        server.wait_started()
        before = server.stderr_bytes()
        sockets = []
        for _ in range(1100):
            sock = connect(server.port)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            sockets.append(sock)
        with httpx2.Client(base_url=server.url, timeout=30) as http:
            started = time.monotonic()
            health = http.get("/healthz").status_code
            health_s = time.monotonic() - started
            started = time.monotonic()
            listed = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                               headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"}).status_code
            listed_s = time.monotonic() - started
        held = server.open_sockets()
        closed_s = _until(lambda: all(closed_by_peer(s) for s in sockets), 60)
        for sock in sockets:
            sock.close()
        written = server.stderr_bytes() - before
    finally:
        server.close()
    return [
        ("1,100 slow sockets: /healthz", "timed out", f"{health} in {health_s:.2f} s", health == 200),
        ("1,100 slow sockets: keyed call", "120 s read timeout", f"{listed} in {listed_s:.2f} s",
         listed == 200),
        ("1,100 slow sockets: held by the server", "all, ≥ 60 s", f"{held} (bound 512)", held <= 520),
        ("1,100 slow sockets: last one closed after", "never (≥ 60 s)", _seconds(closed_s),
         closed_s is not None and closed_s < 15),
        ("1,100 slow sockets: stderr written", "735 MB in 2 min", f"{written} bytes", written < 16_384),
    ]


def nested_and_get(work: Path) -> list[Row]:
    """Attacks 2 and 3."""
    env = child_env(ASK_FABLE_TOOLSETS="all")
    key = create_key(env, "reader", "read")
    server = HttpServer(env, work / "nested.log")
    try:
        server.wait_started()
        auth = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
        with httpx2.Client(base_url=server.url, timeout=30) as http:
            nested = http.post("/mcp", content=b"[" * 3000 + b"]" * 3000, headers=auth).status_code
            started = time.monotonic()
            got = http.get("/mcp", headers={**auth, "Accept": "text/event-stream"}).status_code
            got_s = time.monotonic() - started
    finally:
        server.close()
    return [
        ("read key, 3,000-deep JSON", "500 (RecursionError)", str(nested), nested == 400),
        ("GET /mcp", "event stream held forever", f"{got} in {got_s:.2f} s", got == 405),
    ]


def _cli_pids(fakes: FakeCLIs) -> list[int]:
    return [c["pid"] for c in fakes.calls("mmx")] + fakes.child_pids("mmx")


def _wait_cli(fakes: FakeCLIs, runs: int) -> None:
    if _until(lambda: len(fakes.child_pids("mmx")) >= runs, 30) is None:
        raise RuntimeError("the fake CLI never started")


def _left(pids: list[int]) -> list[int]:
    _until(lambda: not any(is_alive(p) for p in pids), 5)
    alive = [p for p in pids if is_alive(p)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return alive


def signals(work: Path) -> list[Row]:
    """Attack 4."""
    rows: list[Row] = []
    fakes = install_fake_clis(work / "bin", names=["mmx"])
    fakes.behave("mmx", sleep=60, spawn_child=True)
    env = child_env(PATH=f"{fakes.bin_dir}{os.pathsep}{os.environ['PATH']}", ASK_FABLE_TOOLSETS="all",
                    ASK_FABLE_CACHE="false")
    key = create_key(env, "writer", "write")
    runs = 0
    for name, expected in (("SIGTERM", 0), ("SIGHUP", 0), ("SIGINT", 130)):
        sig = getattr(signal, name)
        seen = len(_cli_pids(fakes))
        peer = StdioPeer(env)
        peer.initialize()
        peer.request("tools/call", {"name": "ask_m3", "arguments": {"question": QUESTION}})
        runs += 1
        _wait_cli(fakes, runs)
        peer.proc.send_signal(sig)
        exit_s = _until(lambda p=peer: p.proc.poll() is not None, 15)
        code = peer.proc.poll()
        left = _left(_cli_pids(fakes)[seen:])
        if code is None:
            peer.proc.kill()
        before = "2 of 2 orphaned" if name != "SIGINT" else "wedged until stdin closed"
        rows.append((f"stdio {name} mid-call", before, f"exit {code} in {_seconds(exit_s)}, {len(left)} left",
                     code == expected and not left))

        seen = len(_cli_pids(fakes))
        server = HttpServer(env, work / f"signal-{name}.log")
        server.wait_started()
        sock = connect(server.port)
        sock.sendall(_raw_post(key, _call_body("ask_m3")))
        runs += 1
        _wait_cli(fakes, runs)
        server.signal(sig)
        exit_s = _until(lambda s=server: s.proc.poll() is not None, 15)
        code = server.proc.poll()
        left = _left(_cli_pids(fakes)[seen:])
        reply = sock.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
        sock.close()
        server.close()
        before = {"SIGTERM": "caller got 500, killed by it", "SIGHUP": "killed at once, 2 of 2 orphaned",
                  "SIGINT": "caller got 500"}[name]
        rows.append((f"http {name} mid-call", before,
                     f"exit {code} in {_seconds(exit_s)}, {len(left)} left, caller got {reply!r}",
                     code == expected and not left))
    return rows


def hang_ups(work: Path) -> list[Row]:
    """Attack 5."""
    fakes = install_fake_clis(work / "bin-hangup", names=["mmx"])
    fakes.behave("mmx", sleep=60, spawn_child=True)
    with FakeProvider() as fp:
        fp.enqueue("anthropic", endless=True, chunk_delay=0.05)
        env = child_env(PATH=f"{fakes.bin_dir}{os.pathsep}{os.environ['PATH']}", ASK_FABLE_TOOLSETS="all",
                        ASK_FABLE_CACHE="false", ASK_FABLE_TIMEOUT="120",
                        ASK_FABLE_GLM_API_KEY="sk-bench-hangup-0123456789",
                        ASK_FABLE_GLM_BASE_URL=fp.base_url)
        key = create_key(env, "writer", "write")
        server = HttpServer(env, work / "hangup.log")
        try:
            server.wait_started()
            sock = connect(server.port)
            sock.sendall(_raw_post(key, _call_body("ask_m3")))
            _wait_cli(fakes, 1)
            sock.close()
            cli_s = _until(lambda: not any(is_alive(p) for p in _cli_pids(fakes)), 30)
            _left(_cli_pids(fakes))
            sock = connect(server.port)
            sock.sendall(_raw_post(key, _call_body("ask_glm")))
            if _until(lambda: bool(fp.requests_for("anthropic")), 30) is None:
                raise RuntimeError("ask_glm never reached the provider")
            [upstream] = fp.requests_for("anthropic")
            sock.close()
            upstream_s = _until(lambda: upstream.client_closed, 30)
        finally:
            server.close()
    return [
        ("client hangs up mid ask_m3: CLI group gone", "ran until the backend timeout", _seconds(cli_s),
         cli_s is not None and cli_s < 1.5),
        ("client hangs up mid ask_glm: upstream closed", "read until the backend timeout",
         _seconds(upstream_s), upstream_s is not None and upstream_s < 1.5),
    ]


def held_bodies(work: Path) -> list[Row]:
    """Attack 6."""
    import statistics

    with FakeProvider() as fp:
        fp.enqueue("anthropic", text="Per client.", times=None)
        env = child_env(ASK_FABLE_TOOLSETS="all", ASK_FABLE_CACHE="false",
                        ASK_FABLE_GLM_API_KEY="sk-bench-held-0123456789", ASK_FABLE_GLM_BASE_URL=fp.base_url)
        mallory = create_key(env, "mallory", "read", tenant="mallory")
        alice = create_key(env, "alice", "ask", tenant="alice")
        server = HttpServer(env, work / "held.log")
        head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + f"Authorization: Bearer {mallory}\r\n".encode() + b"Content-Length: 100000\r\n\r\n")
        try:
            server.wait_started()
            with httpx2.Client(base_url=server.url, timeout=30,
                               headers={**MCP_HEADERS, "Authorization": f"Bearer {alice}"}) as http:
                def timed_calls(count: int) -> tuple[int, list[float]]:
                    answered, times = 0, []
                    for _ in range(count):
                        started = time.monotonic()
                        response = http.post("/mcp", content=_call_body("ask_glm"))
                        times.append(time.monotonic() - started)
                        answered += response.status_code == 200
                    return answered, times

                timed_calls(3)  # warm the imports and the connection
                _, idle = timed_calls(20)
                sockets = []
                for _ in range(257):
                    sock = connect(server.port)
                    sock.sendall(head)
                    sockets.append(sock)
                time.sleep(0.3)
                answered, loaded = timed_calls(20)
                for sock in sockets:
                    sock.close()
        finally:
            server.close()
    ratio = statistics.median(loaded) / statistics.median(idle)
    return [("one read key holds 257 bodies back: other tenant", "503 for 27-30 s, again on reopening",
             f"{answered}/20 answered, median {ratio:.1f}x the idle server's", answered == 20)]


def main() -> int:
    """Run every attack in a temporary HOME and print the table."""
    with tempfile.TemporaryDirectory(prefix="ask-fable-hostile-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        for name in list(os.environ):
            if name.startswith("ASK_FABLE_"):
                del os.environ[name]
        os.environ.update(HOME=str(home), XDG_STATE_HOME=str(home / ".local" / "state"),
                          XDG_CONFIG_HOME=str(home / ".config"))
        rows: list[Row] = []
        for attack in (slow_loris, nested_and_get, signals, hang_ups, held_bodies):
            rows += attack(Path(tmp))
    print(f"{'attack':<46} {'before':<32} {'now':<60} fails now")
    for attack_name, before, now, holds in rows:
        print(f"{attack_name:<46} {before:<32} {now:<60} {'yes' if holds else 'NO'}")
    failing = sum(row[3] for row in rows)
    print(f"verdict: {failing} of {len(rows)} attacks fail now")
    return 0 if failing == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
