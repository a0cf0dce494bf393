"""Conversation transcripts: the turns a session continues from, on any server process (and on any
replica, when they live in PostgreSQL).

One row per answered turn, keyed by ``(tenant, namespace, session)``: ``namespace`` is the model's
conversation space (``fable``, ``opus5``, ``openrouter:<id>``…), ``session`` the caller's key, both
stored redacted. A session whose last turn is older than ``ASK_FABLE_SESSION_RETENTION_DAYS``
reads as empty and is deleted, on read and by a sweep every :data:`SWEEP_EVERY` writes.

A turn in progress holds its session's lease (``session_leases``: a ``holder`` and an
``expires``): :meth:`TranscriptStore.lease` takes it in one upsert that succeeds only while the row
is free, expired or the caller's, so two processes never run turns of one session at once;
:meth:`~TranscriptStore.renew` extends it and :meth:`~TranscriptStore.release` deletes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import and_, bindparam, delete, desc, func, insert, or_, select, tuple_, update

from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import SecretSource, redact, secret_list
from ask_fable.stores.cache import bump_write_counter
from ask_fable.stores.db import Database, database_for, open_database, per_dialect, upsert
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import SessionTurn, StoredSessionTurn
from ask_fable.stores.tables import session_leases, transcript_counters
from ask_fable.stores.tables import transcript_turns as turn_rows
from ask_fable.stores.views import StoredSession

if TYPE_CHECKING:
    from pathlib import Path

    from sqlalchemy import Connection, RowMapping, Table
    from sqlalchemy.sql import Executable
    from sqlalchemy.sql.elements import ColumnElement

    from ask_fable.config import Settings

SWEEP_EVERY = 100
_DAY_S = 86_400.0

_COLUMNS = (turn_rows.c.question, turn_rows.c.prompt, turn_rows.c.answer, turn_rows.c.thinking,
            turn_rows.c.model, turn_rows.c.cost_usd, turn_rows.c.ts)


def _keyed(where: tuple[str, str, str]) -> dict[str, str]:
    """The key columns of the session ``where`` names (tenant, namespace, session), as row values."""
    tenant, namespace, session = where
    return {"tenant": tenant, "namespace": namespace, "session": session}


def _in_session(table: Table, prefix: str = "") -> ColumnElement[bool]:
    """The rows of ``table`` that belong to the session the parameters ``{prefix}tenant``,
    ``{prefix}namespace`` and ``{prefix}session`` name (as :func:`_keyed` gives them, prefixed)."""
    return and_(*(table.c[name] == bindparam(prefix + name) for name in ("tenant", "namespace", "session")))


# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect). An UPDATE's own
# parameters are not named after a column (``of_tenant``…): a parameter so named would be set in it.
#: The session's turns, oldest first.
_SESSION_TURNS = select(*_COLUMNS).where(_in_session(turn_rows)).order_by(turn_rows.c.id)
_COUNT_TURNS = select(func.count()).select_from(turn_rows).where(_in_session(turn_rows))
#: The turn given as parameters.
_APPEND = insert(turn_rows)
_CLEAR = delete(turn_rows).where(_in_session(turn_rows))
_EXPIRE = delete(turn_rows).where(_in_session(turn_rows), turn_rows.c.ts < bindparam("cutoff"))
_RENEW = (update(session_leases)
          .where(_in_session(session_leases, "of_"), session_leases.c.holder == bindparam("of_holder"))
          .values(expires=bindparam("new_expires")))
_RELEASE = delete(session_leases).where(_in_session(session_leases),
                                         session_leases.c.holder == bindparam("holder"))
_EXPIRED_LEASES = delete(session_leases).where(session_leases.c.expires < bindparam("now"))


@per_dialect
def _TAKE_LEASE(dialect: str) -> Executable:
    wanted = upsert(dialect, session_leases)
    # Taken when the row is absent, expired or already this holder's; otherwise no row comes back.
    return wanted.on_conflict_do_update(
        index_elements=["tenant", "namespace", "session"],
        set_={"holder": wanted.excluded.holder, "expires": wanted.excluded.expires},
        where=or_(session_leases.c.expires < bindparam("now"),
                  session_leases.c.holder == wanted.excluded.holder),
    ).returning(session_leases.c.holder)


def _sessions(live: bool) -> Executable:
    """The namespace's sessions, most recently used first (only those used since ``cutoff`` if ``live``)."""
    each, last = turn_rows.alias("t"), turn_rows.alias("l")
    model = (select(last.c.model)
             .where(last.c.tenant == each.c.tenant, last.c.namespace == each.c.namespace,
                    last.c.session == each.c.session)
             .order_by(last.c.id.desc()).limit(1).scalar_subquery())
    query = (select(each.c.session, func.count().label("turns"), func.max(each.c.ts).label("last_ts"),
                    model.label("model"))
             .where(each.c.tenant == bindparam("tenant"), each.c.namespace == bindparam("namespace"))
             .group_by(each.c.tenant, each.c.namespace, each.c.session)
             .order_by(desc("last_ts")))
    return query.having(func.max(each.c.ts) >= bindparam("cutoff")) if live else query


