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
