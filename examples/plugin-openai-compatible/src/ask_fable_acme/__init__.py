"""Acme, an OpenAI-compatible provider, as an ask-fable backend: one module, one descriptor.

Installed beside ask-fable, it adds the ``acme`` token (``ask(model="acme")``, councils, chains),
the ``ask_acme`` tool, the settings ``ASK_FABLE_ACME_API_KEY`` / ``_BASE_URL`` / ``_MODEL``, and an
``acme`` row in ``ask-fable doctor`` and ``diagnose``. Its key is redacted like a built-in one, and
a council hides "Acme" from its synthesizer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, SecretStr

from ask_fable.backends.descriptor import Backend, ModelTool, Token
from ask_fable.backends.probes import probe_key
from ask_fable.config import ProviderSettings

if TYPE_CHECKING:
    from ask_fable.backends.base import Oracle
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings


class AcmeSettings(ProviderSettings):
    """Acme's key, endpoint and default model: ``ASK_FABLE_ACME_API_KEY``, ``_BASE_URL``, ``_MODEL``."""

    api_key: SecretStr | None = Field(None, description="Acme key; enables the acme token and ask_acme.")
    base_url: str = Field("https://api.acme.example/v1", description="Acme's OpenAI-compatible endpoint.")
    model: str = Field("acme-large-2", description="The model the acme token and ask_acme ask.")


def make_acme_oracle(settings: Settings, *, token: str, model: str | None, effort: str | None,
                     resources: Resources | None) -> Oracle:
    """The oracle for one call to Acme (``POST {base_url}/chat/completions``, bearer key)."""
    from ask_fable.backends.openai_api import OpenAIChatOracle  # heavy: imported when a call needs it

    config = settings.section(ACME.name, AcmeSettings)
    return OpenAIChatOracle(
        token=token, provider=ACME.name, model=model or config.model, family=ACME.family, label=ACME.label,
        base_url=config.base_url, api_key=config.key(), key_var=ACME.key_vars[0], effort=effort,
        max_tokens=settings.max_tokens, secrets=settings.secret_values(), resources=resources,
    )


ACME = Backend(
    name="acme",
    label="Acme",
    family="acme",
    transport="http",
    build=make_acme_oracle,
    probe=probe_key,
    enable="set ASK_FABLE_ACME_API_KEY to an Acme API key",
    tokens=(Token("acme", aliases=("acme-large",), about="Acme's default model"),),
    settings_model=AcmeSettings,
    labs=(r"Acme(?:\s+Labs)?",),
    products=(r"AcmeGPT",),
    tool=ModelTool(
        "ask_acme",
        "One answer from {label} ({model}) over its OpenAI-compatible API. Single-turn.\n"
        "Needs {key_vars} on the server (not_configured otherwise).",
        effort=True,
    ),
)
