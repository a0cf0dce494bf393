"""Several real ``ask-fable serve --http`` replicas on one shared store, as a team deploys them.

A :class:`Cluster` starts replicas as separate processes (the installed console script), each on
its own loopback port, all with the same settings and the same shared store; the HTTP backends
point at one loopback fake provider. Keys are made and revoked with the ``ask-fable keys``
command, as an operator does. :class:`RoundRobin` holds one real MCP Streamable HTTP client per
replica and hands each call to the next replica in turn.

Where the shared state lives is a :class:`SharedStore`: :class:`SqliteStore` (one state
directory shared by every replica, SQLite in WAL mode across processes) and, when the build has
PostgreSQL stores and ``pgserver`` is installed, :class:`PostgresStore` (one database; each
replica keeps a state directory and a config file of its own, as on separate hosts, so nothing can
pass between them but through the database). Each can be stopped and started under the replicas,
to see what they do while the database is gone.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, TypeVar

import anyio
import httpx2

from tests.e2e.helpers import ask_fable_command, command_output

BACKEND_KEY = "sk-replica-glm-0123456789abcdef"
#: Variables of the developer's shell that would change what a replica does.
FOREIGN_VARS = ("ATLASCLOUD_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
                "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME")
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
START_TIMEOUT_S = 60.0
T = TypeVar("T")
#: What one answer of the fake provider's OpenAI-shaped route costs in the quota tests (its reported
#: ``usage.cost``), and what every call sets aside from its key's budget while it runs.
CALL_COST_USD = 0.01
#: ``keys create`` options that switch off the per-key call limits.
UNLIMITED_CALLS = ("--rpm", "0", "--concurrent", "0")
#: The name clients reach the replicas by (deploy/nginx.conf's server_name), accepted by every replica.
PUBLIC_HOST = "ask-fable.example.com"


class SharedStore(Protocol):
    """Where every replica keeps its state, and a way to take it away and bring it back."""

    name: str
    #: Whether the replicas share one state directory (else each has its own).
    shares_state_dir: bool

    def env(self) -> dict[str, str]:
        """The settings that point a replica (or the ``ask-fable`` command) at this store."""
        ...

    def stop(self) -> None:
        """Make the database stop answering."""
        ...

    def start(self) -> None:
        """Make it answer again, with everything it held."""
        ...

    def close(self) -> None:
        """Release it for good."""
        ...


class SqliteStore:
    """One state directory shared by every replica (SQLite files in WAL mode).

    Stopping it puts a directory where each database file was (the files move aside untouched),
    so every new connection fails to open, the way a stopped database server refuses one. The file
    and the directory swap places in one step (``renameat2`` with ``RENAME_EXCHANGE``): were the
    path ever empty, a replica opening a connection then would make a new database there, and on
    closing it check the old database's write-ahead log (a file beside it, by name) into the new
    one, so that rows still only in the log would be gone when the old file came back.
    """

    name = "sqlite"
    shares_state_dir = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state"
        self._moved: list[tuple[Path, Path]] = []

    def env(self) -> dict[str, str]:
        """The shared state directory."""
        return {"XDG_STATE_HOME": str(self.state)}

    def stop(self) -> None:
        """Move each database aside and block its path."""
        for path in sorted((self.state / "ask_fable").glob("*.db")):
            aside = path.with_name(path.name + ".stopped")
            aside.mkdir()
            _exchange(path, aside)
            self._moved.append((path, aside))

    def start(self) -> None:
        """Put each database back where it was."""
        for path, aside in self._moved:
            _exchange(path, aside)
            aside.rmdir()
        self._moved.clear()

    def close(self) -> None:
        """Nothing runs: the files go with the test's directory."""
        if self._moved:
            self.start()


