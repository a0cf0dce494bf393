"""Rejected or missing logins over the installed ``ask-fable`` command: a fix, never a tripped breaker."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from tests.e2e.helpers import ask_fable_command, child_env, structured
from tests.fakes.fake_cli import install_fake_clis
from tests.fakes.fake_provider import FakeProvider

KEY = "sk-PLANTED-auth-0b1c2d3e4f5a6b7c8d9e"
QUESTION = "Is the retry loop in the billing client bounded?"
#: More calls than the breaker needs to open (5 samples at a 0.5 error rate).
CALLS = 8


def _server(**env: str) -> StdioServerParameters:
    command, *rest = ask_fable_command()
    settings = {"ASK_FABLE_TOOLSETS": "single", "ASK_FABLE_CACHE": "false", "ASK_FABLE_TIMEOUT": "20"}
    return StdioServerParameters(command=command, args=rest, env=child_env(**settings, **env))


async def _repeat(params: StdioServerParameters, tool: str) -> list[dict[str, Any]]:
    with anyio.fail_after(120):
        async with Client(params) as client:
            return [await structured(client, tool, {"question": QUESTION}) for _ in range(CALLS)]


async def test_rejected_http_key_is_not_configured_every_time() -> None:
    """8 ask_glm calls answered 401: all not_configured naming ASK_FABLE_GLM_API_KEY, none shed, no key."""
    with FakeProvider() as fp:
        fp.enqueue("anthropic", status=401, error=f"invalid x-api-key {KEY}", times=None)
        results = await _repeat(
            _server(ASK_FABLE_GLM_BASE_URL=fp.base_url, ASK_FABLE_GLM_API_KEY=KEY), "ask_glm"
        )
        sent = len(fp.requests_for("anthropic"))
    print(f"ask_glm x{CALLS} on 401: kinds {[r['kind'] for r in results]}; requests {sent}")
    assert [(r["status"], r["kind"]) for r in results] == [("error", "not_configured")] * CALLS
    assert all("ASK_FABLE_GLM_API_KEY" in r["hint"] for r in results)
    assert all("401" in r["detail"] for r in results)
    assert sent == CALLS  # every call reached the provider: nothing was shed, nothing retried
    assert all(KEY not in str(r) for r in results)


async def test_logged_out_cli_is_not_configured_every_time(tmp_path: Path) -> None:
    """8 ask_codex calls on a codex that prints "Not logged in" and exits 1: all not_configured, fix named."""
    clis = install_fake_clis(tmp_path / "bin", names=["codex"])
    clis.behave("codex", exit_code=1, stderr="Error: Not logged in\n")
    results = await _repeat(_server(PATH=f"{clis.bin_dir}{os.pathsep}{os.environ['PATH']}"), "ask_codex")
    print(f"ask_codex x{CALLS} logged out: kinds {[r['kind'] for r in results]}")
    assert [(r["status"], r["kind"]) for r in results] == [("error", "not_configured")] * CALLS
    assert all("codex login" in r["hint"] for r in results)
    assert all("Not logged in" in r["detail"] for r in results)
    assert len(clis.calls("codex")) == CALLS  # every call ran the CLI: the breaker never opened
