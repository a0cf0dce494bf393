"""Atlas Cloud over its OpenAI-compatible API: settings ``ASK_FABLE_ATLAS_*``, ``atlas:<id>`` tokens,
``ask_atlas``."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from pydantic import AliasChoices, Field, SecretStr

from ask_fable.backends.descriptor import Backend, BackendReport, ModelTool, ProbeOptions
from ask_fable.backends.model_ids import normalize_atlas_model
from ask_fable.backends.probes import probe_key
from ask_fable.config import ModelList, ProviderSettings

if TYPE_CHECKING:
    import httpx2

    from ask_fable.backends.base import Oracle
    from ask_fable.backends.catalog_listing import CatalogListing
    from ask_fable.backends.http_client import RetryPolicy
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings


class AtlasSettings(ProviderSettings):
    """Atlas Cloud's key, endpoint and default model, and its council's members, adjudicator and effort."""

    api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("ASK_FABLE_ATLAS_API_KEY", "ATLASCLOUD_API_KEY"),
        description="Atlas Cloud key (ATLASCLOUD_API_KEY is accepted too).",
    )
    base_url: str = Field("https://api.atlascloud.ai", description="Atlas Cloud API base URL.")
    model: str = Field("xai/grok-4.6", description="Default model for ask_atlas.")
    effort: str = Field(
        "deep",
        validation_alias=AliasChoices("ASK_FABLE_ATLAS_EFFORT", "ASK_FABLE_EFFORT", "atlas_effort", "effort"),
        description="Default Atlas effort: quick, standard or deep (ASK_FABLE_EFFORT is accepted too).",
    )
    council: ModelList = Field(
        default_factory=list,
        description="Default ask_atlas_council members (unset: three featured catalog models).",
    )
    synthesizer: str | None = Field(
        None,
        description="Adjudicator for ask_atlas_council (unset: codex CLI, then "
        "atlas:openai/gpt-5.6-sol, then fable).",
    )


def make_atlas_oracle(settings: Settings, *, token: str = "atlas", model: str | None = None,
                      effort: str | None = None, retry: RetryPolicy | None = None,
                      transport: httpx2.AsyncBaseTransport | None = None,
                      resources: Resources | None = None) -> Oracle:
    """An ``atlas:<id>`` oracle (default ``ASK_FABLE_ATLAS_MODEL``); ``xai/grok-*`` → local grok CLI.

    Raises:
        BadArgs: ``effort`` is not quick / standard / deep.
    """
    from ask_fable.backends.http_oracles import openai_shaped
    from ask_fable.backends.openai_api import AtlasOracle

    house_effort = settings.section(ATLAS.name, AtlasSettings).effort
    return openai_shaped(ATLAS, settings, AtlasOracle, model=model, effort=effort, house_effort=house_effort,
                         kimi=False, retry=retry, transport=transport, resources=resources)


async def probe_atlas(backend: Backend, settings: Settings, options: ProbeOptions) -> BackendReport:
    """Atlas's key probe, noting that its Grok models run on the local grok CLI without a key."""
    report = await probe_key(backend, settings, options)
    if not report.configured and backend.model(settings).startswith("xai/grok") and shutil.which("grok"):
        report.detail = f"{report.detail}; xai/grok-* models still work through the local grok CLI"
    return report



async def list_atlas_models(settings: Settings, refresh: bool = True, task: str = "", limit: int = 5,
                            *, max_age: float | None = None,
                            transport: httpx2.AsyncBaseTransport | None = None,
                            resources: Resources | None = None) -> CatalogListing:
    """The Atlas Cloud catalog ranked for ``task`` with a model + effort picker (no key needed);
    ``refresh`` and ``max_age`` as in :func:`ask_fable.backends.catalogs.list_models`."""
    from ask_fable.backends import catalogs

    config = settings.section(ATLAS.name, AtlasSettings)
    url = catalogs.atlas_catalog_url(config.base_url)
    return await catalogs.list_models("atlas", "Atlas Cloud", url, settings, refresh=refresh, task=task,
                                      limit=limit,
                                      default_effort=config.effort, max_age=max_age,
                                      transport=transport, resources=resources)


# A prefixed backend serves many labs: each model id tells its own (``family`` is never read for it).
ATLAS = Backend(
    name="atlas", label="Atlas Cloud", family="unknown", transport="http", build=make_atlas_oracle,
    probe=probe_atlas, enable="set ASK_FABLE_ATLAS_API_KEY (or ATLASCLOUD_API_KEY) to an Atlas Cloud key",
    prefix="atlas", normalize_model=normalize_atlas_model, settings_model=AtlasSettings,
    tools=("ask_atlas_council",),
    tool=ModelTool(
        "ask_atlas",
        "One answer from an {label} text model (default {model}; e.g. openai/gpt-5.6-sol, "
        "deepseek-ai/deepseek-v4-pro) over the OpenAI chat API. Single-turn; effort quick | standard | deep "
        "(default ASK_FABLE_ATLAS_EFFORT). Needs {key_vars}, except xai/grok-* models, which run on the "
        "local grok CLI when installed. Pick models with list_atlas_models.",
        model_arg="The provider's model id; default from the settings.", effort=True,
    ),
)
