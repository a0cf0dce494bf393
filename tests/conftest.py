"""Shared fixtures: every test runs with its own HOME, state and config directories."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.fakes.fake_provider import FakeProvider

# Bytecode caches on, whatever the shell says (PYTHONDONTWRITEBYTECODE): without them each xdist
# worker rewrites the asserts of every test module again at collection, and every ``ask-fable`` a
# test starts compiles the package again. The caches go to the gitignored ``__pycache__`` dirs.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

# Tests that share fixtures kept for the whole run (a cluster of replicas, the recorded calls behind
# the web view's pages) run on one xdist worker, so no such fixture is started once per worker; so do
# the tests of a module that keeps a fixture for the whole module (a server its tests share).
_SHARED_FIXTURE_DIRS = ("replicas", "ui")
_PROJECT_ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _keeps_a_module_fixture(path: str) -> bool:
    """Whether the test module at ``path`` (relative to the project) declares a module-scoped fixture."""
    try:
        return 'scope="module"' in (_PROJECT_ROOT / path).read_text(encoding="utf-8")
    except OSError:
        return False


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``-n N`` and no ``--dist`` given: the tests of each directory in
    :data:`_SHARED_FIXTURE_DIRS`, and of each module that keeps a module-scoped fixture, go to one
    worker as one unit, the biggest first, and every other test is handed out one at a time to
    whichever worker is free, so none idles behind a long tail."""
    args = config.invocation_params.args
    if any(str(arg) == "-d" or str(arg).startswith("--dist") for arg in args):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            parts = nodeid.split("/", 2)
            if len(parts) == 3 and parts[0] == "tests" and parts[1] in _SHARED_FIXTURE_DIRS:
                return parts[1]
            module = nodeid.split("::", 1)[0]
            return module if _keeps_a_module_fixture(module) else nodeid

    return SharedFixtureScheduling(config, log)


#: The order an xdist worker reports its tests in, so they are handed out heaviest first (tests that
#: start servers and processes) and the run ends on quick in-process ones, not on a long straggler.
_HEAVY_FIRST = ("replicas", "ui", "reliability", "surface", "e2e", "stores")


#: Seconds a test marked ``slow`` may take (the suite's ``timeout`` is for the default run).
SLOW_TIMEOUT_S = 3600


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give a slow test its longer timeout; on an xdist worker, order the collected tests by
    :data:`_HEAVY_FIRST` (stable: files and the order pytest chose for shared fixtures stay as they
    were)."""
    for item in items:
        if item.get_closest_marker("slow") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))
    if not hasattr(config, "workerinput"):
        return
    tests_dir = Path(__file__).parent

    def rank(item: pytest.Item) -> int:
        try:
            top = item.path.relative_to(tests_dir).parts[0]
        except ValueError:
            return len(_HEAVY_FIRST)
        return _HEAVY_FIRST.index(top) if top in _HEAVY_FIRST else len(_HEAVY_FIRST)

    items.sort(key=rank)


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

