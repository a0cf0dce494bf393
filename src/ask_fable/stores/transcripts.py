"""Conversation transcripts: the turns a session continues from, on any server process (and on any
replica, when they live in PostgreSQL).

One row per answered turn, keyed by ``(tenant, namespace, session)``: ``namespace`` is the model's
conversation space (``fable``, ``opus5``, ``deepseek``, ``openrouter:<id>``…) and ``session`` the
caller's key. Text and session keys are stored redacted (a key is looked up the same way). A
session whose last turn is older than ``ASK_FABLE_SESSION_RETENTION_DAYS`` reads as empty and is
deleted, on read and by a sweep every :data:`SWEEP_EVERY` writes.

A turn in progress holds its session's lease (table ``session_leases``): one row per session with
a ``holder`` (the turn's own random id) and an ``expires`` time. :meth:`TranscriptStore.lease`
takes it in one upsert that only succeeds while the row is free, expired or already the caller's,
so two processes (replicas, stdio servers on one state directory) never run turns of one session
at once; :meth:`~TranscriptStore.renew` moves ``expires`` on while a long turn runs and
:meth:`~TranscriptStore.release` deletes the row. A holder that died leaves a row that any process
takes over once ``expires`` has passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.redact import SecretSource, redact, secret_list
from ask_fable.stores.cache import bump_write_counter
from ask_fable.stores.db import Connection, Connections, Database, database_for, open_database
from ask_fable.stores.records import SessionTurn
from ask_fable.stores.views import StoredSession, StoredSessionTurn

if TYPE_CHECKING:
    from pathlib import Path

    from ask_fable.config import Settings

SWEEP_EVERY = 100
_DAY_S = 86_400.0

MIGRATIONS = [
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
]

_COLUMNS = "question, prompt, answer, thinking, model, cost_usd, ts"
_SESSION = "tenant = ? AND namespace = ? AND session = ?"
_SELECT = f"SELECT {_COLUMNS} FROM turns WHERE {_SESSION} ORDER BY id"
# Taken when the row is absent, expired or already this holder's; otherwise nothing is returned.
_LEASE = ("INSERT INTO session_leases (tenant, namespace, session, holder, expires) VALUES (?,?,?,?,?) "
          "ON CONFLICT (tenant, namespace, session) DO UPDATE SET holder = excluded.holder, "
          "expires = excluded.expires WHERE session_leases.expires < ? "
          "OR session_leases.holder = excluded.holder RETURNING holder")


class TranscriptStore:
    """The ``SessionTranscriptStore``: SQLite at ``settings.session_db``, or PostgreSQL."""

    def __init__(self, location: str | Path | Database, *, retention_days: float = 30.0,
                 secrets: SecretSource = (), clock: Clock = SYSTEM_CLOCK,
                 connections: Connections | None = None, sweep_every: int = SWEEP_EVERY) -> None:
        self.db = open_database(location, MIGRATIONS, connections=connections)
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
            rows = conn.execute(_SELECT, where).fetchall()
        cutoff = self._cutoff()
        if rows and cutoff is not None and rows[-1]["ts"] < cutoff:
            self.db.run_write(lambda conn: conn.execute(f"DELETE FROM turns WHERE {_SESSION} AND ts < ?",
                                                        (*where, cutoff)))
            return []
        return [_turn(number, row) for number, row in enumerate(rows, start=1)]

    def append(self, turn: SessionTurn) -> int:
        """Store one answered turn (redacted); returns the session's turn count."""
        where = self._where(turn.tenant, turn.namespace, turn.session)
        text = [redact(value, self._secrets) if value else value
                for value in (turn.question, turn.prompt, turn.answer, turn.thinking)]
        now = self._clock.now()

        def store(conn: Connection) -> int:
            conn.execute(
                f"INSERT INTO turns (tenant, namespace, session, {_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (*where, *text, turn.model, turn.cost_usd, now),
            )
            count = int(conn.execute(f"SELECT count(*) FROM turns WHERE {_SESSION}", where).fetchone()[0])
            if bump_write_counter(conn) % self.sweep_every == 0:
                self._sweep(conn)
            return count

        return self.db.run_write(store)

    def clear(self, tenant: str, namespace: str, session: str) -> list[StoredSessionTurn]:
        """Delete the session's turns; returns them, oldest first."""
        where = self._where(tenant, namespace, session)
        def take(conn: Connection) -> list[Any]:
            rows = conn.execute(_SELECT, where).fetchall()
            conn.execute(f"DELETE FROM turns WHERE {_SESSION}", where)
            return rows

        rows = self.db.run_write(take)
        return [_turn(number, row) for number, row in enumerate(rows, start=1)]

    def lease(self, tenant: str, namespace: str, session: str, holder: str, ttl_s: float) -> bool:
        """Take the session's lease for ``holder`` for ``ttl_s`` seconds, unless another holder has
        it and it has not expired; whether ``holder`` has it now."""
        where = self._where(tenant, namespace, session)
        now = self._clock.now()
        return self.db.run_write(
            lambda conn: conn.execute(_LEASE, (*where, holder, now + ttl_s, now)).fetchone() is not None)

    def renew(self, tenant: str, namespace: str, session: str, holder: str, ttl_s: float) -> bool:
        """Extend ``holder``'s lease to ``ttl_s`` seconds from now; whether it still held it."""
        where = self._where(tenant, namespace, session)
        expires = self._clock.now() + ttl_s
        return self.db.run_write(lambda conn: conn.execute(
            f"UPDATE session_leases SET expires = ? WHERE {_SESSION} AND holder = ?",
            (expires, *where, holder)).rowcount > 0)

    def release(self, tenant: str, namespace: str, session: str, holder: str) -> None:
        """Give up ``holder``'s lease (nothing happens when another holder has taken it over)."""
        where = self._where(tenant, namespace, session)
        self.db.run_write(lambda conn: conn.execute(
            f"DELETE FROM session_leases WHERE {_SESSION} AND holder = ?", (*where, holder)))

    def sessions(self, tenant: str, namespace: str) -> list[StoredSession]:
        """The namespace's live sessions, most recently used first."""
        cutoff = self._cutoff()
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT session, count(*) AS turns, max(ts) AS last_ts, "
                "(SELECT model FROM turns l WHERE l.tenant = t.tenant AND l.namespace = t.namespace "
                " AND l.session = t.session ORDER BY id DESC LIMIT 1) AS model "
                "FROM turns t WHERE tenant = ? AND namespace = ? GROUP BY tenant, namespace, session "
                "HAVING max(ts) >= ? ORDER BY last_ts DESC",
                (tenant, namespace, cutoff if cutoff is not None else float("-inf")),
            ).fetchall()
        return [StoredSession(session=row["session"], turns=int(row["turns"]), last_ts=float(row["last_ts"]),
                              model=row["model"]) for row in rows]

    def sweep(self) -> int:
        """Delete every expired session now; returns the turns deleted."""
        return self.db.run_write(self._sweep)

    def _sweep(self, conn: Connection) -> int:
        conn.execute("DELETE FROM session_leases WHERE expires < ?", (self._clock.now(),))
        cutoff = self._cutoff()
        if cutoff is None:
            return 0
        return int(conn.execute(
            "DELETE FROM turns WHERE (tenant, namespace, session) IN (SELECT tenant, namespace, session "
            "FROM turns GROUP BY tenant, namespace, session HAVING max(ts) < ?)",
            (cutoff,),
        ).rowcount)


def _turn(number: int, row: Any) -> StoredSessionTurn:
    return StoredSessionTurn(number=number, question=row["question"], prompt=row["prompt"],
                             answer=row["answer"], thinking=row["thinking"], model=row["model"],
                             cost_usd=row["cost_usd"], ts=float(row["ts"]))


def transcript_store_for(settings: Settings, *, clock: Clock = SYSTEM_CLOCK,
                         connections: Connections | None = None) -> TranscriptStore:
    """The transcript store configured by ``settings`` (on the App's clock and connections when given)."""
    database = database_for(settings, "transcripts", settings.session_db, MIGRATIONS, connections=connections)
    return TranscriptStore(database, retention_days=settings.session_retention_days, secrets=settings,
                           clock=clock)
