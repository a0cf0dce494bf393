"""The shipped ``deploy/nginx.conf`` in front of the replicas, run by the real nginx.

Only what a test machine needs is changed in the config: the upstream's server lines (the
replicas' ports), the listen port and the log and temporary directories. Everything else is the
file as shipped, so a change to it that breaks MCP through nginx fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx2
import pytest

from tests.replicas.harness import MCP_HEADERS, PUBLIC_HOST, Cluster, RoundRobin, at_once, free_port

SHIPPED = Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf"
TEMP_DIRS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def nginx_binary() -> str | None:
    """nginx from PATH, else the distribution's /usr/sbin/nginx."""
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


class Upstream(Protocol):
    """What the config needs of a replica: the loopback port it serves on."""

    @property
    def port(self) -> int: ...


def render(shipped: str, replicas: Sequence[Upstream], port: int, root: Path) -> str:
    """The shipped config pointed at ``replicas``, listening on ``port``, writing under ``root``."""
    blocks = re.findall(r"(?:^ *server 127\.0\.0\.1:\d+ [^;]*;\n)+", shipped, flags=re.M)
    assert blocks, "the shipped config has no upstream server lines"
    text = shipped
    for block in blocks:
        options = re.match(r"^ *server 127\.0\.0\.1:\d+ ([^;]*);", block)
        assert options is not None
        text = text.replace(block, "".join(f"        server 127.0.0.1:{r.port} {options.group(1)};\n"
                                           for r in replicas), 1)
    text, listens = re.subn(r"^(\s*)listen \d+;", rf"\g<1>listen 127.0.0.1:{port};", text, flags=re.M)
    assert listens == 1
    text = text.replace("/var/log/nginx/", f"{root}/logs/")
    temp = "".join(f"    {name}_temp_path {root}/{name};\n" for name in TEMP_DIRS)
    return text.replace("http {\n", "http {\n" + temp, 1)


@dataclass
class Proxy:
    url: str
    access_log: Path
    error_log: Path


@contextmanager
def running_nginx(replicas: Sequence[Upstream], root: Path,
                  edit: Callable[[str], str] | None = None) -> Iterator[Proxy]:
    """The real nginx with the shipped config (changed by ``edit`` once rendered) in front of
    ``replicas`` (skips when absent)."""
    binary = nginx_binary()
    if binary is None:
        pytest.skip("nginx is not installed (apt-get install nginx)")
    (root / "logs").mkdir()
    port = free_port()
    conf = root / "nginx.conf"
    rendered = render(SHIPPED.read_text(), replicas, port, root)
    conf.write_text(edit(rendered) if edit is not None else rendered)
    main = f"daemon off; pid {root}/nginx.pid;" + (" user root;" if os.geteuid() == 0 else "")
    logs = root / "logs"
    proxy = Proxy(f"http://127.0.0.1:{port}", logs / "ask-fable.access.log", logs / "error.log")
    command = [binary, "-p", str(root), "-c", str(conf), "-e", str(proxy.error_log), "-g", main]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, f"nginx exited: {proxy.error_log.read_text()}"
            try:
                httpx2.get(f"{proxy.url}/healthz", timeout=2)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, f"nginx did not listen: {proxy.error_log.read_text()}"
                time.sleep(0.025)
        yield proxy
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture
def nginx(cluster: Cluster, tmp_path: Path) -> Iterator[Proxy]:
    """nginx in front of the cluster's live replicas."""
    with running_nginx(cluster.live, tmp_path) as proxy:
        yield proxy


def _upstreams(proxy: Proxy) -> set[str]:
    return set(re.findall(r"upstream=(127\.0\.0\.1:\d+)", proxy.access_log.read_text()))


async def test_mcp_calls_through_nginx_reach_every_replica(cluster: Cluster, team_key: str,
                                                           nginx: Proxy) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    tag = uuid.uuid4().hex[:8]
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {team_key}"}, timeout=60) as http, \
            Client(streamable_http_client(f"{nginx.url}/mcp", http_client=http), mode="legacy") as client:
        robin = RoundRobin([client])
        results = await at_once(24, lambda i: robin.call("ask_glm", {"question": f"{tag} via nginx {i}"}))
    assert [r["status"] for r in results] == ["ok"] * 24
    assert _upstreams(nginx) == {f"127.0.0.1:{r.port}" for r in cluster.live}
    assert team_key not in nginx.access_log.read_text()


