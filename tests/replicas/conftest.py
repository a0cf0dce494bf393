"""One cluster of three replicas per shared store, kept for the whole run (starting one costs seconds);
every test leaves it as it found it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_provider import FakeProvider
from tests.replicas.harness import (
    Cluster,
    PostgresStore,
    SharedStore,
    SqliteStore,
    postgres_available,
    running_cluster,
)

STORES = ["sqlite", "postgres"]
REPLICAS = 3


@pytest.fixture(scope="session")
def provider() -> Iterator[FakeProvider]:
    """The fake model provider every replica talks to."""
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="session", params=STORES)
def cluster(request: pytest.FixtureRequest, provider: FakeProvider,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three ready replicas on one shared store (SQLite state directory, or PostgreSQL)."""
    root = tmp_path_factory.mktemp(f"replicas-{request.param}")
    store: SharedStore
    if request.param == "sqlite":
        store = SqliteStore(root)
    else:
        if (reason := postgres_available()) is not None:
            pytest.skip(reason)
        store = PostgresStore(request.getfixturevalue("pg_server"))
    with running_cluster(root, store, provider.base_url, REPLICAS) as started:
        yield started


@pytest.fixture(scope="session")
def team_key(cluster: Cluster) -> str:
    """An ask key of tenant ``team``, made with ``ask-fable keys create``."""
    return cluster.create_key("team member")[1]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A private directory for a test that starts its own replicas."""
    return tmp_path
