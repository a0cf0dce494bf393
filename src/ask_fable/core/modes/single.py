"""The single-model modes: one oracle, one answer; or one turn of a kept conversation with it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from ask_fable.backends.base import Effort, Oracle, OracleRequest
from ask_fable.contract import TurnFields
from ask_fable.core.conversations import StoredConversation, fit_history, streak_of
from ask_fable.core.modes.base import ModeContext, ModeOutcome, outcome_error
from ask_fable.core.prompts import system_prompt, user_prompt
from ask_fable.stores.records import SessionTurn, StoredSessionTurn

P = ParamSpec("P")
T = TypeVar("T")


async def run_single(
    oracle: Oracle,
    question: str,
    context: str,
    mctx: ModeContext,
    *,
    effort: Effort | None = None,
    timeout: float | None = None,
) -> ModeOutcome:
    """Ask ``oracle`` once; its failure becomes the call's structured error."""
    request = mctx.request(system_prompt(), user_prompt(question, context), timeout=timeout, effort=effort)
    return await _answer(oracle, request, mctx)


async def _answer(oracle: Oracle, request: OracleRequest, mctx: ModeContext) -> ModeOutcome:
    await mctx.progress(0, 1, f"asking {oracle.token}", echo=False)
    outcome = await mctx.call_oracle(oracle, request)
    await mctx.progress(1, 1, f"{oracle.token} {outcome.status}", echo=False)
    if outcome.status not in ("ok", "refused") or outcome.reply is None:
        raise outcome_error(outcome)
    return ModeOutcome(
        text=outcome.reply.text,
        model=outcome.model,
        reply=outcome.reply,
        provider=oracle.provider,
    )


async def run_turn(
    oracle: Oracle, question: str, context: str, mctx: ModeContext, conversation: StoredConversation
) -> ModeOutcome:
    """One turn of ``conversation`` with ``oracle``: its stored turns, fitted into the model's window,
    go with the question, and the answer is stored as the session's next turn.

    Turns of one session run one at a time, across every process on the same store
    (:meth:`StoredConversation.hold`); time spent waiting for an earlier turn counts against the call's
    timeout. The result adds ``turn`` (the session's turn count),
    ``session_cost_usd`` (when a cost was reported) and a ``note`` when earlier turns were left out
    or the store failed; a store that fails never costs the caller the answer.
    """
    store, ref = conversation.store, conversation.ref
    notes: list[str] = []
    started = time.monotonic()
    timeout = mctx.settings.timeout

    async def waiting() -> None:
        mctx.trace.event("session.wait")
        await mctx.progress(0, 1, "waiting for this session's earlier turn to finish", echo=False)

    async with conversation.hold(timeout, waiting):
        if conversation.reset:
            await _store_op(conversation, mctx, notes, "clear", store.clear, ref.tenant, ref.namespace,
                            ref.key)
            if conversation.forget_warm is not None:
                await conversation.forget_warm()
        turns: list[StoredSessionTurn] = await _store_op(
            conversation, mctx, notes, "read", store.turns, ref.tenant, ref.namespace, ref.key) or []
        conversation.state.needs_context_streak = streak_of(turns, mctx.settings.max_needs_context)
        prompt, system = user_prompt(question, context), system_prompt()
        # What is left of the call's time after waiting for the session (a request needs some).
        request = mctx.request(system, prompt, timeout=max(1.0, timeout - (time.monotonic() - started)))
        fitted = fit_history(turns, system=system, prompt=prompt, window_tokens=conversation.window_tokens,
                             reply_tokens=oracle.reply_tokens(request), limit_bytes=oracle.prompt_limit_bytes)
        mctx.trace.event("session.history", turns=len(turns), sent=len(fitted.history),
                         omitted=fitted.omitted)
        request = request.model_copy(update={"history": fitted.history, "system": system + fitted.digest})
        outcome = await _answer(oracle, request, mctx)
        reply = outcome.reply
        assert reply is not None
        # Priced like the call's own cost_usd: reported, else computed from its tokens.
        cost = mctx.members[-1].cost_usd if mctx.members else None
        if reply.note:
            notes.append(reply.note)
        record = SessionTurn(tenant=ref.tenant, namespace=ref.namespace, session=ref.key, question=question,
                             prompt=prompt, answer=reply.text, thinking=reply.thinking, model=reply.model,
                             cost_usd=cost)
        count = await _store_op(conversation, mctx, notes, "write", store.append, record)
    costs = [turn.cost_usd for turn in turns if turn.cost_usd is not None]
    if cost is not None:
        costs.append(cost)
    note = fitted.note(conversation.label, conversation.window_tokens)
    outcome.fields = TurnFields(
        turn=count if count is not None else len(turns) + 1,
        session_cost_usd=round(sum(costs), 10) if costs else None,
        note=" ".join([*([note] if note else []), *notes]) if note or notes else None,
    )
    return outcome


async def _store_op(conversation: StoredConversation, mctx: ModeContext, notes: list[str], what: str,
                    op: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """Run one transcript store operation; a failure becomes a note, never the caller's loss
    (``None`` is returned)."""
    try:
        with mctx.trace.step(None, f"transcripts.{what}"):
            return await conversation.run_store(op, *args, **kwargs)
    except Exception as exc:
        mctx.trace.event("store.error", store="transcripts", op=what, error=type(exc).__name__)
        mctx.console.line(mctx.trace.trace_id,
                          f"could not {what} the session transcript ({type(exc).__name__})")
        notes.append({
            "read": "The stored conversation could not be read, so this turn was answered without it.",
            "write": "This turn could not be stored: the next turn of this session will not remember it.",
            "clear": "The stored conversation could not be cleared before this turn.",
        }[what])
        return None
