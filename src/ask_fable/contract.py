"""The response contract: the pydantic models every tool's structured result is validated against.

Every result is one JSON object whose ``status`` is ``ok | refused | error | needs_context |
context_exhausted``. Errors carry ``kind`` and ``detail``; guard refusals carry ``stage``,
``rule``, ``reason`` and ``how_to_reframe``. Results are dumped without ``None`` fields, except those
listed in a model's ``NULLABLE_FIELDS``, at any depth (``sidecar: null`` means the model gave no
parseable sidecar, ``synthesizer: null`` that no synthesis ran, ``debate.decisive_argument: null``
that nobody ruled).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ask_fable.values import Confidence, Recommendation, Sidecar, Usage

Status = Literal["ok", "refused", "error", "needs_context", "context_exhausted", "cancelled"]


class Strict(BaseModel):
    """Base for contract models: unknown fields are a bug, not data."""

    model_config = ConfigDict(extra="forbid")

    #: Fields where ``null`` carries meaning (kept when set); every other ``None`` is omitted.
    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset()

    def wire(self) -> dict[str, JsonValue]:
        """The JSON form sent to clients: ``None`` dropped unless a model gives that null a meaning."""
        payload = self.model_dump(mode="json", exclude_none=True)
        _keep_meaningful_nulls(self, payload)
        return payload


def _keep_meaningful_nulls(model: Strict, payload: dict[str, JsonValue]) -> None:
    """Put back the set ``NULLABLE_FIELDS`` that ``exclude_none`` dropped, in nested models too."""
    for name in model.model_fields_set:
        value, dumped = getattr(model, name), payload.get(name)
        if value is None:
            if name in model.NULLABLE_FIELDS:
                payload[name] = None
        elif isinstance(value, Strict) and isinstance(dumped, dict):
            _keep_meaningful_nulls(value, dumped)
        elif isinstance(value, list) and isinstance(dumped, list):
            for item, entry in zip(value, dumped, strict=False):
                if isinstance(item, Strict) and isinstance(entry, dict):
                    _keep_meaningful_nulls(item, entry)


class ToolResult(Strict):
    """Fields every tool may return."""

    #: Occasional diagnostics left out of the published output schema, so that every listed tool
    #: costs the client less context. They still arrive when set (the schema does not forbid
    #: extra fields) and ``ask_fable_help`` describes them.
    UNLISTED_FIELDS: ClassVar[frozenset[str]] = frozenset(
        {"how_to_reframe", "rule", "retry_after_s", "warnings", "did_you_mean", "cache_age_s",
         "routed_via", "thinking", "cost_source", "estimate"}
    )

    status: Status
    trace_id: str | None = None
    kind: str | None = Field(None, description="error kind, e.g. bad_args, not_configured, timeout")
    detail: str | None = None
    stage: str | None = Field(None, description="where a refusal happened: guard or model")
    rule: str | None = Field(None, description="the guard rule that refused, e.g. attack_tooling")
    reason: str | None = None
    how_to_reframe: str | None = None
    hint: str | None = Field(None, description="the next step that fixes an error")
    warnings: list[str] | None = Field(
        None, description="settings this call read that could not be used as written, and the fallback used"
    )
    retry_after_s: float | None = Field(
        None, description="circuit_open: seconds until the breaker lets the backend be tried again; "
        "quota_exceeded: seconds until the key's limit frees"
    )


class ServerErrorResult(Strict):
    """An error the server answers itself, with no tool's result model to give it: a call to a tool it
    does not serve, or a tool's result outside its schema. Its fields keep the order they were first
    sent in (``trace_id`` last)."""

    status: Literal["error"] = "error"
    kind: str
    detail: str
    hint: str | None = None
    warnings: list[str] | None = None
    trace_id: str | None = None


class SettingIssue(Strict):
    """A setting that could not be used as written, and what is used instead, as reports show it."""

    setting: str | None = None
    source: str
    problem: str
    using: str
    message: str


class HiddenValue(Strict):
    """The config-file or environment value a saved setting hides."""

    source: str
    value: str


class SavedSetting(Strict):
    """A setting saved to the shared database by a configure tool, as ``ask-fable doctor`` shows it."""

    setting: str
    value: JsonValue
    saved_by: str = Field(description="the tenant of the caller who saved it")
    saved_at: str = Field(description="when, ISO-8601 UTC")
    in_force: bool = Field(description="false when the saved value does not validate (see settings_problems)")
    shadows: HiddenValue | None = Field(None, description="the different hand-set value it hides")


class PluginIssue(Strict):
    """An installed backend plugin that could not be loaded, as reports show it."""

    plugin: str = Field(description="the entry point's name")
    target: str = Field(description="what it points at (module:attribute)")
    problem: str
    message: str


class Followup(Strict):
    """What the model asked for, and how to give it."""

    needs_context: list[str]
    how: str
    likely_already_pasted: list[str] = Field(default_factory=list)


class Telemetry(Strict):
    """Timing and routing of the call."""

    status: str
    elapsed_ms: int | None = None
    provider: str | None = None
    model: str | None = None


class PlannedCost(Strict):
    """One backend call an estimate plans, priced at a typical answer and at its backend's max_tokens."""

    token: str
    model: str
    provider: str
    role: str
    prompt_tokens: int
    max_output_tokens: int
    typical_usd: float
    max_usd: float
    price_source: Literal["estimated", "unknown"] | None = None
    available: bool | None = Field(None, description="false: the model cannot run now and is not counted")


