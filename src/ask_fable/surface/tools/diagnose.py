"""``diagnose``: which backends are configured and reachable, and how to enable the rest (no model call)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ask_fable.contract import DataResult
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec

Backend = Literal["fable", "opus", "minimax", "gemini", "codex", "grok", "kimi",
                  "glm", "deepseek", "atlas", "openrouter", "ollama"]


class DiagnoseArgs(BaseModel):
    """Arguments of diagnose."""

    model_config = ConfigDict(extra="forbid")

    backends: list[Backend] | None = Field(None, description="Only these backends (default: all).")
    probe: bool = Field(
        True, description="Check reachability (CLI --version, TCP connect); false is instant."
    )


class BackendState(BaseModel):
    """One backend as diagnose reports it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: str
    configured: bool
    reachable: bool | None = None
    status: str
    model: str | None = None
    timeout_s: float | None = None
    breaker: str | None = None
    version: str | None = None
    detail: str | None = None
    enable: str | None = None


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
    backends: list[BackendState] | None = None
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
        read_only=True,
        idempotent=True,
        open_world=True,
    ),
]
