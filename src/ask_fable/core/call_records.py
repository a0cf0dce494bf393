"""The records a finished call leaves behind, built from what the pipeline knows about it.

One function per record; :func:`call_records` gathers them for the recorders
(``stores/recorders.py``). Building is pure: nothing here touches a store.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from ask_fable.contract import AnswerResult
from ask_fable.core.modes.base import MemberOutcome, ModeOutcome
from ask_fable.core.tracing import TraceRecorder
from ask_fable.redact import redact
from ask_fable.stores.recorders import CallRecords
from ask_fable.stores.records import (
    AuditRecord,
    BundleMember,
    HubTurn,
    SavedAnswer,
    TraceBundle,
    TraceRecord,
)

if TYPE_CHECKING:
    from ask_fable.config import Settings
    from ask_fable.core.pipeline import Call

#: Statuses that carry an answer: only these are mirrored to the hub and saved.
ANSWERED = ("ok", "context_exhausted")


@dataclass
class FinishedCall:
    """Everything known about a call once its result is final."""

    call: Call
    trace: TraceRecorder
    result: AnswerResult
    outcome: ModeOutcome | None
    members: list[MemberOutcome]
    #: Whether the guard let the call through.
    allowed: bool
    #: The context the model was given (pasted plus resolved ``context_ref``).
    context: str
    cached: bool
    elapsed_ms: int
    project: str
    agent_id: str

    @property
    def status(self) -> str:
        """The result's status."""
        return self.result.status

    @property
    def answered(self) -> bool:
        """True for a fresh answer (not one replayed from the cache, nor an estimate without one)."""
        return self.status in ANSWERED and not self.cached and "answer" in self.result.model_fields_set

    @property
    def reply_thinking(self) -> str | None:
        """The final model's reasoning, when it gave any."""
        reply = self.outcome.reply if self.outcome else None
        return reply.thinking if reply else None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


class RawContent(TypedDict, total=False):
    """The raw text an audit line keeps when the operator opted in."""

    question: str
    context_raw: str


def audit_record(done: FinishedCall, settings: Settings) -> AuditRecord:
    """The call's audit line: hashes of the question and context, raw text only when opted in."""
    call, result, outcome = done.call, done.result, done.outcome
    members = [m.audit_record() for m in done.members]
    provider = outcome.provider if outcome else (members[-1].provider if members else None)
    raw: RawContent = {}
    if settings.audit_raw:
        raw["question"] = redact(call.question, settings.secret_values())
    if settings.audit_raw_context_effective:
        raw["context_raw"] = redact(done.context, settings.secret_values())
    mode_fields = outcome.audit.model_dump(exclude_unset=True) if outcome else {}
    return AuditRecord(
        ts=done.trace.wall_start, trace_id=done.trace.trace_id, tenant=call.tenant, tool=call.tool,
        mode=call.mode, status=done.status, kind=result.kind, allowed=done.allowed,
        stage=result.stage, model=result.model, provider=provider, session=call.hub_session,
        project=done.project, agent_id=done.agent_id, elapsed_ms=done.elapsed_ms, cached=done.cached,
        question_sha256=_sha(call.question), question_len=len(call.question),
        context_sha256=_sha(done.context), context_len=len(done.context), members=members,
        **mode_fields, **raw,
    )


def trace_record(done: FinishedCall) -> TraceRecord:
    """The call's trace: metadata and its ordered events, never content."""
    call = done.call
    return TraceRecord(
        trace_id=done.trace.trace_id, tenant=call.tenant, ts=done.trace.wall_start, tool=call.tool,
        mode=call.mode, status=done.status, kind=done.result.kind, session=call.hub_session,
        project=done.project,
        agent_id=done.agent_id, elapsed_ms=done.elapsed_ms,
        providers=sorted({m.provider for m in done.members if m.provider}),
        models=[m.model for m in done.members], cached=done.cached,
        events=done.trace.events,
    )


def trace_bundle(done: FinishedCall) -> TraceBundle:
    """The call's content for a full-mode trace (the store redacts it)."""
    return TraceBundle(
        tenant=done.call.tenant, question=done.call.question, context=done.context, result=done.result.wire(),
        reasoning=done.reply_thinking,
        members=[BundleMember(token=m.token, answer=m.answer, thinking=m.reply.thinking if m.reply else None)
                 for m in done.members],
    )


def hub_turn(done: FinishedCall) -> HubTurn:
    """The turn the session hub mirrors."""
    call, result, outcome = done.call, done.result, done.outcome
    return HubTurn(
        tenant=call.tenant, session_key=call.hub_session or call.tool, agent_id=done.agent_id,
        project=done.project,
        oracle=result.model or call.tool, status=done.status, question=call.question,
        answer=result.answer or "", elapsed_ms=done.elapsed_ms,
        sdk_session_id=outcome.reply.session_id if outcome and outcome.reply else None,
    )


def saved_answer(done: FinishedCall) -> SavedAnswer:
    """The answer as it is kept on file."""
    return SavedAnswer(
        tenant=done.call.tenant, tool=done.call.tool, question=done.call.question,
        answer=done.result.answer or "",
        thinking=done.reply_thinking, trace_id=done.trace.trace_id, model=done.result.model,
        transcript=done.outcome.transcript if done.outcome else None,
    )


def call_records(done: FinishedCall, settings: Settings) -> CallRecords:
    """Every record this call leaves, as the settings ask (bundle, hub turn, saved answer)."""
    return CallRecords(
        audit=audit_record(done, settings),
        trace=trace_record(done),
        bundle=trace_bundle(done) if settings.trace_mode == "full" else None,
        hub_turn=hub_turn(done) if done.answered and settings.hub else None,
        answer=saved_answer(done) if done.answered and settings.save_answers else None,
    )
