"""The one request lifecycle every reasoning tool runs.

    quota ─▶ resolve context_ref ─▶ guard ─▶ guard model ─▶ cache lookup ─▶ mode ─▶ normalize ─▶ persist
        ─▶ result + trace_id

The guard model runs only when ``ASK_FABLE_GUARD_MODEL`` is set.

Tools build a :class:`Call` and hand it, with a mode runner, to :func:`run`. Everything that cuts
across tools (per-key quotas, guard, cache, timing, error mapping, audit, trace, hub, saved
answers) lives here.
A failure of our own never escapes: it becomes a result with ``status: error``, a ``kind`` and a ``detail``.
Every outcome is the tool's contract result model (``Call.result``): the cache stores its JSON and
validates it again on the way back, and the records of the call are built from it.
"""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from pydantic import JsonValue, ValidationError

from ask_fable.access import LOCAL_TENANT, store_tenant
from ask_fable.contract import AnswerResult, CouncilFields, Followup, Telemetry
from ask_fable.core import costs, guard, guard_model, quotas
from ask_fable.core.app import App
from ask_fable.core.call_records import ANSWERED, FinishedCall, call_records
from ask_fable.core.conversations import SessionState, advance_streak
from ask_fable.core.estimate import Estimate, Planner, price_plan
from ask_fable.core.modes.base import MemberOutcome, ModeContext, ModeOutcome, ProgressFn
from ask_fable.core.sidecar import parse_sidecar, refusal_reason
from ask_fable.core.tracing import TraceRecorder
from ask_fable.errors import AskFableError, BadArgs, OracleTimeout
from ask_fable.redact import bounded, redact
from ask_fable.stores.cache_keys import cache_key
from ask_fable.stores.trace_ids import new_trace_id
from ask_fable.values import Sidecar

if TYPE_CHECKING:
    from ask_fable.config import Settings

ModeRunner = Callable[[str, str, ModeContext], Awaitable[ModeOutcome]]
_Done = TypeVar("_Done")

#: Seconds a cancelled call may spend writing its record before the cancellation goes on.
CANCELLED_RECORD_S = 5.0
#: Characters of a failed call's ``detail`` (and ``hint``) its trace keeps, start and end.
TRACE_DETAIL_LIMIT = 800

class QuotaCheckFailed(AskFableError):
    """The quota store could not be read: the call is refused rather than spent unaccounted."""

    kind = "internal"
    counts_as_failure = False

DUPLICATE_NOTE = (
    "Served from cache: this exact question and context were answered {age:.0f}s ago. "
    "If you changed something, include the change; if the answer did not help, ask a different question."
)


@dataclass
class Call:
    """One tool invocation as the pipeline sees it."""

    tool: str
    question: str
    context: str = ""
    context_ref: str | list[str] | None = None
    session: str | None = None
    mode: str = "single"
    #: Ordered model tokens the cache key is built from; empty disables caching.
    cache_models: list[str] = field(default_factory=list)
    cache_extra: dict[str, str | list[str] | None] = field(default_factory=dict)
    #: The contract model of the tool's result: every outcome of the call is one.
    result: type[AnswerResult] = AnswerResult
    #: Per-session state of a conversation turn (``needs_context_streak``, replayed from the stored
    #: turns by :func:`ask_fable.core.modes.single.run_turn`); ``None`` for a single question.
    session_state: SessionState | None = None
    #: Echo ``session`` into the result whatever happens (a conversation's label).
    echo_session: bool = False
    #: Who is calling when the process serves several callers (an HTTP API key's name).
    agent_id: str | None = None
    #: The tenant the call's records belong to and whose context entries and cache it may use.
    tenant: str = LOCAL_TENANT
    #: The caller's key quota the call is admitted against (None: unlimited).
    quota: quotas.KeyQuota | None = None
    #: Plans the call's backend calls: its estimate, what admission sets aside of the key's daily
    #: budget, and what ``max_cost_usd`` is checked against (None: ``quota_reserve_usd`` is set aside).
    planner: Planner | None = None
    #: Drops a council's lowest-ranked member so the call fits ``max_cost_usd``; returns its token, or
    #: None when none is left to drop.
    drop_member: Callable[[], str | None] | None = None
    #: Only estimate: guard and plan, call no model.
    estimate_only: bool = False
    #: The most the caller lets this call cost (its estimate at each backend's max_tokens).
    max_cost_usd: float | None = None
    #: Members left out to fit ``max_cost_usd``.
    over_budget: list[str] = field(default_factory=list)

    @property
    def hub_session(self) -> str | None:
        """The session label stored with the call: multi-model modes default to the tool's name."""
        if self.session:
            return self.session
        return self.tool if self.mode in ("council", "chain", "debate") else None


