"""Web view sessions, kept server-side: the browser holds only a random id in an HttpOnly cookie.

A session is started by a login (an API key of ``read`` scope or higher on the team server, the
start-up token of ``ask-fable ui``) and remembers who logged in, their tenant and a CSRF token for
the forms it posts. A login form gets an anonymous session first, whose CSRF token the form must
send back, so no other site can log a browser in. A login always starts a new session, never
upgrading the old id.

:class:`Sessions` makes the ids and tokens and keeps the sessions in a
:class:`~ask_fable.stores.interfaces.WebSessionStore`, by the SHA-256 digest of their id: on the
team server the shared store (``stores/ui_sessions.py``), so a login made through one replica is
honoured by every replica; for ``ask-fable ui``, the process's memory. Sessions expire (logins
after ``ttl_s``, anonymous ones after :data:`ANONYMOUS_TTL_S`) and their number is bounded.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ask_fable.clock import SYSTEM_CLOCK, Clock
from ask_fable.stores.records import WebSession

if TYPE_CHECKING:
    from ask_fable.stores.interfaces import WebSessionStore

COOKIE = "ask_fable_ui"
ANONYMOUS_TTL_S = 900.0
MAX_SESSIONS = 10_000


@dataclass(frozen=True)
class Viewer:
    """Who a logged-in session belongs to; ``sees_server_paths`` is false for a team key without the
    admin scope, who is shown the server's files relative to its directories."""

    name: str
    tenant: str
    key_id: int | None = None
    sees_server_paths: bool = True


@dataclass(frozen=True)
class Session:
    """One session: its viewer (``None`` before login), CSRF token and expiry (clock seconds)."""

    viewer: Viewer | None
    csrf: str
    expires_at: float

    def csrf_matches(self, presented: str | None) -> bool:
        """Whether ``presented`` is this session's CSRF token (compared in constant time)."""
        return bool(presented) and hmac.compare_digest(self.csrf, presented or "")


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()


def _session(stored: WebSession) -> Session:
    viewer = None
    if stored.name is not None and stored.tenant is not None:
        viewer = Viewer(name=stored.name, tenant=stored.tenant, key_id=stored.key_id,
                        sees_server_paths=stored.sees_server_paths)
    return Session(viewer=viewer, csrf=stored.csrf, expires_at=stored.expires_at)


class Sessions:
    """Sessions in ``store``; each method may block when the store does (``store.blocking``)."""

    def __init__(self, store: WebSessionStore, ttl_s: float, *, clock: Clock = SYSTEM_CLOCK,
                 max_sessions: int = MAX_SESSIONS) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._clock = clock
        self._max = max_sessions

    @property
    def blocking(self) -> bool:
        """Whether the methods may wait on a database (run them in a worker thread then)."""
        return self.store.blocking

    def start(self, viewer: Viewer | None) -> tuple[str, Session]:
        """A new session for ``viewer`` (``None``: anonymous, for a login form); its id and record."""
        session_id = secrets.token_urlsafe(32)
        ttl = self.ttl_s if viewer is not None else min(self.ttl_s, ANONYMOUS_TTL_S)
        now = self._clock.now()
        stored = WebSession(
            digest=_digest(session_id),
            tenant=viewer.tenant if viewer is not None else None,
            name=viewer.name if viewer is not None else None,
            key_id=viewer.key_id if viewer is not None else None,
            sees_server_paths=viewer.sees_server_paths if viewer is not None else False,
            csrf=secrets.token_urlsafe(24),
            created_at=now,
            expires_at=now + ttl,
        )
        self.store.add(stored, self._max)
        return session_id, _session(stored)

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id, or ``None`` (unknown or expired)."""
        if not session_id:
            return None
        stored = self.store.get(_digest(session_id), self._clock.now())
        return None if stored is None else _session(stored)

    def end(self, session_id: str | None) -> None:
        """Forget the session with this id (nothing happens when there is none)."""
        if session_id:
            self.store.remove(_digest(session_id))

    def __len__(self) -> int:
        return self.store.count(self._clock.now())
