"""The web view's login sessions, kept by the digest of their id (the id itself is never stored).

:class:`WebSessionTable` keeps them in a table on SQLite or PostgreSQL (``db.database_for``), so
every server sharing the stores honours a login made through any of them, and a logout or an
expiry holds on all at once. :class:`MemoryWebSessions` keeps them in one process, for the local
``ask-fable ui`` (whose stores are opened read-only, and whose logins need no other process).

Both keep at most ``max_sessions``, and at most ``max_per_key`` of one API key: starting one more
first drops the expired ones, then that key's oldest beyond its bound, then the oldest of all (any
anonymous ones first), so one key logging in again and again ends only its own logins. A session is
read by digest and comes back only while it has not expired; an expired one stays stored until the
next start sweeps it.

Both also keep the secret the login forms' tokens are signed with (:meth:`signing_secret`), the same
for every server on the store, so a form fetched from one may be posted to another: a login form
itself writes no session.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from ask_fable.stores.db import Connection, Connections, Database, database_for
from ask_fable.stores.records import WebSession

if TYPE_CHECKING:
    from ask_fable.config import Settings

MIGRATIONS = [
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
    """
    CREATE TABLE ui_secrets (
        name  TEXT NOT NULL PRIMARY KEY,
        value TEXT NOT NULL
    );
    """,
]
#: The :class:`ui_secrets` row the login forms are signed with.
_FORM_SECRET = "login_form"

_COLUMNS = "digest, tenant, name, key_id, sees_server_paths, csrf, created_at, expires_at"


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
            conn.execute("DELETE FROM ui_sessions WHERE expires_at <= ?", (now,))
            if session.key_id is not None:
                held = int(conn.execute("SELECT COUNT(*) FROM ui_sessions WHERE key_id = ?",
                                        (session.key_id,)).fetchone()[0])
                if held >= max_per_key:
                    conn.execute(
                        "DELETE FROM ui_sessions WHERE digest IN (SELECT digest FROM ui_sessions "
                        "WHERE key_id = ? ORDER BY created_at LIMIT ?)",
                        (session.key_id, held - max_per_key + 1),
                    )
            kept = int(conn.execute("SELECT COUNT(*) FROM ui_sessions").fetchone()[0])
            if kept >= max_sessions:
                conn.execute(
                    "DELETE FROM ui_sessions WHERE digest IN (SELECT digest FROM ui_sessions ORDER BY "
                    "CASE WHEN name IS NULL THEN 0 ELSE 1 END, created_at LIMIT ?)",
                    (kept - max_sessions + 1,),
                )
            conn.execute(
                f"INSERT INTO ui_sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (session.digest, session.tenant, session.name, session.key_id,
                 int(session.sees_server_paths), session.csrf, session.created_at, session.expires_at),
            )

        self.db.run_write(body)

    def get(self, digest: str, now: float) -> WebSession | None:
        """The session stored under ``digest`` while it has not expired, else ``None``."""
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM ui_sessions WHERE digest = ? AND expires_at > ?",
                               (digest, now)).fetchone()
        if row is None:
            return None
        return WebSession(
            digest=row["digest"], tenant=row["tenant"], name=row["name"],
            key_id=None if row["key_id"] is None else int(row["key_id"]),
            sees_server_paths=bool(row["sees_server_paths"]), csrf=row["csrf"],
            created_at=float(row["created_at"]), expires_at=float(row["expires_at"]),
        )

    def remove(self, digest: str) -> None:
        """Forget the session stored under ``digest`` (nothing happens when there is none)."""
        self.db.run_write(lambda conn: conn.execute("DELETE FROM ui_sessions WHERE digest = ?", (digest,)))

    def count(self, now: float) -> int:
        """How many sessions have not expired at ``now``."""
        with self.db.read() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM ui_sessions WHERE expires_at > ?",
                                    (now,)).fetchone()[0])

    def signing_secret(self, candidate: str) -> str:
        """The login forms' signing secret: the stored one, else ``candidate``, stored (whichever
        server stores one first, every server then reads the same)."""

        def body(conn: Connection) -> str:
            conn.execute("INSERT INTO ui_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                         (_FORM_SECRET, candidate))
            return str(conn.execute("SELECT value FROM ui_secrets WHERE name = ?",
                                    (_FORM_SECRET,)).fetchone()["value"])

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


def ui_session_store_for(settings: Settings, *, connections: Connections | None = None) -> WebSessionTable:
    """The web view's session store configured by ``settings`` (on the App's connections when given)."""
    database = database_for(settings, "ui_sessions", settings.ui_sessions_db, MIGRATIONS,
                            connections=connections)
    return WebSessionTable(database)
