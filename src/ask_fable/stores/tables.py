"""Every table of every store, described once with SQLAlchemy Core.

Each store has a :class:`~sqlalchemy.MetaData` of its own (:data:`METADATA`): on SQLite a store is a
file of its own, on PostgreSQL a schema of its own (``ask_fable_<store>``, applied at run time by
the connection's ``schema_translate_map``, so no table here names a schema). Queries are built from
these tables and compile to either dialect; the Alembic history in ``stores/migrations/`` creates
and changes them.

Column types: ``Text``, ``Double`` (REAL on SQLite, DOUBLE PRECISION on PostgreSQL), :data:`Int`
(INTEGER on SQLite, whose integer primary keys are row ids, BIGINT on PostgreSQL) and
``LargeBinary``. Flags are integers (0/1), as the stores always kept them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Double,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    event,
    text,
)


def schema_name(store: str) -> str:
    """The PostgreSQL schema holding ``store``'s tables."""
    if not store.replace("_", "").isalpha() or not store.islower():
        raise ValueError(f"invalid store name: {store!r}")
    return f"ask_fable_{store}"


#: An integer column: INTEGER on SQLite (so an integer primary key is the row id), BIGINT on PostgreSQL.
Int = BigInteger().with_variant(Integer(), "sqlite")


def _id() -> Column[int]:
    """A generated integer primary key (an identity column on PostgreSQL)."""
    return Column("id", Int, Identity(), primary_key=True)


def _counters(meta: MetaData) -> Table:
    """A store's named counters (``meta``: its write counter, for sweeps every N writes)."""
    return Table("meta", meta, Column("name", Text, primary_key=True), Column("value", Int, nullable=False))


