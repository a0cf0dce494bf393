"""The single-model mode: one oracle, one answer."""

from __future__ import annotations

from ask_fable.backends.base import Effort, Oracle
from ask_fable.core.modes.base import ModeContext, ModeOutcome, outcome_error
from ask_fable.core.prompts import system_prompt, user_prompt


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
    await mctx.progress(0, 1, f"asking {oracle.token}")
    request = mctx.request(
        system_prompt(),
        user_prompt(question, context),
        timeout=timeout,
        effort=effort,
    )
    outcome = await mctx.call_oracle(oracle, request)
    await mctx.progress(1, 1, f"{oracle.token} {outcome.status}")
    if outcome.status not in ("ok", "refused") or outcome.reply is None:
        raise outcome_error(outcome)
    return ModeOutcome(
        text=outcome.reply.text,
        model=outcome.model,
        reply=outcome.reply,
        provider=oracle.provider,
    )