async def test_through_nginx_the_replicas_check_the_clients_host_and_origin(team_key: str,
                                                                             nginx: Proxy) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {team_key}"}
    async with httpx2.AsyncClient(base_url=nginx.url, headers=auth, timeout=30) as http:
        public = await http.post("/mcp", json=body, headers={"Host": PUBLIC_HOST})
        hostile_host = await http.post("/mcp", json=body, headers={"Host": "attacker.example"})
        hostile_origin = await http.post("/mcp", json=body, headers={"Origin": "https://attacker.example"})
        same_origin = await http.post("/mcp", json=body, headers={"Host": PUBLIC_HOST,
                                                                  "Origin": f"https://{PUBLIC_HOST}"})
        keyless = await http.post("/mcp", json=body, headers={"Authorization": ""})
    assert public.status_code == 200 and "tools" in public.json()["result"]
    assert hostile_host.status_code == 421
    assert hostile_origin.status_code == 403
    assert same_origin.status_code == 200
    assert keyless.status_code == 401 and keyless.headers["www-authenticate"].startswith("Bearer")


async def test_nginx_skips_a_dead_replica_and_no_call_fails(cluster: Cluster, team_key: str,
                                                           tmp_path: Path) -> None:
    """A replica that is gone (killed, or between deploys) costs nginx a refused connect, not a call."""
    doomed = cluster.spawn()
    cluster.wait_health(doomed, 200)
    doomed.kill()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ask_fable_help", "arguments": {"topic": "modes"}}}
    with running_nginx([*cluster.live, doomed], tmp_path) as proxy:
        async with httpx2.AsyncClient(base_url=proxy.url, timeout=30,
                                      headers={**MCP_HEADERS, "Authorization": f"Bearer {team_key}"}) as http:
            statuses = [(await http.post("/mcp", json=body)).status_code for _ in range(12)]
        errors = proxy.error_log.read_text()
    assert statuses == [200] * 12
    assert f"127.0.0.1:{doomed.port}" in errors and "connect() failed" in errors


def test_a_web_view_login_through_nginx_holds_on_every_replica(cluster: Cluster, nginx: Proxy) -> None:
    """nginx spreads a browser's web view requests over every replica like any other request (before,
    a second upstream kept each browser on one replica, since a login lived there alone): the login
    made through one replica holds on the pages the others serve, and the logout ends it on all."""
    _, key = cluster.create_key(f"viewer {uuid.uuid4().hex[:6]}", scope="read")
    with httpx2.Client(base_url=nginx.url, timeout=30) as browser:
        form = browser.get("/ui/login")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert form.status_code == 200 and csrf is not None
        login = browser.post("/ui/login", data={"key": key, "csrf": csrf.group(1)})
        pages = [browser.get("/ui/traces") for _ in range(9)]
        page_csrf = re.search(r'name="csrf" value="([^"]+)"', pages[-1].text)
        assert page_csrf is not None
        logout = browser.post("/ui/logout", data={"csrf": page_csrf.group(1)})
        after = [browser.get("/ui/traces") for _ in range(3)]
    assert login.status_code == 303 and login.headers["location"] == "/ui/traces"
    assert [page.status_code for page in pages] == [200] * 9
    assert all("tenant team" in page.text for page in pages)
    assert logout.status_code == 303 and logout.headers["location"] == "/ui/login"
    assert [(page.status_code, page.headers.get("location")) for page in after] == [(303, "/ui/login")] * 3
    served = re.findall(r'"GET /ui/traces" 200 .* upstream=(127\.0\.0\.1:\d+)', nginx.access_log.read_text())
    assert len(served) == 9 and set(served) == {f"127.0.0.1:{r.port}" for r in cluster.live}
    assert key not in nginx.access_log.read_text()
