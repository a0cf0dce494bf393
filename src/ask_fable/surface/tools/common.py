"""Argument models, the runner and the declaration shared by every single-model tool."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ask_fable.access import ASKS
from ask_fable.backends.base import Effort, Oracle, is_effort
from ask_fable.contract import AnswerResult
from ask_fable.core.estimate import PlannedCall
from ask_fable.core.modes.base import ModeContext, ModeOutcome
from ask_fable.core.modes.single import run_single
from ask_fable.core.pipeline import Call
from ask_fable.errors import AskFableError, BadArgs
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec

if TYPE_CHECKING:
    from ask_fable.config import Settings

QUESTION = Field(description="One focused engineering question.")
CONTEXT = Field("", description="The real code, errors and constraints.")
CONTEXT_REF = Field(None, description="context_write key(s) to add to the context.")
EFFORT = Field(None, description="quick, standard or deep; default from the settings.")
#: ``estimate`` and ``max_cost_usd`` carry no description in the listing (every reasoning tool takes
#: them, and each listed byte costs the client context): ask_fable_help(topic="sidecar") explains them.
#: estimate=true: the call's expected cost, no model called.
ESTIMATE = Field(False)
#: The most dollars the call may cost at its models' max_tokens, else bad_args (0: no cap).
MAX_COST_USD = Field(0.0, ge=0)
#: The ``tenant`` argument of the tools that read (or clean up) stored items.
TENANT = Field(None, description='Admin keys only: another tenant\'s, or "*" for every tenant\'s.')

Given = TypeVar("Given", bound=str | list[str] | None)


async def save_settings(ctx: ToolContext, updates: dict[str, Any]) -> str:
    """Save what a ``configure_*`` tool chose, for every server sharing this one's settings; returns
    where it went (``database`` or the config file's path)."""

    app, tenant = ctx.app, ctx.tenant
    return await app.run_store(lambda: app.save_settings(updates, tenant))


def saved_note(where: str, overrides: str) -> str:
    """What a ``configure_*`` result says about where its settings went and what they override."""
    from ask_fable.stores.saved_settings import LOCATION

    if where == LOCATION:
        return (f"saved to the shared database, which overrides the config file and {overrides}; every "
                "server on the database applies it from its next call")
    return f"saved to the config file, which overrides {overrides}; applies from the next call"


def clamped_note(name: str, given: int, used: int, low: int, high: int) -> str | None:
    """What a result says when the tool clamped argument ``name`` from ``given`` into ``low``–``high``."""
    return None if given == used else f"{name} {given} is outside {low}–{high}: used {used}"


def require_names(value: str | list[str], message: str) -> None:
    """Raise ``bad_args`` with ``message`` unless ``value`` names at least one non-blank item."""
    items = [value] if isinstance(value, str) else value
    if not any(str(item).strip() for item in items):
        raise BadArgs(message)


def named_or_omitted(value: Given, name: str, wanted: str = "at least one model") -> Given:
    """``value`` as passed, ``None`` when omitted; an explicitly empty one is ``bad_args``, since
    only an omitted argument means the default."""
    if value is not None:
        require_names(value, f"{name} is empty; name {wanted}, or omit {name} for the default")
    return value


class Args(BaseModel):
    """Base of every tool's arguments: an unknown argument is refused, naming it."""

    model_config = ConfigDict(extra="forbid")


class AskArgs(BaseModel):
    """The arguments every single-shot ask tool takes."""

    model_config = ConfigDict(extra="forbid")

    question: str = QUESTION
    context: str = CONTEXT
    context_ref: str | list[str] | None = CONTEXT_REF
    estimate: bool = ESTIMATE
    max_cost_usd: float = MAX_COST_USD


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
    backend: str,
    *,
    model: str | None = None,
    effort: str | None = None,
) -> AnswerResult:
    """Ask ``backend`` once through the pipeline (guard, cache, audit, trace) and return its result.

    The oracle comes from the token resolver (:func:`ask_fable.core.tokens.backend_oracle`), with
    ``model`` exactly as the caller gave it. An oracle that cannot even be built (a bad model id, a
    bad effort) still goes through the pipeline, so its error is audited and carries a ``trace_id``
    like every other outcome. ``effort`` keys the cache; only a preset travels in the request,
    since a backend's own level (grok's ``medium``, kimi's ``max``) is carried by the oracle it was
    built into.
    """
    with ctx.app.holding_settings() as settings:  # the oracle and the call read the same settings
        return await _run_single(ctx, tool, args, backend, settings, model=model, effort=effort)


async def _run_single(ctx: ToolContext, tool: str, args: AskArgs, backend: str, settings: Settings, *,
                      model: str | None, effort: str | None) -> AnswerResult:
    from ask_fable.core.tokens import backend_oracle

    preset = effort if is_effort(effort) else None
    try:
        oracle: Oracle | None = backend_oracle(backend, settings, model=model, effort=effort,
                                               resources=ctx.app.resources)
        failure: AskFableError | None = None
    except AskFableError as exc:
        oracle, failure = None, exc

    async def runner(question: str, context: str, mctx: ModeContext) -> ModeOutcome:
        if oracle is None:
            assert failure is not None
            raise failure
        return await run_single(oracle, question, context, mctx, effort=preset)

    async def planner(question: str, context: str) -> list[PlannedCall]:
        from ask_fable.core.modes.plans import plan_single

        if oracle is None:
            assert failure is not None
            raise failure
        return plan_single(oracle, question, context)

    call = Call(
        tool=tool,
        question=args.question,
        context=args.context,
        context_ref=args.context_ref,
        mode="single",
        cache_models=[oracle.token] if oracle else [],
        cache_extra={"model": oracle.model if oracle else None, "effort": effort},
        planner=planner, estimate_only=args.estimate, max_cost_usd=args.max_cost_usd or None,
    )
    return await ctx.run(call, runner)


def single_model_tool(name: str, backend: str, description: str, args: type[AskArgs] = AskArgs) -> ToolSpec:
    """A single-shot tool that asks ``backend`` once; its ``model`` and ``effort`` arguments, when
    ``args`` has them, pass to the backend. ``description`` may name the backend's facts."""

    async def handler(arguments: AskArgs, ctx: ToolContext) -> AnswerResult:
        model = named_or_omitted(getattr(arguments, "model", None), "model", "a model id")
        return await run_single_tool(ctx, name, arguments, backend, model=model,
                                     effort=getattr(arguments, "effort", None))

    handler.__doc__ = f"One answer from the {backend} backend."
    return ToolSpec(name=name, family="single", description=description, args=args, result=AnswerResult,
                    handler=handler, effects=ASKS, backend=backend)
