"""Per-key quotas on the team server: calls in flight, dollars per day and calls per minute.

A call over a key's limit is ``quota_exceeded`` with ``retry_after_s`` and reaches no provider; the
limits are set per key with ``ask-fable keys create/update`` and shown by ``ask-fable keys list``.
Every test runs on each store: SQLite files, and a PostgreSQL database the server and the
``ask-fable`` commands are pointed at with ``ASK_FABLE_DATABASE_URL``.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import httpx2
import pytest

from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.stores.keys import key_store_for
from ask_fable.stores.records import QuotaLimits
from ask_fable.surface.http_app import HttpOptions, build_http_app
from ask_fable.surface.http_runner import serve_in_thread
from ask_fable.surface.server import build_server
from tests.conftest import StoreBackend
from tests.e2e.helpers import in_one_utc_minute
from tests.e2e.team_server import HEADERS, TeamServer, create_key, list_keys, run_cli, team_server
from tests.e2e.test_caps import BACKEND_KEY, provider_env
from tests.fakes.clock import ManualClock
from tests.fakes.fake_provider import FakeProvider, Reply

#: An OpenRouter call estimated at exactly $0.01 at most (its 8,192 output tokens at $1.220703125 per
#: million, input free): what admission sets aside, and what the fake provider then reports it cost.
CENT_A_CALL = {"ASK_FABLE_PRICES": json.dumps({"openrouter": {"input_per_m": 0,
                                                               "output_per_m": 1.220703125}})}


@pytest.fixture
def store_env(store_backend: StoreBackend) -> dict[str, str]:
    """What points a spawned server or ``ask-fable`` command at the test's store (nothing for SQLite:
    the state directory is the test's own)."""
    return {} if store_backend.url is None else {"ASK_FABLE_DATABASE_URL": store_backend.url}


def _tool(tool: str, arguments: dict[str, Any], call_id: int = 1) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": params}


def _ask(tool: str, question: str, call_id: int = 1) -> dict[str, Any]:
    return _tool(tool, {"question": question}, call_id)


