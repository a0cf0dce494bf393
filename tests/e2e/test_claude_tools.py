"""ask / ask_opus5 / reset_session through the MCP client, on the real bundled Claude Code CLI."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ask_fable.backends.claude_common import UNAVAILABLE_MODEL_TTL_SECONDS
from ask_fable.backends.resources import Resources
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.surface.server import build_server
from tests.fakes.clock import ManualClock
from tests.fakes.fake_provider import FakeProvider
from tests.fakes.fixtures import bundled_claude_cli

pytestmark = pytest.mark.skipif(bundled_claude_cli() is None, reason="claude-agent-sdk ships no CLI here")



def with_sidecar(answer: str, recommendation: str = "apply", needs: list[str] | None = None) -> str:
    sidecar = {"recommendation": recommendation, "confidence": "high", "needs_context": needs or []}
    return f"{answer}\n\n```sidecar\n{json.dumps(sidecar)}\n```"


def user_turns(body: dict[str, Any]) -> list[str]:
    """The text of every user message a provider request carried."""
    out = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return out


def stored_turns(app: App, namespace: str, session: str) -> int:
    """How many turns the transcript store keeps for a conversation."""
    return len(app.transcripts.turns("local", namespace, session))


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    payload = result.structured_content
    assert payload is not None
    assert result.is_error is (payload["status"] == "error")
    return payload


async def test_ask_keeps_a_warm_session_and_reset_session_dumps_it(
    fp: FakeProvider, claude_home: Path
) -> None:
    fp.enqueue("anthropic", text=with_sidecar("Use a bounded queue."), thinking="Queues first.")
    fp.enqueue("anthropic", text=with_sidecar("Size it at 2x the workers."))
    app = App(load_settings())
    async with Client(build_server(app)) as client:
        first = await call(client, "ask", {"question": "How do I stop the producer from running away?",
                                           "context": "def produce(): ...", "session": "queue"})
        pid = app.claude_sessions.client_pid("fable", "queue")
        second = await call(client, "ask", {"question": "How big should it be?", "session": "queue"})

        assert first["status"] == "ok" and first["answer"] == "Use a bounded queue."
        assert first["sidecar"] == {"recommendation": "apply", "confidence": "high", "needs_context": []}
        assert (first["session"], first["turn"], first["model"]) == ("queue", 1, "claude-fable-5-1")
        assert first["trace_id"] and first["telemetry"]["provider"] == "anthropic"
        assert (second["answer"], second["turn"]) == ("Size it at 2x the workers.", 2)
        assert app.claude_sessions.client_pid("fable", "queue") == pid, "the follow-up reused the open CLI"
        carried = user_turns(fp.last_json("anthropic"))
        assert len(carried) == 2 and "def produce(): ..." in carried[0] and "How big" in carried[1]

        reset = await call(client, "reset_session", {"session": "queue", "model": "fable"})
        assert (reset["status"], reset["turns"], reset["cleared"]) == ("ok", 2, True)
        dump = Path(reset["saved"])
        assert dump.parent == app.settings.sessions_dir
        assert re.fullmatch(r"queue-\d{8}T\d{12}Z\.md", dump.name)
        text = dump.read_text()
        assert "Use a bounded queue." in text and "Queues first." in text and "How big should it be?" in text
        assert app.claude_sessions.client_pid("fable", "queue") is None

        again = await call(client, "reset_session", {"session": "queue"})
        assert (again["status"], again["cleared"], again["turns"]) == ("ok", False, 0)
        assert (await call(client, "ask_fable_help", {"topic": "all"}))["status"] == "ok"


async def test_ask_opus5_has_its_own_sessions_and_reset_true_starts_over(
    fp: FakeProvider, claude_home: Path
) -> None:
    app = App(load_settings())
    async with Client(build_server(app, toolsets=["all"]), mode="legacy") as client:
        await call(client, "ask", {"question": "Fable question one?"})
        opus = await call(client, "ask_opus5", {"question": "Opus question one?"})
        assert (opus["status"], opus["model"], opus["session"]) == ("ok", "claude-opus-5", "default")
        assert user_turns(fp.last_json("anthropic")) == [
            "## Question\nOpus question one?"
        ]
        fresh = await call(client, "ask_opus5", {"question": "Opus question two?", "reset": True})
        assert fresh["turn"] == 1
        assert user_turns(fp.last_json("anthropic")) == ["## Question\nOpus question two?"]
        assert stored_turns(app, "fable", "default") == 1
        reset = await call(client, "reset_session", {"model": "opus5", "save": False})
        assert (reset["turns"], reset.get("saved")) == (1, None)
        assert stored_turns(app, "fable", "default") == 1
        bad = await call(client, "reset_session", {"model": "gpt-99"})
        assert bad["kind"] == "bad_args" and "deepseek" in bad["detail"]


async def test_repeated_requests_for_context_end_in_context_exhausted(
    fp: FakeProvider, claude_home: Path
) -> None:
    needs = with_sidecar("I need the lock code.", "needs_more_context", ["the Lock class in locks.py"])
    fp.enqueue("anthropic", text=needs, times=2)
    app = App(load_settings(max_needs_context=1))
    async with Client(build_server(app)) as client:
        first = await call(client, "ask", {"question": "Why does this deadlock?", "session": "dl"})
        second = await call(client, "ask", {"question": "Here is more: class Lock ...", "session": "dl"})
    assert first["status"] == "ok"
    assert first["followup"]["needs_context"] == ["the Lock class in locks.py"]
    assert second["status"] == "context_exhausted" and second["answer"] == "I need the lock code."


async def test_provider_failures_come_back_as_structured_errors(
    fp: FakeProvider, claude_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No CLI retries: the 500 fails at once, well inside the short timeout the hang needs.
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    fp.enqueue("anthropic", status=500, error="upstream exploded")
    fp.enqueue("anthropic", hang=True)
    async with Client(build_server(App(load_settings(timeout=3)), toolsets=["core", "single"])) as client:
        failed = await call(client, "ask", {"question": "Is this safe?", "session": "e"})
        hung = await call(client, "ask_opus5", {"question": "Is this safe?", "session": "e"})
        assert (failed["status"], failed["kind"], failed["session"]) == ("error", "upstream_error", "e")
        assert "500" in failed["detail"]
        assert (hung["status"], hung["kind"]) == ("error", "timeout")
        refused = await call(client, "ask", {"question": "x"})
        assert (refused["status"], refused["stage"]) == ("refused", "guard")
        assert len(fp.requests) == 2, "the refused question reached no model"


@pytest.mark.parametrize("use_cli", [False, True], ids=["agent-sdk", "cli-bridge"])
async def test_cost_usd_is_each_turns_cost_and_session_cost_usd_the_running_total(
    fp: FakeProvider, claude_home: Path, use_cli: bool
) -> None:
    """Three identical turns cost the same each; the conversation's total is its own field."""
    usage = {"input_tokens": 100, "output_tokens": 100}
    fp.enqueue("anthropic", text=with_sidecar("Same answer."), usage=usage, times=4)
    async with Client(build_server(App(load_settings(use_cli=use_cli)), toolsets=["all"])) as client:
        turns = [
            await call(client, "ask_opus5", {"question": "Is this lock ordering safe?", "session": "cost"})
            for _ in range(3)
        ]
        fresh = await call(client, "ask_opus5",
                           {"question": "Is this lock ordering safe?", "session": "cost", "reset": True})
    costs = [turn["cost_usd"] for turn in turns]
    assert costs[0] > 0 and costs == pytest.approx([costs[0]] * 3)
    assert [turn["session_cost_usd"] for turn in turns] == pytest.approx([costs[0] * n for n in (1, 2, 3)])
    assert [turn["usage"]["input_tokens"] for turn in turns] == [100, 100, 100]
    assert (fresh["cost_usd"], fresh["session_cost_usd"]) == pytest.approx((costs[0], costs[0]))


