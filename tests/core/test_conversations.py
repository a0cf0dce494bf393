"""Conversation turns: stored turns sent as history and fitted into the window; streaks; store failures."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.core.conversations import (
    SessionRef,
    SessionState,
    StoredConversation,
    context_window,
    fit_history,
    namespace_for,
    streak_of,
)
from ask_fable.core.modes.single import run_turn
from ask_fable.core.pipeline import Call, Pipeline
from ask_fable.stores.interfaces import GivenStores
from ask_fable.stores.records import SessionTurn, StoredSessionTurn
from ask_fable.stores.transcripts import TranscriptStore
from ask_fable.values import Usage

SIDE = '\n\n```sidecar\n{{"recommendation": "{rec}", "confidence": "high", "needs_context": []}}\n```'


class Recorder(Oracle):
    """Answers every prompt with a numbered reply, recording the requests and their history."""

    token, provider, model, family = "deepseek", "deepseek", "deepseek-v4-pro", "deepseek"

    def __init__(self, *texts: str, limit: int | None = None) -> None:
        self.texts = list(texts)
        self.requests: list[OracleRequest] = []
        self.prompt_limit_bytes = limit

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        self.requests.append(request)
        text = self.texts.pop(0) if self.texts else f"answer {len(self.requests)}"
        return Reply(text=text, model=self.model, provider=self.provider, usage=Usage(cost_usd=0.25))


def stored(question: str, answer: str = "a", size: int = 0) -> StoredSessionTurn:
    return StoredSessionTurn(namespace="deepseek", session="s", number=1, question=question,
                             prompt=f"## Question\n{question}" + "x" * size, answer=answer, model="m", ts=0.0)


def test_namespaces_keep_the_claude_tools_spaces_and_name_every_other_model_by_its_token() -> None:
    assert [namespace_for(t) for t in ("fable", "opus", "deepseek", "openrouter:openai/gpt-5")] == [
        "fable", "opus5", "deepseek", "openrouter:openai/gpt-5"]


def test_the_window_is_the_backends_unless_the_setting_caps_it() -> None:
    assert context_window("ollama:qwen3", load_settings()) == 32_768
    assert context_window("fable", load_settings()) == 200_000
    assert context_window("deepseek", load_settings(session_context_tokens=5000)) == 5000
    assert context_window("ollama:qwen3", load_settings(session_context_tokens=10**6)) == 32_768


def test_history_that_fits_is_sent_whole() -> None:
    turns = [stored("one?"), stored("two?")]
    fitted = fit_history(turns, system="S", prompt="P", window_tokens=100_000, reply_tokens=8192)
    assert [e.prompt for e in fitted.history] == ["## Question\none?", "## Question\ntwo?"]
    assert (fitted.omitted, fitted.digest, fitted.note("m", 100_000)) == (0, "", None)


def test_the_oldest_turns_are_left_out_and_their_questions_listed_for_the_model() -> None:
    turns = [stored(f"question {n}?", size=3000) for n in range(1, 11)]
    fitted = fit_history(turns, system="S", prompt="P", window_tokens=12_000, reply_tokens=2000)
    assert 0 < len(fitted.history) < 10 and fitted.omitted == 10 - len(fitted.history)
    assert fitted.history[-1].prompt.startswith("## Question\nquestion 10?"), "the newest turns are kept"
    assert "question 1?" in fitted.digest and f"question {fitted.omitted}?" in fitted.digest
    assert f"question {fitted.omitted + 1}?" not in fitted.digest
    note = fitted.note("deepseek-v4-pro", 12_000)
    assert note is not None and f"oldest {fitted.omitted} turns" in note and "deepseek-v4-pro" in note


def test_a_byte_limited_route_gets_no_more_than_its_limit() -> None:
    turns = [stored(f"q{n}?", size=20_000) for n in range(8)]
    fitted = fit_history(turns, system="S" * 1000, prompt="P" * 1000, window_tokens=1_000_000,
                         reply_tokens=8192, limit_bytes=120_000)
    sent = sum(len(e.prompt) + len(e.answer) for e in fitted.history) + 2000 + len(fitted.digest)
    assert fitted.omitted > 0 and sent < 120_000


def test_an_answer_larger_than_the_window_leaves_nothing_but_the_digest() -> None:
    fitted = fit_history([stored("huge?", size=10**6)], system="S", prompt="P", window_tokens=10_000,
                         reply_tokens=1000)
    assert (fitted.history, fitted.omitted) == ((), 1) and "huge?" in fitted.digest


def test_the_streak_is_replayed_from_the_stored_answers() -> None:
    more, done = "Need more." + SIDE.format(rec="needs_more_context"), "Done." + SIDE.format(rec="apply")
    assert streak_of([stored("a", more), stored("b", more)], limit=2) == 2
    assert streak_of([stored("a", more), stored("b", done), stored("c", more)], limit=2) == 1
    # The third request in a row ran out (context_exhausted) and started the count over.
    assert streak_of([stored("a", more)] * 3, limit=2) == 0


async def turn_call(app: App, oracle: Oracle, question: str, *, key: str = "s", reset: bool = False,
                    store: Any = None) -> dict[str, Any]:
    state = SessionState()
    ref = SessionRef("local", "deepseek", key)
    conversation = StoredConversation(store=store or app.transcripts, ref=ref,
                                      lock=app.conversations.lock(ref),
                                      window_tokens=context_window("deepseek", app.settings),
                                      label=oracle.model, run_store=app.run_store, reset=reset, state=state)
    call = Call(tool="ask", question=question, session=key, mode="ask", session_state=state)
    return (await Pipeline(app).run(call, lambda q, c, m: run_turn(oracle, q, c, m, conversation))).wire()


async def test_a_turn_is_sent_with_the_stored_turns_and_stored_after_it() -> None:
    app, oracle = App(load_settings()), Recorder()
    first = await turn_call(app, oracle, "Is the queue bounded?")
    second = await turn_call(app, oracle, "How big should it be?")
    assert (first["turn"], second["turn"]) == (1, 2)
    assert (first["session_cost_usd"], second["session_cost_usd"]) == (0.25, 0.5)
    assert oracle.requests[0].history == ()
    [earlier] = oracle.requests[1].history
    assert (earlier.prompt, earlier.answer) == ("## Question\nIs the queue bounded?", "answer 1")
    stored = app.traces.get("local", second["trace_id"])
    assert stored is not None
    events = [e for e in stored.events if e.name == "session.history"]
    assert events and events[0].attrs["sent"] == 1


async def test_reset_starts_the_conversation_over() -> None:
    app, oracle = App(load_settings()), Recorder()
    await turn_call(app, oracle, "Is the queue bounded?")
    fresh = await turn_call(app, oracle, "A new topic?", reset=True)
    assert fresh["turn"] == 1 and oracle.requests[-1].history == ()


async def test_a_long_session_is_trimmed_with_a_note_not_an_error() -> None:
    app, oracle = App(load_settings(session_context_tokens=3000)), Recorder(*(["x" * 3000] * 4))
    results = [await turn_call(app, oracle, f"Question number {n}?") for n in range(1, 5)]
    assert [r["status"] for r in results] == ["ok"] * 4
    last = oracle.requests[-1]
    assert len(last.history) < 3 and "Question number 1?" in last.system
    assert "left out" in results[-1]["note"] and results[-1]["turn"] == 4


async def test_context_exhausted_counts_turns_stored_by_an_earlier_server_process(tmp_path: Any) -> None:
    """The streak lives in the stored answers: a new App on the same store continues it."""
    more = "Send the lock code." + SIDE.format(rec="needs_more_context")
    settings = load_settings(max_needs_context=1, session_store_path=tmp_path / "sessions.db")
    first = await turn_call(App(settings), Recorder(more), "Why does this deadlock?")
    second = await turn_call(App(settings), Recorder(more), "Here is class Lock: ...")
    assert first["status"] == "ok" and first["followup"]
    assert second["status"] == "context_exhausted"


class FailingStore(TranscriptStore):
    """A transcript store whose reads or writes fail."""

    def __init__(self, path: Any, fail: str) -> None:
        super().__init__(path)
        self.fail = fail

    def turns(self, tenant: str, namespace: str, session: str) -> list[StoredSessionTurn]:
        if self.fail == "read":
            raise OSError("disk gone")
        return super().turns(tenant, namespace, session)

    def append(self, turn: SessionTurn) -> int:
        if self.fail == "write":
            raise OSError("disk full")
        return super().append(turn)


@pytest.mark.parametrize("fail", ["read", "write"])
async def test_a_failing_store_costs_the_conversation_not_the_answer(tmp_path: Any, fail: str) -> None:
    store = FailingStore(tmp_path / "sessions.db", fail)
    app = App(load_settings(), stores=GivenStores(transcripts=store))
    result = await turn_call(app, Recorder("Still answered."), "Is the queue bounded?", store=store)
    assert (result["status"], result["answer"]) == ("ok", "Still answered.")
    assert ("without it" if fail == "read" else "will not remember") in result["note"]
    events = [e.name for e in app.traces.get("local", result["trace_id"]).events]
    assert "store.error" in events


async def test_turns_of_one_session_run_one_at_a_time_and_each_sees_the_one_before() -> None:
    app = App(load_settings())

    class Slow(Recorder):
        async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
            await anyio.sleep(0.05)
            return await super().ask(request, sink)

    oracle = Slow()
    results: list[dict[str, Any]] = []

    async def one(n: int) -> None:
        results.append(await turn_call(app, oracle, f"Concurrent question {n}?"))

    async with anyio.create_task_group() as tasks:
        for n in range(3):
            tasks.start_soon(one, n)
    assert sorted(r["turn"] for r in results) == [1, 2, 3]
    assert [len(r.history) for r in oracle.requests] == [0, 1, 2]
    assert json.dumps([r["status"] for r in results]) == json.dumps(["ok"] * 3)


class Gated(Recorder):
    """A Recorder whose first answer waits for ``release`` (``asked`` is set once it is waiting)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked, self.release = anyio.Event(), anyio.Event()

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        if not self.asked.is_set():
            self.asked.set()
            await self.release.wait()
        return await super().ask(request, sink)


