"""Ollama, a local daemon or ollama.com: settings ``ASK_FABLE_OLLAMA_*``, ``ollama:<id>`` tokens,
``ask_ollama``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, SecretStr

from ask_fable.backends.descriptor import Backend, ModelTool
from ask_fable.backends.model_ids import lab_of, normalize_ollama_model, strip_prefix
from ask_fable.backends.probes import probe_ollama
from ask_fable.config import ModelList, ProviderSettings

if TYPE_CHECKING:
    import httpx2

    from ask_fable.backends.base import Oracle
    from ask_fable.backends.catalog_listing import OllamaListing
    from ask_fable.backends.http_client import RetryPolicy
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings


#: The Ollama council when none is configured.
DEFAULT_OLLAMA_COUNCIL = [
    "minimax-m3:cloud",
    "glm-5.2:cloud",
    "nemotron-3-ultra:cloud",
    "qwen3-coder:480b-cloud",
    "kimi-k2.7-code:cloud",
    "deepseek-v4-pro:cloud",
    "gpt-oss:120b-cloud",
]


class OllamaSettings(ProviderSettings):
    """Ollama's key (for ollama.com), endpoint and default model, the models of its council, and where
    its cloud catalog is read."""

    api_key: SecretStr | None = Field(None, description="Key for a remote Ollama endpoint (ollama.com).")
    base_url: str = Field("http://localhost:11434", description="Ollama endpoint.")
    model: str = Field("gpt-oss:120b-cloud", description="Default model for ask_ollama.")
    council: ModelList = Field(
        default_factory=lambda: list(DEFAULT_OLLAMA_COUNCIL),
        description="Models of ask_ollama_council and the full tier.",
    )
    catalog_url: str = Field(
        "https://ollama.com", description="Where list_ollama_models reads the cloud catalog."
    )


def make_ollama_oracle(settings: Settings, *, token: str = "ollama", model: str | None = None,
                       effort: str | None = None, retry: RetryPolicy | None = None,
                       transport: httpx2.AsyncBaseTransport | None = None,
                       resources: Resources | None = None) -> Oracle:
    """An ``ollama:<id>`` oracle (default ``ASK_FABLE_OLLAMA_MODEL``) on ``ASK_FABLE_OLLAMA_BASE_URL``."""
    from ask_fable.backends.ollama import OllamaOracle

    config = settings.section(OLLAMA.name, OllamaSettings)
    chosen = strip_prefix(model or config.model, "ollama")
    return OllamaOracle(
        token=f"ollama:{chosen}", provider=OLLAMA.name, model=chosen, family=lab_of(chosen),
        label=OLLAMA.label,
        base_url=config.base_url, api_key=config.key(), key_var=None, max_tokens=settings.max_tokens,
        secrets=settings.secret_values(), retry=retry, transport=transport, resources=resources,
    )



async def list_ollama_models(settings: Settings, refresh: bool = True,
                             *, transport: httpx2.AsyncBaseTransport | None = None,
                             resources: Resources | None = None) -> OllamaListing:
    """The ollama.com cloud catalog (as daemon-ready ids), the models pulled on the configured
    endpoint and the council (:func:`ask_fable.backends.catalogs.list_ollama_catalog`)."""
    from ask_fable.backends.catalogs import list_ollama_catalog

    config = settings.section(OLLAMA.name, OllamaSettings)
    return await list_ollama_catalog(settings, config, config.council, config.catalog_url, refresh,
                                     transport=transport, resources=resources)

OLLAMA = Backend(
    name="ollama", label="Ollama", family="unknown", transport="http", build=make_ollama_oracle,
    probe=probe_ollama,
    enable="install Ollama, start it (`ollama serve`) and run `ollama signin` once; or set "
    "ASK_FABLE_OLLAMA_BASE_URL=https://ollama.com and ASK_FABLE_OLLAMA_API_KEY",
    prefix="ollama", normalize_model=normalize_ollama_model, settings_model=OllamaSettings,
    needs="a local `ollama` daemon, signed in; or `ASK_FABLE_OLLAMA_BASE_URL` and `ASK_FABLE_OLLAMA_API_KEY`",
    tools=("ask_ollama_council",), context_tokens=32_768,
    tool=ModelTool(
        "ask_ollama",
        "One answer from an {label} model (default {model}; e.g. kimi-k2.7-code:cloud) through the local "
        "ollama daemon (after `ollama signin`, no key) or ASK_FABLE_OLLAMA_BASE_URL + _API_KEY for direct "
        "cloud. Single-turn. See list_ollama_models.",
        model_arg="An Ollama model id such as gpt-oss:120b-cloud (default ASK_FABLE_OLLAMA_MODEL).",
    ),
)
