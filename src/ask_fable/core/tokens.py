"""Model tokens in one place: aliases, the ``twin`` group, tiers, provider prefixes, and oracle building.

A *token* names one oracle in the multi-model modes::

    fable  fable51  opus (opus5, opus-5)  minimax (m3)  gemini  codex (gpt)  glm  deepseek  grok  kimi
    ollama:<model id>   atlas:<model id>   openrouter:<model id>

The *group* ``twin`` (``twins``, ``twin flames``, ``twin-flame``, ``twin_flames``) stands for
``fable`` + ``opus``. A group expands in place wherever a list of models is taken and is refused
with ``bad_args`` in a single-model slot (a synthesizer, a debate role). Tiers name whole panels.

Backends are imported lazily inside :func:`build_oracle`, so importing this module stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.config import Settings
from ask_fable.errors import AskFableError, BadArgs

#: A resolver turns one canonical token into an oracle (tests pass fakes here).
Resolver = Callable[[str], Oracle]

ALIASES: dict[str, str] = {
    "fable": "fable",
    "fable51": "fable51",
    "opus": "opus",
    "opus5": "opus",
    "opus-5": "opus",
    "minimax": "minimax",
    "m3": "minimax",
    "gemini": "gemini",
    "codex": "codex",
    "gpt": "codex",
    "glm": "glm",
    "deepseek": "deepseek",
    "grok": "grok",
    "kimi": "kimi",
}
NAMED_TOKENS: tuple[str, ...] = tuple(dict.fromkeys(ALIASES.values()))
GROUP_ALIASES: dict[str, str] = {
    "twin": "twin",
    "twins": "twin",
    "twin flames": "twin",
    "twin flame": "twin",
    "twin-flame": "twin",
    "twin-flames": "twin",
    "twin_flame": "twin",
    "twin_flames": "twin",
}
GROUPS: dict[str, tuple[str, ...]] = {"twin": ("fable", "opus")}
PREFIXES: tuple[str, ...] = ("ollama", "atlas", "openrouter")
TIERS: tuple[str, ...] = ("default", "twin", "middle", "full")

#: Cheapest first: the order tiers list their members in.
COST_ORDER: tuple[str, ...] = (
    "minimax", "deepseek", "glm", "kimi", "grok", "gemini", "codex", "opus", "fable51", "fable",
)

FAMILIES: dict[str, str] = {
    "fable": "anthropic",
    "fable51": "anthropic",
    "opus": "anthropic",
    "minimax": "minimax",
    "gemini": "google",
    "codex": "openai",
    "glm": "zhipu",
    "deepseek": "deepseek",
    "grok": "xai",
    "kimi": "moonshot",
}
# Substrings of a provider model id that reveal its lab (first match wins; the lab before a ``/``
# is tried first).
_FAMILY_HINTS: tuple[tuple[str, str], ...] = (
    ("claude", "anthropic"), ("anthropic", "anthropic"), ("gpt", "openai"), ("openai", "openai"),
    ("gemini", "google"), ("gemma", "google"), ("google", "google"), ("grok", "xai"), ("x-ai", "xai"),
    ("xai", "xai"), ("kimi", "moonshot"), ("moonshot", "moonshot"), ("glm", "zhipu"), ("z-ai", "zhipu"),
    ("zai", "zhipu"), ("thudm", "zhipu"), ("deepseek", "deepseek"), ("minimax", "minimax"),
    ("qwen", "qwen"), ("alibaba", "qwen"), ("nemotron", "nvidia"), ("nvidia", "nvidia"),
    ("llama", "meta"), ("meta", "meta"), ("mistral", "mistral"),
)
#: The Claude ladder every council, chain and debate falls back on for its final voice.
CLAUDE_FALLBACKS: tuple[str, ...] = ("fable", "opus")

PROVIDER_GPT_MODEL = "openai/gpt-5.6-sol"


def known_tokens_text() -> str:
    """The accepted tokens, for error messages."""
    aliases = ", ".join(f"{alias}={target}" for alias, target in ALIASES.items() if alias != target)
    return (
        f"known tokens: {', '.join(NAMED_TOKENS)}; aliases: {aliases}; group: twin (= fable + opus); "
        "prefixes: ollama:<model>, atlas:<model>, openrouter:<model>"
    )


def _key(token: str) -> str:
    return re.sub(r"\s+", " ", str(token).strip().lower())


def canonical(token: str) -> str:
    """The canonical form of one token or group name (``m3`` → ``minimax``, ``Twins`` → ``twin``).

    Prefixed tokens keep their model id as written (ids are case-sensitive upstream).
    Raises ``BadArgs`` naming the known tokens when ``token`` is not one of them.
    """
    text = str(token).strip()
    key = _key(text)
    if key in ALIASES:
        return ALIASES[key]
    if key in GROUP_ALIASES:
        return GROUP_ALIASES[key]
    prefix, sep, model = text.partition(":")
    head = prefix.strip().lower()
    if sep and head in PREFIXES:
        model = model.strip()
        if not model:
            raise BadArgs(f"{head}: needs a model id, e.g. {head}:<model>")
        return f"{head}:{model}"
    raise BadArgs(f"unknown model token {text!r}; {known_tokens_text()}")


def single_token(token: str) -> str:
    """Canonicalize a token for a single-model slot; a group is refused with ``BadArgs``."""
    value = canonical(token)
    if value in GROUPS:
        members = " + ".join(GROUPS[value])
        raise BadArgs(
            f"{token!r} is a group ({members}) and cannot fill a single-model slot; name one model, "
            f"e.g. {GROUPS[value][0]!r}"
        )
    return value


def expand_models(tokens: Sequence[str]) -> list[str]:
    """Canonicalize a list of tokens, expanding groups in place (order and repeats kept)."""
    if isinstance(tokens, str):
        tokens = [tokens]
    out: list[str] = []
    for token in tokens:
        value = canonical(token)
        out.extend(GROUPS.get(value, (value,)))
    return out


def dedupe(tokens: Sequence[str]) -> list[str]:
    """Drop repeated tokens, keeping the first occurrence."""
    return list(dict.fromkeys(tokens))


def parse_pipeline(pipeline: str | Sequence[str]) -> list[str]:
    """An ordered chain pipeline from ``"m3 > glm > fable"`` or a list; repeats kept, groups expanded."""
    if isinstance(pipeline, str):
        parts = [part for part in pipeline.split(">")]
    else:
        parts = [part for item in pipeline for part in str(item).split(">")]
    parts = [part.strip() for part in parts]
    if not any(parts):
        raise BadArgs(f"the pipeline is empty; name stages like 'm3 > glm > fable' ({known_tokens_text()})")
    if any(not part for part in parts):
        raise BadArgs(f"the pipeline {pipeline!r} has an empty stage between '>' separators")
    return expand_models(parts)


def _cheap_first(tokens: Sequence[str]) -> list[str]:
    rank = {token: index for index, token in enumerate(COST_ORDER)}
    return sorted(dedupe(tokens), key=lambda token: rank.get(token, len(rank)))


def tier_models(tier: str, settings: Settings) -> list[str]:
    """The members of a named tier, cheapest first (``full`` appends the configured Ollama council)."""
    name = _key(tier)
    if name in GROUP_ALIASES:
        name = "twin"
    if name == "twin":
        return list(GROUPS["twin"])
    if name not in TIERS:
        raise BadArgs(f"unknown tier {tier!r}; known tiers: {', '.join(TIERS)}")
    members = ["fable", "minimax"]
    if settings.deepseek_api_key:
        members.append("deepseek")
    if name in ("middle", "full"):
        members += ["opus", "glm", "gemini", "codex", "grok", "kimi"]
    ordered = _cheap_first(members)
    if name == "full":
        ordered += dedupe(f"ollama:{normalize_ollama_model(m)}" for m in settings.ollama_council)
    return ordered


def family_of(token: str) -> str:
    """The model lab behind a token or a bare provider model id (used to order anonymized experts),
    ``unknown`` if unclear."""
    if token in FAMILIES:
        return FAMILIES[token]
    head, sep, rest = token.partition(":")
    lowered = (rest if sep and head.strip().lower() in PREFIXES else token).lower()
    lab = lowered.split("/", 1)[0] if "/" in lowered else ""
    for hint, family in _FAMILY_HINTS:
        if lab and hint in lab:
            return family
    for hint, family in _FAMILY_HINTS:
        if hint in lowered:
            return family
    return "unknown"


# --- provider-council normalization ---------------------------------------------------------


def strip_prefix(name: str, prefix: str) -> str:
    """``name`` without a leading ``<prefix>:`` (case-insensitive), whitespace trimmed."""
    text = str(name).strip()
    head, sep, rest = text.partition(":")
    if sep and head.strip().lower() == prefix:
        return rest.strip()
    return text


def normalize_ollama_model(name: str) -> str:
    """An Ollama model id: optional ``ollama:`` dropped; a bare name gets ``:cloud`` (``minimax-m3`` →
    ``minimax-m3:cloud``); an explicit tag (``gpt-oss:120b-cloud``) is kept."""
    model = strip_prefix(name, "ollama")
    if not model:
        raise BadArgs("an empty Ollama model name was given")
    return model if ":" in model else f"{model}:cloud"


def normalize_atlas_model(name: str) -> str:
    """An Atlas model id with an optional ``atlas:`` prefix dropped."""
    model = strip_prefix(name, "atlas")
    if not model:
        raise BadArgs("an empty Atlas model id was given")
    return model


def normalize_openrouter_model(name: str) -> str:
    """An OpenRouter model id with an optional ``openrouter:`` prefix dropped."""
    model = strip_prefix(name, "openrouter")
    if not model:
        raise BadArgs("an empty OpenRouter model id was given")
    return model


def normalize_synthesizer(value: str, provider: str | None = None) -> str:
    """A synthesizer token as it is persisted and used: ``gpt`` → ``codex``; a bare provider model id
    (``openai/gpt-5.6-sol``) gets the council's prefix (``atlas:openai/gpt-5.6-sol``)."""
    text = str(value).strip()
    if not text:
        raise BadArgs("an empty synthesizer was given")
    key = _key(text)
    if key in ALIASES or key in GROUP_ALIASES:
        return single_token(text)
    head, sep, _ = text.partition(":")
    if sep and head.strip().lower() in PREFIXES:
        return single_token(text)
    if provider in PREFIXES:
        return f"{provider}:{text}"
    return single_token(text)


