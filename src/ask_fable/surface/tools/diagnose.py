"""``diagnose``: which backends are configured and reachable, and how to enable the rest (no model call)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ask_fable.access import FETCHES
from ask_fable.backends.descriptor import BackendReport
from ask_fable.backends.registry import backend_names
from ask_fable.contract import DataResult, PluginIssue, SavedSetting, SettingIssue
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec


def _registered(name: str) -> str:
    if name not in backend_names():
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(backend_names())}")
    return name


def _list_registered(schema: dict[str, Any]) -> None:
    """Publish the registered backends as the allowed values, read when the schema is built."""
    for arm in schema.get("anyOf", [schema]):
        if arm.get("type") == "array":
            arm["items"] = {"enum": backend_names(), "type": "string"}


class DiagnoseArgs(BaseModel):
    """Arguments of diagnose."""

    model_config = ConfigDict(extra="forbid")

    backends: list[Annotated[str, AfterValidator(_registered)]] | None = Field(
        None, description="Only these backends (default: all).", json_schema_extra=_list_registered
    )
    probe: bool = Field(
        True, description="Check reachability (CLI --version, TCP connect); false is instant."
    )


class DiagnoseResult(DataResult):
    """Every backend's state, the ready / missing lists, the settings that could not be used, and the
    settings saved to a shared database."""

    version: str | None = None
    ready: list[str] | None = None
    missing: list[str] | None = None
    backends: list[BackendReport] | None = None
    settings_problems: list[SettingIssue] | None = None
    saved_settings: list[SavedSetting] | None = None
    saved_settings_unread: str | None = Field(
        None, description="why the shared database's saved settings could not be read"
    )
    plugin_problems: list[PluginIssue] | None = Field(
        None, description="installed backend plugins that could not be loaded (their backends are absent)"
    )


async def diagnose(args: DiagnoseArgs, ctx: ToolContext) -> DiagnoseResult:
    """Diagnose the backends with this server's settings and breaker."""
    import anyio

    from ask_fable.core.doctor import diagnose as run
    from ask_fable.core.settings_in_force import settings_in_force

    try:
        breaker = ctx.app.breaker
    except Exception:  # a breaker that cannot be built is reported as absent
        breaker = None
    settings = ctx.settings
    in_force = await anyio.to_thread.run_sync(settings_in_force, settings)
    report = await run(settings, breaker=breaker, probe=args.probe,
                       only=list(args.backends) if args.backends else None, in_force=in_force)
    return DiagnoseResult(
        status="ok", version=report.version, ready=report.ready, missing=report.missing,
        backends=report.backends,
        settings_problems=report.settings_problems or None,
        saved_settings=[value.shown() for value in report.saved] or None,
        saved_settings_unread=report.saved_unread, plugin_problems=report.plugin_problems or None,
    )


TOOLS = [
    ToolSpec(
        name="diagnose",
        family="observability",
        description="Which backends are configured and reachable (no model call, no cost), the model and "
        "timeout each resolves to, its breaker state, the exact step that enables each missing one, "
        "any setting that could not be used as written, and on a shared database the settings saved there "
        "(who saved each, when, and the hand-set value it hides).",
        args=DiagnoseArgs,
        result=DiagnoseResult,
        handler=diagnose,
        effects=FETCHES,
        idempotent=True,
    ),
]
