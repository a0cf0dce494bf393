"""What every reasoning mode receives and returns, and the one way a mode calls an oracle.

A mode is ``async def run(question, context, ..., mctx: ModeContext) -> ModeOutcome``. It calls
oracles only through :meth:`ModeContext.call_oracle`, which applies the circuit breaker, times the
call, parses the sidecar, spots scope refusals, records a provider event in the trace and a member
record for the audit log, and never raises for an oracle's failure: the outcome says what happened.
A mode raises an :class:`ask_fable.errors.AskFableError` only when the mode as a whole failed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ask_fable.backends.base import Effort, EventSink, Oracle, OracleRequest, Reply
from ask_fable.backends.pricing import CostSource, PriceBook, Priced
from ask_fable.config import Settings
from ask_fable.contract import ModeFields
from ask_fable.core.sidecar import parse_sidecar, refusal_reason
from ask_fable.core.tracing import Console, TraceRecorder
from ask_fable.errors import AskFableError, OracleTimeout, UpstreamError
from ask_fable.redact import redact
from ask_fable.stores.records import MemberRecord, ModeAudit
from ask_fable.values import Sidecar

if TYPE_CHECKING:
    from pydantic import JsonValue

    from ask_fable.backends.breaker import CircuitBreaker
    from ask_fable.backends.catalogs import CatalogCache
    from ask_fable.core.spans import Step

ProgressFn = Callable[[float, float | None, str], Awaitable[None]]


@dataclass
class MemberOutcome:
    """One oracle call as a mode sees it: an answer or the reason there is none."""

    token: str
    model: str
    provider: str
    #: ok | refused | error | not_configured | binary_missing | circuit_open | timeout | straggler
    #: (a council member still running after the quorum's straggler wait, cancelled)
    status: str
    elapsed_ms: int = 0
    kind: str | None = None
    detail: str | None = None
    #: The error's next step (e.g. how to log in), kept so a single-model call can return it.
    hint: str | None = None
    reply: Reply | None = None
    answer: str | None = None
    sidecar: Sidecar | None = None
    role: str | None = None
    #: The error behind a failed outcome, as the backend (or the breaker) raised it.
    error: AskFableError | None = None
    #: What the call cost (set once a reply came back; reported, or priced from its tokens).
    priced: Priced | None = None

    @property
    def ok(self) -> bool:
        """True when the oracle produced a usable answer."""
        return self.status == "ok"

    @property
    def retry_after_s(self) -> float | None:
        """Seconds until the circuit breaker lets this oracle be tried again (a shed call only)."""
        value = self.error.extra.get("retry_after_s") if self.error is not None else None
        return float(value) if value is not None else None

    @property
    def cost_usd(self) -> float | None:
        """What this call cost in dollars: reported by the provider, else priced from its tokens;
        ``None`` when nothing was spent or no source prices the model (see :attr:`cost_source`)."""
        if self.priced is not None:
            return self.priced.cost_usd
        usage = self.reply.usage if self.reply is not None else None
        return usage.cost_usd if usage is not None else None

    @property
    def cost_source(self) -> CostSource | None:
        """Where :attr:`cost_usd` comes from (``None``: no reply, nothing to price)."""
        return self.priced.source if self.priced is not None else None

    @property
    def budget_usd(self) -> float:
        """What a key's daily budget counts for this call (an unknown price at the conservative rate)."""
        if self.priced is not None:
            return self.priced.budget_usd
        return max(0.0, self.cost_usd or 0.0)

    def audit_record(self) -> MemberRecord:
        """The member's entry in the call's audit record (metadata only)."""
        return MemberRecord(token=self.token, provider=self.provider, model=self.model, status=self.status,
                            kind=self.kind, elapsed_ms=self.elapsed_ms, role=self.role,
                            cost_usd=self.cost_usd, cost_source=self.cost_source)

    def trace_attrs(self) -> dict[str, JsonValue]:
        """What the trace's ``provider.end`` event adds about the reply: sidecar, tokens, cost, route."""
        reply, side = self.reply, self.sidecar
        usage = reply.usage if reply is not None else None
        return {
            "recommendation": side.recommendation if side else None,
            "confidence": side.confidence if side else None,
            "input_tokens": usage.input_tokens if usage else None,
            "output_tokens": usage.output_tokens if usage else None,
            "cost_usd": self.cost_usd,
            "cost_source": self.cost_source,
            "routed_via": reply.routed_via if reply else None,
        }


