"""Operations tools: ``stats`` over the audit log, ``trace_list`` / ``trace_get`` over the trace
index, and ``configure_tracing`` (persisted to the config file, applied on the next call).

None of them calls a model or goes through the answer cache. Each reading tool covers the caller's
tenant; an admin may name another, or ``"*"`` for every tenant.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, JsonValue, field_validator

from ask_fable.access import ADMINISTERS, READS
from ask_fable.contract import DataResult, Status
from ask_fable.stores.records import TraceSummary
from ask_fable.stores.stats import BY_VALUES, WINDOWS
from ask_fable.stores.views import BucketFigures, StatsBucket, TraceDetail
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import TENANT, Args, clamped_note, save_settings, saved_note
from ask_fable.values import SENT_WHOLE

MAX_TRACE_LIST = 200
MAX_EXCERPT_CHARS = 100_000
#: The allowed values of stats' ``window`` and ``by``, as the schema advertises them.
_WINDOWS: list[JsonValue] = list(WINDOWS)
_BY: list[JsonValue] = list(BY_VALUES)
#: The statuses a result (and so a trace) can have.
_STATUSES: list[JsonValue] = list(get_args(Status))


class StatsArgs(Args):
    """Arguments of stats."""

    # Plain strings (with an advertised enum) so a bad value gets a bad_args listing the allowed ones.
    window: str = Field("24h", description="1h, 24h, 7d or all.", json_schema_extra={"enum": [*_WINDOWS]})
    by: str = Field(
        "model",
        description="Bucket by model (a council counts under its synthesizer), provider (each backend "
        "call, council members one by one), tool, session, day, project, cache, mode or tenant.",
        json_schema_extra={"enum": _BY},
    )
    model: str | None = Field(None, description="Only calls of this model or provider.")
    session: str | None = Field(None, description="Only calls of this session.")
    tenant: str | None = TENANT


class TraceListArgs(Args):
    """Arguments of trace_list."""

    limit: int = Field(20, description=f"How many traces, newest first (clamped to 1–{MAX_TRACE_LIST}).")
    tool: str | None = Field(None, description="Only this tool, e.g. ask_council.")
    status: str | None = Field(None, description="Only this status: ok, refused, error, needs_context…",
                               json_schema_extra={"enum": _STATUSES})
    provider: str | None = Field(None, description="Only traces that called this provider.")
    session: str | None = Field(None, description="Only this session label.")
    project: str | None = Field(None, description="Only this project label.")
    before: str | None = Field(
        None, description="Page back: traces older than this trace_id (or epoch seconds); use next_before."
    )
    tenant: str | None = TENANT

    @field_validator("status")
    @classmethod
    def _status(cls, value: str | None) -> str | None:
        """A status a result can have (any other would match no trace, and say nothing of it)."""
        if value is not None and value not in _STATUSES:
            raise ValueError(f"no result has status {value!r}; use {', '.join(map(str, _STATUSES))}")
        return value

    @field_validator("before")
    @classmethod
    def _cursor(cls, value: str | None) -> str | None:
        """A trace id's shape, or epoch seconds from 0 (no trace is older than the epoch)."""
        from ask_fable.stores.trace_ids import valid_trace_id

        text = (value or "").strip()
        if not text:
            return value
        try:
            seconds = float(text)
        except ValueError:
            if valid_trace_id(text):
                return value
        else:
            if math.isfinite(seconds) and seconds >= 0:
                return value
        raise ValueError("use a trace_id (next_before) or epoch seconds from 0")


class TraceGetArgs(Args):
    """Arguments of trace_get."""

    trace_id: str = Field(description="A trace_id from a tool result or trace_list.")
    include_content: bool = Field(
        False, description="Full trace mode only: add a redacted, bounded excerpt of the call's content."
    )
    max_chars: int = Field(
        4000, ge=1, description=f"Cap on the content excerpt (at most {MAX_EXCERPT_CHARS})."
    )
    tenant: str | None = TENANT


class TracingArgs(Args):
    """Arguments of configure_tracing."""

    trace_mode: Literal["safe", "full"] | None = Field(
        None, description="safe: metadata only. full: also redacted content bundles and saved answers."
    )
    stream_reasoning: bool | None = Field(
        None, description="Stream model reasoning live to the server's stderr."
    )