async def test_a_warm_session_whose_cli_died_reconnects_within_the_same_call(
    fp: FakeProvider, claude_home: Path
) -> None:
    """The session's Claude Code process is killed between turns: the next ask continues the
    conversation on a new process, seeded with the stored turn, and answers."""
    fp.enqueue("anthropic", text=with_sidecar("Take the lock before the queue."))
    fp.enqueue("anthropic", text=with_sidecar("Yes, release them in reverse order."))
    app = App(load_settings())
    async with Client(build_server(app)) as client:
        first = await call(client, "ask", {"question": "Which lock comes first?", "session": "crash"})
        pid = app.claude_sessions.client_pid("fable", "crash")
        assert first["status"] == "ok" and pid is not None
        os.kill(pid, signal.SIGKILL)

        second = await call(client, "ask", {"question": "And releasing them?", "session": "crash"})

        assert second["status"] == "ok", second
        assert second["turn"] == 2
        assert second["answer"] == "Yes, release them in reverse order."
        assert app.claude_sessions.client_pid("fable", "crash") not in (None, pid)
        [carried] = user_turns(fp.last_json("anthropic"))
        assert carried.startswith("## Earlier in this conversation")
        for text in ("Which lock comes first?", "Take the lock before the queue.", "And releasing them?"):
            assert text in carried


