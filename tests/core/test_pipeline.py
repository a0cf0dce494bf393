"""The request lifecycle: context, guard, cache, mode, normalize, persist — with a scripted oracle."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.config import load_settings
from ask_fable.core.app import App
from ask_fable.core.conversations import SessionState
from ask_fable.core.modes.base import ModeContext, ModeOutcome
from ask_fable.core.modes.single import run_single
from ask_fable.core.pipeline import Call, Pipeline
from ask_fable.errors import AskFableError, NotConfigured, UpstreamError
from ask_fable.values import Usage

SIDE = '\n```sidecar\n{{"recommendation": "{rec}", "confidence": "high", "needs_context": {needs}}}\n```'


class ScriptedOracle(Oracle):
    """Answers from a list of scripted texts or errors, recording every request."""

    token, provider, model, family = "scripted", "scripted", "scripted-1", "test"

    def __init__(self, *replies: str | AskFableError, thinking: str | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[OracleRequest] = []
        self.thinking = thinking

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        self.requests.append(request)
        item = self.replies.pop(0)
        if isinstance(item, AskFableError):
            raise item
        return Reply(
            text=item,
            model=self.model,
            provider=self.provider,
            thinking=self.thinking,
            usage=Usage(input_tokens=10, output_tokens=5, cost_usd=0.001),
        )


def answer(text: str = "Use a mutex.", rec: str = "apply", needs: list[str] | None = None) -> str:
    return text + SIDE.format(rec=rec, needs=json.dumps(needs or []))


async def run(
    app: App, oracle: Oracle, question: str = "Why does this deadlock?", **call_kw: Any
) -> dict[str, Any]:
    """The call's result as it goes on the wire."""
    call = Call(tool="ask_test", question=question, **call_kw)
    return (await Pipeline(app).run(call, lambda q, c, m: run_single(oracle, q, c, m))).wire()


def audit_lines(app: App) -> list[dict[str, Any]]:
    return list(app.audit.iter_records())


async def test_ok_answer_is_normalized_and_persisted() -> None:
    app = App(load_settings())
    oracle = ScriptedOracle(answer())
    result = await run(app, oracle, context="lock order: a then b")
    assert result["status"] == "ok"
    assert result["answer"] == "Use a mutex."
    assert result["sidecar"] == {"recommendation": "apply", "confidence": "high", "needs_context": []}
    assert result["usage"]["input_tokens"] == 10 and result["cost_usd"] == 0.001
    assert result["telemetry"]["status"] == "ok"
    assert "lock order: a then b" in oracle.requests[0].prompt
    assert "sidecar" in oracle.requests[0].system
    [record] = audit_lines(app)
    assert record["trace_id"] == result["trace_id"] and record["allowed"] is True
    assert "question" not in record and len(record["question_sha256"]) == 64
    assert record["members"][0]["status"] == "ok"
    trace = app.traces.get("local", result["trace_id"])
    assert trace is not None
    names = [e.name for e in trace.events]
    assert names[0] == "request" and names[-1] == "response"
    assert names.index("guard") < names.index("provider.start") < names.index("provider.end")
    assert "Why does this deadlock" not in trace.model_dump_json()


async def test_guard_refusal_calls_no_model() -> None:
    app = App(load_settings())
    oracle = ScriptedOracle(answer())
    result = await run(app, oracle, question="write a keylogger please")
    assert result["status"] == "refused" and result["stage"] == "guard"
    assert "ask_fable_help" in result["how_to_reframe"]
    assert oracle.requests == []
    assert audit_lines(app)[0]["allowed"] is False


async def test_model_scope_refusal_becomes_status_refused() -> None:
    app = App(load_settings())
    result = await run(app, ScriptedOracle("REFUSED: asks for attack tooling"))
    assert result["status"] == "refused" and result["stage"] == "model"
    assert result["reason"] == "asks for attack tooling"


@pytest.mark.parametrize(
    ("error", "kind"),
    [(NotConfigured("set ASK_FABLE_X"), "not_configured"), (UpstreamError("boom"), "upstream_error")],
)
async def test_oracle_failures_are_structured(error: AskFableError, kind: str) -> None:
    result = await run(App(load_settings()), ScriptedOracle(error))
    assert result["status"] == "error" and result["kind"] == kind and result["detail"]
    assert result["trace_id"]


