"""What a finished call leaves behind: each record reaches its store, and a failing store costs only
its own record — never another store's, never the caller's answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from ask_fable.config import Settings, load_settings
from ask_fable.core.app import App
from ask_fable.core.modes.base import ModeOutcome
from ask_fable.core.modes.single import run_single
from ask_fable.core.pipeline import Call, Pipeline
from ask_fable.stores.interfaces import GivenStores
from ask_fable.stores.records import ModeAudit
from tests.fakes.fake_oracle import FakeOracle, sidecar_block
from tests.fakes.memory_stores import Failing

SECRET = "glm-configured-secret-4242"
ANSWER = "Take the locks in one global order."


def _settings() -> Settings:
    return load_settings(quiet=False, trace_mode="full", save=True, glm_api_key=SECRET)


async def _ask(app: App) -> dict[str, Any]:
    oracle = FakeOracle("glm")
    oracle.enqueue(f"{ANSWER}\n\n{sidecar_block('apply')}")
    call = Call(tool="ask_glm", question="Why does this deadlock under load?", session="locks")
    return (await Pipeline(app).run(call, lambda q, c, m: run_single(oracle, q, c, m))).wire()


def _written(real: App, result: dict[str, Any]) -> dict[str, bool]:
    """Which of the call's records the real stores hold."""
    trace_id = result["trace_id"]
    audit_ids = {line.get("trace_id") for line in real.audit.iter_records()}  # type: ignore[attr-defined]
    hub = real.hub
    assert hub is not None
    return {
        "audit": trace_id in audit_ids,
        "trace": real.traces.get("local", trace_id) is not None,
        "trace bundle": real.traces.bundle_path(trace_id).is_file(),  # type: ignore[attr-defined]
        "hub": [t.answer for t in hub.peek("local", "locks")] == [ANSWER],
        "saved answer": "saved" in result and Path(result["saved"]).is_file(),
    }


async def test_every_record_reaches_its_store() -> None:
    app = App(_settings())
    result = await _ask(app)
    assert result["status"] == "ok" and result["answer"] == ANSWER
    assert all(_written(app, result).values())


# (the App's store, the method that fails, the record that is lost)
FAILURES = [
    ("audit", "append", "audit"),
    ("traces", "record", "trace"),
    ("traces", "write_bundle", "trace bundle"),
    ("hub", "record_turn", "hub"),
    ("answers", "save_answer", "saved answer"),
]


