"""Warm Claude Code processes of Fable / Opus conversations: the real bundled CLI, the fake provider.

Each turn arrives with the conversation so far (``request.history``), as the transcript store holds it.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ask_fable.backends.base import HISTORY_HEADING, EventSink, Exchange, OracleRequest
from ask_fable.backends.claude_sessions import RESEEDED, ClaudeSessions
from ask_fable.config import load_settings
from ask_fable.errors import OracleTimeout, UpstreamError
from ask_fable.redact import redact
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli

pytestmark = pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")



def req(prompt: str, timeout: float = 30, history: tuple[tuple[str, str], ...] = ()) -> OracleRequest:
    earlier = tuple(Exchange(prompt=p, answer=a) for p, a in history)
    return OracleRequest(system="Session system prompt.", prompt=prompt, timeout=timeout, history=earlier)


def last(fake: FakeProvider) -> dict:
    """The body of the last request the CLI sent."""
    return fake.last_json("anthropic")


def seeded(body: dict, *texts: str) -> bool:
    """Whether the request is one user message that folds the earlier exchanges before the new prompt."""
    [(role, text)] = conversation(body)
    return role == "user" and text.startswith(HISTORY_HEADING) and all(t in text for t in texts)


def conversation(body: dict) -> list[tuple[str, str]]:
    """(role, text) of the user and assistant messages a request carried, thinking left out."""
    out = []
    for message in body["messages"]:
        if message["role"] not in ("user", "assistant"):
            continue
        content = message["content"]
        if isinstance(content, str):
            out.append((message["role"], content))
            continue
        text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        if text:
            out.append((message["role"], text))
    return out


async def test_follow_up_reuses_the_open_cli_and_carries_the_conversation(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text="First answer.", thinking="Thinking about turn one.")
    fp.enqueue("anthropic", text="Second answer.")
    sessions = ClaudeSessions(load_settings())
    try:
        first = await sessions.ask("fable", "k1", req("Turn one?"), EventSink(), "fable")
        pid = sessions.client_pid("fable", "k1")
        history = (("Turn one?", "First answer."),)
        second = await sessions.ask("fable", "k1", req("Turn two?", history=history), EventSink(), "fable")
        assert (first.text, second.text) == ("First answer.", "Second answer.")
        assert first.thinking == "Thinking about turn one."
        assert pid is not None and sessions.client_pid("fable", "k1") == pid, "same CLI process"
        assert [r.model for r in fp.requests_for("anthropic")][-2:] == ["claude-fable-5-1"] * 2
        assert conversation(fp.last_json("anthropic")) == [
            ("user", "Turn one?"), ("assistant", "First answer."), ("user", "Turn two?"),
        ]
    finally:
        await sessions.aclose()
    assert sessions.client_pid("fable", "k1") is None


async def test_a_first_turn_with_stored_history_seeds_a_new_cli(
    fp: FakeProvider, claude_home: Path
) -> None:
    """After a restart the store still has the conversation: the new CLI starts from it."""
    fp.enqueue("anthropic", text="Continued.")
    fp.enqueue("anthropic", text="And on.")
    sessions = ClaudeSessions(load_settings())
    try:
        history = (("Earlier question?", "Earlier answer."),)
        await sessions.ask("fable", "k", req("Next question?", history=history), EventSink(), "fable")
        assert seeded(last(fp), "Earlier question?", "Earlier answer.", "Next question?")
        pid = sessions.client_pid("fable", "k")
        history += (("Next question?", "Continued."),)
        await sessions.ask("fable", "k", req("Third?", history=history), EventSink(), "fable")
        assert sessions.client_pid("fable", "k") == pid, "the seeded CLI serves the follow-up"
        assert conversation(fp.last_json("anthropic"))[1:] == [
            ("assistant", "Continued."), ("user", "Third?"),
        ]
    finally:
        await sessions.aclose()


@pytest.mark.parametrize("stored", [
    # Another process answered a turn after this one: more exchanges than the CLI holds.
    (("First?", "One."), ("Asked elsewhere?", "Answered elsewhere.")),
    # Another process reset the session and answered a new first turn: as many, but other ones.
    (("Asked elsewhere?", "Answered elsewhere."),),
], ids=["moved-on", "reset-elsewhere"])
async def test_a_cli_holding_another_conversation_is_replaced(
    fp: FakeProvider, claude_home: Path, stored: tuple[tuple[str, str], ...]
) -> None:
    """When the stored history is not what the warm CLI holds (another process moved the session on
    or reset it, or old turns were left out), the CLI is replaced by one seeded with the history
    given, and nothing of what the old CLI held is sent."""
    fp.enqueue("anthropic", text="One.")
    fp.enqueue("anthropic", text="Two.")
    sessions = ClaudeSessions(load_settings())
    try:
        await sessions.ask("opus5", "k", req("First?"), EventSink(), "opus")
        pid = sessions.client_pid("opus5", "k")
        await sessions.ask("opus5", "k", req("Here again?", history=stored), EventSink(), "opus")
        assert sessions.client_pid("opus5", "k") not in (None, pid)
        assert seeded(last(fp), *(text for exchange in stored for text in exchange), "Here again?")
        assert ("First?" in str(last(fp))) is (stored[0][0] == "First?")
    finally:
        await sessions.aclose()


async def test_a_turn_whose_text_the_store_redacts_keeps_its_warm_cli(
    fp: FakeProvider, claude_home: Path
) -> None:
    """The store keeps a configured secret redacted; the history it sends back still matches what the
    warm CLI holds, so the follow-up is written to the same CLI."""
    secret = "sk-glm-held-0123456789abcdef"
    settings = load_settings(glm_api_key=secret)
    fp.enqueue("anthropic", text=f"Rotate {secret} first.")
    fp.enqueue("anthropic", text="Then restart.")
    sessions = ClaudeSessions(settings)
    try:
        question = f"Is {secret} still valid?"
        first = await sessions.ask("fable", "k", req(question), EventSink(), "fable")
        pid = sessions.client_pid("fable", "k")
        stored = ((redact(question, settings), redact(first.text, settings)),)
        assert secret not in str(stored)
        await sessions.ask("fable", "k", req("And then?", history=stored), EventSink(), "fable")
        assert pid is not None and sessions.client_pid("fable", "k") == pid
    finally:
        await sessions.aclose()


async def test_namespaces_and_keys_are_separate_conversations(
    fp: FakeProvider, claude_home: Path
) -> None:
    sessions = ClaudeSessions(load_settings())
    try:
        await sessions.ask("fable", "shared", req("Fable question?"), EventSink(), "fable")
        await sessions.ask("opus5", "shared", req("Opus question?"), EventSink(), "opus")
        body = fp.last_json("anthropic")
        assert body["model"] == "claude-opus-5"
        assert conversation(body) == [("user", "Opus question?")]
        assert sessions.client_pid("fable", "shared") != sessions.client_pid("opus5", "shared")
        assert sessions.client_pid("opus5", "other") is None
    finally:
        await sessions.aclose()


async def test_reset_closes_the_cli_and_the_next_turn_starts_fresh(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text="Remembered.")
    sessions = ClaudeSessions(load_settings())
    try:
        await sessions.ask("fable", "k", req("Remember blue."), EventSink(), "fable")
        pid = sessions.client_pid("fable", "k")
        assert await sessions.reset("fable", "k") is True
        assert sessions.client_pid("fable", "k") is None
        assert await sessions.reset("fable", "never-used") is False

        await sessions.ask("fable", "k", req("What colour?"), EventSink(), "fable")
        assert sessions.client_pid("fable", "k") not in (None, pid)
        assert conversation(fp.last_json("anthropic")) == [("user", "What colour?")]
    finally:
        await sessions.aclose()


async def test_idle_client_is_closed_and_the_conversation_continues_on_a_new_one(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text="Kept answer.")
    sessions = ClaudeSessions(load_settings(session_idle_seconds=0.2))
    try:
        await sessions.ask("fable", "idle", req("Before the pause?"), EventSink(), "fable")
        first_pid = sessions.client_pid("fable", "idle")
        with anyio.fail_after(10):
            while sessions.client_pid("fable", "idle") is not None:
                await anyio.sleep(0.05)
        history = (("Before the pause?", "Kept answer."),)
        await sessions.ask("fable", "idle", req("After the pause?", history=history), EventSink(), "fable")
        assert sessions.client_pid("fable", "idle") not in (None, first_pid)
        assert seeded(last(fp), "Before the pause?", "Kept answer.", "After the pause?")
    finally:
        await sessions.aclose()


async def test_failed_turn_closes_the_client_and_the_next_turn_starts_from_the_history(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text="Good answer.")
    sessions = ClaudeSessions(load_settings())
    try:
        await sessions.ask("opus5", "k", req("Good question?"), EventSink(), "opus")
        good = (("Good question?", "Good answer."),)
        fp.enqueue("anthropic", status=500, error="overloaded", times=3)
        with pytest.raises(UpstreamError):
            await sessions.ask("opus5", "k", req("Unlucky question?", history=good), EventSink(), "opus")
        assert sessions.client_pid("opus5", "k") is None
        fp.clear()
        fp.enqueue("anthropic", text="Recovered.")
        reply = await sessions.ask("opus5", "k", req("Try again?", history=good), EventSink(), "opus")
        assert reply.text == "Recovered."
        body = fp.last_json("anthropic")
        assert seeded(body, "Good question?", "Good answer.", "Try again?")
        assert "Unlucky question?" not in str(body["messages"])
    finally:
        await sessions.aclose()


async def test_hanging_turn_times_out_and_the_session_keeps_serving(
    fp: FakeProvider, claude_home: Path
) -> None:
    sessions = ClaudeSessions(load_settings())
    try:
        fp.enqueue("anthropic", hang=True)
        with anyio.fail_after(12), pytest.raises(OracleTimeout):
            await sessions.ask("fable", "slow", req("Hang?", timeout=3), EventSink(), "fable")
        assert sessions.client_pid("fable", "slow") is None
        reply = await sessions.ask("fable", "slow", req("Now?"), EventSink(), "fable")
        assert reply.model == "claude-fable-5-1"
    finally:
        await sessions.aclose()


async def test_turns_from_different_tasks_share_one_client(
    fp: FakeProvider, claude_home: Path
) -> None:
    """Tool calls arrive on different tasks; the open client must serve them all."""
    sessions = ClaudeSessions(load_settings())
    history: list[tuple[str, str]] = []

    async def turn(prompt: str) -> None:
        request = req(prompt, history=tuple(history))
        reply = await sessions.ask("fable", "tasks", request, EventSink(), "fable")
        history.append((prompt, reply.text))

    try:
        pids = []
        for prompt in ("One?", "Two?", "Three?"):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(turn, prompt)
            pids.append(sessions.client_pid("fable", "tasks"))
        assert len(set(pids)) == 1 and pids[0] is not None
        assert len(conversation(fp.last_json("anthropic"))) == 5
    finally:
        await sessions.aclose()


async def test_cli_bridge_turns_carry_the_conversation_folded_into_the_prompt(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text="Bridge one.")
    fp.enqueue("anthropic", text="Bridge two.")
    sessions = ClaudeSessions(load_settings(use_cli=True))
    try:
        first = await sessions.ask("opus5", "b", req("CLI one?"), EventSink(), "opus")
        second = await sessions.ask("opus5", "b", req("CLI two?", history=(("CLI one?", "Bridge one."),)),
                                    EventSink(), "opus")
        assert (first.routed_via, second.text) == ("claude-cli", "Bridge two.")
        assert seeded(last(fp), "CLI one?", "Bridge one.", "CLI two?")
    finally:
        await sessions.aclose()


async def test_reset_racing_a_waiting_turn_never_runs_it_on_the_dropped_session() -> None:
    """A turn queued on the session lock while a reset drops the session runs on the live one."""
    from ask_fable.backends.base import Reply

    sessions = ClaudeSessions(load_settings())
    ran_on: list[object] = []

    async def fake_turn(session, plan, request, sink, settings):  # type: ignore[no-untyped-def]
        ran_on.append(session)
        return Reply(text="answer", model=plan.first, provider="anthropic")

    sessions._turn = fake_turn  # type: ignore[method-assign]
    old = sessions._session("fable", "k")
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tasks:
            await old.lock.acquire()
            results: dict[str, object] = {}

            async def do_reset() -> None:
                results["reset"] = await sessions.reset("fable", "k")

            async def do_ask() -> None:
                results["ask"] = await sessions.ask("fable", "k", req("Q?"), EventSink(), "fable")

            tasks.start_soon(do_reset)
            await anyio.wait_all_tasks_blocked()
            tasks.start_soon(do_ask)
            await anyio.wait_all_tasks_blocked()
            old.lock.release()
    assert results["reset"] is True
    live = sessions._sessions[("fable", "k")]
    assert ran_on == [live] and live is not old


async def test_settings_getter_applies_runtime_changes_on_the_next_turn() -> None:
    """ClaudeSessions reads its settings through a getter at each turn."""
    from ask_fable.backends.base import Reply

    current = {"settings": load_settings(use_cli=False)}
    sessions = ClaudeSessions(lambda: current["settings"])
    routes: list[tuple[str, str]] = []

    async def sdk_turn(session, model, request, sink, settings):  # type: ignore[no-untyped-def]
        routes.append(("sdk", model))
        return Reply(text="sdk answer", model=model, provider="anthropic")

    async def cli_turn(session, model, request, settings):  # type: ignore[no-untyped-def]
        routes.append(("cli", model))
        return Reply(text="cli answer", model=model, provider="anthropic")

    sessions._sdk_turn = sdk_turn  # type: ignore[method-assign]
    sessions._cli_turn = cli_turn  # type: ignore[method-assign]
    await sessions.ask("fable", "a", req("one"), EventSink(), "fable")
    current["settings"] = load_settings(use_cli=True, fable_model="claude-fable-pinned")
    assert sessions.settings.use_cli
    stored = (Exchange(prompt="one", answer="sdk answer", model="claude-fable-5-1"),)
    await sessions.ask("fable", "a", req("two").model_copy(update={"history": stored}), EventSink(), "fable")
    await sessions.ask("fable", "b", req("fresh"), EventSink(), "fable")
    assert routes == [("sdk", "claude-fable-5-1"), ("cli", "claude-fable-5-1"),
                      ("cli", "claude-fable-pinned")]


async def test_a_conversation_is_pinned_to_the_model_of_its_newest_stored_exchange() -> None:
    """The pin is read from the history a turn arrives with, not from this process's memory: a
    session never seen here runs on the model its stored turns name (the newest one's), and an empty
    history (a reset made anywhere) runs unpinned, down the ladder, even after a pinned turn here."""
    from ask_fable.backends.base import Reply

    sessions = ClaudeSessions(load_settings(use_cli=True))
    models: list[str] = []

    async def cli_turn(session, model, request, settings):  # type: ignore[no-untyped-def]
        models.append(model)
        return Reply(text="answer", model=model, provider="anthropic")

    sessions._cli_turn = cli_turn  # type: ignore[method-assign]
    stored = (Exchange(prompt="one", answer="a", model="claude-fable-5-1"),
              Exchange(prompt="two", answer="b", model="claude-fable-5"))
    unknown = (Exchange(prompt="one", answer="a"),)
    for request in (req("three").model_copy(update={"history": stored}), req("after a reset"),
                    req("old row").model_copy(update={"history": unknown})):
        await sessions.ask("fable", "s", request, EventSink(), "fable")
    assert models == ["claude-fable-5", "claude-fable-5-1", "claude-fable-5-1"]


@pytest.mark.parametrize("noticed", [False, True], ids=["just-killed", "exit-already-seen"])
async def test_a_dead_cli_is_replaced_within_the_same_turn(
    fp: FakeProvider, claude_home: Path, noticed: bool
) -> None:
    """Whether or not the session already saw its CLI exit, the next turn runs on a new one, seeded."""
    import os
    import signal

    fp.enqueue("anthropic", text="Before the crash.")
    fp.enqueue("anthropic", text="After the crash.")
    notes: list[str] = []
    sessions = ClaudeSessions(load_settings())
    try:
        await sessions.ask("fable", "dead", req("Before?"), EventSink(), "fable")
        transport = sessions._sessions[("fable", "dead")].client
        os.kill(transport.pid, signal.SIGKILL)
        if noticed:
            with anyio.fail_after(10):
                while transport.alive:
                    await anyio.sleep(0.02)
        history = (("Before?", "Before the crash."),)
        reply = await sessions.ask("fable", "dead", req("After?", history=history),
                                   EventSink(on_note=notes.append), "fable")
        assert reply.text == "After the crash."
        assert RESEEDED in notes
        assert seeded(last(fp), "Before?", "Before the crash.", "After?")
    finally:
        await sessions.aclose()


async def test_closing_a_warm_session_ends_what_its_cli_spawned(
    fp: FakeProvider, claude_home: Path, tmp_path: Path
) -> None:
    """The warm CLI runs in its own process group: closing the session ends the CLI and its child."""
    from tests.fakes.fake_cli import is_alive
    from tests.fakes.fixtures import child_pids, claude_with_a_child

    cli, pid_file = claude_with_a_child(tmp_path / "claude-bin")
    fp.enqueue("anthropic", text="Answered with a child running.")
    sessions = ClaudeSessions(load_settings(claude_cli=str(cli)))
    try:
        reply = await sessions.ask("fable", "kids", req("Anything running?"), EventSink(), "fable")
        assert reply.text == "Answered with a child running."
        leader = sessions.client_pid("fable", "kids")
        [child] = child_pids(pid_file)
        assert leader is not None and is_alive(leader) and is_alive(child)
    finally:
        with anyio.fail_after(20):
            await sessions.aclose()
    with anyio.move_on_after(5):
        while is_alive(leader) or is_alive(child):
            await anyio.sleep(0.02)
    assert not is_alive(leader) and not is_alive(child)
