"""Multi-turn Claude sessions on the real bundled Claude Code CLI against the fake provider."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from ask_fable.backends.base import EventSink, OracleRequest
from ask_fable.backends.claude_sessions import ClaudeSessions
from ask_fable.config import load_settings
from ask_fable.errors import OracleTimeout, UpstreamError
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli

pytestmark = pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")



def req(prompt: str, timeout: float = 30) -> OracleRequest:
    return OracleRequest(system="Session system prompt.", prompt=prompt, timeout=timeout)


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
        first = await sessions.ask("fable", "k1", req("Turn one?"), EventSink(), "fable", question="Q1")
        pid = sessions.client_pid("fable", "k1")
        second = await sessions.ask("fable", "k1", req("Turn two?"), EventSink(), "fable")
        assert (first.text, second.text) == ("First answer.", "Second answer.")
        assert pid is not None and sessions.client_pid("fable", "k1") == pid, "same CLI process"
        assert first.session_id == second.session_id
        assert conversation(fp.last_json("anthropic")) == [
            ("user", "Turn one?"), ("assistant", "First answer."), ("user", "Turn two?"),
        ]
        turns = sessions.transcript("fable", "k1")
        assert [(t["question"], t["answer"], t["model"]) for t in turns] == [
            ("Q1", "First answer.", "claude-fable-5-1"), ("Turn two?", "Second answer.", "claude-fable-5-1"),
        ]
        assert turns[0]["thinking"] == "Thinking about turn one." and turns[0]["ts"]
    finally:
        await sessions.aclose()
    assert sessions.client_pid("fable", "k1") is None


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
        assert sessions.exists("opus5", "shared") and not sessions.exists("opus5", "other")
    finally:
        await sessions.aclose()


async def test_reset_returns_the_transcript_and_the_next_turn_starts_fresh(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text="Remembered.")
    sessions = ClaudeSessions(load_settings())
    try:
        await sessions.ask("fable", "k", req("Remember blue."), EventSink(), "fable")
        sessions.session_state("fable", "k")["needs_context_streak"] = 2
        turns = await sessions.reset("fable", "k")
        assert [t["answer"] for t in turns] == ["Remembered."]
        assert sessions.client_pid("fable", "k") is None and sessions.transcript("fable", "k") == []
        assert sessions.session_state("fable", "k")["needs_context_streak"] == 0
        assert await sessions.reset("fable", "never-used") == []

        await sessions.ask("fable", "k", req("What colour?"), EventSink(), "fable")
        assert conversation(fp.last_json("anthropic")) == [("user", "What colour?")]
        await sessions.ask("fable", "k", req("Start over."), EventSink(), "fable", reset=True)
        assert conversation(fp.last_json("anthropic")) == [("user", "Start over.")]
        assert len(sessions.transcript("fable", "k")) == 1
    finally:
        await sessions.aclose()


async def test_idle_client_is_closed_and_the_conversation_resumes(
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
        await sessions.ask("fable", "idle", req("After the pause?"), EventSink(), "fable")
        assert sessions.client_pid("fable", "idle") not in (None, first_pid)
        assert conversation(fp.last_json("anthropic")) == [
            ("user", "Before the pause?"), ("assistant", "Kept answer."), ("user", "After the pause?"),
        ]
    finally:
        await sessions.aclose()


async def test_failed_turn_closes_the_client_and_is_left_out_of_the_next_turn(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text="Good answer.")
    sessions = ClaudeSessions(load_settings())
    try:
        await sessions.ask("opus5", "k", req("Good question?"), EventSink(), "opus")
        fp.enqueue("anthropic", status=500, error="overloaded", times=3)
        with pytest.raises(UpstreamError):
            await sessions.ask("opus5", "k", req("Unlucky question?"), EventSink(), "opus")
        assert sessions.client_pid("opus5", "k") is None
        fp.clear()
        fp.enqueue("anthropic", text="Recovered.")
        reply = await sessions.ask("opus5", "k", req("Try again?"), EventSink(), "opus")
        assert reply.text == "Recovered."
        assert conversation(fp.last_json("anthropic")) == [
            ("user", "Good question?"), ("assistant", "Good answer."), ("user", "Try again?"),
        ]
        assert [t["answer"] for t in sessions.transcript("opus5", "k")] == ["Good answer.", "Recovered."]
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
    """Tool calls arrive on different tasks; the open client must serve them all, one at a time."""
    sessions = ClaudeSessions(load_settings())
    replies = []

    async def turn(prompt: str) -> None:
        replies.append(await sessions.ask("fable", "tasks", req(prompt), EventSink(), "fable"))

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(turn, "One?")
        pid = sessions.client_pid("fable", "tasks")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(turn, "Two?")
            tasks.start_soon(turn, "Three?")
        assert sessions.client_pid("fable", "tasks") == pid
        assert len(sessions.transcript("fable", "tasks")) == 3
        assert len(conversation(fp.last_json("anthropic"))) == 5
    finally:
        await sessions.aclose()


async def test_cli_bridge_sessions_resume_the_conversation(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text="Bridge one.")
    fp.enqueue("anthropic", text="Bridge two.")
    sessions = ClaudeSessions(load_settings(use_cli=True))
    try:
        first = await sessions.ask("opus5", "b", req("CLI one?"), EventSink(), "opus")
        second = await sessions.ask("opus5", "b", req("CLI two?"), EventSink(), "opus")
        assert (first.routed_via, second.text) == ("claude-cli", "Bridge two.")
        assert conversation(fp.last_json("anthropic")) == [
            ("user", "CLI one?"), ("assistant", "Bridge one."), ("user", "CLI two?"),
        ]
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
    old.turns.append({"question": "q0", "answer": "a0"})
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
    assert results["reset"] == [{"question": "q0", "answer": "a0"}]
    live = sessions._sessions[("fable", "k")]
    assert ran_on == [live] and live is not old
    assert [t["answer"] for t in sessions.transcript("fable", "k")] == ["answer"]


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
    await sessions.ask("fable", "a", req("two"), EventSink(), "fable")
    await sessions.ask("fable", "b", req("fresh"), EventSink(), "fable")
    assert routes == [("sdk", "claude-fable-5-1"), ("cli", "claude-fable-5-1"),
                      ("cli", "claude-fable-pinned")]


@pytest.mark.parametrize("noticed", [False, True], ids=["just-killed", "exit-already-seen"])
async def test_a_dead_cli_is_resumed_within_the_same_turn(
    fp: FakeProvider, claude_home: Path, noticed: bool
) -> None:
    """Whether or not the session already saw its CLI exit, the next turn resumes on a new one."""
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
        reply = await sessions.ask("fable", "dead", req("After?"), EventSink(on_note=notes.append), "fable")
        assert reply.text == "After the crash."
        assert any("resuming the conversation" in note for note in notes)
        assert conversation(fp.last_json("anthropic")) == [
            ("user", "Before?"), ("assistant", "Before the crash."), ("user", "After?"),
        ]
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