def provider_council_tokens(provider: str, models: Sequence[str]) -> list[str]:
    """Member tokens of a provider council from bare or prefixed model ids."""
    normalize = {
        "ollama": normalize_ollama_model,
        "atlas": normalize_atlas_model,
        "openrouter": normalize_openrouter_model,
    }[provider]
    return dedupe(f"{provider}:{normalize(model)}" for model in models if str(model).strip())


def provider_synth_ladder(provider: str, requested: str | None = None) -> list[str]:
    """The adjudicator ladder of an Atlas or OpenRouter council: the requested one first, then the
    local ``codex`` CLI → the provider's own GPT model → ``fable``."""
    ladder = ["codex", f"{provider}:{PROVIDER_GPT_MODEL}", "fable"]
    if requested:
        ladder.insert(0, normalize_synthesizer(requested, provider))
    return dedupe(ladder)


# --- building oracles --------------------------------------------------------------------------


def build_oracle(token: str, settings: Settings, *, effort: str | None = None) -> Oracle:
    """The real oracle for one single-model token (backends imported on first use)."""
    name = single_token(token)
    if name in ("fable", "fable51", "opus"):
        from ask_fable.backends.claude import make_claude_oracle

        return make_claude_oracle(settings, name)
    if name in ("minimax", "gemini", "codex", "grok", "kimi"):
        from ask_fable.backends import cli_oracles

        if name == "grok":
            return cli_oracles.make_grok_oracle(settings, effort=effort)
        if name == "kimi":
            return cli_oracles.make_kimi_oracle(settings, effort=effort)
        factory = {
            "minimax": cli_oracles.make_minimax_oracle,
            "gemini": cli_oracles.make_gemini_oracle,
            "codex": cli_oracles.make_codex_oracle,
        }[name]
        return factory(settings)
    from ask_fable.backends import http_oracles

    if name == "glm":
        return http_oracles.make_glm_oracle(settings)
    if name == "deepseek":
        return http_oracles.make_deepseek_oracle(settings)
    prefix, _, model = name.partition(":")
    if prefix == "ollama":
        return http_oracles.make_ollama_oracle(settings, model=normalize_ollama_model(model))
    if prefix == "atlas":
        return http_oracles.make_atlas_oracle(settings, model=model, effort=effort)
    return http_oracles.make_openrouter_oracle(settings, model=model, effort=effort)


