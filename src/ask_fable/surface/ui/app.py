"""The web view as an ASGI app: read-only pages under ``/ui`` behind a session login.

Pages are GET only and change nothing: the App's stores are only read (``data.py``). The only
POSTs are the login and logout forms, which touch the sessions (``sessions.py``) and nothing else.
Two ways in:

- :class:`LocalLogin` (``ask-fable ui``): the address the command prints carries a start-up token;
  opening it starts a session (kept in the process's memory) and drops the token from the address bar.
- :class:`KeyLogin` (the team server): a form takes an API key of ``read`` scope or higher, checks
  it once and starts a session, kept in the App's shared session store so that every replica
  honours it; every later page checks the key is still active.

Either way the browser holds only a random session id, in an ``HttpOnly``, ``SameSite=Strict``
cookie scoped to ``/ui``, also ``Secure`` when the request's scheme is https (on the team server
behind a TLS proxy, as a trusted proxy's ``X-Forwarded-Proto`` says: ``http_runner.py``); the
logout form carries the session's CSRF token, the login form a signed token matching a nonce
cookie (nothing is stored before a key is presented: ``sessions.LoginForms``), and a POST from
another origin is refused. Every response carries
a strict Content-Security-Policy (no script at all, styles only from the style sheet) and headers
that keep the pages out of frames, referrers and caches.
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import parse_qsl, urlsplit

import anyio

from ask_fable.access import ALL_TENANTS, SCOPES
from ask_fable.stores.ui_sessions import MemoryWebSessions
from ask_fable.stores.views import TraceDetail
from ask_fable.surface.http_common import UI_PATH, host_allowed, origin_allowed
from ask_fable.surface.ui import data, pages
from ask_fable.surface.ui.markup import Html
from ask_fable.surface.ui.pages import Chrome, url
from ask_fable.surface.ui.sessions import COOKIE, FORM_COOKIE, LoginForms, Session, Sessions, Viewer
from ask_fable.surface.ui.style import STYLESHEET, STYLESHEET_VERSION
from ask_fable.surface.ui.timeline import build_timeline

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from ask_fable.config import Settings
    from ask_fable.core.app import App
    from ask_fable.stores.interfaces import ApiKeyStore
    from ask_fable.stores.records import ApiKey

T = TypeVar("T")
Handler = Callable[["Request"], Awaitable["Response"]]
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # "no-referrer" would send "Origin: null" on forms
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
#: Key scopes that may open the web view: ``read`` or higher (every scope there is).
VIEW_SCOPES = frozenset(SCOPES)
#: Largest login or logout form accepted.
MAX_FORM_BYTES = 8192
ICON = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" '
    b'fill="#1d2733"/><rect x="3" y="4" width="9" height="2" fill="#2f9e5a"/><rect x="5" y="7" width="8" '
    b'height="2" fill="#e8891c"/><rect x="3" y="10" width="6" height="2" fill="#d9453b"/></svg>'
)


@dataclass(frozen=True)
class LocalLogin:
    """``ask-fable ui``: the start-up ``token`` in the printed address starts a session."""

    token: str


@dataclass(frozen=True)
class KeyLogin:
    """The team server: an API key of ``read`` scope or higher, entered in the login form."""

    keys: ApiKeyStore


Login = LocalLogin | KeyLogin


def may_view(scope: str) -> bool:
    """Whether a key of ``scope`` may open the web view (``read`` scope or higher)."""
    return scope in VIEW_SCOPES


def tenant_of(key: ApiKey) -> str:
    """The tenant a key's viewer sees: the key's own."""
    return key.tenant


def secure_headers(app: ASGIApp) -> ASGIApp:
    """``app`` with the security headers added to every HTTP response."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_secure(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in SECURITY_HEADERS if n not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await app(scope, receive, send_secure)

    return wrapped


