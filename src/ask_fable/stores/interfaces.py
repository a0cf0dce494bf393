"""The interface of each store: what the pipeline and the tools may ask of it, and nothing more.

Callers depend on these protocols, never on an implementation, so a second implementation
(another database) plugs in without touching them. Methods are synchronous and may block: async
callers run them through a :class:`StoreRunner` (``App.run_store``: one worker-thread hop per store
call, on SQLite and PostgreSQL alike). Writes take the records of
``stores/records.py``; reads return the views of ``stores/views.py``.

Every stored item belongs to a tenant (``ask_fable.access``): records carry theirs, and every
query takes the tenant it covers as its first argument. Only listings and look-ups by id accept
``ALL_TENANTS`` (``"*"``), which the tools pass for admin keys alone; writes, deletes, cache hits
and ``context_ref`` resolution always name one tenant.

Each protocol's implementation and callers are tabled in ``docs/architecture.md`` (stores).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

if TYPE_CHECKING:  # annotations only: the App imports this module at start, records load on use
    from collections.abc import Callable, Mapping, Sequence

    from ask_fable.stores.records import (
        ApiKey,
        AuditRecord,
        HubTurn,
        QuotaLimits,
        SavedAnswer,
        SavedSettings,
        SessionTurn,
        StoredSessionTurn,
        TraceBundle,
        TraceRecord,
        TraceSummary,
        Transcript,
        WebSession,
    )
    from ask_fable.stores.views import (
        Admission,
        AdmitRequest,
        CachedAnswer,
        ContextEntry,
        ContextListed,
        ContextMeta,
        HubSession,
        HubStats,
        InFlight,
        KeyUsage,
        ResolvedContext,
        SettleRequest,
        StatsReport,
        StoredHubTurn,
        StoredSession,
        TraceDetail,
    )


P = ParamSpec("P")
T = TypeVar("T")


class StoreRunner(Protocol):
    """How async code calls a store's blocking method (``App.run_store``): in a worker thread, one hop
    per store call."""

    async def __call__(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)``'s result, or what it raised."""
        ...


class ContextBus(Protocol):
    """Named chunks of context, each tenant's apart; values are stored redacted."""

    def write(self, tenant: str, key: str, value: str, description: str = "") -> ContextMeta:
        """Store ``value`` under the tenant's ``key`` (overwriting, keeping ``created_at``); ``BadArgs``,
        changing nothing, when it would put the tenant over its entries or bytes cap."""
        ...

    def read(self, tenant: str, key: str) -> ContextEntry | None:
        """The value and metadata under the tenant's ``key``, or ``None``."""
        ...

    def list(self, tenant: str) -> list[ContextListed]:
        """The tenant's entries (every tenant's for ``"*"``), most recently updated first; never
        the values."""
        ...

    def delete(self, tenant: str, key: str) -> bool:
        """Remove the tenant's ``key``; ``True`` if it existed."""
        ...

    def resolve(self, tenant: str, keys: builtins.list[str]) -> ResolvedContext:
        """The values of the tenant's ``keys`` joined under headers, with which were found and which not."""
        ...

    def suggest(self, tenant: str, missing: builtins.list[str], limit: int = 5) -> builtins.list[str]:
        """The tenant's stored keys that look like the ``missing`` ones, best first."""
        ...


class AnswerCacheStore(Protocol):
    """Result payloads by cache key (``cache.cache_key``), fresh for a TTL."""

    def get(self, tenant: str, key: str) -> CachedAnswer | None:
        """The payload and its age when the tenant has a fresh entry under ``key``."""
        ...

    def put(self, tenant: str, key: str, tool: str, payload: dict[str, Any]) -> None:
        """Store ``payload`` (redacted) under the tenant's ``key``."""
        ...


class TraceRecordStore(Protocol):
    """Finished calls' traces and, in full mode, their content bundles."""

    def record(self, trace: TraceRecord) -> None:
        """Store one trace under its tenant (replacing one with the same id)."""
        ...

    def record_many(self, traces: Sequence[TraceRecord]) -> None:
        """Store several traces at once, as :meth:`record` each: all of them, or none if it fails."""
        ...

    def write_bundle(self, trace_id: str, content: TraceBundle) -> object:
        """Keep the call's content (redacted, capped) under its tenant; returns where, or ``None``."""
        ...

    def list(
        self,
        tenant: str,
        limit: int = 20,
        tool: str | None = None,
        status: str | None = None,
        provider: str | None = None,
        session: str | None = None,
        project: str | None = None,
        before: str | float | None = None,
    ) -> list[TraceSummary]:
        """The tenant's traces (every tenant's for ``"*"``) newest first; ``before`` (a trace id or
        epoch seconds) pages back."""
        ...

    def get(self, tenant: str, trace_id: str) -> TraceDetail | None:
        """One of the tenant's traces with its events (any tenant's for ``"*"``), or ``None``."""
        ...

    def bundle_excerpt(self, tenant: str, trace_id: str, max_chars: int) -> str | None:
        """A redacted, bounded excerpt of the bundle of one of the tenant's traces, or ``None``."""
        ...


