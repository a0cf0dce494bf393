"""The built-in backends, one descriptor each, in the order ``doctor`` reports them.

A descriptor names its implementation by module and factory; the module is imported only when an
oracle is built, so reading this list (token resolution, help, docs) imports no backend.
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Callable
from typing import TYPE_CHECKING

from ask_fable.backends.claude_common import FABLE51_MODEL, FABLE_LADDER
from ask_fable.backends.descriptor import Backend, BackendReport, Factory, ProbeOptions, Token
from ask_fable.backends.model_ids import (
    normalize_atlas_model,
    normalize_ollama_model,
    normalize_openrouter_model,
)
from ask_fable.backends.probes import probe_claude, probe_cli, probe_key, probe_ollama

if TYPE_CHECKING:
    from ask_fable.backends.base import Oracle
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings


def lazy_factory(module: str, function: str, *passes: str) -> Factory:
    """A factory calling ``ask_fable.backends.<module>.<function>(settings, …, resources=…)`` with the
    options in ``passes`` (``token``, ``model``, ``effort``), importing the module on first use."""

    def build(settings: Settings, *, token: str, model: str | None, effort: str | None,
              resources: Resources | None) -> Oracle:
        given = {"token": token, "model": model, "effort": effort}
        implementation = importlib.import_module(f"ask_fable.backends.{module}")
        make: Callable[..., Oracle] = getattr(implementation, function)
        return make(settings, **{name: given[name] for name in passes}, resources=resources)

    return build


async def _probe_atlas(backend: Backend, settings: Settings, options: ProbeOptions) -> BackendReport:
    """Atlas's key probe, noting that its Grok models run on the local grok CLI without a key."""
    report = await probe_key(backend, settings, options)
    if not report.configured and backend.model(settings).startswith("xai/grok") and shutil.which("grok"):
        report.detail = f"{report.detail}; xai/grok-* models still work through the local grok CLI"
    return report


_CLAUDE_NEEDS = "Claude Code, logged in"
_CLAUDE_STEP = (
    "log in once: run `ask-fable login` (it runs the Claude Code that claude-agent-sdk bundles; "
    "reinstall ask-fable if that is missing, or set ASK_FABLE_CLAUDE_CLI to another Claude Code)"
)

