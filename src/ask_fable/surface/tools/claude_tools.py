"""ask (Fable, or any one model by ``model``) and ask_opus5 as conversations, and reset_session.

Every ask is a turn of a conversation keyed by ``session``, one per model namespace (``fable``,
``opus5``, ``deepseek``, ``openrouter:<id>``…) and tenant: its turns are kept in the transcript
store and sent with each follow-up (:mod:`ask_fable.core.conversations`), so a conversation
survives a restart. Fable and Opus 5 also keep a warm Claude Code process per session. The
pipeline does the rest (guard, context_ref, sidecar, follow-up, context_exhausted, audit, trace,
hub); a conversation turn is never cached.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ask_fable.access import ASKS, WRITES
from ask_fable.backends.base import Oracle
from ask_fable.backends.descriptor import SESSION_HELP
from ask_fable.contract import AnswerResult, DataResult
from ask_fable.core.conversations import (
    SessionRef,
    SessionState,
    StoredConversation,
    context_window,
    holding,
    namespace_for,
)
from ask_fable.core.estimate import PlannedCall
from ask_fable.core.modes.base import ModeContext, ModeOutcome
from ask_fable.core.modes.single import run_turn
from ask_fable.core.pipeline import Call
from ask_fable.errors import AskFableError, BadArgs
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import AskArgs, named_or_omitted

#: reset_session's ``model`` may also name the tool whose conversations it clears.
TOOL_NAMESPACES: dict[str, str] = {"ask": "fable", "ask_opus5": "opus5"}


class SessionAskArgs(AskArgs):
    """Arguments of ask_opus5 (and ask, which adds ``model``)."""

    session: str = Field(
        "default", min_length=1, max_length=200, description="Conversation key.",
    )
    reset: bool = Field(False, description="Start this session over before asking.")


class ModelAskArgs(SessionAskArgs):
    """Arguments of ask."""

    model: str = Field(
        "fable",
        description="Who answers: fable, or a token councils take (opus5, deepseek, glm, m3, gemini, codex, "
        "grok, kimi, atlas:<id>, openrouter:<id>, ollama:<id>).",
    )


class ResetSessionArgs(BaseModel):
    """Arguments of reset_session."""

    model_config = ConfigDict(extra="forbid")

    session: str = Field("default", min_length=1, max_length=200, description="The session key to clear.")
    model: str = Field("fable", description="Whose conversation: the model ask was given (opus5, deepseek…).")
    save: bool = Field(True, description="Dump the transcript to the sessions directory before clearing.")

    @field_validator("session")
    @classmethod
    def _named(cls, value: str) -> str:
        """A blank key names no conversation (an ask reads it as ``default``: clearing that by accident
        would lose it)."""
        if not value.strip():
            raise ValueError("session is blank: name the conversation to clear (e.g. 'default')")
        return value


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


def _session_oracle(
    ctx: ToolContext, token: str, namespace: str, key: str
) -> tuple[Oracle, Callable[[], Awaitable[object]] | None]:
    """The oracle a conversation turn asks, and what closes its warm process on reset: Fable and
    Opus answer on the session's warm Claude Code process, every other model through its backend."""
    from ask_fable.core.tokens import backend_for, build_oracle

    if backend_for(token).transport == "claude":
        warm, space = ctx.app.claude_sessions, ctx.session_space(namespace)
        return warm.oracle(space, key, token), functools.partial(warm.reset, space, key)
    return build_oracle(token, ctx.settings, resources=ctx.app.resources), None


