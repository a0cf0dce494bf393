"""The web view's logins on the real ``ask-fable serve --http``: nothing is written before a key is
presented, and one key logging in again and again cannot push anyone else's login out.

Before: 1,000 unauthenticated ``GET /ui/login`` left 1,003 rows in ``ui_sessions`` (anonymous writes
to the team's database), and every login of one read key counted against the one cap all logins
share, so one key could end everyone's.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import anyio
import httpx2

from ask_fable.config import state_dir
from ask_fable.surface.ui.sessions import COOKIE
from tests.e2e.helpers import child_env
from tests.reliability.http_server import create_key, http_server

FORMS = 1000


def _rows() -> int:
    """Rows of the web view's session table in the server's SQLite store."""
    with sqlite3.connect(state_dir() / "ui_sessions.db") as db:
        return int(db.execute("SELECT COUNT(*) FROM ui_sessions").fetchone()[0])


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html
    return found.group(1)


def _log_in(url: str, key: str) -> str:
    """A fresh browser logging in with ``key`` through the form: the session id it was given."""
    with httpx2.Client(base_url=url, timeout=30) as browser:
        form = browser.get("/ui/login")
        done = browser.post("/ui/login", data={"key": key, "csrf": _csrf(form.text)})
        assert done.status_code == 303 and done.headers["location"] == "/ui/traces", done.text[:300]
        return str(browser.cookies[COOKIE])


def _traces(url: str, session_id: str) -> int:
    with httpx2.Client(base_url=url, cookies={COOKIE: session_id}, timeout=30) as browser:
        return browser.get("/ui/traces").status_code


async def test_a_thousand_login_forms_write_nothing(tmp_path: Path) -> None:
    """1,000 login forms fetched without a key leave no row; the form still logs a key in, and a form
    token that is forged, or not the one this browser was given, logs no one in."""
    env = child_env(ASK_FABLE_TOOLSETS="all")
    key = create_key(env, "viewer", "read", tenant="team")
    with http_server(env, tmp_path / "stderr.log") as server:
        statuses: list[int] = []
        async with httpx2.AsyncClient(base_url=server.url, timeout=30) as http:
            async def fetch(count: int) -> None:
                for _ in range(count):
                    statuses.append((await http.get("/ui/login")).status_code)

            with anyio.fail_after(120):
                async with anyio.create_task_group() as group:
                    for _ in range(10):
                        group.start_soon(fetch, FORMS // 10)
        rows_after_forms = _rows()
        with httpx2.Client(base_url=server.url, timeout=30) as mine, \
                httpx2.Client(base_url=server.url, timeout=30) as theirs:
            their_csrf = _csrf(theirs.get("/ui/login").text)
            _csrf(mine.get("/ui/login").text)
            forged = mine.post("/ui/login", data={"key": key, "csrf": "not-the-token"})
            borrowed = mine.post("/ui/login", data={"key": key, "csrf": their_csrf})
        session_id = _log_in(server.url, key)
        page = _traces(server.url, session_id)
    print(f"{FORMS} login forms: statuses {sorted(set(statuses))}, ui_sessions rows {rows_after_forms}")
    assert statuses == [200] * FORMS
    assert rows_after_forms == 0
    assert (forged.status_code, borrowed.status_code) == (400, 400)
    assert page == 200


async def test_one_key_logging_in_again_and_again_ends_only_its_own_oldest_logins(tmp_path: Path) -> None:
    """With room for 4 logins in all and 2 per key, Bob logs in once, then Mallory twelve times: Bob's
    login still opens the pages, Mallory holds her two newest logins and her older ones are ended."""
    env = child_env(ASK_FABLE_TOOLSETS="all", ASK_FABLE_UI_MAX_SESSIONS="4",
                    ASK_FABLE_UI_MAX_KEY_SESSIONS="2")
    bob = create_key(env, "bob", "read", tenant="bob")
    mallory = create_key(env, "mallory", "read", tenant="mallory")
    with http_server(env, tmp_path / "stderr.log") as server:
        bobs = _log_in(server.url, bob)
        mallorys = [_log_in(server.url, mallory) for _ in range(12)]
        pages = {"bob": _traces(server.url, bobs),
                 "mallory's newest": _traces(server.url, mallorys[-1]),
                 "mallory's second newest": _traces(server.url, mallorys[-2]),
                 "mallory's third newest": _traces(server.url, mallorys[-3]),
                 "mallory's first": _traces(server.url, mallorys[0])}
        rows = _rows()
    assert pages == {"bob": 200, "mallory's newest": 200, "mallory's second newest": 200,
                     "mallory's third newest": 303, "mallory's first": 303}
    assert rows == 3
