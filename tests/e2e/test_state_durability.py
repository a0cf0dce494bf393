"""Several server processes sharing the state directory, one killed with SIGKILL mid-write.

Each child is a real server (an ``App`` behind the MCP server, driven by the in-memory client)
that writes the context bus and asks GLM on the loopback fake provider in full trace mode with
saved answers, so every store is written: context.db, cache.db, traces.db + bundles, hub.db, the
audit log (rotating) and answers. A child acknowledges an iteration only after both calls came
back ``ok``. Afterwards every acknowledged write must be readable through the tools, every
database must pass ``integrity_check``, no caller may have seen ``database is locked``, and every
file under the state directory must be ``0600`` (directories ``0700``).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.config import config_file_path, load_settings, state_dir
from ask_fable.core.app import App
from ask_fable.stores.audit import audit_log_for
from ask_fable.surface.server import build_server
from tests.e2e.helpers import ask_fable_command, child_env
from tests.fakes.fake_provider import FakeProvider

KEY = "glm-durability-key-0123456789"

CHILD = r"""
import json, sys
import anyio
from mcp import Client
from ask_fable.core.app import App
from ask_fable.surface.server import build_server

worker, count, ack_path, fail_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

async def main():
    async with Client(build_server(App(), toolsets=["all"])) as c:
        i = 0
        while count < 0 or i < count:
            key = f"{worker}-{i}"
            wrote = await c.call_tool("context_write", {"key": key, "value": f"value of {key} " + "x" * 2000,
                                                        "description": f"durability {key}"})
            asked = await c.call_tool("ask_glm", {"question": f"Durability question {key}?"})
            listed = await c.call_tool("context_list", {})
            bad = [(n, r.structured_content) for n, r in (("context_write", wrote), ("ask_glm", asked),
                                                          ("context_list", listed))
                   if (r.structured_content or {}).get("status") != "ok"]
            if bad:
                with open(fail_path, "a") as f:
                    f.write(json.dumps(bad) + "\n")
            else:
                with open(ack_path, "a") as f:
                    f.write(f"{i} {asked.structured_content['trace_id']}\n")
            i += 1

anyio.run(main)
"""



def _env(fp: FakeProvider) -> dict[str, str]:
    return child_env(
        ASK_FABLE_GLM_API_KEY=KEY, ASK_FABLE_GLM_BASE_URL=fp.base_url, ASK_FABLE_TIMEOUT="30",
        ASK_FABLE_TRACE_MODE="full", ASK_FABLE_SAVE="1", ASK_FABLE_AUDIT_MAX_BYTES="16384",
        ASK_FABLE_QUIET="0", ASK_FABLE_PROJECT_ID="durability",
    )


_STARTED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _no_worker_outlives_its_test() -> Iterator[None]:
    """A failing assertion must not leave child servers (one of them loops forever) running."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


class Worker:
    """One child server process and the files it reports through."""

    def __init__(self, tmp_path: Path, name: str, count: int, env: dict[str, str]) -> None:
        self.name = name
        self.ack = tmp_path / f"ack-{name}"
        self.fail = tmp_path / f"fail-{name}"
        self.err = tmp_path / f"stderr-{name}"
        with open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", CHILD, name, str(count), str(self.ack), str(self.fail)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=tmp_path,
            )
        _STARTED.append(self.proc)

    def acked(self) -> list[tuple[int, str]]:
        """Acknowledged iterations; a torn last line (the child died mid-write) is not an ack."""
        if not self.ack.exists():
            return []
        out = []
        for line in self.ack.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1]:
                out.append((int(parts[0]), parts[1]))
        return out

    def failures(self) -> list[Any]:
        return [json.loads(line) for line in self.fail.read_text().splitlines()] if self.fail.exists() else []

    def stderr(self) -> str:
        return self.err.read_text(errors="replace")


async def _wait_exit(worker: Worker, timeout: float = 60) -> int:
    with anyio.fail_after(timeout):
        while worker.proc.poll() is None:
            await anyio.sleep(0.05)
    return worker.proc.returncode


async def _wait_acks(worker: Worker, count: int, timeout: float = 60) -> None:
    with anyio.fail_after(timeout):
        while len(worker.acked()) < count:
            assert worker.proc.poll() is None, worker.stderr()
            await anyio.sleep(0.02)


def _assert_private_modes() -> None:
    checked = 0
    for base in (state_dir(), config_file_path().parent):
        if not base.exists():
            continue
        assert stat.S_IMODE(base.stat().st_mode) == 0o700, base
        for dirpath, dirnames, filenames in os.walk(base):
            for name in dirnames:
                path = Path(dirpath) / name
                assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
            for name in filenames:
                path = Path(dirpath) / name
                assert stat.S_IMODE(path.lstat().st_mode) == 0o600, path
                checked += 1
    assert checked >= 8


def _assert_databases_intact() -> None:
    databases = sorted(state_dir().glob("*.db"))
    assert {p.name for p in databases} >= {"context.db", "cache.db", "traces.db", "hub.db"}
    for path in databases:
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", path


