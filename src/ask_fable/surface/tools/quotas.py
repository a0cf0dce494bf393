"""``key_usage``: each HTTP key's quota use against the limits in force, without calling anything.

A key sees the keys of its own tenant (its own use and that of the tenant's other keys); an admin
may name another tenant, or ``"*"`` for every key. The same report is ``ask-fable keys list``.
"""

from __future__ import annotations

from ask_fable.access import ALL_TENANTS, READS
from ask_fable.contract import DataResult
from ask_fable.surface.context import ToolContext
from ask_fable.surface.key_admin import KeyReport, key_report
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import TENANT, Args


class KeyUsageArgs(Args):
    """Arguments of key_usage."""

    tenant: str | None = TENANT


class KeyUsageResult(DataResult):
    """The result of key_usage."""

    count: int | None = None
    keys: list[KeyReport] | None = None


async def key_usage(args: KeyUsageArgs, ctx: ToolContext) -> KeyUsageResult:
    """The active keys of the caller's tenant (or the one an admin names) with their quota use."""
    tenant = ctx.caller.view(args.tenant)
    app = ctx.app

    def collect() -> list[KeyReport]:
        records = [k for k in app.keys.list_keys(include_revoked=False)
                   if tenant == ALL_TENANTS or k.tenant == tenant]
        return key_report(app, records)

    report = await app.run_store(collect)
    return KeyUsageResult(status="ok", count=len(report), keys=report)


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
