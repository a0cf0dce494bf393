"""The installed ``ask-fable`` on PostgreSQL: what a call stores lands in the database, not in files."""

from __future__ import annotations

from pathlib import Path

import anyio
import psycopg
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from ask_fable.config import load_settings
from tests.e2e.helpers import TEST_KEY, ask_fable_command, child_env, structured
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.postgres import PostgresServer


async def test_a_context_write_ask_trace_and_stats_round_trip_lands_in_postgresql(
        fp: FakeProvider, pg_server: PostgresServer, tmp_path: Path) -> None:
    url = pg_server.fresh_database()
    command, *rest = ask_fable_command()
    env = child_env(ASK_FABLE_DATABASE_URL=url, ASK_FABLE_GLM_API_KEY=TEST_KEY,
                    ASK_FABLE_GLM_BASE_URL=fp.base_url, ASK_FABLE_TRACE_MODE="full", ASK_FABLE_SAVE="1")
    params = StdioServerParameters(command=command, args=[*rest, "--toolsets", "all"], env=env)
    try:
        with open(tmp_path / "stderr.txt", "w+") as errlog, anyio.fail_after(90):
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                written = await structured(client, "context_write",
                                           {"key": "schema", "value": "CREATE TABLE t"})
                answered = await structured(client, "ask_glm", {"question": "Is this schema sound?",
                                                                "context_ref": ["schema"]})
                trace = await structured(client, "trace_get", {"trace_id": answered["trace_id"]})
                stats = await structured(client, "stats", {"window": "24h"})
                listed = await structured(client, "context_list", {})
        assert written["status"] == "ok" and answered["status"] == "ok", answered
        assert str(answered["saved"]).startswith("postgresql:answers/")
        assert trace["status"] == "ok" and trace["trace"]["trace_id"] == answered["trace_id"]
        assert trace["trace"]["artifacts"]["bundle"] == f"postgresql:traces/{answered['trace_id']}"
        assert stats["status"] == "ok" and stats["totals"]["calls"] >= 1
        assert [e["key"] for e in listed["entries"]] == ["schema"]
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM ask_fable_context.context").fetchone() == (1,)
            assert conn.execute("SELECT count(*) FROM ask_fable_traces.traces WHERE trace_id = %s",
                                (answered["trace_id"],)).fetchone() == (1,)
            assert conn.execute("SELECT count(*) FROM ask_fable_traces.bundles").fetchone() == (1,)
            assert conn.execute("SELECT count(*) FROM ask_fable_audit.recs").fetchone()[0] >= 1
            assert conn.execute("SELECT count(*) FROM ask_fable_answers.documents").fetchone() == (1,)
        state = load_settings().state_dir
        files = [p.relative_to(state) for p in state.rglob("*") if p.is_file()] if state.exists() else []
        assert not [p for p in files if p.suffix in (".db", ".jsonl", ".md") or "traces" in p.parts], files
    finally:
        pg_server.drop(url)


def test_an_http_replica_answers_503_while_its_database_is_down_and_recovers(
        pg_server: PostgresServer) -> None:
    """Keys live in PostgreSQL: while connections are refused a request gets a JSON 503 (no traceback,
    no hang); once they are allowed again the same server answers."""
    import httpx2

    from ask_fable.core.app import App
    from ask_fable.surface.http_app import HttpOptions, build_http_app
    from ask_fable.surface.http_runner import serve_in_thread
    from ask_fable.surface.server import build_server

    url = pg_server.fresh_database()
    name = url.partition("?")[0].rsplit("/", 1)[1]
    app = App(load_settings(database_url=url, database_connect_timeout=1, cache=False))
    _, key = app.keys.create("replica-user", "ask", "team")
    http_app = build_http_app(build_server(app, toolsets=["all"]), app.keys, HttpOptions(port=0))
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25"}
    try:
        with serve_in_thread(http_app) as base, \
                httpx2.Client(base_url=base, headers=headers, timeout=30) as http:
            assert http.post("/mcp", json=listing).status_code == 200
            with pg_server.admin() as admin:
                admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                              (name,))
            down = http.post("/mcp", json=listing)
            assert down.status_code == 503 and "unavailable" in down.json()["error"]["message"]
            with pg_server.admin() as admin:
                admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
            for _ in range(300):  # the pool reconnects in the background, with backoff
                if http.post("/mcp", json=listing).status_code == 200:
                    break
            else:
                raise AssertionError("the server never reconnected to its database")
    finally:
        anyio.run(app.aclose)
        pg_server.drop(url)


async def test_an_answer_whose_records_cannot_be_written_is_still_returned(
        fp: FakeProvider, pg_server: PostgresServer) -> None:
    """The database goes away after the server started: the model's answer still reaches the caller
    (status ok), its records fail each on its own, and the context tools say ``unavailable``."""
    from ask_fable.surface.server import build_server
    from tests.e2e.helpers import wired_app

    url = pg_server.fresh_database()
    name = url.partition("?")[0].rsplit("/", 1)[1]
    app = wired_app(fp, database_url=url, database_connect_timeout=1, cache=True)
    try:
        async with Client(build_server(app, toolsets=["all"])) as client:
            assert (await structured(client, "context_write", {"key": "k", "value": "v"}))["status"] == "ok"
            with pg_server.admin() as admin:
                admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                              (name,))
            with anyio.fail_after(60):
                answered = await structured(client, "ask_glm", {"question": "Is the retry loop bounded?"})
                refused = await structured(client, "context_read", {"key": "k"})
        assert answered["status"] == "ok" and answered["answer"]
        assert refused["status"] == "error" and refused["kind"] == "unavailable" and refused["hint"]
    finally:
        with pg_server.admin() as admin:
            admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
        await app.aclose()
        pg_server.drop(url)
