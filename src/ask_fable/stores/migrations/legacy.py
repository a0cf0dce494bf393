"""The schema scripts of the releases before the Alembic history, frozen: how each store's SQLite
file moved from one ``PRAGMA user_version`` to the next.

The first Alembic revision adopts a file (or a PostgreSQL schema) at the last of these versions as it
is, and brings an older SQLite file there with the rest of its scripts first. Only those are kept:
a store at version 0 has no tables yet (the history makes them), and a PostgreSQL schema or a store
kept only on PostgreSQL (answers, settings) is adopted at its last version or refused, so the first
script of each store, which made its tables, is never run again. Never edit them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection

#: Each store's scripts after its first, in order: ``UPGRADES[store][i]`` moved ``user_version``
#: from ``i + 1`` to ``i + 2``.
UPGRADES: dict[str, tuple[str, ...]] = {
    "context": (
    """
    CREATE TABLE context_v2 (
        tenant TEXT NOT NULL DEFAULT 'local',
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        size_chars INTEGER NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (tenant, key)
    );
    INSERT INTO context_v2 (tenant, key, value, description, size_chars, created_at, updated_at)
        SELECT 'local', key, value, description, size_chars, created_at, updated_at FROM context;
    DROP TABLE context;
    ALTER TABLE context_v2 RENAME TO context;
    CREATE INDEX context_tenant_updated ON context(tenant, updated_at);
    """,
    """
    ALTER TABLE context ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
    UPDATE context SET size_bytes = length(CAST(value AS BLOB));
    """,
    """
    CREATE TABLE context_tenants (
        tenant TEXT PRIMARY KEY,
        writes INTEGER NOT NULL DEFAULT 0
    );
    """,
    ),
    "cache": (
    """
    CREATE TABLE cache_v2 (
        tenant TEXT NOT NULL DEFAULT 'local',
        key TEXT NOT NULL,
        tool TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (tenant, key)
    );
    INSERT INTO cache_v2 (tenant, key, tool, payload, created_at)
        SELECT 'local', key, tool, payload, created_at FROM cache;
    DROP TABLE cache;
    ALTER TABLE cache_v2 RENAME TO cache;
    CREATE INDEX cache_created ON cache(created_at);
    """,
    ),
    "hub": (
    """
    ALTER TABLE turns ADD COLUMN tenant TEXT NOT NULL DEFAULT 'local';
    CREATE INDEX turns_tenant_session ON turns(tenant, session_key, agent_id, id);
    CREATE INDEX turns_tenant_ts ON turns(tenant, ts);
    CREATE TABLE sessions_v2 (
        tenant TEXT NOT NULL DEFAULT 'local',
        session_key TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        project TEXT NOT NULL,
        first_seen REAL NOT NULL,
        last_seen REAL NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0,
        last_question TEXT NOT NULL DEFAULT '',
        last_oracle TEXT,
        last_status TEXT,
        PRIMARY KEY (tenant, session_key, agent_id)
    );
    INSERT INTO sessions_v2 (tenant, session_key, agent_id, project, first_seen, last_seen, turns,
                             last_question, last_oracle, last_status)
        SELECT 'local', session_key, agent_id, project, first_seen, last_seen, turns, last_question,
               last_oracle, last_status FROM sessions;
    DROP TABLE sessions;
    ALTER TABLE sessions_v2 RENAME TO sessions;
    CREATE INDEX sessions_last_seen ON sessions(last_seen);
    CREATE INDEX sessions_tenant_project ON sessions(tenant, project, last_seen);
    """,
    ),
    "traces": (
    """
    CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    """,
    """
    ALTER TABLE traces ADD COLUMN tenant TEXT NOT NULL DEFAULT 'local';
    CREATE INDEX traces_tenant_ts ON traces(tenant, ts, trace_id);
    CREATE INDEX traces_tenant_tool_ts ON traces(tenant, tool, ts, trace_id);
    CREATE INDEX traces_tenant_status_ts ON traces(tenant, status, ts, trace_id);
    CREATE INDEX traces_tenant_session_ts ON traces(tenant, session, ts, trace_id);
    CREATE INDEX traces_tenant_project_ts ON traces(tenant, project, ts, trace_id);
    """,
    """
    CREATE TABLE bundles (
        trace_id TEXT PRIMARY KEY,
        tenant TEXT NOT NULL,
        content BLOB NOT NULL
    );
    """,
    ),
    "audit": (
    """
    DELETE FROM members;
    DELETE FROM recs;
    DELETE FROM files;
    ALTER TABLE recs ADD COLUMN outcome TEXT NOT NULL DEFAULT 'errors';
    ALTER TABLE members ADD COLUMN outcome TEXT NOT NULL DEFAULT 'errors';
    """,
    """
    DELETE FROM members;
    DELETE FROM recs;
    DELETE FROM files;
    ALTER TABLE recs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'local';
    """,
    """
    DELETE FROM members;
    DELETE FROM recs;
    DELETE FROM files;
    ALTER TABLE recs ADD COLUMN cost_usd REAL;
    ALTER TABLE members ADD COLUMN cost_usd REAL;
    """,
    """
    ALTER TABLE recs ADD COLUMN line TEXT;
    CREATE INDEX recs_tenant_ts ON recs(tenant, ts);
    """,
    ),
    "keys": (
    """
    CREATE TABLE api_keys_v2 (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        name         TEXT NOT NULL,
        scope        TEXT NOT NULL CHECK (scope IN ('read', 'ask', 'admin')),
        tenant       TEXT NOT NULL DEFAULT 'local',
        prefix       TEXT NOT NULL,
        key_hash     TEXT NOT NULL UNIQUE,
        created_at   TEXT NOT NULL,
        last_used_at TEXT,
        revoked_at   TEXT
    );
    INSERT INTO api_keys_v2 (id, name, scope, tenant, prefix, key_hash, created_at, last_used_at, revoked_at)
        SELECT id, name, CASE scope WHEN 'write' THEN 'ask' ELSE scope END, 'local', prefix, key_hash,
               created_at, last_used_at, revoked_at
        FROM api_keys;
    DROP TABLE api_keys;
    ALTER TABLE api_keys_v2 RENAME TO api_keys;
    """,
    """
    ALTER TABLE api_keys ADD COLUMN rpm INTEGER;
    ALTER TABLE api_keys ADD COLUMN concurrent INTEGER;
    ALTER TABLE api_keys ADD COLUMN daily_usd REAL;
    """,
    ),
    "answers": (),
    "transcripts": (
    """
    CREATE TABLE session_leases (
        tenant TEXT NOT NULL,
        namespace TEXT NOT NULL,
        session TEXT NOT NULL,
        holder TEXT NOT NULL,
        expires REAL NOT NULL,
        PRIMARY KEY (tenant, namespace, session)
    );
    CREATE INDEX session_leases_expires ON session_leases(expires);
    """,
    ),
    "quotas": (),
    "settings": (),
    "ui_sessions": (),
}

#: Each store's last version before this history: its first script and those after it.
FINAL: dict[str, int] = {store: 1 + len(scripts) for store, scripts in UPGRADES.items()}

#: The old version marker set once a store is in the Alembic history: past every release that used
#: it, so such a release refuses the store instead of running its scripts again.
LEGACY_SENTINEL = 1000


def set_legacy_version(conn: Connection, store: str, version: int) -> None:
    """Set ``store``'s old version marker on ``conn``: ``PRAGMA user_version`` on SQLite, its row of
    ``ask_fable.schema_migrations`` on PostgreSQL."""
    from sqlalchemy import text

    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(f"PRAGMA user_version = {int(version)}")
        return
    conn.exec_driver_sql("CREATE SCHEMA IF NOT EXISTS ask_fable")
    conn.exec_driver_sql("CREATE TABLE IF NOT EXISTS ask_fable.schema_migrations (store TEXT PRIMARY KEY, "
                         "version INTEGER NOT NULL, applied_at DOUBLE PRECISION NOT NULL)")
    conn.execute(text("INSERT INTO ask_fable.schema_migrations (store, version, applied_at) "
                      "VALUES (:store, :version, extract(epoch from now())) ON CONFLICT (store) DO UPDATE "
                      "SET version = excluded.version, applied_at = excluded.applied_at"),
                 {"store": store, "version": version})


def split_statements(script: str) -> list[str]:
    """Split one of these scripts into complete statements (semicolons inside strings are kept)."""
    import sqlite3

    statements: list[str] = []
    buffer = ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            if buffer.strip(" \t\r\n;"):
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip(" \t\r\n;"):
        statements.append(buffer.strip())
    return statements