def _exchange(first: Path, second: Path) -> None:
    """Swap what two paths name in one step (Linux ``renameat2(RENAME_EXCHANGE)``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    at_cwd, rename_exchange = -100, 2
    if libc.renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), rename_exchange) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno), str(first), None, str(second))


def postgres_available() -> str | None:
    """Why PostgreSQL replicas cannot run here, or None when they can."""
    if importlib.util.find_spec("ask_fable.stores.schema") is None:
        return "this build has no PostgreSQL stores (ask_fable.stores.schema)"
    if importlib.util.find_spec("pgserver") is None or importlib.util.find_spec("psycopg") is None:
        return "pgserver and psycopg are not installed (pip install -e '.[dev]')"
    return None


class PostgresStore:
    """A database of its own on the test run's PostgreSQL server (``tests.fakes.postgres``), with the
    current schema, as ``ask-fable db upgrade`` leaves it before a release starts its replicas.

    ``stop``/``start`` take the whole server down (``pg_ctl stop -m fast``: open sessions are cut,
    new ones refused) and bring it back on the same socket with the same data.
    """

    name = "postgres"
    #: Each replica keeps its own state directory and config file: whatever it needs of another's
    #: must be in the database.
    shares_state_dir = False

    def __init__(self, server: Any, connect_timeout: float | None = None) -> None:
        self.server = server
        self.url: str = server.fresh_database()
        self.connect_timeout = connect_timeout
        self._stopped = False

    def env(self) -> dict[str, str]:
        """The database URL every replica shares, and how long a store call waits for a database that
        does not answer when it is not the setting's default (an operator's choice)."""
        env = {"ASK_FABLE_DATABASE_URL": self.url}
        if self.connect_timeout is not None:
            env["ASK_FABLE_DATABASE_CONNECT_TIMEOUT"] = str(self.connect_timeout)
        return env

    def stop(self) -> None:
        """Stop the PostgreSQL server."""
        self.server.stop()
        self._stopped = True

    def start(self) -> None:
        """Start it again on the same data directory and socket."""
        self.server.start()
        self._stopped = False

    def close(self) -> None:
        """Leave the server running (the test run owns it) and drop this database."""
        if self._stopped:
            self.start()
        self.server.drop(self.url)


def base_env(root: Path) -> dict[str, str]:
    """A replica's environment: the caller's minus every ask-fable setting and foreign key, a
    private HOME, and no output noise."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASK_FABLE_") and k not in FOREIGN_VARS}
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home), XDG_STATE_HOME=str(root / "state"), XDG_CONFIG_HOME=str(home / ".config"),
               ASK_FABLE_QUIET="1")
    return env


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Replica:
    """One ``ask-fable serve --http`` process."""

    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        """Its base URL."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """Its process id."""
        return self.process.pid

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup, as when a host dies."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


@dataclass
class Cluster:
    """Replicas sharing one store and one fake provider; see the module docstring."""

    root: Path
    store: SharedStore
    provider_url: str
    extra_env: dict[str, str] = field(default_factory=dict)
    replicas: list[Replica] = field(default_factory=list)
    _logs: list[IO[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """What every replica and every ``ask-fable`` command of the cluster runs with."""
        return {**base_env(self.root), **self.store.env(),
                "ASK_FABLE_GLM_API_KEY": BACKEND_KEY,
                "ASK_FABLE_GLM_BASE_URL": f"{self.provider_url}/api/anthropic",
                "ASK_FABLE_DEEPSEEK_API_KEY": BACKEND_KEY,
                "ASK_FABLE_DEEPSEEK_BASE_URL": f"{self.provider_url}/api/anthropic",
                "ASK_FABLE_OPENROUTER_API_KEY": BACKEND_KEY,
                "ASK_FABLE_OPENROUTER_BASE_URL": f"{self.provider_url}/api/v1",
                # An OpenRouter call's estimate (its 8,192 output tokens, input free) is what one fake
                # answer costs, so a budget admits a known number.
                "ASK_FABLE_PRICES": json.dumps({"openrouter": {
                    "input_per_m": 0, "output_per_m": CALL_COST_USD * 1_000_000 / 8192}}),
                "ASK_FABLE_HTTP_ALLOWED_HOSTS": PUBLIC_HOST,
                "ASK_FABLE_HTTP_ALLOWED_ORIGINS": f"https://{PUBLIC_HOST}",
                # Bursts of calls on one key: more than a key's default share of a replica's requests.
                "ASK_FABLE_HTTP_MAX_KEY_REQUESTS": "128",
                **self.extra_env}

    @property
    def live(self) -> list[Replica]:
        """The replicas still running (tests kill some)."""
        return [r for r in self.replicas if r.alive()]

    def start(self, count: int) -> list[Replica]:
        """Start ``count`` replicas at once and wait until each is ready."""
        started = [self.spawn() for _ in range(count)]
        for replica in started:
            self.wait_health(replica, 200)
        return started

    def spawn(self) -> Replica:
        """Start one replica (not waiting for it)."""
        port = free_port()
        while port in {replica.port for replica in self.replicas}:
            # The kernel may hand out a port again before the replica given it listens: replicas
            # started at once would then share a port (and a log file), and one could not bind.
            port = free_port()
        log_path = self.root / f"replica-{port}.log"
        log = log_path.open("wb")
        self._logs.append(log)
        env = self.env
        if not self.store.shares_state_dir:
            # A host of its own: its own state directory and its own config file.
            env["XDG_STATE_HOME"] = str(self.root / f"state-{port}")
            env["XDG_CONFIG_HOME"] = str(self.root / f"config-{port}")
        process = subprocess.Popen(
            [*ask_fable_command(), "serve", "--http", "--toolsets", "all", "--port", str(port)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
        )
        replica = Replica(port, process, log_path)
        self.replicas.append(replica)
        return replica

    def health(self, replica: Replica) -> httpx2.Response | None:
        """``GET /healthz`` on ``replica``, or None while nothing listens."""
        try:
            return httpx2.get(f"{replica.url}/healthz", timeout=5)
        except httpx2.TransportError:
            return None

    def wait_health(self, replica: Replica, status: int, timeout: float = START_TIMEOUT_S) -> httpx2.Response:
        """Poll ``/healthz`` until it answers ``status``; fail if the replica exits first."""
        deadline = time.monotonic() + timeout
        while True:
            if not replica.alive():
                raise AssertionError(f"replica on port {replica.port} exited:\n{replica.log.read_text()}")
            response = self.health(replica)
            if response is not None and response.status_code == status:
                return response
            if time.monotonic() > deadline:
                seen = None if response is None else response.status_code
                raise AssertionError(f"replica on port {replica.port} answered {seen}, not {status}")
            time.sleep(0.05)

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``ask-fable ARGS`` against the cluster's store."""
        return subprocess.run([*ask_fable_command(), *args], env=self.env, capture_output=True, text=True,
                              timeout=120, check=True)

    def create_key(self, name: str, scope: str = "ask", tenant: str = "team",
                   limits: tuple[str, ...] = UNLIMITED_CALLS) -> tuple[int, str]:
        """``ask-fable keys create``: the new key's id and its secret (by default its call quotas off:
        most tests load the replicas with bursts of calls on one key)."""
        record = json.loads(command_output(["keys", "create", "--name", name, "--scope", scope,
                                            "--tenant", tenant, *limits, "--json"], self.env))
        return int(record["id"]), str(record["key"])

    def key_record(self, key_id: int) -> dict[str, Any]:
        """The key as ``ask-fable keys list --json`` shows it (with its use today)."""
        listed: list[dict[str, Any]] = json.loads(command_output(["keys", "list", "--json"], self.env))
        return next(k for k in listed if k["id"] == key_id)

    def revoke_key(self, key_id: int) -> None:
        """``ask-fable keys revoke``."""
        self.command("keys", "revoke", str(key_id))

    def stop(self) -> None:
        """Stop every replica (SIGTERM, then SIGKILL for one that lingers)."""
        for replica in self.replicas:
            if replica.alive():
                replica.process.terminate()
        for replica in self.replicas:
            try:
                replica.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                replica.kill()
        for log in self._logs:
            log.close()

    @asynccontextmanager
    async def clients(self, key: str, replicas: list[Replica] | None = None) -> AsyncIterator[RoundRobin]:
        """One MCP Streamable HTTP client per replica (every live one unless named), as a round robin."""
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async with AsyncExitStack() as stack:
            connected = []
            for replica in replicas if replicas is not None else self.live:
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60))
                client = await stack.enter_async_context(
                    Client(streamable_http_client(f"{replica.url}/mcp", http_client=http), mode="legacy"))
                connected.append(client)
            yield RoundRobin(connected)


