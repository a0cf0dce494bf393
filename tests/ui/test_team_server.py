"""The web view on the team server (``ask-fable serve --http``) under ``/ui``: reached only through
the login form with a key of read scope or higher, which it exchanges for a server-side session in an
HttpOnly, SameSite=Strict cookie; logout needs the page's CSRF token; the MCP endpoint is unchanged."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.http_app import HttpOptions, build_http_app
from ask_fable.surface.http_runner import serve_in_thread
from ask_fable.surface.server import build_server
from ask_fable.surface.ui.sessions import COOKIE, FORM_COOKIE
from tests.fakes.clock import ManualClock
from tests.ui import browser

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


@dataclass
class Team:
    url: str
    app: App
    clock: ManualClock
    read_key: str
    write_key: str
    read_id: int


@pytest.fixture
def team() -> Iterator[Team]:
    """A team server on a loopback port with a read and an ask key of one tenant, and two calls
    in its traces."""
    clock = ManualClock()
    app = App(load_settings(cache=False, hub=False), resources=Resources(clock=clock))
    read, read_key = app.keys.create("alice", "read", "team")
    _, write_key = app.keys.create("bob", "ask", "team")
    served = build_http_app(build_server(app, toolsets=["all"]), app.keys, HttpOptions(port=0))
    with serve_in_thread(served) as url:
        with httpx2.Client(
            base_url=url, headers={**MCP_HEADERS, "Authorization": f"Bearer {write_key}"}
        ) as mcp:
            for topic in ("modes", "tools"):
                call = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "ask_fable_help", "arguments": {"topic": topic}},
                }
                assert mcp.post("/mcp", json=call).status_code == 200
        yield Team(url=url, app=app, clock=clock, read_key=read_key, write_key=write_key, read_id=read.id)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html
    return found.group(1)


def log_in(client: httpx2.Client, key: str) -> httpx2.Response:
    form = client.get("/ui/login")
    assert form.status_code == 200
    return client.post("/ui/login", data={"key": key, "csrf": csrf_of(form.text)})


def set_cookies(response: httpx2.Response) -> list[str]:
    return response.headers.get_list("set-cookie")


def test_pages_need_a_login_and_a_bearer_header_is_not_one(team: Team) -> None:
    with httpx2.Client(base_url=team.url) as client:
        for headers in ({}, {"Authorization": f"Bearer {team.read_key}"}):
            response = client.get("/ui/traces", headers=headers)
            assert response.status_code == 303 and response.headers["location"] == "/ui/login"


def test_a_read_key_is_exchanged_for_an_http_only_strict_session_cookie(team: Team) -> None:
    with httpx2.Client(base_url=team.url) as client:
        form = client.get("/ui/login")
        [before] = set_cookies(form)
        assert before.startswith(f"{FORM_COOKIE}=")  # the form's nonce: no session before a key
        done = client.post("/ui/login", data={"key": team.read_key, "csrf": csrf_of(form.text)})
        assert done.status_code == 303 and done.headers["location"] == "/ui/traces"
        [cookie] = [c for c in set_cookies(done) if c.startswith(f"{COOKIE}=")]
        [form_gone] = [c for c in set_cookies(done) if c.startswith(f"{FORM_COOKIE}=")]
        attributes = [part.strip().lower() for part in cookie.split(";")]
        assert "httponly" in attributes and "samesite=strict" in attributes and "path=/ui" in attributes
        assert f"max-age={int(team.app.settings.ui_session_ttl)}" in attributes
        assert team.read_key not in cookie and team.read_key[4:12] not in cookie
        assert "max-age=0" in form_gone.lower()
        listing = client.get("/ui/traces")
    assert listing.status_code == 200
    assert "alice · tenant team" in listing.text
    assert listing.text.count('data-trace="') == 2


def test_a_key_of_another_tenant_sees_none_of_its_traces_or_stats(team: Team) -> None:
    """The pages read the logged-in key's tenant only: another tenant's key lists no trace, cannot
    open one by its id, and counts no call in the stats."""
    _, outsider = team.app.keys.create("mallory", "read", "elsewhere")
    with httpx2.Client(base_url=team.url) as insider:
        log_in(insider, team.read_key)
        listed = insider.get("/ui/traces").text
    trace_id = re.findall(r'data-trace="([^"]+)"', listed)[0]
    with httpx2.Client(base_url=team.url) as client:
        assert log_in(client, outsider).status_code == 303
        listing = client.get("/ui/traces")
        assert "mallory · tenant elsewhere" in listing.text
        assert listing.text.count('data-trace="') == 0
        assert client.get(f"/ui/traces/{trace_id}").status_code == 404
        stats = client.get("/ui/stats", params={"window": "all"}).text
        assert "ask_fable_help" not in stats


@pytest.mark.parametrize("case", ["wrong key", "no token", "another form's token", "other origin"])
def test_logins_that_are_refused(team: Team, case: str) -> None:
    with httpx2.Client(base_url=team.url) as client, httpx2.Client(base_url=team.url) as other:
        token = csrf_of(client.get("/ui/login").text)
        data = {"key": team.read_key, "csrf": token}
        headers: dict[str, str] = {}
        if case == "wrong key":
            data["key"] = "afk_" + "x" * 40
        elif case == "no token":
            del data["csrf"]
        elif case == "another form's token":
            data["csrf"] = csrf_of(other.get("/ui/login").text)
        else:
            headers["origin"] = "https://attacker.example"
        response = client.post("/ui/login", data=data, headers=headers)
        assert response.status_code in {"wrong key": (401,), "other origin": (403,)}.get(case, (400,))
        assert client.get("/ui/traces").status_code == 303


def test_behind_a_proxy_the_pages_own_origin_may_post_without_being_listed(tmp_path: Path) -> None:
    """Reached by a name the operator allowed (--allowed-host), the login form posts with that origin."""
    app = App(load_settings(cache=False, hub=False))
    _, key = app.keys.create("carol", "read")
    options = HttpOptions(port=0, allowed_hosts=("ask-fable.internal.example",))
    served = build_http_app(build_server(app, toolsets=["all"]), app.keys, options)
    proxied = {"host": "ask-fable.internal.example"}
    with serve_in_thread(served) as url, httpx2.Client(base_url=url, headers=proxied) as client:
        token = csrf_of(client.get("/ui/login").text)
        own = {"origin": "https://ask-fable.internal.example"}
        foreign = {"origin": "https://attacker.example"}
        assert client.post("/ui/login", data={"key": key, "csrf": token}, headers=foreign).status_code == 403
        done = client.post("/ui/login", data={"key": key, "csrf": token}, headers=own)
        assert done.status_code == 303 and client.get("/ui/traces").status_code == 200


def test_a_revoked_key_and_an_old_session_end_the_login(team: Team) -> None:
    with httpx2.Client(base_url=team.url) as client:
        assert log_in(client, team.read_key).status_code == 303
        assert client.get("/ui/traces").status_code == 200
        team.app.keys.revoke(team.read_id)
        assert client.get("/ui/traces").status_code == 303
    with httpx2.Client(base_url=team.url) as client:
        assert log_in(client, team.write_key).status_code == 303
        team.clock.advance(team.app.settings.ui_session_ttl + 1)
        assert client.get("/ui/stats").status_code == 303


def test_logout_needs_the_page_token_and_ends_the_session(team: Team) -> None:
    with httpx2.Client(base_url=team.url) as client:
        log_in(client, team.read_key)
        page = client.get("/ui/traces").text
        session = client.cookies[COOKIE]
        forged = client.post("/ui/logout", data={"csrf": "not-the-token"})
        assert forged.status_code == 403 and client.get("/ui/traces").status_code == 200
        done = client.post("/ui/logout", data={"csrf": csrf_of(page)})
        assert done.status_code == 303 and done.headers["location"] == "/ui/login"
        assert any("max-age=0" in c.lower() or "expires=" in c.lower() for c in set_cookies(done))
    with httpx2.Client(base_url=team.url, cookies={COOKIE: session}) as replay:
        assert replay.get("/ui/traces").status_code == 303


def test_the_mcp_endpoint_and_health_check_are_unchanged(team: Team) -> None:
    with httpx2.Client(base_url=team.url) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.post("/mcp", json={}, headers=MCP_HEADERS).status_code == 401
        assert client.get("/ui/traces", headers={"host": "attacker.example"}).status_code == 421
        assert client.get("/uix").status_code == 401  # not the web view: the bearer check applies


def test_a_browser_logs_in_with_the_form_and_sees_the_traces(
    team: Team, tmp_path: Path, screenshots: Path
) -> None:
    browser.require()
    with browser.chromium(tmp_path / "profile") as driver:
        driver.get(f"{team.url}/ui/traces")
        assert driver.current_url.endswith("/ui/login")
        browser.screenshot(driver, screenshots / "team-login.png")
        driver.find_element("css selector", "input[name=key]").send_keys(team.read_key)
        driver.find_element("css selector", "form.login button").click()
        browser.wait_for_path(driver, "/ui/traces")
        rows = driver.find_elements("css selector", "table.traces tbody tr")
        assert len(rows) == 2 and driver.current_url.endswith("/ui/traces")
        cookies: list[dict[str, Any]] = driver.get_cookies()
        [cookie] = [c for c in cookies if c["name"] == COOKIE]
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
        assert browser.console_errors(driver) == []
        driver.find_element("css selector", "header form button").click()
        browser.wait_for_path(driver, "/ui/login")
        driver.get(f"{team.url}/ui/traces")
        assert driver.current_url.endswith("/ui/login")


def test_a_login_form_that_stops_arriving_is_answered_408_after_the_body_timeout() -> None:
    """Before: a form whose body never finished arriving held its connection for as long as the client
    liked. Now the web view gives a form the HTTP body timeout, as /mcp does, then answers 408."""
    app = App(load_settings(cache=False, hub=False, http_body_timeout=0.5))
    served = build_http_app(build_server(app, toolsets=["all"]), app.keys, HttpOptions(port=0))
    with serve_in_thread(served) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            sock.sendall(b"POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200\r\n"
                         b"Content-Type: application/x-www-form-urlencoded\r\n\r\nkey=")
            reply = b""
            while chunk := sock.recv(65536):  # the answer closes the connection; its body may come apart
                reply += chunk
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert b"did not arrive" in reply


def test_a_login_form_that_stalls_is_answered_408_after_the_stall_timeout() -> None:
    """A form whose bytes stop coming is dropped once it made no progress for the stall timeout, long
    before the whole body's timeout: a connection cannot be held for the latter by sending nothing."""
    app = App(load_settings(cache=False, hub=False, http_body_stall_timeout=0.5))
    served = build_http_app(build_server(app, toolsets=["all"]), app.keys, HttpOptions(port=0))
    with serve_in_thread(served) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"POST /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 200\r\n"
                         b"Content-Type: application/x-www-form-urlencoded\r\n\r\nkey=")
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert b"made no progress for 0.5s" in reply


