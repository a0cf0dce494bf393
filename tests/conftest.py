"""Shared fixtures: every test runs with its own HOME, state and config directories."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.fake_provider import FakeProvider

if TYPE_CHECKING:
    from ask_fable.stores.db import Database
    from ask_fable.stores.engines import Engines
    from tests.fakes.postgres import PostgresServer

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


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL (the ``pgserver`` wheel's) for the whole session, skipped with the reason
    when it cannot start."""
    from tests.fakes.postgres import running_server

    # Not under pytest's base temp: pytest keeps that 0700 for its own user, and as root pgserver
    # runs PostgreSQL as another one, which must reach its data directory.
    started = running_server()
    try:
        server = started.__enter__()
    except Exception as exc:  # no pgserver wheel, no shared memory, …: the reason is the skip message
        pytest.skip(f"PostgreSQL could not start here: {type(exc).__name__}: {exc}")
    try:
        yield server
    finally:
        started.__exit__(None, None, None)


@dataclass
class StoreBackend:
    """Where a store test's stores live: ``sqlite`` files under the test's state dir, or a fresh
    ``postgres`` database (``ASK_FABLE_DATABASE_URL`` is set, so ``load_settings()`` names it)."""

    name: str
    engines: Engines
    url: str | None = None

    def open(self, store: str, path: Path) -> Database:
        """The database of ``store``: the SQLite file ``path``, or its schema in PostgreSQL."""
        from ask_fable.config import load_settings
        from ask_fable.stores.db import database_for

        return database_for(load_settings(), store, path, engines=self.engines)


@contextmanager
def opened_store_backend(name: str, request: pytest.FixtureRequest,
                         monkeypatch: pytest.MonkeyPatch) -> Iterator[StoreBackend]:
    """The ``sqlite`` or ``postgres`` (a fresh database of the session's server) backend of a store
    test, closed with everything its stores opened."""
    from ask_fable.stores import engines as engines_module

    engines = engines_module.Engines()
    if name == "sqlite":
        yield StoreBackend("sqlite", engines)
        engines.close()
        return
    server: PostgresServer = request.getfixturevalue("pg_server")
    url = server.fresh_database()
    monkeypatch.setenv("ASK_FABLE_DATABASE_URL", url)
    # Stores a test opens without the shared engines get engines of their own: close those too.
    opened: list[engines_module.Engines] = []
    original = engines_module.Engines.__init__

    def tracked(self: engines_module.Engines, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(engines_module.Engines, "__init__", tracked)
    try:
        yield StoreBackend("postgres", engines, url)
    finally:
        engines.close()
        for other in opened:
            other.close()
        server.drop(url)


@pytest.fixture(params=["sqlite", "postgres"])
def store_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[StoreBackend]:
    """Run the test once on SQLite and once on a fresh PostgreSQL database of the session's server."""
    with opened_store_backend(request.param, request, monkeypatch) as backend:
        yield backend
