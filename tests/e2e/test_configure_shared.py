"""configure_* tools on a server whose stores are a shared PostgreSQL database: what they save goes
to the database, not to this host's config file, and a database that does not answer is a
structured ``unavailable`` result that names no credential and writes nothing."""

from __future__ import annotations

import socket

import pytest
from mcp import Client

from ask_fable.config import config_file_path
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.conftest import StoreBackend
from tests.e2e.helpers import structured

PASSWORD = "pg-secret-0123456789"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
async def test_a_council_saved_on_a_shared_database_applies_here_and_leaves_the_config_file_alone(
    store_backend: StoreBackend
) -> None:
    app = App()
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            saved = await structured(client, "configure_ollama_council", {"models": ["glm-5.2", "m3"]})
            listed = await structured(client, "list_ollama_models", {"refresh": False})
    finally:
        await app.aclose()
    assert saved["status"] == "ok" and saved["config_file"] == "database"
    assert "shared database" in saved["note"]
    assert listed["configured_council"] == ["glm-5.2:cloud", "m3:cloud"]
    assert listed["config_file"] == "database"  # where the council it lists was saved
    assert not config_file_path().exists()


async def test_configure_on_a_database_that_does_not_answer_is_unavailable_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://ask:{PASSWORD}@127.0.0.1:{_closed_port()}/ask_fable"
    monkeypatch.setenv("ASK_FABLE_DATABASE_URL", url)
    monkeypatch.setenv("ASK_FABLE_DATABASE_CONNECT_TIMEOUT", "1")
    app = App()
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            result = await structured(client, "configure_tracing", {"trace_mode": "full"})
    finally:
        await app.aclose()
    assert result["status"] == "error" and result["kind"] == "unavailable", result
    assert PASSWORD not in str(result)
    assert not config_file_path().exists()