@dataclass
class ModeOutcome:
    """A mode's final answer plus the mode-specific result fields.

    ``text`` is the final model text (sidecar included); the pipeline parses and strips it.
    ``fields`` are the mode's part of the tool result (``sources``, ``consensus``, ``stages``…): a
    model of the contract, merged into the result as it goes on the wire.
    """

    text: str
    model: str
    reply: Reply | None = None
    fields: ModeFields = field(default_factory=ModeFields)
    provider: str | None = None
    #: What the mode adds to the call's audit record (quorum, consensus, synth_fallback…).
    audit: ModeAudit = field(default_factory=ModeAudit)
    #: A full Markdown transcript (debates) for the saved answer file, never returned inline.
    transcript: str | None = None


class ModeContext:
    """Services a mode may use: settings, breaker, trace, console, progress and the oracle caller."""

    def __init__(
        self,
        settings: Settings,
        trace: TraceRecorder,
        console: Console,
        *,
        breaker: CircuitBreaker | None = None,
        progress: ProgressFn | None = None,
        catalogs: CatalogCache | None = None,
    ) -> None:
        self.settings = settings
        self.trace = trace
        self.console = console
        self.breaker = breaker
        self.prices = PriceBook(settings, catalogs)
        self._progress = progress
        self.members: list[MemberOutcome] = []

    async def progress(self, done: float, total: float | None, message: str, *, echo: bool = True) -> None:
        """Report progress to the MCP client (when it asked for it) and, unless ``echo`` is off, the
        console. A model's start and outcome reach the console from :meth:`call_oracle` already, so
        progress that only repeats them is not echoed."""
        if echo:
            self.console.line(self.trace.trace_id, message)
        if self._progress is not None:
            await self._progress(done, total, message)

    def sink_for(self, oracle: Oracle, role: str | None = None, step: Step | None = None) -> EventSink:
        """An event sink that streams this oracle's reasoning to the console when enabled and records
        each retry in the trace (and on the model call's span, ``step``)."""
        trace_id = self.trace.trace_id

        def on_reasoning(text: str) -> None:
            if self.settings.stream_reasoning:
                self.console.reasoning(trace_id, oracle.token, text, limit=400)

        def on_note(text: str) -> None:
            self.console.line(trace_id, f"{oracle.token}: {text}", dim=True)

        def on_retry(attempt: int, cause: str, delay_s: float) -> None:
            record = step.event if step is not None else self.trace.event
            record("provider.retry", token=oracle.token, role=role, attempt=attempt, cause=cause,
                   delay_ms=int(delay_s * 1000))

        return EventSink(on_reasoning=on_reasoning, on_note=on_note, on_retry=on_retry)

    def request(
        self, system: str, prompt: str, *, timeout: float | None = None, effort: Effort | None = None
    ) -> OracleRequest:
        """An OracleRequest with the configured timeout unless one is given."""
        return OracleRequest(system=system, prompt=prompt, timeout=timeout or self.settings.timeout,
                             effort=effort)

    def provider_step(self, oracle: Oracle, role: str | None = None) -> Step:
        """The ``provider.start`` event of a model call and its GenAI span (a child of the current
        span), ended by :meth:`call_oracle` (or, for a member cut while it ran, by its mode)."""
        from ask_fable.core.spans import model_request

        genai = model_request(oracle.provider, oracle.model) if self.trace.root is not None else None
        return self.trace.step("provider.start", f"chat {oracle.model}", client=True, span_attrs=genai,
                               token=oracle.token, provider=oracle.provider, model=oracle.model, role=role)

    async def call_oracle(
        self, oracle: Oracle, request: OracleRequest, *, role: str | None = None, step: Step | None = None
    ) -> MemberOutcome:
        """Ask one oracle under the breaker and its own deadline; never raises for its failure.

        ``step`` is the call's :meth:`provider_step` when the caller opened it (and ends it should the
        call be cancelled); otherwise one is opened here and ended whatever happens."""
        outcome = MemberOutcome(oracle.token, oracle.model, oracle.provider, "ok", role=role)
        owned = step is None
        if step is None:
            step = self.provider_step(oracle, role)
        try:
            with step.current():
                await self._call(oracle, request, outcome, step)
        except BaseException as exc:
            if owned:
                step.abandon(exc)
            raise
        step.model_reply(outcome.model)
        step.content(self.settings, system=request.system, prompt=request.prompt, answer=outcome.answer)
        step.finish(
            "provider.end",
            token=oracle.token,
            provider=oracle.provider,
            model=outcome.model,
            role=role,
            status=outcome.status,
            kind=outcome.kind,
            elapsed_ms=outcome.elapsed_ms,
            **outcome.trace_attrs(),
        )
        self.console.line(
            self.trace.trace_id,
            f"{oracle.token}: {outcome.status}{' (' + outcome.kind + ')' if outcome.kind else ''} "
            f"in {outcome.elapsed_ms / 1000:.1f}s",
            dim=outcome.status != "ok",
        )
        self.members.append(outcome)
        return outcome

    async def _call(self, oracle: Oracle, request: OracleRequest, outcome: MemberOutcome, step: Step) -> None:
        """The call itself: availability, the breaker, the ask; fills ``outcome``."""
        self.console.line(self.trace.trace_id, f"asking {oracle.token} ({oracle.model})…", dim=True)
        started = time.monotonic()
        try:
            oracle.ensure_available()
            probe = False
            if self.breaker is not None and self.settings.circuit_breaker:
                probe = bool(self.breaker.before_call(oracle.breaker_key))
        except AskFableError as exc:  # a config state or an open circuit: nothing was asked
            self._fail(outcome, exc)
        else:
            settled = False
            try:
                await self._ask(oracle, request, outcome, step)
                settled = self._settle_breaker(oracle, outcome)
            finally:
                if probe and not settled and self.breaker is not None:
                    # A half-open probe that proved nothing (a refusal, a cancelled call) frees
                    # its slot so the next call can probe.
                    self.breaker.release(oracle.breaker_key)
        outcome.elapsed_ms = int((time.monotonic() - started) * 1000)

    async def _ask(self, oracle: Oracle, request: OracleRequest, outcome: MemberOutcome, step: Step) -> None:
        """Ask once within the deadline and fill ``outcome``; a failure becomes its status."""
        try:
            # A grace second over the request's own timeout: the backend should give up first
            # and say why; this bound only catches a backend that swallowed its own deadline.
            with anyio.fail_after(request.timeout + 1.0):
                reply = await oracle.ask(request, self.sink_for(oracle, outcome.role, step))
            if not reply.text.strip():
                raise UpstreamError(f"{oracle.token} returned an empty answer")
        except TimeoutError:
            self._fail(outcome, OracleTimeout(f"{oracle.token} did not answer within {request.timeout:.0f}s"))
        except AskFableError as exc:
            self._fail(outcome, exc)
        except Exception as exc:  # a backend bug degrades this member, never the whole mode
            import traceback

            self.console.line(
                self.trace.trace_id,
                f"{oracle.token} crashed:\n{redact(traceback.format_exc(), self.settings)}",
            )
            self._fail(outcome, UpstreamError(f"{oracle.token} failed unexpectedly ({type(exc).__name__})"))
        else:
            outcome.reply = reply
            outcome.model = reply.model or oracle.model
            outcome.priced = self.prices.call(
                oracle.provider, outcome.model, reply.usage,
                sent=f"{request.system}\n{request.folded_prompt()}",
                received=reply.text + (reply.thinking or ""))
            outcome.answer, outcome.sidecar = parse_sidecar(reply.text)
            refused = refusal_reason(outcome.answer)
            if refused:
                outcome.status, outcome.kind, outcome.detail = "refused", "model_refused", refused
            if reply.thinking and not self.settings.stream_reasoning:
                self.console.reasoning(self.trace.trace_id, oracle.token, reply.thinking)

    def _fail(self, outcome: MemberOutcome, exc: AskFableError) -> None:
        config_states = {"not_configured", "binary_missing", "circuit_open"}
        outcome.status = exc.kind if exc.kind in config_states | {"timeout"} else "error"
        outcome.kind = exc.kind
        outcome.detail = exc.detail
        outcome.error = exc
        outcome.hint = exc.extra.get("hint")

    def _settle_breaker(self, oracle: Oracle, outcome: MemberOutcome) -> bool:
        """Record an outcome that says something about the backend's health; True when recorded.

        The error class decides (``AskFableError.counts_as_failure``): config states, bad
        arguments, oversized prompts and an open circuit never count, and neither does a refusal,
        which carries no error at all: the backend did nothing wrong.
        """
        if self.breaker is None or not self.settings.circuit_breaker:
            return False
        if outcome.status == "ok":
            self.breaker.record(oracle.breaker_key, True)
            return True
        error = outcome.error
        if error is not None and error.counts_as_failure:
            described = redact(f"{error.kind}: {error.detail}", self.settings)
            self.breaker.record(oracle.breaker_key, False, described)
            return True
        return False


def outcome_error(outcome: MemberOutcome) -> AskFableError:
    """The error a failed single-oracle outcome stands for: the one raised, with its ``hint`` and
    ``retry_after_s``, else one rebuilt from the outcome's kind."""
    if outcome.error is not None:
        return outcome.error
    from ask_fable import errors

    by_kind: dict[str, type[AskFableError]] = {
        cls.kind: cls
        for cls in (
            errors.NotConfigured,
            errors.BinaryMissing,
            errors.ContextTooLarge,
            errors.CircuitOpen,
            errors.OracleTimeout,
            errors.UpstreamError,
            errors.BadArgs,
        )
    }
    error = by_kind.get(outcome.kind or "", UpstreamError)
    return error(outcome.detail or f"{outcome.token} failed", **errors.hinted(outcome.hint))