@pytest.mark.parametrize(("store", "method", "lost"), FAILURES)
async def test_a_failing_store_loses_only_its_own_record(
    store: str, method: str, lost: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = _settings()
    real = App(settings)
    error = OSError(f"disk full while writing near {SECRET}")
    app = App(settings, stores=GivenStores(**{store: Failing(getattr(real, store), error, method)}))

    result = await _ask(app)

    assert result["status"] == "ok" and result["answer"] == ANSWER
    written = _written(real, result)
    assert written.pop(lost) is False
    assert all(written.values()), written
    lines = [line for line in capsys.readouterr().err.splitlines() if "could not write" in line]
    assert len(lines) == 1
    assert f"the {lost} record" in lines[0] and result["trace_id"][-6:] in lines[0]
    assert "[REDACTED]" in lines[0] and SECRET not in lines[0] and "Traceback" not in lines[0]
    if lost != "trace":  # the trace, written last, says which store failed
        trace = real.traces.get("local", result["trace_id"])
        assert trace is not None
        errors = [e.attrs for e in trace.events if e.name == "store.error"]
        assert errors == [{"store": lost, "error": "OSError"}]


async def test_every_store_failing_still_answers(capsys: pytest.CaptureFixture[str]) -> None:
    settings = _settings()
    real = App(settings)
    methods: dict[str, list[str]] = {}
    for store, method, _ in FAILURES:
        methods.setdefault(store, []).append(method)
    error = RuntimeError("no")
    broken = {store: Failing(getattr(real, store), error, *names) for store, names in methods.items()}
    app = App(settings, stores=GivenStores(**broken))
    result = await _ask(app)
    assert result["status"] == "ok" and result["answer"] == ANSWER and "saved" not in result
    assert not any(_written(real, result).values())
    assert capsys.readouterr().err.count("could not write") == len(FAILURES)


async def test_audit_lines_keep_their_shape() -> None:
    """Every line has the call's fields (nulls included), ``ts`` first; raw text only when opted in."""
    app = App(load_settings())
    result = await _ask(app)
    raw = Path(app.settings.audit_file).read_text().splitlines()
    assert len(raw) == 1 and raw[0].startswith('{"ts":')
    line = json.loads(raw[0])
    assert line["trace_id"] == result["trace_id"] and line["kind"] is None and line["stage"] is None
    assert line["tenant"] == "local"
    assert set(line) == {
        "ts", "trace_id", "tenant", "tool", "mode", "status", "kind", "allowed", "stage", "model", "provider",
        "session", "project", "agent_id", "elapsed_ms", "cached", "question_sha256", "question_len",
        "context_sha256", "context_len", "members",
    }
    assert line["members"] == [{"token": "glm", "provider": "glm", "model": "glm-model", "status": "ok",
                                "kind": None, "elapsed_ms": line["members"][0]["elapsed_ms"], "role": None,
                                "cost_usd": None, "cost_source": "unknown"}]


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
async def test_records_that_cannot_be_built_cost_the_caller_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A mode bug that leaves a record invalid (here an audit quorum that is not text) loses the
    records of that call, one console line says so, and the answer still comes back."""
    app = App(_settings())

    async def buggy_mode(question: str, context: str, mctx: Any) -> ModeOutcome:
        text = f"{ANSWER}\n\n{sidecar_block('apply')}"
        return ModeOutcome(text=text, model="glm-model", provider="glm",
                           audit=ModeAudit.model_construct(answered=[1]))

    call = Call(tool="ask_glm", question="Why does this deadlock?")
    result = (await Pipeline(app).run(call, buggy_mode)).wire()
    assert result["status"] == "ok" and result["answer"] == ANSWER
    lines = [line for line in capsys.readouterr().err.splitlines() if "could not write" in line]
    assert len(lines) == 1 and "this call's records" in lines[0] and result["trace_id"][-6:] in lines[0]
    assert app.traces.get("local", result["trace_id"]) is None


class _RefusingAudit:
    """A real audit trail that refuses one question's line, and so every group that holds it."""

    def __init__(self, inner: Any, refused_sha: str) -> None:
        self._inner, self._refused = inner, refused_sha
        self.group_sizes: list[int] = []

    def _check(self, records: Any) -> None:
        if any(record.question_sha256 == self._refused for record in records):
            raise OSError("audit volume refused a line")

    def append(self, record: Any) -> None:
        self._check([record])
        self._inner.append(record)

    def append_many(self, records: Any) -> None:
        self.group_sizes.append(len(records))
        self._check(records)
        self._inner.append_many(records)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_calls_finishing_together_are_written_as_one_group_and_a_failure_stays_with_its_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Concurrent calls' audit lines go in grouped appends; when a group's append fails, each line is
    written on its own, so only the call whose line fails loses it (one console line, its trace says
    so) and every call still gets its answer."""
    import hashlib

    settings = load_settings(quiet=False, save=False)
    real = App(settings)
    questions = [f"Call {i}: why does this deadlock under load?" for i in range(12)]
    refused = hashlib.sha256(questions[5].encode()).hexdigest()
    audit = _RefusingAudit(real.audit, refused)
    app = App(settings, stores=GivenStores(audit=audit))
    results: dict[int, dict[str, Any]] = {}

    async def one(i: int) -> None:
        oracle = FakeOracle("glm")
        oracle.enqueue(f"{ANSWER}\n\n{sidecar_block('apply')}")
        call = Call(tool="ask_glm", question=questions[i])
        results[i] = (await Pipeline(app).run(call, lambda q, c, m: run_single(oracle, q, c, m))).wire()

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            for i in range(len(questions)):
                group.start_soon(one, i)

    assert all(r["status"] == "ok" and r["answer"] == ANSWER for r in results.values())
    assert any(size > 1 for size in audit.group_sizes), audit.group_sizes  # calls were grouped
    audited = {line["trace_id"] for line in real.audit.iter_records()}  # type: ignore[attr-defined]
    assert audited == {r["trace_id"] for i, r in results.items() if i != 5}
    lines = [line for line in capsys.readouterr().err.splitlines() if "could not write" in line]
    assert len(lines) == 1 and "the audit record" in lines[0] and results[5]["trace_id"][-6:] in lines[0]
    for i, result in results.items():
        trace = real.traces.get("local", result["trace_id"])
        assert trace is not None  # every trace written, in groups too
        errors = [e.attrs for e in trace.events if e.name == "store.error"]
        assert errors == ([{"store": "audit", "error": "OSError"}] if i == 5 else [])
