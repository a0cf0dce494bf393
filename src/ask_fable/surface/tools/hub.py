"""The session hub tools: what several local agents asked and were told, for people to look at.

The hub is visibility-only: these tools read it, nothing reads it back into a model. The project
is this server's (``ASK_FABLE_PROJECT_ID`` or one derived from the working directory). Each tool
covers the caller's tenant; an admin may name another, or ``"*"`` for every tenant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ask_fable.access import READS
from ask_fable.contract import DataResult
from ask_fable.stores.views import HubSession, StoredHubTurn
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import TENANT, Args

if TYPE_CHECKING:
    from ask_fable.stores.interfaces import HubStore

DISABLED = (
    "the session hub is disabled (ASK_FABLE_HUB=0): nothing is recorded or read; "
    "stored data is kept and reappears when the hub is turned back on"
)



class SessionListArgs(Args):
    """Arguments of session_list."""

    all_projects: bool = Field(False, description="Every project in the hub, not only this one.")
    active_only: bool = Field(
        True, description="Hide sessions whose heartbeat is older than ASK_FABLE_HUB_STALE_SECONDS."
    )
    limit: int = Field(50, ge=1, le=200, description="How many rows, newest first (1–200).")
    tenant: str | None = TENANT


class PeekArgs(Args):
    """Arguments of session_peek."""

    session_key: str = Field(min_length=1, description="The session label (spans every project).")
    agent_id: str | None = Field(None, description="Only this agent's turns.")
    tenant: str | None = TENANT


class SessionStatsArgs(Args):
    """Arguments of session_stats."""

    all_projects: bool = Field(False, description="Every project in the hub, not only this one.")
    window_s: float = Field(86400, ge=0, description="Turns of the last N seconds (0 = all retained turns).")
    tenant: str | None = TENANT


class HubResult(DataResult):
    """Sessions, one session's turns, or turn totals, with the scope they cover."""

    enabled: bool | None = None
    tenant: str | None = None
    project: str | None = None
    all_projects: bool | None = None
    session_key: str | None = None
    agent_id: str | None = None
    count: int | None = None
    sessions: list[HubSession] | None = None
    turns: list[StoredHubTurn] | None = None
    turn_count: int | None = None
    window_s: float | None = None
    by_oracle: dict[str, int] | None = None
    by_agent: dict[str, int] | None = None
    by_status: dict[str, int] | None = None
    session_count: int | None = None
    active_sessions: int | None = None
    session_turns_total: int | None = None
    note: str | None = None


def _hub(ctx: ToolContext) -> HubStore | HubResult:
    """The session hub, or the ``not_configured`` result when it is turned off."""
    hub = ctx.app.hub
    if hub is None:
        return HubResult(status="error", kind="not_configured", enabled=False, detail=DISABLED,
                         hint="unset ASK_FABLE_HUB (or set it to 1) to turn the hub on")
    return hub


async def session_list(args: SessionListArgs, ctx: ToolContext) -> HubResult:
    """One row per (session, agent), newest heartbeat first; this project unless all_projects."""
    hub = _hub(ctx)
    if isinstance(hub, HubResult):
        return hub
    tenant = ctx.caller.view(args.tenant)
    project = ctx.app.project_id
    scope = None if args.all_projects else project
    rows = await ctx.app.run_store(
        lambda: hub.list_sessions(tenant, scope, active_only=args.active_only, limit=args.limit)
    )
    return HubResult(status="ok", enabled=True, tenant=tenant, project=project,
                     all_projects=args.all_projects, count=len(rows), sessions=rows)


async def session_peek(args: PeekArgs, ctx: ToolContext) -> HubResult:
    """Every retained turn of a session label, across projects, oldest first."""
    hub = _hub(ctx)
    if isinstance(hub, HubResult):
        return hub
    tenant = ctx.caller.view(args.tenant)
    turns = await ctx.app.run_store(lambda: hub.peek(tenant, args.session_key, args.agent_id))
    result = HubResult(status="ok", enabled=True, tenant=tenant, session_key=args.session_key,
                       agent_id=args.agent_id, count=len(turns), turns=turns)
    if not turns:
        result.note = "no retained turns for this session label; session_list shows the known ones"
    return result


async def session_stats(args: SessionStatsArgs, ctx: ToolContext) -> HubResult:
    """Turn totals by oracle, agent and status within window_s; session totals are not windowed."""
    hub = _hub(ctx)
    if isinstance(hub, HubResult):
        return hub
    tenant = ctx.caller.view(args.tenant)
    project = ctx.app.project_id
    scope = None if args.all_projects else project
    report = await ctx.app.run_store(lambda: hub.stats(tenant, scope, window_s=args.window_s))
    return HubResult(status="ok", enabled=True, tenant=tenant, project=project,
                     all_projects=args.all_projects,
                     window_s=args.window_s, turn_count=report["turns"], by_oracle=report["by_oracle"],
                     by_agent=report["by_agent"], by_status=report["by_status"],
                     session_count=report["sessions"], active_sessions=report["active_sessions"],
                     session_turns_total=report["session_turns_total"])


TOOLS = [
    ToolSpec(
        name="session_list",
        family="hub",
        description="Sessions recorded in the local session hub, one row per (session, agent), newest "
        "first, with a preview of the last question. This project unless all_projects; active_only "
        "hides stale heartbeats. Visibility only: never fed back to a model.",
        args=SessionListArgs,
        result=HubResult,
        handler=session_list,
        effects=READS,
        idempotent=True,
    ),
    ToolSpec(
        name="session_peek",
        family="hub",
        description="The retained questions and answers of one session label in order, across projects "
        "(agent_id narrows it). The hub holds full questions and answers: treat it as sensitive.",
        args=PeekArgs,
        result=HubResult,
        handler=session_peek,
        effects=READS,
        idempotent=True,
    ),
    ToolSpec(
        name="session_stats",
        family="hub",
        description="Hub turn totals by oracle, agent and status over window_s seconds (0 = all "
        "retained), plus session counts; this project unless all_projects.",
        args=SessionStatsArgs,
        result=HubResult,
        handler=session_stats,
        effects=READS,
        idempotent=True,
    ),
]
