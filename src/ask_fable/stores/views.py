"""What stores return to readers, and tools put in their results as they are.

A view that has a record (``stores/records.py``) is that record, or a model derived from it
(``TraceDetail`` is a ``TraceSummary`` with its events, ``StoredHubTurn`` a ``HubTurn`` with its row
id and time); a view a tool returns is a model too (``HubSession``, the context entries, each a
``ContextMeta`` with more); the others are typed dicts,
free to build in bulk (``stats`` reads thousands of rows).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import Field, model_serializer, model_validator

# typing_extensions' TypedDict, which pydantic reads on Python 3.11 too: a view may be a field of a
# result model (``key_usage``'s ``usage``).
from typing_extensions import TypedDict

from ask_fable.stores.records import HubTurn, QuotaLimits, Record, TraceEvent, TraceSummary


class ContextMeta(Record):
    """A context entry without its value (``context_write``, ``context_pack``)."""

    tenant: str
    key: str
    description: str = ""
    size_chars: int
    created_at: float
    updated_at: float


class ContextListed(ContextMeta):
    """A listed context entry: its metadata and age, never its value (``context_list``)."""

    age_s: float


class ContextEntry(ContextListed):
    """A context entry read back: value, metadata and age."""

    value: str


class ResolvedContext(NamedTuple):
    """``context_ref`` keys joined into one text, and which of them exist."""

    text: str
    resolved: list[str]
    missing: list[str]


class CachedAnswer(NamedTuple):
    """A fresh cache entry: the stored result payload and its age in seconds."""

    payload: dict[str, Any]
    age_s: float


class TraceDetail(TraceSummary):
    """One trace as ``trace_get`` shows it: its ordered events (bounded) and artifact references."""

    events: list[TraceEvent] = Field(default_factory=list)
    events_truncated: bool = False
    artifacts: dict[str, str] = Field(default_factory=dict, description="e.g. bundle: its file path")


class HubSession(Record):
    """One ``(session_key, agent_id)`` heartbeat of a tenant with its last question previewed."""

    tenant: str | None = None
    session_key: str
    agent_id: str
    project: str
    first_seen: float
    last_seen: float
    age_s: float
    stale: bool
    turns: int
    retained_turns: int
    last_question: str = ""
    last_oracle: str | None = None
    last_status: str | None = None


class StoredHubTurn(HubTurn):
    """One retained hub turn: the turn as recorded, with its row id and time."""

    id: int
    ts: float


class StoredSession(TypedDict):
    """One stored conversation of a model: its session key, turns and last activity."""

    session: str
    turns: int
    last_ts: float
    model: str | None


class HubStats(TypedDict):
    """Turn totals of the session hub over a window."""

    tenant: str
    project: str | None
    window_s: float
    turns: int
    by_oracle: dict[str, int]
    by_agent: dict[str, int]
    by_status: dict[str, int]
    sessions: int
    active_sessions: int
    session_turns_total: int


class BucketFigures(TypedDict):
    """One ``stats`` bucket's figures (also the totals)."""

    calls: int
    ok: int
    allowed: int
    refused: int
    errors: int
    not_configured: int
    circuit_open: int
    needs_context: int
    cancelled: int
    avg_ms: float | None
    p50_ms: float | None
    p95_ms: float | None
    error_rate: float
    degraded: int
    synth_fallback: int
    cost_usd: float | None


class StatsBucket(Record):
    """One ``stats`` bucket: the value of ``by`` it counts (a model, a day…) and its figures.

    It is sent as ``{<by>: key, **figures}`` (``{"model": "glm-5.2", "calls": 3, …}``), every figure
    included: a ``null`` there means no call gave that figure (no latency sample, no price).
    """

    by: str
    key: str
    figures: BucketFigures

    @model_serializer
    def _sent(self) -> dict[str, object]:
        return {self.by: self.key, **self.figures}

    @model_validator(mode="before")
    @classmethod
    def _from_sent(cls, data: object) -> object:
        """Read a bucket in the form it is sent: the one key that is not a figure names ``by``."""
        if not isinstance(data, dict) or "figures" in data:
            return data
        named = [name for name in data if name not in BucketFigures.__required_keys__]
        if len(named) != 1:
            return data  # not a sent bucket: validation says what is wrong with it
        by = named[0]
        return {"by": by, "key": data[by], "figures": {k: v for k, v in data.items() if k != by}}


class StatsReport(TypedDict):
    """What ``stats`` returns: its buckets and their totals."""

    tenant: str
    window: str
    by: str
    since: float | None
    filters: dict[str, str | None]
    records: int
    buckets: list[StatsBucket]
    totals: BucketFigures


class AdmitRequest(NamedTuple):
    """One call to admit: whose key, its limits, and the dollars it sets aside."""

    tenant: str
    key_id: int
    limits: QuotaLimits
    reserve_usd: float


class SettleRequest(NamedTuple):
    """One call that ended: its ticket and what it cost."""

    tenant: str
    key_id: int
    ticket: str
    cost_usd: float


class InFlight(TypedDict):
    """One call a key holds a place in flight for."""

    ticket: str
    holder: str
    started_at: float
    expires_at: float
    reserved_usd: float


class Admission(NamedTuple):
    """The quota store's answer to one call: admitted with a ticket to settle, or the limit it hit."""

    admitted: bool
    #: What :meth:`QuotaStore.settle` takes when the call ends (admitted calls only).
    ticket: str | None = None
    #: ``rpm``, ``concurrent`` or ``daily_usd`` when refused.
    limit: str | None = None
    #: Seconds until the limit frees: the end of the minute or UTC day, or a short wait for a call in flight.
    retry_after_s: float | None = None
    #: What the key has used of the limit it hit (calls, or dollars with reservations).
    used: float | None = None


class KeyUsage(TypedDict):
    """One key's use of its quotas now: calls this minute, calls in flight, dollars today."""

    tenant: str
    key_id: int
    calls_this_minute: int
    in_flight: int
    calls_today: int
    spent_usd_today: float
    reserved_usd: float