#: Fields that describe one call, not its answer: never stored in, nor replayed from, the cache.
_PER_CALL_FIELDS = frozenset({
    "trace_id", "telemetry", "session", "context_ref_resolved", "context_ref_missing", "cached",
    "cache_age_s", "note", "saved", "warnings", "usage", "cost_usd", "cost_source"})


@dataclass
class _Echo:
    """What every outcome of a call carries, errors included: its session and what its refs did."""

    session: str | None = None
    resolved: list[str] | None = None
    missing: list[str] | None = None
    warnings: list[str] = field(default_factory=list)
    #: The call's places in its key's quotas, settled with its records (``Pipeline._persist``).
    holds: list[quotas.QuotaHold] = field(default_factory=list)

    def onto(self, result: AnswerResult) -> None:
        """Set these fields on ``result``."""
        if self.session is not None:
            result.session = self.session
        if self.resolved is not None:
            result.context_ref_resolved = self.resolved
        if self.missing is not None:
            result.context_ref_missing = self.missing
        if self.warnings:
            result.warnings = list(self.warnings)


def _error_result(call: Call, error: AskFableError) -> AnswerResult:
    """``error`` as the tool's result: its contract fields (what else it carries is for the logs)."""
    fields = error.to_result()
    try:
        return call.result.model_validate({k: v for k, v in fields.items() if k in call.result.model_fields})
    except ValidationError:  # what it carries does not fit the contract: its kind and detail still do
        return call.result(status="error", kind=error.kind, detail=error.detail)