FABLE = Backend(
    name="fable", label="Claude Fable", family="anthropic", transport="claude",
    build=lazy_factory("claude", "make_claude_oracle", "token"), probe=probe_claude, enable=_CLAUDE_STEP,
    tokens=(Token("fable", about="newest Fable"), Token("fable51", about=f"pinned {FABLE51_MODEL}")),
    model_setting="fable_model", model_fallback=f"{FABLE_LADDER[0]} (falls back to {FABLE_LADDER[-1]})",
    needs=_CLAUDE_NEEDS, tools=("ask",), tier="default", cost_rank=9, context_tokens=200_000,
)
OPUS = Backend(
    name="opus", label="Claude Opus 5", family="anthropic", transport="claude",
    build=lazy_factory("claude", "make_claude_oracle", "token"), probe=probe_claude, enable=_CLAUDE_STEP,
    tokens=(Token("opus", aliases=("opus5", "opus-5")),), model_setting="opus_model",
    needs=_CLAUDE_NEEDS, tools=("ask_opus5",), tier="middle", cost_rank=7, context_tokens=200_000,
)
MINIMAX = Backend(
    name="minimax", label="MiniMax", family="minimax", transport="cli",
    build=lazy_factory("cli_oracles", "make_minimax_oracle"), probe=probe_cli,
    enable="install the MiniMax CLI (npm install -g mmx-cli) and run `mmx auth login` once",
    tokens=(Token("minimax", aliases=("m3",)),), binary="mmx", login_fix="mmx auth login",
    model_setting="minimax_model", tools=("ask_m3",), tier="default", cost_rank=0, context_tokens=200_000,
)
GEMINI = Backend(
    name="gemini", label="Gemini", family="google", transport="cli",
    build=lazy_factory("cli_oracles", "make_gemini_oracle"), probe=probe_cli,
    enable="install the `agy` CLI and sign in once (run `agy` interactively)",
    tokens=(Token("gemini"),), binary="agy", login_fix="agy", model_setting="gemini_model",
    timeout_setting="gemini_timeout", needs="`agy` CLI, signed in", tools=("ask_gemini",), tier="middle",
    cost_rank=5, context_tokens=1_000_000,
)
CODEX = Backend(
    name="codex", label="OpenAI", family="openai", transport="cli",
    build=lazy_factory("cli_oracles", "make_codex_oracle"), probe=probe_cli,
    enable="install OpenAI's codex CLI (npm install -g @openai/codex) and run `codex login` once",
    tokens=(Token("codex", aliases=("gpt",)),), binary="codex", login_fix="codex login",
    model_setting="codex_model", timeout_setting="codex_timeout", tools=("ask_codex",), tier="middle",
    cost_rank=6, context_tokens=272_000,
)
GROK = Backend(
    name="grok", label="Grok", family="xai", transport="cli",
    build=lazy_factory("cli_oracles", "make_grok_oracle", "effort"), probe=probe_cli,
    enable="install the `grok` CLI and run `grok login` once",
    tokens=(Token("grok"),), binary="grok", login_fix="grok login", model_setting="grok_model",
    timeout_setting="grok_timeout", tools=("ask_grok",), tier="middle", cost_rank=4, context_tokens=256_000,
)
KIMI = Backend(
    name="kimi", label="Kimi", family="moonshot", transport="cli",
    build=lazy_factory("cli_oracles", "make_kimi_oracle", "effort"), probe=probe_cli,
    enable="install the Kimi Code CLI (`kimi`) and run `kimi login` once",
    tokens=(Token("kimi"),), binary="kimi", login_fix="kimi login", model_setting="kimi_model",
    timeout_setting="kimi_timeout", tools=("ask_kimi",), tier="middle", cost_rank=3, context_tokens=256_000,
)
GLM = Backend(
    name="glm", label="GLM", family="zhipu", transport="http",
    build=lazy_factory("http_oracles", "make_glm_oracle"), probe=probe_key,
    enable="set ASK_FABLE_GLM_API_KEY to a Z.ai API key (in the server's env or the config file)",
    tokens=(Token("glm"),), key_setting="glm_api_key", base_url_setting="glm_base_url",
    model_setting="glm_model", tools=("ask_glm",), tier="middle", cost_rank=2,
)
DEEPSEEK = Backend(
    name="deepseek", label="DeepSeek", family="deepseek", transport="http",
    build=lazy_factory("http_oracles", "make_deepseek_oracle"), probe=probe_key,
    enable="set ASK_FABLE_DEEPSEEK_API_KEY to a DeepSeek API key",
    tokens=(Token("deepseek"),), key_setting="deepseek_api_key", base_url_setting="deepseek_base_url",
    model_setting="deepseek_model", tools=("ask_deepseek",), tier="default", tier_needs_key=True,
    cost_rank=1,
)
# A prefixed backend serves many labs: each model id tells its own (``family`` is never read for it).
ATLAS = Backend(
    name="atlas", label="Atlas Cloud", family="unknown", transport="http",
    build=lazy_factory("http_oracles", "make_atlas_oracle", "model", "effort"), probe=_probe_atlas,
    enable="set ASK_FABLE_ATLAS_API_KEY (or ATLASCLOUD_API_KEY) to an Atlas Cloud key",
    prefix="atlas", normalize_model=normalize_atlas_model, key_setting="atlas_api_key",
    base_url_setting="atlas_base_url", model_setting="atlas_model", tools=("ask_atlas", "ask_atlas_council"),
)
OPENROUTER = Backend(
    name="openrouter", label="OpenRouter", family="unknown", transport="http",
    build=lazy_factory("http_oracles", "make_openrouter_oracle", "model", "effort"), probe=probe_key,
    enable="set ASK_FABLE_OPENROUTER_API_KEY (or OPENROUTER_API_KEY) to an OpenRouter key",
    prefix="openrouter", normalize_model=normalize_openrouter_model, key_setting="openrouter_api_key",
    base_url_setting="openrouter_base_url", model_setting="openrouter_model",
    tools=("ask_openrouter", "ask_openrouter_council"),
)
OLLAMA = Backend(
    name="ollama", label="Ollama", family="unknown", transport="http",
    build=lazy_factory("http_oracles", "make_ollama_oracle", "model"), probe=probe_ollama,
    enable="install Ollama, start it (`ollama serve`) and run `ollama signin` once; or set "
    "ASK_FABLE_OLLAMA_BASE_URL=https://ollama.com and ASK_FABLE_OLLAMA_API_KEY",
    prefix="ollama", normalize_model=normalize_ollama_model, key_setting="ollama_api_key",
    base_url_setting="ollama_base_url", model_setting="ollama_model",
    needs="a local `ollama` daemon, signed in; or `ASK_FABLE_OLLAMA_BASE_URL` and `ASK_FABLE_OLLAMA_API_KEY`",
    tools=("ask_ollama", "ask_ollama_council"), context_tokens=32_768,
)

BUILTIN: tuple[Backend, ...] = (
    FABLE, OPUS, MINIMAX, GEMINI, CODEX, GROK, KIMI, GLM, DEEPSEEK, ATLAS, OPENROUTER, OLLAMA,
)
