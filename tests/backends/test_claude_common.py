"""Model resolution, the ladder rule, CLI choice and stderr capture (no model calls)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ask_fable.backends.base import EventSink, Reply
from ask_fable.backends.claude_cli import bridge_argv
from ask_fable.backends.claude_common import (
    ModelUnavailable,
    StderrTail,
    UnavailableModels,
    claude_env_overrides,
    model_plan,
    parse_version,
    run_ladder,
)
from ask_fable.backends.claude_sdk import ClaudeCliChoice, bundled_cli, bundled_version
from ask_fable.config import load_settings
from ask_fable.errors import BadArgs, BinaryMissing, OracleTimeout
from tests.fakes.clock import ManualClock


def test_tokens_resolve_to_model_ids() -> None:
    settings = load_settings()
    assert model_plan(settings, "fable").models == ("claude-fable-5-1", "claude-fable-5")
    assert model_plan(settings, "fable").pinned_by is None
    assert model_plan(settings, "fable51").models == ("claude-fable-5-1",)
    assert model_plan(settings, "opus5").models == ("claude-opus-5",)
    pinned = model_plan(load_settings(fable_model="claude-fable-5"), "fable")
    assert pinned.models == ("claude-fable-5",) and pinned.pinned_by == "ASK_FABLE_FABLE_MODEL"
    assert model_plan(load_settings(opus_model="claude-opus-5-x"), "opus").first == "claude-opus-5-x"
    with pytest.raises(BadArgs):
        model_plan(settings, "sonnet")


async def test_ladder_moves_on_only_when_the_model_is_unavailable() -> None:
    asked: list[str] = []

    async def timeout_first(model: str) -> Reply:
        asked.append(model)
        raise OracleTimeout("slow")

    with pytest.raises(OracleTimeout):
        await run_ladder(model_plan(load_settings(), "fable"), timeout_first, EventSink())
    assert asked == ["claude-fable-5-1"]

    async def missing_then_ok(model: str) -> Reply:
        asked.append(model)
        if model == "claude-fable-5-1":
            raise ModelUnavailable("not found")
        return Reply(text="ok", model=model, provider="anthropic")

    asked.clear()
    reply = await run_ladder(model_plan(load_settings(), "fable"), missing_then_ok, EventSink())
    assert (reply.model, asked) == ("claude-fable-5", ["claude-fable-5-1", "claude-fable-5"])


def _fake_claude(directory: Path, version: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "claude"
    script.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


@pytest.mark.skipif(bundled_cli() is None, reason="claude-agent-sdk ships no CLI here")
async def test_a_strictly_newer_claude_on_path_wins_over_the_bundled_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundled = bundled_cli()
    assert bundled is not None
    major, minor, patch = await bundled_version(bundled) or (0, 0, 0)
    newer = _fake_claude(tmp_path / "newer", f"{major}.{minor}.{patch + 1}")
    same = _fake_claude(tmp_path / "same", f"{major}.{minor}.{patch}")
    monkeypatch.setenv("PATH", f"{newer.parent}{os.pathsep}{os.environ['PATH']}")
    assert await ClaudeCliChoice().path(load_settings()) == str(newer)
    monkeypatch.setenv("PATH", f"{same.parent}{os.pathsep}{os.environ['PATH']}")
    choice = ClaudeCliChoice()
    assert await choice.path(load_settings()) == str(bundled)
    assert await choice.path(load_settings(claude_cli=str(same))) == str(same)
    with pytest.raises(BinaryMissing):
        await choice.path(load_settings(claude_cli=str(tmp_path / "nope" / "claude")))


def test_parse_version() -> None:
    assert parse_version("2.1.332 (Claude Code)") == (2, 1, 332)
    assert parse_version("claude 10.0.1-beta") == (10, 0, 1)
    assert parse_version("unknown") is None


def test_stderr_tail_keeps_the_last_lines_redacted() -> None:
    tail = StderrTail(lines=2)
    tail("first line")
    tail("x-api-key: sk-ant-api03-abcdefghijklmnopqrstuvwxyz")
    tail("last line")
    text = tail.text()
    assert "first line" not in text and "last line" in text
    assert "sk-ant-api03" not in text


def test_cli_env_turns_traffic_off(monkeypatch: pytest.MonkeyPatch) -> None:
    env = claude_env_overrides()
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["DISABLE_TELEMETRY"] == "1" and env["DISABLE_AUTOUPDATER"] == "1"
    assert 0 <= int(env["CLAUDE_CODE_MAX_RETRIES"]) <= 3


def test_sdk_env_is_the_bridges_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK route's CLI sees what the bridge's does, plus what the SDK tells its CLI; nothing else."""
    from ask_fable.backends.agent_sdk import _process_env
    from ask_fable.backends.claude_cli import bridge_env

    monkeypatch.setenv("ASK_FABLE_GLM_API_KEY", "glm-secret-value")
    monkeypatch.setenv("SOME_UNRELATED_TOKEN", "other-secret-value")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret-value")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    env = _process_env("/work/dir")
    added = {"CLAUDE_CODE_ENTRYPOINT", "CLAUDE_AGENT_SDK_VERSION", "CLAUDE_CODE_SDK_READS_SESSION_STATE",
             "PWD"}
    assert {k: v for k, v in env.items() if k not in added} == bridge_env()
    assert not {"ASK_FABLE_GLM_API_KEY", "SOME_UNRELATED_TOKEN", "GITHUB_TOKEN"} & set(env)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["PATH"] == os.environ["PATH"]
    assert env["DISABLE_TELEMETRY"] == "1" and env["PWD"] == "/work/dir"


