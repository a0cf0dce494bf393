"""The cross-instance session hub: a local, visibility-only log of successful turns.

Every server process mirrors its successful turns here; ``session_list`` / ``session_peek`` /
``session_stats`` read them. Nothing here is ever fed back into a model. One heartbeat row per
``(tenant, session_key, agent_id)`` survives the turn sweep, so session totals outlive retained
turns. Every turn and heartbeat belongs to a tenant, and every read names the tenant it covers
(``ALL_TENANTS`` for an admin's view): two tenants using one label never see each other's turns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from sqlalchemy import case, delete, func, insert, select

from ask_fable.access import ALL_TENANTS, one_tenant
from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import redact, secret_list
from ask_fable.stores.cache import bump_write_counter
from ask_fable.stores.db import Database, database_for, upsert
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import HubTurn
from ask_fable.stores.tables import hub_counters, hub_sessions, hub_turns
from ask_fable.stores.views import HubSession, HubStats, StoredHubTurn

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection

    from ask_fable.config import Settings

SWEEP_EVERY = 100


def _for_tenant(tenant: str, column: ColumnElement[str]) -> list[ColumnElement[bool]]:
    """The condition limiting a query to ``tenant`` (none for ``ALL_TENANTS``)."""
    return [] if tenant == ALL_TENANTS else [column == tenant]


class SessionHub:
    """The ``HubStore`` over SQLite at ``settings.hub_db`` or PostgreSQL (``settings.database_url``);
    writes are no-ops when ``settings.hub`` is off."""

    def __init__(self, settings: Settings, *, sweep_every: int = SWEEP_EVERY, clock: Clock = SYSTEM_CLOCK,
                 engines: Engines | None = None) -> None:
        self.settings = settings
        self.db: Database = database_for(settings, "hub", settings.hub_db, engines=engines)
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
            conn.execute(insert(hub_turns).values(
                tenant=tenant, session_key=session_key, agent_id=agent_id, project=project,
                oracle=turn.oracle, status=turn.status, question=question, answer=answer,
                elapsed_ms=turn.elapsed_ms, sdk_session_id=turn.sdk_session_id, ts=now))
            beat = upsert(conn, hub_sessions).values(
                tenant=tenant, session_key=session_key, agent_id=agent_id, project=project, first_seen=now,
                last_seen=now, turns=1, last_question=preview, last_oracle=turn.oracle,
                last_status=turn.status)
            changed = {name: beat.excluded[name]
                       for name in ("project", "last_seen", "last_question", "last_oracle", "last_status")}
            conn.execute(beat.on_conflict_do_update(
                index_elements=["tenant", "session_key", "agent_id"],
                set_={**changed, "turns": hub_sessions.c.turns + 1}))
            if bump_write_counter(conn, table=hub_counters) % self.sweep_every == 0:
                self._sweep(conn)

        self.db.run_write(store)

    def _sweep(self, conn: Connection) -> int:
        cap = int(self.settings.hub_max_rows)
        count = int(conn.scalar(select(func.count()).select_from(hub_turns)) or 0)
        if count <= cap:
            return 0
        excess = count - int(cap * 0.9)
        oldest = select(hub_turns.c.id).order_by(hub_turns.c.id).limit(excess)
        return int(conn.execute(delete(hub_turns).where(hub_turns.c.id.in_(oldest))).rowcount)

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
        s, t = hub_sessions, hub_turns
        where = _for_tenant(tenant, s.c.tenant)
        if project is not None:
            where.append(s.c.project == project)
        if active_only:
            where.append(s.c.last_seen >= now - stale_after)
        retained = (select(func.count()).select_from(t)
                    .where(t.c.tenant == s.c.tenant, t.c.session_key == s.c.session_key,
                           t.c.agent_id == s.c.agent_id)
                    .scalar_subquery().label("retained_turns"))
        query = select(s, retained).where(*where).order_by(s.c.last_seen.desc()).limit(max(1, int(limit)))
        with self.db.read() as conn:
            rows = conn.execute(query).mappings().all()
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
        t = hub_turns
        # Labels are stored redacted, so look them up the same way.
        where = [*_for_tenant(tenant, t.c.tenant), t.c.session_key == redact(session_key, self._secrets)]
        if agent_id is not None:
            where.append(t.c.agent_id == redact(agent_id, self._secrets))
        query = select(t.c.id, t.c.tenant, t.c.session_key, t.c.agent_id, t.c.project, t.c.oracle, t.c.status,
                       t.c.question, t.c.answer, t.c.elapsed_ms, t.c.sdk_session_id, t.c.ts
                       ).where(*where).order_by(t.c.id)
        with self.db.read() as conn:
            return [cast(StoredHubTurn, dict(r)) for r in conn.execute(query).mappings()]

    def stats(self, tenant: str, project: str | None, window_s: float = 86400) -> HubStats:
        """The tenant's (every tenant's for ``ALL_TENANTS``) turn totals by oracle, agent and status
        within ``window_s`` (0 = all retained turns).

        Session counts come from the heartbeat rows and are not limited to the window.
        """
        now = self._clock.now()
        t, s = hub_turns, hub_sessions
        where = _for_tenant(tenant, t.c.tenant)
        session_where = _for_tenant(tenant, s.c.tenant)
        if project is not None:
            where.append(t.c.project == project)
            session_where.append(s.c.project == project)
        if window_s and window_s > 0:
            where.append(t.c.ts >= now - float(window_s))
        stale_after = float(self.settings.hub_stale_seconds)
        active = case((s.c.last_seen >= now - stale_after, 1), else_=0)
        with self.db.read() as conn:
            total = int(conn.scalar(select(func.count()).select_from(t).where(*where)) or 0)
            groups = {}
            for name in ("oracle", "agent_id", "status"):
                column = t.c[name]
                groups[name] = {
                    value: int(count)
                    for value, count in conn.execute(
                        select(column, func.count()).where(*where).group_by(column)
                        .order_by(func.count().desc(), column))
                }
            sessions = conn.execute(
                select(func.count(), func.coalesce(func.sum(s.c.turns), 0),
                       func.coalesce(func.sum(active), 0))
                .select_from(s).where(*session_where)).one()
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
