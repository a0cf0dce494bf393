"""Provider model ids: prefixes dropped, Ollama tags completed, and the lab an id reveals.

A model token names its lab through its backend's descriptor (``glm`` → ``zhipu``,
:func:`ask_fable.backends.registry.family_of`); a provider model id (``openai/gpt-5.6-sol``,
``x-ai/grok-5``) is read for the lab it reveals (:func:`lab_of`).
"""

from __future__ import annotations

from ask_fable.errors import BadArgs

# Substrings of a provider model id that reveal its lab (first match wins; the lab before a ``/``
# is tried first).
FAMILY_HINTS: tuple[tuple[str, str], ...] = (
    ("claude", "anthropic"), ("anthropic", "anthropic"), ("gpt", "openai"), ("openai", "openai"),
    ("gemini", "google"), ("gemma", "google"), ("google", "google"), ("grok", "xai"), ("x-ai", "xai"),
    ("xai", "xai"), ("kimi", "moonshot"), ("moonshot", "moonshot"), ("glm", "zhipu"), ("z-ai", "zhipu"),
    ("zai", "zhipu"), ("thudm", "zhipu"), ("deepseek", "deepseek"), ("minimax", "minimax"),
    ("qwen", "qwen"), ("alibaba", "qwen"), ("nemotron", "nvidia"), ("nvidia", "nvidia"),
    ("llama", "meta"), ("meta", "meta"), ("mistral", "mistral"),
)


def strip_prefix(name: str, prefix: str) -> str:
    """``name`` without a leading ``<prefix>:`` (case-insensitive), whitespace trimmed."""
    text = str(name).strip()
    head, sep, rest = text.partition(":")
    if sep and head.strip().lower() == prefix:
        return rest.strip()
    return text


def _required(name: str, prefix: str, what: str) -> str:
    model = strip_prefix(name, prefix)
    if not model:
        raise BadArgs(f"an empty {what} was given")
    return model


def normalize_ollama_model(name: str) -> str:
    """An Ollama model id: optional ``ollama:`` dropped; a bare name gets ``:cloud`` (``minimax-m3`` →
    ``minimax-m3:cloud``); an explicit tag (``gpt-oss:120b-cloud``) is kept."""
    model = _required(name, "ollama", "Ollama model name")
    return model if ":" in model else f"{model}:cloud"


def normalize_atlas_model(name: str) -> str:
    """An Atlas model id with an optional ``atlas:`` prefix dropped."""
    return _required(name, "atlas", "Atlas model id")


def normalize_openrouter_model(name: str) -> str:
    """An OpenRouter model id with an optional ``openrouter:`` prefix dropped."""
    return _required(name, "openrouter", "OpenRouter model id")


def lab_of(model_id: str) -> str:
    """The model lab a bare provider model id reveals (``x-ai/grok-5`` → ``xai``): the lab before a
    ``/`` first, then any name fragment; ``unknown`` if unclear."""
    lowered = model_id.lower()
    lab = lowered.split("/", 1)[0] if "/" in lowered else ""
    for hint, family in FAMILY_HINTS:
        if lab and hint in lab:
            return family
    for hint, family in FAMILY_HINTS:
        if hint in lowered:
            return family
    return "unknown"
