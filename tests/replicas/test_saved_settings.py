"""What a ``configure_*`` tool saves through one replica is what every replica runs with from the next
call: a council configured through one replica calls the new members through the others, and full
tracing switched on through one captures content on another, read through a third. On PostgreSQL
each replica has a config file of its own, so the setting can only travel through the database."""

from __future__ import annotations

import uuid

from tests.fakes.fake_provider import FakeProvider
from tests.replicas.harness import Cluster


def _models_asked(provider: FakeProvider, text: str) -> set[str]:
    """The models of the OpenAI-shaped (OpenRouter) requests whose body carries ``text``."""
    return {str(r.model) for r in provider.requests_for("openai") if text in r.body.decode()}


async def test_a_council_configured_through_one_replica_calls_its_members_through_the_others(
    cluster: Cluster, provider: FakeProvider
) -> None:
    tag = uuid.uuid4().hex[:10]
    members = [f"lab-a/member-{tag}", f"lab-b/member-{tag}"]
    judge = f"openrouter:lab-c/judge-{tag}"
    admin = cluster.create_key(f"council admin {tag}", scope="admin", tenant=f"council-{tag}")[1]
    async with cluster.clients(admin) as robin:
        saved = await robin.call("configure_openrouter_council", {"models": members, "synthesizer": judge},
                                 on=0)
        councils = [await robin.call("ask_openrouter_council", {"question": f"{tag} on replica {i}: "
                                                                "is a retry queue per host worth it?"}, on=i)
                    for i in (1, 2)]
    assert saved["status"] == "ok"
    assert saved["openrouter_council"] == members
    if cluster.store.name == "postgres":
        assert saved["config_file"] == "database"
    assert [c["status"] for c in councils] == ["ok", "ok"]
    for i, council in zip((1, 2), councils, strict=True):
        assert _models_asked(provider, f"{tag} on replica {i}") == {*members, f"lab-c/judge-{tag}"}, council


async def test_full_tracing_switched_on_through_one_replica_captures_content_on_another(
    cluster: Cluster, provider: FakeProvider
) -> None:
    tag = uuid.uuid4().hex[:10]
    admin = cluster.create_key(f"tracing admin {tag}", scope="admin", tenant=f"tracing-{tag}")[1]
    question = f"{tag}: should the cache key include the tenant?"
    async with cluster.clients(admin) as robin:
        switched = await robin.call("configure_tracing", {"trace_mode": "full"}, on=0)
        try:
            answered = await robin.call("ask_glm", {"question": question}, on=1)
            trace = await robin.call("trace_get", {"trace_id": answered["trace_id"], "include_content": True},
                                     on=2)
        finally:
            restored = await robin.call("configure_tracing", {"trace_mode": "safe"}, on=0)
    assert switched["status"] == "ok" and switched["trace_mode"] == "full"
    assert answered["status"] == "ok"
    assert trace["status"] == "ok"
    assert question in (trace.get("content") or ""), trace
    assert restored["trace_mode"] == "safe"
