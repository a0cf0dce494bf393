"""Turns of one conversation run one at a time across replicas: a turn sent to one replica while
another replica is answering the same session waits for it (the session's lease in the shared
store), so it is the next turn and its model request carries the earlier turn's answer. A replica
killed mid-turn holds the session no longer than the lease lasts."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from tests.fakes.fake_provider import FakeProvider
from tests.replicas.conftest import _store
from tests.replicas.harness import Cluster, RoundRobin, post_call, running_cluster

#: The short session lease of the cluster whose replica is killed mid-turn.
LEASE_S = 4


async def _until(check: Any, timeout: float = 30) -> None:
    """Wait (bounded) until ``check()`` is true."""
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


def _sent(provider: FakeProvider, text: str) -> list[str]:
    """The bodies of the model requests that carried ``text``."""
    return [body for body in (r.body.decode() for r in provider.requests_for("anthropic")) if text in body]


#: How long turn 3 is given to reach the model while turn 2 is still being answered (it must not).
OVERLAP_WINDOW_S = 2.0


async def _waited_for_the_session(robin: RoundRobin, result: dict[str, Any]) -> bool:
    """Whether the call's trace shows it waited for the session's earlier turn."""
    trace = await robin.call("trace_get", {"trace_id": result["trace_id"]}, on=0)
    return any(event["name"] == "session.wait" for event in trace["trace"]["events"])


async def test_two_turns_of_one_session_sent_at_once_to_two_replicas_run_one_after_the_other(
    cluster: Cluster, team_key: str, provider: FakeProvider
) -> None:
    """Turn 2 is being answered on replica 1 when turn 3 arrives on replica 2: turn 3 waits, is
    numbered 3, and its model request carries turn 2's question and answer."""
    tag = uuid.uuid4().hex[:10]
    session = f"order-{tag}"
    questions = [f"{tag}: which lock first?", f"{tag}: and the second?", f"{tag}: and on retry?"]
    answers = ["The table lock.", "The row lock, by id.", "The same order again."]
    hold = threading.Event()
    provider.enqueue("anthropic", text=answers[0])
    results: dict[int, dict[str, Any]] = {}
    async with cluster.clients(team_key) as robin:

        async def turn(number: int, on: int) -> None:
            results[number] = await robin.call(
                "ask", {"question": questions[number - 1], "model": "deepseek", "session": session}, on=on)

        await turn(1, 0)
        assert (results[1]["status"], results[1]["turn"]) == ("ok", 1)
        provider.enqueue("anthropic", text=answers[1], hold=hold)
        provider.enqueue("anthropic", text=answers[2])
        try:
            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    group.start_soon(turn, 2, 1)
                    await _until(lambda: _sent(provider, questions[1]))
                    group.start_soon(turn, 3, 2)
                    with anyio.move_on_after(OVERLAP_WINDOW_S):
                        await _until(lambda: _sent(provider, questions[2]))
                    overlapped = bool(_sent(provider, questions[2]))
                    hold.set()
        finally:
            hold.set()
        waited = await _waited_for_the_session(robin, results[3])
    assert not overlapped, "turn 3 reached the model while turn 2 was still being answered"
    assert [(results[n]["status"], results[n]["answer"]) for n in (2, 3)] == [("ok", answers[1]),
                                                                               ("ok", answers[2])]
    assert (results[2]["turn"], results[3]["turn"]) == (2, 3)
    assert waited
    [later] = _sent(provider, questions[2])
    assert all(text in later for text in (questions[0], answers[0], questions[1], answers[1]))


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def short_lease_cluster(request: pytest.FixtureRequest, provider: FakeProvider,
                        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two replicas whose session leases last :data:`LEASE_S` seconds."""
    root = tmp_path_factory.mktemp(f"short-lease-{request.param}")
    store = _store(request.param, root, lambda: request.getfixturevalue("pg_server"))
    with running_cluster(root, store, provider.base_url, 2,
                         ASK_FABLE_SESSION_LEASE_SECONDS=str(LEASE_S)) as started:
        yield started


async def test_a_replica_killed_mid_turn_holds_the_session_only_until_its_lease_lapses(
    short_lease_cluster: Cluster, provider: FakeProvider
) -> None:
    """A replica is killed while answering a turn: the same session's next turn, on another replica,
    first waits for the dead replica's turn, then answers once the lease lapses, as the session's
    first turn (the killed turn was never stored)."""
    cluster = short_lease_cluster
    key = cluster.create_key("short lease", tenant=f"lease-{uuid.uuid4().hex[:8]}")[1]
    victim = cluster.spawn()
    cluster.wait_health(victim, 200)
    survivors = [r for r in cluster.live if r is not victim]
    tag = uuid.uuid4().hex[:10]
    session = f"killed-{tag}"
    provider.enqueue("anthropic", hang=True)
    provider.enqueue("anthropic", text="Answered after the lease lapsed.")
    lost: list[BaseException] = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as on_victim, \
            cluster.clients(key, survivors) as robin:

        async def doomed_turn() -> None:
            try:
                await post_call(on_victim, victim, "ask",
                                {"question": f"{tag}: a turn that never ends", "model": "deepseek",
                                 "session": session})
            except httpx2.TransportError as exc:
                lost.append(exc)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(doomed_turn)
                await _until(lambda: _sent(provider, f"{tag}: a turn that never ends"))
                victim.kill()
        with anyio.fail_after(LEASE_S + 20):
            after = await robin.call(
                "ask", {"question": f"{tag}: the next turn", "model": "deepseek", "session": session}, on=0)
        waited = await _waited_for_the_session(robin, after)
    assert len(lost) == 1
    assert waited, "the turn waited for the killed replica's hold on the session"
    assert (after["status"], after["answer"], after["turn"]) == ("ok", "Answered after the lease lapsed.", 1)