class CostEstimate(Strict):
    """What a call is expected to cost before it runs (``estimate: true``, or a ``max_cost_usd`` refusal)."""

    calls: list[PlannedCost]
    typical_usd: float
    max_usd: float
    cost_source: Literal["estimated", "unknown"]
    over_budget: list[str] | None = Field(None, description="members left out to fit max_cost_usd")


class ModeFields(Strict):
    """What a mode adds to its answer (``ModeOutcome.fields``): the pipeline merges its wire form into
    the tool's result. Each mode's result model is its fields and an ``AnswerResult``."""


class TurnFields(ModeFields):
    """What one turn of a conversation (``ask``) adds: its number, the session's cost, a note."""

    turn: int | None = None
    session_cost_usd: float | None = None
    note: str | None = None


class AnswerResult(ToolResult):
    """The result of every reasoning tool: one answer, its sidecar and where it came from."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"sidecar"})

    model: str | None = None
    answer: str | None = None
    sidecar: Sidecar | None = None
    followup: Followup | None = None
    telemetry: Telemetry | None = None
    usage: Usage | None = None
    cost_usd: float | None = Field(
        None, description="this call's cost in dollars: the sum over every model call it made (members, "
        "synthesis, fallbacks, stages, turns); see cost_source"
    )
    cost_source: Literal["reported", "estimated", "mixed", "unknown"] | None = Field(
        None, description="reported by the providers, estimated from tokens and a price table, mixed, or "
        "unknown (some part has no known price: cost_usd counts only the priced parts)"
    )
    session_cost_usd: float | None = Field(
        None, description="ask / ask_opus5: the conversation's total cost so far, this turn included"
    )
    estimate: CostEstimate | None = Field(
        None, description="estimate=true: expected cost per model and in total (typical and at max_tokens)"
    )
    effort: str | None = None
    routed_via: str | None = None
    session: str | None = None
    turn: int | None = None
    cached: bool | None = None
    cache_age_s: float | None = None
    note: str | None = None
    context_ref_resolved: list[str] | None = None
    context_ref_missing: list[str] | None = None
    did_you_mean: list[str] | None = None
    thinking: str | None = None
    saved: str | None = None

    def take(self, fields: ModeFields) -> None:
        """Set what a mode adds to this answer (``ModeOutcome.fields``): each of its fields that is not
        ``None``, and a set ``None`` where the contract gives null a meaning. A field this result does
        not have is an error."""
        for name in type(fields).model_fields:
            value = getattr(fields, name)
            if value is not None or (name in fields.NULLABLE_FIELDS and name in fields.model_fields_set):
                setattr(self, name, value)


class StepOutcome(Strict):
    """One model's part in a multi-model call: how it went and what it recommended."""

    model: str
    status: str
    recommendation: Recommendation | None = None
    confidence: Confidence | None = None
    kind: str | None = None
    detail: str | None = None
    hint: str | None = Field(None, description="a model that could not run: the step that fixes it")
    elapsed_ms: int | None = None
    cost_usd: float | None = Field(None, description="what this model's call cost (see cost_source)")
    cost_source: Literal["reported", "estimated", "unknown"] | None = None


