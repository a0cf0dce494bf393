"""The one request lifecycle every reasoning tool runs.

    quota ─▶ resolve context_ref ─▶ guard ─▶ cache lookup ─▶ mode ─▶ normalize ─▶ persist ─▶ result + trace_id

Tools build a :class:`Call` and hand it, with a mode runner, to :func:`run`. Everything that cuts
across tools (per-key quotas, guard, cache, timing, error mapping, audit, trace, hub, saved
answers) lives here.
A failure of our own never escapes: it becomes ``{"status": "error", "kind": ..., "detail": ...}``.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ask_fable.access import LOCAL_TENANT, store_tenant
from ask_fable.contract import Followup
from ask_fable.core import costs, guard, quotas
from ask_fable.core.app import App
from ask_fable.core.call_records import ANSWERED, FinishedCall, call_records
from ask_fable.core.conversations import advance_streak
from ask_fable.core.estimate import Estimate, Planner, price_plan
from ask_fable.core.modes.base import ModeContext, ModeOutcome, ProgressFn
from ask_fable.core.sidecar import parse_sidecar, refusal_reason
from ask_fable.core.tracing import TraceRecorder
from ask_fable.errors import AskFableError, BadArgs, OracleTimeout
from ask_fable.redact import redact
from ask_fable.stores.cache import cache_key
from ask_fable.stores.trace_ids import new_trace_id
from ask_fable.values import Sidecar

if TYPE_CHECKING:
    from ask_fable.config import Settings

ModeRunner = Callable[[str, str, ModeContext], Awaitable[ModeOutcome]]
_Done = TypeVar("_Done")


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
    cache_extra: dict[str, Any] = field(default_factory=dict)
    #: Per-session state of a conversation turn (``needs_context_streak``, replayed from the stored
    #: turns by :func:`ask_fable.core.modes.single.run_turn`); ``None`` for a single question.
    session_state: dict[str, Any] | None = None
    #: Fields echoed into the result whatever happens (e.g. ``session``).
    echo: dict[str, Any] = field(default_factory=dict)
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
_PER_CALL_FIELDS = ("trace_id", "telemetry", "session", "context_ref_resolved", "context_ref_missing",
                    "cached", "cache_age_s", "note", "saved", "usage", "cost_usd", "cost_source")


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


def _mentioned(item: str, haystack: str) -> bool:
    words = [w.strip("`'\".,:;()") for w in item.lower().split()]
    names = [w for w in words if len(w) > 3 and any(c in w for c in "._/()")]
    return any(name in haystack for name in names) or (len(item) > 8 and item.lower() in haystack)


class Pipeline:
    """Runs calls against an :class:`App`'s services."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def run(self, call: Call, runner: ModeRunner, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Run one call end to end and return its structured result (never raises for a failure).

        The call reads the settings once: every step of it sees the same ones."""
        with self.app.holding_settings() as settings:
            return await self._admitted(call, runner, settings, progress)

    async def _admitted(self, call: Call, runner: ModeRunner, settings: Settings,
                        progress: ProgressFn | None) -> dict[str, Any]:
        """The call under its key's quota: admitted, run, then settled with its real cost."""
        app = self.app
        trace = TraceRecorder(new_trace_id(), app.clock)
        trace.event(
            "request",
            tool=call.tool,
            mode=call.mode,
            session=call.session,
            question_len=len(call.question),
            context_len=len(call.context),
        )
        # Completed once context_ref is resolved: context_len is what the model is given.
        request = trace.events[-1].attrs
        mctx = ModeContext(settings, trace, app.console, breaker=app.breaker, progress=progress,
                           catalogs=app.resources.catalogs)
        holds: list[quotas.QuotaHold] = []
        try:
            return await self._run(call, runner, trace, request, mctx, holds)
        finally:
            for hold in holds:
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
            trace.event("quota", admitted=False, kind=exc.kind)
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
                "estimate=true shows each model's part", estimate=estimate.wire(call.over_budget))
        return estimate

    async def _run(self, call: Call, runner: ModeRunner, trace: TraceRecorder, request: dict[str, Any],
                   mctx: ModeContext, holds: list[quotas.QuotaHold]) -> dict[str, Any]:
        """Context, guard, estimate, admission (its hold added to ``holds``), cache, mode, normalize,
        persist."""
        app = self.app
        settings = app.settings
        result: dict[str, Any]
        outcome: ModeOutcome | None = None
        allowed = False
        context = call.context
        refs = _refs(call.context_ref)
        # Echoed on every outcome, errors included, so the caller always sees what its refs did.
        result_prefix: dict[str, Any] = dict(call.echo)
        try:
            if refs:
                bus, bus_tenant = app.context_store, store_tenant(call.tenant, settings.shared_context)
                text, resolved, missing = await app.run_store(bus.resolve, bus_tenant, refs)
                trace.event("context.resolve", resolved=len(resolved), missing=len(missing))
                result_prefix["context_ref_resolved"] = resolved
                result_prefix["context_ref_missing"] = missing
                if not resolved and not call.context.strip():
                    suggestions = await app.run_store(bus.suggest, bus_tenant, missing)
                    result = {
                        **result_prefix,
                        "status": "needs_context",
                        "detail": "None of the context_ref keys exist, and no other context was given; "
                        "no model was called. Store the material with context_write or fix the key.",
                        "did_you_mean": suggestions,
                    }
                    return await self._finish(call, trace, result, None, mctx, allowed, context)
                context = "\n\n".join(part for part in (call.context, text) if part.strip())
                request.update(context_len=len(context), pasted_context_len=len(call.context))

            decision = guard.check(call.question, context, settings)
            trace.event(
                "guard", allowed=decision.allowed, layer=decision.layer or None, rule=decision.rule or None
            )
            if not decision.allowed:
                app.console.line(trace.trace_id, f"refused by the guard: {decision.reason}")
                result = {
                    **result_prefix,
                    "status": "refused",
                    "stage": "guard",
                    "rule": decision.rule,
                    "reason": decision.reason,
                    "how_to_reframe": decision.how_to_reframe,
                }
                return await self._finish(call, trace, result, None, mctx, allowed, context)
            allowed = True

            estimate = await self._plan(call, call.question, context, mctx)
            if estimate is not None:
                trace.event("estimate", typical_usd=round(estimate.typical_usd, 6),
                            max_usd=round(estimate.max_usd, 6), calls=len(estimate.calls))
            if call.estimate_only:
                if estimate is None:
                    raise BadArgs(f"{call.tool} cannot estimate its cost")
                result = {**result_prefix, "status": "ok", "estimate": estimate.wire(call.over_budget),
                          "note": "estimate only: no model was called"}
                return await self._finish(call, trace, result, None, mctx, allowed, context)
            hold = await self._admit(call, trace, None if estimate is None else estimate.budget_usd)
            if hold is not None:
                holds.append(hold)

            cache = app.cache if call.cache_models else None
            cache_tenant = store_tenant(call.tenant, settings.shared_cache)
            key = None
            if cache is not None:
                key = cache_key(call.tool, call.cache_models, call.question, context, call.cache_extra)
                hit = await self._cache_op(trace, "get", cache.get, cache_tenant, key)
                trace.event("cache.lookup", hit=hit is not None)
                if hit is not None:
                    payload, age = hit
                    result = {
                        **payload,
                        **result_prefix,
                        "cached": True,
                        "cache_age_s": round(age, 1),
                        "cost_usd": 0.0,
                        "note": DUPLICATE_NOTE.format(age=age),
                    }
                    return await self._finish(call, trace, result, None, mctx, allowed, context, cached=True)

            app.console.line(trace.trace_id, f"{call.tool}: running {call.mode}")
            trace.event("mode.start", mode=call.mode)
            outcome = await runner(call.question, context, mctx)
            # The mode's summary (quorum, consensus, fallbacks, resolution) is metadata: kept in the trace.
            trace.event("mode.end", mode=call.mode, model=outcome.model,
                        **outcome.audit.model_dump(exclude_none=True))
            result = {**result_prefix, **self._normalize(call, outcome, context, settings)}
            # A degraded council is not worth replaying: the missing members may be back next time.
            if (
                cache is not None
                and key is not None
                and result["status"] == "ok"
                and not result.get("degraded")
            ):
                payload = {k: v for k, v in result.items() if k not in _PER_CALL_FIELDS}
                await self._cache_op(trace, "put", cache.put, cache_tenant, key, call.tool, payload)
            return await self._finish(call, trace, result, outcome, mctx, allowed, context)
        except AskFableError as exc:
            result = {**result_prefix, **exc.to_result()}
            result["detail"] = self._redact(result.get("detail") or "")
            return await self._finish(call, trace, result, outcome, mctx, allowed, context)
        except TimeoutError:
            result = {**result_prefix, **OracleTimeout(f"{call.tool} ran out of time").to_result()}
            return await self._finish(call, trace, result, outcome, mctx, allowed, context)
        except Exception as exc:  # a bug of ours: report it structurally, keep the traceback on stderr
            app.console.line(trace.trace_id, "internal error:\n" + self._redact(traceback.format_exc()))
            result = {
                **result_prefix,
                "status": "error",
                "kind": "internal",
                "detail": f"ask-fable hit an internal error ({type(exc).__name__}); see the server log "
                f"for trace {trace.trace_id}.",
            }
            return await self._finish(call, trace, result, outcome, mctx, allowed, context)

    async def _cache_op(self, trace: TraceRecorder, name: str, op: Callable[..., _Done],
                        *args: object) -> _Done | None:
        """Run a cache read or write; a failing cache is a miss, never a lost answer."""
        try:
            return await self.app.run_store(op, *args)
        except Exception as exc:
            trace.event("cache.error", op=name, error=type(exc).__name__)
            self.app.console.line(trace.trace_id, f"cache {name} failed ({type(exc).__name__}); going on")
            return None

    # --- normalize ---------------------------------------------------------------------------------
    def _normalize(self, call: Call, outcome: ModeOutcome, context: str,
                   settings: Settings) -> dict[str, Any]:
        answer, sidecar = parse_sidecar(outcome.text)
        reply = outcome.reply
        result: dict[str, Any] = {"model": outcome.model}
        refused = refusal_reason(answer)
        if refused:
            result.update(
                status="refused", stage="model", reason=refused, how_to_reframe=guard.MODEL_REFRAME
            )
            result.update(outcome.fields)
            return result
        result.update(status="ok", answer=answer, sidecar=sidecar.model_dump() if sidecar else None)
        if sidecar is not None:
            followup = _followup(sidecar, call.question, context)
            if followup:
                result["followup"] = followup.model_dump()
            if call.session_state is not None:
                asked_more = sidecar.recommendation == "needs_more_context"
                before = call.session_state.get("needs_context_streak", 0)
                streak, exhausted = advance_streak(before, asked_more, settings.max_needs_context)
                call.session_state["needs_context_streak"] = streak
                if exhausted:
                    result["status"] = "context_exhausted"
                    result["detail"] = (
                        f"The model asked for more context {before + 1} times in a row on this session; "
                        "this is its best-effort answer. Decide with what you have, or reset the session "
                        "with a sharper question."
                    )
        elif call.session_state is not None:
            call.session_state["needs_context_streak"] = 0
        if reply is not None:
            if reply.effort:
                result["effort"] = reply.effort
            if reply.routed_via:
                result["routed_via"] = reply.routed_via
            if settings.return_thinking and reply.thinking:
                result["thinking"] = self._redact(reply.thinking[: settings.thinking_chars])
        result.update(outcome.fields)
        return result

    # --- persist -----------------------------------------------------------------------------------
    def _redact(self, text: str) -> str:
        return redact(text, self.app.settings.secret_values())

    async def _finish(
        self,
        call: Call,
        trace: TraceRecorder,
        result: dict[str, Any],
        outcome: ModeOutcome | None,
        mctx: ModeContext,
        allowed: bool,
        context: str,
        *,
        cached: bool = False,
    ) -> dict[str, Any]:
        app = self.app
        settings = mctx.settings  # the call's settings, read once when it started
        elapsed_ms = trace.elapsed_ms()
        status = result.get("status", "error")
        result["trace_id"] = trace.trace_id
        # Every backend call the call made, members, synthesizers and fallbacks alike: its cost.
        result.update(costs.call_cost(mctx.members).fields())
        if status in ANSWERED:
            result["telemetry"] = {
                "status": status,
                "elapsed_ms": elapsed_ms,
                "provider": outcome.provider if outcome else None,
                "model": result.get("model"),
            }
            result["telemetry"] = {k: v for k, v in result["telemetry"].items() if v is not None}
        found = result.get("sidecar")
        sidecar: dict[str, Any] = found if isinstance(found, dict) else {}
        trace.event("response", status=status, kind=result.get("kind"), cached=cached or None,
                    recommendation=sidecar.get("recommendation"), confidence=sidecar.get("confidence"))
        done = FinishedCall(call, trace, result, outcome, mctx.members, allowed=allowed, context=context,
                            cached=cached, elapsed_ms=elapsed_ms, project=app.project_id,
                            agent_id=call.agent_id or app.agent_id)
        saved = await self._persist(done, settings)
        if saved is not None:
            result["saved"] = saved
        app.console.line(trace.trace_id, f"{call.tool}: {status} in {elapsed_ms / 1000:.1f}s")
        # A model may echo a key it was shown: the server redacts every result on its way out
        # (surface/server.py), this one included, so it is not redacted twice.
        return result

    async def _persist(self, done: FinishedCall, settings: Settings) -> str | None:
        """Write the call's records (grouped with those of calls finishing meanwhile, one thread hop
        per group), durable before the caller sees the answer.

        Each store fails on its own: its failure is one console line, the other records are
        still written, and the caller keeps the answer. Returns where the answer was saved.
        """
        console, trace_id = self.app.console, done.trace.trace_id

        def failed(what: str, exc: Exception) -> None:
            console.line(trace_id, f"could not write {what} ({type(exc).__name__}: "
                         f"{self._redact(str(exc))[:300]}); the answer is not affected")

        try:
            records = call_records(done, settings)
            await self.app.record_writer.write(records, lambda store, exc: failed(f"the {store} record", exc))
        except Exception as exc:  # a bug in building or writing records: still not the caller's loss
            failed("this call's records", exc)
            return None
        return records.saved
