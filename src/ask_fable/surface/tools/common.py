"""Argument models and the runner shared by every single-model tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field

from ask_fable.backends.base import Effort, Oracle
from ask_fable.core.modes.base import ModeContext, ModeOutcome
from ask_fable.core.modes.single import run_single
from ask_fable.core.pipeline import Call
from ask_fable.errors import AskFableError
from ask_fable.surface.context import ToolContext

QUESTION = Field(description="One focused engineering question.")
CONTEXT = Field("", description="The real code, errors and constraints.")
CONTEXT_REF = Field(None, description="context_write key(s) to add to the context.")
EFFORT = Field(None, description="quick, standard or deep; default from the settings.")


class AskArgs(BaseModel):
    """The arguments every single-shot ask tool takes."""

    model_config = ConfigDict(extra="forbid")

    question: str = QUESTION
    context: str = CONTEXT
    context_ref: str | list[str] | None = CONTEXT_REF


class AskWithEffortArgs(AskArgs):
    """Single-shot ask with a reasoning effort preset."""

    effort: Effort | None = EFFORT


class AskWithModelArgs(AskWithEffortArgs):
    """Single-shot ask where the caller may pick the provider's model."""

    model: str | None = Field(None, description="The provider's model id; default from the settings.")


async def run_single_tool(
    ctx: ToolContext,
    tool: str,
    args: AskArgs,
    build_oracle: Callable[[Any], Oracle],
    *,
    effort: str | None = None,
) -> dict[str, Any]:
    """Run one oracle through the pipeline (guard, cache, audit, trace) and return its result.

    An oracle that cannot even be built (a bad model id, a bad effort) still goes through the
    pipeline, so its error is audited and carries a ``trace_id`` like every other outcome.
    ``effort`` keys the cache; only a preset travels in the request, since a backend's own level
    (grok's ``medium``, kimi's ``max``) is carried by the oracle it was built into.
    """
    preset = effort if effort in get_args(Effort) else None
    try:
        oracle: Oracle | None = build_oracle(ctx.settings)
        failure: AskFableError | None = None
    except AskFableError as exc:
        oracle, failure = None, exc

    async def runner(question: str, context: str, mctx: ModeContext) -> ModeOutcome:
        if oracle is None:
            assert failure is not None
            raise failure
        return await run_single(oracle, question, context, mctx, effort=preset)

    call = Call(
        tool=tool,
        question=args.question,
        context=args.context,
        context_ref=args.context_ref,
        mode="single",
        cache_models=[oracle.token] if oracle else [],
        cache_extra={"model": oracle.model if oracle else None, "effort": effort},
    )
    return await ctx.run(call, runner)