async def ask_session(ctx: ToolContext, tool: str, model: str, args: SessionAskArgs) -> AnswerResult:
    """One turn of the conversation ``args.session`` with ``model`` (a token) through the pipeline."""
    from ask_fable.core.tokens import single_token

    key = label = args.session.strip() or "default"
    state = SessionState()
    turn: tuple[Oracle, StoredConversation] | None = None
    failure: AskFableError | None = None
    try:
        token = single_token(model)
        namespace = namespace_for(token)
        oracle, forget_warm = _session_oracle(ctx, token, namespace, key)
        ref = SessionRef(ctx.tenant, namespace, key)
        turn = oracle, StoredConversation(
            store=ctx.app.transcripts, ref=ref, lock=ctx.app.conversations.lock(ref),
            window_tokens=context_window(token, ctx.settings), label=oracle.model,
            run_store=ctx.app.run_store, lease_seconds=ctx.settings.session_lease_seconds, reset=args.reset,
            state=state, forget_warm=forget_warm,
        )
    except AskFableError as exc:  # an unknown token, a bad model id: audited like any other outcome
        failure = exc

    async def runner(question: str, context: str, mctx: ModeContext) -> ModeOutcome:
        if turn is None:
            assert failure is not None
            raise failure
        return await run_turn(turn[0], question, context, mctx, turn[1])

    async def planner(question: str, context: str) -> list[PlannedCall]:
        from ask_fable.backends.pricing import count_tokens
        from ask_fable.core.modes.plans import plan_single

        if turn is None:
            assert failure is not None
            raise failure
        oracle, conversation = turn
        history = 0
        if not conversation.reset:
            ref = conversation.ref
            try:
                stored = await ctx.app.run_store(conversation.store.turns, ref.tenant, ref.namespace, ref.key)
            except Exception:  # the turn itself will say the transcript could not be read
                stored = []
            # The earlier turns the model is sent, at most what fits its window.
            history = min(sum(count_tokens(t.prompt) + count_tokens(t.answer) for t in stored),
                          conversation.window_tokens)
        return plan_single(oracle, question, context, history_tokens=history)

    call = Call(
        tool=tool,
        question=args.question,
        context=args.context,
        context_ref=args.context_ref,
        session=label,
        mode="ask",
        session_state=state,
        echo_session=True,
        planner=planner,
        estimate_only=args.estimate,
        max_cost_usd=args.max_cost_usd or None,
    )
    return await ctx.run(call, runner)


async def ask(args: ModelAskArgs, ctx: ToolContext) -> AnswerResult:
    """One turn with ``model`` (Fable by default)."""
    return await ask_session(ctx, "ask", named_or_omitted(args.model, "model", "a model token"), args)


def _namespace(model: str) -> str:
    from ask_fable.core.tokens import known_tokens_text, single_token

    text = model.strip()
    if text.lower() in TOOL_NAMESPACES:
        return TOOL_NAMESPACES[text.lower()]
    try:
        return namespace_for(single_token(text))
    except BadArgs as exc:
        raise BadArgs(f"model must name the model whose conversation to clear (the `model` given to ask, "
                      f"or ask / ask_opus5), not {model!r}; {known_tokens_text()}") from exc


async def reset_session(args: ResetSessionArgs, ctx: ToolContext) -> ResetSessionResult:
    """Dump (when ``save``) and clear one conversation of one model."""
    from ask_fable.stores.records import Transcript

    namespace = _namespace(args.model)
    key = label = args.session.strip() or "default"
    ref = SessionRef(ctx.tenant, namespace, key)
    store = ctx.app.transcripts
    # The same hold a turn takes: a reset waits for a turn running on any server, and the reverse.
    async with holding(store, ref, ctx.app.conversations.lock(ref), ctx.app.run_store,
                       lease_s=ctx.settings.session_lease_seconds, wait_s=ctx.settings.timeout):
        turns = await ctx.app.run_store(store.clear, ref.tenant, namespace, key)
        await ctx.app.claude_sessions.reset(ctx.session_space(namespace), key)
    result = ResetSessionResult(status="ok", session=label, model=namespace, turns=len(turns),
                                cleared=bool(turns))
    if not turns:
        stored = await ctx.app.run_store(store.sessions, ref.tenant, namespace)  # this tenant's
        result.sessions = sorted(s["session"] for s in stored)
        there = (f"the stored {namespace} conversations are listed in sessions" if stored
                 else f"there are no stored {namespace} conversations")
        result.note = f"no stored {namespace} conversation is named {label!r}; nothing was cleared: {there}"
        return result
    if args.save:
        transcript = Transcript(key=key, tenant=ctx.tenant, namespace=namespace, turns=turns)
        result.saved = await ctx.app.run_store(ctx.app.answers.save_transcript, transcript)
    return result


TOOLS = [
    ToolSpec(
        name="ask",
        family="core",
        description="Ask {label} one hard engineering question, or any one model with `model`. "
        + SESSION_HELP,
        args=ModelAskArgs,
        result=AnswerResult,
        handler=ask,
        effects=ASKS,
        backend="fable",
    ),
    ToolSpec(
        name="reset_session",
        family="core",
        description="Clear one conversation of one model (`model` as given to ask), saving its transcript "
        "first when save=true: sessions/<key>-<ts>.md for Fable, opus5-<key>-… or <model>+<key>-… for "
        "others. A session with no turns is left as it is (cleared=false).",
        args=ResetSessionArgs,
        result=ResetSessionResult,
        handler=reset_session,
        effects=WRITES,
        destructive=True,
    ),
]
