"""session_list, session_peek and session_stats through the MCP client, across two server Apps."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from mcp import Client

from ask_fable.core.app import derive_project_id
from ask_fable.surface.server import build_server
from tests.e2e.helpers import TEST_KEY, structured, wired_app
from tests.fakes.fake_provider import FakeProvider

KEY = TEST_KEY





async def test_turns_from_one_app_are_visible_from_another(fp: FakeProvider) -> None:
    """Two servers over one hub.db: project scoping, cross-project peek, agent filter, stats."""
    alpha = wired_app(fp, project_id="proj-alpha", agent_id="agent-a")
    beta = wired_app(fp, project_id="proj-beta", agent_id="agent-b")
    async with Client(build_server(alpha, toolsets=["all"])) as a, \
            Client(build_server(beta, toolsets=["all"])) as b:
        fp.enqueue("anthropic", text="Use a lease with fencing tokens.")
        await structured(a, "ask_glm", {"question": "How do we stop two workers double-charging?"})
        fp.enqueue("anthropic", text="Bound retries at five.")
        await structured(b, "ask_glm", {"question": "How many retries are safe?"})
        refused = await structured(a, "ask_glm", {"question": "hi"})
        assert refused["status"] == "refused"  # refusals are never mirrored

        mine = await structured(b, "session_list", {})
        assert mine["project"] == "proj-beta" and mine["all_projects"] is False
        assert [(s["session_key"], s["agent_id"]) for s in mine["sessions"]] == [("ask_glm", "agent-b")]
        row = mine["sessions"][0]
        assert row["turns"] == 1 and row["retained_turns"] == 1 and row["stale"] is False
        assert row["last_question"] == "How many retries are safe?" and row["last_oracle"] == "glm-5.2"

        every = await structured(b, "session_list", {"all_projects": True})
        assert [s["agent_id"] for s in every["sessions"]] == ["agent-b", "agent-a"]  # newest first
        assert {s["project"] for s in every["sessions"]} == {"proj-alpha", "proj-beta"}

        peek = await structured(b, "session_peek", {"session_key": "ask_glm"})
        assert [t["question"] for t in peek["turns"]] == [
            "How do we stop two workers double-charging?", "How many retries are safe?"]
        assert [t["answer"] for t in peek["turns"]] == ["Use a lease with fencing tokens.",
                                                        "Bound retries at five."]
        assert [t["project"] for t in peek["turns"]] == ["proj-alpha", "proj-beta"]
        narrowed = await structured(b, "session_peek", {"session_key": "ask_glm", "agent_id": "agent-a"})
        assert narrowed["count"] == 1 and narrowed["turns"][0]["agent_id"] == "agent-a"
        empty = await structured(b, "session_peek", {"session_key": "nobody"})
        assert empty["status"] == "ok" and empty["turns"] == [] and "no retained turns" in empty["note"]

        stats = await structured(a, "session_stats", {"window_s": 0})
        assert stats["project"] == "proj-alpha" and stats["turn_count"] == 1
        assert stats["by_agent"] == {"agent-a": 1} and stats["by_status"] == {"ok": 1}
        assert stats["by_oracle"] == {"glm-5.2": 1}
        assert stats["session_count"] == 1 and stats["active_sessions"] == 1
        everywhere = await structured(a, "session_stats", {"all_projects": True})
        assert everywhere["turn_count"] == 2 and everywhere["window_s"] == 86400
        assert everywhere["by_agent"] == {"agent-a": 1, "agent-b": 1}


async def test_the_hub_never_enters_a_model_prompt(fp: FakeProvider) -> None:
    """A turn another agent recorded under the same session label is not in the next prompt."""
    alpha = wired_app(fp, project_id="p", agent_id="agent-a")
    beta = wired_app(fp, project_id="p", agent_id="agent-b")
    async with Client(build_server(alpha, toolsets=["all"])) as a, \
            Client(build_server(beta, toolsets=["all"])) as b:
        fp.enqueue("anthropic", text="ALPHA-ANSWER-MARKER-7731", times=3)
        council = {"question": "ALPHA-QUESTION-MARKER-5517: which lock?", "models": ["glm", "deepseek"],
                   "synthesizer": "glm", "session": "shared-decision"}
        assert (await structured(a, "ask_council", council))["status"] == "ok"
        await structured(a, "ask_glm", {"question": "ALPHA-QUESTION-MARKER-5517 again?"})
        peek = await structured(b, "session_peek", {"session_key": "shared-decision"})
        assert peek["count"] == 1 and "ALPHA-ANSWER-MARKER-7731" in peek["turns"][0]["answer"]

        fp.clear()
        await structured(b, "ask_council", {**council, "question": "Which lock should beta use?"})
        await structured(b, "ask_glm", {"question": "Which lock should beta use alone?"})
        bodies = [r.body.decode() for r in fp.requests]
        assert len(bodies) == 4
        for body in bodies:
            assert "ALPHA-QUESTION-MARKER-5517" not in body and "ALPHA-ANSWER-MARKER-7731" not in body
        again = await structured(a, "session_peek", {"session_key": "shared-decision"})
        assert [t["agent_id"] for t in again["turns"]] == ["agent-a", "agent-b"]


async def test_active_only_hides_stale_sessions(fp: FakeProvider) -> None:
    app = wired_app(fp, project_id="p", agent_id="me", hub_stale_seconds=300)
    async with Client(build_server(app, toolsets=["all"])) as c:
        await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"})
        await structured(c, "ask_deepseek", {"question": "Is the index partial?"})
        with sqlite3.connect(app.settings.hub_db) as db:
            db.execute("UPDATE sessions SET last_seen = last_seen - 3600 WHERE session_key = 'ask_glm'")
        active = await structured(c, "session_list", {})
        assert [s["session_key"] for s in active["sessions"]] == ["ask_deepseek"]
        everything = await structured(c, "session_list", {"active_only": False})
        assert [s["session_key"] for s in everything["sessions"]] == ["ask_deepseek", "ask_glm"]
        assert everything["sessions"][1]["stale"] is True
        limited = await structured(c, "session_list", {"active_only": False, "limit": 1})
        assert limited["count"] == 1
        stats = await structured(c, "session_stats", {})
        assert stats["session_count"] == 2 and stats["active_sessions"] == 1


@pytest.mark.parametrize("arguments", [{"limit": 0}, {"limit": 201}, {"bogus": 1}])
async def test_session_list_limits_are_bad_args(fp: FakeProvider, arguments: dict[str, Any]) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["hub"])) as c:
        result = await structured(c, "session_list", arguments)
    assert result["kind"] == "bad_args"


async def test_project_defaults_to_the_working_directory(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp, agent_id="me"), toolsets=["all"])) as c:
        await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"})
        listing = await structured(c, "session_list", {})
    assert listing["project"] == derive_project_id()
    assert listing["sessions"][0]["project"] == derive_project_id()


async def test_disabled_hub_says_so_and_records_nothing(fp: FakeProvider) -> None:
    app = wired_app(fp, hub=False)
    async with Client(build_server(app, toolsets=["all"])) as c:
        answer = await structured(c, "ask_glm", {"question": "Is the retry loop bounded?"})
        assert answer["status"] == "ok"
        for tool, arguments in (("session_list", {}), ("session_peek", {"session_key": "ask_glm"}),
                                ("session_stats", {})):
            result = await structured(c, tool, arguments)
            assert result["status"] == "error" and result["kind"] == "not_configured"
            assert result["enabled"] is False and "ASK_FABLE_HUB=0" in result["detail"]
    assert not app.settings.hub_db.exists()


async def test_hub_annotations(fp: FakeProvider) -> None:
    async with Client(build_server(wired_app(fp), toolsets=["hub"])) as c:
        tools = {t.name: t.annotations for t in (await c.list_tools()).tools}
    assert set(tools) == {"session_list", "session_peek", "session_stats"}
    for ann in tools.values():
        assert ann.read_only_hint and ann.idempotent_hint and ann.open_world_hint is False
