"""The web view's session cookie on the team server is ``Secure`` when the browser reached it over TLS:
a proxy the server trusts (``ASK_FABLE_HTTP_TRUSTED_PROXIES``, loopback by default) says so with
``X-Forwarded-Proto: https``; the same header from anyone else changes nothing. Pinned against the
real ``ask-fable serve --http``, and through the real nginx with the shipped config serving TLS."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest

from tests.e2e.helpers import child_env
from tests.reliability.http_server import HttpServer, create_key, http_server
from tests.replicas.test_nginx import running_nginx
from tests.ui.test_team_server import csrf_of

#: Another address of this machine's loopback interface: a peer the server does not trust by default,
#: standing in for a proxy on another host.
OTHER_PEER = "127.0.0.2"


def _login_cookie(port: int, source: str, forwarded_proto: str | None) -> str:
    """The ``Set-Cookie`` of ``GET /ui/login`` sent from ``source``, with the header when given."""
    extra = f"X-Forwarded-Proto: {forwarded_proto}\r\n" if forwarded_proto else ""
    with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0)) as sock:
        sock.sendall(f"GET /ui/login HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}Connection: close\r\n\r\n"
                     .encode())
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head = reply.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    assert head.startswith("HTTP/1.1 200"), head
    cookies: list[str] = re.findall(r"(?im)^set-cookie: (.*)$", head)
    assert len(cookies) == 1, head
    return cookies[0]


def _secure(cookie: str) -> bool:
    return "secure" in [part.strip().lower() for part in cookie.split(";")]


@pytest.mark.parametrize(
    ("trusted", "expected"),
    [
        # (the setting, {(peer, X-Forwarded-Proto): Secure?})
        (None, {("127.0.0.1", None): False, ("127.0.0.1", "https"): True, ("127.0.0.1", "http"): False,
                (OTHER_PEER, "https"): False}),
        (OTHER_PEER, {(OTHER_PEER, "https"): True, (OTHER_PEER, None): False, ("127.0.0.1", "https"): False}),
        ("", {("127.0.0.1", "https"): False}),
    ],
    ids=["default (loopback)", "a proxy on another address", "none"],
)
def test_the_cookie_is_secure_exactly_when_a_trusted_proxy_says_the_client_used_https(
    tmp_path: Path, trusted: str | None, expected: dict[tuple[str, str | None], bool]
) -> None:
    """Before: only a loopback peer was believed (uvicorn's own default, not a setting), so behind a
    proxy on another host the cookie was never Secure, and nothing could say otherwise."""
    env = child_env() if trusted is None else child_env(ASK_FABLE_HTTP_TRUSTED_PROXIES=trusted)
    create_key(env, "viewer", "read")
    with http_server(env, tmp_path / "stderr.log") as server:
        seen = {case: _secure(_login_cookie(server.port, *case)) for case in expected}
    assert seen == expected


@dataclass
class _Upstream:
    port: int


def _certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate and its key for 127.0.0.1."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def _with_tls(cert: Path, key: Path) -> Callable[[str], str]:
    """An edit of the rendered shipped config that turns on its commented TLS lines."""

    def edit(text: str) -> str:
        text, listens = re.subn(r"^(\s*listen 127\.0\.0\.1:\d+);", r"\1 ssl;", text, flags=re.M)
        assert listens == 1
        for line, path in (("# ssl_certificate     /etc/ssl/certs/ask-fable.pem;", cert),
                           ("# ssl_certificate_key /etc/ssl/private/ask-fable.key;", key)):
            assert line in text, "the shipped config no longer shows how to turn TLS on"
            text = text.replace(line, line[2:].split()[0] + f" {path};")
        return text

    return edit


@pytest.fixture
def team(tmp_path: Path) -> Iterator[tuple[HttpServer, str]]:
    """One ``ask-fable serve --http`` with a read key."""
    env = child_env()
    key = create_key(env, "viewer", "read")
    with http_server(env, tmp_path / "stderr.log") as server:
        yield server, key


def test_through_the_shipped_nginx_serving_tls_the_login_cookie_is_secure(
    team: tuple[HttpServer, str], tmp_path: Path
) -> None:
    """A browser's path: https to nginx (the shipped config with its TLS lines on), nginx to the server
    over loopback. Every cookie the login hands out is Secure, and the logged-in pages open."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate for nginx's TLS (apt-get install openssl)")
    server, key = team
    cert, tls_key = _certificate(tmp_path)
    root = tmp_path / "nginx"
    root.mkdir()
    with running_nginx([_Upstream(server.port)], root, edit=_with_tls(cert, tls_key)) as proxy:
        url = proxy.url.replace("http://", "https://")
        with httpx2.Client(base_url=url, verify=False, timeout=30) as browser:
            form = browser.get("/ui/login")
            done = browser.post("/ui/login", data={"key": key, "csrf": csrf_of(form.text)})
            listing = browser.get("/ui/traces")
    cookies = [*form.headers.get_list("set-cookie"), *done.headers.get_list("set-cookie")]
    assert form.status_code == 200 and done.status_code == 303, done.text
    # The form's nonce, the session, and the nonce's removal once logged in.
    assert len(cookies) == 3 and all(_secure(cookie) for cookie in cookies), cookies
    assert listing.status_code == 200 and "viewer" in listing.text
