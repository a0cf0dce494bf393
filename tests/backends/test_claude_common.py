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
    claude_env_overrides,
    model_plan,
    parse_version,
    run_ladder,
)
from ask_fable.backends.claude_sdk import _bundled_version, bundled_cli, choose_cli_path
from ask_fable.config import load_settings
from ask_fable.errors import BadArgs, BinaryMissing, OracleTimeout


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
def test_a_strictly_newer_claude_on_path_wins_over_the_bundled_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundled = bundled_cli()
    assert bundled is not None
    major, minor, patch = _bundled_version(bundled) or (0, 0, 0)
    newer = _fake_claude(tmp_path / "newer", f"{major}.{minor}.{patch + 1}")
    same = _fake_claude(tmp_path / "same", f"{major}.{minor}.{patch}")
    monkeypatch.setenv("PATH", f"{newer.parent}{os.pathsep}{os.environ['PATH']}")
    assert choose_cli_path(load_settings()) == str(newer)
    monkeypatch.setenv("PATH", f"{same.parent}{os.pathsep}{os.environ['PATH']}")
    assert choose_cli_path(load_settings()) == str(bundled)
    assert choose_cli_path(load_settings(claude_cli=str(same))) == str(same)
    with pytest.raises(BinaryMissing):
        choose_cli_path(load_settings(claude_cli=str(tmp_path / "nope" / "claude")))


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


def test_cli_env_turns_traffic_off_and_blanks_our_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASK_FABLE_GLM_API_KEY", "glm-secret-value")
    env = claude_env_overrides()
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["DISABLE_TELEMETRY"] == "1" and env["DISABLE_AUTOUPDATER"] == "1"
    assert 0 <= int(env["CLAUDE_CODE_MAX_RETRIES"]) <= 3
    assert env["ASK_FABLE_GLM_API_KEY"] == ""


def test_bridge_command_line() -> None:
    argv = bridge_argv("/bin/claude", "claude-opus-5", "SYS")
    assert argv == ["/bin/claude", "-p", "--output-format", "json", "--model", "claude-opus-5",
                    "--system-prompt", "SYS", "--max-turns", "1", "--tools", "", "--setting-sources", "",
                    "--no-session-persistence"]
    resumed = bridge_argv("/bin/claude", "claude-opus-5", "SYS", resume="abc")
    assert resumed[-1] == "--resume=abc" and "--no-session-persistence" not in resumed
