"""Web view sessions, kept server-side: the browser holds only a random id in an HttpOnly cookie.

A session is started by a login (an API key of ``read`` scope or higher on the team server, the
start-up token of ``ask-fable ui``) and remembers who logged in, their tenant and a CSRF token for
the forms it posts. A login always starts a new session, never upgrading the old id.

Nothing is stored before a key is presented: a login form carries a token signed with the store's
secret (:class:`LoginForms`, on ``itsdangerous``) that names a random nonce and when it was made, and
the browser gets the same nonce in an ``HttpOnly`` cookie. The form posted back must carry a token
that is valid, younger than :data:`FORM_TTL_S` and names the browser's own nonce, so no other site
can log a browser in, and a form fetched from one server may be posted to any other on the store.

:class:`Sessions` makes the ids and tokens and keeps the sessions in a
:class:`~ask_fable.stores.interfaces.WebSessionStore`, by the SHA-256 digest of their id: on the
team server the shared store (``stores/ui_sessions.py``), so a login made through one replica is
honoured by every replica; for ``ask-fable ui``, the process's memory. Logins expire after
``ttl_s``, and their number is bounded in all and per API key.
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
    from itsdangerous import URLSafeTimedSerializer

    from ask_fable.stores.interfaces import WebSessionStore

COOKIE = "ask_fable_ui"
#: The cookie holding a login form's nonce until the form is posted.
FORM_COOKIE = "ask_fable_ui_form"
#: Seconds a login form may wait before it is posted.
FORM_TTL_S = 900.0
MAX_SESSIONS = 10_000
#: Logins one API key may hold at once by default (the ``ui_max_key_sessions`` setting).
MAX_KEY_SESSIONS = 8


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
                 max_sessions: int = MAX_SESSIONS, max_per_key: int = MAX_KEY_SESSIONS) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._clock = clock
        self._max = max_sessions
        self._max_per_key = max_per_key

    @property
    def blocking(self) -> bool:
        """Whether the methods may wait on a database (run them in a worker thread then)."""
        return self.store.blocking

    def start(self, viewer: Viewer) -> tuple[str, Session]:
        """A new session for ``viewer``: its id and record (its key's oldest ended past the bound)."""
        session_id = secrets.token_urlsafe(32)
        now = self._clock.now()
        stored = WebSession(
            digest=_digest(session_id),
            tenant=viewer.tenant,
            name=viewer.name,
            key_id=viewer.key_id,
            sees_server_paths=viewer.sees_server_paths,
            csrf=secrets.token_urlsafe(24),
            created_at=now,
            expires_at=now + self.ttl_s,
        )
        self.store.add(stored, self._max, self._max_per_key)
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


class LoginForms:
    """Signed, expiring login form tokens: nothing is stored until a key is presented.

    :meth:`issue` makes a random nonce (for the browser's :data:`FORM_COOKIE`) and the token the form
    carries, which names the nonce and when it was made, signed with the store's secret;
    :meth:`valid` accepts a token only with the signature, younger than ``ttl_s``, naming the nonce.
    The secret is read from the store (made there by the first server that needs one) on first use.
    """

    SALT = "ask-fable ui login form"

    def __init__(self, store: WebSessionStore, *, ttl_s: float = FORM_TTL_S,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self._clock = clock
        self._serializer: URLSafeTimedSerializer | None = None

    @property
    def blocking(self) -> bool:
        """Whether the first use may wait on a database, reading the secret (use a worker thread then)."""
        return self._serializer is None and self.store.blocking

    def _signed(self) -> URLSafeTimedSerializer:
        if self._serializer is None:
            from itsdangerous import TimestampSigner, URLSafeTimedSerializer

            clock = self._clock

            class ClockSigner(TimestampSigner):
                def get_timestamp(self) -> int:
                    return int(clock.now())

            secret = self.store.signing_secret(secrets.token_urlsafe(48))
            self._serializer = URLSafeTimedSerializer(secret, salt=self.SALT, signer=ClockSigner)
        return self._serializer

    def issue(self) -> tuple[str, str]:
        """A new form's nonce (for the cookie) and signed token (for the form)."""
        nonce = secrets.token_urlsafe(24)
        return nonce, self._signed().dumps(nonce)

    def valid(self, nonce: str | None, token: str | None) -> bool:
        """Whether ``token`` is one :meth:`issue` made for ``nonce`` less than ``ttl_s`` ago."""
        if not nonce or not token:
            return False
        from itsdangerous import BadData

        try:
            named = self._signed().loads(token, max_age=int(self.ttl_s))
        except BadData:
            return False
        return isinstance(named, str) and hmac.compare_digest(named, nonce)
