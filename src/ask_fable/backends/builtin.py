"""The built-in backends, one descriptor each, in the order ``doctor`` reports them.

The Claude backends are declared here, the local-CLI ones in :mod:`ask_fable.backends.cli_backends`,
and each HTTP provider is a module of its own under :mod:`ask_fable.backends.providers` (its
settings, descriptor and factory). A factory imports its implementation only when an oracle is
built, so reading this list (token resolution, help, docs) imports no backend implementation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ask_fable.backends.claude_common import FABLE51_MODEL, FABLE_LADDER
from ask_fable.backends.cli_backends import CODEX, GEMINI, GROK, KIMI, MINIMAX
from ask_fable.backends.descriptor import SESSION_HELP, Backend, ModelTool, Token
from ask_fable.backends.probes import probe_claude
from ask_fable.backends.providers.atlas import ATLAS
from ask_fable.backends.providers.deepseek import DEEPSEEK
from ask_fable.backends.providers.glm import GLM
from ask_fable.backends.providers.ollama import OLLAMA
from ask_fable.backends.providers.openrouter import OPENROUTER

if TYPE_CHECKING:
    from ask_fable.backends.base import Oracle
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings


def _claude(settings: Settings, *, token: str, model: str | None, effort: str | None,
            resources: Resources | None) -> Oracle:
    """The Claude oracle for ``token`` (the Agent SDK route is imported when a call needs it)."""
    from ask_fable.backends.claude import make_claude_oracle

    return make_claude_oracle(settings, token, resources=resources)


_CLAUDE_NEEDS = "Claude Code, logged in"
_CLAUDE_STEP = (
    "log in once: run `ask-fable login` (it runs the Claude Code that claude-agent-sdk bundles; "
    "reinstall ask-fable if that is missing, or set ASK_FABLE_CLAUDE_CLI to another Claude Code)"
)

FABLE = Backend(
    name="fable", label="Claude Fable", family="anthropic", transport="claude",
    build=_claude, probe=probe_claude, enable=_CLAUDE_STEP,
    tokens=(Token("fable", about="newest Fable"), Token("fable51", about=f"pinned {FABLE51_MODEL}")),
    model_of=lambda s: s.fable_model, model_fallback=f"{FABLE_LADDER[0]} (falls back to {FABLE_LADDER[-1]})",
    needs=_CLAUDE_NEEDS, tools=("ask",), tier="default", cost_rank=9, context_tokens=200_000,
    labs=(r"Anthropic",), products=(r"Claude",),
)
OPUS = Backend(
    name="opus", label="Claude Opus 5", family="anthropic", transport="claude",
    build=_claude, probe=probe_claude, enable=_CLAUDE_STEP,
    tokens=(Token("opus", aliases=("opus5", "opus-5")),), model_of=lambda s: s.opus_model,
    needs=_CLAUDE_NEEDS, tier="middle", cost_rank=7, context_tokens=200_000,
    labs=(r"Anthropic",), products=(r"Claude",),
    tool=ModelTool("ask_opus5", "The same as ask on {label} ({model}): about half Fable's price and faster.\n"
                   + SESSION_HELP + ' Its sessions are ask(model="opus5")\'s.', session=True),
)
BUILTIN: tuple[Backend, ...] = (
    FABLE, OPUS, MINIMAX, GEMINI, CODEX, GROK, KIMI, GLM, DEEPSEEK, ATLAS, OPENROUTER, OLLAMA,
)