class HubStore(Protocol):
    """The session hub: successful turns of every server process, for visibility only."""

    def record_turn(self, turn: HubTurn) -> None:
        """Mirror one turn and refresh its session's heartbeat, under the turn's tenant."""
        ...

    def list_sessions(
        self, tenant: str, project: str | None, active_only: bool = True, limit: int = 50
    ) -> list[HubSession]:
        """One row per ``(tenant, session_key, agent_id)``, newest heartbeat first."""
        ...

    def peek(self, tenant: str, session_key: str, agent_id: str | None = None) -> list[StoredHubTurn]:
        """Every retained turn of one of the tenant's session labels, oldest first."""
        ...

    def stats(self, tenant: str, project: str | None, window_s: float = 86400) -> HubStats:
        """The tenant's turn totals by oracle, agent and status."""
        ...


class AuditStore(Protocol):
    """The audit trail, one record per call, and the statistics computed over it."""

    def append(self, record: AuditRecord) -> None:
        """Add one call's record (redacted, with its tenant), durably."""
        ...

    def append_many(self, records: Sequence[AuditRecord]) -> None:
        """Add several calls' records at once, as :meth:`append` each: all of them, or none if it fails."""
        ...

    def stats(
        self,
        tenant: str,
        window: str = "24h",
        by: str = "model",
        model: str | None = None,
        session: str | None = None,
        now: float | None = None,
    ) -> StatsReport:
        """The tenant's calls counted by outcome, latency and errors per bucket over a window
        (``stores/stats.py``)."""
        ...


class AnswerArchive(Protocol):
    """Answers and session transcripts kept for the user to read later."""

    def save_answer(self, answer: SavedAnswer) -> str:
        """Keep one answer with its tenant's; returns where it was kept."""
        ...

    def save_transcript(self, transcript: Transcript) -> str:
        """Keep one session's transcript with its tenant's; returns where it was kept."""
        ...


class SessionTranscriptStore(Protocol):
    """Conversation transcripts by tenant, model namespace and session key: what a session continues from.

    A warm model process is only a cache of a conversation; any server process (or replica) that
    reads the same store continues it. Text is stored redacted.
    """

    def turns(self, tenant: str, namespace: str, session: str) -> list[StoredSessionTurn]:
        """The session's turns, oldest first (empty when it has none or expired)."""
        ...

    def append(self, turn: SessionTurn) -> int:
        """Add one answered turn; returns how many turns its session now has."""
        ...

    def clear(self, tenant: str, namespace: str, session: str) -> list[StoredSessionTurn]:
        """Forget the session; returns the turns it had, oldest first."""
        ...

    def sessions(self, tenant: str, namespace: str) -> list[StoredSession]:
        """The namespace's sessions with at least one turn, most recently used first."""
        ...

    def lease(self, tenant: str, namespace: str, session: str, holder: str, ttl_s: float) -> bool:
        """Take the session's lease for ``holder`` for ``ttl_s`` seconds unless another live holder
        has it (atomic across processes); whether ``holder`` has it now."""
        ...

    def renew(self, tenant: str, namespace: str, session: str, holder: str, ttl_s: float) -> bool:
        """Extend ``holder``'s lease to ``ttl_s`` seconds from now; whether it still held it."""
        ...

    def release(self, tenant: str, namespace: str, session: str, holder: str) -> None:
        """Give up ``holder``'s lease."""
        ...


class ApiKeyStore(Protocol):
    """HTTP API keys, kept only as hashes."""

    def create(self, name: str, scope: str, tenant: str | None = None,
               limits: QuotaLimits | None = None) -> tuple[ApiKey, str]:
        """A new key's record and its plain value (shown once); the tenant defaults to one made from
        the name, each limit left ``None`` to the setting's default."""
        ...

    def set_limits(self, key_id: int | str, limits: QuotaLimits, *, clear: frozenset[str] = frozenset()
                   ) -> ApiKey:
        """Set the key's limits given in ``limits``; those named in ``clear`` follow the defaults again."""
        ...

    def list_keys(self, *, include_revoked: bool = True) -> list[ApiKey]:
        """Every key, oldest first."""
        ...

    def get(self, key_id: int | str) -> ApiKey | None:
        """One key by id or display prefix."""
        ...

    def revoke(self, key_id: int | str) -> ApiKey:
        """Revoke a key by id or display prefix."""
        ...

    #: Whether ``verify`` may wait on the network: callers on an event loop then run it in a
    #: worker thread. When False it reads local state only and is cheap enough for the loop.
    blocking: bool

    def verify(self, presented: str, *, touch: bool = True) -> ApiKey | None:
        """The active key matching ``presented``, or ``None``; a key revoked anywhere is refused on
        the next check. Writes nothing (``flush_usage`` writes the last use)."""
        ...

    def flush_usage(self) -> None:
        """Write the ``last_used_at`` noted by ``verify`` since the last flush (never raises)."""
        ...


