"""Model tokens in one place: aliases, the ``twin`` group, tiers, provider prefixes, and oracle building.

A *token* names one oracle in the multi-model modes. The tokens, their aliases and the
``<prefix>:<model id>`` forms are those of the registered backends, built-in or from a plugin
(:mod:`ask_fable.backends.registry`; ``ask_fable_help`` topic ``tokens`` lists them).

The *group* ``twin`` (``twins``, ``twin flames``, ``twin-flame``, ``twin_flames``) stands for
``fable`` + ``opus``. A group expands in place wherever a list of models is taken and is refused
with ``bad_args`` in a single-model slot (a synthesizer, a debate role). Tiers name whole panels.

Every oracle is built here, by :func:`build_oracle` (a token) or :func:`backend_oracle` (a
single-model tool's backend and model), through the backend's own factory, which imports the
backend on first use, so importing this module stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.backends.model_ids import (
    normalize_atlas_model,
    normalize_ollama_model,
    normalize_openrouter_model,
    strip_prefix,
)
from ask_fable.backends.providers.ollama import OLLAMA, OllamaSettings
from ask_fable.backends.registry import (
    family_of,
    find_token,
    get_backend,
    prefixed_backend,
    prefixes,
    registered,
    token_spellings,
)
from ask_fable.config import Settings
from ask_fable.errors import AskFableError, BadArgs, NotConfigured

if TYPE_CHECKING:
    from ask_fable.backends.descriptor import Backend
    from ask_fable.backends.resources import Resources

__all__ = [
    "CLAUDE_FALLBACKS", "GROUPS", "GROUP_ALIASES", "PROVIDER_GPT_MODEL", "TIERS", "Resolver",
    "UnavailableOracle", "backend_for", "backend_oracle", "build_oracle", "canonical", "dedupe",
    "default_resolver", "expand_models", "family_of", "is_named_token", "known_tokens_text",
    "normalize_atlas_model", "normalize_ollama_model", "normalize_openrouter_model", "normalize_synthesizer",
    "parse_pipeline", "provider_council_tokens", "provider_synth_ladder", "resolve_oracle", "single_token",
    "strip_prefix", "tier_models", "tiers_text", "tokens_text",
]

#: A resolver turns one canonical token into an oracle (tests pass fakes here).
Resolver = Callable[[str], Oracle]

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
TIERS: tuple[str, ...] = ("default", "twin", "middle", "full")
#: The backend tiers each tier is made of (``full`` also takes the configured Ollama council).
_TIER_LEVELS: dict[str, tuple[str, ...]] = {
    "default": ("default",), "middle": ("default", "middle"), "full": ("default", "middle"),
}

#: The Claude ladder every council, chain and debate falls back on for its final voice.
CLAUDE_FALLBACKS: tuple[str, ...] = ("fable", "opus")

PROVIDER_GPT_MODEL = "openai/gpt-5.6-sol"


def known_tokens_text() -> str:
    """The accepted tokens, for error messages."""
    spellings = token_spellings()
    names = [name for name, target in spellings.items() if name == target]
    aliases = ", ".join(f"{alias}={target}" for alias, target in spellings.items() if alias != target)
    forms = ", ".join(f"{prefix}:<model>" for prefix in prefixes())
    return (
        f"known tokens: {', '.join(names)}; aliases: {aliases}; group: twin (= fable + opus); "
        f"prefixes: {forms}"
    )


def tokens_text() -> str:
    """Every registered backend's tokens, with their notes and aliases, for the manual."""
    items: list[str] = []
    for backend in registered():
        if backend.prefix:
            items.append(f"{backend.prefix}:<id>")
        for token in backend.tokens:
            notes = [token.about] if token.about else []
            if token.aliases:
                notes.append("also " + ", ".join(token.aliases))
            items.append(f"{token.name} ({'; '.join(notes)})" if notes else token.name)
    return ", ".join(items)


def _key(token: str) -> str:
    return re.sub(r"\s+", " ", str(token).strip().lower())


