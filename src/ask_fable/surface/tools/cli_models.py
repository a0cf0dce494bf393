"""Single-model tools answered by local, already-authenticated CLIs (MiniMax, Gemini, OpenAI, Grok, Kimi)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ask_fable.surface.tools.common import AskArgs, single_model_tool


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


_NEEDS = ("Needs `{binary}` installed (binary_missing otherwise) and `{login_fix}` done (not_configured "
          "otherwise).")

TOOLS = [
    single_model_tool(
        "ask_m3", "minimax",
        "One answer from {label} ({model}) through your logged-in {binary} CLI. Single-turn.\n" + _NEEDS,
    ),
    single_model_tool(
        "ask_gemini", "gemini",
        "One answer from Google {label} ({model}) through your signed-in {binary} CLI. Single-turn.\n"
        "Needs `{binary}` installed (binary_missing otherwise) and signed in (not_configured otherwise). The "
        "prompt travels as one argument: above ~120 KB it is refused with context_too_large.",
    ),
    single_model_tool(
        "ask_codex", "codex",
        "One answer from {label} ({model}) through your logged-in {binary} CLI (codex exec). Single-turn.\n"
        "Runs hermetic and read-only: it cannot see your repo, so put the code it needs in context. "
        + _NEEDS,
    ),
    single_model_tool(
        "ask_grok", "grok",
        "One answer from {label} ({model}) through your logged-in {binary} CLI. Single-turn.\n"
        "effort low/medium/high is passed to grok as is. The presets stay at low reasoning, keeping "
        "context-heavy turns bounded, unless ASK_FABLE_GROK_REASONING raises their cap (then quick = low, "
        "standard = medium, deep = high). The result's effort is the level used. " + _NEEDS,
        GrokArgs,
    ),
    single_model_tool(
        "ask_kimi", "kimi",
        "One answer from {label} ({model}) through your {binary} CLI, sandboxed to text (no tools, no "
        "files).\nSingle-turn, no per-token billing. effort low/high/max is passed to kimi as is; "
        "quick = low, standard = high, deep = max. The prompt travels as one argument: above ~120 KB it "
        "is refused with context_too_large; use ask_atlas with moonshotai/kimi-k3 for bigger context.",
        KimiArgs,
    ),
]
