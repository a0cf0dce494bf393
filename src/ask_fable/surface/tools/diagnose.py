"""``diagnose``: which backends are configured and reachable, and how to enable the rest (no model call)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ask_fable.access import FETCHES
from ask_fable.backends.descriptor import BackendReport
from ask_fable.backends.registry import backend_names
from ask_fable.contract import DataResult
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


class SettingIssue(BaseModel):
    """A setting that could not be used as written, and what is used instead."""

    model_config = ConfigDict(extra="forbid")

    setting: str | None = None
    source: str
    problem: str
    using: str
    message: str


class DiagnoseResult(DataResult):
    """Every backend's state, the ready / missing lists, and the settings that could not be used."""

    version: str | None = None
    ready: list[str] | None = None
    missing: list[str] | None = None
    backends: list[BackendReport] | None = None
    settings_problems: list[SettingIssue] | None = None


async def diagnose(args: DiagnoseArgs, ctx: ToolContext) -> dict[str, Any]:
    """Diagnose the backends with this server's settings and breaker."""
    from ask_fable.core.doctor import diagnose as run

    try:
        breaker = ctx.app.breaker
    except Exception:  # a breaker that cannot be built is reported as absent
        breaker = None
    report = await run(ctx.settings, breaker=breaker, probe=args.probe,
                       only=list(args.backends) if args.backends else None)
    data = report.to_dict()
    return {"status": "ok", "version": data["version"], "ready": data["ready"],
            "missing": data["missing"], "backends": data["backends"],
            "settings_problems": data["settings_problems"] or None}


TOOLS = [
    ToolSpec(
        name="diagnose",
        family="observability",
        description="Which backends are configured and reachable (no model call, no cost), the model and "
        "timeout each resolves to, its breaker state, the exact step that enables each missing one, and "
        "any setting that could not be used as written.",
        args=DiagnoseArgs,
        result=DiagnoseResult,
        handler=diagnose,
        effects=FETCHES,
        idempotent=True,
    ),
]