async def _verify(workers: list[Worker], fp: FakeProvider) -> None:
    """Every acknowledged write is readable through the tools of a fresh server."""
    settings = load_settings(project_id="durability", trace_mode="full", save=True, glm_api_key=KEY,
                             glm_base_url=fp.base_url)
    audit_ids = {r.get("trace_id") for path in audit_log_for(settings).files()
                 for r in map(json.loads, path.read_text().splitlines())}
    async with Client(build_server(App(settings), toolsets=["all"])) as c:
        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = (await c.call_tool(tool, arguments)).structured_content
            assert result is not None
            return result

        listed = {e["key"] for e in (await call("context_list", {}))["entries"]}
        peek = await call("session_peek", {"session_key": "ask_glm"})
        hub_questions = {t["question"] for t in peek["turns"]}
        for worker in workers:
            for i, trace_id in worker.acked():
                key = f"{worker.name}-{i}"
                assert key in listed
                read = await call("context_read", {"key": key})
                assert read["status"] == "ok" and read["value"].startswith(f"value of {key} ")
                trace = await call("trace_get", {"trace_id": trace_id, "include_content": True,
                                                 "max_chars": 200})
                assert trace["status"] == "ok" and trace["trace"]["status"] == "ok", trace
                assert f"Durability question {key}?" in trace["content"]
                assert f"Durability question {key}?" in hub_questions
                assert trace_id in audit_ids
        acked = sum(len(w.acked()) for w in workers)
        stats = await call("stats", {"window": "all", "by": "tool"})
        calls = {b["tool"]: b["calls"] for b in stats["buckets"]}
        assert calls.get("ask_glm", 0) >= acked
        # The stores still take writes after the crash.
        assert (await call("context_write", {"key": "after", "value": "still writable"}))["status"] == "ok"
        assert (await call("ask_glm", {"question": "Does the state survive a crash?"}))["status"] == "ok"


def _assert_no_lock_errors(workers: list[Worker]) -> None:
    for worker in workers:
        assert worker.failures() == [], worker.failures()
        text = worker.stderr()
        assert "database is locked" not in text and "could not persist" not in text, text[-2000:]


async def test_concurrent_servers_and_a_sigkilled_writer_lose_no_acknowledged_write(
    fp: FakeProvider, tmp_path: Path
) -> None:
    env = _env(fp)
    steady = [Worker(tmp_path, f"w{n}", 10, env) for n in range(3)]
    victim = Worker(tmp_path, "victim", -1, env)
    await _wait_acks(victim, 4)
    victim.proc.send_signal(signal.SIGKILL)
    assert await _wait_exit(victim) == -signal.SIGKILL
    for worker in steady:
        assert await _wait_exit(worker) == 0, worker.stderr()[-3000:]
        assert len(worker.acked()) == 10
    _assert_no_lock_errors(steady)
    assert victim.failures() == []
    _assert_databases_intact()
    await _verify([*steady, victim], fp)
    audit_files = audit_log_for(load_settings()).files()
    assert len(audit_files) > 1  # rotation happened under contention
    _assert_private_modes()


@pytest.mark.slow
async def test_many_servers_with_repeated_kills(fp: FakeProvider, tmp_path: Path) -> None:
    env = _env(fp)
    steady = [Worker(tmp_path, f"w{n}", 40, env) for n in range(4)]
    victims = []
    for round_ in range(3):
        victim = Worker(tmp_path, f"victim{round_}", -1, env)
        victims.append(victim)
        await _wait_acks(victim, 3 + round_ * 2)
        victim.proc.send_signal(signal.SIGKILL)
        await _wait_exit(victim)
    for worker in steady:
        assert await _wait_exit(worker, timeout=300) == 0, worker.stderr()[-3000:]
    _assert_no_lock_errors(steady)
    _assert_databases_intact()
    await _verify([*steady, *victims], fp)
    _assert_private_modes()


@pytest.mark.slow
async def test_installed_servers_over_stdio_share_the_stores(fp: FakeProvider, tmp_path: Path) -> None:
    """Three ``ask-fable`` processes over stdio, called concurrently, then read back by a fourth."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = _env(fp)
    env["ASK_FABLE_TOOLSETS"] = "all"
    acked: list[tuple[str, str]] = []

    async def serve(name: str) -> None:
        params = StdioServerParameters(command=ask_fable_command()[0], args=ask_fable_command()[1:],
                                       env=env, cwd=str(tmp_path))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for i in range(8):
                key = f"{name}-{i}"
                wrote = await session.call_tool("context_write", {"key": key, "value": f"value of {key} x"})
                asked = await session.call_tool("ask_glm", {"question": f"Durability question {key}?"})
                assert wrote.structured_content["status"] == "ok", wrote.structured_content
                assert asked.structured_content["status"] == "ok", asked.structured_content
                acked.append((key, asked.structured_content["trace_id"]))

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(serve, f"stdio{n}")
    assert len(acked) == 24
    _assert_databases_intact()
    async with Client(build_server(App(load_settings()), toolsets=["all"])) as c:
        for key, trace_id in acked:
            assert (await c.call_tool("context_read", {"key": key})).structured_content["status"] == "ok"
            trace = (await c.call_tool("trace_get", {"trace_id": trace_id})).structured_content
            assert trace["status"] == "ok"
    _assert_private_modes()
