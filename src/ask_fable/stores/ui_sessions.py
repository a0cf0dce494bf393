"""The web view's login sessions, kept by the digest of their id (the id itself is never stored).

:class:`WebSessionTable` keeps them in a table on SQLite or PostgreSQL, so every server sharing
the stores honours a login, logout or expiry made through any of them; :class:`MemoryWebSessions`
keeps them in one process, for the local ``ask-fable ui``. Both keep at most ``max_sessions``, and
``max_per_key`` of one API key: starting one more drops the expired ones, then that key's oldest,
then the oldest of all (anonymous ones first). Both keep the secret the login forms are signed
with (:meth:`signing_secret`), the same for every server on the store.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, case, delete, func, insert, select

from ask_fable.stores.db import Database, database_for, per_dialect, upsert
from ask_fable.stores.engines import Engines
from ask_fable.stores.records import WebSession
from ask_fable.stores.tables import ui_secrets, ui_sessions

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlalchemy.sql import Executable

    from ask_fable.config import Settings

# Built once: a statement reused keeps SQLAlchemy's cache key (db.per_dialect).
_EXPIRED = delete(ui_sessions).where(ui_sessions.c.expires_at <= bindparam("now"))
_COUNT = select(func.count()).select_from(ui_sessions)
_OLDEST_OUT = delete(ui_sessions).where(ui_sessions.c.digest.in_(
    select(ui_sessions.c.digest)
    .order_by(case((ui_sessions.c.name.is_(None), 0), else_=1), ui_sessions.c.created_at)
    .limit(bindparam("excess"))))
_ADD = insert(ui_sessions)
_LIVE = (ui_sessions.c.expires_at > bindparam("now"))
_SESSION_OF = select(ui_sessions).where(ui_sessions.c.digest == bindparam("digest"), _LIVE)
_FORGET = delete(ui_sessions).where(ui_sessions.c.digest == bindparam("digest"))
_COUNT_LIVE = _COUNT.where(_LIVE)
_OF_KEY = ui_sessions.c.key_id == bindparam("key_id")
_HELD_BY_KEY = _COUNT.where(_OF_KEY)
_KEYS_OLDEST_OUT = delete(ui_sessions).where(ui_sessions.c.digest.in_(
    select(ui_sessions.c.digest).where(_OF_KEY).order_by(ui_sessions.c.created_at).limit(bindparam("excess"))))
_SECRET_OF = select(ui_secrets.c.value).where(ui_secrets.c.name == bindparam("name"))
#: The :data:`~ask_fable.stores.tables.ui_secrets` row the login forms are signed with.
_FORM_SECRET = "login_form"


@per_dialect
def _KEEP_FIRST_SECRET(dialect: str) -> Executable:
    return upsert(dialect, ui_secrets).on_conflict_do_nothing(index_elements=["name"])


class WebSessionTable:
    """The sessions in one :class:`~ask_fable.stores.db.Database` (SQLite or PostgreSQL)."""

    #: Every call reads or writes the database: callers on an event loop use a worker thread.
    blocking = True

    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, session: WebSession, max_sessions: int, max_per_key: int) -> None:
        """Keep ``session``, after sweeping expired sessions, at ``max_per_key`` its key's oldest, and at
        ``max_sessions`` the oldest."""
        now = session.created_at

        def body(conn: Connection) -> None:
            conn.execute(_EXPIRED, {"now": now})
            if session.key_id is not None:
                held = int(conn.scalar(_HELD_BY_KEY, {"key_id": session.key_id}) or 0)
                if held >= max_per_key:
                    excess = held - max_per_key + 1
                    conn.execute(_KEYS_OLDEST_OUT, {"key_id": session.key_id, "excess": excess})
            kept = int(conn.scalar(_COUNT) or 0)
            if kept >= max_sessions:
                # Anonymous sessions first, then the oldest.
                conn.execute(_OLDEST_OUT, {"excess": kept - max_sessions + 1})
            conn.execute(_ADD, {
                "digest": session.digest, "tenant": session.tenant, "name": session.name,
                "key_id": session.key_id, "sees_server_paths": int(session.sees_server_paths),
                "csrf": session.csrf, "created_at": session.created_at, "expires_at": session.expires_at})

        self.db.run_write(body)

    def get(self, digest: str, now: float) -> WebSession | None:
        """The session stored under ``digest`` while it has not expired, else ``None``."""
        with self.db.read() as conn:
            row = conn.execute(_SESSION_OF, {"digest": digest, "now": now}).first()
        if row is None:
            return None
        return WebSession(
            digest=row.digest, tenant=row.tenant, name=row.name,
            key_id=None if row.key_id is None else int(row.key_id),
            sees_server_paths=bool(row.sees_server_paths), csrf=row.csrf,
            created_at=float(row.created_at), expires_at=float(row.expires_at),
        )

    def remove(self, digest: str) -> None:
        """Forget the session stored under ``digest`` (nothing happens when there is none)."""
        self.db.run_write(lambda conn: conn.execute(_FORGET, {"digest": digest}))

    def count(self, now: float) -> int:
        """How many sessions have not expired at ``now``."""
        with self.db.read() as conn:
            return int(conn.scalar(_COUNT_LIVE, {"now": now}) or 0)

    def signing_secret(self, candidate: str) -> str:
        """The login forms' signing secret: the stored one, else ``candidate``, stored (whichever
        server stores one first, every server then reads the same)."""

        def body(conn: Connection) -> str:
            conn.execute(_KEEP_FIRST_SECRET(conn), {"name": _FORM_SECRET, "value": candidate})
            return str(conn.scalar(_SECRET_OF, {"name": _FORM_SECRET}))

        return self.db.run_write(body)

    def close(self) -> None:
        """Close what the store's database opened for itself."""
        self.db.close()


