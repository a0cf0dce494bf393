"""Three replicas on one store behave as one server: whatever one replica stores, every other one
sees at once (keys, context, cache, traces), wherever the load balancer sends the next call."""

from __future__ import annotations

import uuid

import httpx2
import pytest

from tests.fakes.fake_provider import FakeProvider
from tests.replicas.harness import MCP_HEADERS, Cluster, at_once


def _tag() -> str:
    return uuid.uuid4().hex[:10]


def _asked(provider: FakeProvider, text: str) -> int:
    """How many upstream model requests carried ``text``."""
    return sum(text in request.body.decode() for request in provider.requests_for("anthropic"))


async def test_calls_spread_round_robin_all_answer_and_every_trace_is_seen_from_one_replica(
    cluster: Cluster, provider: FakeProvider
) -> None:
    tenant = f"spread-{_tag()}"
    _, key = cluster.create_key("spread", tenant=tenant)
    async with cluster.clients(key) as robin:
        results = await at_once(30, lambda i: robin.call("ask_glm", {"question": f"{tenant} question {i}"}))
        listed = await robin.call("trace_list", {"tool": "ask_glm", "limit": 50}, on=0)
    assert [r["status"] for r in results] == ["ok"] * 30
    assert listed["count"] == 30
    assert _asked(provider, tenant) == 30


async def test_a_key_revoked_with_the_cli_is_refused_by_every_replica_at_once(cluster: Cluster) -> None:
    key_id, key = cluster.create_key(f"leaver {_tag()}")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        before = [(await http.post(f"{r.url}/mcp", json=body)).status_code for r in cluster.live]
        cluster.revoke_key(key_id)
        after = [(await http.post(f"{r.url}/mcp", json=body)).status_code for r in cluster.live]
    assert before == [200] * len(cluster.live)
    assert after == [401] * len(cluster.live)


async def test_a_context_entry_written_through_one_replica_is_read_and_deleted_through_others(
    cluster: Cluster, team_key: str
) -> None:
    key = f"design-{_tag()}"
    async with cluster.clients(team_key) as robin:
        entry = {"key": key, "value": "Locks are taken in id order."}
        written = await robin.call("context_write", entry, on=0)
        read = [await robin.call("context_read", {"key": key}, on=i) for i in (1, 2)]
        listed = await robin.call("context_list", {}, on=1)
        deleted = await robin.call("context_delete", {"key": key}, on=2)
        gone = await robin.call("context_read", {"key": key}, on=0)
    assert written["status"] == "ok"
    assert [r["value"] for r in read] == ["Locks are taken in id order."] * 2
    assert key in {entry["key"] for entry in listed["entries"]}
    assert deleted["status"] == "ok"
    assert gone["status"] == "error" and gone["kind"] == "not_found"


async def test_an_answer_cached_by_one_replica_is_served_by_another(
    cluster: Cluster, team_key: str, provider: FakeProvider
) -> None:
    question = f"Cache probe {_tag()}: should the retry budget be per host?"
    async with cluster.clients(team_key) as robin:
        first = await robin.call("ask_glm", {"question": question}, on=0)
        again = [await robin.call("ask_glm", {"question": question}, on=i) for i in (1, 2)]
    assert first["status"] == "ok" and not first.get("cached")
    assert [a.get("cached") for a in again] == [True, True]
    assert {a["answer"] for a in again} == {first["answer"]}
    assert _asked(provider, question) == 1


@pytest.mark.parametrize("tool", ["ask_glm", "context_write"])
async def test_another_tenants_key_sees_nothing_another_replica_stored(cluster: Cluster, tool: str) -> None:
    """Sharing a store across replicas shares nothing across tenants."""
    owner_key = cluster.create_key("owner", tenant=f"owner-{_tag()}")[1]
    other_key = cluster.create_key("other", tenant=f"other-{_tag()}")[1]
    secret = f"tenant-private {_tag()}"
    async with cluster.clients(owner_key) as owner, cluster.clients(other_key) as other:
        if tool == "context_write":
            await owner.call("context_write", {"key": "notes", "value": secret}, on=0)
            seen = await other.call("context_list", {}, on=1)
        else:
            await owner.call("ask_glm", {"question": secret}, on=0)
            seen = await other.call("trace_list", {}, on=1)
    assert seen["status"] == "ok"
    assert secret not in str(seen)
    assert seen["count"] == 0


async def test_a_conversation_continues_on_whichever_replica_gets_the_next_turn(
    cluster: Cluster, team_key: str, provider: FakeProvider
) -> None:
    """Each turn lands on another replica; each follow-up still carries every earlier turn."""
    tag = _tag()
    replies = ["Use a bounded queue.", "Twice the worker count.", "Drop the oldest."]
    for reply in replies:
        provider.enqueue("anthropic", text=reply)
    questions = [f"{tag}: how do I stop the producer running away?", "How big should the queue be?",
                 "And when it is full?"]
    async with cluster.clients(team_key) as robin:
        turns = [await robin.call("ask", {"question": q, "model": "deepseek", "session": f"s-{tag}"}, on=i)
                 for i, q in enumerate(questions)]
    assert [(t["status"], t["turn"]) for t in turns] == [("ok", 1), ("ok", 2), ("ok", 3)]
    assert [t["answer"] for t in turns] == replies
    sent = [r.body.decode() for r in provider.requests_for("anthropic") if tag in r.body.decode()]
    assert len(sent) == 3
    assert "Use a bounded queue." in sent[1] and questions[1] in sent[1]
    assert all(earlier in sent[2] for earlier in (questions[0], "Use a bounded queue.", questions[1],
                                                  "Twice the worker count."))


async def test_audit_stats_and_hub_turns_of_calls_spread_over_replicas_are_all_seen_from_any_one(
    cluster: Cluster, provider: FakeProvider
) -> None:
    """Each replica answers one turn of a session; a fourth call, on another replica, counts all three
    in ``stats`` and finds all three in the session hub."""
    tenant = f"hub-{_tag()}"
    _, key = cluster.create_key("hub", tenant=tenant)
    session = f"s-{tenant}"
    async with cluster.clients(key) as robin:
        answered = [await robin.call("ask", {"question": f"{tenant} turn {i}: is the lock fair?",
                                             "model": "deepseek", "session": session}, on=i)
                    for i in range(3)]
        peeked = await robin.call("session_peek", {"session_key": session}, on=1)
        counted = await robin.call("stats", {"window": "1h", "by": "tool"}, on=2)
    assert [a["status"] for a in answered] == ["ok"] * 3, answered[0]
    assert peeked["count"] == 3, peeked
    assert counted["totals"]["calls"] == 3, counted