def is_named_token(name: str) -> bool:
    """Whether ``name`` is a model token or one of its aliases (not a prefixed model id)."""
    return find_token(name) is not None


def canonical(token: str) -> str:
    """The canonical form of one token or group name (``m3`` → ``minimax``, ``Twins`` → ``twin``).

    Prefixed tokens keep their model id as written (ids are case-sensitive upstream).
    Raises ``BadArgs`` naming the known tokens when ``token`` is not one of them.
    """
    text = str(token).strip()
    key = _key(text)
    named = find_token(key)
    if named is not None:
        return named[1]
    if key in GROUP_ALIASES:
        return GROUP_ALIASES[key]
    prefix, sep, model = text.partition(":")
    head = prefix.strip().lower()
    if sep and prefixed_backend(head) is not None:
        model = model.strip()
        if not model:
            raise BadArgs(f"{head}: needs a model id, e.g. {head}:<model>")
        return f"{head}:{model}"
    raise BadArgs(f"unknown model token {text!r}{_did_you_mean(text)}; {known_tokens_text()}")


def _did_you_mean(text: str) -> str:
    """`` (did you mean 'deepseek'?)`` for a near miss of a token, alias, group or prefix; else empty."""
    import difflib

    key = _key(text)
    if ":" in text:  # a misspelled prefix: atlass:<id> (the id keeps its case)
        head, _, rest = text.partition(":")
        near = difflib.get_close_matches(head.strip().lower(), list(prefixes()), n=1, cutoff=0.7)
        return f" (did you mean {near[0] + ':' + rest!r}?)" if near else ""
    close = difflib.get_close_matches(key, [*token_spellings(), *GROUP_ALIASES], n=1, cutoff=0.7)
    return f" (did you mean {close[0]!r}?)" if close else ""


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


def dedupe(tokens: Iterable[str]) -> list[str]:
    """Drop repeated tokens, keeping the first occurrence."""
    return list(dict.fromkeys(tokens))


def parse_pipeline(pipeline: str | Sequence[str]) -> list[str]:
    """An ordered chain pipeline from ``"m3 > glm > fable"`` or a list; repeats kept, groups expanded."""
    if isinstance(pipeline, str):
        parts = [part for part in pipeline.split(">")]
    else:
        parts = [part for item in pipeline for part in str(item).split(">")]
    parts = [part.strip() for part in parts]
    arrow = next((mark for mark in ("->", "→", "=>", ",", "|") if mark in str(pipeline)), None)
    if arrow is not None and isinstance(pipeline, str):
        stages = [part.strip(" -=") for part in re.split(r"->|→|=>|,|\||>", pipeline)]
        shown = " > ".join(stage for stage in stages if stage)
        raise BadArgs(f"the pipeline {pipeline!r} separates stages with {arrow!r}; stages are separated by "
                      f"'>' (e.g. {shown!r})")
    if not any(parts):
        raise BadArgs(f"the pipeline is empty; name stages like 'm3 > glm > fable' ({known_tokens_text()})")
    if any(not part for part in parts):
        raise BadArgs(f"the pipeline {pipeline!r} has an empty stage between '>' separators")
    return expand_models(parts)


# --- tiers --------------------------------------------------------------------------------------


def _cheap_first(tokens: Sequence[str]) -> list[str]:
    rank = {backend.name: backend.cost_rank for backend in registered() if backend.cost_rank is not None}
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
    members = [
        backend.name for backend in registered()
        if backend.tier in _TIER_LEVELS[name] and (not backend.tier_needs_key or backend.key(settings))
    ]
    ordered = _cheap_first(members)
    if name == "full":
        council = settings.section(OLLAMA.name, OllamaSettings).council
        ordered += dedupe(f"ollama:{normalize_ollama_model(m)}" for m in council)
    return ordered


