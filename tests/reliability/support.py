"""Shared wiring for the reliability tests: settings pointing at the fake provider and MCP call shortcuts."""

from __future__ import annotations

import json
from typing import Any, get_args

from mcp import Client
from mcp.types import CallToolResult

from ask_fable.backends.http_client import RetryPolicy
from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.contract import Status
from ask_fable.core.app import App
from ask_fable.surface.server import AskFableServer, build_server
from tests.fakes.fake_cli import FakeCLIs
from tests.fakes.fake_provider import FakeProvider

#: A key planted in every HTTP backend's settings; it must never come back to a caller.
KEY = "sk-PLANTED-reliability-7e3a9c1f5b2d4e6a"
GLM_MODEL = "glm-5.2"
DEEPSEEK_MODEL = "deepseek-v4-pro"
SIDECAR = '```sidecar\n{"recommendation": "apply", "confidence": "high", "needs_context": []}\n```'


def wired_settings(fp: FakeProvider, **extra: Any) -> dict[str, Any]:
    """Settings that send glm, deepseek and ollama:<id> to ``fp`` with planted keys, cache off."""
    values: dict[str, Any] = {
        "glm_base_url": fp.base_url,
        "deepseek_base_url": fp.base_url,
        "ollama_base_url": fp.base_url,
        "ollama_catalog_url": f"{fp.base_url}/cloud",
        "glm_api_key": KEY,
        "deepseek_api_key": KEY,
        "ollama_api_key": KEY,
        "cache": False,
        "timeout": 10,
    }
    values.update(extra)
    return values


def offline_settings(fp: FakeProvider, clis: FakeCLIs) -> dict[str, Any]:
    """Every backend on a loopback fake, short timeouts, the Claude CLI bridge on the fake claude."""
    return wired_settings(
        fp,
        atlas_base_url=fp.base_url,
        atlas_api_key=KEY,
        openrouter_base_url=f"{fp.base_url}/api/v1",
        openrouter_api_key=KEY,
        use_cli=True,
        claude_cli=str(clis.bin_dir / "claude"),
        timeout=5,
        council_timeout=8,
        chain_timeout=10,
    )


def make_server(toolsets: list[str] | None = None, *, retry: RetryPolicy | None = None,
                **settings: Any) -> AskFableServer:
    """A server over a fresh App with ``settings`` pinned, retrying HTTP calls (catalog listings too) by
    ``retry`` when given (``toolsets`` default: all)."""
    resources = Resources(retry=retry, catalog_retry=retry)  # None keeps each default
    return build_server(App(load_settings(**settings), resources=resources), toolsets=toolsets or ["all"])


def payload_of(result: CallToolResult) -> dict[str, Any]:
    """The structured result, checked to be well formed: a status, isError mirroring it, no traceback."""
    payload = result.structured_content
    assert isinstance(payload, dict), f"no structured content: {result}"
    assert payload.get("status") in get_args(Status), payload
    assert result.is_error is (payload["status"] == "error"), payload
    text = json.dumps(payload) + "".join(getattr(c, "text", "") for c in result.content)
    assert "Traceback (most recent call last)" not in text, text[:2000]
    return payload


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool`` and return its checked structured result."""
    return payload_of(await client.call_tool(tool, arguments))
