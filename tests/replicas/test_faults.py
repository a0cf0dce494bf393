"""Faults under replicas: a replica killed mid-call loses only that call; a database that goes away
makes every replica refuse calls at once with ``kind: "unavailable"`` and report 503 on
``/healthz``, and they all serve again when it returns, none restarted; a replica started while the
database is down comes up, not ready, and becomes ready when the database does."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import httpx2
from mcp.shared.exceptions import MCPError

from tests.fakes.fake_provider import FakeProvider
from tests.replicas.harness import MCP_HEADERS, Cluster, Replica, RoundRobin, at_once, post_call

UNAVAILABLE = {"status": "unavailable", "reason": "the database is not answering"}


def _tag() -> str:
    return uuid.uuid4().hex[:10]


async def _until(check: Any, timeout: float = 30) -> None:
    """Wait (bounded) until ``check()`` is true."""
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


async def _health(replica: Replica) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.get(f"{replica.url}/healthz")


async def _wait_health(replicas: list[Replica], status: int) -> list[httpx2.Response]:
    with anyio.fail_after(30):
        while True:
            answers = [await _health(r) for r in replicas]
            if all(a.status_code == status for a in answers):
                return answers
            await anyio.sleep(0.05)


async def _every_replica_serves(robin: RoundRobin, replicas: list[Replica], tag: str) -> list[dict[str, Any]]:
    """Once every replica says it is ready, a burst of calls at once on each: their results.

    Ready again means every call succeeds, on every replica, however many come at once.
    """
    await _wait_health(replicas, 200)
    return await at_once(len(replicas) * 12, lambda i: robin.call(
        "context_write", {"key": f"{tag}-back-{i}", "value": "back"}, on=i % len(replicas)))


def _unavailable(exc: BaseException) -> bool:
    """Whether a failed call was refused as ``unavailable`` (a 503 with the structured result)."""
    return isinstance(exc, MCPError) and isinstance(exc.data, dict) and exc.data.get("kind") == "unavailable"


async def test_a_replica_killed_mid_call_loses_only_that_call(cluster: Cluster, team_key: str,
                                                              provider: FakeProvider) -> None:
    victim = cluster.spawn()
    cluster.wait_health(victim, 200)
    survivors = [r for r in cluster.live if r is not victim]
    tag = _tag()
    acknowledged: list[str] = []
    survivor_results: list[dict[str, Any]] = []
    in_flight_failed: list[BaseException] = []
    answered: list[dict[str, Any]] = []
    provider.enqueue("anthropic", hang=True)  # the victim's ask waits for its answer until the victim dies
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {team_key}"}, timeout=60) as on_victim, \
            cluster.clients(team_key, survivors) as on_survivors:

        async def hanging_ask() -> None:
            try:
                answered.append(await post_call(on_victim, victim, "ask_glm",
                                                {"question": f"{tag}: a long design question"}))
            except httpx2.TransportError as exc:
                in_flight_failed.append(exc)

        async def writes_to_victim() -> None:
            for i in range(10_000):
                try:
                    written = await post_call(on_victim, victim, "context_write",
                                              {"key": f"{tag}-{i}", "value": f"fact {i}"})
                except httpx2.TransportError:
                    return
                assert written["status"] == "ok"
                acknowledged.append(f"{tag}-{i}")

        async def writes_to_survivors() -> None:
            for i in range(40):
                survivor_results.append(
                    await on_survivors.call("context_write", {"key": f"{tag}-other-{i}", "value": "kept"}))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(hanging_ask)
                group.start_soon(writes_to_victim)
                group.start_soon(writes_to_survivors)
                await _until(lambda: any(tag in r.body.decode() for r in provider.requests_for("anthropic"))
                             and len(acknowledged) >= 5)
                victim.kill()
        with anyio.fail_after(30):
            read_back = [await on_survivors.call("context_read", {"key": key}) for key in acknowledged]
    assert answered == [] and len(in_flight_failed) == 1
    assert len(acknowledged) >= 5
    assert [r["value"] for r in read_back] == [f"fact {key.rsplit('-', 1)[1]}" for key in acknowledged]
    assert [r["status"] for r in survivor_results] == ["ok"] * 40
    assert all(r.alive() for r in survivors)


async def test_the_database_going_away_under_load_is_unavailable_everywhere_and_nothing_restarts(
    outage_cluster: Cluster, outage_key: str
) -> None:
    replicas = outage_cluster.live
    pids = [r.pid for r in replicas]
    tag = _tag()
    outcomes: list[str] = []
    stop_load = anyio.Event()
    async with outage_cluster.clients(outage_key, replicas) as robin:

        async def load(worker: int) -> None:
            i = 0
            while not stop_load.is_set():
                i += 1
                try:
                    result = await robin.call("context_write", {"key": f"{tag}-{worker}-{i}", "value": "v"})
                    outcomes.append("ok" if result["status"] == "ok" else f"error:{result['kind']}")
                except Exception as exc:
                    outcomes.append("unavailable" if _unavailable(exc) else f"raised:{exc!r}")

        with anyio.fail_after(90):
            async with anyio.create_task_group() as group:
                for worker in range(6):
                    group.start_soon(load, worker)
                await _until(lambda: outcomes.count("ok") >= 20)
                outage_cluster.store.stop()
                try:
                    down = await _wait_health(replicas, 503)
                    refused: list[BaseException] = []
                    for i in range(len(replicas) * 2):
                        try:
                            await robin.call("ask_glm", {"question": f"{tag} during the outage {i}"})
                        except Exception as exc:
                            refused.append(exc)
                    during = len(outcomes)
                    await _until(lambda: len(outcomes) >= during + 20)
                finally:
                    outage_cluster.store.start()
                after = len(outcomes)
                burst = await _every_replica_serves(robin, replicas, tag)
                await _until(lambda: outcomes[after:].count("ok") >= 20)
                stop_load.set()
    assert [json.loads(a.text) for a in down] == [UNAVAILABLE] * len(replicas)
    assert all(a.headers["retry-after"] for a in down)
    assert len(refused) == len(replicas) * 2 and all(_unavailable(exc) for exc in refused)
    assert {o for o in outcomes[during:after] if o != "ok"} == {"unavailable"}
    assert [b["status"] for b in burst] == ["ok"] * len(burst)
    assert "raised" not in " ".join(outcomes)
    assert [r.pid for r in replicas] == pids and all(r.alive() for r in replicas)


async def test_a_replica_started_while_the_database_is_down_comes_up_and_becomes_ready(
    outage_cluster: Cluster, outage_key: str
) -> None:
    outage_cluster.store.stop()
    try:
        late = outage_cluster.spawn()
        not_ready = outage_cluster.wait_health(late, 503)
        async with httpx2.AsyncClient(timeout=10) as http:
            listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
            call = await http.post(f"{late.url}/mcp", json=listing,
                                   headers={**MCP_HEADERS, "Authorization": f"Bearer {outage_key}"})
    finally:
        outage_cluster.store.start()
    ready = outage_cluster.wait_health(late, 200)
    await _wait_health(outage_cluster.live, 200)  # the replicas that saw the outage too
    async with outage_cluster.clients(outage_key) as robin:
        burst = await _every_replica_serves(robin, outage_cluster.live, _tag())
    assert not_ready.json() == UNAVAILABLE
    assert call.status_code == 503
    assert call.json()["error"]["data"]["kind"] == "unavailable"
    assert ready.json() == {"status": "ok"}
    assert [b["status"] for b in burst] == ["ok"] * len(burst)
    assert late in outage_cluster.live
