"""A planted key goes through every writer and appears zero times in any file written or, on
PostgreSQL, in any row."""

from __future__ import annotations

from pathlib import Path

import pytest

from ask_fable.config import load_settings
from ask_fable.redact import redact
from ask_fable.stores.answers import save_answer, save_transcript
from ask_fable.stores.audit import audit_log_for
from ask_fable.stores.cache import answer_cache_for
from ask_fable.stores.context import ContextStore
from ask_fable.stores.hub import SessionHub
from ask_fable.stores.records import HubTurn, StoredSessionTurn, TraceEvent, TraceRecord
from ask_fable.stores.trace_ids import new_trace_id
from ask_fable.stores.traces import TraceStore
from tests.conftest import StoreBackend

SHAPED = "sk-ant-api03-PLANTEDplantedPLANTED0123456789abcdefXYZ"
CONFIGURED = "glm.PlantedConfiguredKey.4242"


def test_planted_keys_never_reach_disk() -> None:
    settings = load_settings(glm_api_key=CONFIGURED, trace_mode="full", audit_raw=True, save=True)
    text = f"my keys are {SHAPED} and {CONFIGURED}; header Authorization: Bearer {CONFIGURED}"
    assert SHAPED not in redact(text, settings) and CONFIGURED not in redact(text, settings)

    # Every store stays referenced until the files are read: a store collected mid-scan closes its
    # last connection, which folds the WAL file into the database and deletes it.
    context = ContextStore(settings.context_db, secrets=settings)
    context.write("local", "ctx", text, description=text)
    cache = answer_cache_for(settings)
    key = cache.key_for("ask_glm", ["glm"], text, text)
    cache.put("local", key, "ask_glm", {"answer": text, "nested": [text]})
    hub = SessionHub(settings)
    hub.record_turn(HubTurn(session_key="s", agent_id="a", project="p", oracle="glm", status="ok",
                            question=text, answer=text, elapsed_ms=1.0))
    traces = TraceStore(settings)
    trace_id = new_trace_id()
    note = TraceEvent(t_ms=0, name="note", attrs={"detail": text})
    traces.record(TraceRecord(trace_id=trace_id, ts=1.0, tool="ask_glm", status="ok", events=[note]))
    traces.write_bundle(trace_id, {"question": text, "answer": text, "thinking": text * 50})
    save_answer(settings, "ask_glm", text, text, thinking=text, meta={"note": text})
    save_transcript(settings, "fable:default", [StoredSessionTurn(
        namespace="fable", session="default", number=1, question=text, prompt=text, answer=text,
        thinking=text, ts=1_780_000_000.0)])
    audit_log_for(settings).append(
        {"ts": 1.0, "question": text, "context_raw": text, "members": [{"x": text}]}
    )
    excerpt = traces.bundle_excerpt("local", trace_id, 100_000)
    assert excerpt is not None and SHAPED not in excerpt

    written = [p for p in Path(settings.state_dir).rglob("*") if p.is_file()]
    assert len(written) >= 10  # the dbs (+ WAL), bundle, answer, transcript, audit
    for path in written:
        data = path.read_bytes()
        assert SHAPED.encode() not in data, path
        assert CONFIGURED.encode() not in data, path
        assert b"PLANTEDplanted" not in data, path
    assert context.db.path.exists() and hub.db.path.exists()


# The SQLite files are read by the test above.
@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
def test_planted_keys_never_reach_a_postgresql_row(store_backend: StoreBackend) -> None:
    import psycopg

    from ask_fable.stores.answers import archive_for
    from ask_fable.stores.audit_trail import audit_trail_for
    from ask_fable.stores.context import context_store_for
    from ask_fable.stores.records import AuditRecord, SavedAnswer, StoredSessionTurn, Transcript

    settings = load_settings(glm_api_key=CONFIGURED, trace_mode="full", audit_raw=True, save=True)
    text = f"my keys are {SHAPED} and {CONFIGURED}; header Authorization: Bearer {CONFIGURED}"
    pools = store_backend.engines
    context_store_for(settings, engines=pools).write("local", "ctx", text, description=text)
    cache = answer_cache_for(settings, engines=pools)
    cache.put("local", cache.key_for("ask_glm", ["glm"], text, text), "ask_glm", {"answer": text})
    SessionHub(settings, engines=pools).record_turn(HubTurn(
        session_key=text, agent_id="a", project="p", oracle="glm", status="ok", question=text, answer=text))
    traces = TraceStore(settings, engines=pools)
    trace_id = new_trace_id()
    note = TraceEvent(t_ms=0, name="note", attrs={"detail": text})
    traces.record(TraceRecord(trace_id=trace_id, ts=1.0, tool="ask_glm", status="ok", events=[note]))
    traces.write_bundle(trace_id, {"question": text, "answer": text})
    archive = archive_for(settings, engines=pools)
    archive.save_answer(SavedAnswer(tool="ask_glm", question=text, answer=text, thinking=text))
    archive.save_transcript(Transcript(key="default", turns=[StoredSessionTurn(
        namespace="fable", session="default", number=1, question=text, prompt=text, answer=text, ts=0.0)]))
    audit_trail_for(settings, engines=pools).append(AuditRecord(ts=1.0, question=text, status="ok"))

    assert not [p for p in Path(settings.state_dir).rglob("*") if p.is_file()]  # nothing on disk
    seen = 0
    with psycopg.connect(store_backend.url or "") as conn:
        tables = conn.execute("SELECT table_schema, table_name FROM information_schema.tables "
                              "WHERE table_schema LIKE 'ask_fable%'").fetchall()
        for schema, table in tables:
            for row in conn.execute(f'SELECT * FROM "{schema}"."{table}"'):
                seen += 1
                # Bundles are bytes: read them as the text they hold.
                shown = " ".join(bytes(v).decode() if isinstance(v, bytes | memoryview) else str(v)
                                 for v in row)
                assert SHAPED not in shown and CONFIGURED not in shown, (schema, table)
                assert "PLANTEDplanted" not in shown, (schema, table)
    assert seen >= 8
