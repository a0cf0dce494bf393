"""Shared fixtures: every test runs with its own HOME, state and config directories."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_provider import FakeProvider

# Variables a developer's shell may carry that would leak into a test run.
_FOREIGN_VARS = (
    "ATLASCLOUD_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "CLAUDE_CONFIG_DIR",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point HOME and the XDG dirs at a temp dir and drop every ASK_FABLE_* variable."""
    for name in list(os.environ):
        if name.startswith("ASK_FABLE_") or name in _FOREIGN_VARS:
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("ASK_FABLE_QUIET", "1")
    yield home


@pytest.fixture(autouse=True)
def fresh_fable_ladder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start every test with no Fable id remembered as unavailable (that memory is per process)."""
    from ask_fable.backends import claude_common

    monkeypatch.setattr(claude_common, "_unavailable", {})


@pytest.fixture
def anyio_backend() -> str:
    """Run anyio tests on asyncio only (the Agent SDK and subprocess code target asyncio)."""
    return "asyncio"


@pytest.fixture
def fp() -> Iterator[FakeProvider]:
    """The loopback fake model provider, started for one test and stopped after it.

    A module that needs it primed overrides it by name and asks for this one:
    ``def fp(fp: FakeProvider) -> FakeProvider``.
    """
    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def claude_home(fp: FakeProvider, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the Claude Code CLI at the fake provider with a throwaway config dir and a dummy key."""
    config = tmp_path / "claude-config"
    config.mkdir()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fp.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy-key")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return config
