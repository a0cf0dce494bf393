"""Caps on one call against a real ``ask-fable serve --http``: a request over a cap is ``bad_args`` naming
the setting, and nothing reaches a provider; context entries over a tenant's cap are refused without
losing what was stored; an oversized request body is refused before any tool runs."""

from __future__ import annotations

from typing import Any

import anyio

from ask_fable.config import load_settings
from ask_fable.core.tokens import tier_models
from tests.e2e.team_server import create_key, team_server
from tests.fakes.fake_provider import FakeProvider

BACKEND_KEY = "sk-or-backend-0123456789abcdef"


def provider_env(fp: FakeProvider, **extra: str) -> dict[str, str]:
    """The team server's environment: GLM and OpenRouter on the fake provider."""
    return {
        "ASK_FABLE_GLM_API_KEY": BACKEND_KEY, "ASK_FABLE_GLM_BASE_URL": f"{fp.base_url}/api/anthropic",
        "ASK_FABLE_OPENROUTER_API_KEY": BACKEND_KEY, "ASK_FABLE_OPENROUTER_BASE_URL": f"{fp.base_url}/api/v1",
        "ASK_FABLE_CACHE": "0", **extra,
    }


def _bad_args_naming(result: dict[str, Any], setting: str) -> None:
    assert (result["status"], result["kind"]) == ("error", "bad_args"), result
    assert setting in result["detail"] and "No model was called" in result["detail"]


async def _call(server: Any, key: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with server.client(key) as client:
        result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    payload: dict[str, Any] = result.structured_content
    return payload


async def test_oversized_councils_chains_and_debates_are_refused_before_any_provider_call(
        fp: FakeProvider) -> None:
    """A 500-id OpenRouter council, a 25-member council and a 200-stage chain make no upstream request."""
    key = create_key("Agent", "--tenant", "team")["key"]
    question = "Which of these retry strategies is safe for idempotent writes?"
    async with team_server(provider_env(fp)) as server:
        with anyio.fail_after(60):
            openrouter = await _call(server, key, "ask_openrouter_council", {
                "question": question, "models": [f"lab{i}/model-{i}" for i in range(500)]})
            council = await _call(server, key, "ask_council", {
                "question": question, "models": [f"openrouter:lab/m{i}" for i in range(25)]})
            chain = await _call(server, key, "ask_chain", {"question": question,
                                                           "pipeline": " > ".join(["glm"] * 200)})
            debate = await _call(server, key, "ask_debate", {"question": question, "rounds": 3})
    _bad_args_naming(openrouter, "ASK_FABLE_MAX_COUNCIL_MEMBERS")
    assert "500 council members" in openrouter["detail"]
    _bad_args_naming(council, "ASK_FABLE_MAX_COUNCIL_MEMBERS")
    _bad_args_naming(chain, "ASK_FABLE_MAX_CHAIN_STAGES")
    assert "200 chain stages" in chain["detail"]
    assert (debate["status"], debate["kind"]) == ("error", "bad_args") and "rounds" in debate["detail"]
    assert fp.requests == []


async def test_the_caps_are_settings(fp: FakeProvider) -> None:
    """An operator who wants bigger panels raises the setting; a council at the cap runs."""
    key = create_key("Agent", "--tenant", "team")["key"]
    env = provider_env(fp, ASK_FABLE_MAX_COUNCIL_MEMBERS="3")
    async with team_server(env) as server:
        with anyio.fail_after(60):
            over = await _call(server, key, "ask_openrouter_council", {
                "question": "Is this lock ordering safe?", "models": ["a/1", "b/2", "c/3", "d/4"],
                "synthesizer": "openrouter:openai/gpt-5.6-sol"})
            assert fp.requests == []
            at_cap = await _call(server, key, "ask_openrouter_council", {
                "question": "Is this lock ordering safe?", "models": ["a/1", "b/2", "c/3"],
                "synthesizer": "openrouter:openai/gpt-5.6-sol"})
    _bad_args_naming(over, "ASK_FABLE_MAX_COUNCIL_MEMBERS")
    assert at_cap["status"] == "ok", at_cap
    assert {r.model for r in fp.requests_for("openai")} >= {"a/1", "b/2", "c/3"}


def test_the_largest_built_in_tier_fits_the_default_member_cap() -> None:
    settings = load_settings(glm_api_key="k" * 12, deepseek_api_key="k" * 12, openrouter_api_key="k" * 12,
                             atlas_api_key="k" * 12, ollama_api_key="k" * 12)
    assert len(tier_models("full", settings)) <= settings.max_council_members


async def test_context_over_a_tenants_cap_is_refused_and_nothing_stored_is_lost(fp: FakeProvider) -> None:
    """Bytes and entries per tenant: the write that would go over is bad_args naming the setting, the
    entries already stored read back unchanged, and another tenant has its own room."""
    alice = create_key("Alice", "--tenant", "alice")["key"]
    bob = create_key("Bob", "--tenant", "bob")["key"]
    megabyte = "x" * 1_000_000
    env = provider_env(fp, ASK_FABLE_CONTEXT_MAX_TENANT_BYTES="2500000",
                       ASK_FABLE_CONTEXT_MAX_TENANT_ENTRIES="3")
    async with team_server(env) as server, server.client(alice) as client:

        async def tool(name: str, **arguments: str) -> dict[str, Any]:
            payload = (await client.call_tool(name, arguments)).structured_content
            assert payload is not None
            return payload

        with anyio.fail_after(60):
            stored = [await tool("context_write", key=k, value=v) for k, v in (("a", "A" + megabyte),
                                                                              ("b", "B" + megabyte))]
            too_big = await tool("context_write", key="c", value=megabyte)
            replaced = await tool("context_write", key="a", value="a" + megabyte)
            small = await tool("context_write", key="d", value="notes")
            too_many = await tool("context_write", key="e", value="more")
            kept = await tool("context_read", key="b")
            listed = await tool("context_list")
            other = await _call(server, bob, "context_write", {"key": "c", "value": megabyte})
    assert [s["status"] for s in stored] == ["ok", "ok"]
    assert too_big["kind"] == "bad_args" and "nothing was stored" in too_big["detail"]
    assert "ASK_FABLE_CONTEXT_MAX_TENANT_BYTES" in too_big["detail"]
    assert (replaced["status"], small["status"]) == ("ok", "ok")
    assert too_many["kind"] == "bad_args" and "ASK_FABLE_CONTEXT_MAX_TENANT_ENTRIES" in too_many["detail"]
    assert kept["value"] == "B" + megabyte
    assert sorted(e["key"] for e in listed["entries"]) == ["a", "b", "d"]
    assert other["status"] == "ok"
    assert fp.requests == []


async def test_a_request_body_over_the_cap_gets_413_and_runs_nothing(fp: FakeProvider) -> None:
    key = create_key("Agent", "--tenant", "team")["key"]
    env = provider_env(fp, ASK_FABLE_HTTP_MAX_BODY_BYTES="65536")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "context_write", "arguments": {"key": "big", "value": "x" * 100_000}}}
    async with team_server(env) as server:
        with anyio.fail_after(60):
            response = await server.post(key, body)
            async with server.client(key) as client:
                listed = (await client.call_tool("context_list", {})).structured_content
    assert response.status_code == 413
    assert "65536 bytes" in response.json()["error"]["message"]
    assert listed is not None and listed["entries"] == []
