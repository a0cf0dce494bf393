"""A provider account out of credits or off its plan: ``not_configured`` with the fix named, never
retried, never counted by the breaker. Each provider's refusal against the server built in-process;
a council and Claude Code's refusals over the installed ``ask-fable`` command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.helpers import ask_fable_command, child_env, structured
from tests.fakes.fake_provider import DEFAULT_ANSWER, FakeProvider
from tests.fakes.fixtures import bundled_claude_cli

KEY = "sk-PLANTED-billing-5e6f7a8b9c0d1e2f3a4b"
QUESTION = "Is the retry loop in the billing client bounded?"
#: A breaker window of two outcomes opens on two failures at its 0.5 error rate: one call more, and
#: a tripped breaker would answer the last one `circuit_open`.
BREAKER_WINDOW = 2
CALLS = 3

#: What each wire answers for an exhausted balance or a plan that does not cover the model.
DEEPSEEK_402 = {"error": {"message": "Insufficient Balance", "type": "unknown_error", "param": None,
                          "code": "invalid_request_error"}}
GLM_429_1113 = {"type": "error", "error": {"type": "rate_limit_error", "code": "1113",
                                           "message": "[1113][Insufficient balance or no resource package. "
                                                      "Please recharge.][2026092223]"}}
OPENROUTER_402 = {"error": {"code": 402, "message": "Insufficient credits. Add more using "
                                                    "https://openrouter.ai/settings/credits",
                            "metadata": {"limit_source": "openrouter_credits"}}}
ATLAS_402 = {"error": {"message": "insufficient balance, please top up", "type": "payment_required",
                       "code": 402}}
OPENAI_429_QUOTA = {"error": {"message": "You exceeded your current quota, please check your plan and "
                                         "billing details.", "type": "insufficient_quota",
                              "code": "insufficient_quota"}}
OLLAMA_429_LIMIT = {"error": "you (someone) have reached your weekly usage limit, upgrade for higher "
                             "limits: https://ollama.com/upgrade"}
OLLAMA_403_PLAN = {"error": "this model requires a subscription, upgrade for access: https://ollama.com/upgrade"}
ANTHROPIC_400_CREDIT = {"type": "error", "error": {
    "type": "invalid_request_error",
    "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing "
               "to upgrade or purchase credits."}}


def _server(**env: str) -> StdioServerParameters:
    command, *rest = ask_fable_command()
    settings = {"ASK_FABLE_TOOLSETS": "all", "ASK_FABLE_CACHE": "false", "ASK_FABLE_TIMEOUT": "20",
                "ASK_FABLE_BREAKER_WINDOW": str(BREAKER_WINDOW)}
    return StdioServerParameters(command=command, args=rest, env=child_env(**settings, **env))


def _wired(fp: FakeProvider) -> StdioServerParameters:
    return _server(
        ASK_FABLE_DEEPSEEK_API_KEY=KEY, ASK_FABLE_DEEPSEEK_BASE_URL=fp.base_url,
        ASK_FABLE_GLM_API_KEY=KEY, ASK_FABLE_GLM_BASE_URL=fp.base_url,
        ASK_FABLE_OPENROUTER_API_KEY=KEY, ASK_FABLE_OPENROUTER_BASE_URL=f"{fp.base_url}/api/v1",
        ASK_FABLE_ATLAS_API_KEY=KEY, ASK_FABLE_ATLAS_BASE_URL=f"{fp.base_url}/atlas/v1",
        ASK_FABLE_OLLAMA_BASE_URL=fp.base_url,
    )


def _built_here(fp: FakeProvider) -> Client:
    """The server ``_wired`` starts, built in this process from the same settings (a provider's
    refusal is the server's to judge, whichever transport carries the call)."""
    from ask_fable.config import load_settings
    from ask_fable.core.app import App
    from ask_fable.surface.server import build_server

    settings = load_settings(
        cache=False, timeout=20, breaker_window=BREAKER_WINDOW, deepseek_api_key=KEY,
        deepseek_base_url=fp.base_url, glm_api_key=KEY, glm_base_url=fp.base_url, openrouter_api_key=KEY,
        openrouter_base_url=f"{fp.base_url}/api/v1", atlas_api_key=KEY,
        atlas_base_url=f"{fp.base_url}/atlas/v1", ollama_base_url=fp.base_url)
    return Client(build_server(App(settings), toolsets=["all"]))


def _raw(payload: Any) -> bytes:
    return json.dumps(payload).encode()


CASES = [
    # tool, arguments, route, status, body, provider name the hint must carry
    ("ask_deepseek", {}, "anthropic", 402, DEEPSEEK_402, "DeepSeek"),
    ("ask_glm", {}, "anthropic", 429, GLM_429_1113, "GLM"),
    ("ask_glm", {}, "anthropic", 400, ANTHROPIC_400_CREDIT, "GLM"),
    ("ask_openrouter", {"model": "openai/gpt-5"}, "openai", 402, OPENROUTER_402, "OpenRouter"),
    ("ask_openrouter", {"model": "openai/gpt-5"}, "openai", 429, OPENAI_429_QUOTA, "OpenRouter"),
    ("ask_atlas", {"model": "deepseek-ai/deepseek-v3"}, "openai", 402, ATLAS_402, "Atlas"),
    ("ask_ollama", {"model": "glm-5:cloud"}, "ollama", 429, OLLAMA_429_LIMIT, "Ollama"),
    ("ask_ollama", {"model": "kimi-k3:cloud"}, "ollama", 403, OLLAMA_403_PLAN, "Ollama"),
]


@pytest.mark.parametrize(("tool", "arguments", "route", "status", "body", "provider"), CASES,
                         ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(CASES)])
