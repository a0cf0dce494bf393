"""What the web view reads, and only through the store protocols (``stores/interfaces.py``).

Every read takes the viewer's ``tenant`` (every tenant, ``*``, for ``ask-fable ui``: the local user
owns the stores; the key's own on the team server) and passes it to the stores, which return that
tenant's items only. Reads block: callers
run them in a worker thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from ask_fable.stores.interfaces import AuditStore, TraceRecordStore
from ask_fable.stores.records import TraceSummary
from ask_fable.stores.stats import WINDOWS
from ask_fable.stores.trace_ids import valid_trace_id
from ask_fable.stores.views import StatsReport, TraceDetail

PAGE_SIZES = (20, 50, 100, 200)
DEFAULT_PAGE = 50
STATUSES = ("ok", "refused", "error", "needs_context", "context_exhausted", "cancelled")
#: Characters of a full-mode content bundle shown on a trace page.
CONTENT_CHARS = 100_000
TIME_FORMAT = "%Y-%m-%dT%H:%M"


@dataclass(frozen=True)
class TraceQuery:
    """The trace list's filters (those of ``trace_list`` plus a time range) and its page."""

    tool: str | None = None
    status: str | None = None
    provider: str | None = None
    session: str | None = None
    project: str | None = None
    since: float | None = None
    until: float | None = None
    before: str | None = None
    limit: int = DEFAULT_PAGE

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> tuple[TraceQuery, list[str]]:
        """The query a page's URL asks for, and what in it could not be used (ignored, and said)."""
        problems: list[str] = []

        def word(name: str) -> str | None:
            value = (params.get(name) or "").strip()
            return value[:200] or None

        def moment(name: str) -> float | None:
            value = word(name)
            if value is None:
                return None
            try:
                return datetime.fromisoformat(value).astimezone().timestamp()
            except ValueError:
                problems.append(f"{name}: {value!r} is not a date and time (YYYY-MM-DDTHH:MM); ignored")
                return None

        limit = DEFAULT_PAGE
        raw_limit = word("limit")
        if raw_limit is not None:
            if raw_limit.isdigit() and int(raw_limit) in PAGE_SIZES:
                limit = int(raw_limit)
            else:
                problems.append(
                    f"limit: use one of {', '.join(map(str, PAGE_SIZES))}; showing {DEFAULT_PAGE}"
                )
        before = word("before")
        if before is not None and not valid_trace_id(before):
            problems.append("before: not a trace id; showing the newest")
            before = None
        query = cls(
            tool=word("tool"),
            status=word("status"),
            provider=word("provider"),
            session=word("session"),
            project=word("project"),
            since=moment("from"),
            until=moment("to"),
            before=before,
            limit=limit,
        )
        return query, problems

    def params(self) -> dict[str, str]:
        """The URL parameters of this query, empty ones left out."""
        values = {
            "tool": self.tool,
            "status": self.status,
            "provider": self.provider,
            "session": self.session,
            "project": self.project,
            "from": _local(self.since),
            "to": _local(self.until),
            "before": self.before,
            "limit": None if self.limit == DEFAULT_PAGE else str(self.limit),
        }
        return {name: value for name, value in values.items() if value}

    def page(self, before: str | None) -> TraceQuery:
        """The same filters on the page that starts after ``before`` (``None``: the newest)."""
        return replace(self, before=before)

    @property
    def filtered(self) -> bool:
        """Whether any filter is set."""
        return any(
            (self.tool, self.status, self.provider, self.session, self.project, self.since, self.until)
        )


def _local(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts).astimezone().strftime(TIME_FORMAT)


@dataclass(frozen=True)
class TracePage:
    """One page of the trace list, newest first, and the cursor of the next (older) page."""

    rows: list[TraceSummary]
    next_before: str | None


def list_traces(store: TraceRecordStore, tenant: str, query: TraceQuery) -> TracePage:
    """A page of traces matching ``query``: newest first, paged with ``before``, within the time range."""
    before: str | float | None = query.before or query.until
    rows = store.list(
        tenant,
        limit=query.limit + 1,
        tool=query.tool,
        status=query.status,
        provider=query.provider,
        session=query.session,
        project=query.project,
        before=before,
    )
    if query.since is not None:
        # Rows come newest first, so those older than the range's start are all at the end.
        rows = [row for row in rows if row.ts >= query.since]
    more = len(rows) > query.limit
    rows = rows[: query.limit]
    return TracePage(rows=rows, next_before=rows[-1].trace_id if more and rows else None)


def read_trace(store: TraceRecordStore, tenant: str, trace_id: str) -> TraceDetail | None:
    """One trace with its events, or ``None`` when there is none by that id."""
    if not valid_trace_id(trace_id):
        return None
    return store.get(tenant, trace_id)


def read_content(store: TraceRecordStore, tenant: str, trace_id: str) -> str | None:
    """The redacted content kept for a trace recorded in full mode, or ``None`` (safe mode)."""
    return store.bundle_excerpt(tenant, trace_id, CONTENT_CHARS)


@dataclass(frozen=True)
class StatsView:
    """The stats page's figures: per provider (each backend call) and per mode, over one window."""

    window: str
    by_provider: StatsReport
    by_mode: StatsReport


def stats_window(value: str | None) -> str:
    """A known stats window (``1h``, ``24h``, ``7d``, ``all``); ``24h`` for anything else."""
    return value if value in WINDOWS else "24h"


def read_stats(audit: AuditStore, tenant: str, window: str) -> StatsView:
    """Calls, error rate, p50/p95 latency and cost per provider and per mode over ``window``."""
    window = stats_window(window)
    return StatsView(
        window=window, by_provider=audit.stats(tenant, window, "provider"),
        by_mode=audit.stats(tenant, window, "mode")
    )
