"""A Fable (or Opus 5) conversation moves between replicas: every turn is answered from the stored
transcript, whichever replica gets it. Each replica runs the real bundled Claude Code CLI against the
fake provider; a replica's warm CLI serves a follow-up only while it holds exactly what the store
holds, so a turn taken elsewhere, or a reset made elsewhere, is never answered from a stale process."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from ask_fable.backends.base import HISTORY_HEADING
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli, claude_cli_env
from tests.replicas.harness import Cluster, PostgresStore, RoundRobin, postgres_available, running_cluster

pytestmark = pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")

A, B = 0, 1


@pytest.fixture(scope="module")
def claude_provider() -> Iterator[FakeProvider]:
    """The fake provider these replicas' Claude Code CLIs talk to (theirs alone: its requests are
    this module's turns only)."""
    with FakeProvider() as fake:
        yield fake


@pytest.fixture(scope="module")
def fable_cluster(claude_provider: FakeProvider, pg_server: Any,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two replicas on one PostgreSQL database, each with its Claude Code CLI pointed at the fake."""
    if (reason := postgres_available()) is not None:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("fable-replicas")
    claude = {name: value for name, value in claude_cli_env(claude_provider.base_url, root / "claude").items()
              if name != "HOME"}
    with running_cluster(root, PostgresStore(pg_server), claude_provider.base_url, 2,
                         ASK_FABLE_TIMEOUT="60", **claude) as started:
        yield started


@pytest.fixture
async def team(fable_cluster: Cluster) -> Any:
    """A fresh tenant's clients, one per replica."""
    _, key = fable_cluster.create_key("fable", tenant=f"fable-{uuid.uuid4().hex[:8]}")
    async with fable_cluster.clients(key) as robin:
        yield robin


def messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of the user and assistant messages one model request carried."""
    out = []
    for message in body["messages"]:
        if message["role"] not in ("user", "assistant"):
            continue
        content = message["content"]
        text = content if isinstance(content, str) else "".join(
            block.get("text", "") for block in content if block.get("type") == "text")
        if text:
            out.append((message["role"], text))
    return out


class Turns:
    """One conversation's turns, each answered with a text of its own and its model request kept."""

    def __init__(self, provider: FakeProvider, robin: RoundRobin, model: str, session: str) -> None:
        self.provider, self.robin, self.model, self.session = provider, robin, model, session
        self.tag = uuid.uuid4().hex[:8]

    async def ask(self, on: int, number: int) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """Ask question ``number`` on replica ``on``: the result and the request the model got."""
        self.provider.enqueue("anthropic", text=self.answer(number))
        before = len(self.provider.requests_for("anthropic"))
        result = await self.robin.call(
            "ask", {"question": self.question(number), "session": self.session, "model": self.model}, on=on)
        assert result["status"] == "ok", result
        assert result["answer"] == self.answer(number)
        [request] = self.provider.requests_for("anthropic")[before:]
        return result, messages(json.loads(request.body))

    def question(self, number: int) -> str:
        """The text of question ``number``."""
        return f"Question {number} of {self.tag}: is this lock order safe?"

    def answer(self, number: int) -> str:
        """The text the model answers question ``number`` with."""
        return f"Answer {number} of {self.tag}: take the locks by id."


def carries(request: list[tuple[str, str]], *texts: str) -> bool:
    """Whether the request's messages, together, contain every one of ``texts``."""
    whole = "\n".join(text for _, text in request)
    return all(text in whole for text in texts)


def seeded(request: list[tuple[str, str]]) -> bool:
    """Whether the request is a new CLI's first: one user message with the earlier turns folded in."""
    return len(request) == 1 and request[0][0] == "user" and request[0][1].startswith(HISTORY_HEADING)


@pytest.mark.parametrize("model", ["fable", "opus5"])
async def test_a_conversation_continues_on_whichever_replica_gets_the_next_turn(
    team: RoundRobin, claude_provider: FakeProvider, model: str
) -> None:
    """Turn 2 on B seeds a new CLI from the store; turn 3 back on A, whose warm CLI saw turn 1 only,
    is sent turn 2 as well; turn 4 on A is a follow-up on A's brought-up-to-date CLI."""
    turns = Turns(claude_provider, team, model, "s")
    first, request = await turns.ask(A, 1)
    assert request == [("user", f"## Question\n{turns.question(1)}")]

    second, request = await turns.ask(B, 2)
    assert seeded(request) and carries(request, turns.question(1), turns.answer(1), turns.question(2))

    third, request = await turns.ask(A, 3)
    assert carries(request, turns.question(1), turns.answer(1), turns.question(2), turns.answer(2),
                   turns.question(3))

    fourth, request = await turns.ask(A, 4)
    assert not seeded(request), "A's CLI, now holding the stored conversation, serves the follow-up"
    assert request[-2:] == [("assistant", turns.answer(3)), ("user", f"## Question\n{turns.question(4)}")]
    assert carries(request, turns.answer(2))
    assert [t["turn"] for t in (first, second, third, fourth)] == [1, 2, 3, 4]


async def test_a_reset_on_one_replica_ends_the_conversation_on_every_replica(
    team: RoundRobin, claude_provider: FakeProvider
) -> None:
    """After reset_session on B, A's warm CLI (which held the old turn) is not reused: A's next turn
    carries the new conversation's turn, and nothing of the old one."""
    turns = Turns(claude_provider, team, "fable", "r")
    await turns.ask(A, 1)
    reset = await team.call("reset_session", {"session": "r", "save": False}, on=B)
    assert (reset["cleared"], reset["turns"]) == (True, 1)

    restarted, request = await turns.ask(B, 2)
    assert restarted["turn"] == 1
    assert not carries(request, turns.question(1))

    followed, request = await turns.ask(A, 3)
    assert followed["turn"] == 2
    assert carries(request, turns.question(2), turns.answer(2), turns.question(3))
    assert not carries(request, turns.question(1)) and not carries(request, turns.answer(1))


async def test_ask_with_reset_on_one_replica_is_not_undone_by_a_warm_cli_on_another(
    team: RoundRobin, claude_provider: FakeProvider
) -> None:
    """``ask(reset=true)`` on B starts over for every replica: A's next turn is the second of the new
    conversation, never a follow-up on A's warm CLI holding the old first turn."""
    turns = Turns(claude_provider, team, "fable", "t")
    await turns.ask(A, 1)
    claude_provider.enqueue("anthropic", text=turns.answer(2))
    restarted = await team.call("ask", {"question": turns.question(2), "session": "t", "reset": True}, on=B)
    assert (restarted["status"], restarted["turn"]) == ("ok", 1)

    followed, request = await turns.ask(A, 3)
    assert followed["turn"] == 2
    assert carries(request, turns.question(2), turns.answer(2), turns.question(3))
    assert not carries(request, turns.question(1))


def _models_since(provider: FakeProvider, before: int) -> list[str | None]:
    """The models the Claude requests since the ``before``-th asked for."""
    return [request.model for request in provider.requests_for("anthropic")[before:]]


async def test_the_model_a_conversation_fell_back_to_on_one_replica_is_kept_on_another_until_reset(
    team: RoundRobin, claude_provider: FakeProvider
) -> None:
    """The newest Fable is refused. Turn 1 on A falls back to the older one. Turn 2 on B, which never
    saw the session, goes straight to the older one, as the stored turn says, without asking for the
    newest. After a reset on A, B's next turn starts unpinned: it asks for the newest Fable first."""
    turns = Turns(claude_provider, team, "fable", "pin")
    refusal = "model: claude-fable-5-1"
    claude_provider.enqueue("anthropic", match="claude-fable-5-1", status=404, error=refusal, times=None)
    try:
        claude_provider.enqueue("anthropic", text=turns.answer(1))
        first = await team.call("ask", {"question": turns.question(1), "session": "pin"}, on=A)
        assert (first["status"], first["model"]) == ("ok", "claude-fable-5"), first

        before = len(claude_provider.requests_for("anthropic"))
        second, _ = await turns.ask(B, 2)
        assert second["model"] == "claude-fable-5"
        assert _models_since(claude_provider, before) == ["claude-fable-5"]

        reset = await team.call("reset_session", {"session": "pin", "save": False}, on=A)
        assert (reset["cleared"], reset["turns"]) == (True, 2)
        before = len(claude_provider.requests_for("anthropic"))
        claude_provider.enqueue("anthropic", text=turns.answer(3))
        restarted = await team.call("ask", {"question": turns.question(3), "session": "pin"}, on=B)
        assert (restarted["status"], restarted["turn"]) == ("ok", 1)
        asked = _models_since(claude_provider, before)
        assert asked[0] == "claude-fable-5-1" and asked[-1] == "claude-fable-5"
    finally:
        claude_provider.clear()  # the refusal must not outlive this test
