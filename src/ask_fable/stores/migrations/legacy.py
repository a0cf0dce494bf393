"""The schema scripts of the releases before the Alembic history, frozen: how each store's SQLite
file moved from one ``PRAGMA user_version`` to the next.

The first Alembic revision adopts a file (or a PostgreSQL schema) at the last of these versions as it
is, and brings an older SQLite file there with the rest of its scripts first. Never edit them.
"""

from __future__ import annotations

#: Each store's scripts, in order: script ``i`` moved ``user_version`` from ``i`` to ``i + 1``.
SCRIPTS: dict[str, tuple[str, ...]] = {
    "context": (
    """
    CREATE TABLE context (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        size_chars INTEGER NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    CREATE INDEX context_updated ON context(updated_at);
    """,
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
    CREATE TABLE cache (
        key TEXT PRIMARY KEY,
        tool TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX cache_created ON cache(created_at);
    CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    """,
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
    CREATE TABLE turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_key TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        project TEXT NOT NULL,
        oracle TEXT NOT NULL,
        status TEXT NOT NULL,
        question TEXT NOT NULL,
        answer TEXT NOT NULL,
        elapsed_ms REAL,
        sdk_session_id TEXT,
        ts REAL NOT NULL
    );
    CREATE INDEX turns_session ON turns(session_key, agent_id, id);
    CREATE INDEX turns_ts ON turns(ts);
    CREATE INDEX turns_project_ts ON turns(project, ts);
    CREATE TABLE sessions (
        session_key TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        project TEXT NOT NULL,
        first_seen REAL NOT NULL,
        last_seen REAL NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0,
        last_question TEXT NOT NULL DEFAULT '',
        last_oracle TEXT,
        last_status TEXT,
        PRIMARY KEY (session_key, agent_id)
    );
    CREATE INDEX sessions_last_seen ON sessions(last_seen);
    CREATE INDEX sessions_project ON sessions(project, last_seen);
    CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    """,
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
    CREATE TABLE traces (
        trace_id TEXT PRIMARY KEY,
        ts REAL NOT NULL,
        tool TEXT, mode TEXT, status TEXT, kind TEXT,
        session TEXT, project TEXT, agent_id TEXT,
        elapsed_ms REAL,
        providers TEXT NOT NULL DEFAULT '[]',
        models TEXT NOT NULL DEFAULT '[]',
        cached INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX traces_ts ON traces(ts, trace_id);
    CREATE INDEX traces_tool_ts ON traces(tool, ts, trace_id);
    CREATE INDEX traces_status_ts ON traces(status, ts, trace_id);
    CREATE INDEX traces_session_ts ON traces(session, ts, trace_id);
    CREATE INDEX traces_project_ts ON traces(project, ts, trace_id);
    CREATE TABLE trace_providers (
        provider TEXT NOT NULL,
        ts REAL NOT NULL,
        trace_id TEXT NOT NULL REFERENCES traces(trace_id) ON DELETE CASCADE,
        PRIMARY KEY (provider, ts, trace_id)
    ) WITHOUT ROWID;
    CREATE INDEX trace_providers_trace ON trace_providers(trace_id);
    CREATE TABLE trace_events (
        trace_id TEXT NOT NULL REFERENCES traces(trace_id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        t_ms REAL,
        name TEXT NOT NULL,
        attrs TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (trace_id, seq)
    ) WITHOUT ROWID;
    """,
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
    CREATE TABLE files (ident TEXT PRIMARY KEY, "offset" INTEGER NOT NULL);
    CREATE TABLE recs (
        id INTEGER PRIMARY KEY,
        ident TEXT NOT NULL,
        ts REAL, status TEXT, kind TEXT, model TEXT, provider TEXT,
        session TEXT, project TEXT, tool TEXT, mode TEXT, cached INTEGER NOT NULL,
        elapsed_ms REAL, degraded INTEGER NOT NULL, synth_fallback INTEGER NOT NULL,
        allowed INTEGER
    );
    CREATE INDEX recs_ts ON recs(ts);
    CREATE INDEX recs_ident ON recs(ident);
    CREATE TABLE members (
        rec_id INTEGER NOT NULL REFERENCES recs(id) ON DELETE CASCADE,
        provider TEXT, model TEXT, status TEXT, kind TEXT, elapsed_ms REAL
    );
    CREATE INDEX members_rec ON members(rec_id);
    """,
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
    CREATE TABLE api_keys (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        name         TEXT NOT NULL,
        scope        TEXT NOT NULL CHECK (scope IN ('read', 'write')),
        prefix       TEXT NOT NULL,
        key_hash     TEXT NOT NULL UNIQUE,
        created_at   TEXT NOT NULL,
        last_used_at TEXT,
        revoked_at   TEXT
    );
    """,
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
    "answers": (
    """
    CREATE TABLE documents (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL,
        kind TEXT NOT NULL,
        name TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX documents_tenant_kind ON documents(tenant, kind, id);
    """,
    ),
    "transcripts": (
    """
    CREATE TABLE turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        tenant TEXT NOT NULL DEFAULT 'local',
        namespace TEXT NOT NULL,
        session TEXT NOT NULL,
        question TEXT NOT NULL,
        prompt TEXT NOT NULL,
        answer TEXT NOT NULL,
        thinking TEXT,
        model TEXT,
        cost_usd REAL,
        ts REAL NOT NULL
    );
    CREATE INDEX turns_session ON turns(tenant, namespace, session, id);
    CREATE INDEX turns_ts ON turns(ts);
    CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    """,
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
    "quotas": (
    """
    CREATE TABLE quota_keys (
        tenant     TEXT NOT NULL,
        key_id     INTEGER NOT NULL,
        admissions INTEGER NOT NULL,
        PRIMARY KEY (tenant, key_id)
    );
    CREATE TABLE quota_minutes (
        tenant  TEXT NOT NULL,
        key_id  INTEGER NOT NULL,
        minute  INTEGER NOT NULL,
        calls   INTEGER NOT NULL,
        PRIMARY KEY (tenant, key_id, minute)
    );
    CREATE TABLE quota_days (
        tenant         TEXT NOT NULL,
        key_id         INTEGER NOT NULL,
        day            TEXT NOT NULL,
        calls          INTEGER NOT NULL,
        spent_microusd INTEGER NOT NULL,
        PRIMARY KEY (tenant, key_id, day)
    );
    CREATE TABLE quota_in_flight (
        ticket            TEXT PRIMARY KEY,
        tenant            TEXT NOT NULL,
        key_id            INTEGER NOT NULL,
        started_at        REAL NOT NULL,
        expires_at        REAL NOT NULL,
        reserved_microusd INTEGER NOT NULL
    );
    CREATE INDEX quota_in_flight_key ON quota_in_flight(tenant, key_id);
    """,
    ),
    "settings": (
    """
    CREATE TABLE saved_settings (
        name     TEXT NOT NULL PRIMARY KEY,
        value    TEXT NOT NULL,
        tenant   TEXT NOT NULL,
        saved_at REAL NOT NULL
    );
    CREATE TABLE saved_settings_revision (
        one      INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
        revision INTEGER NOT NULL
    );
    INSERT INTO saved_settings_revision (one, revision) VALUES (1, 0);
    """,
    ),
    "ui_sessions": (
    """
    CREATE TABLE ui_sessions (
        digest            TEXT NOT NULL PRIMARY KEY,
        tenant            TEXT,
        name              TEXT,
        key_id            INTEGER,
        sees_server_paths INTEGER NOT NULL,
        csrf              TEXT NOT NULL,
        created_at        REAL NOT NULL,
        expires_at        REAL NOT NULL
    );
    CREATE INDEX ui_sessions_expiry ON ui_sessions(expires_at);
    CREATE INDEX ui_sessions_age ON ui_sessions(created_at);
    """,
    ),
}


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