def test_a_login_outlives_the_server_process_that_made_it() -> None:
    """Before, a login lived in the memory of the server that made it: a restart (or another server
    on the same stores) sent the browser back to the login form. Now it is kept with the stores, so
    another server on them honours it, and a logout there ends it everywhere."""
    first = App(load_settings(cache=False, hub=False))
    _, key = first.keys.create("dana", "read", "team")
    with serve_in_thread(build_http_app(build_server(first, toolsets=["all"]), first.keys,
                                        HttpOptions(port=0))) as url, httpx2.Client(base_url=url) as client:
        assert log_in(client, key).status_code == 303
        session = client.cookies[COOKIE]
    second = App(load_settings(cache=False, hub=False))
    with serve_in_thread(build_http_app(build_server(second, toolsets=["all"]), second.keys,
                                        HttpOptions(port=0))) as url, \
            httpx2.Client(base_url=url, cookies={COOKIE: session}) as client:
        page = client.get("/ui/traces")
        assert page.status_code == 200 and "dana · tenant team" in page.text
        assert client.post("/ui/logout", data={"csrf": csrf_of(page.text)}).status_code == 303
        assert client.get("/ui/traces").status_code == 303


def test_when_the_session_store_cannot_be_opened_the_pages_say_so_with_503() -> None:
    """A session store that cannot be used (its file cannot be opened; a database that is down)
    answers the login form and every page with a plain 503 page, never a stack trace."""
    app = App(load_settings(cache=False, hub=False))
    app.settings.ui_sessions_db.mkdir(parents=True)  # a directory where the file should be
    served = build_http_app(build_server(app, toolsets=["all"]), app.keys, HttpOptions(port=0))
    with serve_in_thread(served) as url, httpx2.Client(base_url=url, cookies={COOKIE: "x" * 43}) as client:
        answers = [client.get("/ui/login"), client.get("/ui/traces"), client.get("/ui/nowhere"),
                   client.post("/ui/login", data={"key": "afk_x", "csrf": "y"})]
    assert [a.status_code for a in answers] == [503] * 4
    for answer in answers:
        assert "The stores could not be read" in answer.text and "Traceback" not in answer.text
        assert answer.headers["content-type"].startswith("text/html")