@pytest.mark.parametrize("model", ["fable", "opus5"])
async def test_reset_session_on_a_session_never_used_is_a_no_op_that_says_so(
    fp: FakeProvider, claude_home: Path, model: str
) -> None:
    """Nothing to clear is not an error: ok, cleared false, a note, the sessions that do exist."""
    app = App(load_settings())
    async with Client(build_server(app, toolsets=["all"])) as client:
        tool = "ask" if model == "fable" else "ask_opus5"
        await call(client, tool, {"question": "Is this lock ordering safe?", "session": "used"})
        result = await call(client, "reset_session", {"session": "never", "model": model})
        assert (result["status"], result["cleared"], result["turns"]) == ("ok", False, 0)
        assert "never" in result["note"] and result.get("saved") is None
        assert result["sessions"] == ["used"]
        assert stored_turns(app, model, "used") == 1, "the other session was left alone"
        assert list(app.settings.sessions_dir.glob("*.md")) == []


async def test_a_new_conversation_starts_on_the_fable_step_that_worked(
    fp: FakeProvider, claude_home: Path
) -> None:
    """The newest Fable id is "not found": the first conversation steps down once, the second one
    goes straight to the older id without asking for the missing one again."""
    fp.enqueue("anthropic", match="claude-fable-5-1", status=404, error="model: claude-fable-5-1",
                          times=None)
    fp.enqueue("anthropic", match="claude-fable-5", text=with_sidecar("Older Fable."), times=None)
    async with Client(build_server(App(load_settings()))) as client:
        first = await call(client, "ask", {"question": "Is the retry loop bounded?", "session": "one"})
        before = len(fp.requests_for("anthropic"))
        second = await call(client, "ask", {"question": "Is the backoff jittered?", "session": "two"})
    models = [r.model for r in fp.requests_for("anthropic")]
    assert (first["model"], second["model"]) == ("claude-fable-5", "claude-fable-5")
    assert "claude-fable-5-1" in models[:before]
    assert models[before:] == ["claude-fable-5"]


async def test_an_unavailable_fable_id_is_asked_for_again_once_its_memory_expires(
    fp: FakeProvider, claude_home: Path
) -> None:
    """The server remembers a missing Fable id for an hour on its own clock: within it a new
    conversation skips the id, after it the id is tried again; another server starts from scratch."""
    fp.enqueue("anthropic", match="claude-fable-5-1", status=404, error="model: claude-fable-5-1",
               times=None)
    fp.enqueue("anthropic", match="claude-fable-5", text=with_sidecar("Older Fable."), times=None)
    clock = ManualClock()
    app = App(load_settings(), resources=Resources(clock=clock))

    def asked_newest_since(before: int) -> bool:
        return "claude-fable-5-1" in [r.model for r in fp.requests_for("anthropic")[before:]]

    async with Client(build_server(app)) as client:
        await call(client, "ask", {"question": "Is the retry loop bounded?", "session": "one"})
        clock.advance(UNAVAILABLE_MODEL_TTL_SECONDS - 60)
        before = len(fp.requests_for("anthropic"))
        within = await call(client, "ask", {"question": "Is the backoff jittered?", "session": "two"})
        assert within["status"] == "ok" and not asked_newest_since(before)
        clock.advance(120)
        before = len(fp.requests_for("anthropic"))
        after = await call(client, "ask", {"question": "Is the queue bounded?", "session": "three"})
        assert after["status"] == "ok" and asked_newest_since(before)
    before = len(fp.requests_for("anthropic"))
    async with Client(build_server(App(load_settings()))) as client:
        other = await call(client, "ask", {"question": "Is the pool sized right?", "session": "four"})
    assert other["model"] == "claude-fable-5" and asked_newest_since(before)