class RoundRobin:
    """Hands each call to the next replica's client in turn, as a load balancer does."""

    def __init__(self, clients: list[Any]) -> None:
        self.clients = clients
        self._next = 0

    def next_index(self) -> int:
        """The replica the next call goes to (and advance)."""
        index = self._next % len(self.clients)
        self._next += 1
        return index

    async def call(self, tool: str, arguments: dict[str, Any], on: int | None = None) -> dict[str, Any]:
        """Call ``tool`` on replica ``on`` (the next one when None); its structured result."""
        client = self.clients[self.next_index() if on is None else on]
        result = await client.call_tool(tool, arguments)
        payload: dict[str, Any] = result.structured_content
        assert payload is not None, result
        assert result.is_error is (payload["status"] == "error")
        return payload


async def at_once(count: int, call: Callable[[int], Awaitable[T]], timeout: float = 60) -> list[T]:
    """``call(0)`` … ``call(count - 1)`` all at once (bounded by ``timeout``); their results in order."""
    results: dict[int, T] = {}

    async def one(i: int) -> None:
        results[i] = await call(i)

    with anyio.fail_after(timeout):
        async with anyio.create_task_group() as group:
            for i in range(count):
                group.start_soon(one, i)
    return [results[i] for i in range(count)]


async def post_call(http: httpx2.AsyncClient, replica: Replica, tool: str,
                    arguments: dict[str, Any]) -> dict[str, Any]:
    """One ``tools/call`` as a bare JSON-RPC POST (``http`` carries the key); its structured result.

    For a replica about to die: a failed request is just an exception here, where an MCP client
    session would also fail its background tasks.
    """
    params = {"name": tool, "arguments": arguments}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = await http.post(f"{replica.url}/mcp", json=body, headers=MCP_HEADERS)
    response.raise_for_status()
    payload: dict[str, Any] = response.json()["result"]["structuredContent"]
    return payload


@contextmanager
def running_cluster(root: Path, store: SharedStore, provider_url: str, count: int,
                    **extra_env: str) -> Iterator[Cluster]:
    """A cluster of ``count`` ready replicas on ``store``; the replicas are stopped and the store
    closed afterwards."""
    cluster = Cluster(root, store, provider_url, dict(extra_env))
    try:
        cluster.start(count)
        yield cluster
    finally:
        cluster.stop()
        store.close()
        shutil.rmtree(root / "home", ignore_errors=True)
