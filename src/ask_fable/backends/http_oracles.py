"""What the HTTP providers' factories share: an Anthropic-shaped and an OpenAI-shaped oracle built
from a descriptor, and the local-CLI route for Grok and Kimi model ids.

Each provider's factory lives in its own module (:mod:`ask_fable.backends.providers`); nothing here
does I/O. ``xai/grok-*`` / ``x-ai/grok-*`` ids asked of Atlas or OpenRouter, and
``moonshotai/kimi-*`` ids asked of OpenRouter, are served by the local ``grok`` / ``kimi`` CLI when
it is installed (no key, no per-token billing); such replies carry ``routed_via``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ask_fable.backends.base import EventSink, Oracle, OracleRequest, Reply
from ask_fable.backends.cli_oracles import cli_installed
from ask_fable.backends.http_client import normalize_effort
from ask_fable.backends.model_ids import lab_of, strip_prefix
from ask_fable.errors import BadArgs

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

    from ask_fable.backends.descriptor import Backend
    from ask_fable.backends.http_client import RetryPolicy
    from ask_fable.backends.openai_api import OpenAIChatOracle
    from ask_fable.backends.resources import Resources
    from ask_fable.config import Settings

#: Grok ids as Atlas (``xai/``) and OpenRouter (``x-ai/``) spell them.
GROK_PREFIXES = ("xai/grok", "x-ai/grok")


def default_effort(value: str | None) -> str | None:
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


def reroute(settings: Settings, token: str, model: str, effort: str | None,
            kimi: bool, resources: Resources | None) -> Oracle | None:
    """The local CLI route for a Grok (and, with ``kimi``, a Kimi) model id when that CLI is installed."""
    lowered = model.lower()
    if lowered.startswith(GROK_PREFIXES) and cli_installed("grok"):
        from ask_fable.backends.cli_backends import make_grok_oracle

        return RoutedOracle(make_grok_oracle(settings, effort=effort, model=model, resources=resources),
                            token=token, routed_via="grok_cli")
    if kimi and lowered.startswith("moonshotai/kimi") and cli_installed("kimi"):
        from ask_fable.backends.cli_backends import make_kimi_oracle

        return RoutedOracle(make_kimi_oracle(settings, effort=effort, resources=resources), token=token,
                            routed_via="kimi_cli")
    return None


def openai_shaped(backend: Backend, settings: Settings, oracle: type[OpenAIChatOracle], *,
                  model: str | None, effort: str | None, house_effort: str | None, kimi: bool,
                  retry: RetryPolicy | None, transport: httpx2.AsyncBaseTransport | None,
                  resources: Resources | None) -> Oracle:
    """The ``<backend>:<id>`` oracle of a catalog provider with an OpenAI-compatible API (its default
    model when ``model`` is None), or the local CLI that serves that id (see :func:`reroute`).

    Raises:
        BadArgs: ``effort`` is not quick / standard / deep.
    """
    chosen = strip_prefix(model or backend.model(settings), backend.name)
    chosen_effort = normalize_effort(effort) or default_effort(house_effort)
    token = f"{backend.name}:{chosen}"
    routed = reroute(settings, token, chosen, chosen_effort, kimi=kimi, resources=resources)
    if routed is not None:
        return routed
    return oracle(
        token=token, provider=backend.name, model=chosen, family=lab_of(chosen), label=backend.label,
        base_url=backend.base_url(settings) or "", api_key=backend.key(settings),
        key_var=backend.key_vars[0], key_alias=backend.key_vars[1], effort=chosen_effort,
        secrets=settings.secret_values(), retry=retry, transport=transport, resources=resources,
    )


def anthropic_shaped(backend: Backend, settings: Settings, *, retry: RetryPolicy | None = None,
                     transport: httpx2.AsyncBaseTransport | None = None,
                     resources: Resources | None = None) -> Oracle:
    """The oracle of a provider with an Anthropic-compatible Messages API: ``backend``'s key, endpoint
    and default model, one per App and settings."""
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
