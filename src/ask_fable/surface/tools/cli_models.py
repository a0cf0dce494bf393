"""Single-model tools answered by local, already-authenticated CLIs: mmx, agy, codex, grok, kimi."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ask_fable.contract import AnswerResult
from ask_fable.surface.context import ToolContext
from ask_fable.surface.registry import ToolSpec
from ask_fable.surface.tools.common import AskArgs, run_single_tool


class GrokArgs(AskArgs):
    """Arguments of ask_grok."""

    effort: Literal["quick", "standard", "deep", "low", "medium", "high"] | None = Field(
        None,
        description="Grok's own low, medium or high, used as is; or quick / standard / deep (low / medium / "
        "high, capped at ASK_FABLE_GROK_REASONING, default low). Omitted: ASK_FABLE_GROK_REASONING.",
    )


class KimiArgs(AskArgs):
    """Arguments of ask_kimi."""

    effort: Literal["quick", "standard", "deep", "low", "high", "max"] | None = Field(
        None,
        description="Kimi's own low, high or max, used as is; or quick (low), standard (high), deep (max). "
        "Omitted: ASK_FABLE_KIMI_EFFORT.",
    )


async def ask_m3(args: AskArgs, ctx: ToolContext) -> dict[str, Any]:
    """MiniMax through the mmx CLI."""
    from ask_fable.backends.cli_oracles import make_minimax_oracle

    return await run_single_tool(ctx, "ask_m3", args, make_minimax_oracle)


async def ask_gemini(args: AskArgs, ctx: ToolContext) -> dict[str, Any]:
    """Gemini through the agy CLI."""
    from ask_fable.backends.cli_oracles import make_gemini_oracle

    return await run_single_tool(ctx, "ask_gemini", args, make_gemini_oracle)


async def ask_codex(args: AskArgs, ctx: ToolContext) -> dict[str, Any]:
    """OpenAI through codex exec, hermetic and read-only."""
    from ask_fable.backends.cli_oracles import make_codex_oracle

    return await run_single_tool(ctx, "ask_codex", args, make_codex_oracle)


async def ask_grok(args: GrokArgs, ctx: ToolContext) -> dict[str, Any]:
    """Grok through the grok CLI."""
    from ask_fable.backends.cli_oracles import make_grok_oracle

    def build(settings: Any) -> Any:
        return make_grok_oracle(settings, effort=args.effort)

    return await run_single_tool(ctx, "ask_grok", args, build, effort=args.effort)


async def ask_kimi(args: KimiArgs, ctx: ToolContext) -> dict[str, Any]:
    """Kimi through the kimi CLI, sandboxed to text."""
    from ask_fable.backends.cli_oracles import make_kimi_oracle

    def build(settings: Any) -> Any:
        return make_kimi_oracle(settings, effort=args.effort)

    return await run_single_tool(ctx, "ask_kimi", args, build, effort=args.effort)


def _spec(name: str, description: str, args: type[AskArgs], handler: Any) -> ToolSpec:
    return ToolSpec(name=name, family="single", description=description, args=args, result=AnswerResult,
                    handler=handler, read_only=True, open_world=True)


TOOLS = [
    _spec(
        "ask_m3",
        "One answer from MiniMax (MiniMax-M3) through your logged-in mmx CLI. Single-turn.\n"
        "Needs `mmx` installed (binary_missing otherwise) and `mmx auth login` done (not_configured "
        "otherwise).",
        AskArgs,
        ask_m3,
    ),
    _spec(
        "ask_gemini",
        "One answer from Google Gemini (Gemini 3.1 Pro (High)) through your signed-in agy CLI. Single-turn.\n"
        "Needs `agy` installed (binary_missing otherwise) and signed in (not_configured otherwise). The "
        "prompt travels as one argument: above ~120 KB it is refused with context_too_large.",
        AskArgs,
        ask_gemini,
    ),
    _spec(
        "ask_codex",
        "One answer from OpenAI (gpt-5.6-sol) through your logged-in codex CLI (codex exec). Single-turn.\n"
        "Runs hermetic and read-only: it cannot see your repo, so put the code it needs in context. "
        "Needs `codex` installed (binary_missing otherwise) and `codex login` done (not_configured "
        "otherwise).",
        AskArgs,
        ask_codex,
    ),
    _spec(
        "ask_grok",
        "One answer from Grok (grok-4.6) through your logged-in grok CLI. Single-turn.\n"
        "effort low/medium/high is passed to grok as is. The presets stay at low reasoning, keeping "
        "context-heavy turns bounded, unless ASK_FABLE_GROK_REASONING raises their cap (then quick = low, "
        "standard = medium, deep = high). The result's effort is the level used. Needs `grok` installed "
        "(binary_missing otherwise) and `grok login` done (not_configured otherwise).",
        GrokArgs,
        ask_grok,
    ),
    _spec(
        "ask_kimi",
        "One answer from Kimi (kimi-code/k3) through your kimi CLI, sandboxed to text (no tools, no files).\n"
        "Single-turn, no per-token billing. effort low/high/max is passed to kimi as is; quick = low, "
        "standard = high, deep = max. The prompt travels as one argument: above ~120 KB it is refused "
        "with context_too_large; use ask_atlas with moonshotai/kimi-k3 for bigger context.",
        KimiArgs,
        ask_kimi,
    ),
]
