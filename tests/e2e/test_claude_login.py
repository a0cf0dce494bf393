"""A missing or rejected Claude login is a configuration state with a fix, never an outage.

Each test spawns the installed ``ask-fable`` over stdio with the real bundled Claude Code CLI and an
isolated HOME / CLAUDE_CONFIG_DIR, so the CLI finds no login of the developer's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.helpers import ask_fable_command, child_env, structured
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli

pytestmark = pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")

DUMMY_KEY = "sk-ant-api03-rejectedRejectedRejected0123456789"
#: A breaker window of two outcomes opens on two failures (each one a Claude Code process here):
#: one call more, and a tripped breaker would answer the last one `circuit_open`.
BREAKER = {"ASK_FABLE_BREAKER_WINDOW": "2"}
CALLS = 3
#: Claude Code's own retries of a rejected request (two by default, with backoff) add seconds per
#: call and change nothing about how the rejection is classified.
NO_CLI_RETRIES = {"CLAUDE_CODE_MAX_RETRIES": "0"}


def _server(tmp_path: Path, fp: FakeProvider, **env: str) -> StdioServerParameters:
    claude_dir = tmp_path / "claude-config"
    claude_dir.mkdir(exist_ok=True)
    command, *rest = ask_fable_command()
    return StdioServerParameters(
        command=command,
        args=[*rest, "--toolsets", "default,single"],
        env=child_env(CLAUDE_CONFIG_DIR=str(claude_dir), ANTHROPIC_BASE_URL=fp.base_url, **BREAKER, **env),
    )


async def _ask_repeatedly(params: StdioServerParameters, tool: str) -> list[dict[str, Any]]:
    results = []
    with anyio.fail_after(240):
        async with Client(params, mode="legacy") as client:
            for n in range(CALLS):
                results.append(await structured(client, tool, {
                    "question": f"Why does the retry loop double-charge customers (attempt {n})?",
                    "context": "def charge(): ...",
                }))
    return results


@pytest.mark.parametrize("use_cli", ["0", "1"], ids=["agent-sdk", "cli-bridge"])
async def test_no_claude_login_is_not_configured_on_every_call_and_never_trips_the_breaker(
    tmp_path: Path, fp: FakeProvider, use_cli: str
) -> None:
    """Asks without any Claude credentials: each one says how to log in, none is circuit_open."""
    results = await _ask_repeatedly(_server(tmp_path, fp, ASK_FABLE_USE_CLI=use_cli), "ask")

    assert [r["kind"] for r in results] == ["not_configured"] * CALLS
    for result in results:
        assert result["status"] == "error"
        assert "`ask-fable login`" in result["hint"] and "ANTHROPIC_API_KEY" in result["hint"]
        assert "Not logged in" in result["detail"]
    assert fp.requests_for("anthropic") == [], "without a login nothing reaches the provider"


async def test_rejected_api_key_is_not_configured_and_the_key_never_shows(
    tmp_path: Path, fp: FakeProvider
) -> None:
    """The provider answers 401 authentication_error to every request: a config state with a fix."""
    fp.enqueue("anthropic", status=401, error="invalid x-api-key", times=None)
    results = await _ask_repeatedly(_server(tmp_path, fp, ANTHROPIC_API_KEY=DUMMY_KEY, **NO_CLI_RETRIES),
                                    "ask_opus5")

    assert [r["kind"] for r in results] == ["not_configured"] * CALLS
    assert all("ANTHROPIC_API_KEY" in r["hint"] for r in results)
    assert len(fp.requests_for("anthropic")) >= CALLS, "every call reached the provider: no circuit opened"
    assert DUMMY_KEY not in json.dumps(results)


async def test_revoked_oauth_token_is_not_configured(tmp_path: Path, fp: FakeProvider) -> None:
    """A 403 permission_error for a revoked login names the fix too."""
    fp.enqueue("anthropic", status=403, error="OAuth token has been revoked.", times=None)
    server = _server(tmp_path, fp, ANTHROPIC_API_KEY=DUMMY_KEY, **NO_CLI_RETRIES)
    results = await _ask_repeatedly(server, "ask")

    assert {r["kind"] for r in results} == {"not_configured"}
    assert all(r.get("hint") for r in results)
    assert DUMMY_KEY not in json.dumps(results)
