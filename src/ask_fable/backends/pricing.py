"""What one backend call costs in dollars, and where that figure comes from.

A provider that reports a price (OpenRouter's ``usage.cost``, the Claude SDK's ``total_cost_usd``) is
taken at its word: ``reported``. Otherwise the call is priced from its tokens at a rate found, in
order, in

1. the ``prices`` setting (``ASK_FABLE_PRICES``), for negotiated prices: keyed by backend
   (``"deepseek"``) or by backend and model (``"openrouter:qwen/qwen3-coder"``), each either a rate
   (``{"input_per_m": 0.5, "output_per_m": 2}``, dollars per million tokens) or another model's
   price (``{"as": "google:gemini-3.1-pro-preview"}``);
2. the live catalog this server already fetched (OpenRouter, Atlas Cloud: their listed prices);
3. the built-in aliases below, for default models whose names the price library does not know;
4. `genai-prices <https://github.com/pydantic/genai-prices>`_, pydantic's maintained price table.

Such a cost is ``estimated``. A call without token counts (the CLIs report none) is counted locally
at :data:`BYTES_PER_TOKEN` bytes a token of what was sent and received, then priced the same way.
A model no source prices is ``unknown``: its ``cost_usd`` is ``None``, never 0, and what a key's
daily budget counts for it is its tokens at the conservative ``unknown_price_*`` rates. Models on a
local Ollama daemon cost nothing (``estimated`` at $0); Ollama Cloud models are billed by plan, so
they are priced at what the same open model costs on a public API, a stand-in rather than a bill.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ask_fable.backends.catalogs import CatalogCache
    from ask_fable.config import Settings
    from ask_fable.values import Usage

CostSource = Literal["reported", "estimated", "unknown"]
#: A whole call's cost: ``mixed`` when some parts were reported and others estimated.
CallCostSource = Literal["reported", "estimated", "mixed", "unknown"]

#: UTF-8 bytes counted as one token where nobody counted them (overcounts English prose a little).
BYTES_PER_TOKEN = 3

#: genai-prices' provider id for each backend whose models it lists under one provider.
GENAI_PROVIDERS: dict[str, str] = {
    "anthropic": "anthropic", "fable": "anthropic", "opus": "anthropic", "minimax": "minimax",
    "gemini": "google", "codex": "openai", "grok": "x-ai", "kimi": "moonshotai", "glm": "zai",
    "deepseek": "deepseek", "openrouter": "openrouter",
}

#: Default models the price library knows under another name: priced as that model
#: (``provider_id:model``). The ``prices`` setting overrides them.
BUILTIN_ALIASES: dict[str, str] = {
    "gemini:Gemini 3.1 Pro (High)": "google:gemini-3.1-pro-preview",
    "kimi:kimi-code/k3": "moonshotai:kimi-k3",
}


@dataclass(frozen=True)
class Priced:
    """One call's price: ``cost_usd`` (``None`` when unknown), where it came from, and what a budget
    counts for it (the cost, or the tokens at the conservative rate when unknown)."""

    cost_usd: float | None
    source: CostSource
    budget_usd: float


def count_tokens(text: str) -> int:
    """The tokens ``text`` is counted as where no tokenizer is at hand (:data:`BYTES_PER_TOKEN`)."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)


@lru_cache(maxsize=1024)
def _library_knows(provider_id: str | None, model_ref: str) -> bool:
    """Whether genai-prices has a price for the model (a miss scans its whole table: asked once)."""
    from genai_prices import Usage as LibraryUsage
    from genai_prices import calc_price

    try:
        calc_price(LibraryUsage(input_tokens=0, output_tokens=0), model_ref, provider_id=provider_id)
    except LookupError:
        return False
    return True


@lru_cache(maxsize=4096)
def _library_rates(provider_id: str | None, model_ref: str, bucket: int) -> tuple[float, float]:
    """genai-prices' dollars per input and per output token for prompts of up to ``bucket`` tokens
    (a price tier is chosen by the prompt's size; pricing a call costs the library about a
    millisecond, so each model's rates are worked out once per size bucket)."""
    from genai_prices import Usage as LibraryUsage
    from genai_prices import calc_price

    found = calc_price(LibraryUsage(input_tokens=bucket, output_tokens=bucket), model_ref,
                       provider_id=provider_id)
    return float(found.input_price) / bucket, float(found.output_price) / bucket


def _library_price(provider_id: str | None, model_ref: str, input_tokens: int,
                   output_tokens: int) -> float | None:
    """genai-prices' price of these tokens (``None`` when it does not know the model), at the tier of
    the next power of two of the prompt's size (never a cheaper tier than the prompt's own)."""
    if not _library_knows(provider_id, model_ref):
        return None
    bucket = max(1024, 1 << max(0, input_tokens - 1).bit_length())
    per_input, per_output = _library_rates(provider_id, model_ref, bucket)
    return per_input * input_tokens + per_output * output_tokens


def _split_ref(ref: str) -> tuple[str | None, str]:
    """``provider_id:model`` → its parts (no provider: let the library find one)."""
    provider, sep, model = ref.partition(":")
    return (provider or None, model) if sep else (None, ref)