class SourceEntry(StepOutcome):
    """One council member's outcome."""

    token: str | None = None
    provider: str | None = None
    answer: str | None = None
    retry_after_s: float | None = Field(
        None, description="circuit_open: seconds until the breaker lets this member be tried again"
    )


class SynthesisAttempt(Strict):
    """One synthesizer the council tried, and how it went."""

    token: str
    status: str
    kind: str | None = None
    hint: str | None = None


class SynthesisInfo(Strict):
    """Which synthesizer was asked for, which one ran, and what was tried on the way."""

    requested: str
    used: str | None = None
    fallback: bool = False
    tried: list[SynthesisAttempt] = Field(default_factory=list)


class CouncilFields(ModeFields):
    """What a council adds to its answer: its members, the synthesis and the consensus signal."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"synthesizer"})

    mode: Literal["council"] | None = None
    synthesizer: str | None = Field(None, description="the token that synthesized; null when none did")
    synthesis: SynthesisInfo | None = None
    sources: list[SourceEntry] | None = None
    consensus: Literal["strong", "partial", "divergent", "unknown"] | None = None
    material_disagreement: bool | None = None
    quorum: str | None = None
    effective_models: list[str] | None = None
    degraded: bool | None = None
    confidence: Confidence | None = None
    recommended_next_action: str | None = None
    note: str | None = None


class CouncilResult(CouncilFields, AnswerResult):
    """A council: parallel members, an anonymized synthesis and a consensus signal."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = AnswerResult.NULLABLE_FIELDS | CouncilFields.NULLABLE_FIELDS


#: What a chain stage does: the first drafts, the middle ones critique, the last decides; a fallback
#: synthesizer decides when the last stage failed.
ChainRole = Literal["draft", "critique", "decide", "fallback"]


class ChainStage(StepOutcome):
    """One stage of a chain."""

    stage: int
    role: ChainRole


class ChainFields(ModeFields):
    """What a chain adds to its answer: its stages in order and how its recommendation drifted."""

    mode: Literal["chain"] | None = None
    pipeline: list[str] | None = None
    answered_by: str | None = None
    stages: list[ChainStage] | None = None
    recommendation_drift: list[str | None] | None = None
    material_drift: bool | None = None
    answered: int | None = None
    requested: int | None = None
    fallback: str | None = None
    recommended_next_action: str | None = Field(
        None, description="when a stage's model could not run: how to bring it back")


class ChainResult(ChainFields, AnswerResult):
    """A chain: ordered draft → critique → decide stages."""


class DebateTurn(StepOutcome):
    """One turn of a debate."""

    role: str


class LedgerClaim(Strict):
    """One claim of a debate's ledger and what became of it."""

    id: str
    claim: str
    disposition: str | None = None
    response: str | None = None
    rebuttal: str | None = None
    status: str


class DebateBlock(Strict):
    """How a debate went and how it was resolved."""

    NULLABLE_FIELDS: ClassVar[frozenset[str]] = frozenset({"decisive_argument"})

    pairing: str
    adjudicator: str | None = None
    adjudicator_independent: bool | None = Field(
        None, description="false when the adjudicator is one of the debating pair (not a third party)"
    )
    rounds: int
    resolution: Literal["conceded", "converged", "adjudicated", "stalemate", "degraded_single_critic"]
    claims: list[LedgerClaim] = Field(default_factory=list)
    contested_claims_remaining: int
    recommendation_drift: list[str | None] = Field(default_factory=list)
    low_effort_opposition: bool = False
    material_disagreement: bool = False
    decisive_argument: str | None = Field(
        None, description="the adjudicator's decisive argument; null when there was no ruling"
    )


class DebateFields(ModeFields):
    """What a debate adds to its answer: its turns and how the claims ledger was resolved."""

    mode: Literal["debate"] | None = None
    answered_by: str | None = None
    turns: list[DebateTurn] | None = None
    debate: DebateBlock | None = None
    recommended_next_action: str | None = Field(
        None, description="when a role's model could not run: how to bring it back")
    note: str | None = None


class DebateResult(DebateFields, AnswerResult):
    """A debate: proposer vs opponent over a claims ledger, then a third-party ruling."""


class DataResult(ToolResult):
    """Base for non-reasoning tools (catalogs, context bus, observability) that add their own fields."""
