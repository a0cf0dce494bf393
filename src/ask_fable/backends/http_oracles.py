"""Factories for the HTTP oracles: GLM, DeepSeek, Atlas Cloud, OpenRouter and Ollama.

Each factory reads its settings and returns an :class:`~ask_fable.backends.base.Oracle`; nothing
here does I/O. ``xai/grok-*`` / ``x-ai/grok-*`` ids asked of Atlas or OpenRouter, and
``moonshotai/kimi-*`` ids asked of OpenRouter, are served by the local ``grok`` / ``kimi`` CLI when
it is installed (no key, no per-token billing); such replies carry ``routed_via``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.backends.builtin import ATLAS, DEEPSEEK, GLM, OLLAMA, OPENROUTER
from ask_fable.backends.cli_oracles import cli_installed
from ask_fable.backends.http_client import normalize_effort
from ask_fable.backends.model_ids import family_of, strip_prefix
from ask_fable.errors import BadArgs

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

    from ask_fable.backends.descriptor import Backend
    from ask_fable.backends.http_client import RetryPolicy
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

#: Grok ids as Atlas (``xai/``) and OpenRouter (``x-ai/``) spell them.
GROK_PREFIXES = ("xai/grok", "x-ai/grok")


def _default_effort(value: str | None) -> str | None:
    """A configured default effort; an unreadable one is ignored rather than failing every call."""
    try:
        return normalize_effort(value)
    except BadArgs:
        return None


class RoutedOracle(Oracle):
    """An HTTP model id served by another route (a local CLI); replies are marked ``routed_via``."""

    def __init__(self, inner: Oracle, *, token: str, routed_via: str) -> None:
        self.inner = inner
        self.token = token
        self.provider = inner.provider
        self.model = inner.model
        self.family = inner.family
        self.routed_via = routed_via
        self.prompt_limit_bytes = inner.prompt_limit_bytes

    def reply_tokens(self, request: OracleRequest) -> int:
        """The inner route's room for the answer."""
        return self.inner.reply_tokens(request)

    def ensure_available(self) -> None:
        """The inner route's availability (e.g. the CLI is on PATH)."""
        self.inner.ensure_available()

    @property
    def breaker_key(self) -> str:
        """Failures count against the route that actually ran."""
        return self.inner.breaker_key

    async def ask(self, request: OracleRequest, sink: EventSink) -> Reply:
        """Ask the inner route and mark the reply with the route taken."""
        reply = await self.inner.ask(request, sink)
        return reply.model_copy(update={"routed_via": self.routed_via})


def _reroute(settings: Settings, token: str, model: str, effort: str | None,
             kimi: bool, resources: Resources | None) -> Oracle | None:
    lowered = model.lower()
    if lowered.startswith(GROK_PREFIXES) and cli_installed("grok"):
        from ask_fable.backends.cli_oracles import make_grok_oracle

        return RoutedOracle(make_grok_oracle(settings, effort=effort, model=model, resources=resources),
                            token=token, routed_via="grok_cli")
    if kimi and lowered.startswith("moonshotai/kimi") and cli_installed("kimi"):
        from ask_fable.backends.cli_oracles import make_kimi_oracle

        return RoutedOracle(make_kimi_oracle(settings, effort=effort, resources=resources), token=token,
                            routed_via="kimi_cli")
    return None


def make_glm_oracle(settings: Settings, *, retry: RetryPolicy | None = None,
                    transport: httpx2.AsyncBaseTransport | None = None,
                    resources: Resources | None = None) -> Oracle:
    """The ``glm`` oracle: Z.ai's Anthropic-compatible endpoint (``ASK_FABLE_GLM_*``)."""
    return _anthropic_shaped(GLM, settings, retry=retry, transport=transport, resources=resources)


def make_deepseek_oracle(settings: Settings, *, retry: RetryPolicy | None = None,
                         transport: httpx2.AsyncBaseTransport | None = None,
                         resources: Resources | None = None) -> Oracle:
    """The ``deepseek`` oracle: DeepSeek's Anthropic-compatible endpoint (``ASK_FABLE_DEEPSEEK_*``)."""
    return _anthropic_shaped(DEEPSEEK, settings, retry=retry, transport=transport, resources=resources)


