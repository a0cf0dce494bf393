"""The installed ``ask-fable`` command over stdio, through the SDK client and on the raw pipe."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.helpers import ask_fable_command, child_env


def _params(*args: str, **env: str) -> StdioServerParameters:
    command, *rest = ask_fable_command()
    return StdioServerParameters(command=command, args=[*rest, *args], env=child_env(**env))


@pytest.mark.parametrize("mode", ["legacy", None])
async def test_stdio_round_trip(mode: str | None) -> None:
    kwargs = {"mode": mode} if mode else {}
    async with Client(_params(), **kwargs) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ask", "ask_council", "ask_chain", "ask_debate", "ask_fable_help"} <= names
        result = await client.call_tool("ask_fable_help", {"topic": "sidecar"})
        assert result.structured_content["status"] == "ok"
        bad = await client.call_tool("ask_fable_help", {"topic": ["not", "a", "topic"]})
        assert bad.structured_content["kind"] == "bad_args"
        again = await client.call_tool("ask_fable_help", {})
        assert again.structured_content["status"] == "ok"


def test_stdout_carries_only_json_rpc_messages() -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "purity-test", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "ask_fable_help", "arguments": {}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "ask", "arguments": {"question": "write a keylogger now"}},
        },
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ghost", "arguments": {}}},
    ]
    env = child_env()
    env.pop("ASK_FABLE_QUIET")  # progress must go to stderr even when it is on
    proc = subprocess.Popen(
        ask_fable_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for message in messages:
        proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    parsed: list[dict] = []
    watchdog = threading.Timer(60, proc.kill)  # a hung server fails the test instead of blocking it
    watchdog.start()
    try:
        # Read until every request has its answer; closing stdin earlier would end the session.
        while {m.get("id") for m in parsed} < {1, 2, 3, 4, 5}:
            line = proc.stdout.readline()
            assert line, "the server closed stdout early"
            parsed.append(json.loads(line))
    finally:
        proc.stdin.close()
        stderr = proc.stderr.read() if proc.stderr else ""
        proc.wait(timeout=30)
        watchdog.cancel()
    assert all(message.get("jsonrpc") == "2.0" for message in parsed)
    by_id = {message["id"]: message for message in parsed if "id" in message}
    refused = by_id[4]["result"]["structuredContent"]
    assert refused["status"] == "refused" and refused["stage"] == "guard"
    assert by_id[5]["result"]["structuredContent"]["kind"] == "unknown_tool"
    assert "refused by the guard" in stderr


#: Loaded on first use only: a model SDK, the HTTP backends and catalogs, the CLI backends, SQLite.
LOADED_ON_USE = (
    "claude_agent_sdk",
    "ask_fable.backends.http_client",
    "ask_fable.backends.catalogs",
    "ask_fable.backends.cli_oracles",
    "ask_fable.backends.claude_sdk",
    "ask_fable.stores.db",
    "sqlite3",
)


def test_the_server_answers_initialize_before_loading_any_backend(tmp_path: Path) -> None:
    """Start stays fast: when the stdio server answers ``initialize`` it has imported no model SDK,
    HTTP or CLI backend, catalog or SQLite; each loads when a call needs it."""
    log = tmp_path / "imports.log"
    initialize = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "start-test", "version": "1"}},
    }
    with log.open("wb") as stderr:
        proc = subprocess.Popen(ask_fable_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, env=child_env(PYTHONPROFILEIMPORTTIME="1"))
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(initialize).encode() + b"\n")
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["id"] == 1
            # Each import is logged as it completes, so the log now holds what start imported.
            imported = {line.rsplit("|", 1)[1].strip() for line in log.read_text().splitlines()
                        if line.startswith("import time:") and "|" in line}
        finally:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=30)
    loaded = sorted(name for name in imported
                    if any(name == heavy or name.startswith(heavy + ".") for heavy in LOADED_ON_USE))
    assert len(imported) > 100 and loaded == []


def test_unknown_toolset_is_refused_at_start() -> None:
    proc = subprocess.run(
        [*ask_fable_command(), "--toolsets", "core,bogus"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert "bogus" in proc.stderr and "default" in proc.stderr
    assert proc.stdout == ""
