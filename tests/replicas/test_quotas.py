"""A key's quotas hold across replicas: calls spread round-robin over three replicas count against
one budget, one limit of calls per minute and one of calls in flight, kept in the shared store, and a
burst at the edge of a limit overshoots none of them (the bound the quota store documents: exact).
Refused calls are ``quota_exceeded`` with ``retry_after_s`` and reach no provider."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from tests.e2e.helpers import in_one_utc_minute
from tests.fakes.fake_provider import FakeProvider, Reply
from tests.replicas.harness import CALL_COST_USD, Cluster, at_once

BURST = 200
#: Calls the budget of the test key pays for.
AFFORDABLE = 10


@contextmanager
def _openai_answers(provider: FakeProvider, reply: Reply) -> Iterator[None]:
    """The provider's OpenAI-shaped route (OpenRouter's; no other replica test uses it) answers with
    ``reply`` meanwhile."""
    before = provider.default_reply["openai"]
    provider.default_reply["openai"] = reply
    try:
        yield
    finally:
        provider.default_reply["openai"] = before


def _reached(provider: FakeProvider, tag: str) -> int:
    """How many upstream requests carried ``tag``."""
    return sum(tag in request.body.decode() for request in provider.requests_for("openai"))


async def test_a_daily_budget_admits_exactly_what_it_pays_for_of_200_calls_across_replicas(
    cluster: Cluster, provider: FakeProvider
) -> None:
    """200 calls at once, round-robin over 3 replicas, on a key whose daily budget pays for 10: exactly
    10 answer, 190 are refused until the UTC day ends without reaching the provider, and the spend
    recorded is the budget to the cent."""
    tag = uuid.uuid4().hex[:10]
    budget = round(AFFORDABLE * CALL_COST_USD, 2)
    key_id, key = cluster.create_key(f"budget {tag}", tenant=f"budget-{tag}",
                                     limits=("--daily-usd", str(budget), "--rpm", "0", "--concurrent", "0"))
    with _openai_answers(provider, Reply(usage={"cost": CALL_COST_USD})):
        async with cluster.clients(key) as robin:
            results = await at_once(BURST, lambda i: robin.call(
                "ask_openrouter", {"question": f"{tag}: does retry policy {i} duplicate writes?"}),
                timeout=120)
    answered = [r for r in results if r["status"] == "ok"]
    refused = [r for r in results if r["status"] == "error"]
    assert len(answered) == AFFORDABLE
    assert len(refused) == BURST - AFFORDABLE
    assert {r["kind"] for r in refused} == {"quota_exceeded"}
    assert all(0 < r["retry_after_s"] <= 86400 for r in refused)
    assert _reached(provider, tag) == AFFORDABLE
    usage = cluster.key_record(key_id)["usage"]
    assert usage["spent_usd_today"] == budget
    assert usage["calls_today"] == AFFORDABLE and usage["in_flight"] == 0


async def test_a_limit_of_calls_in_flight_holds_across_replicas(cluster: Cluster,
                                                                provider: FakeProvider) -> None:
    """A ``--concurrent 2`` key, 30 calls at once over 3 replicas while the provider holds its answers:
    two reach it, the other 28 are refused at once; the two answer when released."""
    tag = uuid.uuid4().hex[:10]
    key_id, key = cluster.create_key(f"in flight {tag}", tenant=f"flight-{tag}",
                                     limits=("--concurrent", "2", "--rpm", "0"))
    gate = threading.Event()
    results: list[dict[str, Any]] = []
    with _openai_answers(provider, Reply(hold=gate)):
        try:
            async with cluster.clients(key) as robin:

                async def one(i: int) -> None:
                    results.append(await robin.call("ask_openrouter",
                                                    {"question": f"{tag}: is lock order {i} safe?"}))

                with anyio.fail_after(90):
                    async with anyio.create_task_group() as group:
                        for i in range(30):
                            group.start_soon(one, i)
                        while len(results) < 28:
                            await anyio.sleep(0.02)
                        reached_while_held = _reached(provider, tag)
                        gate.set()
        finally:
            gate.set()
    refused = [r for r in results if r["status"] == "error"]
    assert reached_while_held == 2
    assert len(refused) == 28 and {r["kind"] for r in refused} == {"quota_exceeded"}
    assert all(r["retry_after_s"] > 0 for r in refused)
    assert [r["status"] for r in results].count("ok") == 2
    assert cluster.key_record(key_id)["usage"]["in_flight"] == 0


async def test_calls_per_minute_and_a_daily_budget_of_two_keys_hold_exactly_across_replicas(
    cluster: Cluster, provider: FakeProvider
) -> None:
    """Two keys racing at once, each call on the next replica: 40 calls of a ``--rpm 7`` key (whose
    budget pays for 50) and 40 of a ``--daily-usd`` key whose budget pays for 5 (``--rpm 100``).
    Exactly 7 and 5 answer; the rest are refused as ``quota_exceeded`` naming the limit each hit,
    and only the admitted calls reach the provider."""
    tag = uuid.uuid4().hex[:10]
    calls = 40
    paced_id, paced = cluster.create_key(
        f"paced {tag}", tenant=f"paced-{tag}",
        limits=("--rpm", "7", "--daily-usd", str(round(50 * CALL_COST_USD, 2)), "--concurrent", "0"))
    budget = round(5 * CALL_COST_USD, 2)
    thrifty_id, thrifty = cluster.create_key(
        f"thrifty {tag}", tenant=f"thrifty-{tag}",
        limits=("--rpm", "100", "--daily-usd", str(budget), "--concurrent", "0"))
    await in_one_utc_minute(burst_s=20)
    with _openai_answers(provider, Reply(usage={"cost": CALL_COST_USD})):
        async with cluster.clients(paced) as paced_robin, cluster.clients(thrifty) as thrifty_robin:
            results = await at_once(2 * calls, lambda i: (paced_robin, thrifty_robin)[i % 2].call(
                "ask_openrouter", {"question": f"{tag}-{'pt'[i % 2]}: is batch {i} idempotent?"}),
                timeout=90)
    for which, limit, admitted in ((0, "rpm", 7), (1, "daily_usd", 5)):
        own = results[which::2]
        refused = [r for r in own if r["status"] == "error"]
        assert [r["status"] for r in own].count("ok") == admitted, refused[:1]
        assert len(refused) == calls - admitted
        assert {r["kind"] for r in refused} == {"quota_exceeded"}
        assert all(f"{limit})" in r["detail"] for r in refused), refused[0]["detail"]
        assert _reached(provider, f"{tag}-{'pt'[which]}:") == admitted
    assert all(0 < r["retry_after_s"] <= 60 for r in results[0::2] if r["status"] == "error")
    paced_use = cluster.key_record(paced_id)["usage"]
    thrifty_use = cluster.key_record(thrifty_id)["usage"]
    assert (paced_use["calls_today"], paced_use["in_flight"]) == (7, 0)
    assert (thrifty_use["calls_today"], thrifty_use["spent_usd_today"]) == (5, budget)
    assert thrifty_use["in_flight"] == 0
