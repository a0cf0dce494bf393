"""Clusters of three replicas, kept for the whole run (starting one costs seconds).

``cluster`` is shared by every test that leaves it as it found it. ``outage_cluster`` is for the
tests that take its database away: it has a database server of its own, so an outage there never
reaches the other tests' replicas.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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

REPLICAS = 3


@pytest.fixture(scope="session")
def provider() -> Iterator[FakeProvider]:
    """The fake model provider every replica talks to."""
    with FakeProvider() as fake:
        yield fake


def _store(kind: str, root: Path, pg_server: Any, connect_timeout: float | None = None) -> SharedStore:
    if kind == "sqlite":
        return SqliteStore(root)
    if (reason := postgres_available()) is not None:
        pytest.skip(reason)
    return PostgresStore(pg_server(), connect_timeout)


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def cluster(request: pytest.FixtureRequest, provider: FakeProvider,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three ready replicas on one shared store (SQLite state directory, or PostgreSQL)."""
    root = tmp_path_factory.mktemp(f"replicas-{request.param}")
    store = _store(request.param, root, lambda: request.getfixturevalue("pg_server"))
    with running_cluster(root, store, provider.base_url, REPLICAS) as started:
        yield started


@pytest.fixture(scope="session")
def own_pg_server() -> Iterator[Any]:
    """A PostgreSQL server for the outage tests alone."""
    from tests.fakes.postgres import running_server

    with running_server() as server:
        yield server


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def outage_cluster(request: pytest.FixtureRequest, provider: FakeProvider,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three ready replicas whose database the test may stop and start (a server of its own)."""
    root = tmp_path_factory.mktemp(f"outage-{request.param}")
    # A store call gives up on a database that does not answer after a second, not the default 2 s:
    # the outage is seen sooner.
    store = _store(request.param, root, lambda: request.getfixturevalue("own_pg_server"), connect_timeout=1)
    with running_cluster(root, store, provider.base_url, REPLICAS) as started:
        yield started


@pytest.fixture(scope="session")
def team_key(cluster: Cluster) -> str:
    """An ask key of tenant ``team``, made with ``ask-fable keys create``."""
    return cluster.create_key("team member")[1]


@pytest.fixture(scope="session")
def outage_key(outage_cluster: Cluster) -> str:
    """An ask key on the outage cluster."""
    return outage_cluster.create_key("outage member")[1]
