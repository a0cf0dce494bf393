"""Tenants on a real ``ask-fable serve --http``: every store probed with keys of two tenants, a read
key and an admin key, all made with ``ask-fable keys create``.

Alice and Bob each hold an ask key in their own tenant; Alice's viewer holds a read key in hers;
ops holds an admin key. Bob cannot read, list, overwrite, delete, be offered or hit anything of
Alice's (context entries, cache, traces and bundles, hub turns, stats, saved answers, Claude
sessions); the viewer sees Alice's tenant only; ops sees both when it asks for every tenant.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.e2e.team_server import HEADERS, create_key, team_server
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli, claude_cli_env

KEY = "glm-test-key-0123456789"
ALICE_NOTES = "PRIMARY is db-7 behind pgbouncer; failover runbook lives in ops/alice-only.md"
BOB_NOTES = "bob's own notes about the staging database"
SHARED_QUESTION = "Should the retry budget be per request or per client?"


@dataclass
class Team:
    """The server's URL and one key per person."""

    url: str
    keys: dict[str, str]

    async def call(self, who: str, tool: str, **arguments: Any) -> dict[str, Any]:
        """``tool``'s structured result for ``who``'s key (the call must be allowed)."""
        response = await self._post(who, tool, arguments)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()["result"]["structuredContent"]
        return result

    async def refused(self, who: str, tool: str, **arguments: Any) -> dict[str, Any]:
        """The JSON-RPC error of a call ``who``'s key may not make (HTTP 403)."""
        response = await self._post(who, tool, arguments)
        assert response.status_code == 403, response.text
        error: dict[str, Any] = response.json()["error"]
        return error

    async def _post(self, who: str, tool: str, arguments: dict[str, Any]) -> httpx2.Response:
        params = {"name": tool, "arguments": arguments}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        async with httpx2.AsyncClient(base_url=self.url, timeout=120) as http:
            return await http.post("/mcp", json=body,
                                   headers={**HEADERS, "Authorization": f"Bearer {self.keys[who]}"})


def _key(name: str, scope: str, tenant: str, env: dict[str, str]) -> str:
    record = create_key(name, "--scope", scope, "--tenant", tenant, env=env)
    assert (record["scope"], record["tenant"]) == (scope, tenant)
    return str(record["key"])


@asynccontextmanager
async def serving(env: dict[str, str]) -> AsyncIterator[Team]:
    """``ask-fable serve --http`` with ``env``, and keys for Alice, Bob, Alice's viewer and ops."""
    keys = {
        "alice": _key("alice", "ask", "alice", env),
        "bob": _key("bob", "ask", "bob", env),
        "viewer": _key("alice's viewer", "read", "alice", env),
        "ops": _key("ops", "admin", "ops", env),
    }
    async with team_server(env) as server:
        yield Team(server.url, keys)


def _glm(fp: FakeProvider, **extra: str) -> dict[str, str]:
    """The server's environment: GLM on the fake provider, plus ``extra``."""
    return {"ASK_FABLE_GLM_API_KEY": KEY, "ASK_FABLE_GLM_BASE_URL": fp.base_url, "ASK_FABLE_TIMEOUT": "30",
            **extra}


@pytest.fixture
async def team(fp: FakeProvider) -> AsyncIterator[Team]:
    """A team server with GLM on the fake provider, the cache and hub on, full traces, answers saved."""
    env = _glm(fp, ASK_FABLE_CACHE="1", ASK_FABLE_HUB="1", ASK_FABLE_TRACE_MODE="full", ASK_FABLE_SAVE="1")
    async with serving(env) as team:
        yield team


def _provider_saw(fp: FakeProvider, text: str) -> bool:
    return any(text in request.body.decode() for request in fp.requests_for("anthropic"))


async def test_context_entries_are_private_to_their_tenant(team: Team, fp: FakeProvider) -> None:
    written = await team.call("alice", "context_write", key="prod-db-notes", value=ALICE_NOTES)
    assert (written["status"], written["tenant"]) == ("ok", "alice")

    missing = await team.call("bob", "context_read", key="prod-db-notes")
    assert (missing["kind"], missing["did_you_mean"]) == ("not_found", [])
    assert (await team.call("bob", "context_list"))["count"] == 0
    guessed = await team.call("bob", "ask_glm", question="What is the primary?", context_ref="prod")
    assert (guessed["status"], guessed["did_you_mean"]) == ("needs_context", [])
    named = await team.call("bob", "ask_glm", question="What is the primary?", context_ref="prod-db-notes")
    assert (named["status"], named["context_ref_missing"]) == ("needs_context", ["prod-db-notes"])
    assert fp.requests_for("anthropic") == []

    deleted = await team.call("bob", "context_delete", key="prod-db-notes")
    assert deleted["existed"] is False
    await team.call("bob", "context_write", key="prod-db-notes", value=BOB_NOTES)
    assert (await team.call("alice", "context_read", key="prod-db-notes"))["value"] == ALICE_NOTES
    answered = await team.call("alice", "ask_glm", question="What is the primary?",
                               context_ref="prod-db-notes")
    assert answered["status"] == "ok" and _provider_saw(fp, ALICE_NOTES) and not _provider_saw(fp, BOB_NOTES)

    viewer = await team.call("viewer", "context_list")
    assert [(e["tenant"], e["key"]) for e in viewer["entries"]] == [("alice", "prod-db-notes")]
    assert "needs admin scope" in (await team.refused("viewer", "context_list", tenant="*"))["message"]
    assert "needs ask scope" in (await team.refused("viewer", "context_write", key="k", value="v"))["message"]

    every = await team.call("ops", "context_list", tenant="*")
    assert sorted((e["tenant"], e["key"]) for e in every["entries"]) == [
        ("alice", "prod-db-notes"), ("bob", "prod-db-notes")]
    assert (await team.call("ops", "context_read", key="prod-db-notes", tenant="bob"))["value"] == BOB_NOTES
    assert (await team.call("ops", "context_delete", key="prod-db-notes", tenant="bob"))["existed"] is True
    assert (await team.call("ops", "context_read", key="prod-db-notes", tenant="*"))["kind"] == "bad_args"


