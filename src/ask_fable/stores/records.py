"""The records stores take: one pydantic model per thing a finished call leaves behind.

    AuditRecord ── members: MemberRecord…    one audit line (ModeAudit: what a mode adds to it)
    TraceSummary                             one trace without its events (as trace_list shows it)
    TraceRecord ── events: TraceEvent…       a TraceSummary with its ordered timeline
    TraceBundle ── members: BundleMember…    full-mode content of one call
    HubTurn                                  one successful turn mirrored to the session hub
    SavedAnswer                              one answer kept as a file
    SessionTurn                              one answered turn of a conversation, kept to continue it
    Transcript ── turns: TranscriptTurn…     one conversation, saved as a file on reset
    ApiKey ── limits: QuotaLimits            one HTTP API key, without its secret, and its own limits
    SavedSettings                            the settings configure_* tools saved, at one revision
    WebSession                               one login to the web view, by the digest of its id

The pipeline builds them, the recorders hand each to its store, and every store implementation
(SQLite and files today) takes them as they are. Each names the tenant it belongs to (``local``
unless an HTTP key's tenant made the call). Audit records are also read back from the log,
so every audit field has a default: older and partial lines still read.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ask_fable.access import LOCAL_TENANT, Scope


class Record(BaseModel):
    """Base of the records written by the pipeline, and of the views stores read back as models
    (``stores/views.py``): an unknown field is a bug."""

    model_config = ConfigDict(extra="forbid")


class _AuditPart(BaseModel):
    # Lines are read back from the log, where older versions may have written other fields.
    model_config = ConfigDict(extra="ignore")


class MemberRecord(_AuditPart):
    """One backend call of a call, as its audit line lists it (metadata only)."""

    token: str | None = None
    provider: str | None = None
    model: str | None = None
    status: str | None = None
    kind: str | None = None
    elapsed_ms: int | float | None = None
    role: str | None = None
    cost_usd: float | None = Field(
        None, description="what this call cost, in dollars: reported, else priced from its tokens")
    cost_source: str | None = Field(None, description="reported, estimated or unknown (backends/pricing.py)")


class ModeAudit(_AuditPart):
    """What a multi-model mode adds to its audit line; only the fields a mode sets are written."""

    quorum: str | None = Field(None, description='council: "answered/asked"')
    consensus: str | None = Field(None, description="council: agreement of the members' sidecars")
    synth_fallback: bool | None = Field(None, description="council: the requested synthesizer failed")
    answered: int | None = Field(None, description="chain: stages that answered")
    requested: int | None = Field(None, description="chain: stages asked for")
    fallback: bool | None = Field(None, description="chain: a fallback synthesizer decided")
    resolution: str | None = Field(None, description="debate: how the ledger resolved")
    turns: int | None = Field(None, description="debate: turns taken")


class _CallAudit(_AuditPart):
    ts: float | None = None
    trace_id: str | None = None
    #: Lines written before tenants belong to the local tenant.
    tenant: str = LOCAL_TENANT
    tool: str | None = None
    mode: str | None = None
    status: str | None = None
    kind: str | None = None
    allowed: bool | None = None
    stage: str | None = None
    model: str | None = None
    provider: str | None = None
    session: str | None = None
    project: str | None = None
    agent_id: str | None = None
    elapsed_ms: int | float | None = None
    cached: bool = False
    question_sha256: str | None = None
    question_len: int | None = None
    context_sha256: str | None = None
    context_len: int | None = None
    members: list[MemberRecord] = Field(default_factory=list)


# Bases in this order put the call's fields first in each line (``ts`` leading, which lets
# readers skip old lines unparsed), then the mode's, then the opt-in raw content.
class AuditRecord(ModeAudit, _CallAudit):
    """One call's line in the audit log: who asked what (hashed unless raw is on), and how it went."""

    question: str | None = Field(None, description="the raw question (ASK_FABLE_AUDIT_RAW)")
    context_raw: str | None = Field(None, description="the raw context (ASK_FABLE_AUDIT_RAW_CONTEXT)")

    def line(self) -> dict[str, Any]:
        """The JSON object written for this record: the fields it was given, in schema order."""
        return self.model_dump(exclude_unset=True)


class TraceEvent(Record):
    """One step of a call's timeline: milliseconds since the call began, a name, metadata."""

    t_ms: int | float | None = None
    name: str
    attrs: dict[str, JsonValue] = Field(default_factory=dict)


