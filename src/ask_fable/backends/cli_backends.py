"""The local-CLI backends (MiniMax, Gemini, OpenAI's codex, Grok, Kimi): their descriptors and factories.

A factory imports :mod:`ask_fable.backends.cli_oracles` when it builds an oracle and hands the
oracle its descriptor, so reading these descriptors (token resolution, help, docs) imports no CLI
implementation, and the implementation imports no descriptor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ask_fable.backends.descriptor import Backend, ModelTool, Token
from ask_fable.backends.probes import probe_cli

if TYPE_CHECKING:
    from ask_fable.backends.cli_oracles import (
        CodexOracle,
        GeminiOracle,
        GrokOracle,
        KimiOracle,
        MiniMaxOracle,
    )
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings


# --- factories: each reads its model and timeout through its descriptor, and hands the oracle the
# descriptor (the oracle classes import no descriptor) ------------------------------------------


def make_minimax_oracle(settings: Settings, *, resources: Resources | None = None) -> MiniMaxOracle:
    """The ``minimax`` oracle (``mmx``)."""
    from ask_fable.backends.cli_oracles import MiniMaxOracle

    return MiniMaxOracle(settings, backend=MINIMAX, model=MINIMAX.model(settings),
                         timeout_s=MINIMAX.timeout(settings), resources=resources)


def make_gemini_oracle(settings: Settings, *, resources: Resources | None = None) -> GeminiOracle:
    """The ``gemini`` oracle (``agy``)."""
    from ask_fable.backends.cli_oracles import GeminiOracle

    return GeminiOracle(settings, backend=GEMINI, model=GEMINI.model(settings),
                        timeout_s=GEMINI.timeout(settings), resources=resources)


def make_codex_oracle(settings: Settings, *, resources: Resources | None = None) -> CodexOracle:
    """The ``codex`` oracle (``codex exec``, effort from ``ASK_FABLE_CODEX_REASONING``)."""
    from ask_fable.backends.cli_oracles import CodexOracle

    return CodexOracle(settings, backend=CODEX, model=CODEX.model(settings),
                       timeout_s=CODEX.timeout(settings),
                       resources=resources)


def make_grok_oracle(settings: Settings, effort: str | None = None, model: str | None = None, *,
                     resources: Resources | None = None) -> GrokOracle:
    """The ``grok`` oracle; ``model`` may be an ``xai/`` or ``x-ai/`` id (the prefix is dropped)."""
    from ask_fable.backends.cli_oracles import GrokOracle

    chosen = (model or GROK.model(settings)).strip()
    for prefix in ("xai/", "x-ai/"):
        if chosen.lower().startswith(prefix):
            chosen = chosen[len(prefix):]
    return GrokOracle(settings, backend=GROK, model=chosen, timeout_s=GROK.timeout(settings), effort=effort,
                      resources=resources)


def make_kimi_oracle(settings: Settings, effort: str | None = None, model: str | None = None, *,
                     resources: Resources | None = None) -> KimiOracle:
    """The ``kimi`` oracle (also ``ASK_FABLE_KIMI_EFFORT`` / ``_HOME``)."""
    from ask_fable.backends.cli_oracles import KimiOracle

    return KimiOracle(settings, backend=KIMI, model=model or KIMI.model(settings),
                      timeout_s=KIMI.timeout(settings),
                      effort=effort, resources=resources)


_NEEDS = ("Needs `{binary}` installed (binary_missing otherwise) and `{login_fix}` done (not_configured "
          "otherwise).")

MINIMAX = Backend(
    name="minimax", label="MiniMax", family="minimax", transport="cli",
    build=lambda settings, *, token, model, effort, resources: make_minimax_oracle(
        settings, resources=resources), probe=probe_cli,
    enable="install the MiniMax CLI (npm install -g mmx-cli) and run `mmx auth login` once",
    tokens=(Token("minimax", aliases=("m3",)),), binary="mmx", login_fix="mmx auth login",
    model_of=lambda s: s.minimax_model, tier="default", cost_rank=0,
    context_tokens=200_000,
    labs=(r"MiniMax",), products=(r"MiniMax",),
    tool=ModelTool(
        "ask_m3",
        "One answer from {label} ({model}) through your logged-in {binary} CLI. Single-turn.\n" + _NEEDS,
    ),
)
GEMINI = Backend(
    name="gemini", label="Gemini", family="google", transport="cli",
    build=lambda settings, *, token, model, effort, resources: make_gemini_oracle(
        settings, resources=resources), probe=probe_cli,
    enable="install the `agy` CLI and sign in once (run `agy` interactively)",
    tokens=(Token("gemini"),), binary="agy", login_fix="agy", model_of=lambda s: s.gemini_model,
    timeout_of=lambda s: s.gemini_timeout, needs="`agy` CLI, signed in", tier="middle",
    cost_rank=5, context_tokens=1_000_000, labs=(r"Google(?:\s+DeepMind)?", r"DeepMind"),
    products=(r"Gemini",),
    tool=ModelTool(
        "ask_gemini",
        "One answer from Google {label} ({model}) through your signed-in {binary} CLI. Single-turn.\n"
        "Needs `{binary}` installed (binary_missing otherwise) and signed in (not_configured otherwise). The "
        "prompt travels as one argument: above ~120 KB it is refused with context_too_large.",
    ),
)
CODEX = Backend(
    name="codex", label="OpenAI", family="openai", transport="cli",
    build=lambda settings, *, token, model, effort, resources: make_codex_oracle(
        settings, resources=resources), probe=probe_cli,
    enable="install OpenAI's codex CLI (npm install -g @openai/codex) and run `codex login` once",
    tokens=(Token("codex", aliases=("gpt",)),), binary="codex", login_fix="codex login",
    model_of=lambda s: s.codex_model, timeout_of=lambda s: s.codex_timeout,
    tier="middle", cost_rank=6, context_tokens=272_000, labs=(r"OpenAI",),
    products=(r"ChatGPT", r"GPT", r"Codex"),
    tool=ModelTool(
        "ask_codex",
        "One answer from {label} ({model}) through your logged-in {binary} CLI (codex exec). Single-turn.\n"
        "Runs hermetic and read-only: it cannot see your repo, so put the code it needs in context. "
        + _NEEDS,
    ),
)
GROK = Backend(
    name="grok", label="Grok", family="xai", transport="cli",
    build=lambda settings, *, token, model, effort, resources: make_grok_oracle(
        settings, effort=effort, resources=resources), probe=probe_cli,
    enable="install the `grok` CLI and run `grok login` once",
    tokens=(Token("grok"),), binary="grok", login_fix="grok login", model_of=lambda s: s.grok_model,
    timeout_of=lambda s: s.grok_timeout, tier="middle", cost_rank=4,
    context_tokens=256_000,
    labs=(r"xAI",), products=(r"Grok",),
    tool=ModelTool(
        "ask_grok",
        "One answer from {label} ({model}) through your logged-in {binary} CLI. Single-turn.\n"
        "effort low/medium/high is passed to grok as is. The presets stay at low reasoning, keeping "
        "context-heavy turns bounded, unless ASK_FABLE_GROK_REASONING raises their cap (then quick = low, "
        "standard = medium, deep = high). The result's effort is the level used. " + _NEEDS,
        effort=True, effort_choices=("quick", "standard", "deep", "low", "medium", "high"),
        effort_arg="Grok's own low, medium or high, used as is; or quick / standard / deep (low / medium / "
        "high, capped at ASK_FABLE_GROK_REASONING, default low). Omitted: ASK_FABLE_GROK_REASONING.",
    ),
)
KIMI = Backend(
    name="kimi", label="Kimi", family="moonshot", transport="cli",
    build=lambda settings, *, token, model, effort, resources: make_kimi_oracle(
        settings, effort=effort, resources=resources), probe=probe_cli,
    enable="install the Kimi Code CLI (`kimi`) and run `kimi login` once",
    tokens=(Token("kimi"),), binary="kimi", login_fix="kimi login", model_of=lambda s: s.kimi_model,
    timeout_of=lambda s: s.kimi_timeout, tier="middle", cost_rank=3,
    context_tokens=256_000,
    labs=(r"Moonshot(?:\s+AI)?",), products=(r"Kimi",),
    tool=ModelTool(
        "ask_kimi",
        "One answer from {label} ({model}) through your {binary} CLI, sandboxed to text (no tools, no "
        "files).\nSingle-turn, no per-token billing. effort low/high/max is passed to kimi as is; "
        "quick = low, standard = high, deep = max. The prompt travels as one argument: above ~120 KB it "
        "is refused with context_too_large; use ask_atlas with moonshotai/kimi-k3 for bigger context.",
        effort=True, effort_choices=("quick", "standard", "deep", "low", "high", "max"),
        effort_arg="Kimi's own low, high or max, used as is; or quick (low), standard (high), deep (max). "
        "Omitted: ASK_FABLE_KIMI_EFFORT.",
    ),
)
