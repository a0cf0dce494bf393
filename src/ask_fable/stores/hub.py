"""The cross-instance session hub: a local, visibility-only log of successful turns.

Every server process mirrors its successful turns here; ``session_list`` / ``session_peek`` /
``session_stats`` read them. Nothing here is ever fed back into a model. One heartbeat row per
``(tenant, session_key, agent_id)`` survives the turn sweep, so session totals outlive retained
turns. Every turn and heartbeat belongs to a tenant, and every read names the tenant it covers
(``ALL_TENANTS`` for an admin's view): two tenants using one label never see each other's turns.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, case, delete, func, insert, select

from ask_fable.access import ALL_TENANTS, one_tenant
from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import redact, secret_list
from ask_fable.stores.cache import bump_write_counter
from ask_fable.stores.db import Database, database_for, per_dialect, upsert
from ask_fable.stores.driver import run
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import HubTurn
from ask_fable.stores.tables import hub_counters, hub_sessions, hub_turns
from ask_fable.stores.views import HubSession, HubStats, StoredHubTurn

if TYPE_CHECKING:
    from sqlalchemy import ColumnElement, Connection
    from sqlalchemy.sql import Executable

    from ask_fable.config import Settings

SWEEP_EVERY = 100

# Built once (the reads once per shape of their filters): a statement reused keeps SQLAlchemy's
# cache key (db.per_dialect).
_ADD_TURN = insert(hub_turns)
_COUNT_TURNS = select(func.count()).select_from(hub_turns)
_TRIM = delete(hub_turns).where(hub_turns.c.id.in_(
    select(hub_turns.c.id).order_by(hub_turns.c.id).limit(bindparam("excess"))))


@per_dialect
def _BEAT(dialect: str) -> Executable:
    beat = upsert(dialect, hub_sessions)
    changed = {name: beat.excluded[name]
               for name in ("project", "last_seen", "last_question", "last_oracle", "last_status")}
    return beat.on_conflict_do_update(index_elements=["tenant", "session_key", "agent_id"],
                                      set_={**changed, "turns": hub_sessions.c.turns + 1})


def _for_tenant(every_tenant: bool, column: ColumnElement[str]) -> list[ColumnElement[bool]]:
    """The condition limiting a query to the ``tenant`` parameter (none for every tenant)."""
    return [] if every_tenant else [column == bindparam("tenant")]


@functools.cache
def _listed(every_tenant: bool, by_project: bool, active_only: bool) -> Executable:
    s, t = hub_sessions, hub_turns
    where = _for_tenant(every_tenant, s.c.tenant)
    if by_project:
        where.append(s.c.project == bindparam("project"))
    if active_only:
        where.append(s.c.last_seen >= bindparam("active_since"))
    retained = (select(func.count()).select_from(t)
                .where(t.c.tenant == s.c.tenant, t.c.session_key == s.c.session_key,
                       t.c.agent_id == s.c.agent_id)
                .scalar_subquery().label("retained_turns"))
    return select(s, retained).where(*where).order_by(s.c.last_seen.desc()).limit(bindparam("limit"))


@functools.cache
def _peeked(every_tenant: bool, by_agent: bool) -> Executable:
    t = hub_turns
    where = [*_for_tenant(every_tenant, t.c.tenant), t.c.session_key == bindparam("session_key")]
    if by_agent:
        where.append(t.c.agent_id == bindparam("agent_id"))
    return select(t.c.id, t.c.tenant, t.c.session_key, t.c.agent_id, t.c.project, t.c.oracle, t.c.status,
                  t.c.question, t.c.answer, t.c.elapsed_ms, t.c.sdk_session_id, t.c.ts
                  ).where(*where).order_by(t.c.id)


@functools.cache
def _counted(every_tenant: bool, by_project: bool, windowed: bool) -> tuple[Executable, ...]:
    """``stats``'s queries: the turn total, the turns by oracle, agent and status, the sessions."""
    t, s = hub_turns, hub_sessions
    where = _for_tenant(every_tenant, t.c.tenant)
    session_where = _for_tenant(every_tenant, s.c.tenant)
    if by_project:
        where.append(t.c.project == bindparam("project"))
        session_where.append(s.c.project == bindparam("project"))
    if windowed:
        where.append(t.c.ts >= bindparam("since"))
    active = case((s.c.last_seen >= bindparam("active_since"), 1), else_=0)
    total = select(func.count()).select_from(t).where(*where)
    groups = tuple(select(t.c[name], func.count()).where(*where).group_by(t.c[name])
                   .order_by(func.count().desc(), t.c[name]) for name in ("oracle", "agent_id", "status"))
    sessions = (select(func.count(), func.coalesce(func.sum(s.c.turns), 0),
                       func.coalesce(func.sum(active), 0))
                .select_from(s).where(*session_where))
    return (total, *groups, sessions)


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
            run(conn, _ADD_TURN, {
                "tenant": tenant, "session_key": session_key, "agent_id": agent_id, "project": project,
                "oracle": turn.oracle, "status": turn.status, "question": question, "answer": answer,
                "elapsed_ms": turn.elapsed_ms, "sdk_session_id": turn.sdk_session_id, "ts": now})
            run(conn, _BEAT(conn), {
                "tenant": tenant, "session_key": session_key, "agent_id": agent_id, "project": project,
                "first_seen": now, "last_seen": now, "turns": 1, "last_question": preview,
                "last_oracle": turn.oracle, "last_status": turn.status})
            if bump_write_counter(conn, table=hub_counters) % self.sweep_every == 0:
                self._sweep(conn)

        self.db.run_write(store)

    def _sweep(self, conn: Connection) -> int:
        cap = int(self.settings.hub_max_rows)
        count = int(conn.scalar(_COUNT_TURNS) or 0)
        if count <= cap:
            return 0
        return int(conn.execute(_TRIM, {"excess": count - int(cap * 0.9)}).rowcount)

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
        query = _listed(tenant == ALL_TENANTS, project is not None, bool(active_only))
        params = {"tenant": tenant, "project": project, "active_since": now - stale_after,
                  "limit": max(1, int(limit))}
        with self.db.read() as conn:
            rows = conn.execute(query, params).mappings().all()
        out = []
        for row in rows:
            fields = dict(row)
            question = fields.pop("last_question") or ""
            age_s = round(max(0.0, now - fields["last_seen"]), 3)
            out.append(HubSession(
                **fields, age_s=age_s, stale=age_s > stale_after,
                last_question=question if len(question) <= preview else question[: max(0, preview - 1)] + "…",
            ))
        return out

    def peek(self, tenant: str, session_key: str, agent_id: str | None = None) -> list[StoredHubTurn]:
        """Every retained turn of the tenant's ``session_key`` (across projects; every tenant's for
        ``ALL_TENANTS``), oldest first."""
        # Labels are stored redacted, so look them up the same way.
        query = _peeked(tenant == ALL_TENANTS, agent_id is not None)
        params = {"tenant": tenant, "session_key": redact(session_key, self._secrets),
                  "agent_id": None if agent_id is None else redact(agent_id, self._secrets)}
        with self.db.read() as conn:
            return [StoredHubTurn(**r) for r in conn.execute(query, params).mappings()]

    def stats(self, tenant: str, project: str | None, window_s: float = 86400) -> HubStats:
        """The tenant's (every tenant's for ``ALL_TENANTS``) turn totals by oracle, agent and status
        within ``window_s`` (0 = all retained turns).

        Session counts come from the heartbeat rows and are not limited to the window.
        """
        now = self._clock.now()
        windowed = bool(window_s and window_s > 0)
        every_tenant = tenant == ALL_TENANTS
        counted_total, *by_group, counted_sessions = _counted(every_tenant, project is not None, windowed)
        params = {"tenant": tenant, "project": project,
                  "since": now - float(window_s) if windowed else None,
                  "active_since": now - float(self.settings.hub_stale_seconds)}
        with self.db.read() as conn:
            total = int(conn.scalar(counted_total, params) or 0)
            groups = {
                name: {value: int(count) for value, count in conn.execute(query, params)}
                for name, query in zip(("oracle", "agent_id", "status"), by_group, strict=True)
            }
            sessions = conn.execute(counted_sessions, params).one()
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
