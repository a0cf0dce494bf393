"""A call in flight holds its key's place only while its server is alive: the server renews the
call's lease, a server killed with SIGKILL stops renewing and its calls stop counting within the
lease (``ASK_FABLE_QUOTA_LEASE_SECONDS``), and ``ask-fable keys in-flight`` / ``keys release`` show
and free them at once. Real ``ask-fable serve --http`` processes on one store (SQLite files, and
PostgreSQL), MCP over Streamable HTTP, the fake provider holding answers; and the same over stdio,
where the local caller's calls are counted (``ASK_FABLE_LOCAL_QUOTA``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from ask_fable.core.quotas import LOCAL_KEY_ID
from ask_fable.stores.views import InFlight
from tests.conftest import StoreBackend
from tests.e2e.helpers import ask_fable_command, child_env, command_output, structured
from tests.e2e.team_server import TeamServer, create_key, team_server
from tests.e2e.test_caps import provider_env
from tests.fakes.fake_provider import FakeProvider, Reply

#: The lease of the killed server's call: long enough for `keys in-flight` to see it.
LEASE = "5"
#: The lease a live call outlasts.
SHORT_LEASE = "3"


@pytest.fixture
def store_env(store_backend: StoreBackend) -> dict[str, str]:
    """What points a spawned server or ``ask-fable`` command at the test's store."""
    return {} if store_backend.url is None else {"ASK_FABLE_DATABASE_URL": store_backend.url}


async def _provider_reached(fp: FakeProvider) -> None:
    """Wait (30 s at most) until the held call's request has reached the fake provider."""
    with anyio.fail_after(30):
        while not fp.requests_for("anthropic"):
            await anyio.sleep(0.05)


async def _ask(server: TeamServer, key: str, question: str) -> dict[str, Any]:
    async with server.client(key) as client:
        reply = await client.call_tool("ask_glm", {"question": question})
    result: dict[str, Any] = reply.structured_content or {}
    return result


async def _killed_mid_call(fp: FakeProvider, env: dict[str, str], key: str) -> int:
    """Start a server, have it ask the provider (which holds the answer), SIGKILL it; its pid."""
    async with team_server(env) as doomed:
        assert doomed.pid is not None

        async def stuck() -> None:
            try:
                await _ask(doomed, key, "Is this lock ordering safe?")
            except Exception:  # the server dies under it
                return

        async with anyio.create_task_group() as group:
            group.start_soon(stuck)
            await _provider_reached(fp)
            os.kill(doomed.pid, signal.SIGKILL)
        return doomed.pid


