"""The cross-instance session hub: a local, visibility-only log of successful turns.

Every server process mirrors its successful turns here; ``session_list`` / ``session_peek`` /
``session_stats`` read them. Nothing here is ever fed back into a model. One heartbeat row per
``(tenant, session_key, agent_id)`` survives the turn sweep, so session totals outlive retained
turns. Every turn and heartbeat belongs to a tenant, and every read names the tenant it covers
(``ALL_TENANTS`` for an admin's view): two tenants using one label never see each other's turns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ask_fable.access import ALL_TENANTS, one_tenant
from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import redact, secret_list
from ask_fable.stores.cache import bump_write_counter
from ask_fable.stores.db import Connection, Connections, Database, database_for
from ask_fable.stores.records import HubTurn
from ask_fable.stores.views import HubSession, HubStats, StoredHubTurn

if TYPE_CHECKING:
    from ask_fable.config import Settings

SWEEP_EVERY = 100

MIGRATIONS = [
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
    # Tenants: existing turns and heartbeats belong to the local tenant; a heartbeat is one per
    # (tenant, session_key, agent_id).
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
]


def _tenant_clause(tenant: str, column: str = "tenant") -> tuple[list[str], list[Any]]:
    """The WHERE condition and parameter limiting a query to ``tenant`` (none for ``ALL_TENANTS``)."""
    return ([], []) if tenant == ALL_TENANTS else ([f"{column} = ?"], [tenant])


class SessionHub:
    """The ``HubStore`` over SQLite at ``settings.hub_db`` or PostgreSQL (``settings.database_url``);
    writes are no-ops when ``settings.hub`` is off."""

    def __init__(self, settings: Settings, *, sweep_every: int = SWEEP_EVERY, clock: Clock = SYSTEM_CLOCK,
                 connections: Connections | None = None) -> None:
        self.settings = settings
        self.db: Database = database_for(settings, "hub", settings.hub_db, MIGRATIONS,
                                         connections=connections)
        self._clock = clock
        self.sweep_every = max(1, int(sweep_every))
        self._secrets = secret_list(settings)

    @property
    def enabled(self) -> bool:
        """Whether the hub is on (``ASK_FABLE_HUB``)."""
        return bool(getattr(self.settings, "hub", True))

    def record_turn(self, turn: HubTurn) -> None:
        """Mirror one successful turn and refresh the ``(session_key, agent_id)`` heartbeat."""
        if not self.enabled:
            return
        question = redact(turn.question, self._secrets)
        answer = redact(turn.answer, self._secrets)
        # Labels are caller-chosen text too: a key pasted into one must not be stored.
        session_key, agent_id, project = (
            redact(v, self._secrets) for v in (turn.session_key, turn.agent_id, turn.project)
        )
        tenant = one_tenant(turn.tenant)
        now = self._clock.now()
        preview = question[: max(1, int(self.settings.hub_preview_chars)) * 4]

        def store(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO turns (tenant, session_key, agent_id, project, oracle, status, question, "
                "answer, elapsed_ms, sdk_session_id, ts) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (tenant, session_key, agent_id, project, turn.oracle, turn.status, question, answer,
                 turn.elapsed_ms, turn.sdk_session_id, now),
            )
            conn.execute(
                "INSERT INTO sessions (tenant, session_key, agent_id, project, first_seen, last_seen, turns, "
                "last_question, last_oracle, last_status) VALUES (?,?,?,?,?,?,1,?,?,?) "
                "ON CONFLICT(tenant, session_key, agent_id) DO UPDATE SET project = excluded.project, "
                "last_seen = excluded.last_seen, turns = sessions.turns + 1, "
                "last_question = excluded.last_question, last_oracle = excluded.last_oracle, "
                "last_status = excluded.last_status",
                (tenant, session_key, agent_id, project, now, now, preview, turn.oracle, turn.status),
            )
            if bump_write_counter(conn) % self.sweep_every == 0:
                self._sweep(conn)

        self.db.run_write(store)

    def _sweep(self, conn: Connection) -> int:
        cap = int(self.settings.hub_max_rows)
        count = int(conn.execute("SELECT count(*) FROM turns").fetchone()[0])
        if count <= cap:
            return 0
        excess = count - int(cap * 0.9)
        return int(conn.execute(
            "DELETE FROM turns WHERE id IN (SELECT id FROM turns ORDER BY id LIMIT ?)", (excess,)
        ).rowcount)

    def sweep(self) -> int:
        """Trim retained turns toward 90% of ``hub_max_rows`` now; returns turns deleted."""
        return self.db.run_write(self._sweep)

    def list_sessions(
        self, tenant: str, project: str | None, active_only: bool = True, limit: int = 50
    ) -> list[HubSession]:
        """One row per ``(tenant, session_key, agent_id)`` of the tenant (every tenant's for
        ``ALL_TENANTS``), newest heartbeat first.

        ``project=None`` spans every project; ``active_only`` hides stale heartbeats.
        """
        now = self._clock.now()
        stale_after = float(self.settings.hub_stale_seconds)
        preview = int(self.settings.hub_preview_chars)
        where, params = _tenant_clause(tenant, "s.tenant")
        if project is not None:
            where.append("s.project = ?")
            params.append(project)
        if active_only:
            where.append("s.last_seen >= ?")
            params.append(now - stale_after)
        sql = (
            "SELECT s.*, (SELECT count(*) FROM turns t WHERE t.tenant = s.tenant AND t.session_key = "
            "s.session_key AND t.agent_id = s.agent_id) AS retained_turns FROM sessions s"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + " ORDER BY s.last_seen DESC LIMIT ?"
        )
        with self.db.read() as conn:
            rows = conn.execute(sql, [*params, max(1, int(limit))]).fetchall()
        out = []
        for row in rows:
            data = cast(HubSession, dict(row))
            question = data["last_question"] or ""
            data["last_question"] = (
                question if len(question) <= preview else question[: max(0, preview - 1)] + "…"
            )
            data["age_s"] = round(max(0.0, now - data["last_seen"]), 3)
            data["stale"] = data["age_s"] > stale_after
            out.append(data)
        return out

    def peek(self, tenant: str, session_key: str, agent_id: str | None = None) -> list[StoredHubTurn]:
        """Every retained turn of the tenant's ``session_key`` (across projects; every tenant's for
        ``ALL_TENANTS``), oldest first."""
        where, params = _tenant_clause(tenant)
        sql = ("SELECT id, tenant, session_key, agent_id, project, oracle, status, question, answer, "
               "elapsed_ms, sdk_session_id, ts FROM turns WHERE " + " AND ".join([*where, "session_key = ?"]))
        # Labels are stored redacted, so look them up the same way.
        params.append(redact(session_key, self._secrets))
        if agent_id is not None:
            sql += " AND agent_id = ?"
            params.append(redact(agent_id, self._secrets))
        with self.db.read() as conn:
            return [cast(StoredHubTurn, dict(r)) for r in conn.execute(sql + " ORDER BY id", params)]

    def stats(self, tenant: str, project: str | None, window_s: float = 86400) -> HubStats:
        """The tenant's (every tenant's for ``ALL_TENANTS``) turn totals by oracle, agent and status
        within ``window_s`` (0 = all retained turns).

        Session counts come from the heartbeat rows and are not limited to the window.
        """
        now = self._clock.now()
        where, params = _tenant_clause(tenant)
        if project is not None:
            where.append("project = ?")
            params.append(project)
        session_where, session_params = list(where), list(params)
        if window_s and window_s > 0:
            where.append("ts >= ?")
            params.append(now - float(window_s))
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        session_clause = f" WHERE {' AND '.join(session_where)}" if session_where else ""
        stale_after = float(self.settings.hub_stale_seconds)
        with self.db.read() as conn:
            total = int(conn.execute(f"SELECT count(*) FROM turns{clause}", params).fetchone()[0])
            groups = {}
            for column in ("oracle", "agent_id", "status"):
                groups[column] = {
                    r[0]: r[1]
                    for r in conn.execute(
                        f"SELECT {column}, count(*) FROM turns{clause} GROUP BY {column} "
                        "ORDER BY count(*) DESC, 1",
                        params,
                    )
                }
            sessions = conn.execute(
                "SELECT count(*), coalesce(sum(turns), 0), "
                f"coalesce(sum(CASE WHEN last_seen >= ? THEN 1 ELSE 0 END), 0) FROM sessions{session_clause}",
                [now - stale_after, *session_params],
            ).fetchone()
        return {
            "tenant": tenant,
            "project": project,
            "window_s": window_s,
            "turns": total,
            "by_oracle": groups["oracle"],
            "by_agent": groups["agent_id"],
            "by_status": groups["status"],
            "sessions": int(sessions[0]),
            "active_sessions": int(sessions[2]),
            "session_turns_total": int(sessions[1]),
        }