async def test_an_account_out_of_credits_is_not_configured_with_the_fix_every_time(
    tool: str, arguments: dict[str, Any], route: str, status: int, body: Any, provider: str
) -> None:
    """Calls on a provider refusing for balance or plan: each one request (never retried), each
    not_configured naming the provider and the fix (credits / plan), none shed by the breaker."""
    with FakeProvider() as fp:
        fp.enqueue(route, status=status, body=_raw(body), headers={"content-type": "application/json"},
                   times=None)
        with anyio.fail_after(120):
            async with _built_here(fp) as client:
                results = [await structured(client, tool, {"question": QUESTION, **arguments})
                           for _ in range(CALLS)]
        sent = len(fp.requests_for(route))
    print(f"{tool} on {status}: {results[0]}")
    assert [(r["status"], r["kind"]) for r in results] == [("error", "not_configured")] * CALLS
    assert sent == CALLS  # one request per call: no retry, and the breaker never opened
    hint = results[0]["hint"]
    assert provider in hint
    assert any(word in hint for word in ("credits", "plan", "upgrade"))
    assert str(status) in results[0]["detail"]
    assert all(KEY not in str(r) for r in results)


async def test_a_council_member_out_of_credits_is_its_own_error_while_the_others_answer() -> None:
    """A council of DeepSeek (402) and GLM (healthy): GLM's answer stands and DeepSeek is listed as
    not_configured with the provider's own words, asked once."""
    with FakeProvider() as fp:
        fp.enqueue("anthropic", status=402, body=_raw(DEEPSEEK_402), match="deepseek-v4-pro", times=None,
                   headers={"content-type": "application/json"})
        fp.enqueue("anthropic", times=None)
        with anyio.fail_after(120):
            async with Client(_wired(fp)) as client:
                result = await structured(client, "ask_council",
                                          {"question": QUESTION, "models": ["deepseek", "glm"]})
        deepseek_requests = [r for r in fp.requests_for("anthropic") if r.model == "deepseek-v4-pro"]
    assert result["status"] == "ok"
    by_token = {s["token"]: s for s in result["sources"]}
    assert (by_token["glm"]["status"], by_token["glm"]["answer"]) == ("ok", DEFAULT_ANSWER)
    assert (by_token["deepseek"]["kind"], by_token["deepseek"]["status"]) == ("not_configured",) * 2
    assert by_token["deepseek"]["detail"] == "DeepSeek HTTP 402: Insufficient Balance"
    assert len(deepseek_requests) == 1
    assert result["quorum"] == "1/2"


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")
@pytest.mark.parametrize("use_cli", ["0", "1"], ids=["agent-sdk", "cli-bridge"])
async def test_a_claude_api_key_out_of_credits_is_not_configured_and_never_trips_the_breaker(
    tmp_path: Path, use_cli: str
) -> None:
    """Claude Code on an API key whose credit balance is too low: every ask_opus5 call is
    not_configured naming the credits fix, and every one reaches the provider (no circuit opened)."""
    claude_dir = tmp_path / "claude-config"
    claude_dir.mkdir()
    with FakeProvider() as fp:
        fp.enqueue("anthropic", status=400, body=_raw(ANTHROPIC_400_CREDIT), times=None,
                   headers={"content-type": "application/json"})
        params = _server(CLAUDE_CONFIG_DIR=str(claude_dir), ANTHROPIC_BASE_URL=fp.base_url,
                         ANTHROPIC_API_KEY=KEY, CLAUDE_CODE_MAX_RETRIES="0", ASK_FABLE_USE_CLI=use_cli)
        with anyio.fail_after(240):
            async with Client(params) as client:
                results = [await structured(client, "ask_opus5", {"question": f"{QUESTION} ({n})"})
                           for n in range(CALLS)]
        sent = len(fp.requests_for("anthropic"))
    print(results[0])
    assert [r["kind"] for r in results] == ["not_configured"] * CALLS
    assert all("credits" in r["hint"] and "Anthropic" in r["hint"] for r in results)
    assert sent >= CALLS
    assert KEY not in json.dumps(results)
