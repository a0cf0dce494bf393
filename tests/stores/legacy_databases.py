"""Databases as the releases before the Alembic history made them: every store's schema scripts,
frozen, byte for byte, the first of each (which made its tables) and ``stores/migrations/legacy.py``'s
upgrades after it. ``SCRIPTS[store][i]`` moved ``PRAGMA user_version`` from ``i`` to ``i + 1``."""

from __future__ import annotations

from ask_fable.stores.migrations.legacy import UPGRADES

FIRST: dict[str, str] = {
    "context":
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
    "cache":
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
    "hub":
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
    "traces":
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
    "audit":
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
    "keys":
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
    "answers":
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
    "transcripts":
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
    "quotas":
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
    "settings":
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
    "ui_sessions":
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
}

SCRIPTS: dict[str, tuple[str, ...]] = {store: (FIRST[store], *UPGRADES[store]) for store in FIRST}
