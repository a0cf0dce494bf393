"""GLM over Z.ai's Anthropic-compatible API: settings ``ASK_FABLE_GLM_*``, the ``glm`` token, ``ask_glm``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, SecretStr

from ask_fable.backends.descriptor import Backend, ModelTool, Token
from ask_fable.backends.probes import probe_key
from ask_fable.config import ProviderSettings

if TYPE_CHECKING:
    import httpx2

    from ask_fable.backends.base import Oracle
    from ask_fable.backends.http_client import RetryPolicy
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings


class GlmSettings(ProviderSettings):
    """GLM's key, endpoint and model."""

    api_key: SecretStr | None = Field(None, description="Z.ai key; enables ask_glm and the glm token.")
    base_url: str = Field("https://api.z.ai/api/anthropic", description="GLM endpoint.")
    model: str = Field("glm-5.2", description="GLM model id.")


def make_glm_oracle(settings: Settings, *, token: str = "glm", model: str | None = None,
                    effort: str | None = None, retry: RetryPolicy | None = None,
                    transport: httpx2.AsyncBaseTransport | None = None,
                    resources: Resources | None = None) -> Oracle:
    """The ``glm`` oracle: Z.ai's Anthropic-compatible endpoint (``ASK_FABLE_GLM_*``)."""
    from ask_fable.backends.http_oracles import anthropic_shaped

    return anthropic_shaped(GLM, settings, retry=retry, transport=transport, resources=resources)


GLM = Backend(
    name="glm", label="GLM", family="zhipu", transport="http", build=make_glm_oracle, probe=probe_key,
    enable="set ASK_FABLE_GLM_API_KEY to a Z.ai API key (in the server's env or the config file)",
    tokens=(Token("glm"),), settings_model=GlmSettings, tier="middle", cost_rank=2,
    labs=(r"Zhipu(?:\s+AI)?", r"Z\.ai"), products=(r"ChatGLM", r"GLM"),
    tool=ModelTool(
        "ask_glm",
        "One answer from {label} ({model}) via Z.ai's Anthropic-compatible API. Single-turn.\n"
        "Needs {key_vars} on the server (not_configured otherwise).",
    ),
)