async def test_transcript_dumps_are_named_by_key_with_opus5_in_its_own_namespace_and_pruned_alone(
    fp: FakeProvider, claude_home: Path
) -> None:
    """ask dumps <key>-<ts>.md, ask_opus5 dumps opus5-<key>-<ts>.md; ASK_FABLE_MAX_SESSIONS prunes
    only files of those shapes, never a stranger's file in the same directory."""
    app = App(load_settings(max_sessions=2))
    directory = app.settings.sessions_dir
    directory.mkdir(parents=True)
    strangers = [directory / "notes.md", directory / "design-20200101T000000000000Z.txt"]
    for stranger in strangers:
        stranger.write_text("not ours")
    stamp = r"\d{8}T\d{12}Z(?:-\d+)?\.md"
    async with Client(build_server(app, toolsets=["all"])) as client:
        saved = []
        for tool, model, key in [("ask", "fable", "alpha"), ("ask_opus5", "opus5", "alpha"),
                                 ("ask", "fable", "beta")]:
            await call(client, tool, {"question": "Is this lock ordering safe?", "session": key})
            reset = await call(client, "reset_session", {"session": key, "model": model})
            saved.append(Path(reset["saved"]))
    assert re.fullmatch(rf"alpha-{stamp}", saved[0].name)
    assert re.fullmatch(rf"opus5-alpha-{stamp}", saved[1].name)
    assert re.fullmatch(rf"beta-{stamp}", saved[2].name)
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [saved[1].name, saved[2].name, *(s.name for s in strangers)]
    )


async def test_claude_code_keeps_no_transcript_of_our_calls_in_the_users_home(
    fp: FakeProvider, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code runs with its configuration directory where the user has it (``~/.claude``), yet
    after conversation turns on a warm process, turns through the ``claude -p`` bridge and a
    single-shot council member, no file in HOME outside ask-fable's own state holds a question or
    an answer, and Claude Code's projects directory stays empty."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fp.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy-key")
    fp.enqueue("anthropic", text=with_sidecar("ANSWER-MARK-7f3a kept private."), times=None)
    questions = [f"QUESTION-MARK-7f3a number {n}: is this lock ordering safe?" for n in range(4)]
    for use_cli in (False, True):
        async with Client(build_server(App(load_settings(use_cli=use_cli)), toolsets=["all"])) as client:
            for question in questions[:2] if not use_cli else questions[2:]:
                result = await call(client, "ask", {"question": question, "session": f"private-{use_cli}"})
                assert result["status"] == "ok", result
            council = await call(client, "ask_council", {"question": questions[0], "models": ["fable"]})
            assert council["status"] == "ok", council
    own_state = isolated_env / ".local" / "state"
    leaked = [
        path for path in isolated_env.rglob("*")
        if path.is_file() and own_state not in path.parents
        and (b"MARK-7f3a" in path.read_bytes())
    ]
    assert leaked == []
    projects = isolated_env / ".claude" / "projects"
    assert not projects.exists() or not any(p.is_file() for p in projects.rglob("*"))


def _ended(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("setting", ["max_live_sessions_per_tenant", "max_live_sessions"])
async def test_past_the_live_session_cap_the_least_recently_used_process_ends_and_its_conversation_stays(
    fp: FakeProvider, claude_home: Path, setting: str
) -> None:
    """One live session allowed: opening a second closes the first's Claude Code process (the call
    that did it says so), and the first conversation's next turn continues from its stored turns."""
    for answer in ("Take the lock first.", "Use a bounded queue.", "Release them in reverse order."):
        fp.enqueue("anthropic", text=with_sidecar(answer))
    app = App(load_settings(**{setting: 1}))
    async with Client(build_server(app)) as client:
        first = await call(client, "ask", {"question": "Which lock comes first?", "session": "locks"})
        pid = app.claude_sessions.client_pid("fable", "locks")
        second = await call(client, "ask", {"question": "How do I stop the producer?", "session": "queue"})
        assert pid is not None and app.claude_sessions.client_pid("fable", "locks") is None
        with anyio.fail_after(15):
            while not _ended(pid):
                await anyio.sleep(0.05)
        third = await call(client, "ask", {"question": "And releasing them?", "session": "locks"})

    assert [first["status"], second["status"], third["status"]] == ["ok", "ok", "ok"]
    assert "note" not in first
    assert f"ASK_FABLE_{setting.upper()} is 1" in second["note"]
    assert "your least recently used other session" in second["note"]
    assert (third["turn"], third["answer"]) == (2, "Release them in reverse order.")
    assert "closed to make room" in third["note"] and "ASK_FABLE_" in third["note"]
    [carried] = user_turns(fp.last_json("anthropic"))
    for text in ("Which lock comes first?", "Take the lock first.", "And releasing them?"):
        assert text in carried
    assert stored_turns(app, "fable", "locks") == 2