async def test_error_detail_never_carries_a_configured_key() -> None:
    settings = load_settings(glm_api_key="sk-planted-secret-123456")
    result = await run(App(settings), ScriptedOracle(UpstreamError("401 for key sk-planted-secret-123456")))
    assert "sk-planted-secret-123456" not in json.dumps(result)


async def test_a_bug_in_a_mode_is_an_internal_error_without_traceback() -> None:
    async def broken(q: str, c: str, m: ModeContext) -> ModeOutcome:
        raise KeyError("oops")

    result = (await Pipeline(App(load_settings())).run(Call(tool="t", question="What breaks here?"),
                                                       broken)).wire()
    assert result["status"] == "error" and result["kind"] == "internal"
    assert "Traceback" not in result["detail"] and "KeyError" in result["detail"]


async def test_all_missing_context_ref_asks_for_context_without_a_model_call() -> None:
    app = App(load_settings())
    app.context_store.write("local", "auth-module", "def login(): ...", "")
    oracle = ScriptedOracle(answer())
    result = await run(app, oracle, context_ref="auth-modul")
    assert result["status"] == "needs_context"
    assert result["context_ref_missing"] == ["auth-modul"]
    assert "auth-module" in result["did_you_mean"]
    assert oracle.requests == []


async def test_context_ref_pulls_stored_context_in() -> None:
    app = App(load_settings())
    app.context_store.write("local", "schema", "CREATE TABLE users (id int)", "")
    oracle = ScriptedOracle(answer())
    result = await run(app, oracle, context_ref=["schema", "nope"])
    assert result["status"] == "ok"
    assert result["context_ref_resolved"] == ["schema"] and result["context_ref_missing"] == ["nope"]
    assert "CREATE TABLE users" in oracle.requests[0].prompt


async def test_identical_single_shot_is_served_from_cache() -> None:
    app = App(load_settings())
    oracle = ScriptedOracle(answer(), answer("second"))
    first = await run(app, oracle, cache_models=["scripted"])
    second = await run(app, oracle, cache_models=["scripted"])
    assert len(oracle.requests) == 1
    assert second["cached"] is True and second["answer"] == first["answer"]
    assert second["cache_age_s"] >= 0 and "cache" in second["note"]
    assert second["trace_id"] != first["trace_id"]
    uncached = await run(
        App(load_settings(cache=False)), ScriptedOracle(answer("fresh")), cache_models=["scripted"]
    )
    assert uncached.get("cached") is None


async def test_followup_and_context_exhausted_after_repeated_requests_for_more() -> None:
    app = App(load_settings(max_needs_context=1))
    state = SessionState()
    more = answer("Need the caller.", "needs_more_context", ["handler.py", "the stack trace"])
    oracle = ScriptedOracle(more, more)
    first = await run(app, oracle, context="see handler.py", session_state=state)
    assert first["status"] == "ok"
    assert first["followup"]["needs_context"] == ["handler.py", "the stack trace"]
    assert first["followup"]["likely_already_pasted"] == ["handler.py"]
    second = await run(app, oracle, session_state=state)
    assert second["status"] == "context_exhausted" and second["answer"] == "Need the caller."


async def test_raw_audit_and_returned_thinking_are_opt_in() -> None:
    app = App(load_settings(audit_raw=True, audit_raw_context=False, return_thinking=True, thinking_chars=5))
    result = await run(app, ScriptedOracle(answer(), thinking="abcdefghij"), context="secret code")
    record = audit_lines(app)[0]
    assert record["question"] == "Why does this deadlock?"
    assert "context_raw" not in record
    assert result["thinking"] == "abcde"


async def test_progress_is_reported_to_the_caller() -> None:
    seen: list[str] = []

    async def progress(done: float, total: float | None, message: str) -> None:
        seen.append(message)

    app = App(load_settings())
    call = Call(tool="t", question="Why does this deadlock?")
    oracle = ScriptedOracle(answer())
    await Pipeline(app).run(call, lambda q, c, m: run_single(oracle, q, c, m), progress=progress)
    assert seen and "scripted" in seen[0]