def default_resolver(settings: Settings, *, effort: str | None = None) -> Resolver:
    """A resolver that builds real oracles from ``settings``."""

    def resolve(token: str) -> Oracle:
        return build_oracle(token, settings, effort=effort)

    return resolve


class UnavailableOracle(Oracle):
    """Stands in for an oracle that could not be built, so the mode reports it like any other
    unavailable member (``ensure_available`` raises the original error; ``ask`` is never reached)."""

    def __init__(self, token: str, error: AskFableError) -> None:
        self.token = token
        self.provider = token.partition(":")[0] if ":" in token else token
        self.model = token.partition(":")[2] or token
        self.family = family_of(token)
        self.error = error

    def ensure_available(self) -> None:
        """Always raises the error met while building the oracle."""
        raise self.error

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:  # pragma: no cover
        """Never called: ``ensure_available`` always raises first."""
        raise self.error


def resolve_oracle(token: str, resolver: Resolver) -> Oracle:
    """``resolver(token)``, with a build failure turned into an :class:`UnavailableOracle`."""
    try:
        return resolver(token)
    except AskFableError as exc:
        return UnavailableOracle(token, exc)
    except ImportError as exc:
        from ask_fable.errors import NotConfigured

        missing = NotConfigured(f"the backend for {token} is not available ({exc.name})")
        return UnavailableOracle(token, missing)
