"""Web view logins on a team of replicas: a login made on one replica is honoured by every other.

The browser holds only a random session id; the session itself is kept in the store the replicas
share (one SQLite state directory, or PostgreSQL), so a browser's requests may land on any replica:
a page loads wherever it lands, a logout on one replica ends the session on all, and a key revoked
anywhere ends its logins everywhere at once.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import pytest

from ask_fable.surface.ui.sessions import COOKIE, FORM_COOKIE
from tests.replicas.harness import Cluster, Replica


def csrf_of(html: str) -> str:
    """The CSRF token a web view page's form carries."""
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found is not None, html
    return found.group(1)


@contextmanager
def browser(replica: Replica, session_id: str | None = None) -> Iterator[httpx2.Client]:
    """A cookie-keeping client of one replica, holding ``session_id`` as its web view cookie when given."""
    cookies = {COOKIE: session_id} if session_id is not None else None
    with httpx2.Client(base_url=replica.url, cookies=cookies, timeout=30) as client:
        yield client


def log_in(replica: Replica, key: str) -> str:
    """Log in through ``replica``'s login form (with its CSRF token); the session id it set."""
    with browser(replica) as client:
        form = client.get("/ui/login")
        assert form.status_code == 200
        done = client.post("/ui/login", data={"key": key, "csrf": csrf_of(form.text)})
        assert done.status_code == 303 and done.headers["location"] == "/ui/traces", done.text
        return str(client.cookies[COOKIE])


def traces_page(replica: Replica, session_id: str) -> httpx2.Response:
    """``GET /ui/traces`` on ``replica`` with the session cookie."""
    with browser(replica, session_id) as client:
        return client.get("/ui/traces")


def read_key(cluster: Cluster) -> tuple[int, str]:
    """A fresh key of read scope in tenant ``team``."""
    return cluster.create_key(f"viewer {uuid.uuid4().hex[:6]}", scope="read")


def test_a_login_on_one_replica_shows_the_pages_on_every_other(cluster: Cluster) -> None:
    """Before, the session lived in the memory of the replica that made it: B and C sent the browser
    back to the login form. Now every replica reads it from the shared store."""
    a, b, c = cluster.live[:3]
    _, key = read_key(cluster)
    session_id = log_in(a, key)
    pages = [traces_page(replica, session_id) for replica in (b, c, a)]
    assert [page.status_code for page in pages] == [200, 200, 200], [p.headers.get("location") for p in pages]
    assert all("tenant team" in page.text for page in pages)
    with browser(c, session_id) as client:
        assert client.get("/ui/stats").status_code == 200


def test_a_logout_on_one_replica_ends_the_session_on_every_replica(cluster: Cluster) -> None:
    a, b, c = cluster.live[:3]
    _, key = read_key(cluster)
    session_id = log_in(a, key)
    with browser(b, session_id) as client:
        page = client.get("/ui/traces")
        assert page.status_code == 200
        done = client.post("/ui/logout", data={"csrf": csrf_of(page.text)})
        assert done.status_code == 303 and done.headers["location"] == "/ui/login"
    for replica in (a, b, c):
        refused = traces_page(replica, session_id)
        assert refused.status_code == 303 and refused.headers["location"] == "/ui/login"


def test_a_revoked_key_is_refused_at_once_on_every_replica(cluster: Cluster) -> None:
    a, b, c = cluster.live[:3]
    key_id, key = read_key(cluster)
    session_id = log_in(b, key)
    assert traces_page(c, session_id).status_code == 200
    cluster.revoke_key(key_id)
    for replica in (a, b, c):
        refused = traces_page(replica, session_id)
        assert refused.status_code == 303 and refused.headers["location"] == "/ui/login"


def test_the_login_forms_token_is_honoured_by_another_replica(cluster: Cluster) -> None:
    """A login form's token is signed with the secret every replica reads from the store: the form
    fetched from one replica may be posted to another (as a load balancer spreads a browser's
    requests), and fetching it stored no session."""
    a, b, _ = cluster.live[:3]
    _, key = read_key(cluster)
    with browser(a) as on_a:
        form = on_a.get("/ui/login")
        nonce = str(on_a.cookies[FORM_COOKIE])
        assert COOKIE not in on_a.cookies
    with httpx2.Client(base_url=b.url, cookies={FORM_COOKIE: nonce}, timeout=30) as on_b:
        forged = on_b.post("/ui/login", data={"key": key, "csrf": "not-the-token"})
        assert forged.status_code == 400
    with httpx2.Client(base_url=b.url, cookies={FORM_COOKIE: nonce}, timeout=30) as on_b:
        done = on_b.post("/ui/login", data={"key": key, "csrf": csrf_of(form.text)})
        assert done.status_code == 303 and done.headers["location"] == "/ui/traces"
        session_id = str(done.cookies[COOKIE])
    assert traces_page(b, session_id).status_code == 200


def test_an_expired_session_is_refused_by_every_replica(cluster: Cluster,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A session whose time is up (stored with its expiry passed, as every replica reads it) no longer
    opens a page anywhere, while one of the same key still within its time does."""
    from ask_fable.config import load_settings
    from ask_fable.stores.ui_sessions import ui_session_store_for
    from ask_fable.surface.ui.sessions import Sessions, Viewer

    key_id, _ = read_key(cluster)
    for name in ("ASK_FABLE_DATABASE_URL", "XDG_STATE_HOME", "XDG_CONFIG_HOME"):
        if name in cluster.env:
            monkeypatch.setenv(name, cluster.env[name])
    store = ui_session_store_for(load_settings())
    try:
        viewer = Viewer(name="viewer", tenant="team", key_id=key_id, sees_server_paths=False)
        live_id, _ = Sessions(store, ttl_s=3600).start(viewer)
        expired_id, _ = Sessions(store, ttl_s=-1).start(viewer)
    finally:
        store.close()
    for replica in cluster.live[:3]:
        assert traces_page(replica, live_id).status_code == 200
        refused = traces_page(replica, expired_id)
        assert refused.status_code == 303 and refused.headers["location"] == "/ui/login"