class _Ui:
    """The handlers, sharing the App (whose stores are read), the login method and the sessions."""

    def __init__(self, app: App, login: Login, sessions: Sessions, forms: LoginForms) -> None:
        self.app = app
        self.login = login
        self.sessions = sessions
        self.forms = forms
        self._tools: list[str] | None = None

    # --- responses -------------------------------------------------------------------------------
    @staticmethod
    def html(page: Html, status: int = 200) -> Response:
        from starlette.responses import Response

        return Response(
            page.encode("utf-8"),
            status_code=status,
            media_type="text/html; charset=utf-8",
            headers={"cache-control": "no-store"},
        )

    @staticmethod
    def redirect(path: str) -> Response:
        from starlette.responses import RedirectResponse

        return RedirectResponse(path, status_code=303, headers={"cache-control": "no-store"})

    def with_cookie(self, response: Response, request: Request, session_id: str, ttl: float) -> Response:
        response.set_cookie(
            COOKIE,
            session_id,
            max_age=int(ttl),
            path=UI_PATH,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    @staticmethod
    def without_cookie(response: Response, request: Request, name: str = COOKIE) -> Response:
        response.delete_cookie(
            name, path=UI_PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
        )
        return response

    # --- who is looking --------------------------------------------------------------------------
    async def stored(self, action: Callable[[], T]) -> T:
        """``action`` on the sessions: in a worker thread when their store may wait on a database."""
        if self.sessions.blocking:
            return await anyio.to_thread.run_sync(action)
        return action()

    async def pending(self, request: Request) -> Session | None:
        """The request's session, however its key stands now."""
        session_id = request.cookies.get(COOKIE)
        return await self.stored(lambda: self.sessions.get(session_id))

    async def start(self, viewer: Viewer) -> tuple[str, Session]:
        """A new session for ``viewer``: its id and record."""
        return await self.stored(lambda: self.sessions.start(viewer))

    async def signed(self, action: Callable[[], T]) -> T:
        """``action`` on the login forms: in a worker thread while their secret is still to be read."""
        if self.forms.blocking:
            return await anyio.to_thread.run_sync(action)
        return action()

    async def end(self, request: Request) -> None:
        """End the request's session, if it has one."""
        session_id = request.cookies.get(COOKIE)
        await self.stored(lambda: self.sessions.end(session_id))

    async def session(self, request: Request) -> Session | None:
        """The request's logged-in session; a team key revoked or narrowed since ends it."""
        session = await self.pending(request)
        if session is None or session.viewer is None:
            return None
        if isinstance(self.login, KeyLogin) and session.viewer.key_id is not None:
            key = await anyio.to_thread.run_sync(self.login.keys.get, session.viewer.key_id)
            if key is None or not key.active or not may_view(key.scope):
                await self.end(request)
                return None
        return session

    def not_logged_in(self, request: Request) -> Response:
        if isinstance(self.login, KeyLogin):
            return self.redirect(url("/login"))
        return self.html(
            pages.message_page(
                "Open the address ask-fable ui printed",
                "This page needs the address that ask-fable ui printed when it started (it carries a "
                "start-up token); open that address once and this browser stays logged in.",
                Chrome(),
            ),
            401,
        )

    @staticmethod
    def chrome(session: Session) -> Chrome:
        viewer = session.viewer
        return Chrome(
            viewer=viewer.name if viewer else None,
            tenant=viewer.tenant if viewer else None,
            csrf=session.csrf,
        )

    def tools(self) -> list[str]:
        if self._tools is None:
            from ask_fable.surface.registry import all_tools

            self._tools = sorted(spec.name for spec in all_tools())
        return self._tools

    # --- pages -----------------------------------------------------------------------------------
    async def page(
        self, request: Request, render: Callable[[Request, Session, str], Awaitable[Response]]
    ) -> Response:
        """Render a page for a logged-in viewer (its tenant passed on), else send them to log in."""
        session = await self.session(request)
        if session is None or session.viewer is None:
            return self.not_logged_in(request)
        try:
            return await render(request, session, session.viewer.tenant)
        except Exception as exc:  # a store that cannot be read: say so, never a stack trace
            return self.unreadable(exc, self.chrome(session))

    def unreadable(self, exc: Exception, chrome: Chrome) -> Response:
        """The page for a store that could not be read (the error goes to the server's log)."""
        _report(exc)
        return self.html(
            pages.message_page(
                "The stores could not be read",
                f"Reading the stored sessions, traces or statistics failed ({type(exc).__name__}). The "
                "server's own log has the details; the page works again once the stores are readable.",
                chrome,
            ),
            503,
        )

    def guarded(self, handler: Handler) -> Handler:
        """``handler`` answering 503 with :meth:`unreadable` when a store fails under it (the
        sessions' own, before any page is read)."""
        from starlette.exceptions import HTTPException

        async def run(request: Request) -> Response:
            try:
                return await handler(request)
            except HTTPException:
                raise
            except Exception as exc:
                return self.unreadable(exc, Chrome())

        return run

    async def home(self, request: Request) -> Response:
        return self.redirect(url("/traces"))

    async def traces(self, request: Request) -> Response:
        return await self.page(request, self._traces)

    async def _traces(self, request: Request, session: Session, tenant: str) -> Response:
        query, problems = data.TraceQuery.from_params(request.query_params)
        store = self.app.traces
        found = await self.app.run_store(lambda: data.list_traces(store, tenant, query))
        return self.html(pages.trace_list_page(found, query, problems, self.tools(), self.chrome(session)))

    async def trace(self, request: Request) -> Response:
        return await self.page(request, self._trace)

    async def _trace(self, request: Request, session: Session, tenant: str) -> Response:
        trace_id = str(request.path_params.get("trace_id", ""))
        store = self.app.traces
        trace = await self.app.run_store(lambda: data.read_trace(store, tenant, trace_id))
        if trace is None:
            return self.html(
                pages.message_page(
                    "No such trace",
                    f"No trace {trace_id!r} is stored (old traces are swept once there are too many).",
                    self.chrome(session),
                ),
                404,
            )
        content = None
        if trace.artifacts.get("bundle"):
            content = await self.app.run_store(lambda: data.read_content(store, tenant, trace_id))
        if session.viewer is not None and not session.viewer.sees_server_paths:
            from ask_fable.surface.server_paths import hide_server_paths, server_roots

            roots = server_roots(self.app.settings)
            trace = TraceDetail.model_validate(hide_server_paths(trace.model_dump(), roots))
            content = hide_server_paths(content, roots)
        timeline = build_timeline(
            trace.events, tool=trace.tool, elapsed_ms=trace.elapsed_ms, cached=trace.cached
        )
        return self.html(pages.trace_page(trace, timeline, content, self.chrome(session)))

    async def stats(self, request: Request) -> Response:
        return await self.page(request, self._stats)

    async def _stats(self, request: Request, session: Session, tenant: str) -> Response:
        window = data.stats_window(request.query_params.get("window"))
        audit = self.app.audit
        view = await self.app.run_store(lambda: data.read_stats(audit, tenant, window))
        return self.html(pages.stats_page(view, self.chrome(session)))

    async def stylesheet(self, request: Request) -> Response:
        from starlette.responses import Response

        return Response(
            STYLESHEET,
            media_type="text/css; charset=utf-8",
            headers={"cache-control": "public, max-age=31536000, immutable"},
        )

    async def icon(self, request: Request) -> Response:
        from starlette.responses import Response

        return Response(ICON, media_type="image/svg+xml", headers={"cache-control": "public, max-age=86400"})

    async def not_found(self, request: Request, exc: Exception) -> Response:
        try:
            session = await self.session(request)
        except Exception as failed:  # the sessions cannot be read: the page says so
            return self.unreadable(failed, Chrome())
        chrome = self.chrome(session) if session is not None else Chrome()
        return self.html(pages.message_page("Not found", "There is no page at this address.", chrome), 404)

    # --- login and logout ----------------------------------------------------------------------------
    async def login_form(self, request: Request) -> Response:
        if isinstance(self.login, LocalLogin):
            return await self._local_login(request, self.login)
        if await self.session(request) is not None:
            return self.redirect(url("/traces"))
        return await self._fresh_login_form(request)

    async def _fresh_login_form(self, request: Request, problem: str | None = None,
                                status: int = 200) -> Response:
        nonce, token = await self.signed(self.forms.issue)
        response = self.html(pages.login_page(token, problem), status)
        response.set_cookie(FORM_COOKIE, nonce, max_age=int(self.forms.ttl_s), path=UI_PATH, httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response

    async def _local_login(self, request: Request, login: LocalLogin) -> Response:
        presented = request.query_params.get("token", "")
        if presented and hmac.compare_digest(presented.encode(), login.token.encode()):
            await self.end(request)
            # The local user owns these stores: every tenant's calls are theirs to see, the team
            # server's on this machine included.
            session_id, _ = await self.start(Viewer(name="local", tenant=ALL_TENANTS))
            return self.with_cookie(self.redirect(url("/traces")), request, session_id, self.sessions.ttl_s)
        if await self.session(request) is not None:
            return self.redirect(url("/traces"))
        return self.not_logged_in(request)

    async def login_submit(self, request: Request) -> Response:
        if not isinstance(self.login, KeyLogin) or not _same_origin(request):
            return self.html(
                pages.message_page("Not allowed", "This form cannot be posted from here.", Chrome()), 403
            )
        form = await _form(request, self.app.settings)
        if form is None:
            return await self._fresh_login_form(request, "The form was too large.", 413)
        nonce, token = request.cookies.get(FORM_COOKIE), form.get("csrf")
        if not await self.signed(lambda: self.forms.valid(nonce, token)):
            return await self._fresh_login_form(request, "The login form had expired; enter the key again.",
                                                400)
        presented = form.get("key", "").strip()
        key = await anyio.to_thread.run_sync(self.login.keys.verify, presented) if presented else None
        if key is None:
            return await self._fresh_login_form(request, "That key is not valid, or it was revoked.", 401)
        if not may_view(key.scope):
            return await self._fresh_login_form(
                request,
                f"Key {key.prefix}… has scope {key.scope!r}; the web view needs read scope or higher.",
                403,
            )
        await self.end(request)
        viewer = Viewer(name=key.name, tenant=tenant_of(key), key_id=key.id,
                        sees_server_paths=key.scope == "admin")
        session_id, _ = await self.start(viewer)
        done = self.with_cookie(self.redirect(url("/traces")), request, session_id, self.sessions.ttl_s)
        return self.without_cookie(done, request, FORM_COOKIE)

    async def logout(self, request: Request) -> Response:
        form = await _form(request, self.app.settings) if _same_origin(request) else None
        session = await self.pending(request)
        if form is None or session is None or not session.csrf_matches(form.get("csrf")):
            return self.html(
                pages.message_page(
                    "Not logged out",
                    "This logout did not come from this web view's own page; nothing changed.",
                    Chrome(),
                ),
                403,
            )
        await self.end(request)
        target = url("/login") if isinstance(self.login, KeyLogin) else url("/traces")
        return self.without_cookie(self.redirect(target), request)


def _report(exc: Exception) -> None:
    """One redacted line on the server's stderr for a page that could not be rendered."""
    import sys

    from ask_fable.redact import redact

    print(
        f"ask-fable ui: a page failed: {redact(f'{type(exc).__name__}: {exc}')[:500]}",
        file=sys.stderr,
        flush=True,
    )


def checked_host(app: ASGIApp, hosts: list[str], origins: list[str]) -> ASGIApp:
    """``app`` answering only requests whose ``Host`` is in ``hosts`` (421 otherwise) and whose
    ``Origin``, when a browser sends one, is the page's own or in ``origins`` (403 otherwise): DNS
    rebinding and other sites' pages are turned away before any page is read, while the web view's
    own forms post behind a proxy without its address being listed."""

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in scope.get("headers", [])
            }
            refusal = None
            if not host_allowed(headers.get("host"), hosts):
                refusal = (421, b"Invalid Host header")
            elif not (
                _origin_is_host(headers.get("origin"), headers.get("host"))
                or origin_allowed(headers.get("origin"), origins)
            ):
                refusal = (403, b"Invalid Origin header")
            if refusal is not None:
                status, body = refusal
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return checked


def _origin_is_host(origin: str | None, host: str | None) -> bool:
    """Whether a browser's ``Origin`` names the host the request was sent to (the page's own)."""
    return bool(origin and host) and urlsplit(origin or "").netloc.lower() == (host or "").lower()


def _same_origin(request: Request) -> bool:
    """A POST from this web view's own page: no ``Origin`` (not a browser) or one naming this host."""
    origin = request.headers.get("origin")
    return not origin or _origin_is_host(origin, request.headers.get("host"))


async def _form(request: Request, settings: Settings) -> dict[str, str] | None:
    """A small urlencoded form's fields, or ``None`` when it is larger than :data:`MAX_FORM_BYTES`;
    a form that has not arrived within the body timeout, or went the stall timeout without a byte,
    is answered 408 and its connection closed."""
    from starlette.exceptions import HTTPException

    total, stall = settings.http_body_timeout, settings.http_body_stall_timeout
    body = b""
    chunks = request.stream()
    with anyio.move_on_after(total) as waiting:
        while True:
            try:
                with anyio.fail_after(stall) if stall < total else contextlib.nullcontext():
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise HTTPException(408, f"The form made no progress for {stall:g}s.",
                                    headers={"connection": "close"}) from None
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                return None
    if waiting.cancelled_caught:
        raise HTTPException(408, f"The form did not arrive within {total:g}s.",
                            headers={"connection": "close"})
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def build_ui(app: App, login: Login, sessions: Sessions | None = None) -> Starlette:
    """The web view's ASGI app, serving every page under ``/ui`` from ``app``'s stores. Its sessions
    are kept in the App's shared session store on the team server (``KeyLogin``), so any server
    reading the same stores honours a login, and in memory for ``ask-fable ui``, whose stores are
    read-only."""
    from starlette.applications import Starlette
    from starlette.routing import Mount, Route

    if sessions is None:
        store = app.ui_sessions if isinstance(login, KeyLogin) else MemoryWebSessions()
        sessions = Sessions(store, app.settings.ui_session_ttl, clock=app.clock,
                            max_sessions=app.settings.ui_max_sessions,
                            max_per_key=app.settings.ui_max_key_sessions)
    ui = _Ui(app, login, sessions, LoginForms(sessions.store, clock=app.clock))
    guarded = ui.guarded
    routes = [
        Route("/", ui.home, methods=["GET"]),
        Route("/traces", guarded(ui.traces), methods=["GET"]),
        Route("/traces/{trace_id}", guarded(ui.trace), methods=["GET"]),
        Route("/stats", guarded(ui.stats), methods=["GET"]),
        Route(f"/static/ui-{STYLESHEET_VERSION}.css", ui.stylesheet, methods=["GET"]),
        Route("/static/icon.svg", ui.icon, methods=["GET"]),
        Route("/login", guarded(ui.login_form), methods=["GET"]),
        Route("/login", guarded(ui.login_submit), methods=["POST"]),
        Route("/logout", guarded(ui.logout), methods=["POST"]),
    ]
    return Starlette(routes=[Mount(UI_PATH, routes=routes)], exception_handlers={404: ui.not_found})
