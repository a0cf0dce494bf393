"""ask (Fable) and ask_opus5 (Opus 5) with multi-turn sessions, and reset_session.

Each tool keeps its own conversations (namespace ``fable`` or ``opus5``) keyed by ``session``, each
tenant apart from the others; a follow-up turn goes to the session's still-running Claude Code
process. The pipeline does the
rest (guard, context_ref, sidecar, follow-up, context_exhausted, audit, trace, hub).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel, ConfigDict, Field

from ask_fable.access import ASKS, WRITES
from ask_fable.contract import AnswerResult, DataResult
from ask_fable.core.modes.base import ModeContext, ModeOutcome
from ask_fable.core.modes.single import run_single
from ask_fable.core.pipeline import Call
from ask_fable.errors import BadArgs
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import AskArgs

if TYPE_CHECKING:
    from ask_fable.stores.records import SessionNamespace

#: reset_session's ``model`` → the namespace of the tool whose conversations it clears.
NAMESPACES: dict[str, SessionNamespace] = {
    "fable": "fable", "ask": "fable",
    "opus5": "opus5", "opus": "opus5", "opus-5": "opus5", "ask_opus5": "opus5",
}


class SessionAskArgs(AskArgs):
    """Arguments of ask and ask_opus5."""

    session: str = Field(
        "default", min_length=1, max_length=200, description="Conversation key.",
    )
    reset: bool = Field(False, description="Start this session over before asking.")


class ResetSessionArgs(BaseModel):
    """Arguments of reset_session."""

    model_config = ConfigDict(extra="forbid")

    session: str = Field("default", min_length=1, max_length=200, description="The session key to clear.")
    model: str = Field("fable", description='Whose conversation: "fable" (ask) or "opus5" (ask_opus5).')
    save: bool = Field(True, description="Dump the transcript to the sessions directory before clearing.")


class ResetSessionResult(DataResult):
    """What reset_session cleared and where the transcript went."""

    session: str | None = None
    model: str | None = None
    turns: int | None = None
    cleared: bool | None = None
    saved: str | None = None
    sessions: list[str] | None = Field(
        None, description="the sessions this model has, when the key is unknown"
    )
    note: str | None = Field(None, description="why nothing was cleared")


async def _ask_session(
    ctx: ToolContext, tool: str, namespace: str, token: str, args: SessionAskArgs
) -> dict[str, Any]:
    sessions = ctx.app.claude_sessions
    label = args.session.strip() or "default"
    space = ctx.session_space(namespace)

    async def runner(question: str, context: str, mctx: ModeContext) -> ModeOutcome:
        oracle = sessions.oracle(space, label, token, reset=args.reset, question=question)
        outcome = await run_single(oracle, question, context, mctx)
        outcome.fields["turn"] = len(sessions.transcript(space, label))
        outcome.fields["session_cost_usd"] = sessions.cost(space, label)
        return outcome

    call = Call(
        tool=tool,
        question=args.question,
        context=args.context,
        context_ref=args.context_ref,
        session=label,
        mode="ask",
        session_state=sessions.session_state(space, label),
        echo={"session": label},
    )
    return await ctx.run(call, runner)


async def ask(args: SessionAskArgs, ctx: ToolContext) -> dict[str, Any]:
    """Fable, multi-turn."""
    return await _ask_session(ctx, "ask", "fable", "fable", args)


async def ask_opus5(args: SessionAskArgs, ctx: ToolContext) -> dict[str, Any]:
    """Opus 5, multi-turn."""
    return await _ask_session(ctx, "ask_opus5", "opus5", "opus", args)


async def reset_session(args: ResetSessionArgs, ctx: ToolContext) -> dict[str, Any]:
    """Dump (when ``save``) and clear one conversation of ask or ask_opus5."""
    namespace = NAMESPACES.get(args.model.strip().lower())
    if namespace is None:
        raise BadArgs(f"model must be 'fable' (ask) or 'opus5' (ask_opus5), not {args.model!r}")
    sessions = ctx.app.claude_sessions
    label = args.session.strip() or "default"
    space = ctx.session_space(namespace)
    turns = await sessions.reset(space, label)
    result: dict[str, Any] = {"status": "ok", "session": label, "model": namespace, "turns": len(turns),
                              "cleared": bool(turns)}
    if not turns:
        # This tenant's sessions only.
        result["sessions"] = sorted(s["key"] for s in sessions.list_sessions()
                                    if s["namespace"] == space and s["turns"])
        result["note"] = (
            f"no {namespace} session named {label!r} has answered a turn in this server process; "
            "nothing was cleared. `sessions` lists the ones that have."
        )
        return result
    if args.save:
        from ask_fable.stores.records import Transcript, TranscriptTurn

        transcript = Transcript(key=label, tenant=ctx.tenant, namespace=namespace,
                                turns=[TranscriptTurn.model_validate(turn) for turn in turns])
        result["saved"] = await anyio.to_thread.run_sync(ctx.app.answers.save_transcript, transcript)
    return result


_SESSION_HELP = (
    "Reuse `session` for follow-ups; a new key or reset=true starts a new topic. A `followup` in the "
    "result says what to paste next."
)

TOOLS = [
    ToolSpec(
        name="ask",
        family="core",
        description="Ask {label} one hard engineering question. " + _SESSION_HELP,
        args=SessionAskArgs,
        result=AnswerResult,
        handler=ask,
        effects=ASKS,
        backend="fable",
    ),
    ToolSpec(
        name="ask_opus5",
        family="single",
        description="The same as ask on {label} ({model}): about half Fable's price and faster.\n"
        + _SESSION_HELP
        + " Sessions are separate from ask's.",
        args=SessionAskArgs,
        result=AnswerResult,
        handler=ask_opus5,
        effects=ASKS,
        backend="opus",
    ),
    ToolSpec(
        name="reset_session",
        family="core",
        description="Clear one ask / ask_opus5 conversation, saving its transcript first when save=true: "
        "sessions/<key>-<ts>.md for ask, sessions/opus5-<key>-<ts>.md for ask_opus5. A session with no "
        "turns is left as it is (cleared=false).",
        args=ResetSessionArgs,
        result=ResetSessionResult,
        handler=reset_session,
        effects=WRITES,
        destructive=True,
    ),
]
