"""``ask-fable ui`` as a user runs it: a loopback address with a start-up token, GET-only pages with
strict headers, nothing in the state directory changed, a fresh install served, no browser needed."""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client

from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from ask_fable.surface.ui.app import CSP
from tests.e2e.helpers import structured, wired_app
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.postgres import PostgresServer
from tests.ui.recorded import Recorded
from tests.ui.server import ask_fable_ui, state_env

SQLITE_COMPANIONS = ("-wal", "-shm")


def origin(address: str) -> str:
    return address.split("/ui/", 1)[0]


@contextlib.contextmanager
def logged_in(address: str) -> Iterator[httpx2.Client]:
    """A client holding the session the printed address starts."""
    with httpx2.Client(timeout=20) as client:
        response = client.get(address)
        assert response.status_code == 303 and response.headers["location"] == "/ui/traces"
        yield client


def snapshot(state: Path) -> dict[str, tuple[str, int, int]]:
    """Every stored file's content hash, mode and modification time (SQLite's -wal / -shm left out:
    they are the database engine's shared memory, not stored content)."""
    return {
        str(path.relative_to(state)): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mode,
            path.stat().st_mtime_ns,
        )
        for path in sorted(state.rglob("*"))
        if path.is_file() and not path.name.endswith(SQLITE_COMPANIONS)
    }


def test_the_printed_address_is_loopback_and_its_token_is_the_only_way_in(recorded: Recorded) -> None:
    with ask_fable_ui(recorded.env) as (address, _):
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/ui/login\?token=[\w-]{20,}", address)
        base = origin(address)
        with httpx2.Client(timeout=20) as stranger:
            refused = stranger.get(f"{base}/ui/traces")
            assert refused.status_code == 401 and "ask-fable ui printed" in refused.text
            assert stranger.get(f"{base}/ui/login", params={"token": "guessed"}).status_code == 401
            assert stranger.get(f"{base}/ui/traces", headers={"host": "attacker.example"}).status_code == 421
        with logged_in(address) as client:
            cookie = client.cookies.jar
            [session] = list(cookie)
            assert session.path == "/ui" and session.has_nonstandard_attr("HttpOnly")
            assert session.get_nonstandard_attr("SameSite") == "strict"
            assert address.rsplit("=", 1)[1] not in session.value
            listing = client.get(f"{base}/ui/traces")
            assert listing.status_code == 200 and recorded.ids["council"] in listing.text


def test_pages_are_get_only_and_carry_a_strict_content_security_policy(recorded: Recorded) -> None:
    with ask_fable_ui(recorded.env) as (address, _), logged_in(address) as client:
        base = origin(address)
        pages = ["/ui/traces", f"/ui/traces/{recorded.ids['council']}", "/ui/stats?window=all", "/ui/nowhere"]
        for path in pages:
            response = client.get(base + path)
            assert response.status_code in (200, 404), path
            headers = response.headers
            assert headers["content-security-policy"] == CSP
            assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
            assert headers["referrer-policy"] == "same-origin" and headers["cache-control"] == "no-store"
            assert "<script" not in response.text.lower() and " style=" not in response.text
        for method, path in [
            ("POST", "/ui/traces"),
            ("PUT", "/ui/stats"),
            ("DELETE", "/ui/traces/x"),
            ("GET", "/ui/logout"),
            ("PATCH", "/ui/login"),
        ]:
            assert client.request(method, base + path).status_code == 405, (method, path)
        sheet = re.search(r'href="(/ui/static/ui-\w+\.css)"', client.get(f"{base}/ui/traces").text)
        assert sheet is not None
        css = client.get(base + sheet.group(1))
        assert css.headers["content-type"].startswith("text/css") and ".o-ok" in css.text


def test_the_web_view_changes_no_stored_file(recorded: Recorded) -> None:
    """Every page, filter and window loaded, the state directory holds the same files, byte for byte,
    with the same modes and times: the stores were only read."""
    before = snapshot(recorded.state_dir)
    assert any(name.endswith("traces.db") for name in before) and any("decisions" in n for n in before)
    with ask_fable_ui(recorded.env) as (address, _), logged_in(address) as client:
        base = origin(address)
        paths = [f"/ui/traces/{trace_id}" for trace_id in recorded.ids.values()]
        paths += [f"/ui/stats?window={w}" for w in ("1h", "24h", "7d", "all")]
        paths += ["/ui/traces", "/ui/traces?status=error&provider=glm", "/ui/traces?from=2000-01-01T00:00"]
        for path in paths:
            assert client.get(base + path).status_code == 200, path
    assert snapshot(recorded.state_dir) == before
    stored = {p.name for p in recorded.state_dir.rglob("*")}
    assert all(
        name.endswith(SQLITE_COMPANIONS)
        for name in stored - {Path(n).name for n in before}
        if not (recorded.state_dir / name).is_dir()
    )


def test_a_fresh_install_serves_empty_pages_and_creates_no_state(tmp_path: Path) -> None:
    env = state_env(tmp_path / "home")
    with ask_fable_ui(env) as (address, _), logged_in(address) as client:
        base = origin(address)
        listing = client.get(f"{base}/ui/traces")
        assert listing.status_code == 200 and "No calls recorded yet" in listing.text
        stats = client.get(f"{base}/ui/stats")
        assert stats.status_code == 200 and "0 calls" in stats.text
        missing = client.get(f"{base}/ui/traces/01a2381900000000deadbeef")
        assert missing.status_code == 404 and "No trace" in missing.text
    state = Path(env["XDG_STATE_HOME"])
    assert not state.exists() or not any(state.rglob("*"))