# --- context -------------------------------------------------------------------------------------
context_meta = MetaData()
context = Table(
    "context", context_meta,
    Column("tenant", Text, nullable=False, server_default=text("'local'"), primary_key=True),
    Column("key", Text, nullable=False, primary_key=True),
    Column("value", Text, nullable=False),
    Column("description", Text, nullable=False, server_default=text("''")),
    Column("size_chars", Int, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("updated_at", Double, nullable=False),
    Column("size_bytes", Int, nullable=False, server_default=text("0")),
    Index("context_tenant_updated", "tenant", "updated_at"),
)
context_tenants = Table(
    "context_tenants", context_meta,
    Column("tenant", Text, primary_key=True),
    Column("writes", Int, nullable=False, server_default=text("0")),
)

# --- cache ---------------------------------------------------------------------------------------
cache_meta = MetaData()
cache = Table(
    "cache", cache_meta,
    Column("tenant", Text, nullable=False, server_default=text("'local'"), primary_key=True),
    Column("key", Text, nullable=False, primary_key=True),
    Column("tool", Text, nullable=False),
    Column("payload", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Index("cache_created", "created_at"),
)
cache_counters = _counters(cache_meta)

# --- hub -----------------------------------------------------------------------------------------
hub_meta = MetaData()
hub_turns = Table(
    "turns", hub_meta,
    _id(),
    Column("session_key", Text, nullable=False),
    Column("agent_id", Text, nullable=False),
    Column("project", Text, nullable=False),
    Column("oracle", Text, nullable=False),
    Column("status", Text, nullable=False),
    Column("question", Text, nullable=False),
    Column("answer", Text, nullable=False),
    Column("elapsed_ms", Double),
    Column("sdk_session_id", Text),
    Column("ts", Double, nullable=False),
    Column("tenant", Text, nullable=False, server_default=text("'local'")),
    Index("turns_session", "session_key", "agent_id", "id"),
    Index("turns_ts", "ts"),
    Index("turns_project_ts", "project", "ts"),
    Index("turns_tenant_session", "tenant", "session_key", "agent_id", "id"),
    Index("turns_tenant_ts", "tenant", "ts"),
    sqlite_autoincrement=True,
)
hub_sessions = Table(
    "sessions", hub_meta,
    Column("tenant", Text, nullable=False, server_default=text("'local'"), primary_key=True),
    Column("session_key", Text, nullable=False, primary_key=True),
    Column("agent_id", Text, nullable=False, primary_key=True),
    Column("project", Text, nullable=False),
    Column("first_seen", Double, nullable=False),
    Column("last_seen", Double, nullable=False),
    Column("turns", Int, nullable=False, server_default=text("0")),
    Column("last_question", Text, nullable=False, server_default=text("''")),
    Column("last_oracle", Text),
    Column("last_status", Text),
    Index("sessions_last_seen", "last_seen"),
    Index("sessions_tenant_project", "tenant", "project", "last_seen"),
)
hub_counters = _counters(hub_meta)

# --- traces --------------------------------------------------------------------------------------
traces_meta = MetaData()
traces = Table(
    "traces", traces_meta,
    Column("trace_id", Text, primary_key=True),
    Column("ts", Double, nullable=False),
    Column("tool", Text),
    Column("mode", Text),
    Column("status", Text),
    Column("kind", Text),
    Column("session", Text),
    Column("project", Text),
    Column("agent_id", Text),
    Column("elapsed_ms", Double),
    Column("providers", Text, nullable=False, server_default=text("'[]'")),
    Column("models", Text, nullable=False, server_default=text("'[]'")),
    Column("cached", Int, nullable=False, server_default=text("0")),
    Column("tenant", Text, nullable=False, server_default=text("'local'")),
    Index("traces_ts", "ts", "trace_id"),
    Index("traces_tool_ts", "tool", "ts", "trace_id"),
    Index("traces_status_ts", "status", "ts", "trace_id"),
    Index("traces_session_ts", "session", "ts", "trace_id"),
    Index("traces_project_ts", "project", "ts", "trace_id"),
    Index("traces_tenant_ts", "tenant", "ts", "trace_id"),
    Index("traces_tenant_tool_ts", "tenant", "tool", "ts", "trace_id"),
    Index("traces_tenant_status_ts", "tenant", "status", "ts", "trace_id"),
    Index("traces_tenant_session_ts", "tenant", "session", "ts", "trace_id"),
    Index("traces_tenant_project_ts", "tenant", "project", "ts", "trace_id"),
)
trace_providers = Table(
    "trace_providers", traces_meta,
    Column("provider", Text, nullable=False, primary_key=True),
    Column("ts", Double, nullable=False, primary_key=True),
    Column("trace_id", Text, ForeignKey("traces.trace_id", ondelete="CASCADE"), nullable=False,
           primary_key=True),
    Index("trace_providers_trace", "trace_id"),
    sqlite_with_rowid=False,
)
trace_events = Table(
    "trace_events", traces_meta,
    Column("trace_id", Text, ForeignKey("traces.trace_id", ondelete="CASCADE"), nullable=False,
           primary_key=True),
    Column("seq", Int, nullable=False, primary_key=True),
    Column("t_ms", Double),
    Column("name", Text, nullable=False),
    Column("attrs", Text, nullable=False, server_default=text("'{}'")),
    sqlite_with_rowid=False,
)
trace_counters = _counters(traces_meta)
trace_bundles = Table(
    "bundles", traces_meta,
    Column("trace_id", Text, primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("content", LargeBinary, nullable=False),
)

# --- audit ---------------------------------------------------------------------------------------
audit_meta = MetaData()
audit_files = Table(
    "files", audit_meta,
    Column("ident", Text, primary_key=True),
    Column("offset", Int, nullable=False),
)
audit_recs = Table(
    "recs", audit_meta,
    _id(),
    Column("ident", Text, nullable=False),
    Column("ts", Double),
    Column("status", Text),
    Column("kind", Text),
    Column("model", Text),
    Column("provider", Text),
    Column("session", Text),
    Column("project", Text),
    Column("tool", Text),
    Column("mode", Text),
    Column("cached", Int, nullable=False),
    Column("elapsed_ms", Double),
    Column("degraded", Int, nullable=False),
    Column("synth_fallback", Int, nullable=False),
    Column("allowed", Int),
    Column("outcome", Text, nullable=False, server_default=text("'errors'")),
    Column("tenant", Text, nullable=False, server_default=text("'local'")),
    Column("cost_usd", Double),
    Column("line", Text),
    Index("recs_ts", "ts"),
    Index("recs_ident", "ident"),
    Index("recs_tenant_ts", "tenant", "ts"),
)
audit_members = Table(
    "members", audit_meta,
    Column("rec_id", Int, ForeignKey("recs.id", ondelete="CASCADE"), nullable=False),
    Column("provider", Text),
    Column("model", Text),
    Column("status", Text),
    Column("kind", Text),
    Column("elapsed_ms", Double),
    Column("outcome", Text, nullable=False, server_default=text("'errors'")),
    Column("cost_usd", Double),
    Index("members_rec", "rec_id"),
)

# --- keys ----------------------------------------------------------------------------------------
keys_meta = MetaData()
api_keys = Table(
    "api_keys", keys_meta,
    _id(),
    Column("name", Text, nullable=False),
    Column("scope", Text, CheckConstraint("scope IN ('read', 'ask', 'admin')"), nullable=False),
    Column("tenant", Text, nullable=False, server_default=text("'local'")),
    Column("prefix", Text, nullable=False),
    Column("key_hash", Text, nullable=False, unique=True),
    Column("created_at", Text, nullable=False),
    Column("last_used_at", Text),
    Column("revoked_at", Text),
    Column("rpm", Int),
    Column("concurrent", Int),
    Column("daily_usd", Double),
    sqlite_autoincrement=True,
)

# --- answers -------------------------------------------------------------------------------------
answers_meta = MetaData()
documents = Table(
    "documents", answers_meta,
    _id(),
    Column("tenant", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("name", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Index("documents_tenant_kind", "tenant", "kind", "id"),
    sqlite_autoincrement=True,
)

# --- transcripts ---------------------------------------------------------------------------------
transcripts_meta = MetaData()
transcript_turns = Table(
    "turns", transcripts_meta,
    _id(),
    Column("tenant", Text, nullable=False, server_default=text("'local'")),
    Column("namespace", Text, nullable=False),
    Column("session", Text, nullable=False),
    Column("question", Text, nullable=False),
    Column("prompt", Text, nullable=False),
    Column("answer", Text, nullable=False),
    Column("thinking", Text),
    Column("model", Text),
    Column("cost_usd", Double),
    Column("ts", Double, nullable=False),
    Index("turns_session", "tenant", "namespace", "session", "id"),
    Index("turns_ts", "ts"),
    sqlite_autoincrement=True,
)
transcript_counters = _counters(transcripts_meta)
session_leases = Table(
    "session_leases", transcripts_meta,
    Column("tenant", Text, nullable=False, primary_key=True),
    Column("namespace", Text, nullable=False, primary_key=True),
    Column("session", Text, nullable=False, primary_key=True),
    Column("holder", Text, nullable=False),
    Column("expires", Double, nullable=False),
    Index("session_leases_expires", "expires"),
)

# --- quotas --------------------------------------------------------------------------------------
quotas_meta = MetaData()
quota_keys = Table(
    "quota_keys", quotas_meta,
    Column("tenant", Text, nullable=False, primary_key=True),
    Column("key_id", Int, nullable=False, primary_key=True),
    Column("admissions", Int, nullable=False),
)
quota_minutes = Table(
    "quota_minutes", quotas_meta,
    Column("tenant", Text, nullable=False, primary_key=True),
    Column("key_id", Int, nullable=False, primary_key=True),
    Column("minute", Int, nullable=False, primary_key=True),
    Column("calls", Int, nullable=False),
)
quota_days = Table(
    "quota_days", quotas_meta,
    Column("tenant", Text, nullable=False, primary_key=True),
    Column("key_id", Int, nullable=False, primary_key=True),
    Column("day", Text, nullable=False, primary_key=True),
    Column("calls", Int, nullable=False),
    Column("spent_microusd", Int, nullable=False),
)
quota_in_flight = Table(
    "quota_in_flight", quotas_meta,
    Column("ticket", Text, primary_key=True),
    Column("tenant", Text, nullable=False),
    Column("key_id", Int, nullable=False),
    Column("started_at", Double, nullable=False),
    Column("expires_at", Double, nullable=False),
    Column("reserved_microusd", Int, nullable=False),
    Column("holder", Text, nullable=False, server_default=text("''")),
    Index("quota_in_flight_key", "tenant", "key_id"),
)

# --- saved settings ------------------------------------------------------------------------------
settings_meta = MetaData()
saved_settings = Table(
    "saved_settings", settings_meta,
    Column("name", Text, nullable=False, primary_key=True),
    Column("value", Text, nullable=False),
    Column("tenant", Text, nullable=False),
    Column("saved_at", Double, nullable=False),
)
saved_settings_revision = Table(
    "saved_settings_revision", settings_meta,
    Column("one", Int, CheckConstraint("one = 1"), nullable=False, primary_key=True,
           autoincrement=False),
    Column("revision", Int, nullable=False),
)


@event.listens_for(saved_settings_revision, "after_create")
def _first_revision(target: Table, connection: Any, **_: Any) -> None:
    """A new settings store holds its one revision row, at 0, as the first migration leaves it."""
    connection.execute(target.insert().values(one=1, revision=0))


# --- web view logins -----------------------------------------------------------------------------
ui_sessions_meta = MetaData()
ui_sessions = Table(
    "ui_sessions", ui_sessions_meta,
    Column("digest", Text, nullable=False, primary_key=True),
    Column("tenant", Text),
    Column("name", Text),
    Column("key_id", Int),
    Column("sees_server_paths", Int, nullable=False),
    Column("csrf", Text, nullable=False),
    Column("created_at", Double, nullable=False),
    Column("expires_at", Double, nullable=False),
    Index("ui_sessions_expiry", "expires_at"),
    Index("ui_sessions_age", "created_at"),
)
ui_secrets = Table(
    "ui_secrets", ui_sessions_meta,
    Column("name", Text, nullable=False, primary_key=True),
    Column("value", Text, nullable=False),
)

#: Each store's tables, by the name its schema (PostgreSQL) and file (SQLite) are known under.
METADATA: dict[str, MetaData] = {
    "context": context_meta,
    "cache": cache_meta,
    "hub": hub_meta,
    "traces": traces_meta,
    "audit": audit_meta,
    "keys": keys_meta,
    "answers": answers_meta,
    "transcripts": transcripts_meta,
    "quotas": quotas_meta,
    "settings": settings_meta,
    "ui_sessions": ui_sessions_meta,
}