async def watched_turn(app: App, oracle: Oracle, question: str, waiting: anyio.Event) -> dict[str, Any]:
    """A turn of session ``s`` whose progress sets ``waiting`` when it waits for an earlier turn."""
    state = SessionState()
    ref = SessionRef("local", "deepseek", "s")
    conversation = StoredConversation(store=app.transcripts, ref=ref, lock=app.conversations.lock(ref),
                                      window_tokens=context_window("deepseek", app.settings),
                                      label=oracle.model, run_store=app.run_store,
                                      lease_seconds=app.settings.session_lease_seconds, state=state)

    async def progress(done: float, total: float | None, message: str) -> None:
        if "earlier turn" in message:
            waiting.set()

    call = Call(tool="ask", question=question, session="s", mode="ask", session_state=state)
    result = await Pipeline(app).run(call, lambda q, c, m: run_turn(oracle, q, c, m, conversation),
                                     progress=progress)
    return result.wire()


async def test_two_server_processes_on_one_store_run_a_sessions_turns_one_after_the_other(
    tmp_path: Any,
) -> None:
    """Two Apps on one transcript file (two processes, no lock in common): the second turn waits for
    the first, which is being answered, then is sent with it."""
    settings = load_settings(session_store_path=tmp_path / "sessions.db")
    first_app, second_app = App(settings), App(settings)
    first, second = Gated(), Recorder("second answer")
    results: dict[str, dict[str, Any]] = {}
    waiting = anyio.Event()

    async def run(name: str, app: App, oracle: Oracle) -> None:
        results[name] = await watched_turn(app, oracle, f"The {name} question?", waiting)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "first", first_app, first)
            await first.asked.wait()
            group.start_soon(run, "second", second_app, second)
            await waiting.wait()
            assert second.requests == [], "the second turn did not reach its model while the first ran"
            first.release.set()
    assert (results["first"]["turn"], results["second"]["turn"]) == (1, 2)
    [earlier] = second.requests[0].history
    assert earlier.prompt == "## Question\nThe first question?" and earlier.answer == "answer 1"
    events = [e.name for e in second_app.traces.get("local", results["second"]["trace_id"]).events]
    assert "session.wait" in events