def test_with_a_browser_the_printed_address_is_opened_in_it(tmp_path: Path) -> None:
    """``$BROWSER`` names a browser: it is handed the printed address, which logs it in."""
    handed = tmp_path / "handed.txt"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {handed}\n')
    browser.chmod(0o755)
    env = state_env(tmp_path / "home")
    env["BROWSER"] = f"{browser} %s"
    with ask_fable_ui(env, browser=True) as (address, proc):
        with anyio.from_thread.start_blocking_portal() as portal:
            portal.call(_until_written, handed)
        assert handed.read_text() == address
        with logged_in(handed.read_text()) as client:
            assert client.get(f"{origin(address)}/ui/traces").status_code == 200
        proc.terminate()
        _, stderr = proc.communicate(timeout=15)
    assert "opened in your browser" in stderr


async def _until_written(path: Path) -> None:
    with anyio.fail_after(10):
        while not path.exists() or not path.read_text():
            await anyio.sleep(0.02)


@pytest.mark.parametrize("browser", ["false", None])
def test_without_a_browser_the_address_is_printed_and_served(tmp_path: Path, browser: str | None) -> None:
    """No display and no browser, or a browser command that fails: the command still serves."""
    env = state_env(tmp_path / "home")
    if browser is not None:
        env["BROWSER"] = browser
    with ask_fable_ui(env, browser=True) as (address, proc), logged_in(address) as client:
        assert client.get(f"{origin(address)}/ui/traces").status_code == 200
        assert proc.poll() is None


async def _help_calls(count: int) -> list[str]:
    """Make ``count`` help calls through an MCP client; their trace ids."""
    app = App(load_settings())
    ids: list[str] = []
    async with Client(build_server(app)) as client:
        for _ in range(count):
            result = await client.call_tool("ask_fable_help", {})
            assert result.structured_content is not None
            ids.append(result.structured_content["trace_id"])
    await app.aclose()
    return ids


async def _glm_calls(fp: FakeProvider, questions: list[str]) -> list[str]:
    """Ask GLM (on the fake provider) each question through an MCP client; the calls' trace ids."""
    app = wired_app(fp)
    async with Client(build_server(app, toolsets=["all"])) as client:
        ids = [(await structured(client, "ask_glm", {"question": q}))["trace_id"] for q in questions]
    await app.aclose()
    return ids


def _rows(url: str) -> dict[str, str]:
    """Every table of the database with all its rows, as text, to compare before and after."""
    import psycopg

    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
        return {
            f"{schema}.{name}": str(sorted(map(str, conn.execute(f'SELECT * FROM "{schema}"."{name}"'))))
            for schema, name in tables
        }


def test_with_postgresql_configured_it_shows_the_calls_stored_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_server: PostgresServer, fp: FakeProvider
) -> None:
    """ASK_FABLE_DATABASE_URL set: the calls the server stored in PostgreSQL are listed, drawn and
    counted; no row of the database changes and no SQLite store appears under the state directory."""
    env = state_env(tmp_path / "home")
    env["ASK_FABLE_DATABASE_URL"] = pg_server.fresh_database()
    for name in ("HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "ASK_FABLE_DATABASE_URL"):
        monkeypatch.setenv(name, env[name])
    fp.enqueue("anthropic", text="Keep the lock.", times=None)
    ids = anyio.run(_glm_calls, fp, ["Should the cache keep its lock?", "Is this retry loop bounded?"])
    before = _rows(env["ASK_FABLE_DATABASE_URL"])
    assert any(ids[0] in rows for rows in before.values())
    with ask_fable_ui(env) as (address, proc), logged_in(address) as client:
        base = origin(address)
        listing = client.get(f"{base}/ui/traces").text
        assert re.findall(r'data-trace="(\w+)"', listing) == ids[::-1]
        trace = client.get(f"{base}/ui/traces/{ids[0]}")
        assert trace.status_code == 200 and 'data-lane="call"' in trace.text and "glm" in trace.text
        stats = client.get(f"{base}/ui/stats", params={"window": "all"})
        assert stats.status_code == 200 and "2 calls" in stats.text
        proc.terminate()
        _, stderr = proc.communicate(timeout=15)
    assert "traces and stats of the PostgreSQL database" in stderr and "postgresql://" not in stderr
    assert _rows(env["ASK_FABLE_DATABASE_URL"]) == before
    assert not list(Path(env["XDG_STATE_HOME"]).rglob("*.db"))


def test_the_trace_list_pages_back_through_older_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = state_env(tmp_path / "home")
    for name in ("HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(name, env[name])
    anyio.run(_help_calls, 25)
    with ask_fable_ui(env) as (address, _), logged_in(address) as client:
        base = origin(address)
        first = client.get(f"{base}/ui/traces", params={"limit": "20"}).text
        newest = re.findall(r'data-trace="(\w+)"', first)
        older = re.search(r'href="([^"]+)" rel="next"', first)
        assert len(newest) == 20 and older is not None
        second = client.get(base + older.group(1).replace("&amp;", "&")).text
        rest = re.findall(r'data-trace="(\w+)"', second)
        assert len(rest) == 5 and not set(rest) & set(newest)
        assert max(rest) < min(newest)
        assert 'rel="next"' not in second and 'rel="first"' in second