class MemoryWebSessions:
    """The sessions of one process, in memory (thread-safe)."""

    #: Nothing here waits: callers on an event loop call it directly.
    blocking = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_digest: OrderedDict[str, WebSession] = OrderedDict()
        self._secret: str | None = None

    def add(self, session: WebSession, max_sessions: int, max_per_key: int) -> None:
        """Keep ``session``, after sweeping expired sessions, at ``max_per_key`` its key's oldest, and at
        ``max_sessions`` the oldest."""
        with self._lock:
            for digest in [d for d, s in self._by_digest.items() if s.expires_at <= session.created_at]:
                del self._by_digest[digest]
            if session.key_id is not None:
                held = [d for d, s in self._by_digest.items() if s.key_id == session.key_id]
                for digest in held[:max(0, len(held) - max_per_key + 1)]:
                    del self._by_digest[digest]
            excess = len(self._by_digest) - max_sessions + 1
            if excess > 0:
                # Kept in order of creation: the first anonymous ones, then the first of the rest.
                anonymous = [d for d, s in self._by_digest.items() if s.name is None]
                others = [d for d, s in self._by_digest.items() if s.name is not None]
                for digest in [*anonymous, *others][:excess]:
                    del self._by_digest[digest]
            self._by_digest[session.digest] = session

    def get(self, digest: str, now: float) -> WebSession | None:
        """The session kept under ``digest`` while it has not expired, else ``None``."""
        with self._lock:
            session = self._by_digest.get(digest)
        return session if session is not None and session.expires_at > now else None

    def remove(self, digest: str) -> None:
        """Forget the session kept under ``digest`` (nothing happens when there is none)."""
        with self._lock:
            self._by_digest.pop(digest, None)

    def count(self, now: float) -> int:
        """How many sessions have not expired at ``now``."""
        with self._lock:
            return sum(1 for s in self._by_digest.values() if s.expires_at > now)

    def signing_secret(self, candidate: str) -> str:
        """The login forms' signing secret: the first ``candidate`` given, for this process's life."""
        with self._lock:
            if self._secret is None:
                self._secret = candidate
            return self._secret

    def close(self) -> None:
        """Nothing to close: the sessions end with the process."""


def ui_session_store_for(settings: Settings, *, engines: Engines | None = None) -> WebSessionTable:
    """The web view's session store configured by ``settings`` (on the App's engines when given)."""
    database = database_for(settings, "ui_sessions", settings.ui_sessions_db, engines=engines)
    return WebSessionTable(database)