_SESSIONS, _LIVE_SESSIONS = _sessions(False), _sessions(True)


def _expired_sessions() -> Executable:
    """Every turn of the sessions whose last turn is older than ``cutoff``."""
    old = turn_rows.alias("old")
    expired = (select(old.c.tenant, old.c.namespace, old.c.session)
               .group_by(old.c.tenant, old.c.namespace, old.c.session)
               .having(func.max(old.c.ts) < bindparam("cutoff")))
    session = tuple_(turn_rows.c.tenant, turn_rows.c.namespace, turn_rows.c.session)
    return delete(turn_rows).where(session.in_(expired))


_EXPIRED_SESSIONS = _expired_sessions()


class TranscriptStore:
    """The ``SessionTranscriptStore``: SQLite at ``settings.session_db``, or PostgreSQL."""

    def __init__(self, location: str | Path | Database, *, retention_days: float = 30.0,
                 secrets: SecretSource = (), clock: Clock = SYSTEM_CLOCK,
                 engines: Engines | None = None, sweep_every: int = SWEEP_EVERY) -> None:
        self.db = open_database(location, "transcripts", engines=engines)
        self.retention_s = max(0.0, float(retention_days)) * _DAY_S
        self._secrets = secret_list(secrets)
        self._clock = clock
        self.sweep_every = max(1, int(sweep_every))

    def _where(self, tenant: str, namespace: str, session: str) -> tuple[str, str, str]:
        # Keys are caller-chosen text: a secret pasted into one is stored, and looked up, redacted.
        return tenant, namespace, redact(session, self._secrets)

    def _cutoff(self) -> float | None:
        return self._clock.now() - self.retention_s if self.retention_s else None

    def turns(self, tenant: str, namespace: str, session: str) -> list[StoredSessionTurn]:
        """The session's turns, oldest first; an expired session is deleted and reads as empty."""
        where = self._where(tenant, namespace, session)
        with self.db.read() as conn:
            rows = conn.execute(_SESSION_TURNS, _keyed(where)).mappings().all()
        cutoff = self._cutoff()
        if rows and cutoff is not None and rows[-1]["ts"] < cutoff:
            self.db.run_write(lambda conn: conn.execute(_EXPIRE, {**_keyed(where), "cutoff": cutoff}))
            return []
        return [_turn(where, number, row) for number, row in enumerate(rows, start=1)]

    def append(self, turn: SessionTurn) -> int:
        """Store one answered turn (redacted); returns the session's turn count."""
        where = self._where(turn.tenant, turn.namespace, turn.session)
        question, prompt, answer, thinking = (redact(value, self._secrets) if value else value
                                              for value in (turn.question, turn.prompt, turn.answer,
                                                            turn.thinking))
        row = {**_keyed(where), "question": question, "prompt": prompt, "answer": answer,
               "thinking": thinking, "model": turn.model, "cost_usd": turn.cost_usd, "ts": self._clock.now()}

        def store(conn: Connection) -> int:
            conn.execute(_APPEND, row)
            count = int(conn.execute(_COUNT_TURNS, _keyed(where)).scalar_one())
            if bump_write_counter(conn, table=transcript_counters) % self.sweep_every == 0:
                self._sweep(conn)
            return count

        return self.db.run_write(store)

    def clear(self, tenant: str, namespace: str, session: str) -> list[StoredSessionTurn]:
        """Delete the session's turns; returns them, oldest first."""
        where = self._where(tenant, namespace, session)
        def take(conn: Connection) -> Sequence[RowMapping]:
            rows = conn.execute(_SESSION_TURNS, _keyed(where)).mappings().all()
            conn.execute(_CLEAR, _keyed(where))
            return rows

        rows = self.db.run_write(take)
        return [_turn(where, number, row) for number, row in enumerate(rows, start=1)]

    def lease(self, tenant: str, namespace: str, session: str, holder: str, ttl_s: float) -> bool:
        """Take the session's lease for ``holder`` for ``ttl_s`` seconds, unless another holder has
        it and it has not expired; whether ``holder`` has it now."""
        where = self._where(tenant, namespace, session)
        now = self._clock.now()

        def take(conn: Connection) -> bool:
            wanted = {**_keyed(where), "holder": holder, "expires": now + ttl_s, "now": now}
            return conn.execute(_TAKE_LEASE(conn), wanted).first() is not None

        return self.db.run_write(take)

    def renew(self, tenant: str, namespace: str, session: str, holder: str, ttl_s: float) -> bool:
        """Extend ``holder``'s lease to ``ttl_s`` seconds from now; whether it still held it."""
        where = self._where(tenant, namespace, session)
        expires = self._clock.now() + ttl_s
        held = {f"of_{name}": value for name, value in _keyed(where).items()}
        return self.db.run_write(lambda conn: conn.execute(
            _RENEW, {**held, "of_holder": holder, "new_expires": expires}).rowcount > 0)

    def release(self, tenant: str, namespace: str, session: str, holder: str) -> None:
        """Give up ``holder``'s lease (nothing happens when another holder has taken it over)."""
        where = self._where(tenant, namespace, session)
        self.db.run_write(lambda conn: conn.execute(_RELEASE, {**_keyed(where), "holder": holder}))

    def sessions(self, tenant: str, namespace: str) -> list[StoredSession]:
        """The namespace's live sessions, most recently used first."""
        cutoff = self._cutoff()
        query = _SESSIONS if cutoff is None else _LIVE_SESSIONS
        with self.db.read() as conn:
            rows = conn.execute(query, {"tenant": tenant, "namespace": namespace, "cutoff": cutoff}).all()
        return [StoredSession(session=row.session, turns=int(row.turns), last_ts=float(row.last_ts),
                              model=row.model) for row in rows]

    def sweep(self) -> int:
        """Delete every expired session now; returns the turns deleted."""
        return self.db.run_write(self._sweep)

    def _sweep(self, conn: Connection) -> int:
        conn.execute(_EXPIRED_LEASES, {"now": self._clock.now()})
        cutoff = self._cutoff()
        if cutoff is None:
            return 0
        return int(conn.execute(_EXPIRED_SESSIONS, {"cutoff": cutoff}).rowcount)


def _turn(where: tuple[str, str, str], number: int, row: RowMapping) -> StoredSessionTurn:
    tenant, namespace, session = where
    return StoredSessionTurn(tenant=tenant, namespace=namespace, session=session, number=number,
                             question=row["question"], prompt=row["prompt"], answer=row["answer"],
                             thinking=row["thinking"], model=row["model"], cost_usd=row["cost_usd"],
                             ts=float(row["ts"]))


def transcript_store_for(settings: Settings, *, clock: Clock = SYSTEM_CLOCK,
                         engines: Engines | None = None) -> TranscriptStore:
    """The transcript store configured by ``settings`` (on the App's clock and engines when given)."""
    database = database_for(settings, "transcripts", settings.session_db, engines=engines)
    return TranscriptStore(database, retention_days=settings.session_retention_days, secrets=settings,
                           clock=clock)