class QuotaStore(Protocol):
    """Each key's calls per minute, calls in flight and spend per UTC day.

    Keys are named by tenant and key id (the local caller is key 0 of its tenant). An admission and
    a settlement are each atomic across every process sharing the store, so concurrent calls never
    push a key past a limit (beyond what calls in flight cost over their reservation).
    """

    def admit(self, tenant: str, key_id: int, limits: QuotaLimits, reserve_usd: float,
              now: float) -> Admission:
        """Count one call of the key and hold ``reserve_usd`` of its budget, or say which limit it hit."""
        ...

    def settle(self, tenant: str, key_id: int, ticket: str, cost_usd: float, now: float) -> None:
        """End an admitted call: free its place and replace its reservation by its real cost."""
        ...

    def apply(self, settles: Sequence[SettleRequest], admits: Sequence[AdmitRequest], renew: Sequence[str],
              holder: str, now: float, lease_s: float = 30.0) -> list[Admission]:
        """In one atomic step: renew the leases of the tickets ``renew``, settle ``settles``, then admit
        ``admits`` in order (held by ``holder``; leases of ``lease_s``); one :class:`Admission` each."""
        ...

    def in_flight(self, tenant: str, key_id: int, now: float) -> list[InFlight]:
        """The key's calls in flight whose lease has not lapsed."""
        ...

    def release(self, tenant: str, key_id: int, ticket: str | None = None) -> int:
        """Free the key's places in flight (one ticket's, or all); how many were freed."""
        ...

    def usage(self, tenant: str, now: float) -> list[KeyUsage]:
        """Each of the tenant's keys' use now (every tenant's for ``"*"``)."""
        ...


class SavedSettingsStore(Protocol):
    """The settings ``configure_*`` tools saved for every server on a shared database.

    The deployment's settings, not one tenant's: a save records the tenant of the caller who made
    it, and only administering callers reach it.
    """

    def load(self) -> SavedSettings:
        """Every saved setting and the revision they are at."""
        ...

    def save(self, updates: Mapping[str, Any], tenant: str) -> SavedSettings:
        """Save ``updates`` (``None`` removes a setting), raise the revision; the snapshot committed."""
        ...

    def close(self) -> None:
        """Close what the store opened."""
        ...


class WebSessionStore(Protocol):
    """The web view's login sessions by the digest of their id, shared by every server reading the store.

    A session names its tenant (``None`` only in anonymous sessions, which login forms no longer
    make: their tokens are signed with :meth:`signing_secret` instead). Look-ups are by digest,
    never by tenant: a session is its own caller's.
    """

    #: Whether the methods may wait on a database: callers on an event loop then run them in a
    #: worker thread.
    blocking: bool

    def add(self, session: WebSession, max_sessions: int, max_per_key: int) -> None:
        """Keep ``session``; sessions expired by its ``created_at`` are dropped first, then, with
        ``max_per_key`` of its key kept, that key's oldest, and with ``max_sessions`` kept, the oldest
        (anonymous ones before logged-in ones)."""
        ...

    def get(self, digest: str, now: float) -> WebSession | None:
        """The session under ``digest`` while it has not expired at ``now``, else ``None``."""
        ...

    def remove(self, digest: str) -> None:
        """Forget the session under ``digest`` (nothing happens when there is none)."""
        ...

    def count(self, now: float) -> int:
        """How many sessions have not expired at ``now``."""
        ...

    def signing_secret(self, candidate: str) -> str:
        """The secret login forms are signed with, the same for every server on the store: the one
        kept, else ``candidate``, kept from now on."""
        ...

    def close(self) -> None:
        """Close what the store opened."""
        ...


@dataclass(frozen=True)
class GivenStores:
    """Store implementations handed to the ``App``; each one left ``None`` is opened from settings.

    The switches still apply: a given cache or hub is not used while ``ASK_FABLE_CACHE`` or
    ``ASK_FABLE_HUB`` is off.
    """

    context: ContextBus | None = None
    cache: AnswerCacheStore | None = None
    traces: TraceRecordStore | None = None
    hub: HubStore | None = None
    audit: AuditStore | None = None
    answers: AnswerArchive | None = None
    keys: ApiKeyStore | None = None
    transcripts: SessionTranscriptStore | None = None
    quotas: QuotaStore | None = None
