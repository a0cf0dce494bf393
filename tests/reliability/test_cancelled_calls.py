"""An interrupted call leaves a record: Ctrl-C on the installed command mid-council, and an MCP request
the client cancels, are traced and audited as ``cancelled`` with what had happened so far."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import IO, Any

import anyio
import pytest

from tests.e2e.helpers import ask_fable_command, child_env
from tests.fakes.fake_cli import FakeCLIs, install_fake_clis
from tests.reliability.processes import cli_running, survivors_of
from tests.reliability.stdio_peer import StdioPeer

QUESTION = "Why does the worker pool deadlock on shutdown?"


@pytest.fixture
def panel(tmp_path: Path) -> FakeCLIs:
    """grok and kimi answer at once; mmx forks a child and sleeps for a minute."""
    handle = install_fake_clis(tmp_path / "bin", names=["mmx", "grok", "kimi"])
    handle.behave("mmx", sleep=60, spawn_child=True)
    return handle


def _env(fakes: FakeCLIs) -> dict[str, str]:
    return child_env(PATH=f"{fakes.bin_dir}{os.pathsep}{os.environ['PATH']}", ASK_FABLE_CACHE="false",
                     ASK_FABLE_COUNCIL_CUT_STRAGGLERS="0", ASK_FABLE_TOOLSETS="all")


def _command(args: list[str], env: dict[str, str]) -> Any:
    done = subprocess.run([*ask_fable_command(), *args, "--json"], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _audit(env: dict[str, str]) -> list[dict[str, Any]]:
    state = Path(env["XDG_STATE_HOME"]) / "ask_fable" / "decisions.jsonl"
    return [json.loads(line) for line in state.read_text().splitlines() if line.strip()]


class _Lines:
    """A child's stderr, read line by line as it comes."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.text = ""
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        for line in stream:
            self.text += line.decode(errors="replace")

    async def wait_for(self, *parts: str) -> None:
        with anyio.fail_after(30):
            while not all(part in self.text for part in parts):
                await anyio.sleep(0.02)


async def test_ctrl_c_mid_council_leaves_a_cancelled_trace_and_audit_line(panel: FakeCLIs) -> None:
    env = {**_env(panel), "ASK_FABLE_QUIET": "0"}
    proc = subprocess.Popen([*ask_fable_command(), "council", QUESTION, "--models", "grok,kimi,m3"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    progress = _Lines(proc.stderr)
    try:
        pids = await cli_running(panel)
        await progress.wait_for("grok: ok", "kimi: ok")
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, progress.text
    assert "Traceback" not in progress.text
    assert "interrupted; the call is recorded as cancelled" in progress.text
    assert await survivors_of(pids) == []

    listed = _command(["trace", "list", "--tool", "ask_council"], env)["traces"]
    assert [t["status"] for t in listed] == ["cancelled"], listed
    trace_id = listed[0]["trace_id"]
    timeline = _command(["trace", "get", trace_id], env)["trace"]
    events = timeline["events"]
    ended = {e["attrs"]["token"]: e["attrs"]["status"] for e in events if e["name"] == "provider.end"}
    assert ended == {"grok": "ok", "kimi": "ok"}
    cancelled = next(e for e in timeline["events"] if e["name"] == "cancelled")
    assert cancelled["attrs"]["running"] == ["minimax"] and cancelled["attrs"]["finished"] == 2

    (line,) = [r for r in _audit(env) if r["trace_id"] == trace_id]
    assert (line["status"], line["kind"], line["tool"]) == ("cancelled", "cancelled", "ask_council")
    assert sorted(m["token"] for m in line["members"]) == ["grok", "kimi"]


async def test_a_cancelled_mcp_request_leaves_a_cancelled_record(panel: FakeCLIs) -> None:
    env = _env(panel)
    peer = StdioPeer(env)
    try:
        peer.initialize()
        request_id = peer.request("tools/call", {"name": "ask_m3", "arguments": {"question": QUESTION}})
        pids = await cli_running(panel)
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": request_id, "reason": "the user gave up"}})
        assert await survivors_of(pids) == []
        with anyio.fail_after(20):
            while True:
                listed = peer.call_tool("trace_list", {"tool": "ask_m3"})["result"]["structuredContent"]
                if listed["traces"]:
                    break
                await anyio.sleep(0.05)
    finally:
        peer.proc.kill()
        peer.proc.wait()
    (trace,) = listed["traces"]
    assert trace["status"] == "cancelled"
    (line,) = [r for r in _audit(env) if r["trace_id"] == trace["trace_id"]]
    assert (line["status"], line["kind"]) == ("cancelled", "cancelled")