class StatsResult(DataResult):
    """Buckets and totals of calls, outcomes and latency over a window."""

    tenant: str | None = None
    window: str | None = None
    by: str | None = None
    since: float | None = None
    filters: dict[str, str] | None = None
    records: int | None = None
    buckets: list[StatsBucket] | None = None
    totals: Annotated[BucketFigures, SENT_WHOLE] | None = None
    allowed: list[str] | None = None


class TraceResult(DataResult):
    """A page of traces (trace_list) or one trace's timeline (trace_get)."""

    count: int | None = None
    limit: int | None = None
    next_before: str | None = None
    traces: list[TraceSummary] | None = None
    trace: TraceDetail | None = None
    trace_mode: str | None = None
    content: str | None = None
    content_truncated: bool | None = None
    content_note: str | None = None
    #: Set when the limit given was outside 1–200 and the clamped one was used.
    note: str | None = None


class TracingResult(DataResult):
    """What configure_tracing saved, and the settings now in force."""

    config_file: str | None = None
    trace_mode: str | None = None
    stream_reasoning: bool | None = None
    save_answers: bool | None = None
    note: str | None = None


async def stats(args: StatsArgs, ctx: ToolContext) -> StatsResult:
    """Usage and health figures from the audit log (rotated segments included)."""
    from ask_fable.stores.stats import validate

    validate(args.window, args.by)
    tenant = ctx.caller.view(args.tenant)
    audit = ctx.app.audit
    report = await ctx.app.run_store(
        lambda: audit.stats(tenant, args.window, args.by, args.model, args.session)
    )
    filters = {k: v for k, v in report["filters"].items() if v is not None}
    return StatsResult(status="ok", tenant=report["tenant"], window=report["window"], by=report["by"],
                       since=report["since"], filters=filters, records=report["records"],
                       buckets=report["buckets"], totals=report["totals"])


#: Tools whose calls only look at traces: left out of trace_list unless asked for by name, so a
#: listing never starts with the listings before it.
LOOKUP_TOOLS = frozenset({"trace_list", "trace_get"})
#: Store pages read at most to fill one listing past the look-ups left out.
LOOKUP_PAGES = 5


async def trace_list(args: TraceListArgs, ctx: ToolContext) -> TraceResult:
    """Recent traces without content, newest first; ``before`` pages back."""
    limit = max(1, min(int(args.limit), MAX_TRACE_LIST))
    tenant = ctx.caller.view(args.tenant)
    store = ctx.app.traces
    cursor = args.before.strip() if args.before else None
    before: str | float | None = cursor
    if cursor is not None:
        try:
            before = float(cursor)
        except ValueError:  # a trace id (its shape is checked with the arguments)
            if await ctx.app.run_store(store.get, tenant, cursor) is None:
                return TraceResult(status="error", kind="not_found",
                                   detail=f"before names no stored trace ({cursor})",
                                   hint="use next_before from the previous page, or epoch seconds")
    rows: list[TraceSummary] = []
    more = False
    for _ in range(LOOKUP_PAGES):
        page = await ctx.app.run_store(
            partial(store.list, tenant, limit=limit + 1, tool=args.tool, status=args.status,
                    provider=args.provider, session=args.session, project=args.project, before=before)
        )
        rows += [row for row in page if args.tool is not None or row.tool not in LOOKUP_TOOLS]
        more = len(page) > limit
        if len(rows) > limit or not more:
            break
        before = page[-1].trace_id
    more = more or len(rows) > limit
    rows = rows[:limit]
    result = TraceResult(status="ok", count=len(rows), limit=limit, traces=rows)
    if more and rows:
        result.next_before = rows[-1].trace_id
    note = clamped_note("limit", args.limit, limit, 1, MAX_TRACE_LIST)
    if note:
        result.note = note
    return result


