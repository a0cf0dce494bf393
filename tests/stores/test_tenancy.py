"""Every store keeps each tenant's items apart, lets "*" see them all, and moves what it held before
tenants existed to the local tenant (a file of that release is brought up by its frozen scripts)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ask_fable.access import ALL_TENANTS
from ask_fable.config import load_settings
from ask_fable.stores.answers import DatabaseArchive, archive_for
from ask_fable.stores.audit import AuditLog
from ask_fable.stores.audit_trail import AuditTrail, audit_trail_for
from ask_fable.stores.cache import AnswerCache
from ask_fable.stores.context import ContextStore
from ask_fable.stores.hub import SessionHub
from ask_fable.stores.keys import KeyStore
from ask_fable.stores.records import AuditRecord, HubTurn, SavedAnswer, TraceBundle, TraceRecord, Transcript
from ask_fable.stores.trace_ids import new_trace_id
from ask_fable.stores.traces import TraceStore
from tests.conftest import StoreBackend
from tests.stores.legacy_databases import SCRIPTS

A, B = "alice", "bob"


def test_context_entries_are_invisible_across_tenants(store_backend: StoreBackend, tmp_path: Path) -> None:
    store = ContextStore(store_backend.open("context", tmp_path / "context.db"))
    store.write(A, "prod-db-notes", "alice's notes")
    store.write(B, "prod-db-notes", "bob's notes")
    store.write(A, "only-alice", "x")
    assert store.read(B, "only-alice") is None
    assert store.delete(B, "only-alice") is False
    assert store.read(A, "only-alice") is not None
    assert {e.key for e in store.list(B)} == {"prod-db-notes"}
    assert store.suggest(B, ["only"]) == []
    assert store.resolve(B, ["prod-db-notes", "only-alice"]).text.endswith("bob's notes")
    assert store.resolve(B, ["only-alice"]).missing == ["only-alice"]
    assert {(e.tenant, e.key) for e in store.list(ALL_TENANTS)} == {
        (A, "prod-db-notes"), (B, "prod-db-notes"), (A, "only-alice")}
    with pytest.raises(ValueError):
        store.write(ALL_TENANTS, "k", "v")
    with pytest.raises(ValueError):
        store.resolve(ALL_TENANTS, ["prod-db-notes"])


def test_a_tenant_hits_only_its_own_cache_entries(store_backend: StoreBackend, tmp_path: Path) -> None:
    store = AnswerCache(store_backend.open("cache", tmp_path / "cache.db"), ttl=3600, max_rows=100)
    store.put(A, "k", "ask_glm", {"answer": "alice's"})
    assert store.get(B, "k") is None
    store.put(B, "k", "ask_glm", {"answer": "bob's"})
    hit_a, hit_b = store.get(A, "k"), store.get(B, "k")
    assert hit_a is not None and hit_a.payload == {"answer": "alice's"}
    assert hit_b is not None and hit_b.payload == {"answer": "bob's"}
    with pytest.raises(ValueError):
        store.get(ALL_TENANTS, "k")


def test_traces_and_bundles_are_per_tenant(store_backend: StoreBackend) -> None:
    settings = load_settings(trace_mode="full")
    store = TraceStore(settings, engines=store_backend.engines)
    mine, theirs = new_trace_id(), new_trace_id()
    store.record(TraceRecord(trace_id=mine, tenant=A, tool="ask_glm"))
    store.record(TraceRecord(trace_id=theirs, tenant=B, tool="ask_glm"))
    store.write_bundle(mine, TraceBundle(tenant=A, question="alice asks", context="", result={}))
    assert [t.trace_id for t in store.list(B)] == [theirs]
    assert store.get(B, mine) is None and store.get(A, mine) is not None
    assert store.bundle_excerpt(B, mine, 1000) is None
    assert "alice asks" in (store.bundle_excerpt(A, mine, 1000) or "")
    assert store.list(B, before=mine) == []  # another tenant's id is no cursor
    assert {t.trace_id for t in store.list(ALL_TENANTS)} == {mine, theirs}
    assert store.get(ALL_TENANTS, mine) is not None
    assert "alice asks" in (store.bundle_excerpt(ALL_TENANTS, mine, 1000) or "")


def test_hub_turns_and_heartbeats_are_per_tenant(store_backend: StoreBackend) -> None:
    store = SessionHub(load_settings(), engines=store_backend.engines)
    for tenant in (A, B):
        store.record_turn(HubTurn(tenant=tenant, session_key="s", agent_id="agent", project="p", oracle="glm",
                                  status="ok", question=f"{tenant} asks", answer="answer"))
    assert [t.question for t in store.peek(B, "s")] == ["bob asks"]
    assert [(s.tenant, s.turns) for s in store.list_sessions(B, None)] == [(B, 1)]
    assert store.stats(B, None)["turns"] == 1
    assert store.stats(ALL_TENANTS, None)["turns"] == 2
    assert {t.tenant for t in store.peek(ALL_TENANTS, "s")} == {A, B}


def test_audit_stats_count_one_tenant_unless_asked_for_all(store_backend: StoreBackend,
                                                           tmp_path: Path) -> None:
    trail = audit_trail_for(load_settings(audit_path=tmp_path / "decisions.jsonl"),
                            engines=store_backend.engines)
    for tenant, count in ((A, 2), (B, 3)):
        for _ in range(count):
            trail.append(AuditRecord(ts=1_800_000_000.0, tenant=tenant, status="ok", model="glm"))
    assert trail.stats(A, window="all")["totals"]["calls"] == 2
    assert trail.stats(B, window="all")["totals"]["calls"] == 3
    every = trail.stats(ALL_TENANTS, window="all", by="tenant")
    assert {b.key: b.figures["calls"] for b in every["buckets"]} == {A: 2, B: 3}


def test_saved_answers_and_transcripts_are_kept_with_their_tenants(store_backend: StoreBackend) -> None:
    settings = load_settings(save=True)
    archive = archive_for(settings, engines=store_backend.engines)
    local = archive.save_answer(SavedAnswer(tool="ask_glm", question="local asks", answer="a"))
    alice = archive.save_answer(SavedAnswer(tenant=A, tool="ask_glm", question="alice asks", answer="a"))
    transcript = archive.save_transcript(Transcript(key="alices-session", tenant=A))
    if isinstance(archive, DatabaseArchive):
        assert local.startswith("postgresql:answers/") and transcript.startswith("postgresql:transcripts/")
        assert "alice asks" in (archive.read(A, alice) or "")
        assert archive.read(B, alice) is None and archive.read("local", alice) is None
        assert "local asks" in (archive.read("local", local) or "")
        assert "alices-session" in (archive.read(A, transcript) or "")
        return
    assert Path(local).parent == settings.answers_dir
    assert Path(alice).parent == settings.answers_dir / "tenants" / A
    assert Path(transcript).parent == settings.sessions_dir / "tenants" / A


def _old(path: Path, scripts: tuple[str, ...], *statements: str) -> None:
    """A SQLite file as a release before tenants left it (its frozen ``scripts`` applied and its
    ``user_version`` set to match), with some rows."""
    with sqlite3.connect(path) as conn:
        for script in scripts:
            conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {len(scripts)}")
        for statement in statements:
            conn.execute(statement)
    conn.close()


def test_context_entries_from_before_tenants_belong_to_local(tmp_path: Path) -> None:
    path = tmp_path / "context.db"
    _old(path, SCRIPTS["context"][:1], "INSERT INTO context VALUES ('notes', 'v', '', 1, 1.0, 1.0)")
    store = ContextStore(path)
    assert [(e.tenant, e.key) for e in store.list(ALL_TENANTS)] == [("local", "notes")]


def test_cache_entries_from_before_tenants_belong_to_local(tmp_path: Path) -> None:
    path = tmp_path / "cache.db"
    _old(path, SCRIPTS["cache"][:1], "INSERT INTO cache VALUES ('k', 't', '{\"a\": 1}', 1e12)")
    store = AnswerCache(path, ttl=1e13, max_rows=10)
    hit = store.get("local", "k")
    assert hit is not None and hit.payload == {"a": 1}


def test_traces_from_before_tenants_belong_to_local(tmp_path: Path) -> None:
    settings = load_settings(trace_path=tmp_path / "traces.db")
    trace_id = new_trace_id()
    _old(settings.traces_db, SCRIPTS["traces"][:2],
         f"INSERT INTO traces (trace_id, ts, tool) VALUES ('{trace_id}', 1.0, 'ask')")
    store = TraceStore(settings)
    assert [t.tenant for t in store.list("local")] == ["local"]


def test_hub_rows_from_before_tenants_belong_to_local(tmp_path: Path) -> None:
    settings = load_settings(hub_path=tmp_path / "hub.db")
    _old(settings.hub_db, SCRIPTS["hub"][:1],
         "INSERT INTO turns (session_key, agent_id, project, oracle, status, question, answer, ts) "
         "VALUES ('s', 'a', 'p', 'glm', 'ok', 'q', 'a', 1.0)",
         "INSERT INTO sessions (session_key, agent_id, project, first_seen, last_seen, turns) "
         "VALUES ('s', 'a', 'p', 1.0, 1.0, 1)")
    store = SessionHub(settings)
    assert [t.tenant for t in store.peek("local", "s")] == ["local"]
    assert [s.tenant for s in store.list_sessions("local", None, active_only=False)] == ["local"]


def test_audit_lines_from_before_tenants_count_as_local(tmp_path: Path) -> None:
    log = tmp_path / "decisions.jsonl"
    log.write_text(json.dumps({"ts": 1_800_000_000.0, "status": "ok", "model": "glm"}) + "\n")
    trail = AuditTrail(AuditLog(log, max_bytes=1 << 20))
    assert trail.stats("local", window="all")["totals"]["calls"] == 1
    assert trail.stats(A, window="all")["totals"]["calls"] == 0


def test_write_keys_become_ask_keys_in_the_local_tenant(tmp_path: Path) -> None:
    path = tmp_path / "keys.db"
    _old(path, SCRIPTS["keys"][:1],
         "INSERT INTO api_keys (name, scope, prefix, key_hash, created_at) "
         "VALUES ('laptop', 'write', 'afk_abcdef', 'h1', '2026-01-01T00:00:00+00:00')",
         "INSERT INTO api_keys (name, scope, prefix, key_hash, created_at) "
         "VALUES ('ci', 'read', 'afk_ghijkl', 'h2', '2026-01-01T00:00:00+00:00')")
    store = KeyStore(path)
    assert [(k.name, k.scope, k.tenant) for k in store.list_keys()] == [
        ("laptop", "ask", "local"), ("ci", "read", "local")]
    assert store.create("new", "ask")[0].id == 3
    with sqlite3.connect(path) as conn, pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE api_keys SET scope = 'write'")