async def _structured(server: TeamServer, key: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await server.post(key, body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]["structuredContent"]
    return result


async def test_a_key_with_two_calls_in_flight_has_every_further_call_refused(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    """20 simultaneous calls on a ``--concurrent 2`` key: two reach the provider, exactly 18 are refused
    with retry_after_s while those two are still running."""
    gate = threading.Event()
    fp.default_reply["anthropic"] = Reply(hold=gate)
    key = create_key("Agent", "--tenant", "team", "--concurrent", "2", env=store_env)["key"]
    results: list[dict[str, Any]] = []
    refused_all = anyio.Event()

    async def one(server: TeamServer, number: int) -> None:
        body = _ask("ask_glm", f"Is lock ordering {number} safe here?", number)
        result = await _structured(server, key, body)
        results.append(result)
        if sum(r["status"] == "error" for r in results) == 18:
            refused_all.set()

    async with team_server({**provider_env(fp), **store_env}) as server:
        with anyio.fail_after(90):
            async with anyio.create_task_group() as group:
                for number in range(20):
                    group.start_soon(one, server, number)
                await refused_all.wait()
                held = len(fp.requests_for("anthropic"))
                gate.set()
    refusals = [r for r in results if r["status"] == "error"]
    assert held == 2
    assert len(refusals) == 18 and all(r["kind"] == "quota_exceeded" for r in refusals)
    assert all(r["retry_after_s"] > 0 for r in refusals)
    assert "calls in flight" in refusals[0]["detail"] and "--concurrent" in refusals[0]["hint"]
    assert [r["status"] for r in results].count("ok") == 2
    assert len(fp.requests_for("anthropic")) == 2


async def test_a_daily_budget_is_not_overshot_by_fifty_concurrent_calls(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    """Each call costs $0.01 and its estimate sets aside $0.01: a $0.10 budget answers exactly 10 of 50
    simultaneous calls, refuses the other 40 until the UTC day ends, and spends exactly the budget."""
    fp.default_reply["openai"] = Reply(usage={"cost": 0.01})
    created = create_key("Spender", "--tenant", "team", "--daily-usd", "0.10", "--concurrent", "0",
                         "--rpm", "0", env=store_env)
    env = provider_env(fp, **CENT_A_CALL, ASK_FABLE_HTTP_MAX_KEY_REQUESTS="64")
    async with team_server({**env, **store_env}) as server:
        with anyio.fail_after(120):
            results: list[dict[str, Any]] = []

            async def one(number: int) -> None:
                body = _ask("ask_openrouter", f"Does retry policy {number} duplicate writes?", number)
                results.append(await _structured(server, created["key"], body))

            async with anyio.create_task_group() as group:
                for number in range(50):
                    group.start_soon(one, number)
    answered = [r for r in results if r["status"] == "ok"]
    refused = [r for r in results if r["status"] == "error"]
    assert len(answered) == 10 and len(fp.requests_for("openai")) == 10
    assert len(refused) == 40 and {r["kind"] for r in refused} == {"quota_exceeded"}
    assert all(0 < r["retry_after_s"] <= 86400 for r in refused)
    assert "dollars of cost per UTC day" in refused[0]["detail"]
    usage = next(k for k in list_keys(store_env) if k["id"] == created["id"])["usage"]
    assert usage["spent_usd_today"] == 0.10 and usage["calls_today"] == 10 and usage["in_flight"] == 0


async def test_the_minute_window_frees_when_the_apps_clock_passes_it(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    """A key allowed 2 calls a minute: the third is refused with the seconds left in the minute, and
    admitted once the clock has moved past it."""
    clock = ManualClock(wall=1_800_000_000.0 + 15)  # 15 s into a minute
    settings = load_settings(glm_api_key=BACKEND_KEY, glm_base_url=f"{fp.base_url}/api/anthropic",
                             cache=False)
    app = App(settings, resources=Resources(clock=clock))
    keys = key_store_for(settings)
    _, key = keys.create("Agent", "ask", "team", QuotaLimits(rpm=2))
    http_app = build_http_app(build_server(app, toolsets=["all"]), keys, HttpOptions(port=0))
    with serve_in_thread(http_app) as url:
        async with httpx2.AsyncClient(base_url=url, timeout=60,
                                      headers={**HEADERS, "Authorization": f"Bearer {key}"}) as http:

            async def ask(number: int) -> dict[str, Any]:
                response = await http.post("/mcp", json=_ask("ask_glm", f"Is plan {number} safe?", number))
                result: dict[str, Any] = response.json()["result"]["structuredContent"]
                return result

            with anyio.fail_after(60):
                first, second, third = [await ask(n) for n in range(3)]
                clock.advance(third["retry_after_s"])
                fourth = await ask(4)
    assert [first["status"], second["status"], fourth["status"]] == ["ok", "ok", "ok"]
    assert (third["status"], third["kind"]) == ("error", "quota_exceeded")
    assert third["retry_after_s"] == 45.0
    assert "calls per minute" in third["detail"] and "no model was called" in third["detail"]
    assert len(fp.requests_for("anthropic")) == 3


async def test_keys_update_changes_a_limit_and_keys_list_shows_use_against_limits(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    fp.default_reply["openai"] = Reply(usage={"cost": 0.01})
    created = create_key("Agent", "--tenant", "team", "--daily-usd", "0.01", "--rpm", "30", env=store_env)
    key = created["key"]
    assert created["limits"]["daily_usd"] == 0.01 and created["limits_in_force"]["concurrent"] == 8
    env = provider_env(fp, **CENT_A_CALL)
    async with team_server({**env, **store_env}) as server:
        with anyio.fail_after(60):
            first = await _structured(server, key, _ask("ask_openrouter", "Is this migration reversible?"))
            second = await _structured(server, key, _ask("ask_openrouter", "Is this index needed?"))
            table = run_cli("keys", "list", env=store_env).stdout
            run_cli("keys", "update", str(created["id"]), "--rpm", "default", "--daily-usd", "5",
                    env=store_env)
            third = await _structured(server, key, _ask("ask_openrouter", "Is this index needed?"))
    assert (first["status"], second["kind"], third["status"]) == ("ok", "quota_exceeded", "ok"), first
    assert "TODAY USD" in table and "0.01/0.01" in table and "0/8" in table
    listed = next(k for k in list_keys(store_env) if k["id"] == created["id"])
    assert listed["limits"] == {"rpm": None, "concurrent": None, "daily_usd": 5.0}
    assert listed["limits_in_force"] == {"rpm": 60, "concurrent": 8, "daily_usd": 5.0}
    assert listed["usage"]["spent_usd_today"] == 0.02 and listed["usage"]["calls_today"] == 2


async def test_the_local_caller_is_unlimited_unless_local_quota_is_on(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    from mcp import Client

    base = {"glm_api_key": BACKEND_KEY, "glm_base_url": f"{fp.base_url}/api/anthropic", "cache": False,
            "key_rpm": 1}
    outcomes = {}
    for local_quota in (False, True):
        clock = ManualClock(wall=1_800_000_000.0)  # the start of a minute: both calls fall in it
        app = App(load_settings(**base, local_quota=local_quota), resources=Resources(clock=clock))
        server = build_server(app, toolsets=["all"])
        async with Client(server) as client:
            with anyio.fail_after(60):
                calls = [await client.call_tool("ask_glm", {"question": f"Is step {n} of this plan safe?"})
                         for n in range(2)]
        outcomes[local_quota] = [c.structured_content["status"] for c in calls if c.structured_content]
    assert outcomes == {False: ["ok", "ok"], True: ["ok", "error"]}


async def test_key_usage_shows_a_key_its_tenants_quotas_and_an_admin_every_keys(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    asker = create_key("Alice", "--tenant", "alice", "--rpm", "10", env=store_env)
    viewer = create_key("Alice viewer", "--tenant", "alice", "--scope", "read", env=store_env)
    create_key("Bob", "--tenant", "bob", env=store_env)
    admin = create_key("Ops", "--tenant", "ops", "--scope", "admin", env=store_env)
    async with team_server({**provider_env(fp), **store_env}) as server:
        with anyio.fail_after(60):
            asked = await _structured(server, asker["key"], _ask("ask_glm", "Is this queue bounded?"))
            mine = await _structured(server, viewer["key"], _tool("key_usage", {}))
            every = await _structured(server, admin["key"], _tool("key_usage", {"tenant": "*"}))
    assert asked["status"] == "ok" and mine["status"] == "ok"
    assert sorted(k["name"] for k in mine["keys"]) == ["Alice", "Alice viewer"]
    alice = next(k for k in mine["keys"] if k["name"] == "Alice")
    assert alice["limits_in_force"] == {"rpm": 10, "concurrent": 8, "daily_usd": 50.0}
    assert alice["usage"]["calls_today"] == 1 and alice["usage"]["in_flight"] == 0
    assert {k["tenant"] for k in every["keys"]} == {"alice", "bob", "ops"}


async def test_catalog_fetches_count_against_a_keys_calls_per_minute(
        fp: FakeProvider, store_env: dict[str, str]) -> None:
    """A provider's catalog is fetched for the key like a model call is asked: a key allowed 2 calls
    a minute gets two fresh listings, and the third is refused before any request reaches the provider."""
    fp.set_json("GET", "/api/v1/models", {"data": [{"id": "openai/gpt-5", "name": "GPT-5"}]})
    created = create_key("Lister", "--tenant", "team", "--rpm", "2", env=store_env)
    async with team_server({**provider_env(fp), **store_env}) as server:
        await in_one_utc_minute(burst_s=8)
        with anyio.fail_after(60):
            listings = [await _structured(server, created["key"],
                                          _tool("list_openrouter_models", {"refresh": True}, n))
                        for n in range(3)]
    assert [r["status"] for r in listings[:2]] == ["ok", "ok"]
    assert (listings[2]["status"], listings[2]["kind"]) == ("error", "quota_exceeded")
    assert 0 < listings[2]["retry_after_s"] <= 60
    assert len([r for r in fp.requests if r.path.endswith("/models")]) == 2
    usage = next(k for k in list_keys(store_env) if k["id"] == created["id"])["usage"]
    assert usage["spent_usd_today"] == 0 and usage["in_flight"] == 0
