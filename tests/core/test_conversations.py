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
    Conversation,
    SessionRef,
    context_window,
    fit_history,
    namespace_for,
    streak_of,
)
from ask_fable.core.modes.single import run_turn
from ask_fable.core.pipeline import Call, Pipeline
from ask_fable.stores.interfaces import GivenStores
from ask_fable.stores.records import SessionTurn
from ask_fable.stores.transcripts import TranscriptStore
from ask_fable.stores.views import StoredSessionTurn
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
    return StoredSessionTurn(number=1, question=question, prompt=f"## Question\n{question}" + "x" * size,
                             answer=answer, thinking=None, model="m", cost_usd=None, ts=0.0)


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
    state: dict[str, Any] = {"needs_context_streak": 0}
    ref = SessionRef("local", "deepseek", key)
    conversation = Conversation(store=store or app.transcripts, ref=ref, lock=app.conversations.lock(ref),
                                window_tokens=context_window("deepseek", app.settings), label=oracle.model,
                                run_store=app.run_store, reset=reset, state=state)
    call = Call(tool="ask", question=question, session=key, mode="ask", session_state=state)
    return await Pipeline(app).run(call, lambda q, c, m: run_turn(oracle, q, c, m, conversation))


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
    events = [e for e in stored["events"] if e["name"] == "session.history"]
    assert events and events[0]["attrs"]["sent"] == 1


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
    events = [e["name"] for e in app.traces.get("local", result["trace_id"])["events"]]
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
