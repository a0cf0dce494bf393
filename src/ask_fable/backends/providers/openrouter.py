"""OpenRouter over its OpenAI-compatible API: settings ``ASK_FABLE_OPENROUTER_*``, ``openrouter:<id>``
tokens, ``ask_openrouter``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import AliasChoices, Field, SecretStr

from ask_fable.backends.descriptor import Backend, ModelTool
from ask_fable.backends.model_ids import normalize_openrouter_model
from ask_fable.backends.probes import probe_key
from ask_fable.config import ModelList, ProviderSettings

if TYPE_CHECKING:
    import httpx2

    from ask_fable.backends.base import Oracle
    from ask_fable.backends.catalog_listing import CatalogListing
    from ask_fable.backends.http_client import RetryPolicy
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings


class OpenRouterSettings(ProviderSettings):
    """OpenRouter's key, endpoint and default model, and its council's members, adjudicator and effort."""

    api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("ASK_FABLE_OPENROUTER_API_KEY", "OPENROUTER_API_KEY"),
        description="OpenRouter key (OPENROUTER_API_KEY is accepted too); the catalog needs none.",
    )
    base_url: str = Field("https://openrouter.ai/api/v1", description="OpenRouter API base URL.")
    model: str = Field("deepseek/deepseek-v4-pro", description="Default model for ask_openrouter.")
    council: ModelList = Field(
        default_factory=list, description="Default ask_openrouter_council members."
    )
    synthesizer: str | None = Field(
        None,
        description="Adjudicator for ask_openrouter_council (unset: codex CLI, then "
        "openrouter:openai/gpt-5.6-sol, then fable).",
    )
    effort: str | None = Field(None, description="Default OpenRouter effort.")


def make_openrouter_oracle(settings: Settings, *, token: str = "openrouter", model: str | None = None,
                           effort: str | None = None, retry: RetryPolicy | None = None,
                           transport: httpx2.AsyncBaseTransport | None = None,
                           resources: Resources | None = None) -> Oracle:
    """An ``openrouter:<id>`` oracle; ``xai/grok-*`` / ``moonshotai/kimi-*`` → local CLI when installed.

    Raises:
        BadArgs: ``effort`` is not quick / standard / deep.
    """
    from ask_fable.backends.http_oracles import openai_shaped
    from ask_fable.backends.openai_api import OpenRouterOracle

    house_effort = settings.section(OPENROUTER.name, OpenRouterSettings).effort
    return openai_shaped(OPENROUTER, settings, OpenRouterOracle, model=model, effort=effort,
                         house_effort=house_effort, kimi=True, retry=retry, transport=transport,
                         resources=resources)



async def list_openrouter_models(settings: Settings, refresh: bool = True, task: str = "", limit: int = 5,
                                 *, max_age: float | None = None,
                                 transport: httpx2.AsyncBaseTransport | None = None,
                                 resources: Resources | None = None) -> CatalogListing:
    """The OpenRouter catalog ranked for ``task`` with a model + effort picker (no key needed);
    ``refresh`` and ``max_age`` as in :func:`ask_fable.backends.catalogs.list_models`."""
    from ask_fable.backends import catalogs

    config = settings.section(OPENROUTER.name, OpenRouterSettings)
    url = catalogs.openrouter_catalog_url(config.base_url)
    return await catalogs.list_models("openrouter", "OpenRouter", url, settings, refresh=refresh, task=task,
                                      limit=limit,
                                      default_effort=config.effort, max_age=max_age,
                                      transport=transport, resources=resources)


OPENROUTER = Backend(
    name="openrouter", label="OpenRouter", family="unknown", transport="http", build=make_openrouter_oracle,
    probe=probe_key, enable="set ASK_FABLE_OPENROUTER_API_KEY (or OPENROUTER_API_KEY) to an OpenRouter key",
    prefix="openrouter", normalize_model=normalize_openrouter_model, settings_model=OpenRouterSettings,
    tools=("ask_openrouter_council",),
    tool=ModelTool(
        "ask_openrouter",
        "One answer from any of ~400 {label} models on one key (default {model}). Single-turn; effort is "
        "clamped to what the chosen model supports, and the result reports the call's real dollar cost "
        "(cost_usd). Needs {key_vars}; xai/grok-* and moonshotai/kimi-* ids run on the local grok / kimi "
        "CLI when installed. Pick models with list_openrouter_models (free).",
        model_arg="The provider's model id; default from the settings.", effort=True,
    ),
)
