"""Argument models and the runner shared by every single-model tool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ask_fable.backends.base import Effort, Oracle
from ask_fable.core.modes.single import run_single
from ask_fable.core.pipeline import Call
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
    """Run one oracle through the pipeline (guard, cache, audit, trace) and return its result."""
    oracle = build_oracle(ctx.settings)
    call = Call(
        tool=tool,
        question=args.question,
        context=args.context,
        context_ref=args.context_ref,
        mode="single",
        cache_models=[oracle.token],
        cache_extra={"model": oracle.model, "effort": effort},
    )
    return await ctx.run(call, lambda q, c, m: run_single(oracle, q, c, m, effort=effort))  # type: ignore[arg-type]