def _refs(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [item.strip() for item in items if isinstance(item, str) and item.strip()]


def _followup(sidecar: Sidecar, question: str, context: str) -> Followup | None:
    if sidecar.recommendation != "needs_more_context" and not sidecar.needs_context:
        return None
    haystack = f"{question}\n{context}".lower()
    pasted = [item for item in sidecar.needs_context if _mentioned(item, haystack)]
    return Followup(
        needs_context=list(sidecar.needs_context),
        how="Paste exactly what is listed into `context` (or store it with context_write and pass "
        "context_ref), then ask again on the same session. Check likely_already_pasted first: "
        "those items look present already, so re-read your paste before sending it again.",
        likely_already_pasted=pasted,
    )


def _annotate_call(trace: TraceRecorder, call: Call, context: str, result: AnswerResult, mctx: ModeContext,
                   cached: bool) -> None:
    """The call's outcome on its root span: status, error type, cost, tokens, quorum."""
    from opentelemetry.trace import StatusCode

    status, kind = result.status, result.kind
    usage = [m.reply.usage for m in mctx.members if m.reply is not None and m.reply.usage is not None]
    trace.annotate(**{
        "ask_fable.status": status,
        "ask_fable.cached": cached,
        "ask_fable.cost_usd": costs.call_cost(mctx.members).cost_usd,
        "ask_fable.quorum": result.quorum if isinstance(result, CouncilFields) else None,
        "gen_ai.usage.input_tokens": sum(u.input_tokens or 0 for u in usage) if usage else None,
        "gen_ai.usage.output_tokens": sum(u.output_tokens or 0 for u in usage) if usage else None,
    })
    if status == "error" and trace.root is not None:
        trace.root.set_attribute("error.type", str(kind or "error"))
        trace.root.set_status(StatusCode.ERROR, str(kind or "error"))
    if trace.root is not None and status in ANSWERED:
        from ask_fable.core.spans import CONTENT_CHARS, capture_content

        if capture_content():
            # The call's text, only when content capture asks for it: redacted like every result.
            secrets, limit = mctx.settings, CONTENT_CHARS
            answer = result.answer
            trace.annotate(**{
                "ask_fable.question": redact(call.question[:limit], secrets),
                "ask_fable.context": redact(context[:limit], secrets) if context else None,
                "ask_fable.answer": redact(answer[:limit], secrets) if isinstance(answer, str) else None,
            })


def _parsed(outcome: ModeOutcome, members: list[MemberOutcome]) -> tuple[str, Sidecar | None]:
    """The answer and sidecar of ``outcome``'s text: the member's parse when the text is a member's
    reply as it came back (parsed once, where the model call ended), else parsed now."""
    for member in reversed(members):
        if member.reply is not None and member.reply.text is outcome.text and member.answer is not None:
            return member.answer, member.sidecar
    return parse_sidecar(outcome.text)


def _mentioned(item: str, haystack: str) -> bool:
    words = [w.strip("`'\".,:;()") for w in item.lower().split()]
    names = [w for w in words if len(w) > 3 and any(c in w for c in "._/()")]
    return any(name in haystack for name in names) or (len(item) > 8 and item.lower() in haystack)


class Pipeline:
    """Runs calls against an :class:`App`'s services."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def run(self, call: Call, runner: ModeRunner, progress: ProgressFn | None = None) -> AnswerResult:
        """Run one call end to end and return its structured result (never raises for a failure).

        The call reads the settings once: every step of it sees the same ones."""
        with self.app.holding_settings() as settings:
            return await self._admitted(call, runner, settings, progress)

    async def _admitted(self, call: Call, runner: ModeRunner, settings: Settings,
                        progress: ProgressFn | None) -> AnswerResult:
        """The call under its key's quota: admitted, run, then settled with its real cost."""
        app = self.app
        metrics = app.metrics
        trace = TraceRecorder(new_trace_id(), app.clock,
                              observer=None if metrics is None else metrics.observer(call.tenant))
        trace.event(
            "request",
            tool=call.tool,
            mode=call.mode,
            session=call.session,
            question_len=len(call.question),
            context_len=len(call.context),
            otel_trace_id=trace.otel_trace_id,
        )
        # The server adds the call's identity (trace id, tool, tenant) and outcome to the root span.
        trace.annotate(**{"ask_fable.mode": call.mode})
        # Completed once context_ref is resolved: context_len is what the model is given.
        request = trace.events[-1].attrs
        from ask_fable.backends.catalogs import catalog_cache

        mctx = ModeContext(settings, trace, app.console, breaker=app.breaker, progress=progress,
                           catalogs=catalog_cache(app.resources))
        holds: list[quotas.QuotaHold] = []
        try:
            return await self._run(call, runner, trace, request, mctx, holds)
        finally:
            for hold in holds:  # settled with the call's records unless they were not written
                if hold.handed:
                    continue
                if not await hold.settle(costs.call_cost(mctx.members).budget_usd):
                    # Its place frees when its lease lapses; its cost is counted on a later try.
                    app.console.line(trace.trace_id, "could not settle this call's quota yet; retrying later")

    async def _admit(self, call: Call, trace: TraceRecorder,
                     reserve: float | None) -> quotas.QuotaHold | None:
        """Admit the call against its key's quotas, setting ``reserve`` dollars aside; raises
        ``quota_exceeded``, or ``internal`` when the quota store failed (refused rather than spent
        unaccounted)."""
        try:
            return await quotas.admit(self.app, call.quota, reserve=reserve)
        except AskFableError as exc:
            trace.event("quota", admitted=False, kind=exc.kind, limit=getattr(exc, "limit", None))
            raise
        except Exception as exc:
            self.app.console.line(trace.trace_id, f"quota check failed ({type(exc).__name__}); call refused")
            raise QuotaCheckFailed(
                f"ask-fable could not check this key's quota ({type(exc).__name__}); no model was called. "
                f"See the server log for trace {trace.trace_id}.") from exc

    async def _plan(self, call: Call, question: str, context: str, mctx: ModeContext) -> Estimate | None:
        """The call's estimate, with council members dropped (lowest-ranked first) to fit
        ``max_cost_usd``; ``bad_args`` when it cannot fit. ``None`` for a call without a planner."""
        if call.planner is None:
            return None
        estimate = price_plan(await call.planner(question, context), mctx.prices)
        limit = call.max_cost_usd
        while limit is not None and estimate.max_usd > limit and call.drop_member is not None:
            dropped = call.drop_member()
            if dropped is None:
                break
            call.over_budget.append(dropped)
            estimate = price_plan(await call.planner(question, context), mctx.prices)
        if limit is not None and estimate.max_usd > limit:
            raise BadArgs(
                f"this call could cost up to ${estimate.max_usd:.4f} (its estimate at each backend's "
                f"max_tokens), over max_cost_usd ${limit:.4f}; no model was called",
                hint="raise max_cost_usd, ask fewer or cheaper models, or lower ASK_FABLE_MAX_TOKENS; "
                "estimate=true shows each model's part", estimate=estimate.result(call.over_budget).wire())
        return estimate

    async def _run(self, call: Call, runner: ModeRunner, trace: TraceRecorder, request: dict[str, JsonValue],
                   mctx: ModeContext, holds: list[quotas.QuotaHold]) -> AnswerResult:
        """Context, guard, estimate, admission (its hold added to ``holds``), cache, mode, normalize,
        persist."""
        app = self.app
        settings = app.settings
        result: AnswerResult
        outcome: ModeOutcome | None = None
        allowed = False
        context = call.context
        refs = _refs(call.context_ref)
        # Set on every outcome, errors included, so the caller always sees what its refs did.
        echo = _Echo(session=call.session if call.echo_session else None, holds=holds)
        try:
            if refs:
                bus, bus_tenant = app.context_store, store_tenant(call.tenant, settings.shared_context)
                with trace.step(None, "context.resolve", refs=len(refs)) as step:
                    text, resolved, missing = await app.run_store(bus.resolve, bus_tenant, refs)
                    step.finish("context.resolve", resolved=len(resolved), missing=len(missing))
                echo.resolved, echo.missing = resolved, missing
                if not resolved and not call.context.strip():
                    suggestions = await app.run_store(bus.suggest, bus_tenant, missing)
                    result = call.result(
                        status="needs_context",
                        detail="None of the context_ref keys exist, and no other context was given; "
                        "no model was called. Store the material with context_write or fix the key.",
                        did_you_mean=suggestions,
                    )
                    return await self._finish(call, trace, result, None, mctx, allowed, context, echo)
                context = "\n\n".join(part for part in (call.context, text) if part.strip())
                request.update(context_len=len(context), pasted_context_len=len(call.context))

            with trace.step(None, "guard") as step:
                decision = guard.check(call.question, context, settings)
                step.finish("guard", allowed=decision.allowed, layer=decision.layer or None,
                            rule=decision.rule or None)
            if not decision.allowed:
                app.console.line(trace.trace_id, f"refused by the guard: {decision.reason}")
                result = call.result(status="refused", stage="guard", rule=decision.rule,
                                     reason=decision.reason, how_to_reframe=decision.how_to_reframe)
                return await self._finish(call, trace, result, None, mctx, allowed, context, echo)
            if settings.guard_model:
                screened = await self._screen(call, trace, mctx, echo)
                if screened is not None:
                    return await self._finish(call, trace, screened, None, mctx, allowed, context, echo)
            allowed = True

            estimate = await self._plan(call, call.question, context, mctx)
            if estimate is not None:
                trace.event("estimate", typical_usd=round(estimate.typical_usd, 6),
                            max_usd=round(estimate.max_usd, 6), calls=len(estimate.calls))
            if call.estimate_only:
                if estimate is None:
                    raise BadArgs(f"{call.tool} cannot estimate its cost")
                result = call.result(status="ok", estimate=estimate.result(call.over_budget),
                                     note="estimate only: no model was called")
                return await self._finish(call, trace, result, None, mctx, allowed, context, echo)
            hold = await self._admit(call, trace, None if estimate is None else estimate.budget_usd)
            if hold is not None:
                holds.append(hold)

            cache = app.cache if call.cache_models else None
            cache_tenant = store_tenant(call.tenant, settings.shared_cache)
            key = None
            if cache is not None:
                key = cache_key(call.tool, call.cache_models, call.question, context, call.cache_extra)
                hit = await self._cache_op(trace, "get", cache.get, cache_tenant, key)
                replayed = None if hit is None else self._replayed(call, trace, hit.payload)
                trace.event("cache.lookup", hit=replayed is not None)
                if hit is not None and replayed is not None:
                    replayed.cached, replayed.cache_age_s = True, round(hit.age_s, 1)
                    replayed.cost_usd, replayed.note = 0.0, DUPLICATE_NOTE.format(age=hit.age_s)
                    return await self._finish(call, trace, replayed, None, mctx, allowed, context, echo,
                                              cached=True)

            app.console.line(trace.trace_id, f"{call.tool}: running {call.mode}")
            with trace.step("mode.start", f"{call.mode} {call.tool}", mode=call.mode) as step, step.current():
                outcome = await runner(call.question, context, mctx)
                # The mode's summary (quorum, consensus, fallbacks, resolution) is metadata: kept in the
                # trace.
                step.finish("mode.end", mode=call.mode, model=outcome.model,
                            **outcome.audit.model_dump(exclude_none=True))
            result = self._normalize(call, outcome, context, settings, mctx.members)
            # A degraded council is not worth replaying: the missing members may be back next time.
            degraded = isinstance(result, CouncilFields) and result.degraded
            if cache is not None and key is not None and result.status == "ok" and not degraded:
                payload = result.model_dump(mode="json", exclude_unset=True, exclude=set(_PER_CALL_FIELDS))
                await self._cache_op(trace, "put", cache.put, cache_tenant, key, call.tool, payload)
            return await self._finish(call, trace, result, outcome, mctx, allowed, context, echo)
        except AskFableError as exc:
            result = _error_result(call, exc)
            result.detail = self._redact(result.detail or "")
            return await self._finish(call, trace, result, outcome, mctx, allowed, context, echo)
        except anyio.get_cancelled_exc_class():
            # The caller cancelled, went away or pressed Ctrl-C: nobody reads a result, but the call
            # still leaves its records, with what had happened so far.
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCELLED_RECORD_S):
                await self._finish(call, trace, self._cancelled(call, trace, mctx), outcome,
                                   mctx, allowed, context, echo)
            raise
        except TimeoutError:
            result = _error_result(call, OracleTimeout(f"{call.tool} ran out of time"))
            return await self._finish(call, trace, result, outcome, mctx, allowed, context, echo)
        except Exception as exc:  # a bug of ours: report it structurally, keep the traceback on stderr
            app.console.line(trace.trace_id, "internal error:\n" + self._redact(traceback.format_exc()))
            result = call.result(
                status="error", kind="internal",
                detail=f"ask-fable hit an internal error ({type(exc).__name__}); see the server log "
                f"for trace {trace.trace_id}.",
            )
            return await self._finish(call, trace, result, outcome, mctx, allowed, context, echo)

    def _replayed(self, call: Call, trace: TraceRecorder, payload: dict[str, Any]) -> AnswerResult | None:
        """A cached answer as the tool's result model; one that no longer validates is a miss."""
        try:
            return call.result.model_validate(payload)
        except ValidationError as exc:
            trace.event("cache.invalid", errors=exc.error_count())
            return None

    def _cancelled(self, call: Call, trace: TraceRecorder, mctx: ModeContext) -> AnswerResult:
        """The record of a call cancelled before it returned: which model calls had finished and which
        were still running (they were cancelled with it)."""
        started = Counter(str(e.attrs.get("token")) for e in trace.events if e.name == "provider.start")
        started.subtract(Counter(m.token for m in mctx.members))
        running = sorted(token for token, left in started.items() if left > 0)
        finished = [f"{m.token} ({m.kind or m.status})" for m in mctx.members]
        trace.event("cancelled", finished=len(finished), running=[*running] or None)
        done = f"finished: {', '.join(finished)}" if finished else "no model call had finished"
        cut = f"; cancelled while running: {', '.join(running)}" if running else ""
        detail = (f"{call.tool} was cancelled after {trace.elapsed_ms() / 1000:.1f}s, before it returned "
                  f"(its caller cancelled the request, went away or pressed Ctrl-C); {done}{cut}")
        return call.result(status="cancelled", kind="cancelled", detail=detail)

    async def _screen(self, call: Call, trace: TraceRecorder, mctx: ModeContext,
                      echo: _Echo) -> AnswerResult | None:
        """The guard model's stage: the refusal to return, or None to go on (with a warning added to
        ``echo`` when the model gave no verdict and failures are let through)."""
        settings = mctx.settings
        token = settings.guard_model or ""
        verdict = await guard_model.classify(call.question, settings, mctx, self.app.resources)
        trace.event("guard.model", token=token, allowed=verdict.allowed if not verdict.failure else None,
                    cached=verdict.cached or None, rule=verdict.rule or None,
                    categories=list(verdict.categories) or None, failure=verdict.failure or None)
        if verdict.failure:
            detail = self._redact(f"{verdict.failure}: {verdict.detail}")
            if settings.guard_model_on_failure == "open":
                self.app.console.line(trace.trace_id, f"guard model gave no verdict ({detail}); let through")
                echo.warnings.append(
                    f"the guard model {token} gave no verdict ({detail}); the question was let "
                    "through on the local guard alone (ASK_FABLE_GUARD_MODEL_ON_FAILURE=open)")
                return None
            self.app.console.line(trace.trace_id, f"guard model gave no verdict ({detail}); refused")
            decision = guard.refusal("guard_unavailable", "", settings)
            return call.result(status="refused", stage="guard", kind="guard_unavailable", rule=decision.rule,
                               reason=decision.reason, detail=detail, how_to_reframe=decision.how_to_reframe)
        if verdict.allowed:
            return None
        decision = guard.refusal(verdict.rule, verdict.detail, settings)
        self.app.console.line(trace.trace_id, f"refused by the guard model: {decision.reason}")
        return call.result(status="refused", stage="guard", rule=decision.rule, reason=decision.reason,
                           how_to_reframe=decision.how_to_reframe)

    async def _cache_op(self, trace: TraceRecorder, name: str, op: Callable[..., _Done],
                        *args: object) -> _Done | None:
        """Run a cache read or write; a failing cache is a miss, never a lost answer."""
        try:
            with trace.step(None, f"cache.{name}"):
                return await self.app.run_store(op, *args)
        except Exception as exc:
            trace.event("cache.error", op=name, error=type(exc).__name__)
            self.app.console.line(trace.trace_id, f"cache {name} failed ({type(exc).__name__}); going on")
            return None

    # --- normalize ---------------------------------------------------------------------------------
    def _normalize(self, call: Call, outcome: ModeOutcome, context: str, settings: Settings,
                   members: list[MemberOutcome]) -> AnswerResult:
        answer, sidecar = _parsed(outcome, members)
        reply = outcome.reply
        refused = refusal_reason(answer)
        if refused:
            result = call.result(model=outcome.model, status="refused", stage="model", reason=refused,
                                 how_to_reframe=guard.MODEL_REFRAME)
            result.take(outcome.fields)
            return result
        result = call.result(model=outcome.model, status="ok", answer=answer, sidecar=sidecar)
        state = call.session_state
        if sidecar is not None:
            followup = _followup(sidecar, call.question, context)
            if followup:
                result.followup = followup
            if state is not None:
                asked_more = sidecar.recommendation == "needs_more_context"
                before = state.needs_context_streak
                state.needs_context_streak, exhausted = advance_streak(before, asked_more,
                                                                       settings.max_needs_context)
                if exhausted:
                    result.status = "context_exhausted"
                    result.detail = (
                        f"The model asked for more context {before + 1} times in a row on this session; "
                        "this is its best-effort answer. Decide with what you have, or reset the session "
                        "with a sharper question."
                    )
        elif state is not None:
            state.needs_context_streak = 0
        if reply is not None:
            if reply.effort:
                result.effort = reply.effort
            if reply.routed_via:
                result.routed_via = reply.routed_via
            if settings.return_thinking and reply.thinking:
                result.thinking = self._redact(reply.thinking[: settings.thinking_chars])
        result.take(outcome.fields)
        return result

    # --- persist -----------------------------------------------------------------------------------
    def _redact(self, text: str) -> str:
        return redact(text, self.app.settings.secret_values())

    async def _finish(
        self,
        call: Call,
        trace: TraceRecorder,
        result: AnswerResult,
        outcome: ModeOutcome | None,
        mctx: ModeContext,
        allowed: bool,
        context: str,
        echo: _Echo,
        *,
        cached: bool = False,
    ) -> AnswerResult:
        app = self.app
        settings = mctx.settings  # the call's settings, read once when it started
        elapsed_ms = trace.elapsed_ms()
        echo.onto(result)
        status = result.status
        result.trace_id = trace.trace_id
        # Every backend call the call made, members, synthesizers and fallbacks alike: its cost.
        cost = costs.call_cost(mctx.members)
        if cost.source is not None:
            result.cost_usd, result.cost_source = cost.cost_usd, cost.source
            if cost.usage is not None:
                result.usage = cost.usage
        if status in ANSWERED:
            result.telemetry = Telemetry(status=status, elapsed_ms=elapsed_ms,
                                         provider=outcome.provider if outcome else None, model=result.model)
        sidecar = result.sidecar
        # A council's confidence is its own (capped by consensus, quorum and a fallen-back synthesis),
        # not its answering model's; a failure keeps its redacted detail and hint for whoever reads
        # the trace later.
        council = isinstance(result, CouncilFields) and result.mode == "council"
        confidence = result.confidence if isinstance(result, CouncilFields) and council else None
        failed = status not in (*ANSWERED, "refused")
        secrets = settings.secret_values() if failed else ()
        trace.event("response", status=status, kind=result.kind, cached=cached or None,
                    recommendation=sidecar.recommendation if sidecar else None,
                    confidence=confidence or (sidecar.confidence if sidecar else None),
                    detail=bounded(result.detail, TRACE_DETAIL_LIMIT, secrets)
                    if failed and result.detail else None,
                    hint=bounded(result.hint, TRACE_DETAIL_LIMIT, secrets)
                    if failed and result.hint else None)
        if trace.root is not None:
            _annotate_call(trace, call, context, result, mctx, cached)
        done = FinishedCall(call, trace, result, outcome, mctx.members, allowed=allowed, context=context,
                            cached=cached, elapsed_ms=elapsed_ms, project=app.project_id,
                            agent_id=call.agent_id or app.agent_id)
        saved = await self._persist(done, settings, echo.holds, cost.budget_usd)
        if saved is not None:
            result.saved = saved
        app.console.line(trace.trace_id, f"{call.tool}: {status} in {elapsed_ms / 1000:.1f}s")
        # A model may echo a key it was shown: the server redacts every result on its way out
        # (surface/server.py), this one included, so it is not redacted twice.
        return result

    async def _persist(self, done: FinishedCall, settings: Settings,
                       holds: list[quotas.QuotaHold], budget_usd: float) -> str | None:
        """Write the call's records (grouped with those of calls finishing meanwhile, one thread hop
        per group), durable before the caller sees the answer, then settle its ``holds`` at
        ``budget_usd`` (what the call counts against its key's daily budget) in the same store call.

        Each store fails on its own: its failure is one console line, the other records are
        still written, and the caller keeps the answer. Returns where the answer was saved.
        """
        console, trace_id = self.app.console, done.trace.trace_id
        step = done.trace.step(None, "store.write")

        def failed(what: str, exc: Exception, store: str = "records") -> None:
            console.line(trace_id, f"could not write {what} ({type(exc).__name__}: "
                         f"{self._redact(str(exc))[:300]}); the answer is not affected")
            # The stored trace records the failure itself (stores/recorders.py): this call's span
            # and the metrics see it here (the writer may report it from another call's task).
            done.trace.note("store.error", step.span, store=store, error=type(exc).__name__)

        with step, step.current():
            try:
                records = call_records(done, settings)
                settles = [hold.handover(budget_usd) for hold in holds if not hold.handed]
                if not await self.app.record_writer.write(
                        records, lambda store, exc: failed(f"the {store} record", exc, store), settles):
                    # Its place frees when its lease lapses; its cost is counted on a later try.
                    console.line(trace_id, "could not settle this call's quota yet; retrying later")
            except Exception as exc:  # a bug in building or writing records: still not the caller's loss
                failed("this call's records", exc)
                return None
        return records.saved
