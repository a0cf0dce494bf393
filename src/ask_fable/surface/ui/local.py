"""``ask-fable ui``: the web view on a free loopback port, over this user's stores, read-only.

The App it reads is opened with read-only stores (``Resources(read_only_stores=True)``): SQLite
files are opened with ``mode=ro`` and nothing is created, migrated or written. The address it
prints (and opens in a desktop browser when there is one) carries a start-up token, so other
users of the machine cannot read the pages through the port.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ask_fable.surface.http_common import UI_PATH
from ask_fable.surface.terminal import loaded
from ask_fable.surface.ui.app import LocalLogin, build_ui, checked_host, secure_headers

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

    from ask_fable.core.app import App

LOOPBACK = "127.0.0.1"
#: Seconds allowed for handing the address to the browser before going on without it.
BROWSER_WAIT_S = 5.0


def local_ui(app: App, token: str, port: int) -> ASGIApp:
    """The ASGI app ``ask-fable ui`` serves on ``port``: ``/`` leads to ``/ui``, loopback hosts only."""
    from starlette.applications import Starlette
    from starlette.responses import RedirectResponse
    from starlette.routing import Mount, Route

    ui = build_ui(app, LocalLogin(token))

    async def root(request: object) -> RedirectResponse:
        return RedirectResponse(f"{UI_PATH}/traces", status_code=303)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await app.aclose()

    root_app = Starlette(routes=[Route("/", root, methods=["GET"]), Mount("/", app=ui)], lifespan=lifespan)
    hosts = [f"{LOOPBACK}:{port}", f"localhost:{port}"]
    origins = [f"http://{LOOPBACK}:{port}", f"http://localhost:{port}"]
    return checked_host(secure_headers(root_app), hosts, origins)


def has_desktop_browser() -> bool:
    """Whether a graphical browser can be started: a display on Linux, always elsewhere, or ``$BROWSER``."""
    if os.environ.get("BROWSER"):
        return True
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def open_in_browser(address: str) -> bool:
    """Hand ``address`` to the user's browser when there is one; ``False`` when none took it. Never raises
    and never waits more than :data:`BROWSER_WAIT_S` (a text-mode browser is never started on a terminal
    with no display: it would take the terminal over)."""
    if not has_desktop_browser():
        return False
    opened: list[bool] = []

    def run() -> None:
        import webbrowser

        try:
            opened.append(bool(webbrowser.open(address, new=2)))
        except Exception:  # any failure of the browser: the address is printed anyway
            opened.append(False)

    worker = threading.Thread(target=run, name="ask-fable-browser", daemon=True)
    worker.start()
    worker.join(BROWSER_WAIT_S)
    return bool(opened and opened[0])


def serve_local(port: int = 0, *, open_browser: bool = True) -> int:
    """Serve the web view until interrupted; prints its address on stdout. 1 when the port is taken."""
    from ask_fable.backends.resources import Resources
    from ask_fable.core.app import App
    from ask_fable.surface.http_app import HttpOptions
    from ask_fable.surface.http_runner import bind_socket

    options = HttpOptions(host=LOOPBACK, port=port)
    try:
        sock = bind_socket(options)
    except OSError as exc:
        print(f"ask-fable: error: cannot listen on {LOOPBACK}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    port = int(sock.getsockname()[1])
    # Listening now, so the address is usable the moment it is printed (connections wait in the backlog).
    sock.listen(2048)
    app = App(quiet=True, resources=Resources(read_only_stores=True))
    token = secrets.token_urlsafe(24)
    address = f"http://{LOOPBACK}:{port}{UI_PATH}/login?token={token}"
    print(address, flush=True)
    opened = open_browser and open_in_browser(address)
    how = "opened in your browser" if opened else "open the address above in your browser"
    print(
        f"ask-fable ui: traces and stats of {_stores_named(app)}, every tenant's (read-only), at "
        f"http://{LOOPBACK}:{port}{UI_PATH}; {how}; Ctrl-C stops",
        file=sys.stderr,
        flush=True,
    )
    server = local_server(app, token, port)
    loaded()
    server.run(sockets=[sock])
    return 0


def _stores_named(app: App) -> str:
    """Where the stores the view reads are, in words (never the database URL: it may hold a password)."""
    if app.settings.database_url:
        return "the PostgreSQL database of ASK_FABLE_DATABASE_URL"
    return str(app.settings.state_dir)


def local_server(app: App, token: str, port: int) -> uvicorn.Server:
    """The uvicorn server of ``ask-fable ui`` for ``port`` (run it on the socket bound to that port)."""
    import uvicorn

    config = uvicorn.Config(local_ui(app, token, port), host=LOOPBACK, port=port, access_log=False,
                            log_level="warning", lifespan="on", server_header=False, proxy_headers=False)
    return uvicorn.Server(config)