class TraceSummary(Record):
    """One call's trace without its events: what ran and how it ended (``trace_list`` shows these)."""

    trace_id: str
    tenant: str = LOCAL_TENANT
    ts: float = Field(default_factory=time.time)
    tool: str | None = None
    mode: str | None = None
    status: str | None = None
    kind: str | None = None
    session: str | None = None
    project: str | None = None
    agent_id: str | None = None
    elapsed_ms: int | float | None = None
    providers: list[str] = Field(default_factory=list)
    models: list[str] = Field(default_factory=list)
    cached: bool = False


class TraceRecord(TraceSummary):
    """One finished call's trace: its summary and its ordered events (no content)."""

    events: list[TraceEvent] = Field(default_factory=list)


class BundleMember(Record):
    """One member's answer and reasoning in a full-mode bundle."""

    token: str
    answer: str | None = None
    thinking: str | None = None


class TraceBundle(Record):
    """The content of one call, kept in full trace mode (redacted by the store)."""

    tenant: str = LOCAL_TENANT
    question: str
    context: str
    result: dict[str, Any]
    reasoning: str | None = None
    members: list[BundleMember] = Field(default_factory=list)


class HubTurn(Record):
    """One successful turn as the session hub mirrors it."""

    tenant: str = LOCAL_TENANT
    session_key: str
    agent_id: str
    project: str
    oracle: str
    status: str
    question: str
    answer: str
    elapsed_ms: int | float | None = None
    sdk_session_id: str | None = None


class SavedAnswer(Record):
    """One answer kept as a file when saving is on."""

    tenant: str = LOCAL_TENANT
    tool: str
    question: str
    answer: str
    thinking: str | None = None
    trace_id: str | None = None
    model: str | None = None
    transcript: str | None = Field(None, description="a debate's full transcript, saved as its own section")


class SessionTurn(Record):
    """One answered turn of a conversation (``ask`` with a ``session``), as the transcript store keeps it.

    ``namespace`` is the model's conversation space (``fable``, ``opus5``, ``deepseek``,
    ``openrouter:<id>``…), ``session`` the caller's session key; ``prompt`` is the user message as it
    was sent (question and context), replayed to the model on later turns, ``question`` what the
    transcript shows. The store gives it back as a :class:`StoredSessionTurn`.
    """

    tenant: str = "local"
    namespace: str
    session: str
    question: str
    prompt: str
    answer: str
    thinking: str | None = None
    model: str | None = None
    cost_usd: float | None = None


class StoredSessionTurn(SessionTurn):
    """A turn as the transcript store gives it back (its session key as stored: redacted), numbered
    from 1 within its session, with the time it was stored; a reset saves these in its transcript."""

    number: int
    ts: float = Field(description="when the turn was stored (Unix seconds)")


class Transcript(Record):
    """A multi-turn session's turns, saved when the session is reset."""

    key: str
    tenant: str = LOCAL_TENANT
    namespace: str = "fable"
    turns: list[StoredSessionTurn] = Field(default_factory=list)


@dataclass(frozen=True)
class QuotaLimits:
    """What one caller may use: calls per minute, calls in flight, dollars per UTC day.

    ``None`` means no limit. On a key record, ``None`` means the setting's default applies
    (``key_rpm``, ``key_concurrent``, ``key_daily_usd``), and 0 means unlimited.
    """

    rpm: int | None = None
    concurrent: int | None = None
    daily_usd: float | None = None


@dataclass(frozen=True)
class ApiKey:
    """One stored HTTP API key, without its secret."""

    id: int
    name: str
    scope: Scope
    tenant: str
    prefix: str
    created_at: str
    last_used_at: str | None
    revoked_at: str | None
    #: The key's own limits; each ``None`` falls back to the setting's default.
    limits: QuotaLimits = QuotaLimits()

    @property
    def active(self) -> bool:
        """False once revoked."""
        return self.revoked_at is None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (never contains the key)."""
        return {**asdict(self), "active": self.active}


@dataclass(frozen=True)
class SavedSettings:
    """The settings the ``configure_*`` tools saved to a shared database, at one revision (raised by
    every save), by setting name. They are the deployment's, not one tenant's: the store keeps with
    each the tenant of the caller who saved it."""

    revision: int
    values: dict[str, Any]


@dataclass(frozen=True)
class WebSession:
    """One web view session, stored by the SHA-256 ``digest`` of its id (the id is the browser's
    alone). Anonymous (a login form's, before the key is entered) while ``name`` is ``None``; then
    ``tenant`` is ``None`` too. Times are wall-clock seconds."""

    digest: str
    tenant: str | None
    name: str | None
    key_id: int | None
    sees_server_paths: bool
    csrf: str
    created_at: float
    expires_at: float