async def test_a_cancelled_turn_frees_its_session_for_another_process_at_once(tmp_path: Any) -> None:
    """The lease outlives the call (60 s) by far, the other process's call may wait 5 s: it answers
    only because the cancelled turn gave the lease back."""
    settings = load_settings(session_store_path=tmp_path / "sessions.db", session_lease_seconds=60, timeout=5)
    gated = Gated()
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(watched_turn, App(settings), gated, "Abandoned?", anyio.Event())
            await gated.asked.wait()
            group.cancel_scope.cancel()
        result = await watched_turn(App(settings), Recorder("Free."), "Next?", anyio.Event())
    assert (result["status"], result["answer"], result["turn"]) == ("ok", "Free.", 1)


async def test_a_turn_that_cannot_get_its_session_in_time_is_a_timeout_naming_the_cause(
    tmp_path: Any,
) -> None:
    """Another process holds the session past the call's timeout: a structured timeout, no model asked."""
    settings = load_settings(session_store_path=tmp_path / "sessions.db", timeout=1)
    app, oracle = App(settings), Recorder()
    assert TranscriptStore(settings.session_db).lease("local", "deepseek", "s", "elsewhere", 60)
    with anyio.fail_after(30):
        result = await watched_turn(app, oracle, "Blocked?", anyio.Event())
    assert (result["status"], result["kind"]) == ("error", "timeout")
    assert "earlier turn" in result["detail"]
    assert oracle.requests == []


async def test_reset_session_waits_for_a_turn_holding_the_session_elsewhere(tmp_path: Any) -> None:
    """reset_session takes the session the way a turn does: while another process's turn holds it,
    the reset waits (here past its timeout: a structured timeout, nothing cleared); once free, it
    clears."""
    from mcp import Client

    from ask_fable.surface.server import build_server

    settings = load_settings(session_store_path=tmp_path / "sessions.db", timeout=1)
    store = TranscriptStore(settings.session_db)
    store.append(SessionTurn(namespace="deepseek", session="s", question="q", prompt="p", answer="a"))
    assert store.lease("local", "deepseek", "s", "elsewhere", 60)
    async with Client(build_server(App(settings))) as client:
        with anyio.fail_after(30):
            blocked = (await client.call_tool("reset_session", {"session": "s", "model": "deepseek"}))
            store.release("local", "deepseek", "s", "elsewhere")
            cleared = (await client.call_tool("reset_session", {"session": "s", "model": "deepseek",
                                                                "save": False}))
    assert blocked.structured_content is not None and cleared.structured_content is not None
    assert (blocked.structured_content["status"], blocked.structured_content["kind"]) == ("error", "timeout")
    assert (cleared.structured_content["cleared"], cleared.structured_content["turns"]) == (True, 1)