async def test_cache_traces_hub_stats_and_saved_answers_are_private_to_their_tenant(
    team: Team, fp: FakeProvider
) -> None:
    alice_first = await team.call("alice", "ask_glm", question=SHARED_QUESTION)
    bob_first = await team.call("bob", "ask_glm", question=SHARED_QUESTION)
    alice_again = await team.call("alice", "ask_glm", question=SHARED_QUESTION)
    bob_unresolved = await team.call("bob", "ask_glm", question="Why is this lock taken twice?",
                                     context_ref="nope")
    assert [r["status"] for r in (alice_first, bob_first, alice_again)] == ["ok"] * 3
    assert bob_unresolved["status"] == "needs_context"
    assert "cached" not in bob_first and alice_again["cached"] is True
    # Bob's identical question went to the model: it was not served from Alice's cache entry.
    assert len(fp.requests_for("anthropic")) == 2

    alice_trace, bob_trace = alice_first["trace_id"], bob_first["trace_id"]
    for arguments in ({}, {"include_content": True}):
        hidden = await team.call("bob", "trace_get", trace_id=alice_trace, **arguments)
        assert hidden["kind"] == "not_found"
    bob_listing = await team.call("bob", "trace_list", limit=200)
    assert alice_trace not in {t["trace_id"] for t in bob_listing["traces"]}
    assert {t["tenant"] for t in bob_listing["traces"]} == {"bob"}
    assert (await team.call("bob", "trace_list", before=alice_trace))["kind"] == "not_found"
    content = await team.call("alice", "trace_get", trace_id=alice_trace, include_content=True)
    assert SHARED_QUESTION in content["content"]

    peeked = await team.call("bob", "session_peek", session_key="ask_glm")
    assert [(t["tenant"], t["question"]) for t in peeked["turns"]] == [("bob", SHARED_QUESTION)]
    sessions = await team.call("bob", "session_list", all_projects=True)
    assert {s["tenant"] for s in sessions["sessions"]} == {"bob"}
    assert (await team.call("bob", "session_stats", all_projects=True))["turn_count"] == 1

    bob_stats = await team.call("bob", "stats", window="all", by="tenant")
    assert (bob_stats["records"], [b["tenant"] for b in bob_stats["buckets"]]) == (2, ["bob"])
    assert bob_stats["totals"]["needs_context"] == 1
    alice_stats = await team.call("alice", "stats", window="all")
    totals = alice_stats["totals"]
    assert (alice_stats["records"], totals["ok"], totals["needs_context"]) == (2, 2, 0)

    # Keys without the admin scope see the server's paths relative to its state directory.
    answers = Path("answers") / "tenants"
    assert Path(alice_first["saved"]).parent == answers / "alice"
    assert Path(bob_first["saved"]).parent == answers / "bob"

    viewed = (await team.call("viewer", "trace_list", limit=200))["traces"]
    assert alice_trace in {t["trace_id"] for t in viewed} and {t["tenant"] for t in viewed} == {"alice"}
    assert (await team.call("viewer", "stats", window="all"))["records"] == 2
    assert (await team.call("viewer", "session_peek", session_key="ask_glm"))["count"] == 1
    assert "needs ask scope" in (await team.refused("viewer", "ask_glm", question=SHARED_QUESTION))["message"]
    foreign = await team.refused("viewer", "trace_get", trace_id=bob_trace, tenant="bob")
    assert "needs admin scope" in foreign["message"]

    everything = await team.call("ops", "trace_list", tenant="*", limit=200)
    assert {alice_trace, bob_trace} <= {t["trace_id"] for t in everything["traces"]}
    assert (await team.call("ops", "trace_get", trace_id=alice_trace, tenant="alice"))["status"] == "ok"
    by_tenant = await team.call("ops", "stats", window="all", by="tenant", tenant="*")
    assert {b["tenant"]: b["calls"] for b in by_tenant["buckets"]} == {"alice": 2, "bob": 2}
    both = await team.call("ops", "session_peek", session_key="ask_glm", tenant="*")
    assert sorted(t["tenant"] for t in both["turns"]) == ["alice", "bob"]
    own = (await team.call("ops", "trace_list", limit=200))["traces"]  # ops' own tenant: its look-ups only
    assert {t["tenant"] for t in own} == {"ops"} and "ask_glm" not in {t["tool"] for t in own}


