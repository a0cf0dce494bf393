"""Catalog tools when the provider cannot be reached: the last catalog fetched is served marked
``stale`` (over the installed ``ask-fable`` command); with none fetched, a structured error with a hint
(the server built in-process)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.helpers import ask_fable_command, child_env, structured
from tests.fakes.fake_provider import FakeProvider

CATALOG = {"data": [
    {"id": "anthropic/claude-opus-5", "name": "Opus 5", "context_length": 1_000_000, "created": 1_790_000_000,
     "pricing": {"prompt": "0.000005", "completion": "0.000025"}, "supported_parameters": ["reasoning"]},
    {"id": "deepseek/deepseek-v4-pro", "name": "V4 Pro", "context_length": 163_840, "created": 1_780_000_000,
     "pricing": {"prompt": "0.0000004", "completion": "0.0000016"}},
]}
CLOUD_TAGS = {"models": [{"name": "glm-5.2"}, {"name": "gpt-oss:120b"}]}
LOCAL_TAGS = {"models": [{"name": "qwen3:8b", "model": "qwen3:8b"}]}


def _server(env: dict[str, str]) -> StdioServerParameters:
    command, *rest = ask_fable_command()
    settings = {"ASK_FABLE_TOOLSETS": "all", "ASK_FABLE_TIMEOUT": "20", **env}
    return StdioServerParameters(command=command, args=rest, env=child_env(**settings))


def _built_here(env: dict[str, str]) -> Client:
    """The server ``_server`` starts, built in this process from the same variables."""
    from ask_fable.config import load_settings
    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server

    settings = load_settings(timeout=20, **{name.removeprefix("ASK_FABLE_").lower(): value
                                           for name, value in env.items()})
    return Client(build_server(App(settings), toolsets=["all"]))


def _dead_url() -> str:
    """A loopback URL nothing listens on any more."""
    with FakeProvider() as gone:
        return gone.base_url


def _env(provider: str, base: str) -> dict[str, str]:
    if provider == "openrouter":
        return {"ASK_FABLE_OPENROUTER_BASE_URL": f"{base}/api/v1"}
    if provider == "atlas":
        return {"ASK_FABLE_ATLAS_BASE_URL": base}
    return {"ASK_FABLE_OLLAMA_BASE_URL": base, "ASK_FABLE_OLLAMA_CATALOG_URL": f"{base}/cloud"}


def _serve(fp: FakeProvider) -> None:
    fp.set_json("GET", "/api/v1/models", CATALOG)
    fp.set_json("GET", "/v1/models", CATALOG)
    fp.set_json("GET", "/cloud/api/tags", CLOUD_TAGS)
    fp.ollama_tags = LOCAL_TAGS


@pytest.mark.parametrize("provider", ["openrouter", "atlas", "ollama"])
async def test_a_provider_gone_after_a_fetch_serves_the_last_catalog_marked_stale(provider: str) -> None:
    """list_<provider>_models fetches once, the provider goes away, the next listing serves the same
    catalog with stale=true and the reason as a warning."""
    tool = f"list_{provider}_models"
    fp = FakeProvider().start()
    try:
        _serve(fp)
        with anyio.fail_after(120):
            async with Client(_server(_env(provider, fp.base_url))) as client:
                fresh = await structured(client, tool, {})
                fp.stop()
                stale = await structured(client, tool, {})
    finally:
        fp.stop()
    print(f"{tool} after the provider went away: {stale}")
    assert fresh["status"] == stale["status"] == "ok"
    assert not fresh.get("stale")
    assert stale["stale"] is True
    if provider == "ollama":
        assert stale["available_cloud"] == fresh["available_cloud"] == ["glm-5.2:cloud", "gpt-oss:120b-cloud"]
        assert stale["pulled_local"] == fresh["pulled_local"] == ["qwen3:8b"]
        assert "connection failed" in stale["catalog_error"] and "connection failed" in stale["local_error"]
    else:
        assert [m["id"] for m in stale["models"]] == [m["id"] for m in fresh["models"]]
        assert "connection failed" in stale["warning"]


@pytest.mark.parametrize(("provider", "setting"), [
    ("openrouter", "ASK_FABLE_OPENROUTER_BASE_URL"),
    ("atlas", "ASK_FABLE_ATLAS_BASE_URL"),
    ("ollama", "ASK_FABLE_OLLAMA_BASE_URL"),
])
async def test_an_unreachable_provider_with_nothing_cached_is_a_structured_error(
    provider: str, setting: str
) -> None:
    """No catalog fetched yet and the provider unreachable: status error, the cause in detail, and a
    hint naming the setting to check."""
    with anyio.fail_after(120):
        async with _built_here(_env(provider, _dead_url())) as client:
            result: dict[str, Any] = await structured(client, f"list_{provider}_models", {})
    print(result)
    assert (result["status"], result["kind"]) == ("error", "upstream_error")
    assert "connection failed" in result["detail"]
    assert setting in result["hint"]
    assert "Traceback" not in str(result)