def tiers_text() -> str:
    """The tiers and what each adds, for the manual."""

    def level(tier: str, joiner: str) -> str:
        members = [b for b in registered() if b.tier == tier]
        always = joiner.join(b.name for b in members if not b.tier_needs_key)
        keyed = "".join(f", + {b.name} when its key is set" for b in members if b.tier_needs_key)
        return always + keyed

    return (f"default ({level('default', ' + ')}), twin, middle (+ {level('middle', ', ')}), "
            "full (+ the configured Ollama council)")


# --- provider councils ---------------------------------------------------------------------------


def normalize_synthesizer(value: str, provider: str | None = None) -> str:
    """A synthesizer token as it is persisted and used: ``gpt`` → ``codex``; a bare provider model id
    (``openai/gpt-5.6-sol``) gets the council's prefix (``atlas:openai/gpt-5.6-sol``)."""
    text = str(value).strip()
    if not text:
        raise BadArgs("an empty synthesizer was given")
    key = _key(text)
    if is_named_token(key) or key in GROUP_ALIASES:
        return single_token(text)
    head, sep, _ = text.partition(":")
    if sep and prefixed_backend(head) is not None:
        return single_token(text)
    if provider is not None and prefixed_backend(provider) is not None:
        return f"{provider}:{text}"
    return single_token(text)


def provider_council_tokens(provider: str, models: Sequence[str]) -> list[str]:
    """Member tokens of a provider council from bare or prefixed model ids (``KeyError`` for a
    provider that takes none)."""
    backend = prefixed_backend(provider)
    if backend is None or backend.normalize_model is None:
        raise KeyError(provider)
    normalize = backend.normalize_model
    return dedupe(f"{provider}:{normalize(model)}" for model in models if str(model).strip())


def provider_synth_ladder(provider: str, requested: str | None = None) -> list[str]:
    """The adjudicator ladder of an Atlas or OpenRouter council: the requested one first, then the
    local ``codex`` CLI → the provider's own GPT model → ``fable``."""
    ladder = ["codex", f"{provider}:{PROVIDER_GPT_MODEL}", "fable"]
    if requested:
        ladder.insert(0, normalize_synthesizer(requested, provider))
    return dedupe(ladder)


# --- building oracles --------------------------------------------------------------------------


def build_oracle(token: str, settings: Settings, *, effort: str | None = None,
                 resources: Resources | None = None) -> Oracle:
    """The real oracle for one single-model token (its backend imported on first use), on the App's
    ``resources`` (standalone without them).

    A prefixed token's model id is put in the provider's form first (``ollama:minimax-m3`` asks
    ``minimax-m3:cloud``).
    """
    name = single_token(token)
    backend = backend_for(name)
    named = find_token(name)
    if named is not None:
        return backend.oracle(settings, token=named[1], effort=effort, resources=resources)
    model = name.partition(":")[2]
    chosen = backend.normalize_model(model) if backend.normalize_model else model
    return backend.oracle(settings, token=name, model=chosen, effort=effort, resources=resources)


def backend_for(token: str) -> Backend:
    """The backend a single-model token belongs to (``BadArgs`` for an unknown token or a group)."""
    name = single_token(token)
    named = find_token(name)
    backend = named[0] if named is not None else prefixed_backend(name.partition(":")[0])
    if backend is None:  # unregistered between parsing and looking up
        raise BadArgs(f"unknown model token {token!r}; {known_tokens_text()}")
    return backend


def backend_oracle(name: str, settings: Settings, *, model: str | None = None,
                   effort: str | None = None, resources: Resources | None = None) -> Oracle:
    """The oracle a single-model tool asks: backend ``name`` with ``model`` exactly as given (its
    configured default when ``None``) and ``effort``, on the App's ``resources``."""
    return get_backend(name).oracle(settings, model=model, effort=effort, resources=resources)


def default_resolver(settings: Settings, *, effort: str | None = None,
                     resources: Resources | None = None) -> Resolver:
    """A resolver that builds real oracles from ``settings`` on the App's ``resources``."""

    def resolve(token: str) -> Oracle:
        return build_oracle(token, settings, effort=effort, resources=resources)

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
        missing = NotConfigured(f"the backend for {token} is not available ({exc.name})")
        return UnavailableOracle(token, missing)