async def test_a_killed_servers_call_frees_its_keys_place_within_the_lease(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    gate = threading.Event()
    fp.default_reply["anthropic"] = Reply(hold=gate)
    created = create_key("Agent", "--tenant", "team", "--concurrent", "1", env=store_env)
    env = {**provider_env(fp, ASK_FABLE_QUOTA_LEASE_SECONDS=LEASE), **store_env}
    pid = await _killed_mid_call(fp, env, created["key"])
    killed_at = time.monotonic()
    shown = json.loads(command_output(["keys", "in-flight", str(created["id"]), "--json"],
                                      child_env(**store_env)))
    assert len(shown) == 1 and f":{pid}:" in shown[0]["holder"]
    assert 0 < shown[0]["lapses_in_s"] <= float(LEASE)
    gate.set()
    attempts = 0
    async with team_server(env) as survivor:
        with anyio.fail_after(60):
            while (result := await _ask(survivor, created["key"], "Is this index needed?"))["status"] != "ok":
                attempts += 1
                # Refused only while the dead server's lease runs, saying how long that is at most.
                assert result["kind"] == "quota_exceeded" and 0 < result["retry_after_s"] <= float(LEASE)
                await anyio.sleep(0.25)
    # Admitted at the first try once the survivor was up, or within the lease of the kill (plus the
    # time one call takes on this machine); within a minute in any case.
    admitted_after = time.monotonic() - killed_at
    assert attempts == 0 or admitted_after <= float(LEASE) + 5
    assert admitted_after < 60


async def test_keys_release_frees_a_dead_servers_place_at_once(fp: FakeProvider) -> None:
    gate = threading.Event()
    fp.default_reply["anthropic"] = Reply(hold=gate)
    created = create_key("Agent", "--tenant", "team", "--concurrent", "1")
    env = provider_env(fp)  # the default 30-second lease
    await _killed_mid_call(fp, env, created["key"])
    gate.set()
    released = json.loads(command_output(["keys", "release", str(created["id"]), "--json"], child_env()))
    assert released == {"id": created["id"], "released": 1}
    async with team_server(env) as survivor:
        assert (await _ask(survivor, created["key"], "Is this index needed?"))["status"] == "ok"


async def test_a_live_call_keeps_its_place_past_the_lease(fp: FakeProvider) -> None:
    """A call longer than the lease keeps its key's place: its server renews it."""
    gate = threading.Event()
    fp.default_reply["anthropic"] = Reply(hold=gate)
    created = create_key("Agent", "--tenant", "team", "--concurrent", "1")
    env = provider_env(fp, ASK_FABLE_QUOTA_LEASE_SECONDS=SHORT_LEASE)
    results: list[dict[str, Any]] = []
    async with team_server(env) as server:

        async def long_call() -> None:
            results.append(await _ask(server, created["key"], "Is this lock ordering safe?"))

        async with anyio.create_task_group() as group:
            group.start_soon(long_call)
            await _provider_reached(fp)
            await anyio.sleep(2 * float(SHORT_LEASE))
            second = await _ask(server, created["key"], "Is this index needed?")
            gate.set()
    assert second["kind"] == "quota_exceeded" and "calls in flight" in second["detail"]
    assert results[0]["status"] == "ok"



@asynccontextmanager
async def _stdio_server(env: dict[str, str]) -> AsyncIterator[Client]:
    """The installed ``ask-fable`` serving MCP over stdio on the test's state directory, the local
    caller's quotas on (one call in flight at a time), GLM on the fake provider."""
    command, *rest = ask_fable_command()
    params = StdioServerParameters(command=command, args=rest, env=child_env(
        ASK_FABLE_LOCAL_QUOTA="1", ASK_FABLE_KEY_CONCURRENT="1", ASK_FABLE_TOOLSETS="all", **env))
    async with Client(stdio_client(params), mode="legacy") as client:
        yield client


def _local_calls_in_flight() -> list[InFlight]:
    """The local caller's calls in flight, as the quota store holds them."""
    from ask_fable.config import load_settings
    from ask_fable.stores.quotas import quota_store_for

    store = quota_store_for(load_settings())
    try:
        return store.in_flight("local", LOCAL_KEY_ID, time.time())
    finally:
        store.db.close()


async def test_a_stdio_servers_live_call_keeps_its_place_past_the_lease(fp: FakeProvider) -> None:
    """Over stdio too, a call longer than the lease keeps the local caller's place: the server renews it
    while the call runs, so another ``ask-fable`` process on the same state directory is still refused."""
    gate = threading.Event()
    fp.default_reply["anthropic"] = Reply(hold=gate)
    env = provider_env(fp, ASK_FABLE_QUOTA_LEASE_SECONDS=SHORT_LEASE)
    results: list[dict[str, Any]] = []
    async with _stdio_server(env) as client:

        async def long_call() -> None:
            results.append(await structured(client, "ask_glm", {"question": "Is this lock ordering safe?"}))

        async with anyio.create_task_group() as group:
            group.start_soon(long_call)
            await _provider_reached(fp)
            await anyio.sleep(2 * float(SHORT_LEASE))
            async with _stdio_server(env) as other:
                second = await structured(other, "ask_glm", {"question": "Is this index needed?"})
            gate.set()
    assert second["kind"] == "quota_exceeded" and "calls in flight" in second["detail"], second
    assert results[0]["status"] == "ok"


async def test_a_killed_stdio_servers_call_frees_its_place_for_the_next_process(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    """``kill -9`` of a stdio server mid-call: another ``ask-fable`` process on the same store (state
    directory, or PostgreSQL database) is admitted within the lease, not refused for the dead call."""
    gate = threading.Event()
    fp.default_reply["anthropic"] = Reply(hold=gate)
    env = {**provider_env(fp, ASK_FABLE_QUOTA_LEASE_SECONDS=SHORT_LEASE), **store_env}
    async with _stdio_server(env) as doomed:

        async def stuck() -> None:
            with contextlib.suppress(Exception):  # the server dies under it
                await doomed.call_tool("ask_glm", {"question": "Is this lock ordering safe?"})

        async with anyio.create_task_group() as group:
            group.start_soon(stuck)
            with anyio.fail_after(30):
                while not (held := _local_calls_in_flight()) or not fp.requests_for("anthropic"):
                    await anyio.sleep(0.05)
            pid = int(held[0]["holder"].split(":")[1])
            os.kill(pid, signal.SIGKILL)
            killed_at = time.monotonic()
            group.cancel_scope.cancel()
    gate.set()
    fp.default_reply["anthropic"] = Reply()
    async with _stdio_server(env) as survivor:
        with anyio.fail_after(60):
            while (result := await structured(survivor, "ask_glm", {"question": "Is this index needed?"}))[
                    "status"] != "ok":
                # Refused only while the dead server's lease runs, saying how long that is at most.
                assert result["kind"] == "quota_exceeded"
                assert 0 < result["retry_after_s"] <= float(SHORT_LEASE)
                await anyio.sleep(0.25)
    # Within the lease of the kill, plus the time a server takes to start and answer on this machine.
    assert time.monotonic() - killed_at <= float(SHORT_LEASE) + 10
