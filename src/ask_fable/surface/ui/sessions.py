"""Web view sessions, kept server-side: the browser holds only a random id in an HttpOnly cookie.

A session is started by a login (an API key of ``read`` scope or higher on the team server, the
start-up token of ``ask-fable ui``) and remembers who logged in, their tenant and a CSRF token for
the forms it posts. A login form gets an anonymous session first, whose CSRF token the form must
send back, so no other site can log a browser in. Ids are stored hashed, sessions expire (logins
after ``ttl_s``, anonymous ones after :data:`ANONYMOUS_TTL_S`) and their number is bounded: when
full, the oldest is dropped. A login always starts a new session, never upgrading the old id.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ask_fable.clock import SYSTEM_CLOCK, Clock

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


class Sessions:
    """The sessions of one server process (thread-safe)."""

    def __init__(
        self, ttl_s: float, *, clock: Clock = SYSTEM_CLOCK, max_sessions: int = MAX_SESSIONS
    ) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._max = max_sessions
        self._lock = threading.Lock()
        self._by_digest: OrderedDict[str, Session] = OrderedDict()

    def start(self, viewer: Viewer | None) -> tuple[str, Session]:
        """A new session for ``viewer`` (``None``: anonymous, for a login form); its id and record."""
        session_id = secrets.token_urlsafe(32)
        ttl = self.ttl_s if viewer is not None else min(self.ttl_s, ANONYMOUS_TTL_S)
        session = Session(viewer=viewer, csrf=secrets.token_urlsafe(24), expires_at=self._clock.now() + ttl)
        with self._lock:
            self._sweep()
            while len(self._by_digest) >= self._max:
                self._by_digest.popitem(last=False)
            self._by_digest[_digest(session_id)] = session
        return session_id, session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id, or ``None`` (unknown or expired)."""
        if not session_id:
            return None
        digest = _digest(session_id)
        with self._lock:
            session = self._by_digest.get(digest)
            if session is not None and session.expires_at <= self._clock.now():
                del self._by_digest[digest]
                return None
            return session

    def end(self, session_id: str | None) -> None:
        """Forget the session with this id (nothing happens when there is none)."""
        if session_id:
            with self._lock:
                self._by_digest.pop(_digest(session_id), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_digest)

    def _sweep(self) -> None:
        now = self._clock.now()
        for digest in [d for d, s in self._by_digest.items() if s.expires_at <= now]:
            del self._by_digest[digest]