@pytest.mark.parametrize(("status", "error_type", "message", "expected"), [
    (404, None, "model: x", True),
    (None, "not_found_error", "model: x", True),
    (None, None, 'API Error: 404 {"error":{"type":"not_found_error","message":"model: x"}}', True),
    (400, "invalid_request_error", "model claude-fable-9 not found", True),
    (None, None, 'invalid_request_error: the model "x" does not exist', True),
    (400, "invalid_request_error", "max_tokens too large", False),
    (500, None, "overloaded", False),
])
def test_model_unavailable_detection(
    status: object, error_type: object, message: str, expected: bool
) -> None:
    from ask_fable.backends.claude_common import is_model_unavailable

    assert is_model_unavailable(status, error_type, message) is expected


@pytest.mark.parametrize(("status", "error_type", "message", "assistant_error", "kind"), [
    (None, None, "Not logged in · Please run /login", "authentication_failed", "not_configured"),
    (401, "authentication_error", "Invalid API key · Fix external API key", None, "not_configured"),
    (401, "authentication_error", "Failed to authenticate. API Error: 401 OAuth token has expired.", None,
     "not_configured"),
    (403, "permission_error", "Failed to authenticate: OAuth token revoked.", None, "not_configured"),
    (404, "not_found_error", "model: claude-fable-5-1", None, "upstream_error"),
    (500, "api_error", "overloaded", None, None),
])
def test_login_failures_are_config_states_with_a_fix(
    status: object, error_type: object, message: str, assistant_error: object, kind: str | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Missing logins, rejected keys and expired or revoked tokens are not_configured with a hint;
    a missing model steps down the ladder; anything else stays an upstream failure."""
    from ask_fable.backends.claude_common import classify_failure

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    found = classify_failure(
        f"claude-fable-5-1: {message}", status=status, error_type=error_type, message=message,
        assistant_error=assistant_error,
    )
    assert (found.kind if found else None) == kind
    if kind == "not_configured":
        assert found is not None and "`ask-fable login`" in found.to_result()["hint"]
    if kind == "upstream_error":
        assert isinstance(found, ModelUnavailable)


def test_bridge_command_line_never_keeps_a_session_file() -> None:
    argv = bridge_argv("/bin/claude", "claude-opus-5", "SYS")
    assert argv == ["/bin/claude", "-p", "--output-format", "json", "--model", "claude-opus-5",
                    "--system-prompt", "SYS", "--max-turns", "1", "--tools", "", "--setting-sources", "",
                    "--no-session-persistence"]


def test_sdk_result_with_not_found_error_steps_down_the_ladder() -> None:
    """An SDK error result naming not_found_error (no 404 status) is ModelUnavailable, like the bridge."""
    from claude_agent_sdk import ResultMessage

    from ask_fable.backends.claude_sdk import TurnCollector

    collector = TurnCollector("claude-fable-5-1", EventSink(), load_settings(), StderrTail())
    collector.result = ResultMessage(
        subtype="success", duration_ms=1, duration_api_ms=1, is_error=True, num_turns=1, session_id="s",
        result='API Error: {"type":"error","error":{"type":"not_found_error","message":"model"}}',
    )
    with pytest.raises(ModelUnavailable):
        collector.reply()


def test_sdk_usage_is_validated() -> None:
    """Loosely typed CLI usage numbers are coerced or dropped, never a validation crash."""
    from ask_fable.backends.claude_sdk import usage_from

    usage = usage_from({"input_tokens": 12, "output_tokens": "lots",
                        "output_tokens_details": {"thinking_tokens": 5}}, "0.25")
    assert usage is not None
    numbers = (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cost_usd)
    assert numbers == (12, None, 5, 0.25)
    assert usage_from(None, None) is None


def test_an_unavailable_fable_id_is_skipped_until_it_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    """New plans leave out a recently unavailable ladder step; pinned ids and other endpoints do not."""
    from ask_fable.backends import claude_common

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/memory-test")
    settings = load_settings()
    clock = ManualClock()
    unavailable = UnavailableModels(clock, ttl=60.0)
    unavailable.remember("claude-fable-5-1")
    plan = model_plan(settings, "fable", unavailable)
    assert (plan.models, plan.skipped) == (("claude-fable-5",), ("claude-fable-5-1",))
    assert model_plan(settings, "fable51", unavailable).models == ("claude-fable-5-1",)
    assert model_plan(settings, "fable").models == claude_common.FABLE_LADDER, "no memory, no skipping"

    unavailable.remember("claude-fable-5")
    assert model_plan(settings, "fable", unavailable).models == claude_common.FABLE_LADDER, "never empty"

    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/another-endpoint")
    assert model_plan(settings, "fable", unavailable).models == claude_common.FABLE_LADDER

    unavailable.remember("claude-fable-5-1")
    clock.advance(59.0)
    assert "claude-fable-5-1" in unavailable
    clock.advance(1.0)
    assert "claude-fable-5-1" not in unavailable, "an expired entry is forgotten"


def test_an_account_out_of_credits_or_at_its_usage_limit_is_not_configured_with_its_own_fix() -> None:
    """Credit balance too low names credits; a plan at its usage limit names waiting or upgrading;
    a plain rate limit or server error stays an upstream failure."""
    from ask_fable.backends.claude_common import classify_failure
    from ask_fable.errors import NotConfigured

    credits = classify_failure("x", status=400, error_type="invalid_request_error",
                               message="Credit balance is too low")
    limit = classify_failure("x", status=None, error_type=None,
                             message="Claude AI usage limit reached|1790000000")
    assert isinstance(credits, NotConfigured) and "add credits" in credits.extra["hint"]
    assert isinstance(limit, NotConfigured) and "usage limit is reached" in limit.extra["hint"]
    assert classify_failure("x", status=429, error_type="rate_limit_error", message="Rate limited") is None
    assert classify_failure("x", status=529, error_type="overloaded_error", message="Overloaded") is None