async def test_sharing_the_context_bus_and_the_cache_is_an_explicit_setting(fp: FakeProvider) -> None:
    """With ASK_FABLE_SHARED_CONTEXT and ASK_FABLE_SHARED_CACHE on, every tenant uses one team-wide bus
    and one cache; other stores stay private."""
    env = _glm(fp, ASK_FABLE_CACHE="1", ASK_FABLE_SHARED_CONTEXT="1", ASK_FABLE_SHARED_CACHE="1")
    async with serving(env) as team:
        written = await team.call("alice", "context_write", key="runbook", value=ALICE_NOTES)
        assert written["tenant"] == "shared"
        assert (await team.call("bob", "context_read", key="runbook"))["value"] == ALICE_NOTES
        first = await team.call("alice", "ask_glm", question=SHARED_QUESTION, context_ref="runbook")
        second = await team.call("bob", "ask_glm", question=SHARED_QUESTION, context_ref="runbook")
        assert (first["status"], second["status"], second["cached"]) == ("ok", "ok", True)
        assert len(fp.requests_for("anthropic")) == 1
        assert (await team.call("bob", "trace_get", trace_id=first["trace_id"]))["kind"] == "not_found"


def _claude_on(fp: FakeProvider, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The server's environment with the bundled Claude Code CLI pointed at the fake provider (the
    server's own HOME is kept), plus ``extra``."""
    env = {name: value for name, value in claude_cli_env(fp.base_url, tmp_path / "claude-home").items()
           if name != "HOME"}
    return {**env, "ASK_FABLE_TIMEOUT": "60", **extra}


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")
async def test_two_tenants_using_one_session_label_never_share_a_conversation(
    fp: FakeProvider, tmp_path: Path
) -> None:
    async with serving(_claude_on(fp, tmp_path)) as team:
        first = await team.call("alice", "ask", question="Alice: how do I bound this queue?", session="s")
        assert (first["status"], first["turn"]) == ("ok", 1)
        bob = await team.call("bob", "ask", question="Bob: is this index used?", session="s")
        assert (bob["status"], bob["turn"]) == ("ok", 1)
        assert _user_turns(fp) == ["Bob: is this index used?"]
        second = await team.call("alice", "ask", question="Alice: and its size?", session="s")
        assert second["turn"] == 2
        assert _user_turns(fp) == ["Alice: how do I bound this queue?", "Alice: and its size?"]

        reset = await team.call("bob", "reset_session", session="s")
        assert (reset["cleared"], reset["turns"]) == (True, 1)
        assert Path(reset["saved"]).parent == Path("sessions") / "tenants" / "bob"
        third = await team.call("alice", "ask", question="Alice: one more?", session="s")
        assert third["turn"] == 3


@pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")
async def test_a_tenant_past_its_live_session_cap_closes_its_own_process_never_another_tenants(
    fp: FakeProvider, tmp_path: Path
) -> None:
    """One live Claude session per tenant: Alice's second session closes her first, Bob's stays open."""
    async with serving(_claude_on(fp, tmp_path, ASK_FABLE_MAX_LIVE_SESSIONS_PER_TENANT="1")) as team:
        alice_first = await team.call("alice", "ask", question="Alice: how do I bound this queue?",
                                      session="a1")
        bob_first = await team.call("bob", "ask", question="Bob: is this index used?", session="b1")
        alice_second = await team.call("alice", "ask", question="Alice: is this lock safe?", session="a2")
        bob_again = await team.call("bob", "ask", question="Bob: and its size?", session="b1")
        alice_back = await team.call("alice", "ask", question="Alice: and the queue's size?", session="a1")
    assert [r["status"] for r in (alice_first, bob_first, alice_second, bob_again, alice_back)] == ["ok"] * 5
    assert "note" not in bob_first and "note" not in bob_again
    assert "your least recently used other session" in alice_second["note"]
    assert alice_back["turn"] == 2 and "closed to make room" in alice_back["note"]
    carried = fp.requests_for("anthropic")[-1].body.decode()
    assert "Alice: how do I bound this queue?" in carried and "Alice: and the queue's size?" in carried
    assert "Bob" not in carried


def _user_turns(fp: FakeProvider) -> list[str]:
    """The questions the last model request carried, one per user turn."""
    body = json.loads(fp.requests_for("anthropic")[-1].body)
    turns = []
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
            turns.append(text.rsplit("## Question\n", 1)[-1].strip())
    return turns