def _anthropic_shaped(backend: Backend, settings: Settings, *, retry: RetryPolicy | None,
                      transport: httpx2.AsyncBaseTransport | None, resources: Resources | None) -> Oracle:
    from ask_fable.backends.anthropic_api import AnthropicMessagesOracle

    def build() -> Oracle:
        return AnthropicMessagesOracle(
            token=backend.name, provider=backend.name, model=backend.model(settings), family=backend.family,
            label=backend.label, base_url=backend.base_url(settings) or "", api_key=backend.key(settings),
            key_var=backend.key_vars[0], max_tokens=settings.max_tokens, secrets=settings.secret_values(),
            retry=retry, transport=transport, resources=resources,
        )

    if resources is None or retry is not None or transport is not None:
        return build()
    # The oracle holds only what these settings say: one per App and settings, not one per call.
    return resources.remembered(("oracle", backend.name), settings, build)


def make_atlas_oracle(settings: Settings, model: str | None = None, effort: str | None = None, *,
                      retry: RetryPolicy | None = None,
                      transport: httpx2.AsyncBaseTransport | None = None,
                      resources: Resources | None = None) -> Oracle:
    """An ``atlas:<id>`` oracle (default ``ASK_FABLE_ATLAS_MODEL``); ``xai/grok-*`` → local grok CLI.

    Raises:
        BadArgs: ``effort`` is not quick / standard / deep.
    """
    from ask_fable.backends.openai_api import AtlasOracle

    chosen = strip_prefix(model or settings.atlas_model, "atlas")
    chosen_effort = normalize_effort(effort) or _default_effort(settings.atlas_effort)
    token = f"atlas:{chosen}"
    routed = _reroute(settings, token, chosen, chosen_effort, kimi=False, resources=resources)
    if routed is not None:
        return routed
    return AtlasOracle(
        token=token, provider=ATLAS.name, model=chosen, family=family_of(chosen), label=ATLAS.label,
        base_url=settings.atlas_base_url, api_key=settings.atlas_api_key, key_var=ATLAS.key_vars[0],
        key_alias=ATLAS.key_vars[1], effort=chosen_effort, secrets=settings.secret_values(), retry=retry,
        transport=transport, resources=resources,
    )


def make_openrouter_oracle(settings: Settings, model: str | None = None, effort: str | None = None, *,
                           retry: RetryPolicy | None = None,
                           transport: httpx2.AsyncBaseTransport | None = None,
                           resources: Resources | None = None) -> Oracle:
    """An ``openrouter:<id>`` oracle; ``xai/grok-*`` / ``moonshotai/kimi-*`` → local CLI when installed.

    Raises:
        BadArgs: ``effort`` is not quick / standard / deep.
    """
    from ask_fable.backends.openai_api import OpenRouterOracle

    chosen = strip_prefix(model or settings.openrouter_model, "openrouter")
    chosen_effort = normalize_effort(effort) or _default_effort(settings.openrouter_effort)
    token = f"openrouter:{chosen}"
    routed = _reroute(settings, token, chosen, chosen_effort, kimi=True, resources=resources)
    if routed is not None:
        return routed
    return OpenRouterOracle(
        token=token, provider=OPENROUTER.name, model=chosen, family=family_of(chosen), label=OPENROUTER.label,
        base_url=settings.openrouter_base_url, api_key=settings.openrouter_api_key,
        key_var=OPENROUTER.key_vars[0], key_alias=OPENROUTER.key_vars[1], effort=chosen_effort,
        secrets=settings.secret_values(), retry=retry, transport=transport, resources=resources,
    )


def make_ollama_oracle(settings: Settings, model: str | None = None, *, retry: RetryPolicy | None = None,
                       transport: httpx2.AsyncBaseTransport | None = None,
                       resources: Resources | None = None) -> Oracle:
    """An ``ollama:<id>`` oracle (default ``ASK_FABLE_OLLAMA_MODEL``) on ``ASK_FABLE_OLLAMA_BASE_URL``."""
    from ask_fable.backends.ollama import OllamaOracle

    chosen = strip_prefix(model or settings.ollama_model, "ollama")
    return OllamaOracle(
        token=f"{OLLAMA.prefix}:{chosen}", provider=OLLAMA.name, model=chosen, family=family_of(chosen),
        label=OLLAMA.label,
        base_url=settings.ollama_base_url, api_key=settings.ollama_api_key, key_var=None,
        max_tokens=settings.max_tokens, secrets=settings.secret_values(), retry=retry, transport=transport,
        resources=resources,
    )