async def test_oracle_that_ignores_its_deadline_is_cut_off() -> None:
    class Hanging(ScriptedOracle):
        async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
            await anyio.sleep(30)
            raise AssertionError("unreachable")

    app = App(load_settings(timeout=0.2))
    with anyio.fail_after(5):
        result = await run(app, Hanging())
    assert result["status"] == "error" and result["kind"] == "timeout"


async def test_a_crashing_backend_is_an_upstream_error_not_an_internal_one() -> None:
    class Crashing(ScriptedOracle):
        async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
            raise ValueError("malformed base url")

    result = await run(App(load_settings()), Crashing())
    assert result["status"] == "error" and result["kind"] == "upstream_error"
    assert "ValueError" in result["detail"]


async def test_refs_are_echoed_when_the_call_fails() -> None:
    app = App(load_settings())
    app.context_store.write("local", "schema", "CREATE TABLE t (id int)", "")
    result = await run(app, ScriptedOracle(UpstreamError("boom")), context_ref=["schema", "gone"])
    assert result["status"] == "error"
    assert result["context_ref_resolved"] == ["schema"] and result["context_ref_missing"] == ["gone"]


async def test_a_broken_cache_costs_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    app = App(load_settings())

    def broken(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(app.cache, "get", broken)
    monkeypatch.setattr(app.cache, "put", broken)
    result = await run(app, ScriptedOracle(answer()), cache_models=["scripted"])
    assert result["status"] == "ok" and result["answer"] == "Use a mutex."


async def test_a_cache_hit_does_not_replay_the_first_calls_echo() -> None:
    """The first call read its context through context_ref under one session; a repeat of the same
    question and context pasted directly under another session is answered from the cache, with its
    own session and trace and none of the first call's context_ref report."""
    app = App(load_settings())
    app.context_store.write("local", "schema", "CREATE TABLE t (id int)", "")
    oracle = ScriptedOracle(answer())
    first = await run(app, oracle, context_ref="schema", session="first", echo_session=True,
                      cache_models=["scripted"])
    assert first["status"] == "ok" and first["context_ref_resolved"] == ["schema"]
    resolved = "### context: schema\nCREATE TABLE t (id int)"
    second = await run(app, oracle, context=resolved, session="second", echo_session=True,
                       cache_models=["scripted"])
    assert second["cached"] is True and len(oracle.requests) == 1
    assert second["answer"] == first["answer"] == "Use a mutex."
    assert "context_ref_resolved" not in second and "context_ref_missing" not in second
    assert second["session"] == "second"
    assert second["telemetry"]["status"] == "ok" and second["trace_id"] != first["trace_id"]


async def test_a_refused_half_open_probe_frees_the_probe_slot() -> None:
    from ask_fable.backends.breaker import CircuitBreaker
    from ask_fable.core.tracing import Console, TraceRecorder
    from tests.fakes.clock import ManualClock

    clock = ManualClock()
    breaker = CircuitBreaker(window=5, threshold=0.5, cooldown=10, clock=clock)
    oracle = ScriptedOracle("REFUSED: not a software question", answer())
    for _ in range(5):
        breaker.record(oracle.breaker_key, False)
    clock.advance(11)
    mctx = ModeContext(load_settings(), TraceRecorder("t"), Console(True, False), breaker=breaker)
    first = await mctx.call_oracle(oracle, mctx.request("system", "prompt"))
    assert first.status == "refused"
    second = await mctx.call_oracle(oracle, mctx.request("system", "prompt"))
    assert second.status == "ok"
    assert breaker.state(oracle.breaker_key) == "closed"


async def test_a_call_keeps_the_settings_it_started_with_and_a_config_change_applies_from_the_next() -> None:
    """The config file changing while a call runs does not change that call halfway: its records
    carry the settings it started with; the next call reads the new file."""
    from ask_fable.config import update_config_file

    update_config_file({"agent_id": "before"})
    app = App()

    class Reconfiguring(ScriptedOracle):
        async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
            update_config_file({"agent_id": "after"})
            return await super().ask(request, sink)

    first = await run(app, Reconfiguring(answer()))
    second = await run(app, ScriptedOracle(answer()))
    assert first["status"] == second["status"] == "ok"
    agents = {line["trace_id"]: line["agent_id"] for line in audit_lines(app)}
    assert agents == {first["trace_id"]: "before", second["trace_id"]: "after"}
    trace = app.traces.get("local", first["trace_id"])
    assert trace is not None and trace.agent_id == "before"


async def test_the_pipeline_returns_the_tools_contract_model() -> None:
    """Every outcome is the tool's result model, nested parts included, not a dict checked later."""
    from ask_fable.contract import AnswerResult, Telemetry
    from ask_fable.values import Sidecar

    app = App(load_settings())
    call = Call(tool="ask_test", question="Why does this deadlock?")
    oracle = ScriptedOracle(answer())
    result = await Pipeline(app).run(call, lambda q, c, m: run_single(oracle, q, c, m))
    assert type(result) is AnswerResult and result.status == "ok"
    assert isinstance(result.sidecar, Sidecar) and result.sidecar.recommendation == "apply"
    assert isinstance(result.telemetry, Telemetry) and isinstance(result.usage, Usage)
    broken = ScriptedOracle(UpstreamError("boom"))
    failed = await Pipeline(app).run(Call(tool="ask_test", question="Why does this deadlock?"),
                                     lambda q, c, m: run_single(broken, q, c, m))
    assert type(failed) is AnswerResult and failed.status == "error" and failed.kind == "upstream_error"


def _council_runner(calls: list[str]) -> Any:
    from ask_fable.contract import CouncilFields, SourceEntry

    async def runner(question: str, context: str, mctx: ModeContext) -> ModeOutcome:
        calls.append(question)
        fields = CouncilFields(mode="council", synthesizer=None, quorum="2/2", consensus="strong",
                               sources=[SourceEntry(model="a-1", status="ok", token="a"),
                                        SourceEntry(model="b-1", status="ok", token="b")])
        return ModeOutcome(text=answer(), model="a-1", fields=fields)

    return runner


async def test_a_council_call_returns_its_council_model_and_replays_it_from_the_cache() -> None:
    """A council's result is a CouncilResult; its cached JSON comes back validated as one, with the
    council's meaningful null (``synthesizer``) kept and the first call's per-call fields left out."""
    from ask_fable.contract import CouncilResult

    app, calls = App(load_settings()), list[str]()
    runner = _council_runner(calls)

    def council() -> Call:
        return Call(tool="ask_council", question="Which lock?", mode="council", result=CouncilResult,
                    cache_models=["a", "b"])

    first = await Pipeline(app).run(council(), runner)
    second = await Pipeline(app).run(council(), runner)
    assert type(first) is CouncilResult and type(second) is CouncilResult and len(calls) == 1
    assert second.cached is True and first.cached is None
    assert second.sources == first.sources and second.quorum == "2/2" and second.sidecar == first.sidecar
    wire = second.wire()
    assert wire["synthesizer"] is None and wire["trace_id"] != first.trace_id
    per_call = {"trace_id", "telemetry", "cached", "cache_age_s", "note", "cost_usd", "saved"}
    assert {k: v for k, v in wire.items() if k not in per_call} == \
        {k: v for k, v in first.wire().items() if k not in per_call}


async def test_a_cached_entry_that_no_longer_fits_the_contract_is_a_miss() -> None:
    """The cache holds JSON from outside the process (an older release, another replica): an entry that
    does not validate as the tool's result is asked again, never returned."""
    from ask_fable.stores.cache import cache_key

    app = App(load_settings())
    question = "Why does this deadlock?"
    key = cache_key("ask_test", ["scripted"], question, "", {})
    app.cache.put("local", key, "ask_test", {"status": "ok", "answer": "stale", "no_such_field": 1})
    oracle = ScriptedOracle(answer())
    result = await run(app, oracle, question, cache_models=["scripted"])
    assert result["answer"] == "Use a mutex." and "cached" not in result and len(oracle.requests) == 1
    again = await run(app, oracle, question, cache_models=["scripted"])
    assert again["cached"] is True and again["answer"] == "Use a mutex."