async def trace_get(args: TraceGetArgs, ctx: ToolContext) -> TraceResult:
    """One trace's ordered events and artifacts; in full mode optionally a bounded content excerpt."""
    from ask_fable.errors import BadArgs
    from ask_fable.stores.trace_ids import valid_trace_id

    if not valid_trace_id(args.trace_id):
        raise BadArgs("trace_id must be letters, digits, '_' or '-' (as returned by a tool or trace_list)")
    tenant = ctx.caller.view(args.tenant)
    store = ctx.app.traces
    trace = await ctx.app.run_store(store.get, tenant, args.trace_id)
    if trace is None:
        return TraceResult(status="error", kind="not_found", detail=f"no trace {args.trace_id!r} is stored",
                           hint="trace_list shows the stored traces")
    result = TraceResult(status="ok", trace=trace, trace_mode=ctx.settings.trace_mode)
    if not args.include_content:
        return result
    # A bundle written while full mode was on stays readable after switching back to safe mode.
    cap = min(int(args.max_chars), MAX_EXCERPT_CHARS)
    excerpt = await ctx.app.run_store(store.bundle_excerpt, tenant, args.trace_id, cap + 1)
    if excerpt is None:
        result.content_note = (
            "no content bundle was captured for this trace (it ran in safe mode: metadata only); "
            "configure_tracing(trace_mode=\"full\") captures redacted content for later calls"
        )
        return result
    result.content = excerpt[:cap]
    result.content_truncated = len(excerpt) > cap
    return result


async def configure_tracing(args: TracingArgs, ctx: ToolContext) -> TracingResult:
    """Persist the trace mode and/or live reasoning streaming; applied on the next call."""
    from ask_fable.errors import BadArgs

    updates: dict[str, Any] = {}
    if args.trace_mode is not None:
        updates["trace_mode"] = args.trace_mode
    if args.stream_reasoning is not None:
        updates["stream_reasoning"] = args.stream_reasoning
    if not updates:
        raise BadArgs("pass trace_mode (\"safe\" or \"full\"), stream_reasoning (true/false), or both")
    where = await save_settings(ctx, updates)
    settings = ctx.settings  # re-read: the saved settings changed
    note = saved_note(where, "ASK_FABLE_TRACE_MODE / ASK_FABLE_STREAM_REASONING")
    if not all(getattr(settings, name) == value for name, value in updates.items()):
        note += "; this server runs with fixed settings, so it applies to servers started from now on"
    return TracingResult(status="ok", config_file=where, trace_mode=settings.trace_mode,
                         stream_reasoning=settings.stream_reasoning, save_answers=settings.save_answers,
                         note=note)


TOOLS = [
    ToolSpec(
        name="stats",
        family="observability",
        description="Usage and health from the audit log (rotations included), no model call, never "
        "cached. Per bucket, each call counted once as ok, refused, errors, not_configured (config "
        "states), circuit_open, needs_context or cancelled; plus allowed, avg/p50/p95 latency, error "
        "rate, reported cost, totals. "
        "A failure counts under the model asked. window: 1h|24h|7d|all; "
        "by: model|provider|tool|session|day|project|cache|mode|tenant.",
        args=StatsArgs,
        result=StatsResult,
        handler=stats,
        effects=READS,
        idempotent=True,
    ),
    ToolSpec(
        name="trace_list",
        family="observability",
        description="Recent request traces without content, newest first. Filter by tool, status, "
        "provider, session or project; page back with before=next_before. Calls of trace_list and "
        "trace_get themselves are left out unless tool names them.",
        args=TraceListArgs,
        result=TraceResult,
        handler=trace_list,
        effects=READS,
        idempotent=True,
    ),
    ToolSpec(
        name="trace_get",
        family="observability",
        description="One call's ordered event timeline (request, context, guard, cache, each provider, "
        "response) and its artifacts. In full trace mode include_content=true adds a redacted excerpt "
        "of at most max_chars.",
        args=TraceGetArgs,
        result=TraceResult,
        handler=trace_get,
        effects=READS,
        idempotent=True,
    ),
    ToolSpec(
        name="configure_tracing",
        family="catalogs",
        description="Switch trace capture at runtime, saved to the config file or the shared database "
        "when there is one (overrides ASK_FABLE_TRACE_MODE / ASK_FABLE_STREAM_REASONING) and applied on "
        "the next call, on every replica: "
        "trace_mode safe|full (full also stores redacted content bundles and saves answers), "
        "stream_reasoning true|false.",
        args=TracingArgs,
        result=TracingResult,
        handler=configure_tracing,
        effects=ADMINISTERS,
        idempotent=True,
    ),
]
