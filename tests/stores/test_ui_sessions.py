"""The web view's session store, on SQLite and on PostgreSQL (and the in-memory one of ``ask-fable
ui``): a session one server keeps another reads by its digest, with its tenant; expired sessions are
not read and are swept by the next start; the count is bounded, anonymous sessions going first, and
so is each key's, its own oldest going first; nothing but the digest of an id is stored; every server
reads the same login form secret."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from ask_fable.stores.interfaces import WebSessionStore
from ask_fable.stores.records import WebSession
from ask_fable.stores.tables import ui_sessions
from ask_fable.stores.ui_sessions import MemoryWebSessions, WebSessionTable
from ask_fable.surface.ui.sessions import Sessions, Viewer
from tests.conftest import StoreBackend, opened_store_backend
from tests.fakes.clock import ManualClock

NOW = 1_800_000_000.0


def session(digest: str, *, at: float = NOW, ttl: float = 3600, name: str | None = "alice",
            tenant: str | None = "team", key_id: int = 7) -> WebSession:
    return WebSession(digest=digest, tenant=tenant if name is not None else None, name=name,
                      key_id=key_id if name is not None else None, sees_server_paths=False,
                      csrf=f"csrf-{digest}", created_at=at, expires_at=at + ttl)


def _table(backend: StoreBackend, tmp_path: Path) -> WebSessionTable:
    return WebSessionTable(backend.open("ui_sessions", tmp_path / "ui_sessions.db"))


@pytest.fixture(params=["sqlite", "postgres", "memory"])
def stores(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
           tmp_path: Path) -> Iterator[Callable[[], WebSessionStore]]:
    """A way to open the store again as another server would: the table on each database, or the
    memory of one process (``ask-fable ui``'s)."""
    if request.param == "memory":
        memory = MemoryWebSessions()
        yield lambda: memory
        return
    with opened_store_backend(request.param, request, monkeypatch) as backend:
        yield lambda: _table(backend, tmp_path)


def test_a_session_kept_by_one_server_is_read_by_another_with_its_tenant(
    stores: Callable[[], WebSessionStore],
) -> None:
    one, other = stores(), stores()
    kept = session("d1")
    one.add(kept, max_sessions=10, max_per_key=1000)
    one.add(session("d2", name=None), max_sessions=10, max_per_key=1000)
    assert other.get("d1", NOW + 1) == kept
    anonymous = other.get("d2", NOW + 1)
    assert anonymous is not None and anonymous.name is None and anonymous.tenant is None
    assert other.get("unknown", NOW + 1) is None


def test_a_session_removed_through_one_server_is_gone_for_every_server(
    stores: Callable[[], WebSessionStore],
) -> None:
    one, other = stores(), stores()
    one.add(session("d1"), max_sessions=10, max_per_key=1000)
    other.remove("d1")
    other.remove("never-kept")
    assert one.get("d1", NOW) is None and one.count(NOW) == 0


def test_an_expired_session_is_not_read_and_the_next_start_sweeps_it(
    stores: Callable[[], WebSessionStore],
) -> None:
    store = stores()
    store.add(session("short", ttl=60), max_sessions=10, max_per_key=1000)
    store.add(session("long", ttl=3600), max_sessions=10, max_per_key=1000)
    assert store.get("short", NOW + 59) is not None
    assert store.get("short", NOW + 60) is None
    assert store.count(NOW + 60) == 1
    store.add(session("later", at=NOW + 61), max_sessions=2, max_per_key=1000)
    # Swept, not pushed out: the two live sessions both fit.
    assert [store.get(d, NOW + 62) is not None for d in ("short", "long", "later")] == [False, True, True]


def test_the_count_is_bounded_and_login_forms_go_before_logins(stores: Callable[[], WebSessionStore]) -> None:
    store = stores()
    store.add(session("login-1", at=NOW), max_sessions=3, max_per_key=1000)
    store.add(session("form-1", at=NOW + 1, name=None), max_sessions=3, max_per_key=1000)
    store.add(session("login-2", at=NOW + 2), max_sessions=3, max_per_key=1000)
    store.add(session("login-3", at=NOW + 3), max_sessions=3, max_per_key=1000)
    assert store.get("form-1", NOW + 4) is None
    assert store.count(NOW + 4) == 3
    store.add(session("login-4", at=NOW + 4), max_sessions=3, max_per_key=1000)
    kept = [d for d in ("login-1", "login-2", "login-3", "login-4") if store.get(d, NOW + 5) is not None]
    assert kept == ["login-2", "login-3", "login-4"]


def test_logins_started_at_once_through_two_servers_are_all_kept(store_backend: StoreBackend,
                                                                 tmp_path: Path) -> None:
    """Each start sweeps and bounds the table in the same transaction as its insert: starts racing on
    two servers neither fail nor lose one another."""
    servers = [_table(store_backend, tmp_path), _table(store_backend, tmp_path)]
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []

    def start(i: int) -> None:
        barrier.wait()
        try:
            for n in range(10):
                servers[i % 2].add(session(f"d{i}-{n}", at=NOW + n), max_sessions=1000, max_per_key=1000)
        except BaseException as exc:  # collected: the assertion below names it
            failures.append(exc)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    assert servers[0].count(NOW) == servers[1].count(NOW) == 80


def test_the_store_keeps_only_the_digest_of_an_id(store_backend: StoreBackend, tmp_path: Path) -> None:
    """The cookie's id is the browser's alone: what is stored cannot be replayed as a cookie."""
    table = _table(store_backend, tmp_path)
    sessions = Sessions(table, ttl_s=3600, clock=ManualClock(wall=NOW))
    session_id, started = sessions.start(Viewer(name="alice", tenant="team", key_id=7))
    with table.db.read() as conn:
        rows = [tuple(row) for row in conn.execute(select(ui_sessions)).all()]
    assert len(rows) == 1 and not any(session_id in str(value) for value in rows[0])
    assert sessions.get(session_id) == started and sessions.get(rows[0][0]) is None


def test_a_key_past_its_bound_ends_its_own_oldest_logins_never_another_keys(
    stores: Callable[[], WebSessionStore],
) -> None:
    store = stores()
    store.add(session("bob", at=NOW, key_id=2), max_sessions=5, max_per_key=2)
    for n in range(6):
        store.add(session(f"mallory-{n}", at=NOW + 1 + n, key_id=3), max_sessions=5, max_per_key=2)
    kept = [d for d in ["bob", *(f"mallory-{n}" for n in range(6))] if store.get(d, NOW + 10) is not None]
    assert kept == ["bob", "mallory-4", "mallory-5"]


def test_every_server_signs_login_forms_with_the_secret_the_first_one_kept(
    stores: Callable[[], WebSessionStore],
) -> None:
    one, other = stores(), stores()
    assert one.signing_secret("first") == "first"
    assert other.signing_secret("second") == "first"
    assert one.count(NOW) == 0
