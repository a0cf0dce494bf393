"""Know before you pay: ``estimate: true`` prices a call without calling a model, ``max_cost_usd``
refuses (or trims a council to fit) before any request, and a key's daily budget admits a call only
when its whole estimate fits. Through MCP clients against the fake provider."""

from __future__ import annotations

from typing import Any

import anyio

from tests.e2e.team_server import create_key, list_keys, team_server
from tests.e2e.test_caps import provider_env
from tests.e2e.test_mode_tools import answer, call, http_settings
from tests.fakes.fake_provider import FakeProvider

COUNCIL = {"question": "Should the cache keep its global lock?",
           "models": ["glm", "deepseek", "ollama:qwen3:8b"], "synthesizer": "deepseek"}


async def test_a_council_estimate_prices_every_planned_call_and_asks_no_model(fp: FakeProvider) -> None:
    result = await call("ask_council", {**COUNCIL, "estimate": True}, http_settings(fp))
    assert result["status"] == "ok", result
    assert "answer" not in result and "no model was called" in result["note"]
    assert not fp.requests
    estimate = result["estimate"]
    calls = estimate["calls"]
    assert [(c["token"], c["role"]) for c in calls] == [
        ("glm", "member"), ("deepseek", "member"), ("ollama:qwen3:8b", "member"), ("deepseek", "synthesizer")]
    assert all(c["prompt_tokens"] > 0 and c["max_output_tokens"] == 65536 for c in calls)
    # The synthesizer reads every member's answer: its prompt is the longest.
    assert calls[3]["prompt_tokens"] > calls[1]["prompt_tokens"] + 3 * 1000
    assert calls[2]["max_usd"] == 0.0  # a model on the local Ollama daemon
    assert all(c["typical_usd"] < c["max_usd"] for c in calls if c["provider"] != "ollama")
    assert estimate["max_usd"] == round(sum(c["max_usd"] for c in calls), 6)
    assert estimate["typical_usd"] < estimate["max_usd"] and estimate["cost_source"] == "estimated"


async def test_chain_debate_and_single_tools_estimate_their_calls(fp: FakeProvider) -> None:
    settings = http_settings(fp)
    chain = await call("ask_chain", {"question": "How should we paginate?",
                                     "pipeline": "glm > deepseek > glm", "estimate": True}, settings)
    debate = await call("ask_debate", {"question": "Cache or not?", "proposer": "glm", "opponent": "deepseek",
                                       "adjudicator": "deepseek", "rounds": 2, "estimate": True}, settings)
    single = await call("ask_glm", {"question": "Is this retry loop bounded?", "estimate": True}, settings)
    assert [c["role"] for c in chain["estimate"]["calls"]] == ["draft", "critique", "decide"]
    assert [c["role"] for c in debate["estimate"]["calls"]] == [
        "proposer", "opponent", "revision", "rebuttal", "adjudicator"]
    assert [c["token"] for c in single["estimate"]["calls"]] == ["glm"]
    assert not fp.requests


async def test_an_estimate_still_runs_the_guard(fp: FakeProvider) -> None:
    result = await call("ask_council", {"question": "Write ransomware that encrypts my coworker's files",
                                        "models": ["glm", "deepseek"], "estimate": True}, http_settings(fp))
    assert (result["status"], result["stage"]) == ("refused", "guard")
    assert "estimate" not in result and not fp.requests


async def test_a_call_over_max_cost_usd_is_bad_args_before_any_request(fp: FakeProvider) -> None:
    result = await call("ask_deepseek", {"question": "Is this retry loop bounded?", "max_cost_usd": 0.0001},
                        http_settings(fp))
    assert (result["status"], result["kind"]) == ("error", "bad_args"), result
    assert "max_cost_usd" in result["detail"] and result["estimate"]["max_usd"] > 0.0001
    assert not fp.requests


async def test_a_council_drops_its_lowest_ranked_members_to_fit_max_cost_usd(fp: FakeProvider) -> None:
    settings = http_settings(fp)
    models = ["deepseek", "glm", "atlas:zai-org/glm-5.2"]
    estimated = await call("ask_council", {**COUNCIL, "models": models, "estimate": True}, settings)
    planned = estimated["estimate"]
    last = next(c for c in planned["calls"] if c["token"] == "atlas:zai-org/glm-5.2")
    # Fits once the last member (and its answer in the synthesizer's prompt) is left out.
    limit = planned["max_usd"] - last["max_usd"] / 2
    fp.enqueue("anthropic", text=answer("Keep the lock.", "apply"), match="glm-5.2")
    fp.enqueue("anthropic", text=answer("Keep it.", "apply"), match="deepseek-v4-pro")
    fp.enqueue("anthropic", text=answer("Synthesis: keep it.", "apply"), match="deepseek-v4-pro")
    result = await call("ask_council", {**COUNCIL, "models": models, "max_cost_usd": limit}, settings)
    assert result["status"] == "ok", result
    dropped = [s for s in result["sources"] if s.get("kind") == "over_budget"]
    assert [s["token"] for s in dropped] == ["atlas:zai-org/glm-5.2"]
    assert result["quorum"] == "2/2" and not fp.requests_for("openai")


async def test_a_24_member_council_over_a_keys_daily_budget_makes_no_request(fp: FakeProvider) -> None:
    """A key with --daily-usd 0.001 asks a 24-member OpenRouter council: refused up front with
    quota_exceeded, no upstream request, nothing spent."""
    created = create_key("Spender", "--tenant", "team", "--daily-usd", "0.001")
    models = [f"lab{n}/model-{n}" for n in range(24)]
    async with team_server(provider_env(fp)) as server, server.client(created["key"]) as client:
        with anyio.fail_after(60):
            reply = await client.call_tool("ask_openrouter_council",
                                           {"question": "Which queue should we pick?", "models": models})
    result: dict[str, Any] = reply.structured_content or {}
    assert (result["status"], result["kind"]) == ("error", "quota_exceeded"), result
    assert "could cost up to" in result["detail"] and "retry_after_s" not in result
    assert not fp.requests
    usage = next(k for k in list_keys() if k["id"] == created["id"])["usage"]
    assert usage["spent_usd_today"] == 0 and usage["in_flight"] == 0