def _ollama_ref(model: str) -> str | None:
    """The public model an Ollama Cloud id stands for (``gpt-oss:120b-cloud`` → ``gpt-oss-120b``);
    ``None`` for a model the local daemon runs itself."""
    lowered = model.lower()
    if not lowered.endswith("cloud"):
        return None
    base = lowered.removesuffix("cloud").rstrip(":-")
    return base.replace(":", "-")


class PriceBook:
    """Prices calls for one set of settings (and the catalogs this server fetched)."""

    def __init__(self, settings: Settings, catalogs: CatalogCache | None = None) -> None:
        self.settings = settings
        self.catalogs = catalogs

    def price(self, provider: str, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """Dollars for these tokens on ``provider``'s ``model``; ``None`` when nothing prices it."""
        overrides = self.settings.prices
        for key in (f"{provider}:{model}", provider):
            override = overrides.get(key)
            if override is not None:
                if override.price_as:
                    provider_id, ref = _split_ref(override.price_as)
                    return _library_price(provider_id, ref, input_tokens, output_tokens)
                return ((override.input_per_m or 0.0) * input_tokens
                        + (override.output_per_m or 0.0) * output_tokens) / 1_000_000
        listed = self._catalog_price(provider, model, input_tokens, output_tokens)
        if listed is not None:
            return listed
        alias = BUILTIN_ALIASES.get(f"{provider}:{model}")
        if alias is not None:
            provider_id, ref = _split_ref(alias)
            return _library_price(provider_id, ref, input_tokens, output_tokens)
        return self._library(provider, model, input_tokens, output_tokens)

    def _catalog_price(self, provider: str, model: str, input_tokens: int,
                       output_tokens: int) -> float | None:
        if self.catalogs is None or provider not in ("openrouter", "atlas"):
            return None
        from ask_fable.backends.catalogs import atlas_catalog_url, openrouter_catalog_url
        from ask_fable.backends.providers.atlas import AtlasSettings
        from ask_fable.backends.providers.openrouter import OpenRouterSettings

        url = (openrouter_catalog_url(self.settings.section("openrouter", OpenRouterSettings).base_url)
               if provider == "openrouter"
               else atlas_catalog_url(self.settings.section("atlas", AtlasSettings).base_url))
        hit = self.catalogs.get(url, None)
        if hit is None or not isinstance(hit[0], list):
            return None
        entry = next((m for m in hit[0] if getattr(m, "id", None) == model), None)
        if entry is None or (entry.prompt_per_m is None and entry.completion_per_m is None):
            return None
        dollars = (entry.prompt_per_m or 0.0) * input_tokens + (entry.completion_per_m or 0.0) * output_tokens
        return dollars / 1_000_000

    def _library(self, provider: str, model: str, input_tokens: int, output_tokens: int) -> float | None:
        if provider == "ollama":
            ref = _ollama_ref(model)
            if ref is None:
                return 0.0  # the local daemon's own compute
            return _library_price(None, ref, input_tokens, output_tokens)
        if provider == "atlas":
            # Atlas ids name the lab (``xai/grok-4.6``): the lab's own price for the model.
            for ref in (model, model.rsplit("/", 1)[-1]):
                found = _library_price(None, ref, input_tokens, output_tokens)
                if found is not None:
                    return found
            return None
        provider_id = GENAI_PROVIDERS.get(provider)
        if provider_id is None:
            return None
        return _library_price(provider_id, model, input_tokens, output_tokens)

    def conservative(self, input_tokens: int, output_tokens: int) -> float:
        """What a budget counts for tokens of a model nobody prices (``unknown_price_*`` rates)."""
        settings = self.settings
        return (settings.unknown_price_input_per_m * input_tokens
                + settings.unknown_price_output_per_m * output_tokens) / 1_000_000

    def call(self, provider: str, model: str, usage: Usage | None, *, sent: str = "",
             received: str = "") -> Priced:
        """One finished call's price: reported when the provider gave one, else computed from its tokens
        (counted locally from ``sent`` and ``received`` when the provider reported none)."""
        if usage is not None and usage.cost_usd is not None:
            return Priced(usage.cost_usd, "reported", max(0.0, usage.cost_usd))
        input_tokens = usage.input_tokens if usage is not None and usage.input_tokens is not None else None
        output_tokens = usage.output_tokens if usage is not None and usage.output_tokens is not None else None
        if input_tokens is None:
            input_tokens = count_tokens(sent)
        if output_tokens is None:
            output_tokens = count_tokens(received)
        cost = self.price(provider, model, input_tokens, output_tokens)
        if cost is None:
            return Priced(None, "unknown", self.conservative(input_tokens, output_tokens))
        return Priced(round(cost, 10), "estimated", cost)


def combined_source(sources: list[CostSource]) -> CallCostSource | None:
    """A whole call's ``cost_source`` from its parts' (``None`` when it made no priced call): ``unknown``
    when any part is, ``mixed`` for reported and estimated parts together."""
    found = set(sources)
    if not found:
        return None
    if "unknown" in found:
        return "unknown"
    if found == {"reported"}:
        return "reported"
    if found == {"estimated"}:
        return "estimated"
    return "mixed"
