"""DeepSeek over its Anthropic-compatible API: settings ``ASK_FABLE_DEEPSEEK_*``, the ``deepseek`` token,
``ask_deepseek``."""

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


class DeepSeekSettings(ProviderSettings):
    """DeepSeek's key, endpoint and model."""

    api_key: SecretStr | None = Field(
        None, description="DeepSeek key; enables ask_deepseek and the deepseek token."
    )
    base_url: str = Field("https://api.deepseek.com/anthropic", description="DeepSeek endpoint.")
    model: str = Field("deepseek-v4-pro", description="DeepSeek model id.")


def make_deepseek_oracle(settings: Settings, *, token: str = "deepseek", model: str | None = None,
                         effort: str | None = None, retry: RetryPolicy | None = None,
                         transport: httpx2.AsyncBaseTransport | None = None,
                         resources: Resources | None = None) -> Oracle:
    """The ``deepseek`` oracle: DeepSeek's Anthropic-compatible endpoint (``ASK_FABLE_DEEPSEEK_*``)."""
    from ask_fable.backends.http_oracles import anthropic_shaped

    return anthropic_shaped(DEEPSEEK, settings, retry=retry, transport=transport, resources=resources)


DEEPSEEK = Backend(
    name="deepseek", label="DeepSeek", family="deepseek", transport="http", build=make_deepseek_oracle,
    probe=probe_key, enable="set ASK_FABLE_DEEPSEEK_API_KEY to a DeepSeek API key",
    tokens=(Token("deepseek"),), settings_model=DeepSeekSettings, tier="default", tier_needs_key=True,
    cost_rank=1, labs=(r"DeepSeek",), products=(r"DeepSeek",),
    tool=ModelTool(
        "ask_deepseek",
        "One answer from {label} ({model}) via DeepSeek's Anthropic-compatible API. Single-turn.\n"
        "A cheap direct API: a good quick independent opinion. Needs {key_vars} (not_configured otherwise).",
    ),
)
