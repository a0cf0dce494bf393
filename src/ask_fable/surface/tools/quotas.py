"""``key_usage``: each HTTP key's quota use against the limits in force, without calling anything.

A key sees the keys of its own tenant (its own use and that of the tenant's other keys); an admin
may name another tenant, or ``"*"`` for every key. The same report is ``ask-fable keys list``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ask_fable.access import ALL_TENANTS, READS
from ask_fable.contract import DataResult, Strict
from ask_fable.stores.records import QuotaLimits
from ask_fable.stores.views import KeyUsage
from ask_fable.surface.context import ToolContext
from ask_fable.surface.key_admin import key_report
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import TENANT


class KeyUsageArgs(BaseModel):
    """Arguments of key_usage."""

    model_config = ConfigDict(extra="forbid")

    tenant: str | None = TENANT


class KeyQuota(Strict):
    """One key: who, its own limits, the limits in force and its use of them."""

    id: int
    name: str
    scope: str
    tenant: str
    prefix: str
    active: bool
    created_at: str
    last_used_at: str | None = None
    revoked_at: str | None = None
    #: The key's own limits (null: the default applies) and those in force (null: unlimited).
    limits: QuotaLimits
    limits_in_force: QuotaLimits
    usage: KeyUsage


class KeyUsageResult(DataResult):
    """The result of key_usage."""

    count: int | None = None
    keys: list[KeyQuota] | None = None


async def key_usage(args: KeyUsageArgs, ctx: ToolContext) -> dict[str, Any]:
    """The active keys of the caller's tenant (or the one an admin names) with their quota use."""
    tenant = ctx.caller.view(args.tenant)
    app = ctx.app

    def collect() -> list[dict[str, Any]]:
        records = [k for k in app.keys.list_keys(include_revoked=False)
                   if tenant == ALL_TENANTS or k.tenant == tenant]
        return key_report(app, records)

    report = await app.run_store(collect)
    return {"status": "ok", "count": len(report), "keys": report}


TOOLS = [
    ToolSpec(
        name="key_usage",
        family="observability",
        description="Each HTTP API key of your tenant with its limits in force (calls per minute, calls "
        "in flight, dollars per UTC day; null: unlimited) and what it has used now. No model call.",
        args=KeyUsageArgs,
        result=KeyUsageResult,
        handler=key_usage,
        effects=READS,
        idempotent=True,
    ),
]
